#!/usr/bin/env python
"""Learning curves and visitation maps from log directories, as PNG files.

    python plots.py tmp/doom --out tmp/plots                                       # one run
    python plots.py icm=tmp/icm-s0,tmp/icm-s1,tmp/icm-s2 a3c=tmp/a3c-s0,tmp/a3c-s1 --out tmp/plots

Each argument is a configuration: LABEL=DIR[,DIR...] (several seeds of it) or a single DIR (labelled by its
name); a run across machines is its machines' directories joined by '+' (a/run+b/run), read as one run.
Seeds of one configuration are drawn as their mean with the min-max band, configurations side by side, like the
paper's Figure 5. Writes into --out:
  reward_vs_steps.png, reward_vs_time.png  the game's reward per episode (moving average) against global steps
                                           and against wall-clock minutes
  bonus_vs_steps.png                       the curiosity bonus per episode
  success_vs_steps.png                     the success rate (Doom: reached the vest; Mario: the flag)
  distance_vs_steps.png                    Mario: the distance reached per episode
  eval_vs_steps.png                        the evaluations' mean reward (train.py --eval-every; the DQN/SAC one-
                                           process mode's rewards.txt)
  visits_<label>.png                       Doom: where the agent went (a heatmap over the map), per configuration
  curves.json                              the numbers behind every curve
Figures with nothing to show (no bonus, no success column, ...) are skipped and say so.
"""
import argparse
import json
import os
import sys

import numpy as np

import envs
import logdir

FIGURE_SIZE = (8, 5)  # inches; at DPI below: 800x500 pixels
PANEL_WIDTH, PANEL_HEIGHT = 5, 3.6  # inches per panel of a figure of several tasks
DPI = 100
GRID_POINTS = 200  # seeds are interpolated onto this many global steps before they are averaged
VISIT_CELL = 16.0  # map units per heatmap cell
CURVES = "curves.json"  # the numbers behind every figure of a folder


def parse_groups(specs):
    """['icm=a,b', 'c'] -> {'icm': ['a', 'b'], 'c': ['c']} ('a+b': one run in two directories); PlotError for a
    folder that is not a run."""
    groups = {}
    for spec in specs:
        label, _, dirs = spec.rpartition("=") if "=" in spec else (None, "", spec)
        dirs = [path for path in dirs.split(",") if path]
        label = label or os.path.basename(os.path.normpath(logdir.as_dirs(dirs[0])[0]))
        for path in (path for run in dirs for path in logdir.as_dirs(run)):
            if not logdir.has_run_files(path):
                raise PlotError(f"{path} has no episodes_*.csv or visits*.csv: is it a run's --log-dir?")
        groups[label] = dirs
    return groups


class PlotError(ValueError):
    pass


def episode_series(log_dir, column, smooth):
    """(global steps, wall minutes, trailing mean of `column` over `smooth` episodes) of one run, by step."""
    rows = logdir.episode_rows(log_dir, column)
    if not rows:
        return None
    steps = np.array([int(row["global_step"]) for row in rows], float)
    times = np.array([float(row["wall_time"]) for row in rows])
    values = np.array([float(row[column]) for row in rows])
    return steps, (times - times.min()) / 60.0, trailing_mean(values, smooth)


def trailing_mean(values, window):
    """Mean of the last `window` values at each point (fewer at the start)."""
    sums = np.cumsum(np.concatenate([[0.0], values]))
    counts = np.minimum(np.arange(1, len(values) + 1), window)
    ends = np.arange(1, len(values) + 1)
    return (sums[ends] - sums[ends - counts]) / counts


def aggregate(series, cover="all"):
    """Seeds on a common grid: (grid, mean, min, max). cover "all": up to the shortest run, every point the mean
    of every seed; "any": up to the longest, each point the mean (and band) of the seeds that got there, so that
    a seed still running does not cut the others' curves short."""
    start = max(x[0] for x, _ in series)
    end = (min if cover == "all" else max)(x[-1] for x, _ in series)
    grid = np.linspace(start, end, GRID_POINTS) if end > start else np.array([start])
    curves = np.ma.masked_invalid([np.interp(grid, x, y, right=np.nan) for x, y in series])
    return grid, curves.mean(0).filled(np.nan), curves.min(0).filled(np.nan), curves.max(0).filled(np.nan)


def curve_figure(groups, column, axis, smooth, ylabel, title, path, source="episodes", kept=None, order=None,
                 cover="all"):
    """One figure of `column` against global steps (axis 'steps') or minutes ('time'); its data, or None. `kept`:
    curves of an earlier figure ({label: its data}) drawn as they were, for configurations whose runs are gone;
    `order`: labels in the order to draw them (so that a label keeps its colour from one figure to the next);
    `cover`: aggregate's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = {}
    for label, dirs in groups.items():
        series = []
        for log_dir in dirs:
            if source == "eval":
                found = eval_series(log_dir)
            else:
                found = episode_series(log_dir, column, smooth)
            if found is not None:
                steps, minutes, values = found
                series.append((steps if axis == "steps" else minutes, values))
        if series:
            grid, mean, low, high = aggregate(series, cover)
            data[label] = {"x": grid.tolist(), "mean": mean.tolist(), "min": low.tolist(), "max": high.tolist(),
                           "runs": len(series), "ends": sorted(float(x[-1]) for x, _ in series)}
    for label, curve in (kept or {}).items():
        data.setdefault(label, curve)
    if order:
        data = dict(sorted(data.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))
    if not data:
        return None
    figure, axes = plt.subplots(figsize=FIGURE_SIZE, dpi=DPI)
    draw_curves(axes, data, "global steps" if axis == "steps" else "wall-clock minutes", ylabel, title)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return data


def draw_curves(axes, data, xlabel, ylabel, title, colors=None):
    """Each configuration's mean over its seeds, with the min-max band where there are several."""
    for label, curve in data.items():
        line, = axes.plot(curve["x"], curve["mean"], label=legend(label, curve), color=(colors or {}).get(label))
        if curve["runs"] > 1:
            axes.fill_between(curve["x"], curve["min"], curve["max"], color=line.get_color(), alpha=0.2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()


def legend(label, curve):
    """'ICM (3 runs)'; where the runs end at different steps, also how far the shortest got."""
    runs, ends = curve["runs"], curve.get("ends") or []
    shorter = f", the shortest to {ends[0]:,.0f}" if len(set(ends)) > 1 and ends[0] < curve["x"][-1] else ""
    return f"{label} ({runs} run{'s' * (runs > 1)}{shorter})"


def panels_figure(rows, path, references=None, shown=None):
    """Curves of several tasks side by side, a row per measure, like the paper's Figure 5: `rows` is {y label:
    {task: curve_figure's data for that task}}; every row has the same tasks (a missing one is left blank) and
    one y scale. `references` ({y label: {task: [(step, value, label)]}}) marks a published result on a panel: a
    star at (step, value), or a dashed level where step is None. `shown`: {y label: the axis label drawn instead}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(task for panels in rows.values() for task in panels))
    labels = dict.fromkeys(label for panels in rows.values() for data in panels.values() for label in data)
    colors = {label: f"C{index}" for index, label in enumerate(labels)}  # one colour per label in every panel
    figure, grid = plt.subplots(len(rows), len(tasks), figsize=(PANEL_WIDTH * len(tasks), PANEL_HEIGHT * len(rows)),
                                dpi=DPI, squeeze=False, sharey="row")
    for row, (ylabel, panels) in zip(grid, rows.items()):
        for axes, task in zip(row, tasks):
            if task in panels:
                draw_curves(axes, panels[task], "global steps", (shown or {}).get(ylabel, ylabel), task, colors)
                draw_references(axes, (references or {}).get(ylabel, {}).get(task, ()))
            else:
                axes.set_axis_off()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return {ylabel: list(panels) for ylabel, panels in rows.items()}


SUMMARY_COLUMNS_A_ROW = 4  # panels a row of summaries_figure
SUMMARY_DPI = 60  # its panels at 300 x 216 pixels: a dozen or more a figure, each redrawn with every report


def summaries_figure(rows_by_run, path, title):
    """The TensorBoard scalars of several runs (archived rows, logdir.SUMMARY_COLUMNS; {label: rows}) against global
    steps, a panel a tag and a line a run, the tasks that wrote a tag merged by step; the tags drawn, or None (and no
    file) where no run has any."""
    series = {}  # {tag: {label: [(step, value)]}}
    for label, rows in rows_by_run.items():
        for row in rows:
            series.setdefault(row["tag"], {}).setdefault(label, []).append((int(row["global_step"]),
                                                                              float(row["value"])))
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags = sorted(series)
    columns = min(SUMMARY_COLUMNS_A_ROW, len(tags))
    figure, grid = plt.subplots(-(-len(tags) // columns), columns, figsize=(PANEL_WIDTH * columns,
                                PANEL_HEIGHT * -(-len(tags) // columns)), dpi=SUMMARY_DPI, squeeze=False)
    colors = {label: f"C{index}" for index, label in enumerate(rows_by_run)}
    for axes, tag in zip(grid.flat, tags):
        for label, points in series[tag].items():
            points.sort()
            axes.plot([step for step, _ in points], [value for _, value in points], label=label, color=colors[label])
        axes.set_title(tag)
        axes.set_xlabel("global steps")
        axes.grid(alpha=0.3)
        axes.legend()
    for axes in grid.flat[len(tags):]:
        axes.set_axis_off()
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return tags


def draw_references(axes, marks):
    """Published results on a panel, in black and grey beside the curves' colours, named in its legend."""
    for step, value, label in marks:
        if step is None:
            axes.axhline(value, color="grey", linestyle="--", linewidth=1, label=label)
        else:
            axes.plot([step], [value], marker="*", markersize=12, color="black", linestyle="none", label=label)
    if marks:
        axes.legend()


def eval_series(log_dir):
    """(steps, minutes, mean reward) of the run's evaluations: the evaluation process's eval.csv, or else the
    replay learners' one-process rewards.txt, which keeps no times (its minutes are NaN; the figure is by steps)."""
    rows = logdir.eval_rows(log_dir)
    if not rows:
        evaluations = logdir.read_rewards(log_dir)
        if not evaluations:
            return None
        steps, means = np.array(evaluations, float).T
        return steps, np.full(len(steps), np.nan), means
    steps = np.array([int(row["global_step"]) for row in rows], float)
    times = np.array([float(row["wall_time"]) for row in rows])
    return steps, (times - times.min()) / 60.0, np.array([float(row["mean_reward"]) for row in rows])


def visits_name(label):
    """The file of a configuration's visits figure: its label without spaces ("no bonus" -> visits_no_bonus.png),
    which a shell would otherwise split."""
    return f"visits_{label.replace(' ', '_')}.png"


def visits_figure(label, dirs, path):
    """A heatmap of the logged positions, over MyWayHome's walls when the positions are on that map."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    rows = [row for run in dirs for row in logdir.visit_rows(run)]
    if not rows:
        return None
    points = np.array([[float(row["x"]), float(row["y"])] for row in rows])
    walls = doom_walls(dirs)
    corners = walls.reshape(-1, 2) if walls is not None else points
    low, high = corners.min(0) - VISIT_CELL, corners.max(0) + VISIT_CELL
    bins = np.maximum(((high - low) / VISIT_CELL).astype(int), 1)
    counts, x_edges, y_edges = np.histogram2d(points[:, 0], points[:, 1], bins=bins, range=[(low[0], high[0]),
                                                                                          (low[1], high[1])])
    figure, axes = plt.subplots(figsize=FIGURE_SIZE, dpi=DPI)
    masked = np.ma.masked_equal(counts.T, 0)
    image = axes.pcolormesh(x_edges, y_edges, masked, cmap="inferno", norm=LogNorm(vmin=1, vmax=max(counts.max(), 1)))
    if walls is not None:
        for (x0, y0), (x1, y1) in walls:
            axes.plot([x0, x1], [y0, y1], color="0.3", linewidth=1)
    figure.colorbar(image, ax=axes, label=f"visits (one position every few steps, {len(points):,} in all)")
    axes.set_aspect("equal")
    axes.set_title(f"{label}: where the agent went")
    axes.set_xlabel("x (map units)")
    axes.set_ylabel("y (map units)")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return {"positions": len(points), "cells_visited": int((counts > 0).sum())}


def doom_walls(dirs):
    """MyWayHome's wall segments when the runs are on one of its variants, else None."""
    for log_dir in (path for run in dirs for path in logdir.as_dirs(run)):
        if run_env_id(log_dir) in envs.DOOM_VARIANTS:
            return envs.doom_map().walls
    return None


def run_env_id(log_dir):
    """The environment id a run (or demo.py's output folder) played, or None where neither file says."""
    run = logdir.run_config(log_dir).get("run", {})
    summary = logdir.read_json(os.path.join(log_dir, "summary.json")) or {}  # demo.py's output folder
    return run.get("env_id") or summary.get("env_id")


def success_label(env_ids):
    """The success rate's axis label, with what success is where every game named says the same."""
    meanings = {envs.success_meaning(env_id) for env_id in env_ids}
    meaning = meanings.pop() if len(meanings) == 1 else None
    return f"success rate ({meaning})" if meaning else "success rate"


FIGURES = [  # file, column, axis, y label, title, source
    ("reward_vs_steps.png", "env_reward", "steps", "game reward per episode", "Reward (moving average)", "episodes"),
    ("reward_vs_time.png", "env_reward", "time", "game reward per episode", "Reward (moving average)", "episodes"),
    ("bonus_vs_steps.png", "bonus", "steps", "curiosity bonus per episode", "Curiosity bonus", "episodes"),
    ("success_vs_steps.png", "success", "steps", "success rate", "Success rate (moving average)", "episodes"),
    ("distance_vs_steps.png", "distance", "steps", "distance reached", "Distance reached per episode (moving "
     "average)", "episodes"),
    ("eval_vs_steps.png", None, "steps", "mean reward of an evaluation", "Evaluation", "eval"),
]


def make_plots(groups, out, smooth, kept=None, order=None, cover="all"):
    """Write every figure that has data; return {file: data} (also written as curves.json). `kept`: {file: {label:
    data}} of an earlier curves.json, drawn again for the labels that `groups` lacks; `order`, `cover`:
    curve_figure's."""
    os.makedirs(out, exist_ok=True)
    written, kept = {}, kept or {}
    for name, column, axis, ylabel, title, source in FIGURES:
        if column == "bonus" and not kept.get(name) and not any(
                has_bonus(log_dir) for dirs in groups.values() for log_dir in dirs):
            continue
        if column == "success":
            ylabel = success_label(run_env_id(log_dir) for dirs in groups.values() for log_dir in dirs)
        data = curve_figure(groups, column, axis, smooth, ylabel, title, os.path.join(out, name), source,
                            kept.get(name), order, cover)
        if data is not None:
            written[name] = data
    for label, dirs in groups.items():
        name = visits_name(label)
        data = visits_figure(label, dirs, os.path.join(out, name))
        if data is not None:
            written[name] = data
    for name, data in kept.items():  # kept figures not drawn again (a map's picture): their numbers stay
        if data and name not in written and os.path.exists(os.path.join(out, name)):
            written[name] = data
    with open(os.path.join(out, CURVES), "w") as handle:
        json.dump(written, handle)
    return written


def has_bonus(log_dir):
    return any(float(row["bonus"]) != 0.0 for row in logdir.rows_of(log_dir, "episodes_*.csv"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=DIR[,DIR...] or DIR")
    parser.add_argument("--out", default=os.path.join("tmp", "plots"))
    parser.add_argument("--smooth", type=int, default=20, help="episodes in the moving average")
    args = parser.parse_args(argv)
    if args.smooth < 1:
        parser.error(f"--smooth must be at least 1, got {args.smooth}")
    try:
        written = make_plots(parse_groups(args.runs), args.out, args.smooth)
    except PlotError as error:
        print(f"plots.py: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # an output folder that cannot be written
        print(f"plots.py: error: {error.filename}: {error.strerror}; choose another --out", file=sys.stderr)
        return 2
    skipped = [name for name, *_ in FIGURES if name not in written]
    for name in written:
        print(os.path.join(args.out, name))
    if skipped:
        print(f"(nothing to draw for {', '.join(skipped)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
