"""Environments: `create_env(env_id, ...)` and the small wrappers the agent needs.

Every environment handed to the agent has a discrete action space and float32 observations: a vector for
classic-control style tasks (MLP head), or a 42x42xC image scaled to [0, 1] (convolutional heads).
This module must not import TensorFlow: the launcher uses it to check an id before starting anything.
"""
import gymnasium as gym
import numpy as np
from gymnasium import spaces

IMAGE_SIZE = 42  # the paper's input resolution
STACKED_FRAMES = 4  # --envWrap: frames stacked into channels
ACTION_REPEAT = 4  # --envWrap: each action is repeated, rewards summed, last two frames max-pooled


class EnvError(ValueError):
    """An environment id or option that cannot be used; the message says what to do instead."""


SUPPORTED = ("any gymnasium id with a discrete action space and vector or image observations "
             "(e.g. CartPole-v1, Acrobot-v1, MountainCar-v0), and this project's Corridor-v0, CorridorLong-v0 "
             "and CorridorPixels-v0")


class Corridor(gym.Env):
    """A deterministic chain of `length` cells: start at the left end, +1 for reaching the right end.

    Observations are the one-hot position; actions are 0 = left, 1 = right. Solving it means walking right
    `length - 1` times, which a learner finds quickly while a random walk needs about length**2 steps; it is the
    test bed for 'learning happens' checks, and a sparse-reward exploration task when made long.
    """

    metadata = {"render_modes": []}

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


def _to_float_vector(env):
    space = env.observation_space
    bounded = spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)
    return gym.wrappers.TransformObservation(env, lambda observation: np.asarray(observation, np.float32),
                                             bounded)


def _to_small_image(env, env_wrap):
    """Grayscale, 42x42, scaled to [0, 1]; with --envWrap also action repeat, max-pool and a 4-frame stack."""
    if env_wrap:
        env = gym.wrappers.MaxAndSkipObservation(env, skip=ACTION_REPEAT)
    if len(env.observation_space.shape) == 3 and env.observation_space.shape[-1] == 3:
        env = gym.wrappers.GrayscaleObservation(env, keep_dim=False)
    env = gym.wrappers.ResizeObservation(env, (IMAGE_SIZE, IMAGE_SIZE))
    channels = 1
    if env_wrap:
        env = gym.wrappers.FrameStackObservation(env, STACKED_FRAMES)  # [C, 42, 42]
        channels = STACKED_FRAMES
    scaled = spaces.Box(0.0, 1.0, (IMAGE_SIZE, IMAGE_SIZE, channels), np.float32)

    def to_channels_last(frames):
        frames = np.asarray(frames, np.float32).reshape(-1, IMAGE_SIZE, IMAGE_SIZE)
        return np.moveaxis(frames, 0, -1) / 255.0

    return gym.wrappers.TransformObservation(env, to_channels_last, scaled)


def check_env_id(env_id):
    """Raise EnvError with the supported families when gymnasium does not know `env_id`."""
    try:
        gym.spec(env_id)
    except gym.error.Error:
        raise EnvError(f"unknown environment id {env_id!r}; supported: {SUPPORTED}") from None


def create_env(env_id, env_wrap=False, no_reward=False, no_life_reward=False, seed=None, render_mode=None):
    """Build `env_id` for the agent: discrete actions, float32 observations, reward flags applied."""
    check_env_id(env_id)
    env = gym.make(env_id, **({"render_mode": render_mode} if render_mode else {}))
    if not isinstance(env.action_space, spaces.Discrete):
        env.close()
        raise EnvError(f"{env_id} has action space {env.action_space}; the agent needs a discrete one")
    if observation_kind(env.observation_space) == "vector":
        env = _to_float_vector(env)
    else:
        env = _to_small_image(env, env_wrap)
    env = ExtrinsicReward(env, no_reward=no_reward, no_life_reward=no_life_reward)
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env
