"""MiniGrid as an environment family: RIDE's MultiRoom ids registered as RIDE made them, the agent's view as the
package's codes, success and the agent's cell in `info`, the minigrid head's one-hot codes, the launcher's default
trunk for the family, and a short run of A3C (with RND, whose image network would not fit a 7x7 view) and of DQN
(with E3B, on stacked views)."""
import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import envs
import model
from minigrid.minigrid_env import MiniGridEnv

tf1 = tf.compat.v1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEFT, RIGHT, FORWARD = 0, 1, 2  # minigrid.core.actions.Actions


@pytest.mark.parametrize("env_id, rooms, side", [("MiniGrid-MultiRoom-N7-S4-v0", 7, 4),
                                                 ("MiniGrid-MultiRoom-N12-S10-v0", 12, 10)])
def test_rides_multiroom_ids_have_their_rooms(env_id, rooms, side):
    env = envs.create_env(env_id, seed=0)
    for _ in range(3):  # each reset draws a new layout, of the id's rooms
        env.reset()
        layout = env.unwrapped
        assert len(layout.rooms) == rooms and max(max(room.size) for room in layout.rooms) <= side
        assert layout.max_steps == 20 * rooms
    env.close()


def test_the_view_is_the_packages_codes_and_the_episode_reports_success_and_the_agents_cell():
    """Empty-5x5: the agent starts at (1, 1) facing east, the goal is at (3, 3)."""
    env = envs.create_env("MiniGrid-Empty-5x5-v0", seed=0)
    observation, info = env.reset()
    assert env.observation_space.shape == (7, 7, 3) and observation.dtype == np.float32
    np.testing.assert_array_equal(observation, MiniGridEnv.gen_obs(env.unwrapped)["image"])
    assert (info["position_x"], info["position_y"]) == (1, 1)
    record = envs.GameRecord()  # coverage: the distinct cells stepped into
    for step, action in enumerate((FORWARD, FORWARD, RIGHT, FORWARD), 1):
        observation, reward, terminated, truncated, info = env.step(action)
        assert not (terminated or truncated) and "success" not in info
        record.observe(info, step)
    _, reward, terminated, _, info = env.step(FORWARD)
    record.observe(info, 5)
    assert terminated and reward > 0 and info["success"] is True
    assert (info["position_x"], info["position_y"]) == (3, 3)
    assert record.metrics["cells"] == 4  # (2, 1), (3, 1) twice (the turn), (3, 2), (3, 3)
    env.reset()
    for _ in range(env.unwrapped.max_steps):  # turning in place until the time runs out
        _, _, terminated, truncated, info = env.step(LEFT)
    assert truncated and not terminated and info["success"] is False
    assert envs.evaluation_random_start("MiniGrid-Empty-5x5-v0", env.observation_space) == 0  # layouts are drawn


@pytest.mark.parametrize("env_id, actions, walls_hide", [("MiniGrid-MultiRoom-N7-S4-v0", 7, True),
                                                          ("MiniGrid-ObstructedMaze-2Dlh-v0", 7, True),
                                                          ("MiniGrid-Dynamic-Obstacles-8x8-v0", 3, False)])
def test_the_view_from_the_grids_arrays_is_minigrids_own_through_play_that_changes_the_grid(env_id, actions,
                                                                                           walls_hide):
    """envs.MiniGridCodes answers gen_obs from arrays: the same codes as minigrid's gen_obs in every state of random
    play facing every way while the grid changes: doors opened (MultiRoom), keys and balls picked up, carried and
    dropped, boxes broken (ObstructedMaze), obstacles that move by themselves (Dynamic-Obstacles); walls hiding what
    is behind them."""
    env = envs.create_env(env_id, seed=0)
    rng = np.random.default_rng(0)
    steps, changed, headings, hidden = 0, 0, set(), 0
    for episode in range(3):
        observation, _ = env.reset(seed=episode)
        terminated = truncated = False
        while not (terminated or truncated) and steps < 1500 * (episode + 1):
            own = MiniGridEnv.gen_obs(env.unwrapped)["image"]
            np.testing.assert_array_equal(observation, own, err_msg=f"{env_id}, step {steps}")
            headings.add(env.unwrapped.agent_dir)
            hidden += bool((own[..., 0] == 0).any())  # OBJECT_TO_IDX["unseen"]
            grid = env.unwrapped.grid.encode()
            observation, _, terminated, truncated, _ = env.step(int(rng.integers(actions)))
            changed += not np.array_equal(grid, env.unwrapped.grid.encode())
            steps += 1
    assert headings == {0, 1, 2, 3} and (hidden > 0) == walls_hide and changed >= 3  # one open room hides nothing


def fully_observed(env):
    """minigrid's FullyObsWrapper's observation of the state: the whole grid's codes with the agent's."""
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX

    unwrapped = env.unwrapped
    grid = unwrapped.grid.encode()
    grid[tuple(unwrapped.agent_pos)] = [OBJECT_TO_IDX["agent"], COLOR_TO_IDX["red"], unwrapped.agent_dir]
    return grid.tobytes()


@pytest.mark.parametrize("env_id, play_changes_the_grid", [
    ("MiniGrid-KeyCorridorS3R3-v0", True), ("MiniGrid-ObstructedMaze-2Dlh-v0", True),
    ("MiniGrid-LavaCrossingS9N1-v0", False), ("MiniGrid-Dynamic-Obstacles-5x5-v0", True)])
def test_the_state_key_tells_states_apart_exactly_as_the_fully_observed_grid_does(env_id, play_changes_the_grid):
    """RIDE's code counts a state under its fully observed grid, over a run's episodes: the key names the same
    states, through random play that picks up, drops and toggles (doors opened, boxes broken), in layouts whose
    walls and lava differ from episode to episode (LavaCrossing), and where balls move by themselves
    (Dynamic-Obstacles)."""
    env = envs.create_env(env_id, seed=0)
    rng = np.random.default_rng(0)
    keys, grids, layouts, changed = {}, {}, set(), 0
    for episode in range(3):
        _, info = env.reset(seed=episode)
        keys.setdefault(info["state_key"], fully_observed(env))
        grids.setdefault(fully_observed(env), info["state_key"])
        terminated = truncated = False
        while not (terminated or truncated):
            before = env.unwrapped.grid.encode()
            _, _, terminated, truncated, info = env.step(int(rng.integers(7)))
            changed += not np.array_equal(before, env.unwrapped.grid.encode())
            layouts.add(before.tobytes())
            key, grid = info["state_key"], fully_observed(env)
            assert keys.setdefault(key, grid) == grid and grids.setdefault(grid, key) == key
    assert len(layouts) >= 3 and (changed >= 3) == play_changes_the_grid  # new layouts; objects moved or toggled


def test_the_minigrid_head_takes_each_code_one_hot_frame_by_frame():
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX

    assert model.MINIGRID_CODES == (len(OBJECT_TO_IDX), len(COLOR_TO_IDX), len(STATE_TO_IDX))
    with tf.Graph().as_default():
        views = tf1.placeholder(tf.float32, [None, 7, 7, 3 * envs.STACKED_FRAMES])
        with tf1.variable_scope("head"):
            features = model.HEADS["minigrid"](views)
        kernel = [v for v in tf1.trainable_variables() if v.name.startswith("head/l1/")][0]
        assert kernel.shape.as_list() == [3, 3, sum(model.MINIGRID_CODES) * envs.STACKED_FRAMES, 32]
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            codes = np.zeros((2, 7, 7, 12), np.float32)
            codes[1, 3, 3, 0] = 2.0  # a wall where the other has nothing: a category, not twice "empty"
            out = session.run(features, {views: codes})
        assert out.shape == (2, 256) and not np.allclose(out[0], out[1])
    with pytest.raises(ValueError, match="3 channels a frame"):
        model.choose_head((7, 7, 4), "minigrid")


def test_a_curiosity_encoder_embeds_minigrids_views_as_rides_state_embedding_at_unit_scale():
    """RIDE's embedding is its convolutions' 128 features (32, 32, 128 channels): two real views from a fresh
    encoder lie about a unit apart, not the 0.01 of a layer initialised as the original's Doom head (which left
    RIDE's impact, and E3B's bonus, all but zero and the inverse model nothing to tell apart)."""
    import curiosity

    env = envs.create_env("MiniGrid-MultiRoom-N7-S4-v0", seed=0)
    first = env.reset(seed=0)[0]
    second = env.step(LEFT)[0]
    env.close()
    with tf.Graph().as_default():
        tf1.set_random_seed(0)
        bonus = curiosity.build("ride", first.shape, 7, "minigrid")
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            impact = session.run(bonus.bonus_per_step, bonus.feed([first], [second], [LEFT]))[0, 0]
    assert bonus.feature_size == 128 and impact > 0.1, impact


@pytest.mark.parametrize("head", ["minigrid", "doom"])
def test_the_bonus_models_start_as_rides_on_minigrid_and_as_the_originals_elsewhere(head):
    """On MiniGrid the inverse and forward models' weights are orthogonal, of gain sqrt(2) before a ReLU and 1 at
    the output (RIDE's Minigrid*DynamicsNet); elsewhere each column has the original's norm of 0.01."""
    import curiosity

    shape = (7, 7, 3) if head == "minigrid" else (42, 42, 4)
    with tf.Graph().as_default():
        bonus = curiosity.build("ride", shape, 7, head)
        weights = {v.op.name.split("/")[0]: v for v in bonus.var_list
                   if v.op.name.endswith("/w") and not v.op.name.startswith("encoder/")}
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            values = session.run(weights)
    assert sorted(values) == ["f1", "flast", "g1", "glast"]
    for name, w in values.items():
        if head == "minigrid":
            gain = np.sqrt(2.0) if name in ("f1", "g1") else 1.0
            small = min(w.shape)  # orthogonal: the shorter side's vectors orthonormal, times the gain
            gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
            np.testing.assert_allclose(gram, gain ** 2 * np.eye(small), atol=1e-4, err_msg=name)
        else:
            np.testing.assert_allclose(np.linalg.norm(w, axis=0), 0.01, rtol=1e-4, err_msg=name)

def test_the_launcher_gives_minigrid_its_head_unless_told(tmp_path):
    def dry_run(*flags):
        result = subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), "--dry-run", "--mode", "child",
                                 "--num-workers", "1", "--log-dir", str(tmp_path), *flags],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    assert "--design-head minigrid" in dry_run("--env-id", "MiniGrid-KeyCorridorS3R3-v0")
    told = dry_run("--env-id", "MiniGrid-KeyCorridorS3R3-v0", "--design-head", "universe")
    assert "--design-head universe" in told and "--design-head minigrid" not in told
    assert "--design-head" not in dry_run("--env-id", "CartPole-v1")


def test_a3c_with_rnd_and_dqn_with_e3b_train_on_a_minigrid_task(tmp_path):
    """The one-process runs, side by side: every episode logs its success and its cells; the run records the
    minigrid head; each run checkpoints."""
    from conftest import side_by_side

    task = ["--num-workers", "0", "--env-id", "MiniGrid-MultiRoom-N2-S4-v0", "--set", "max_global_steps=800"]
    runs = {"a3c": [*task, "--algo", "a3c", "--unsup", "rnd", "--set", "envs_per_worker=4",
                    "--set", "rnd_warm_up_steps=100"],
            "dqn": [*task, "--algo", "dqn", "--unsup", "e3b", "--set", "learning_starts=200",
                    "--set", "replay_ratio=8", "--set", "batch_size=32"]}
    results = side_by_side("train.py", *([*argv, "--log-dir", tmp_path / algo] for algo, argv in runs.items()))
    for algo, result in zip(runs, results):
        assert result.returncode == 0, (algo, result.stderr[-3000:])
        rows = list(csv.DictReader(open(tmp_path / algo / "episodes_0.csv")))
        assert len(rows) >= 3 and all(row["success"] in ("0", "1") for row in rows), (algo, rows[:3])
        assert all(float(row["bonus"]) > 0 for row in rows), algo
        visits = list(csv.DictReader(open(tmp_path / algo / "visits_0.csv")))
        assert {(row["x"], row["y"]) for row in visits} and all(0 < float(row["x"]) < 25 for row in visits)
        assert json.load(open(tmp_path / algo / "config.json"))["run"]["design_head"] == "minigrid"
        assert os.listdir(tmp_path / algo / "train"), algo


def test_a3c_and_impala_clip_the_summed_reward_on_minigrid_as_rides_code_does():
    """RIDE's, NovelD's and E3B's learner clips extrinsic reward plus bonus to [-1, 1] on MiniGrid; the paper's
    preprocessing clips (Doom, --envWrap); classic control does not."""
    import types

    import constants
    import impala

    assert envs.clips_rewards("MiniGrid-MultiRoom-N7-S4-v0", False) and envs.clips_rewards("doom", False)
    assert not envs.clips_rewards("CartPole-v1", False)
    config = constants.config_from_overrides([], "impala_minigrid")
    assert impala.reward_clip(types.SimpleNamespace(env_id="MiniGrid-KeyCorridorS3R3-v0", env_wrap=False), config) == 1.0
    assert impala.reward_clip(types.SimpleNamespace(env_id="CartPole-v1", env_wrap=False), config) is None
