"""An episodic bonus is one class: the acting side of every learner tells a bonus's scaler where each environment's
episodes begin and end, in the order of the steps it hands it (curiosity.Scaler). Checked with a per-episode count
(the bonus of an episode's t-th step is 1 / t) on scripted episodes of known lengths, by hand."""
import numpy as np
import pytest
import tensorflow as tf

import constants
import curiosity
from envs import gym, spaces

tf1 = tf.compat.v1
tf1.disable_eager_execution()

LENGTHS = (3, 5)  # environment 0's episodes end by termination after 3 steps, environment 1's by truncation after 5


class Fixed(gym.Env):
    """Episodes of exactly `length` steps, ended by termination or (`truncate`) by a time limit."""

    def __init__(self, length, truncate, continuous=False):
        self.length, self.truncate = length, truncate
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else spaces.Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        over = self.t == self.length
        return np.array([self.t, self.length], np.float32), 0.0, over and not self.truncate, over and self.truncate, {}


def scripted_envs(continuous=False):
    return [Fixed(LENGTHS[0], truncate=False, continuous=continuous), Fixed(LENGTHS[1], truncate=True,
                                                                           continuous=continuous)]


class EpisodeCount(curiosity.Scaler):
    """A per-episode count: the t-th step of an episode gets 1 / t. Every event is kept, and a step outside an
    episode, or an episode begun twice, fails at once."""

    def __init__(self, count):
        self.events, self.steps, self.open = [], [0] * count, [False] * count

    def episode_begins(self, index):
        assert not self.open[index], f"environment {index} began an episode inside one"
        self.open[index], self.steps[index] = True, 0
        self.events.append(("begins", index))

    def episode_ends(self, index):
        assert self.open[index], f"environment {index} ended an episode it had not begun"
        self.open[index] = False
        self.events.append(("ends", index, self.steps[index]))

    def count(self, index, steps):
        assert self.open[index], f"a step of environment {index} outside an episode"
        rewards = []
        for _ in range(steps):
            self.steps[index] += 1
            rewards.append(1.0 / self.steps[index])
        return rewards

    def assign(self, raw, extra, finished):  # a rollout learner's (A3C)
        for rollout, index in finished:
            rollout.bonuses = self.count(index, len(rollout))

    def step(self, raw, extra, keys=None):  # a replay learner's (DQN, SAC), one step of every environment
        return np.array([self.count(index, 1)[0] for index in range(len(raw))]), None


def harmonic(length):
    return sum(1.0 / t for t in range(1, length + 1))


def check(counter, episodes):
    """Every episode of `episodes` (EpisodeStats, with the environment's index) began, ended after its length, and
    its bonus was its count's: 1 + 1/2 + ... + 1/L."""
    assert {index for index, _ in episodes} == {0, 1}
    for index, stats in episodes:
        assert stats.length == LENGTHS[index]
        assert stats.bonus == pytest.approx(harmonic(LENGTHS[index]))
    for index, length in enumerate(LENGTHS):
        mine = [event for event in counter.events if event[1] == index]
        ended = [event for event in mine if event[0] == "ends"]
        assert ended and all(event == ("ends", index, length) for event in ended)
        assert mine[::2] == [("begins", index)] * len(mine[::2]), "begins and ends alternate, beginning first"
        assert len(mine[1::2]) == len(ended)


def test_a3c_acting_tells_the_bonus_every_episodes_start_and_end(graph):
    from a3c import A3C
    from acting import env_runner

    np.random.seed(0)
    trainer = A3C(scripted_envs(), 0, constants.Config(lstm_size=8, mlp_units=8), unsup="action")
    counter = EpisodeCount(2)
    episodes = []  # in the order the bonus was told of their ends

    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        # rollouts of 2 steps: an episode of 3 is 2 + 1, one of 5 is 2 + 2 + 1, each its count's continuation
        batches = env_runner(trainer.envs, trainer.local_network, session, 2, episodes.append,
                             trainer.local_predictor, counter)
        rollouts = [(rollout, rollout.episode_start) for _, batch in zip(range(12), batches) for rollout in batch]
    lengths = {len(rollout) for rollout, _ in rollouts}
    assert lengths == {1, 2}
    ends = [event[1] for event in counter.events if event[0] == "ends"]
    assert len(ends) == len(episodes)
    check(counter, [(index, stats) for stats, index in zip(episodes, ends)])
    starts = [rollout.bonuses[0] for rollout, start in rollouts if start]
    assert starts and all(bonus == 1.0 for bonus in starts), "an episode's first rollout counts from 1"
    continued = [rollout.bonuses[0] for rollout, start in rollouts if not start]
    assert continued and all(bonus < 1.0 for bonus in continued), "a later rollout continues its episode's count"


@pytest.mark.parametrize("algo", ["dqn", "sac"])
def test_replay_acting_tells_the_bonus_every_episodes_start_and_end(graph, algo):
    import algorithms
    import offpolicy

    row = algorithms.get(algo)
    config = constants.Config(mlp_units=8, n_step=1, batch_size=4, learning_starts=4)
    env_list = scripted_envs(continuous=row.continuous)
    space, action_space = env_list[0].observation_space, env_list[0].action_space
    agent = offpolicy.build_learner(algo, space.shape, action_space, config, "mlp", np.float32)
    curious = offpolicy.Curious("action", space.shape, curiosity.action_spec(action_space), config, "mlp",
                                np.float32)
    acting = offpolicy.Acting(env_list, config, np.float32, seed=0)
    rng = np.random.default_rng(0)
    episodes = []
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        bonus = curious.acting_bonus(session, len(env_list))
        bonus.scaler = counter = EpisodeCount(len(env_list))
        for step in range(16):
            actions, stored = agent.explore(session, acting.stored_observations(), step, rng)
            before = {k: acting.tallies[k] for k in range(len(env_list))}
            _, finished = acting.step(actions, bonus, stored)
            ended = [k for k in before if acting.tallies[k] is not before[k]]  # a new tally: its episode ended
            episodes += list(zip(ended, finished))
    check(counter, episodes)
    assert counter.events[:2] == [("begins", 0), ("begins", 1)], "both told before their first step"
    assert ("ends", 0, 3) in counter.events and ("ends", 1, 5) in counter.events
