"""Replay for the value-based learners: n-step transitions, a sum tree, and proportional prioritized replay.

Pure numpy, no TensorFlow: the actors build transitions with `NStepBuffer`, the learner keeps them in a
`PrioritizedReplay` (Schaul et al. 2016, proportional variant) and samples batches from it.

    transition: (observation, action, n-step return, discount, next observation)
    target:     return + discount * Q_target(next observation, argmax_a Q(next observation, a))
    discount:   gamma^m after m <= n steps, 0 when the episode terminated within them

Why not a library: cpprb, the fast C++ replay, has wheels for Python 3.11 and 3.12 but none for 3.13 (its 11.0.0,
checked with pip download --only-binary), where every install would compile it; dm-reverb has no release for
current TensorFlow or Python 3.12+. The tree below is vectorised: a batch of updates or of searches is a few numpy
operations per level of the tree, not a Python loop per item.
"""
import collections
import os
import queue
import threading

import numpy as np

from constants import UsageError


class SumTree:
    """Non-negative priorities of `capacity` slots in a complete tree of `fanout` children per node, whose every node
    holds the sum of its children: a total in O(1), a batch of updates and a batch of prefix-sum searches in
    O(batch x fanout x log_fanout capacity). `levels[0]` is the root, `levels[-1]` the leaves (padded with zeros).

    Why 16 children and not 2: with 1M slots a binary tree is 20 levels of scattered reads per search and per
    update, each read a cache miss once TensorFlow has trained on a batch; 16 children make it 5 levels, each read
    a contiguous row of 16 sums (benchmarks/replay_speed.py measures the learner with both,
    docs/history/2026-11-25-dqn.md)."""

    def __init__(self, capacity, fanout=16):
        if capacity < 1:
            raise ValueError(f"a sum tree needs a capacity of at least 1, got {capacity}")
        if fanout < 2:
            raise ValueError(f"a tree needs at least 2 children per node, got {fanout}")
        self.capacity, self.fanout = capacity, fanout
        self.depth = 0
        while fanout ** self.depth < capacity:
            self.depth += 1
        self.levels = [np.zeros(fanout ** level, np.float64) for level in range(self.depth + 1)]
        # children [B, fanout] @ this = their running sums: a small matrix product, several times as fast as
        # numpy's cumsum along rows of 16 (benchmarks/replay_speed.py)
        self.running_sum = np.triu(np.ones((fanout, fanout)))

    @property
    def total(self):
        return float(self.levels[0][0])

    def get(self, slots):
        return self.levels[-1][np.asarray(slots)]

    def update(self, slots, priorities):
        """Set the priorities of `slots`; where a slot comes twice, its last priority holds."""
        slots, priorities = np.asarray(slots, np.int64).ravel(), np.asarray(priorities, np.float64).ravel()
        if len(slots) != len(priorities):
            raise ValueError(f"{len(slots)} slots and {len(priorities)} priorities")
        if len(slots) == 0:
            return
        if slots.min() < 0 or slots.max() >= self.capacity:
            raise IndexError(f"slots must lie in [0, {self.capacity}), got {slots.min()}..{slots.max()}")
        if not np.all(np.isfinite(priorities)) or priorities.min() < 0:
            raise ValueError("priorities must be finite and >= 0")
        # a stable sort keeps a repeated slot's priorities in order: its last is the one before the next slot
        order = np.argsort(slots, kind="stable")
        slots, priorities = slots[order], priorities[order]
        last = np.append(slots[1:] != slots[:-1], True)
        nodes = slots[last]
        self.levels[-1][nodes] = priorities[last]
        for level in range(self.depth - 1, -1, -1):  # sorted nodes stay sorted when divided: repeats are neighbours
            nodes = nodes // self.fanout
            nodes = nodes[np.append(True, nodes[1:] != nodes[:-1])]
            # each parent summed again from its children, so no rounding error builds up over updates
            children = np.take(self.levels[level + 1].reshape(-1, self.fanout), nodes, axis=0)  # [n, fanout]
            self.levels[level][nodes] = children @ self.running_sum[:, -1]  # their sums, as in find

    def find(self, targets):
        """For each target in [0, total), the slot whose range of the prefix sums holds it: slot i is found with
        probability priority_i / total when targets are uniform on [0, total). Never a slot of priority 0."""
        targets = np.array(targets, np.float64)
        nodes = np.zeros(len(targets), np.int64)
        rows = np.arange(len(targets)) * self.fanout  # each row's first element, in the [B, fanout] arrays flat
        for level in range(1, self.depth + 1):
            children = np.take(self.levels[level].reshape(-1, self.fanout), nodes, axis=0)  # [B, fanout]
            sums = children @ self.running_sum  # [B, fanout]
            past = sums > targets[:, None]
            chosen = np.argmax(past, axis=1)  # the first child whose running sum passes the target
            over = np.flatnonzero(~np.take(past, rows + chosen))
            if len(over):  # float rounding left a target at or past the last sum: the last child with a priority
                chosen[over] = self.fanout - 1 - np.argmax(children[over, ::-1] > 0, axis=1)
            flat = rows + chosen
            targets = targets - (np.take(sums, flat) - np.take(children, flat))
            nodes = nodes * self.fanout + chosen
        return nodes


def beta_at(step, total_steps, start=0.4, end=1.0):
    """The importance-sampling exponent, annealed linearly from `start` to `end` over `total_steps` (Schaul et al.
    2016, section 3.4: the correction matters most at the end of learning)."""
    fraction = min(max(step / max(total_steps, 1), 0.0), 1.0)
    return start + fraction * (end - start)


def physical_memory():
    """This machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_fits(capacity, observation_shape, observation_dtype, copies, memory=None):
    """UsageError where `copies` arrays of `capacity` observations would not fit in the machine's memory (numpy
    would fail with a stack trace, or the kernel kill the process once the pages fill), naming the capacity that
    would fit in half of it."""
    per_transition = copies * int(np.prod(observation_shape)) * np.dtype(observation_dtype).itemsize
    memory = physical_memory() if memory is None else memory
    if capacity * per_transition > memory:
        raise UsageError(f"a replay of {capacity:,} transitions of {'x'.join(map(str, observation_shape))} "
                         f"observations needs {capacity * per_transition / 2 ** 30:.1f} GiB and this machine has "
                         f"{memory / 2 ** 30:.1f} GiB: --set replay_capacity={memory // 2 // per_transition} or less")


class PrioritizedReplay:
    """A FIFO memory of `capacity` transitions, sampled in proportion to priority^alpha (`uniform`: uniformly, with
    no tree at all, the baseline that prioritization is measured against). New transitions get the largest priority
    seen so far, so each is replayed at least once soon; priorities come from the learner's TD errors."""

    def __init__(self, capacity, observation_shape, observation_dtype=np.uint8, alpha=0.6, epsilon=1e-6,
                 uniform=False, seed=0, fanout=16, one_step=False, action_shape=(), action_dtype=np.int64):
        """`one_step`: keep each transition's s_t+1 too (`following`), for a curiosity bonus to train on;
        `action_shape`, `action_dtype`: one int per action by default, a float vector for continuous actions."""
        if capacity < 1:
            raise ValueError(f"a replay needs a capacity of at least 1, got {capacity}")
        check_fits(capacity, observation_shape, observation_dtype, 3 if one_step else 2)
        self.capacity, self.alpha, self.epsilon, self.uniform = capacity, alpha, epsilon, uniform
        self.observations = np.zeros((capacity, *observation_shape), observation_dtype)
        self.next_observations = np.zeros((capacity, *observation_shape), observation_dtype)
        self.following = np.zeros((capacity, *observation_shape), observation_dtype) if one_step else None
        self.fields = ("observations", "actions", "returns", "discounts", "next_observations") + (
            ("following",) if one_step else ())
        self.actions = np.zeros((capacity, *action_shape), action_dtype)
        self.returns = np.zeros(capacity, np.float32)
        self.discounts = np.zeros(capacity, np.float32)
        self.tree = None if uniform else SumTree(capacity, fanout)
        self.max_priority = 1.0
        self.size = 0
        self.cursor = 0  # the slot the next transition goes to
        self.inserted = 0  # transitions ever added
        self.sampled = 0  # transitions ever sampled
        self.rng = np.random.default_rng(seed)
        # adds, draws and new priorities may come from two threads (a PrefetchingSampler's and the learner's)
        self.lock = threading.Lock()

    def __len__(self):
        return self.size

    def add(self, observations, actions, returns, discounts, next_observations, priorities=None, following=None):
        """Append a batch (the oldest transitions make room); `priorities`: the actors' |TD errors|, or None for
        the largest priority seen so far; `following`: their s_t+1, kept with `one_step`. The slots written."""
        with self.lock:
            return self._add(observations, actions, returns, discounts, next_observations, priorities, following)

    def _add(self, observations, actions, returns, discounts, next_observations, priorities, following):
        count = len(actions)
        if count > self.capacity:
            raise ValueError(f"a batch of {count} transitions does not fit a replay of {self.capacity}")
        slots = (self.cursor + np.arange(count)) % self.capacity
        self.observations[slots] = observations
        self.next_observations[slots] = next_observations
        self.actions[slots] = actions
        self.returns[slots] = returns
        self.discounts[slots] = discounts
        if self.following is not None:
            if following is None:
                raise ValueError("this replay keeps s_t+1 (one_step): give `following`")
            self.following[slots] = following
        if self.tree is not None:
            if priorities is None:
                scaled = np.full(count, self.max_priority ** self.alpha)
            else:
                raw = np.abs(np.asarray(priorities, np.float64)) + self.epsilon
                self.max_priority = max(self.max_priority, float(raw.max(initial=0.0)))
                scaled = raw ** self.alpha
            self.tree.update(slots, scaled)
        self.cursor = int((self.cursor + count) % self.capacity)
        self.size = min(self.size + count, self.capacity)
        self.inserted += count
        return slots

    def sample(self, batch_size, beta=0.4):
        """(slots, batch {field: array}, importance weights): stratified over the total priority (one draw per
        equal segment, as Schaul et al.'s implementation), weights (N P(i))^-beta divided by the batch's largest."""
        with self.lock:
            return self._sample(batch_size, beta)

    def _sample(self, batch_size, beta):
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay")
        if self.tree is None:
            slots = self.rng.integers(0, self.size, batch_size)
            weights = np.ones(batch_size, np.float32)
        else:
            total = self.tree.total
            segment = total / batch_size
            targets = (np.arange(batch_size) + self.rng.random(batch_size)) * segment
            slots = self.tree.find(np.minimum(targets, np.nextafter(total, 0)))
            probabilities = self.tree.get(slots) / total
            weights = (self.size * probabilities) ** -beta
            weights = (weights / weights.max()).astype(np.float32)
        self.sampled += batch_size
        return slots, {field: getattr(self, field)[slots] for field in self.fields}, weights

    def update_priorities(self, slots, errors):
        """New priorities from the learner's TD errors of the sampled `slots`."""
        if self.tree is None:
            return
        raw = np.abs(np.asarray(errors, np.float64)) + self.epsilon
        with self.lock:
            self.max_priority = max(self.max_priority, float(raw.max(initial=0.0)))
            self.tree.update(slots, raw ** self.alpha)

    def probabilities(self):
        """Each stored slot's chance to be drawn at one draw (for tests and the status view)."""
        if self.tree is None:
            return np.full(self.size, 1.0 / self.size)
        return self.tree.get(np.arange(self.size)) / self.tree.total


class PrefetchingSampler:
    """A replay's `sample` and `update_priorities` for the learner, done in a thread of their own: while the learner
    trains on one batch (TensorFlow releases the GIL), the thread applies the last batch's new priorities and draws
    the next, so the sum tree's work hides behind the train step. Each batch is therefore drawn before the
    priorities of the batch just before it are known: one update stale, as Ape-X's learner, which prefetches its
    batches and updates priorities asynchronously (Horgan et al. 2018, section 3). Uniform replay goes through the
    same thread, so the two are timed alike. Adds go through `add`, which waits for the thread's jobs first, so
    that each draw sees the same replay whatever the threads' timing: a run is as reproducible as without it."""

    WAIT_SECS = 60.0  # a draw takes milliseconds; a thread silent this long is stuck

    def __init__(self, memory):
        self.memory = memory
        self.jobs = queue.Queue()  # ("draw", batch_size, beta) or ("priorities", slots, errors), in order
        self.batches = queue.Queue()  # the drawn batches, or the exception that stopped the thread
        self.pending = False  # a draw has been asked for and not taken
        self.failed = False
        self.thread = threading.Thread(target=self._serve, name="replay-sampler", daemon=True)
        self.thread.start()

    def __len__(self):
        return len(self.memory)

    def _serve(self):
        while True:
            job = self.jobs.get()
            try:
                if job is None:
                    return
                if job[0] == "draw":
                    self.batches.put(self.memory.sample(job[1], job[2]))
                else:
                    self.memory.update_priorities(job[1], job[2])
            except Exception as error:  # handed to the learner, which raises it: the thread never dies silently
                self.batches.put(error)
                self.failed = True
                return
            finally:
                self.jobs.task_done()

    def sample(self, batch_size, beta=0.4):
        """The batch drawn meanwhile (the first: drawn now), as PrioritizedReplay.sample; the next is asked for."""
        if not self.pending:
            self.jobs.put(("draw", batch_size, beta))
        try:
            drawn = self.batches.get(timeout=self.WAIT_SECS)
        except queue.Empty:
            raise RuntimeError(f"the replay's sampler thread drew no batch in {self.WAIT_SECS:.0f} s") from None
        if isinstance(drawn, Exception):
            raise RuntimeError(f"the replay's sampler thread failed: {drawn!r}") from drawn
        self.jobs.put(("draw", batch_size, beta))
        self.pending = True
        return drawn

    def update_priorities(self, slots, errors):
        self.jobs.put(("priorities", slots, errors))

    def add(self, *transitions, **columns):
        """PrioritizedReplay.add, once the draw and the priorities asked for are done."""
        if not self.failed:
            self.jobs.join()
        return self.memory.add(*transitions, **columns)

    def close(self):
        """Stop the thread after the jobs asked for (a batch drawn and not taken is dropped)."""
        self.jobs.put(None)
        self.thread.join(timeout=self.WAIT_SECS)


# `following`: the observation one step on, s_t+1, which a curiosity bonus trains on beside the n-step transition
Transition = collections.namedtuple("Transition", "observation action n_step_return discount next_observation "
                                                  "following")


class NStepBuffer:
    """One environment's last n steps, turned into n-step transitions as they complete.

    Each step adds (observation, action, reward); once n steps are held the oldest leaves as a transition with the
    discounted sum of the n rewards and the observation n steps on. At an episode's end every held step leaves:
    after termination with discount 0 (no bootstrap), after a time-limit truncation with gamma^m on the last
    observation (the episode could have gone on: Pardo et al. 2018)."""

    def __init__(self, n, gamma):
        if n < 1:
            raise ValueError(f"n-step returns need n >= 1, got {n}")
        self.n, self.gamma = n, gamma
        self.steps = collections.deque()

    def add(self, observation, action, reward, next_observation, terminated=False, truncated=False):
        """The transitions this step completes (none, one, or all that were held at an episode's end)."""
        self.steps.append((observation, action, float(reward), next_observation))
        done = terminated or truncated
        if len(self.steps) < self.n and not done:
            return []
        out = []
        while self.steps and (len(self.steps) >= self.n or done):
            out.append(self._transition(next_observation, terminated))
            self.steps.popleft()
        return out

    def _transition(self, next_observation, terminated):
        observation, action, _, following = self.steps[0]
        rewards = [reward for _, _, reward, _ in self.steps]
        n_step_return = sum(self.gamma ** k * reward for k, reward in enumerate(rewards))
        discount = 0.0 if terminated else self.gamma ** len(rewards)
        return Transition(observation, action, n_step_return, discount, next_observation, following)

    def clear(self):
        self.steps.clear()


def apex_epsilons(actors, base=0.4, alpha=7.0):
    """Ape-X's exploration per actor (Horgan et al. 2018): epsilon_i = base^(1 + alpha i / (N - 1)), from 0.4 for
    actor 0 down to 0.4^8 (about 0.00066) for the last; one actor gets `base`."""
    if actors == 1:
        return [base]
    return [base ** (1 + alpha * i / (actors - 1)) for i in range(actors)]


# ---------------------------------------------------------------- observations as the replay stores them

def stored_dtype(observation_space):
    """Images go into the replay as uint8 (a quarter of float32's memory) and are scaled back in the graph; vectors
    as float32."""
    return np.uint8 if len(observation_space.shape) >= 2 else np.float32


def to_stored(observations, dtype):
    observations = np.asarray(observations, np.float32)
    return np.round(observations * 255.0).astype(np.uint8) if dtype == np.uint8 else observations


def from_stored(observations, dtype):
    """Stored observations as the float32 the environment gave (to 1/255 for images)."""
    observations = np.asarray(observations)
    return observations.astype(np.float32) / 255.0 if dtype == np.uint8 else observations.astype(np.float32)


def env_action(action):
    """An action as the environment takes it: a Python int for a discrete space, the vector for a continuous one."""
    return int(action) if np.ndim(action) == 0 else np.asarray(action, np.float32)
