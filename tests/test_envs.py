"""Environments: construction, reward flags, preprocessing shapes, unknown ids."""
import numpy as np
import pytest

import envs


class Scripted(envs.gym.Env):
    """Pays the rewards it is given, one per step."""

    observation_space = envs.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = envs.spaces.Discrete(2)

    def __init__(self, rewards):
        self.rewards = list(rewards)

    def reset(self, *, seed=None, options=None):
        return np.zeros(3, np.float32), {}

    def step(self, action):
        return np.zeros(3, np.float32), self.rewards.pop(0), False, False, {}


@pytest.mark.parametrize("no_reward,no_life_reward,expected", [
    (False, False, [2.0, -1.0, 0.5]),
    (True, False, [0.0, 0.0, 0.0]),
    (False, True, [2.0, 0.0, 0.5]),
])
def test_reward_flags_keep_the_game_reward_in_info(no_reward, no_life_reward, expected):
    env = envs.ExtrinsicReward(Scripted([2.0, -1.0, 0.5]), no_reward=no_reward, no_life_reward=no_life_reward)
    env.reset()
    seen, game = [], []
    for _ in expected:
        _, reward, _, _, info = env.step(0)
        seen.append(reward)
        game.append(info["env_reward"])
    assert seen == expected and game == [2.0, -1.0, 0.5]


def test_vector_environment():
    env = envs.create_env("CartPole-v1", seed=0)
    observation, _ = env.reset(seed=0)
    assert observation.dtype == np.float32 and observation.shape == (4,) and env.action_space.n == 2


@pytest.mark.parametrize("env_wrap,stack_frames,size,channels",
                         [(False, False, 42, 1), (True, False, 42, 4), (False, True, 42, 4), (False, True, 84, 4)])
def test_image_environment_becomes_small_and_square_in_unit_range(env_wrap, stack_frames, size, channels):
    env = envs.create_env("CorridorPixels-v0", env_wrap=env_wrap, stack_frames=stack_frames, image_size=size)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (size, size, channels) and observation.dtype == np.float32
    assert observation.min() == 0.0 and observation.max() == 1.0
    assert envs.observation_kind(env.observation_space) == "image"


def test_unknown_id_lists_what_is_supported():
    with pytest.raises(envs.EnvError, match="unknown environment id 'Nope-v0'; supported: doom, doomSparse"):
        envs.create_env("Nope-v0")


def test_continuous_actions_are_refused():
    with pytest.raises(envs.EnvError, match="needs a discrete one"):
        envs.create_env("Pendulum-v1")


def test_long_corridor_is_hard_for_a_random_walk():
    env = envs.create_env("CorridorLong-v0", seed=0)
    assert env.observation_space.shape == (64,) and env.spec.max_episode_steps == 3 * 64
    rng = np.random.default_rng(0)
    successes = 0
    for _ in range(200):
        env.reset()
        while True:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
            if terminated or truncated:
                successes += terminated
                break
    assert successes == 0
    env.reset()
    for _ in range(63):
        _, reward, terminated, _, _ = env.step(1)
    assert terminated and reward == 1.0, "walking right 63 times reaches the end"


def test_only_games_whose_engines_leave_the_gil_step_in_threads():
    assert envs.steps_in_threads("doom") and envs.steps_in_threads("mario-1-1")
    assert envs.steps_in_threads("PongDeterministic-v4")
    assert not envs.steps_in_threads("CartPole-v1") and not envs.steps_in_threads("CorridorLong-v0")


def test_a_doom_engine_that_cannot_run_is_named_not_waited_on(tmp_path):
    engine = tmp_path / "vizdoom"
    with pytest.raises(envs.EnvError, match="is missing"):
        envs.check_doom_engine(str(engine))
    engine.write_bytes(b"\x7fELF")
    engine.chmod(0o644)  # what a copy that lost its mode bits looks like: DoomGame.init() then hangs
    with pytest.raises(envs.EnvError, match=f"{engine} is not executable: chmod \\+x"):
        envs.check_doom_engine(str(engine))
    engine.chmod(0o755)
    envs.check_doom_engine(str(engine))


def test_a_pixels_id_sees_the_task_through_its_renderer():
    """Pendulum-v1-pixels: 64x64 RGB in [0, 1] instead of the state; the frame follows the pendulum (the rod's pixels
    move as it falls); stacked for a learner without memory, the last 3 channels are the newest frame."""
    env = envs.create_env("Pendulum-v1-pixels", continuous_actions=True, seed=0)
    first, _ = env.reset(seed=0)
    assert env.observation_space.shape == (64, 64, 3) and first.shape == (64, 64, 3) and first.dtype == np.float32
    assert 0.0 <= first.min() < 0.5 < first.max() <= 1.0
    frames = [env.step(np.zeros(1, np.float32))[0] for _ in range(20)]
    assert np.abs(frames[-1] - first).mean() > 0.005, "the rod has moved"
    env.close()
    stacked = envs.create_env("Pendulum-v1-pixels", continuous_actions=True, seed=0, stack_frames=True)
    observation, _ = stacked.reset(seed=0)
    assert observation.shape == (64, 64, 12)
    assert np.array_equal(observation[..., -3:], first)
    stacked.close()
    with pytest.raises(envs.EnvError, match="unknown environment id 'NoSuchTask-v0'"):
        envs.create_env("NoSuchTask-v0-pixels")


def test_a_mujoco_task_renders_its_pixels_headless_after_tensorflow_has_run():
    """In this process TensorFlow has run a convolution first (MuJoCo's EGL renderer on Mesa crashes a process in
    which it has: the task renders in a process of its own); an error in the task comes back as the error."""
    import tensorflow as tf

    assert tf.nn.conv2d(tf.ones([1, 8, 8, 3]), tf.ones([3, 3, 3, 4]), 1, "VALID").shape == (1, 6, 6, 4)
    env = envs.create_env("InvertedPendulum-v5-pixels", continuous_actions=True, seed=0)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (64, 64, 3) and observation.std() > 0.01
    assert env.step(env.action_space.sample())[0].shape == (64, 64, 3)
    with pytest.raises(ValueError):
        env.step(np.zeros(5, np.float32))  # InvertedPendulum takes one action
    env.close()
    assert not env.unwrapped.process.is_alive()


def test_reacher_from_pixels_looks_from_above_with_the_arms_root_at_the_centre():
    """Reacher-v5's own camera left the arm 2 pixels wide at 64x64 (a share of 0.2% of the frame)."""
    env = envs.create_env("Reacher-v5-pixels", continuous_actions=True, seed=0)
    frame = (env.reset(seed=1)[0] * 255).astype(int)
    env.close()
    arm = frame[..., 2] > frame[..., 0] + 30  # the links are blue, the floor grey
    root = (frame[..., 0] - frame[..., 1] > 40) & (frame[..., 2] - frame[..., 1] > 15)  # its cap is pink
    rows, columns = np.nonzero(root)
    assert arm.mean() > 0.008 and abs(rows.mean() - 31.5) < 3 and abs(columns.mean() - 31.5) < 3


def test_a_mujoco_task_without_mujoco_says_what_to_install(monkeypatch):
    real = envs.importlib.util.find_spec
    monkeypatch.setattr(envs.importlib.util, "find_spec", lambda name: None if name == "mujoco" else real(name))
    with pytest.raises(envs.EnvError, match=r"InvertedPendulum-v5 is a MuJoCo task: pip install -e '.\[mujoco\]'"):
        envs.check_env_id("InvertedPendulum-v5-pixels")
