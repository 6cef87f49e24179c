"""Environments: `create_env(env_id, ...)` and the small wrappers the agent needs.

Every environment handed to the agent has a discrete action space and float32 observations: a vector for
classic-control style tasks (MLP head), or a 42x42xC image scaled to [0, 1] (convolutional heads).

Families (see `env_family`):
- doom: ViZDoom MyWayHome as in the paper: `doom` (dense: one of 17 spawn spots at random), `doomSparse` and
  `doomVerySparse` (fixed far starts); any other ViZDoom scenario by its gymnasium id (`VizdoomBasic-v1`, ...).
- mario: Super Mario Bros through nes-py, `mario` (level 1-1) and `mario-W-S` for world W, stage S.
- atari: any ALE game (`PongDeterministic-v4`, `ALE/Pong-v5`, `BreakoutNoFrameskip-v4`, ...), cropped as in
  universe-starter-agent.
- gymnasium: any other registered id with a discrete action space (classic control: MLP head), or a bounded
  continuous one for the learners that take it; MuJoCo's tasks with the `mujoco` extra.
- pixels: `<id>-pixels` for a gymnasium task seen through its renderer (`Pendulum-v1-pixels`,
  `InvertedPendulum-v5-pixels`): 64x64 RGB frames instead of the state vector.
The game packages are optional extras (`pip install -e .[doom,mario,atari]`); each is imported only when its
family is used. This module must not import TensorFlow: the launcher uses it to check an id before starting.
"""
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import io
import logging
import os
import re
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from constants import EVAL_RANDOM_START

logger = logging.getLogger(__name__)

IMAGE_SIZE = 42  # the paper's input resolution
NATURE_IMAGE_SIZE = 84  # the Nature DQN's (Mnih et al. 2015), for its CNN in the replay learners
STACKED_FRAMES = 4  # --envWrap: frames stacked into channels
ACTION_REPEAT = 4  # --envWrap: each action is repeated, rewards summed, last two frames max-pooled
DOOM_ACTION_REPEAT = 4  # the paper's Doom action repeat, in tics
MARIO_ACTION_REPEAT = 6  # the paper's Mario action repeat, in NES frames
ATARI_CROP_ROWS = (34, 194)  # universe-starter-agent's crop: the 160x160 playing field of a 210x160 screen
STARTUP_STAGGER_SECONDS = 2.0  # worker i waits i times this before launching a game engine

# What games report in `info`, kept per episode: Doom's success and final position, Mario's farthest distance.
GAME_METRICS = ("success", "distance", "position_x", "position_y", "cells")
VISIT_EVERY = 4  # where the game reports a position, one in this many steps is logged for visitation maps

FAMILIES = ("doom", "mario", "atari", "minigrid", "gymnasium")
MODULE_OF_FAMILY = {"doom": "vizdoom", "mario": "gym_super_mario_bros", "atari": "ale_py", "minigrid": "minigrid"}
DESIGN_HEAD_OF_FAMILY = {"minigrid": "minigrid"}  # a family's network trunk when --design-head is not given

SUPPORTED = ("doom, doomSparse, doomVerySparse and other ViZDoom scenarios by their gymnasium id (VizdoomBasic-v1, "
             "...); mario and mario-W-S (e.g. mario-1-2); Atari games (PongDeterministic-v4, ALE/Pong-v5, "
             "BreakoutNoFrameskip-v4, ...); any gymnasium id with a discrete action space (CartPole-v1, Acrobot-v1, "
             "...); MiniGrid's ids (MiniGrid-KeyCorridorS3R3-v0, MiniGrid-MultiRoom-N7-S4-v0, ...); this project's "
             "Corridor-v0, CorridorLong-v0 and CorridorPixels-v0; <id>-pixels for a gymnasium task's rendered frames "
             "(Pendulum-v1-pixels, InvertedPendulum-v5-pixels)")
PIXELS_SUFFIX = "-pixels"
PIXELS_SIZE = 64  # PlaNet's frames: 64x64 RGB
MUJOCO_ENTRY = "gymnasium.envs.mujoco"  # where gymnasium's MuJoCo tasks live: they render at a size they are given
# Cameras for -pixels where a task's own shows too little at 64x64: Reacher-v5's looks at the whole arena from an
# angle, the arm 2 pixels wide and the target 1; from above at 0.65 (DeepMind Control's reacher view), the disk the
# arm reaches (radius 0.21) fills the frame, the arm's root at its centre
PIXELS_CAMERAS = {"Reacher-v5": {"distance": 0.65, "elevation": -90.0, "azimuth": 90.0, "lookat": (0.0, 0.0, 0.0)}}


class EnvError(ValueError):
    """An environment id or option that cannot be used; the message says what to do instead."""


def import_family(family):
    """The family's game package, or EnvError naming the pip extra (named after the family) that provides it."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # the old `gym` that nes-py imports prints a banner
            return importlib.import_module(MODULE_OF_FAMILY[family])
    except ImportError as error:
        raise EnvError(f"{family} environments need the '{family}' extra ({error}): pip install -e '.[{family}]', "
                       "or use make train / make test, which install every extra") from None


class GameRecord:
    """What a game reported over one episode: GAME_METRICS (the farthest distance; the latest value of the
    others; `cells`, the coverage: how many distinct cells the player stepped into, where the game gives a `cell`)
    and the player's position every VISIT_EVERY steps. Kept by the runner and by playback alike."""

    def __init__(self):
        self.metrics = {}
        self.visits = []  # [(x, y)]
        self.cells = set()

    def observe(self, info, step):
        """The `info` of the episode's `step`-th step (counting from 1)."""
        for key in GAME_METRICS:
            if key in info:
                value = float(info[key])
                self.metrics[key] = max(value, self.metrics.get(key, value)) if key == "distance" else value
        if "cell" in info:
            self.cells.add(tuple(info["cell"]))
            self.metrics["cells"] = float(len(self.cells))
        if "position_x" in info and step % VISIT_EVERY == 1:
            self.visits.append((float(info["position_x"]), float(info["position_y"])))


# ---------------------------------------------------------------------------------------------------------------
# MiniGrid: procedurally generated gridworlds, where a state is seldom seen twice (RIDE's, NovelD's, E3B's tasks)
# ---------------------------------------------------------------------------------------------------------------
MINIGRID_PREFIX = "MiniGrid-"
# The MultiRoom tasks of RIDE (Raileanu and Rocktaschel 2020) that the minigrid package does not register, as RIDE's
# code registers them: {id: (rooms, largest room side)}; an episode lasts at most 20 steps a room (the package's).
MINIGRID_MULTIROOMS = {"MiniGrid-MultiRoom-N7-S4-v0": (7, 4), "MiniGrid-MultiRoom-N7-S8-v0": (7, 8),
                       "MiniGrid-MultiRoom-N10-S4-v0": (10, 4), "MiniGrid-MultiRoom-N10-S10-v0": (10, 10),
                       "MiniGrid-MultiRoom-N12-S10-v0": (12, 10)}


def _register_minigrid():
    import_family("minigrid")  # registers the package's ids
    for env_id, (rooms, side) in MINIGRID_MULTIROOMS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="minigrid.envs:MultiRoomEnv",
                         kwargs={"minNumRooms": rooms, "maxNumRooms": rooms, "maxRoomSize": side})


class MiniGridView(gym.Wrapper):
    """The agent's view (7x7 cells ahead of it) in MiniGrid's compact encoding: each cell's object, colour and state
    codes (minigrid.core.constants), as float32 [7, 7, 3]; the mission's text dropped (these tasks have one). `info`
    holds the agent's cell (position_x / position_y, and `cell`, for coverage and visitation maps), `state_key`: a
    key of the whole state, equal for two states exactly when their fully observed grids (minigrid's
    FullyObsWrapper: the grid's codes with the agent's) are, across episodes and layouts too, what RIDE's code counts
    its states under, and, at the end, `success`: whether it ended at the goal (MiniGrid ends an episode early, with a
    reward, only there).

    The view is computed from arrays of the grid's codes (MiniGridCodes), not by minigrid's gen_obs, which builds a
    Grid of objects per step and cost about 80% of an environment step; the two agree exactly (a test plays both)."""

    def __init__(self, env):
        super().__init__(env)
        image = env.observation_space["image"]
        self.observation_space = spaces.Box(0.0, float(image.high.max()), image.shape, np.float32)
        self.codes = MiniGridCodes(env.unwrapped)
        # minigrid's step and reset end in gen_obs; this instance's answers from the arrays (an instance attribute
        # shadows the class's method: the environments are many classes, each with its own gen_obs caller)
        env.unwrapped.gen_obs = self.codes.observation

    def _view(self, observation, info):
        x, y = self.env.unwrapped.agent_pos
        info.update(position_x=int(x), position_y=int(y), cell=(int(x), int(y)), state_key=self.codes.state_key())
        return np.asarray(observation["image"], np.float32), info

    def reset(self, **kwargs):
        return self._view(*self.env.reset(**kwargs))

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["success"] = bool(terminated and reward > 0)
        observation, info = self._view(observation, info)
        return observation, reward, terminated, truncated, info


MINIGRID_EMPTY = (1, 0, 0)  # minigrid.core.constants: OBJECT_TO_IDX["empty"], an empty cell's codes
MINIGRID_OUTSIDE = (2, 5, 0)  # a grey wall: what minigrid's Grid.slice puts beyond the grid's edge


class MiniGridCodes:
    """minigrid's gen_obs (MiniGridEnv.gen_obs_grid, then Grid.encode with the visibility mask) on arrays: the
    grid's codes and which cells hide what is behind them, padded with walls by the view's size, kept in step with
    the grid's objects (rebuilt when any cell holds another object; the cell ahead re-read every step, where
    pickup, drop and toggle act), so that they are the whole grid's codes, minigrid's Grid.encode, at every step."""

    def __init__(self, env):
        self.env = env
        self.cells = None  # the grid's list of objects the arrays were built from (None != any list)
        self.codes = self.opaque = None  # [W + 2 pad, H + 2 pad, 3] uint8, [W + 2 pad, H + 2 pad] bool
        self.grid_codes = None  # [W, H, 3]: a view of `codes` without the padding, the whole grid's

    def _rebuild(self, grid, pad):
        self.cells = list(grid.grid)
        self.codes = np.empty((grid.width + 2 * pad, grid.height + 2 * pad, 3), np.uint8)
        self.grid_codes = self.codes[pad:pad + grid.width, pad:pad + grid.height]
        self.codes[...] = MINIGRID_OUTSIDE
        self.opaque = np.ones(self.codes.shape[:2], bool)
        for index, cell in enumerate(self.cells):
            self._write(index % grid.width + pad, index // grid.width + pad, cell)

    def _write(self, x, y, cell):
        self.codes[x, y] = MINIGRID_EMPTY if cell is None else cell.encode()
        self.opaque[x, y] = cell is not None and not cell.see_behind()

    def _sync(self, grid, pad):
        if self.cells != grid.grid or self.codes.shape[0] != grid.width + 2 * pad:  # an object replaced, a new grid
            self._rebuild(grid, pad)
            return
        x, y = self.env.front_pos
        if 0 <= x < grid.width and 0 <= y < grid.height:
            self._write(int(x) + pad, int(y) + pad, grid.get(int(x), int(y)))

    def observation(self):
        """gen_obs's dictionary: the view's codes [size, size, 3] uint8, the agent's direction, the mission."""
        env, size = self.env, self.env.agent_view_size
        self._sync(env.grid, size)
        top_x, top_y, _, _ = env.get_view_exts()
        xs, ys = view_cells(size, env.agent_dir)
        cells = (xs + (top_x + size), ys + (top_y + size))
        codes = self.codes[cells]
        agent = (size // 2, size - 1)
        if env.see_through_walls:
            visible = np.ones((size, size), bool)
        else:
            visible = visibility(self.opaque[cells].tolist(), agent)
        codes[agent] = env.carrying.encode() if env.carrying else MINIGRID_EMPTY
        codes[~visible] = 0  # OBJECT_TO_IDX["unseen"]
        return {"image": codes, "direction": env.agent_dir, "mission": env.mission}

    def state_key(self):
        """The agent's cell and heading and a digest of the whole grid's codes (as of the last observation): equal
        when the fully observed grids are, otherwise only where a 128-bit hash collides. A 16-byte digest, not the
        codes themselves: the counts keep a key per state seen over a run, millions of them, where the codes take 3
        bytes a cell (1,875 on N7-S4's grid)."""
        x, y = self.env.agent_pos
        digest = hashlib.blake2b(self.grid_codes.tobytes(), digest_size=16).digest()
        return int(x), int(y), int(self.env.agent_dir), digest


@functools.lru_cache(maxsize=None)
def view_cells(size, direction):
    """Where each cell of the view [size, size] lies in the window of the grid the view takes in ([x, y] offsets):
    minigrid's Grid.rotate_left applied direction + 1 times, so that the agent looks up the view's y axis from its
    bottom middle cell. Index arrays, computed once: numpy's rot90 on every step cost more than the rest of it."""
    offsets = np.indices((size, size))
    turned = np.rot90(offsets, (direction + 1) % 4, axes=(2, 1))
    return turned[0], turned[1]


def visibility(opaque, agent):
    """minigrid's Grid.process_vis on nested lists ([x][y] booleans, True where a cell hides what is behind it):
    light spreads from the agent's cell row by row away from it, sideways and one row on, stopped by opaque cells.
    Plain Python on lists: on a 7x7 view a numpy element access costs more than the whole rule."""
    width, height = len(opaque), len(opaque[0])
    mask = [[False] * height for _ in range(width)]
    mask[agent[0]][agent[1]] = True
    for j in reversed(range(height)):
        for i in range(width - 1):
            if mask[i][j] and not opaque[i][j]:
                mask[i + 1][j] = True
                if j > 0:
                    mask[i + 1][j - 1] = mask[i][j - 1] = True
        for i in reversed(range(1, width)):
            if mask[i][j] and not opaque[i][j]:
                mask[i - 1][j] = True
                if j > 0:
                    mask[i - 1][j - 1] = mask[i][j - 1] = True
    return np.array(mask, bool)


# ---------------------------------------------------------------------------------------------------------------
# Doom: ViZDoom's MyWayHome, the paper's navigation task
# ---------------------------------------------------------------------------------------------------------------
MYWAYHOME = "my_way_home"  # the scenario ViZDoom ships: <scenarios_path>/my_way_home.cfg and .wad


@dataclass(frozen=True)
class DoomStart:
    """A fixed start on MyWayHome: map coordinates and facing (degrees, 0 = east, counter-clockwise)."""

    spot: int  # the id of the map's spawn spot (MapSpot thing) the start stands on
    x: float
    y: float
    angle: float


# The map has 17 spawn spots (MapSpot things 10-26); the dense task starts at one of them at random, picked by the
# scenario's own ACS script. The sparse variants start on two of the same spots, facing their room's way out;
# `benchmarks/doom_spawn_distances.py` measures every spot's path to the vest (docs/environments.md, "Doom's spawn
# spots").
DOOM_VARIANTS = {
    "doom": None,
    "doomSparse": DoomStart(spot=10, x=240.0, y=-176.0, angle=0.0),  # the west room
    "doomVerySparse": DoomStart(spot=15, x=544.0, y=-672.0, angle=180.0),  # the dead end past the south room
}
DOOM_ACTIONS = ("no-op", "forward", "turn left", "turn right")  # the paper's four
# Button vectors over (MOVE_FORWARD, TURN_LEFT, TURN_RIGHT, TURN_LEFT_RIGHT_DELTA); the delta button only places
# the player at a fixed start.
DOOM_BUTTONS = ([0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0])
DOOM_SCREEN_SHAPE = (120, 160)  # RES_160X120, GRAY8
DOOM_CELL = 64  # map units a side of the squares coverage counts (the side of Doom's floor textures)
DOOM_GRAY_WEIGHTS = (0.21, 0.72, 0.07)  # ViZDoom's GRAY8: floor(0.21 R + 0.72 G + 0.07 B) of its RGB24 screen


def doom_gray(rgb):
    """ViZDoom's GRAY8 frame computed from its RGB24 frame, bit for bit (in doubles, summed left to right, as
    the engine does), so that a recorded episode feeds the agent exactly what training does."""
    rgb = rgb.astype(np.float64)
    red, green, blue = DOOM_GRAY_WEIGHTS
    return (rgb[..., 0] * red + rgb[..., 1] * green + rgb[..., 2] * blue).astype(np.uint8)


def check_doom_engine(path):
    """ViZDoom's engine must be an executable file: without its executable bit `DoomGame.init()` hangs (measured)
    or crashes the process, instead of saying why."""
    if not os.path.isfile(path):
        raise EnvError(f"ViZDoom's engine {path} is missing: reinstall it (pip install --force-reinstall vizdoom)")
    if not os.access(path, os.X_OK):
        raise EnvError(f"ViZDoom's engine {path} is not executable: chmod +x {path}, or reinstall vizdoom")


class DoomEnv(gym.Env):
    """MyWayHome headless: one step is `repeat` tics of the same action, repeated inside the engine, which
    renders only the frame the agent observes, in grayscale (GRAY8: no RGB frame is made or copied).

    Unlike Atari, Doom's sprites do not flicker, so there is no max-pool over the last two frames: the agent sees
    the engine's screen after the repeat, as in the original (noreward-rl repeats Doom actions without
    max-pooling). With render_mode 'rgb_array' or 'human' (videos, --visualise) the engine renders RGB24 for
    `render()` and the observation is ViZDoom's grayscale of it, the same frame the agent sees in training.

    The scenario's config sets the paper's rules: no monsters, +1 for the vest, -0.0001 per tic, 2100-tic
    timeout (a truncation). `info` holds the player's `position_x` / `position_y` in map units, the `cell` of
    DOOM_CELL map units it stands in, and, when the episode ends, `success`. If the engine process dies, it is
    relaunched and the episode ends as truncated with `info["engine_restarted"]`, so one crash does not kill the
    worker.
    """

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 35}

    def __init__(self, start=None, render_mode=None, repeat=DOOM_ACTION_REPEAT):
        self.vizdoom = import_family("doom")
        self.engine_errors = (self.vizdoom.ViZDoomUnexpectedExitException,
                              self.vizdoom.ViZDoomIsNotRunningException, self.vizdoom.ViZDoomErrorException)
        self.start = start
        self.render_mode = render_mode
        self.repeat = repeat
        self.observation_space = spaces.Box(0, 255, DOOM_SCREEN_SHAPE, np.uint8)
        self.action_space = spaces.Discrete(len(DOOM_ACTIONS))
        self.engine_restarts = 0
        self.frame = np.zeros(DOOM_SCREEN_SHAPE, np.uint8)
        self.rgb_frame = None  # with a render_mode: the RGB24 screen that `frame` was computed from
        self.position = (0.0, 0.0)
        self.game = self._launch()

    def _launch(self):
        vzd = self.vizdoom
        check_doom_engine(os.path.join(os.path.dirname(vzd.__file__), "vizdoom"))
        game = vzd.DoomGame()
        game.load_config(os.path.join(vzd.scenarios_path, MYWAYHOME + ".cfg"))
        game.set_window_visible(self.render_mode == "human")  # --visualise; headless otherwise
        game.set_mode(vzd.Mode.PLAYER)
        game.set_screen_resolution(vzd.ScreenResolution.RES_160X120)
        game.set_screen_format(vzd.ScreenFormat.GRAY8 if self.render_mode is None else vzd.ScreenFormat.RGB24)
        game.set_available_buttons([vzd.Button.MOVE_FORWARD, vzd.Button.TURN_LEFT, vzd.Button.TURN_RIGHT,
                                    vzd.Button.TURN_LEFT_RIGHT_DELTA])
        game.set_available_game_variables([vzd.GameVariable.POSITION_X, vzd.GameVariable.POSITION_Y,
                                           vzd.GameVariable.ANGLE])
        game.add_game_args("+sv_cheats 1")  # lets the `warp` console command put the player on a fixed start
        # The engine makes ./_vizdoom at start and exits the whole process when that mkdir fails with "File
        # exists": two engines starting at once in a fresh directory (seen here) kill one of them.
        os.makedirs("_vizdoom", exist_ok=True)
        game.init()
        return game

    def _relaunch(self, error):
        self.engine_restarts += 1
        logger.warning("Doom engine failed (%s: %s); relaunching it (restart %d)", type(error).__name__, error,
                       self.engine_restarts)
        with contextlib.suppress(*self.engine_errors):
            self.game.close()
        self.game = self._launch()

    def _observe(self):
        state = self.game.get_state()
        if self.render_mode is None:
            self.frame = state.screen_buffer
        else:
            self.rgb_frame = state.screen_buffer
            self.frame = doom_gray(self.rgb_frame)
        self.position = (float(state.game_variables[0]), float(state.game_variables[1]))

    def _place(self, start):
        """Warp to the start and turn to its angle; takes one tic."""
        angle = self.game.get_game_variable(self.vizdoom.GameVariable.ANGLE)
        self.game.send_game_command(f"warp {start.x} {start.y}")
        clockwise = (angle - start.angle + 180.0) % 360.0 - 180.0  # a positive delta turns right (clockwise)
        self.game.make_action([0, 0, 0, clockwise], 1)

    def _info(self):
        return {"position_x": self.position[0], "position_y": self.position[1],
                "cell": (int(self.position[0] // DOOM_CELL), int(self.position[1] // DOOM_CELL))}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.game.set_seed(seed)  # the dense task's spawn spot and angle come from the engine's generator
        try:
            self._new_episode()
        except self.engine_errors as error:
            self._relaunch(error)
            self._new_episode()
        return self.frame, self._info()

    def _new_episode(self):
        self.game.new_episode()
        if self.start is not None:
            self._place(self.start)
        self._observe()

    def step(self, action):
        try:
            reward = self.game.make_action(DOOM_BUTTONS[int(action)], self.repeat)
            finished = self.game.is_episode_finished()
            timed_out = finished and self.game.is_episode_timeout_reached()
            if not finished:
                self._observe()
        except self.engine_errors as error:
            self._relaunch(error)
            return self.frame, 0.0, False, True, dict(self._info(), engine_restarted=True)
        info = self._info()
        if finished:
            info["success"] = not timed_out  # without monsters, an episode ends early only at the vest
        return self.frame, float(reward), finished and not timed_out, timed_out, info

    def render(self):
        return self.frame if self.rgb_frame is None else self.rgb_frame

    def close(self):
        with contextlib.suppress(*self.engine_errors):
            self.game.close()


@dataclass(frozen=True)
class DoomMap:
    """MyWayHome's layout read from the scenario's WAD: wall segments, spawn spots and the goal (map units)."""

    walls: np.ndarray  # [N, 2, 2]: segment, endpoint, (x, y)
    spawn_spots: dict  # MapSpot thing id -> (x, y)
    goal: tuple  # the vest's (x, y)


def _wad_lumps(path):
    """name -> bytes of every lump of a WAD file (the id Software format: header, data, directory)."""
    with open(path, "rb") as wad:
        data = wad.read()
    count, directory = np.frombuffer(data[4:12], "<i4")
    lumps = {}
    for index in range(int(count)):
        entry = data[directory + 16 * index:directory + 16 * (index + 1)]
        start, size = np.frombuffer(entry[:8], "<i4")
        lumps[entry[8:].rstrip(b"\0").decode()] = data[start:start + size]
    return lumps


def doom_map(wad_name=MYWAYHOME):
    """Parse the scenario's UDMF map (TEXTMAP lump): one-sided or blocking lines are walls."""
    vizdoom = import_family("doom")
    text = _wad_lumps(os.path.join(vizdoom.scenarios_path, wad_name + ".wad"))["TEXTMAP"].decode()
    blocks = [(kind, dict(re.findall(r"(\w+)\s*=\s*\"?([^;\"]*)\"?\s*;", body)))
              for kind, body in re.findall(r"(\w+)\s*(?://[^\n]*)?\s*\{([^}]*)\}", text)]
    vertices = [(float(fields["x"]), float(fields["y"])) for kind, fields in blocks if kind == "vertex"]
    walls = [(vertices[int(fields["v1"])], vertices[int(fields["v2"])]) for kind, fields in blocks
             if kind == "linedef" and ("sideback" not in fields or fields.get("blocking") == "true")]
    things = [fields for kind, fields in blocks if kind == "thing"]
    spots = {int(thing["id"]): (float(thing["x"]), float(thing["y"])) for thing in things if thing["type"] == "9001"}
    goal = next((float(thing["x"]), float(thing["y"])) for thing in things if thing["type"] == "2018")  # armour
    return DoomMap(np.array(walls, np.float64), spots, goal)


class VizdoomScreen(gym.ObservationWrapper):
    """ViZDoom's own gymnasium environments observe a dict; the agent sees its `screen`."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = env.observation_space["screen"]

    def observation(self, observation):
        return observation["screen"]


# ---------------------------------------------------------------------------------------------------------------
# Mario: Super Mario Bros through nes-py
# ---------------------------------------------------------------------------------------------------------------
MARIO_ID = re.compile(r"mario(?:-([1-8])-([1-4]))?")  # mario = mario-1-1
# The paper's 14 actions (the original's ToDiscrete mapping) as NES buttons.
MARIO_ACTIONS = ((), ("up",), ("down",), ("left",), ("left", "A"), ("left", "B"), ("left", "A", "B"),
                 ("right",), ("right", "A"), ("right", "B"), ("right", "A", "B"), ("A",), ("B",), ("A", "B"))
NES_BUTTON_BITS = {"right": 7, "left": 6, "down": 5, "up": 4, "start": 3, "select": 2, "B": 1, "A": 0}
MARIO_SCREEN_SHAPE = (240, 256, 3)


@functools.cache
def _numpy2_super_mario_bros():
    """gym-super-mario-bros' environment class, adapted to numpy 2: the smallest layer that makes it run.

    nes-py and the game were written for numpy 1, where uint8 scalars widened in arithmetic. Under numpy 2 the
    ROM header sizes (`16 * header[4] * 1024`) and the game's RAM reads (`ram[0x6d] * 0x100 + ram[0x86]`) raise
    OverflowError. Reading the header as int64, and single RAM bytes as Python ints through a view of the
    emulator's memory, restores numpy 1's results without copying or changing anything the emulator sees.
    """
    smb = import_family("mario")
    nes_env = importlib.import_module("nes_py.nes_env")

    class WideHeaderROM(nes_env.ROM):
        @property
        def header(self):
            return self.raw_data[:16].astype(np.int64)

    nes_env.ROM = WideHeaderROM  # NESEnv.__init__ reads its ROM through this module-level name

    class IntRam(np.ndarray):
        def __getitem__(self, index):
            value = super().__getitem__(index)
            return int(value) if isinstance(value, np.integer) else value

    class SuperMarioBros(smb.SuperMarioBrosEnv):
        def _ram_buffer(self):
            return super()._ram_buffer().view(IntRam)

    return SuperMarioBros


def nes_button_byte(buttons):
    """The controller byte nes-py expects for a set of pressed NES buttons."""
    return sum(1 << NES_BUTTON_BITS[button] for button in buttons)


def success_meaning(env_id):
    """What an episode's `success` says in this game, for the axis labels of plots; None where it says nothing
    more than that the episode ended before its time limit."""
    if env_id in DOOM_VARIANTS:
        return "reached the vest"
    if MARIO_ID.fullmatch(env_id or ""):
        return "reached the flag"
    return None


class MarioEnv(gym.Env):
    """One Super Mario Bros level, in the gymnasium API, each action held for `MARIO_ACTION_REPEAT` frames.

    An episode ends (terminated) when Mario loses a life or reaches the flag; the game's own clock is its time
    limit. `info["distance"]` is Mario's horizontal position in the level, the paper's measure of exploration;
    `info["success"]` says, at the end, whether he reached the flag.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60 // MARIO_ACTION_REPEAT}

    def __init__(self, world=1, stage=1, render_mode=None):
        self.nes = _numpy2_super_mario_bros()(rom_mode="vanilla", target=(world, stage))
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, MARIO_SCREEN_SHAPE, np.uint8)
        self.action_space = spaces.Discrete(len(MARIO_ACTIONS))
        self.buttons = [nes_button_byte(combination) for combination in MARIO_ACTIONS]
        self.frame = np.zeros(MARIO_SCREEN_SHAPE, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.frame = self.nes.reset().copy()  # the emulator's screen is a live view: keep a copy
        return self.frame, {"distance": self.nes._x_position, "life": self.nes._life}

    def step(self, action):
        total, lives = 0.0, self.nes._life
        for _ in range(MARIO_ACTION_REPEAT):
            frame, reward, done, game_info = self.nes.step(self.buttons[int(action)])
            total += reward
            if done or game_info["life"] < lives:
                done = True
                break
        self.frame = frame.copy()
        info = {"distance": game_info["x_pos"], "life": game_info["life"], "world": game_info["world"],
                "stage": game_info["stage"]}
        if done:
            info["success"] = bool(game_info["flag_get"])
        return self.frame, float(total), done, False, info

    def render(self):
        return self.frame

    def close(self):
        if self.nes._env is not None:
            self.nes.close()


for _world in range(1, 9):
    for _stage in range(1, 5):
        gym.register(f"mario-{_world}-{_stage}", entry_point=MarioEnv, kwargs={"world": _world, "stage": _stage})
gym.register("mario", entry_point=MarioEnv, kwargs={"world": 1, "stage": 1})
for _variant, _start in DOOM_VARIANTS.items():
    gym.register(_variant, entry_point=DoomEnv, kwargs={"start": _start})


# ---------------------------------------------------------------------------------------------------------------
# Atari: ale-py ships the ROMs
# ---------------------------------------------------------------------------------------------------------------
@functools.cache
def _register_atari():
    """ale-py's ids, plus the `<Game>Deterministic-v4` ids it no longer registers (gym's: frame skip 4, no sticky
    actions), so the original's PongDeterministic-v4 still works."""
    gym.register_envs(import_family("atari"))
    for env_id, spec in list(gym.registry.items()):
        match = re.fullmatch(r"(\w+)NoFrameskip-v4", env_id)
        if match and f"{match[1]}Deterministic-v4" not in gym.registry:
            gym.register(f"{match[1]}Deterministic-v4", entry_point=spec.entry_point,
                         kwargs=dict(spec.kwargs, frameskip=ACTION_REPEAT),
                         max_episode_steps=spec.max_episode_steps, order_enforce=spec.order_enforce)


def _crop_atari(env):
    """universe-starter-agent's crop to the playing field, before the resize to 42x42."""
    top, bottom = ATARI_CROP_ROWS
    shape = env.observation_space.shape
    cropped = spaces.Box(0, 255, (bottom - top, *shape[1:]), np.uint8)
    return gym.wrappers.TransformObservation(env, lambda frame: frame[top:bottom], cropped)


def _make_atari(env_id, env_wrap, render):
    """The emulator's own grayscale screen (equal to the luminance of its RGB one: no RGB frame is copied). With
    --envWrap, gymnasium's AtariPreprocessing repeats the action on the emulator and reads the screen only on the
    last two frames, max-pooled (Atari's sprites flicker); without it, the id's own frame skip as registered."""
    if not env_wrap:
        return _crop_atari(gym.make(env_id, obs_type="grayscale", **render))
    env = gym.make(env_id, obs_type="grayscale", frameskip=1, **render)
    height, width = env.observation_space.shape
    env = gym.wrappers.AtariPreprocessing(env, noop_max=0, frame_skip=ACTION_REPEAT, screen_size=(width, height),
                                          terminal_on_life_loss=False, grayscale_obs=True, scale_obs=False)
    return _crop_atari(env)


class Corridor(gym.Env):
    """A deterministic chain of `length` cells: start at the left end, +1 for reaching the right end.

    Observations are the one-hot position; actions are 0 = left, 1 = right. Solving it means walking right
    `length - 1` times, which a learner finds quickly while a random walk needs about length**2 steps; it is the
    test bed for 'learning happens' checks, and a sparse-reward exploration task when made long.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    RENDER_CELL = 16  # render(): a cell's side in pixels

    def __init__(self, length=8, pixels=False, render_mode=None):
        if length < 2:
            raise EnvError(f"Corridor length must be >= 2, got {length}")
        self.length = length
        self.pixels = pixels
        self.render_mode = render_mode
        if pixels:  # CorridorPixels-v0: the agent is a bright vertical bar on a dark 42x42 frame
            self.observation_space = spaces.Box(0, 255, (IMAGE_SIZE, IMAGE_SIZE, 1), np.uint8)
        else:
            self.observation_space = spaces.Box(0.0, 1.0, (length,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.position = 0

    def _observation(self):
        if self.pixels:
            frame = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 1), np.uint8)
            width = IMAGE_SIZE // self.length
            frame[:, self.position * width:(self.position + 1) * width] = 255
            return frame
        observation = np.zeros(self.length, np.float32)
        observation[self.position] = 1.0
        return observation

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return self._observation(), {"position": self.position}

    def step(self, action):
        move = 1 if int(action) == 1 else -1
        self.position = int(np.clip(self.position + move, 0, self.length - 1))
        terminated = self.position == self.length - 1
        return self._observation(), float(terminated), terminated, False, {"position": self.position}

    def render(self):
        """rgb_array: the corridor's cells in a row, grey, the goal green, the agent white."""
        side = self.RENDER_CELL
        frame = np.full((side, side * self.length, 3), 64, np.uint8)
        frame[:, (self.length - 1) * side:] = (0, 160, 0)
        frame[2:-2, self.position * side + 2:(self.position + 1) * side - 2] = 255
        return frame


CORRIDOR_MAX_STEPS_PER_CELL = 8  # truncation: a random walk often, but not always, reaches the end in time
gym.register("Corridor-v0", entry_point=Corridor, kwargs={"length": 8},
             max_episode_steps=8 * CORRIDOR_MAX_STEPS_PER_CELL)
# Hard exploration: 63 steps right, within 192; a random walk's chance of getting there is about 1e-5.
gym.register("CorridorLong-v0", entry_point=Corridor, kwargs={"length": 64}, max_episode_steps=3 * 64)
gym.register("CorridorPixels-v0", entry_point=Corridor, kwargs={"length": 8, "pixels": True},
             max_episode_steps=8 * CORRIDOR_MAX_STEPS_PER_CELL)


class ExtrinsicReward(gym.Wrapper):
    """Applies --noReward (reward forced to 0) or --noLifeReward (negative rewards clipped to 0).

    The untouched game reward stays visible as `info["env_reward"]`, so logs can show what the game paid even
    when the agent is trained on curiosity alone.
    """

    def __init__(self, env, no_reward=False, no_life_reward=False):
        super().__init__(env)
        self.no_reward = no_reward
        self.no_life_reward = no_life_reward

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info, env_reward=float(reward))
        if self.no_reward:
            reward = 0.0
        elif self.no_life_reward:
            reward = max(float(reward), 0.0)
        return observation, float(reward), terminated, truncated, info


def observation_kind(space):
    """'vector' for 1-D Box observations, 'image' for HxW or HxWxC Box observations."""
    if isinstance(space, spaces.Box) and len(space.shape) == 1:
        return "vector"
    if isinstance(space, spaces.Box) and len(space.shape) in (2, 3):
        return "image"
    raise EnvError(f"observation space {space} is neither a vector nor an image; supported: {SUPPORTED}")


def evaluation_random_start(env_id, space):
    """The random actions an evaluation episode begins with (up to): constants.EVAL_RANDOM_START on images, where the
    games start where they started (Atari's v4 ids, Mario, Doom's sparse tasks) and greedy play would replay one
    episode; none on vectors, whose resets are random already and whose episodes 30 random actions can end
    (CartPole's random episodes last about 22 steps), nor on MiniGrid, whose every reset draws a new layout."""
    if observation_kind(space) == "vector" or env_family(env_id) == "minigrid":
        return 0
    return EVAL_RANDOM_START


def _to_float_vector(env):
    space = env.observation_space
    bounded = spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)
    return gym.wrappers.TransformObservation(env, lambda observation: np.asarray(observation, np.float32),
                                             bounded)


def _to_small_image(env, repeat, stack, size=IMAGE_SIZE):
    """Luminance grayscale, size x size (42), scaled to [0, 1]; optionally action repeat (rewards summed, the last
    two raw frames max-pooled) and a stack of the last 4 frames."""
    if repeat > 1:
        env = gym.wrappers.MaxAndSkipObservation(env, skip=repeat)
    if len(env.observation_space.shape) == 3 and env.observation_space.shape[-1] == 3:
        env = gym.wrappers.GrayscaleObservation(env, keep_dim=False)
    env = gym.wrappers.ResizeObservation(env, (size, size))  # cv2 INTER_AREA: averages, no aliasing
    channels = 1
    if stack:
        env = gym.wrappers.FrameStackObservation(env, STACKED_FRAMES)  # [C, 42, 42]
        channels = STACKED_FRAMES
    scaled = spaces.Box(0.0, 1.0, (size, size, channels), np.float32)

    def to_channels_last(frames):
        frames = np.asarray(frames, np.float32).reshape(-1, size, size)
        return np.moveaxis(frames, 0, -1) / 255.0

    return gym.wrappers.TransformObservation(env, to_channels_last, scaled)


def pixels_base(env_id):
    """The task of a `<id>-pixels` id, else None."""
    return env_id[:-len(PIXELS_SUFFIX)] if env_id.endswith(PIXELS_SUFFIX) else None


class Pixels(gym.ObservationWrapper):
    """A task seen through its renderer: each observation is the frame that rgb_array renders after the reset or
    step, resized to size x size RGB (cv2's INTER_AREA, where the renderer draws larger) and scaled to [0, 1]; the
    state vector is dropped."""

    def __init__(self, env, size=PIXELS_SIZE):
        super().__init__(env)
        self.size = size
        self.observation_space = spaces.Box(0.0, 1.0, (size, size, 3), np.float32)

    def observation(self, observation):
        import cv2

        frame = np.asarray(self.env.render())
        if frame.shape[:2] != (self.size, self.size):
            frame = cv2.resize(frame, (self.size, self.size), interpolation=cv2.INTER_AREA)
        return frame.astype(np.float32) / 255.0


def _make_pixels(base, size=PIXELS_SIZE):
    """`base` rendering rgb_array frames, as Pixels. MuJoCo's tasks render at `size` directly, through EGL unless
    MUJOCO_GL says otherwise (no display here), in a process of their own (EnvProcess)."""
    import multiprocessing

    # a pool's worker (daemonic) cannot start a process: it renders in itself, as a benchmark's does, without TensorFlow
    if str(gym.spec(base).entry_point).startswith(MUJOCO_ENTRY) and not multiprocessing.current_process().daemon:
        return EnvProcess(_rendering, base, size)
    return _rendering(base, size)


def _draw_off_screen():
    """pygame (classic control's renderer) draws off screen, without looking for a display (and printing an SDL
    error where there is none); a driver the user set stays."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def _rendering(base, size):
    kwargs = {"render_mode": "rgb_array"}
    _draw_off_screen()
    if str(gym.spec(base).entry_point).startswith(MUJOCO_ENTRY):
        os.environ.setdefault("MUJOCO_GL", "egl")
        kwargs.update(width=size, height=size)
        if base in PIXELS_CAMERAS:
            kwargs["default_camera_config"] = {**PIXELS_CAMERAS[base],
                                               "lookat": np.array(PIXELS_CAMERAS[base]["lookat"])}
    try:
        env = gym.make(base, **kwargs)
    except gym.error.DependencyNotInstalled as error:
        raise EnvError(f"{base}{PIXELS_SUFFIX} cannot render: {error}; pip install -e '.[pixels]' (MuJoCo's tasks: "
                       f"'.[mujoco]')") from None
    return Pixels(env, size)


class EnvProcess(gym.Env):
    """An environment built by `make(*args)` and stepped in a child process of its own, started by spawning (it
    inherits none of this process's libraries). MuJoCo's EGL renderer runs on Mesa's llvmpipe here, whose LLVM
    crashes the process (a segmentation fault in the first render) once TensorFlow has run in it; apart, both
    work. Hand-written because gymnasium's AsyncVectorEnv, which does the same, is a vector environment with
    batched observations and its own resets: this keeps the single environment's API."""

    def __init__(self, make, *args):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.pipe, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, make, args), daemon=True)
        self.process.start()
        child.close()
        self.observation_space, self.action_space, self.spec, self.metadata, self.render_mode = self._call("spaces")

    def _call(self, name, *args, **kwargs):
        self.pipe.send((name, args, kwargs))
        ok, result = self.pipe.recv()
        if not ok:
            raise result
        return result

    def reset(self, *, seed=None, options=None):
        return self._call("reset", seed=seed, options=options)

    def step(self, action):
        return self._call("step", action)

    def render(self):
        return self._call("render")

    def close(self):
        if self.process.is_alive():
            try:
                self._call("close")
            except (EOFError, OSError):
                pass
            self.process.join(timeout=10)
        self.pipe.close()


def _serve(pipe, make, args):
    """EnvProcess's child: the environment's calls from the pipe, each answered (True, result) or (False, the
    exception); over at "close" or when the parent's end closes."""
    try:
        env = make(*args)
        while True:
            name, call_args, kwargs = pipe.recv()
            try:
                if name == "spaces":
                    result = (env.observation_space, env.action_space, env.spec, env.metadata, env.render_mode)
                else:
                    result = getattr(env, name)(*call_args, **kwargs)
                pipe.send((True, result))
            except Exception as error:  # the parent raises it: the child's own trace would be lost
                pipe.send((False, error))
            if name == "close":
                return
    except (EOFError, KeyboardInterrupt):
        return


def _stacked_channels(env):
    """The last STACKED_FRAMES frames [H, W, C] in the channels, oldest first: [H, W, C x STACKED_FRAMES]."""
    space = env.observation_space
    height, width, channels = space.shape
    env = gym.wrappers.FrameStackObservation(env, STACKED_FRAMES)  # [4, H, W, C]
    stacked = spaces.Box(float(space.low.min()), float(space.high.max()), (height, width, channels * STACKED_FRAMES),
                         np.float32)
    return gym.wrappers.TransformObservation(
        env, lambda frames: np.concatenate(list(np.asarray(frames, np.float32)), axis=-1), stacked)


def env_family(env_id):
    """Which of FAMILIES `env_id` belongs to; EnvError, listing what is supported, for an unknown id."""
    env_id = pixels_base(env_id) or env_id
    if env_id in DOOM_VARIANTS or env_id.startswith("Vizdoom"):
        family = "doom"
    elif MARIO_ID.fullmatch(env_id):
        family = "mario"
    elif env_id.startswith(MINIGRID_PREFIX):
        family = "minigrid"
        _register_minigrid()
    else:
        if env_id not in gym.registry and importlib.util.find_spec("ale_py") is not None:
            _register_atari()
        family = "gymnasium"
    if env_id.startswith("Vizdoom"):
        with contextlib.redirect_stderr(io.StringIO()):
            import_family("doom")
            importlib.import_module("vizdoom.gymnasium_wrapper")  # registers ViZDoom's own ids
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        hint = ""
        if env_id.startswith("ALE/") or re.search(r"(NoFrameskip|Deterministic)-v\d$", env_id):
            hint = " (Atari ids need the 'atari' extra: pip install -e '.[atari]')"
        raise EnvError(f"unknown environment id {env_id!r}{hint}; supported: {SUPPORTED}") from None
    if family == "gymnasium" and str(spec.entry_point).startswith("ale_py"):
        family = "atari"
    if str(spec.entry_point).startswith(MUJOCO_ENTRY) and importlib.util.find_spec("mujoco") is None:
        raise EnvError(f"{env_id} is a MuJoCo task: pip install -e '.[mujoco]'")
    return family


def check_env_id(env_id):
    """Raise EnvError, with the supported families, when `env_id` is unknown or its game package is missing."""
    family = env_family(env_id)
    if family in MODULE_OF_FAMILY:
        import_family(family)
    return family


def default_design_head(env_id, design_head=None):
    """`design_head` if given, else the trunk `env_id`'s family is built for (None: the observations choose)."""
    return design_head or DESIGN_HEAD_OF_FAMILY.get(env_family(env_id))


def paper_preprocessing(env_id, env_wrap):
    """Whether `env_id` gets the 4-frame stack: with --envWrap, and always for Doom and Mario (the paper's way)."""
    return bool(env_wrap) or env_family(env_id) in ("doom", "mario")


def clips_rewards(env_id, env_wrap):
    """Whether an on-policy run (A3C, IMPALA) clips its rewards to [-reward_clip, reward_clip], the extrinsic and then
    its sum with a bonus: with the paper's preprocessing, as the original did; and on MiniGrid, as the code of RIDE,
    NovelD and E3B (torchbeast's learner) clips the summed reward to [-1, 1] on it."""
    return paper_preprocessing(env_id, env_wrap) or env_family(env_id) == "minigrid"


def learner_frames(replay_learner, design_head):
    """create_env's image options for a learner: a replay learner (no memory) sees the last 4 frames, at 84x84 for
    the Nature CNN as the Nature DQN saw them, else the paper's 42x42; A3C one frame at 42x42 with every head, as
    the original did."""
    if not replay_learner:
        return {"stack_frames": False, "image_size": IMAGE_SIZE}
    return {"stack_frames": True, "image_size": NATURE_IMAGE_SIZE if design_head == "nature" else IMAGE_SIZE}


def steps_in_threads(env_id):
    """Whether a worker's several environments of `env_id` should step in threads, side by side: the game's
    engine runs without Python's GIL (ViZDoom in its own process, nes-py through ctypes, ale-py's C++). Measured
    with 8 environments on 2 cores, threads against one after another: Doom 2.0x, Mario 1.8x, Pong 1.16x;
    CartPole 0.2x (its step is cheaper than the hand-off to a thread)."""
    return env_family(env_id) in ("doom", "mario", "atari")


def startup_delay(env_id, task):
    """Seconds worker `task` waits before starting its game engine: launches of many at once are fragile."""
    return task * STARTUP_STAGGER_SECONDS if env_family(env_id) in ("doom", "mario") else 0.0


def _make_game(env_id, family, env_wrap, render_mode):
    """The raw environment and the action repeat its wrapper adds: (env, repeat)."""
    render = {"render_mode": render_mode} if render_mode else {}
    if render_mode == "rgb_array":  # 'human' (--visualise) opens a window: its display stays pygame's to find
        _draw_off_screen()
    if family == "doom":
        env = gym.make(env_id, **render)
        if env_id.startswith("Vizdoom"):  # ViZDoom's own environments step one tic: the wrapper repeats
            return VizdoomScreen(env), DOOM_ACTION_REPEAT
        return env, 1  # DoomEnv repeats inside the engine
    if family == "mario":
        return gym.make(env_id, **render), 1  # MarioEnv repeats its actions itself, without max-pooling
    if family == "atari":
        return _make_atari(env_id, env_wrap, render), 1
    if family == "minigrid":
        return MiniGridView(gym.make(env_id, **render)), 1
    return gym.make(env_id, **render), ACTION_REPEAT if env_wrap else 1


def create_env(env_id, env_wrap=False, no_reward=False, no_life_reward=False, seed=None, render_mode=None,
               continuous_actions=False, stack_frames=False, image_size=IMAGE_SIZE):
    """Build `env_id` for the agent: discrete actions (or, with `continuous_actions`, a bounded Box too), float32
    observations, reward flags applied. `stack_frames`: images come as the last 4 frames whatever the game, for a
    network with no memory (the replay learners': one frame of Pong shows where the ball is, not where it goes);
    `image_size`: their side in pixels."""
    family = check_env_id(env_id)
    if pixels_base(env_id):
        env, repeat = _make_pixels(pixels_base(env_id)), 1
    else:
        env, repeat = _make_game(env_id, family, env_wrap, render_mode)
    bounded_box = (isinstance(env.action_space, spaces.Box) and len(env.action_space.shape) == 1
                   and np.all(np.isfinite(env.action_space.low)) and np.all(np.isfinite(env.action_space.high)))
    if not (isinstance(env.action_space, spaces.Discrete) or (continuous_actions and bounded_box)):
        env.close()
        needs = "a discrete one or a bounded vector (Box)" if continuous_actions else \
            "a discrete one (--algo sac takes continuous actions)"
        raise EnvError(f"{env_id} has action space {env.action_space}; the agent needs {needs}")
    if observation_kind(env.observation_space) == "vector":
        env = _to_float_vector(env)
    elif pixels_base(env_id) or family == "minigrid":  # colour frames as rendered, MiniGrid's codes: their own size
        env = _stacked_channels(env) if stack_frames else env
    else:
        env = _to_small_image(env, repeat, stack=stack_frames or paper_preprocessing(env_id, env_wrap),
                              size=image_size)
    env = ExtrinsicReward(env, no_reward=no_reward, no_life_reward=no_life_reward)
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env
