"""Returns and GAE advantages against values computed by hand (gamma = 0.5 keeps the arithmetic exact)."""
import numpy as np
import pytest

from a3c import IntrinsicStream, discount, process_rollout
from acting import PartialRollout

GAMMA = 0.5


def rollout(rewards, values, bootstrap=0.0, terminal=True):
    r = PartialRollout(features=None)
    for reward, value in zip(rewards, values):
        r.add(np.zeros(2, np.float32), 0, reward, value)
    r.last_observation = np.ones(2, np.float32)
    r.bootstrap_value = bootstrap
    r.terminal = terminal
    r.episode_end = terminal
    return r


def test_discount_right_to_left():
    # y2 = 2, y1 = 0 + .5 * 2 = 1, y0 = 1 + .5 * 1 = 1.5
    np.testing.assert_allclose(discount([1.0, 0.0, 2.0], GAMMA), [1.5, 1.0, 2.0])


def test_terminal_rollout_lambda_one():
    batch = process_rollout(rollout([1, 0, 2], [0.5, 1.0, 1.5], bootstrap=99.0, terminal=True), GAMMA, 1.0)
    np.testing.assert_allclose(batch.returns, [1.5, 1.0, 2.0])  # the bootstrap is ignored when terminal
    np.testing.assert_allclose(batch.advantages, [1.0, 0.0, 0.5])  # returns - values


def test_bootstrapped_rollout_lambda_one():
    # returns: y3 = V = 4, y2 = 2 + 2 = 4, y1 = 0 + 2 = 2, y0 = 1 + 1 = 2
    batch = process_rollout(rollout([1, 0, 2], [0.5, 1.0, 1.5], bootstrap=4.0, terminal=False), GAMMA, 1.0)
    np.testing.assert_allclose(batch.returns, [2.0, 2.0, 4.0])
    np.testing.assert_allclose(batch.advantages, [1.5, 1.0, 2.5])


def test_bootstrapped_rollout_gae_lambda_half():
    # deltas: 1 + .5*1 - .5 = 1, 0 + .5*1.5 - 1 = -.25, 2 + .5*4 - 1.5 = 2.5; discounted by gamma*lambda = .25
    batch = process_rollout(rollout([1, 0, 2], [0.5, 1.0, 1.5], bootstrap=4.0, terminal=False), GAMMA, 0.5)
    np.testing.assert_allclose(batch.advantages, [1.09375, 0.375, 2.5])
    np.testing.assert_allclose(batch.returns, [2.0, 2.0, 4.0])  # returns do not depend on lambda


def test_terminal_rollout_gae_lambda_half():
    # last delta: 2 + 0 - 1.5 = .5; then -.25 + .25*.5 = -.125; then 1 - .25*.125 = .96875
    batch = process_rollout(rollout([1, 0, 2], [0.5, 1.0, 1.5], terminal=True), GAMMA, 0.5)
    np.testing.assert_allclose(batch.advantages, [0.96875, -0.125, 0.5])


def test_reward_clip_applies_only_when_asked():
    unclipped = process_rollout(rollout([5.0, -3.0], [0.0, 0.0]), 1.0, 1.0)
    clipped = process_rollout(rollout([5.0, -3.0], [0.0, 0.0]), 1.0, 1.0, reward_clip=1.0)
    np.testing.assert_allclose(unclipped.returns, [2.0, -3.0])
    np.testing.assert_allclose(clipped.returns, [0.0, -1.0])


def test_bonus_is_added_to_the_reward_and_the_sum_clipped():
    r = rollout([5.0, 0.0], [0.0, 0.0])
    r.bonuses = [0.5, 0.25]
    np.testing.assert_allclose(process_rollout(r, 1.0, 1.0).returns, [5.75, 0.25])
    # clip(5) = 1, plus .5 = 1.5, clipped again to 1; 0 + .25 stays
    np.testing.assert_allclose(process_rollout(r, 1.0, 1.0, reward_clip=1.0).returns, [1.25, 0.25])


def test_frames_end_with_the_state_after_the_last_step():
    batch = process_rollout(rollout([0.0, 0.0], [0.0, 0.0]), GAMMA)
    assert batch.frames.shape == (3, 2) and batch.observations.shape == (2, 2)
    np.testing.assert_array_equal(batch.frames[-1], np.ones(2))
    np.testing.assert_array_equal(batch.frames[:-1], batch.observations)


def test_extend_joins_rollouts_of_one_episode_only():
    first = rollout([1.0], [0.0], bootstrap=7.0, terminal=False)
    second = rollout([2.0], [0.0], bootstrap=3.0, terminal=False)
    first.extend(second)
    assert first.rewards == [1.0, 2.0] and first.bootstrap_value == 3.0
    finished = rollout([1.0], [0.0], terminal=True)
    with pytest.raises(ValueError):
        finished.extend(second)


def test_reward_scale_scales_the_extrinsic_reward_before_the_clip_and_not_the_bonus():
    r = rollout([5.0, -30.0], [0.0, 0.0])
    r.bonuses = [0.5, 0.25]
    # 5 * .1 + .5 = 1, -30 * .1 + .25 = -2.75; gamma 1: returns 1 - 2.75 = -1.75, -2.75
    np.testing.assert_allclose(process_rollout(r, 1.0, 1.0, reward_scale=0.1).returns, [-1.75, -2.75])
    # with the clip: clip(.5) + .5 = 1, clip(-3) = -1, + .25 = -.75: returns .25, -.75
    np.testing.assert_allclose(process_rollout(r, 1.0, 1.0, reward_clip=1.0, reward_scale=0.1).returns,
                               [0.25, -0.75])


# ---------------------------------------------------------------- two streams (Config.two_streams, RND)

def two_stream_rollout(terminal, episode_end=None):
    """Extrinsic rewards 1, 0, 2 with values .5, 1, 1.5; bonuses .1, .2, .3 with V_int .4, .3, .2."""
    r = PartialRollout(features=None)
    for reward, value, value_int in zip([1.0, 0.0, 2.0], [0.5, 1.0, 1.5], [0.4, 0.3, 0.2]):
        r.add(np.zeros(2, np.float32), 0, reward, value, value_int)
    r.bonuses = [0.1, 0.2, 0.3]
    r.last_observation = np.ones(2, np.float32)
    r.bootstrap_value, r.bootstrap_value_int, r.next_episode_value_int = 4.0, 9.0, 0.6
    r.terminal = terminal
    r.episode_end = terminal if episode_end is None else episode_end
    return r


def test_two_streams_non_episodic_bonus_goes_on_across_the_episode_end():
    """gamma .9 extrinsic, .5 intrinsic, lambda 1. Extrinsic, terminal: R = 1 + .81 x 2 = 2.62, 0 + .9 x 2 = 1.8,
    2; A_ext = R - V = 2.12, .8, .5. Intrinsic from V_int of the next episode's first state, .6 (not V_int(s_T),
    9): R_int = .3 + .5 x .6 = .6, .2 + .5 x .6 = .5, .1 + .5 x .5 = .35; A_int = -.05, .2, .4.
    A = 2 A_ext + 1 A_int = 4.19, 1.8, 1.4."""
    batch = process_rollout(two_stream_rollout(terminal=True), 0.9, 1.0,
                            intrinsic=IntrinsicStream(gamma=0.5, ext_coef=2.0, int_coef=1.0, episodic=False))
    np.testing.assert_allclose(batch.returns, [2.62, 1.8, 2.0], rtol=1e-6)
    np.testing.assert_allclose(batch.returns_int, [0.35, 0.5, 0.6], rtol=1e-6)
    np.testing.assert_allclose(batch.advantages, [4.19, 1.8, 1.4], rtol=1e-6)


def test_two_streams_episodic_bonus_ends_with_a_termination_and_bootstraps_a_cut():
    episodic = IntrinsicStream(gamma=0.5, ext_coef=1.0, int_coef=1.0, episodic=True)
    ended = process_rollout(two_stream_rollout(terminal=True), 0.9, 1.0, intrinsic=episodic)
    np.testing.assert_allclose(ended.returns_int, [0.275, 0.35, 0.3], rtol=1e-6)  # .3; .2 + .15; .1 + .175
    # a rollout cut inside its episode bootstraps both streams from V(s_T): 4 and V_int(s_T) = 9, both ways
    for stream in (episodic, episodic._replace(episodic=False)):
        cut = process_rollout(two_stream_rollout(terminal=False), 0.9, 1.0, intrinsic=stream)
        np.testing.assert_allclose(cut.returns, [1 + 0.81 * 2 + 0.729 * 4, 1.8 + 0.81 * 4, 2 + 0.9 * 4], rtol=1e-6)
        np.testing.assert_allclose(cut.returns_int, [0.1 + 0.1 + 0.075 + 1.125, 0.2 + 0.15 + 2.25, 0.3 + 4.5],
                                   rtol=1e-6)
    # a truncated episode: the episodic stream bootstraps from V_int(s_T), the non-episodic one goes on
    truncated = two_stream_rollout(terminal=False, episode_end=True)
    np.testing.assert_allclose(process_rollout(truncated, 0.9, 1.0, intrinsic=episodic).returns_int[-1], 4.8)
    np.testing.assert_allclose(process_rollout(truncated, 0.9, 1.0, intrinsic=episodic._replace(
        episodic=False)).returns_int[-1], 0.6)


def test_two_streams_clip_the_extrinsic_reward_alone():
    r = PartialRollout(features=None)
    r.add(np.zeros(2, np.float32), 0, 5.0, 0.0, 0.0)
    r.bonuses = [3.0]
    r.last_observation = np.ones(2, np.float32)
    r.terminal = r.episode_end = True
    batch = process_rollout(r, 0.9, 1.0, reward_clip=1.0,
                            intrinsic=IntrinsicStream(gamma=0.5, ext_coef=1.0, int_coef=1.0, episodic=True))
    np.testing.assert_allclose(batch.returns, [1.0])  # clip(5) = 1
    np.testing.assert_allclose(batch.returns_int, [3.0])  # the bonus unclipped
    assert process_rollout(r, 0.9, 1.0).returns_int is None  # one stream: no intrinsic return
