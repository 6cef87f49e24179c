"""Replay: the sum tree against brute force, prioritized sampling and its importance weights by hand, n-step
transitions from short episodes (termination and time-limit truncation), Ape-X's exploration schedule."""
import numpy as np
import pytest

import replay


def brute_force_find(priorities, targets):
    """The slot whose range [prefix sum before it, prefix sum through it) holds each target."""
    return np.searchsorted(np.cumsum(priorities), targets, side="right")


@pytest.mark.parametrize("fanout", [2, 3, 16])
def test_the_sum_tree_finds_what_a_prefix_sum_search_finds_and_keeps_every_sum(fanout):
    rng = np.random.default_rng(0)
    priorities = rng.random(37) * (rng.random(37) > 0.3)  # not a power of the fanout; some slots at 0
    tree = replay.SumTree(37, fanout)
    tree.update(np.arange(37), priorities)
    assert tree.total == pytest.approx(priorities.sum())
    targets = rng.random(10_000) * priorities.sum()
    found = tree.find(targets)
    assert np.array_equal(found, brute_force_find(priorities, targets))
    assert priorities[found].min() > 0, "a slot of priority 0 is never found"
    for parents, children in zip(tree.levels, tree.levels[1:]):  # every inner node is the sum of its children
        assert np.allclose(parents, children.reshape(-1, fanout).sum(axis=1))
    assert tree.find([np.nextafter(tree.total, np.inf) * 2])[0] == np.flatnonzero(priorities)[-1]  # past the end


def test_sampling_frequencies_follow_the_priorities():
    rng = np.random.default_rng(1)
    priorities = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 9.5])
    tree = replay.SumTree(len(priorities))
    tree.update(np.arange(len(priorities)), priorities)
    draws = 200_000
    counts = np.bincount(tree.find(rng.random(draws) * tree.total), minlength=len(priorities))
    expected = priorities / priorities.sum()
    # binomial standard deviation at most sqrt(0.25 / draws) ~ 0.0011: 5 of them
    assert np.abs(counts / draws - expected).max() < 0.0056
    assert counts[0] == 0


def test_a_batch_of_updates_is_the_same_as_one_at_a_time_and_a_repeated_slot_keeps_its_last():
    rng = np.random.default_rng(2)
    batched, one_by_one = replay.SumTree(100, fanout=4), replay.SumTree(100, fanout=4)
    slots = rng.integers(0, 100, 300)  # many repeats
    priorities = rng.random(300)
    batched.update(slots, priorities)
    for slot, priority in zip(slots, priorities):
        one_by_one.update([slot], [priority])
    assert all(np.allclose(mine, theirs) for mine, theirs in zip(batched.levels, one_by_one.levels))
    last = {int(slot): priority for slot, priority in zip(slots, priorities)}
    assert np.allclose(batched.get(list(last)), list(last.values()))
    with pytest.raises(IndexError):
        batched.update([100], [1.0])
    with pytest.raises(ValueError):
        batched.update([0], [-1.0])


def test_importance_weights_and_priorities_by_hand():
    memory = replay.PrioritizedReplay(8, (2,), np.float32, alpha=0.5, epsilon=0.0)
    observations = np.arange(8, dtype=np.float32).reshape(4, 2)
    slots = memory.add(observations, [0, 1, 0, 1], [1.0, 2.0, 3.0, 4.0], [0.9] * 4, observations + 1)
    assert list(slots) == [0, 1, 2, 3] and len(memory) == 4
    assert np.allclose(memory.probabilities(), 0.25), "new transitions all get the largest priority seen"
    memory.update_priorities([0, 1, 2, 3], [1.0, -4.0, 9.0, 16.0])  # |error|^0.5: 1, 2, 3, 4; sum 10
    assert np.allclose(memory.probabilities(), [0.1, 0.2, 0.3, 0.4])
    slots, batch, weights = memory.sample(64, beta=0.5)
    # w_i = (N P(i))^-beta / max_j w_j over the batch: (4 P)^-0.5 = 1.58, 1.12, 0.91, 0.79
    by_hand = (4 * np.array([0.1, 0.2, 0.3, 0.4])) ** -0.5
    assert np.allclose(weights, by_hand[slots] / by_hand[slots].max())
    assert np.array_equal(batch["actions"], np.array([0, 1, 0, 1])[slots])
    assert np.array_equal(batch["next_observations"], observations[slots] + 1)
    assert memory.max_priority == 16.0
    memory.add(observations[:1], [1], [5.0], [0.0], observations[:1])  # a new one: the largest priority, 16^0.5
    assert memory.probabilities()[4] == pytest.approx(4.0 / 14.0)


def test_the_prefetching_sampler_draws_each_batch_one_update_before_the_last_priorities_apply():
    """Slots 0 and 1 at equal priority; after each batch the learner gives slot 0 (then slot 1) priority 0. The batch
    drawn while it trained on the last was drawn before those priorities: batch 1 still holds both slots; batch 2
    was drawn after batch 0's priorities and before batch 1's: slot 1 alone."""
    memory = replay.PrioritizedReplay(2, (1,), np.float32, epsilon=0.0, seed=1)
    memory.add(np.zeros((2, 1), np.float32), [0, 1], [0.0, 0.0], [1.0, 1.0], np.zeros((2, 1), np.float32))
    sampler = replay.PrefetchingSampler(memory)
    try:
        batches = []
        for zeroed in (0, 1, 0):
            slots, _, _ = sampler.sample(64)
            batches.append(set(slots.tolist()))
            sampler.update_priorities([zeroed, 1 - zeroed], [0.0, 1.0])
        assert batches == [{0, 1}, {0, 1}, {1}]
        assert len(sampler) == 2
    finally:
        sampler.close()
    assert not sampler.thread.is_alive()


def test_a_failure_in_the_samplers_thread_reaches_the_learner():
    memory = replay.PrioritizedReplay(4, (1,), np.float32)  # empty: sampling raises
    sampler = replay.PrefetchingSampler(memory)
    with pytest.raises(RuntimeError, match="sampler thread failed.*empty replay"):
        sampler.sample(8)


def test_the_replay_is_a_fifo_and_overwrites_its_oldest():
    memory = replay.PrioritizedReplay(3, (1,), np.uint8)
    for value in range(5):
        memory.add(np.full((1, 1), value, np.uint8), [value], [value], [1.0], np.full((1, 1), value, np.uint8))
    assert len(memory) == 3 and memory.inserted == 5
    assert sorted(memory.actions.tolist()) == [2, 3, 4] and memory.cursor == 2


def test_uniform_replay_draws_every_stored_slot_alike_with_unit_weights():
    memory = replay.PrioritizedReplay(10, (1,), np.uint8, uniform=True, seed=3)
    memory.add(np.zeros((4, 1), np.uint8), [0, 1, 2, 3], [0.0] * 4, [1.0] * 4, np.zeros((4, 1), np.uint8))
    slots, _, weights = memory.sample(40_000)
    assert slots.max() == 3 and np.all(weights == 1.0)
    assert np.abs(np.bincount(slots) / 40_000 - 0.25).max() < 0.01
    memory.update_priorities(slots[:5], np.ones(5))  # nothing to update, and no error


def test_beta_anneals_from_its_start_to_one():
    assert [replay.beta_at(step, 100) for step in (0, 50, 100, 200)] == pytest.approx([0.4, 0.7, 1.0, 1.0])


def n_step_transitions(n, gamma, rewards, terminated, truncated):
    buffer, out = replay.NStepBuffer(n, gamma), []
    for t, reward in enumerate(rewards):
        last = t == len(rewards) - 1
        out += buffer.add(f"s{t}", t % 2, reward, f"s{t + 1}", terminated and last, truncated and last)
    for t in out:  # each keeps its s_t+1, one step on, whatever n
        assert t.following == f"s{int(t.observation[1:]) + 1}", t
    return [(t.observation, t.action, t.n_step_return, t.discount, t.next_observation) for t in out]


def test_n_step_transitions_of_an_episode_that_terminates():
    # n = 3, gamma = 0.5, rewards 1, 2, 3, 4, terminated after the 4th step
    assert n_step_transitions(3, 0.5, [1, 2, 3, 4], terminated=True, truncated=False) == [
        ("s0", 0, 1 + 0.5 * 2 + 0.25 * 3, 0.125, "s3"),
        ("s1", 1, 2 + 0.5 * 3 + 0.25 * 4, 0.0, "s4"),  # the episode ended within its 3 steps: no bootstrap
        ("s2", 0, 3 + 0.5 * 4, 0.0, "s4"),
        ("s3", 1, 4.0, 0.0, "s4")]


def test_n_step_transitions_of_an_episode_cut_by_a_time_limit_bootstrap_from_its_last_observation():
    assert n_step_transitions(3, 0.5, [1, 2, 3, 4], terminated=False, truncated=True) == [
        ("s0", 0, 2.75, 0.125, "s3"),
        ("s1", 1, 4.5, 0.125, "s4"),
        ("s2", 0, 5.0, 0.25, "s4"),  # two steps to the cut: gamma^2 on the last observation
        ("s3", 1, 4.0, 0.5, "s4")]


def test_an_episode_shorter_than_n_and_a_one_step_buffer():
    assert n_step_transitions(3, 0.5, [1, 2], terminated=True, truncated=False) == [
        ("s0", 0, 2.0, 0.0, "s2"), ("s1", 1, 2.0, 0.0, "s2")]
    assert n_step_transitions(1, 0.9, [1, 2], terminated=False, truncated=False) == [
        ("s0", 0, 1.0, 0.9, "s1"), ("s1", 1, 2.0, 0.9, "s2")]


def test_apex_exploration_runs_from_point_four_down_to_point_four_to_the_eighth():
    epsilons = replay.apex_epsilons(8)
    assert epsilons[0] == pytest.approx(0.4) and epsilons[-1] == pytest.approx(0.4 ** 8)
    assert epsilons[1] == pytest.approx(0.4 ** 2) and all(a > b for a, b in zip(epsilons, epsilons[1:]))
    assert replay.apex_epsilons(1) == [0.4]


def test_a_one_step_replay_keeps_each_transitions_next_observation_and_asks_for_it():
    memory = replay.PrioritizedReplay(4, (1,), np.float32, one_step=True)
    memory.add(np.zeros((2, 1)), [0, 1], [0.0, 0.0], [1.0, 1.0], np.full((2, 1), 3.0), following=[[1.0], [2.0]])
    _, batch, _ = memory.sample(16)
    assert np.array_equal(batch["following"][:, 0], batch["actions"] + 1.0)
    with pytest.raises(ValueError, match="following"):
        memory.add(np.zeros((1, 1)), [0], [0.0], [1.0], np.zeros((1, 1)))
    assert "following" not in replay.PrioritizedReplay(4, (1,), np.float32).fields


def test_a_replay_too_large_for_the_memory_is_a_usage_error_naming_a_capacity_that_fits():
    from constants import UsageError

    # two 64x64x12 byte observations a transition: 98,304 bytes; 1 GiB holds 10,922 of them
    replay.check_fits(10_922, (64, 64, 12), np.uint8, 2, memory=2 ** 30)
    with pytest.raises(UsageError, match=r"10,923 transitions of 64x64x12 .* 1.0 GiB: --set replay_capacity=5461 "):
        replay.check_fits(10_923, (64, 64, 12), np.uint8, 2, memory=2 ** 30)
    with pytest.raises(UsageError, match="replay_capacity=3640 "):  # a third copy for the curiosity bonus
        replay.check_fits(10_922, (64, 64, 12), np.uint8, 3, memory=2 ** 30)
