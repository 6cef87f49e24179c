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
