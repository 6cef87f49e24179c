#!/usr/bin/env python
"""Measure how far each of MyWayHome's spawn spots is from the vest, the numbers behind doomSparse/doomVerySparse.

    python benchmarks/doom_spawn_distances.py --out tmp/doom_spawns

Two measurements per spawn spot (the map's 17 MapSpot things, read from the WAD that ViZDoom ships):
1. the shortest walkable path to the vest, in map units: Dijkstra over a 4-unit grid of the floor, keeping the
   player's 16-unit radius clear of every wall;
2. the agent steps (4 tics each, the agent's four actions) a scripted driver needs to reach the vest in the real
   engine, steering along that path: turn while the next waypoint is more than 15 degrees off, else go forward.
   It is an upper bound on the optimal policy's steps.
Writes spawns.csv and doom_map.png (walls, spots labelled by id and step count, the paths) into --out.
"""
import argparse
import csv
import math
import os
import sys

import cv2
import numpy as np
from scipy import ndimage, sparse
from scipy.sparse.csgraph import dijkstra

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import envs  # noqa: E402

CELL = 4.0  # grid resolution, map units
PLAYER_RADIUS = 16.0  # Doom's player radius: the centre cannot come closer to a wall
NEIGHBOURS = [(0, 1), (1, 0), (1, 1), (1, -1), (1, 2), (2, 1), (2, -1), (1, -2)]  # 16-connected, both ways
LOOKAHEAD = 48.0  # the driver steers at the path point this far ahead
TURN_TOLERANCE = 15.0  # degrees
MAX_STEPS = 2100 // envs.DOOM_ACTION_REPEAT


class Floor:
    """The walkable grid of the map and the shortest paths from every cell to the goal."""

    def __init__(self, layout):
        self.origin = layout.walls.reshape(-1, 2).min(0) - 2 * PLAYER_RADIUS
        extent = layout.walls.reshape(-1, 2).max(0) + 2 * PLAYER_RADIUS - self.origin
        width, height = (extent / CELL).astype(int) + 1
        walls = np.zeros((height, width), bool)
        for start, end in layout.walls:
            for t in np.linspace(0.0, 1.0, int(np.linalg.norm(end - start) / CELL * 2) + 2):
                row, col = self.cell(start + (end - start) * t)
                walls[row, col] = True
        clear = ndimage.distance_transform_edt(~walls) * CELL > PLAYER_RADIUS
        labels, _ = ndimage.label(clear)
        self.free = labels == labels[self.cell(layout.goal)]  # the part of the floor the goal is on
        self.index = -np.ones(self.free.shape, int)
        self.index[self.free] = np.arange(self.free.sum())
        rows, cols = np.nonzero(self.free)
        sources, targets, lengths = [], [], []
        for d_row, d_col in NEIGHBOURS:
            row2, col2 = rows + d_row, cols + d_col
            ok = (row2 >= 0) & (row2 < height) & (col2 >= 0) & (col2 < width)
            ok[ok] = self.free[row2[ok], col2[ok]]
            sources.append(self.index[rows[ok], cols[ok]])
            targets.append(self.index[row2[ok], col2[ok]])
            lengths.append(np.full(ok.sum(), CELL * math.hypot(d_row, d_col)))
        size = int(self.free.sum())
        graph = sparse.coo_matrix((np.concatenate(lengths), (np.concatenate(sources), np.concatenate(targets))),
                                  shape=(size, size)).tocsr()
        self.distance, self.predecessor = dijkstra(graph, directed=False, indices=self.index[self.cell(layout.goal)],
                                                   return_predecessors=True)
        self.cells = np.stack([rows, cols], 1)

    def cell(self, point):
        col, row = ((np.asarray(point) - self.origin) / CELL).astype(int)
        return row, col

    def point(self, node):
        row, col = self.cells[node]
        return self.origin + (np.array([col, row]) + 0.5) * CELL

    def path(self, start):
        """Map points from `start` to the goal along the shortest path, and its length."""
        node = self.index[self.cell(start)]
        length = self.distance[node]
        points = []
        while node >= 0:
            points.append(self.point(node))
            node = self.predecessor[node]
        return np.array(points), float(length)


def drive(path, spot_id, spot):
    """Steps the scripted driver takes from the spawn spot to the vest in the real engine, or None."""
    first = path[min(len(path) - 1, int(LOOKAHEAD / CELL))]
    heading = math.degrees(math.atan2(first[1] - spot[1], first[0] - spot[0]))
    start = envs.DoomStart(spot_id, round(spot[0]), round(spot[1]), heading % 360)
    env = envs.DoomEnv(start=start)
    angle_variable = env.vizdoom.GameVariable.ANGLE
    try:
        env.reset(seed=0)
        position = np.array([start.x, start.y], float)
        for step in range(1, MAX_STEPS + 1):
            nearest = int(np.argmin(np.hypot(*(path - position).T)))
            target = path[min(len(path) - 1, nearest + int(LOOKAHEAD / CELL))]
            wanted = math.degrees(math.atan2(target[1] - position[1], target[0] - position[0]))
            error = (wanted - env.game.get_game_variable(angle_variable) + 180) % 360 - 180
            action = "forward" if abs(error) < TURN_TOLERANCE else ("turn left" if error > 0 else "turn right")
            _, _, terminated, truncated, info = env.step(envs.DOOM_ACTIONS.index(action))  # 4 tics
            if terminated or truncated:
                return step if terminated else None
            position = np.array([info["position_x"], info["position_y"]])
        return None
    finally:
        env.close()


def draw(layout, paths, rows, path_png):
    scale = 0.8
    low = layout.walls.reshape(-1, 2).min(0) - 32
    high = layout.walls.reshape(-1, 2).max(0) + 32
    size = ((high - low) * scale).astype(int)
    image = np.full((size[1], size[0], 3), 255, np.uint8)

    def pixel(point):
        return int((point[0] - low[0]) * scale), int((high[1] - point[1]) * scale)

    for path in paths.values():
        cv2.polylines(image, [np.array([pixel(p) for p in path], np.int32)], False, (200, 200, 255), 1)
    for start, end in layout.walls:
        cv2.line(image, pixel(start), pixel(end), (0, 0, 0), 2)
    for row in rows:
        spot = (row["x"], row["y"])
        color = {"doomSparse": (0, 140, 255), "doomVerySparse": (0, 0, 220)}.get(row["variant"], (200, 0, 0))
        cv2.circle(image, pixel(spot), 5, color, -1)
        cv2.putText(image, f"{row['spot']}: {row['steps']}", (pixel(spot)[0] + 7, pixel(spot)[1] + 4),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.4, color, 1, cv2.LINE_AA)
    cv2.circle(image, pixel(layout.goal), 8, (0, 160, 0), -1)
    cv2.putText(image, "vest", (pixel(layout.goal)[0] + 10, pixel(layout.goal)[1] + 4), cv2.FONT_HERSHEY_SIMPLEX,
                0.5, (0, 120, 0), 1, cv2.LINE_AA)
    cv2.imwrite(path_png, image)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tmp/doom_spawns", help="folder for spawns.csv and doom_map.png")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    layout = envs.doom_map()
    floor = Floor(layout)
    variant_of = {start.spot: name for name, start in envs.DOOM_VARIANTS.items() if start is not None}
    rows, paths = [], {}
    for spot_id, spot in sorted(layout.spawn_spots.items()):
        path, length = floor.path(spot)
        paths[spot_id] = path
        steps = drive(path, spot_id, spot)
        rows.append({"spot": spot_id, "x": spot[0], "y": spot[1], "path_units": round(length, 1),
                     "steps": steps if steps is not None else "not reached", "variant": variant_of.get(spot_id, "")})
        print(f"spot {spot_id:2d} ({spot[0]:7.1f}, {spot[1]:7.1f}): path {length:7.1f} units, "
              f"scripted driver {rows[-1]['steps']} steps {rows[-1]['variant']}", flush=True)
    with open(os.path.join(args.out, "spawns.csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    draw(layout, paths, rows, os.path.join(args.out, "doom_map.png"))
    print(f"wrote {args.out}/spawns.csv and {args.out}/doom_map.png")


if __name__ == "__main__":
    main()
