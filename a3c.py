"""Rollouts and learning.

Data path: `env.step` -> `env_runner` (policy acts, curiosity bonus) -> `PartialRollout` -> queue -> `A3C.process`
(advantages, sync global -> local, apply gradients to the global variables on the parameter server).
Only the trainer thread runs train ops; the runner thread only acts.
"""
import collections
import concurrent.futures
import contextlib
import csv
import logging
import os
import queue
import threading
import time

import numpy as np
import scipy.signal
import tensorflow as tf

from constants import CURIOSITY_CHOICES
import curiosity
import logdir
from envs import GAME_METRICS, GameRecord
from model import LSTMPolicy

tf1 = tf.compat.v1
logger = logging.getLogger(__name__)

ROLLOUT_WAIT_SECS = 600.0  # the trainer gives up when the runner delivers nothing for this long
QUEUE_POLL_SECS = 1.0  # how often blocked queue operations look for a stop request or a dead thread
ABORT_RETRIES = 10  # retries of a session.run that TF aborted as a duplicate RunGraph request
ERROR_MESSAGE_KEPT = 2048  # characters kept at each end of a TensorFlow error message (bound_error_messages)
NONFINITE_UPDATES_LIMIT = 100  # skipped (NaN/inf) updates in a row after which the worker stops


# ---------------------------------------------------------------- numpy: returns and advantages

def discount(x, gamma):
    """y[t] = x[t] + gamma * y[t + 1], computed right to left."""
    x = np.asarray(x, np.float64)
    return scipy.signal.lfilter([1.0], [1.0, -gamma], x[::-1], axis=0)[::-1]


Batch = collections.namedtuple("Batch", [
    "observations",  # [T, *obs]: s_0 .. s_T-1, a view of `frames`
    "actions", "advantages", "returns",  # [T]
    "returns_int",  # [T] the bonus's own returns on the two-stream path, else None
    "features",  # the LSTM state at the rollout's start
    "frames",  # [T + 1, *obs]: s_0 .. s_T, every frame of the rollout copied once
])

# The bonus as a stream of its own (Config.two_streams): its discount, the weights of the two advantages in
# their sum, and whether its return ends with the episode.
IntrinsicStream = collections.namedtuple("IntrinsicStream", ["gamma", "ext_coef", "int_coef", "episodic"])


def returns_and_advantages(rewards, values, bootstrap, gamma, gae_lambda):
    """Discounted returns and GAE advantages of T rewards, the values V(s_0..s_T-1) and V(s_T) = `bootstrap`.

    returns[t] = sum_k gamma^k r[t+k] + gamma^(T-t) V(s_T)                         (A3C, Mnih et al. 2016)
    advantages[t] = sum_k (gamma * lambda)^k delta[t+k], delta[t] = r[t] + gamma V(s[t+1]) - V(s[t])
                                                                        (GAE, Schulman et al. 2016, eq. 16)
    """
    values = np.append(np.asarray(values, np.float64), bootstrap)
    returns = discount(np.append(rewards, bootstrap), gamma)[:-1]
    deltas = rewards + gamma * values[1:] - values[:-1]
    return returns, discount(deltas, gamma * gae_lambda)


def process_rollout(rollout, gamma, gae_lambda=1.0, reward_clip=None, reward_scale=1.0, intrinsic=None):
    """Returns and advantages of a rollout, bootstrapped from V(last state) unless terminal.

    One stream (the original): the reward of a step is the (scaled) extrinsic reward plus the curiosity bonus;
    with `reward_clip` the extrinsic reward and then the sum are clipped to [-reward_clip, reward_clip].
    Two streams (`intrinsic`, an IntrinsicStream): the extrinsic reward, clipped alone, and the bonus have a
    return and a value head each; the bonus's return has its own gamma and, unless episodic, goes on across the
    episode's end (bootstrapped from V_int of the next episode's first state, as RND's non-episodic return);
    advantages = ext_coef x A_ext + int_coef x A_int (Burda et al. 2018).
    """
    rewards = np.asarray(rollout.rewards, np.float64) * reward_scale
    if reward_clip is not None:
        rewards = np.clip(rewards, -reward_clip, reward_clip)
    if rollout.bonuses and intrinsic is None:
        rewards = rewards + np.asarray(rollout.bonuses, np.float64)
        if reward_clip is not None:
            rewards = np.clip(rewards, -reward_clip, reward_clip)
    bootstrap = 0.0 if rollout.terminal else float(rollout.bootstrap_value)
    returns, advantages = returns_and_advantages(rewards, rollout.values, bootstrap, gamma, gae_lambda)
    returns_int = None
    if intrinsic is not None:
        if intrinsic.episodic:
            bootstrap_int = 0.0 if rollout.terminal else rollout.bootstrap_value_int
        else:
            bootstrap_int = rollout.next_episode_value_int if rollout.episode_end else rollout.bootstrap_value_int
        bonuses = np.asarray(rollout.bonuses, np.float64) if rollout.bonuses else np.zeros(len(rollout))
        returns_int, advantages_int = returns_and_advantages(bonuses, rollout.values_int, float(bootstrap_int),
                                                             intrinsic.gamma, gae_lambda)
        advantages = intrinsic.ext_coef * advantages + intrinsic.int_coef * advantages_int
        returns_int = returns_int.astype(np.float32)
    frames = np.asarray(rollout.observations + [rollout.last_observation], np.float32)
    return Batch(observations=frames[:-1],
                 actions=np.asarray(rollout.actions, np.int32),
                 advantages=advantages.astype(np.float32),
                 returns=returns.astype(np.float32),
                 returns_int=returns_int,
                 features=rollout.features,
                 frames=frames)


SequenceBatch = collections.namedtuple("SequenceBatch", [
    "observations",  # [B, T, *obs], each sequence padded with zeros to the longest
    "lengths",  # [B]
    "features",  # LSTMState of [B, lstm]: each sequence's state at its start
    "actions", "advantages", "returns",  # [N]: the N = sum(lengths) steps, sequence after sequence
    "returns_int",  # [N] on the two-stream path, else None
    "sequences",  # per sequence, its frames s_0 .. s_T: what the curiosity predictor is fed
])


def stack_batches(batches):
    """Several rollouts' Batches as one update: padded sequences for the LSTM, the steps concatenated."""
    lengths = np.array([len(batch.actions) for batch in batches], np.int32)
    first, first_int = batches[0].observations, batches[0].returns_int
    if len(batches) == 1:
        observations = first[None]
    else:
        observations = np.zeros((len(batches), lengths.max(), *first.shape[1:]), np.float32)
        for row, batch in enumerate(batches):
            observations[row, :len(batch.actions)] = batch.observations
    features = type(batches[0].features)(*(np.concatenate(parts) for parts in zip(*(b.features for b in batches))))
    returns_int = None if first_int is None else np.concatenate([batch.returns_int for batch in batches])
    return SequenceBatch(observations, lengths, features,
                         *(np.concatenate([getattr(batch, name) for batch in batches])
                           for name in ("actions", "advantages", "returns")),
                         returns_int, [batch.frames for batch in batches])


class PartialRollout:
    """Consecutive steps of one episode, with the LSTM state at their start (`features`).

    `terminal`: the episode ended by termination (no bootstrap). `episode_end`: the episode ended in any way,
    termination or time-limit truncation; rollouts are never joined across it.
    """

    def __init__(self, features):
        self.observations = []
        self.actions = []
        self.rewards = []
        self.values = []
        self.values_int = []  # V_int per step, on the two-stream path
        self.bonuses = []  # curiosity bonus per step; empty without curiosity
        self.bonus_data = []  # per step, what the bonus's scaler keeps for its statistics' update (RND's returns)
        self.last_observation = None  # s_T: the observation after the last step
        self.bootstrap_value = 0.0
        self.bootstrap_value_int = 0.0  # V_int(s_T)
        self.next_episode_value_int = 0.0  # V_int of the next episode's first state, after an episode end
        self.terminal = False
        self.episode_end = False
        self.features = features

    def add(self, observation, action, reward, value, value_int=None):
        self.observations.append(observation)
        self.actions.append(action)
        self.rewards.append(reward)
        self.values.append(value)
        if value_int is not None:
            self.values_int.append(value_int)

    def extend(self, other):
        """Append the rollout that followed this one in the same episode."""
        if self.episode_end:
            raise ValueError("cannot extend a rollout past the end of its episode")
        self.observations.extend(other.observations)
        self.actions.extend(other.actions)
        self.rewards.extend(other.rewards)
        self.values.extend(other.values)
        self.values_int.extend(other.values_int)
        self.bonuses.extend(other.bonuses)
        self.bonus_data.extend(other.bonus_data)
        self.last_observation = other.last_observation
        self.bootstrap_value = other.bootstrap_value
        self.bootstrap_value_int = other.bootstrap_value_int
        self.next_episode_value_int = other.next_episode_value_int
        self.terminal = other.terminal
        self.episode_end = other.episode_end

    def next_observations(self):
        """s_1 .. s_T, the observation each step led to."""
        return self.observations[1:] + [self.last_observation]

    def __len__(self):
        return len(self.rewards)


# ---------------------------------------------------------------- acting

class Timings:
    """Seconds a worker spent in each phase of its two threads, summed since start; the heartbeat publishes them
    and `benchmarks/throughput.py --profile` turns them into time per environment step."""

    RUNNER = ("env", "act", "act_and_bonus", "queue_put")  # env.step/reset; session.run to act (with the bonus)
    TRAINER = ("queue_get", "advantages", "sync", "train")  # train: gradients and apply, one session.run

    def __init__(self):
        self.seconds = dict.fromkeys(self.RUNNER + self.TRAINER, 0.0)  # each key written by one thread only

    @contextlib.contextmanager
    def phase(self, name):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def snapshot(self):
        return {name: round(value, 3) for name, value in self.seconds.items()}


def bound_error_messages():
    """Cut TensorFlow's error messages to their two ends before `Session.run` parses them.

    This is why workers hung. The distributed runtime's duplicate-RunGraph `AbortedError` carries the whole
    request, feeds included, as text (tens of kB for one act call, megabytes for an update), and `Session.run`
    scans every error message with a regular expression whose time grows with the square of its length
    (`error_interpolation.parse_message`: 22 s for 80 kB here), holding the GIL, so every thread of the worker
    stops. Seen with stack dumps of hung Doom workers on 16 cores: the runner thread inside `parse_message`, the
    trainer waiting in its `session.run`. The node tag that interpolation looks for ends a message, so both ends
    are kept. TensorFlow offers no setting for this, hence the patch of its module function.
    """
    from tensorflow.python.framework import error_interpolation
    original = error_interpolation.interpolate_graph
    if getattr(original, "bounded", False):
        return

    def interpolate_graph(message, graph):
        if len(message) > 2 * ERROR_MESSAGE_KEPT:
            message = (f"{message[:ERROR_MESSAGE_KEPT]} ... [{len(message) - 2 * ERROR_MESSAGE_KEPT} characters "
                       f"cut] ... {message[-ERROR_MESSAGE_KEPT:]}")
        return original(message, graph)

    interpolate_graph.bounded = True
    error_interpolation.interpolate_graph = interpolate_graph


bound_error_messages()


def abort_reason(message):
    """The line of an AbortedError's message that says why (the first is only "Graph execution error:")."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    why = next((line for line in lines if "twice" in line or "Aborted" in line), lines[0] if lines else "")
    return why[:200]


class AbortRetrySession:
    """Wraps a session so that `run` retries TF's spurious duplicate-RunGraph AbortedError.

    Under load the distributed runtime intermittently raises `AbortedError: The same RunGraph (Worker) request
    was received twice` while two threads share a session; the request did not run, so running it again is safe.
    """

    def __init__(self, session, retries=ABORT_RETRIES):
        self.session = session
        self.retries = retries
        self.aborts = 0

    def run(self, fetches, feed_dict=None):
        for attempt in range(self.retries + 1):
            try:
                return self.session.run(fetches, feed_dict)
            except (tf.errors.OpError, ValueError) as raised:
                error = described_error(raised)
                if not isinstance(error, tf.errors.AbortedError) or attempt == self.retries:
                    raise error from None
                self.aborts += 1
                logger.warning("session.run aborted (%s); retrying", abort_reason(error.message))


def described_error(raised):
    """The OpError that `Session.run` failed on, also where it failed while describing it.

    Before it raises an OpError, `Session.run` takes the first `[[name` of the message for a node of the graph,
    and a name with a colon makes it raise a ValueError instead. The duplicate-RunGraph abort quotes the request's
    tensors as text, which now and then holds `[[...:`: on 16 cores a Doom worker died of that `ValueError: Name
    '<binary>' appears to refer to a Tensor` instead of retrying its abort.
    """
    if isinstance(raised, ValueError) and isinstance(raised.__context__, tf.errors.OpError):
        return raised.__context__
    return raised


EpisodeStats = collections.namedtuple("EpisodeStats", ["reward", "length", "seconds", "env_reward", "truncated",
                                                       "bonus", "game", "visits"])


class EpisodeTally:
    """Running sums of the episode being played, and the game's own metrics (GAME_METRICS)."""

    def __init__(self):
        self.reward = self.env_reward = self.bonus = 0.0
        self.length = 0
        self.start = time.time()
        self.game = GameRecord()

    def observe(self, info):
        self.game.observe(info, self.length)

    def stats(self, truncated):
        return EpisodeStats(self.reward, self.length, time.time() - self.start, self.env_reward, truncated,
                            self.bonus, dict(self.game.metrics), list(self.game.visits))


def state_row(state, index):
    """A copy of environment `index`'s row of a batched LSTM state: its [1, lstm] state."""
    return type(state)(*(part[index:index + 1].copy() for part in state))


def reset_state_row(state, index, initial):
    """Environment `index`'s row of the batched state set to the [1, lstm] `initial` one (a new episode)."""
    for part, start in zip(state, initial):
        part[index] = start[0]


def step_and_reset(env, action):
    """env.step(action), and env.reset() when the episode ended: the step's five results and the next episode's
    first observation (None while the episode goes on)."""
    next_observation, reward, terminated, truncated, info = env.step(action)
    first_observation = env.reset()[0] if terminated or truncated else None
    return next_observation, reward, terminated, truncated, info, first_observation


@contextlib.contextmanager
def env_stepper(count, threads):
    """The `map` env_runner steps its `count` environments with: the builtin, one after another, or with
    `threads` a thread pool's, side by side (for games whose engines run outside the GIL: see
    envs.steps_in_threads). A plain pool, not gymnasium's vector environments: those reset by themselves, giving
    no per-environment rollout boundaries, and their asynchronous form copies every frame between processes."""
    if not threads or count == 1:
        yield map
        return
    with concurrent.futures.ThreadPoolExecutor(count, "env") as pool:
        yield pool.map


def env_runner(envs, policy, session, rollout_len, on_episode_end, bonus=None, scaler=None, timings=None,
               step_all=map):
    """Play the environments `envs` with the local `policy` forever, all of them in lockstep, and yield
    batches: lists of PartialRollouts, each environment's rollouts in order.

    One session.run per step acts for every environment at once (policy batch K = len(envs), LSTM state
    [K, lstm]). An environment's rollout ends after `rollout_len` steps or with its episode, exactly as with one
    environment; a batch is yielded once every environment has ended at least one rollout since the last batch,
    so that with one environment each rollout is its own batch (the original algorithm) and with K the batch is
    [K, rollout_len] unless an episode ended. The act call after a rollout's cut also gives its bootstrap value
    V(s_T); the act call after a batch is complete also gives, with a curiosity `bonus`, the raw bonus of every
    step in it, which its `scaler` (curiosity.py) turns into rewards. With a policy of two value heads, the act
    call after an episode's end also gives V_int of the next episode's first state. Only a time-limit
    truncation costs one more call, for V of the truncated state.
    `step_all(step_and_reset, envs, actions)` steps the environments (see env_stepper); their results are taken
    in order, so the data do not depend on how they were stepped.
    """
    timings = timings or Timings()
    count = len(envs)
    observations = [env.reset()[0] for env in envs]
    initial = policy.initial_state(1)
    state = policy.initial_state(count)
    rollouts = [PartialRollout(state_row(state, k)) for k in range(count)]
    tallies = [EpisodeTally() for _ in range(count)]
    finished = []  # (rollout, index, tally) ended since the last batch, in order
    awaiting_value = []  # (rollout, index) cut at the last step: their V(s_T) comes with the next act call
    awaiting_next_episode = []  # (rollout, index) that ended an episode: V_int of the next one's first state
    two_streams = policy.value_int is not None
    while True:
        batch_complete = len({index for _, index, _ in finished}) == count
        fetches, feed = [policy.value_int] if two_streams else [], None
        bonus_now = batch_complete and bonus is not None
        if bonus_now:
            fetches += [bonus.bonus_per_step, *scaler.fetches]
            feed = bonus.feed_sequences([rollout.observations + [rollout.last_observation]
                                         for rollout, _, _ in finished],
                                        [action for rollout, _, _ in finished for action in rollout.actions])
        with timings.phase("act_and_bonus" if bonus_now else "act"):
            actions, values, state, fetched = policy.act_and_fetch(session, observations, state, fetches, feed)
        values_int = fetched.pop(0) if two_streams else None
        for rollout, index in awaiting_value:
            rollout.bootstrap_value = float(values[index])
            if two_streams:
                rollout.bootstrap_value_int = float(values_int[index])
        for rollout, index in awaiting_next_episode:
            rollout.next_episode_value_int = float(values_int[index])
        awaiting_value, awaiting_next_episode = [], []
        if batch_complete:
            if bonus_now:
                scaler.assign(fetched[0], fetched[1:], [(rollout, index) for rollout, index, _ in finished])
            for rollout, _, tally in finished:
                tally.bonus += sum(rollout.bonuses)
                if rollout.episode_end:
                    on_episode_end(tally.stats(truncated=not rollout.terminal))
            yield [rollout for rollout, _, _ in finished]
            finished = []
        with timings.phase("env"):
            steps = list(step_all(step_and_reset, envs, [int(action) for action in actions]))
        for index, (next_observation, reward, terminated, truncated, info, first_observation) in enumerate(steps):
            rollout, tally, action = rollouts[index], tallies[index], int(actions[index])
            rollout.add(observations[index], action, reward, float(values[index]),
                        float(values_int[index]) if two_streams else None)
            tally.reward += reward
            tally.env_reward += info.get("env_reward", reward)
            tally.length += 1
            tally.observe(info)
            rollout.last_observation = observations[index] = next_observation
            if terminated or truncated:
                rollout.episode_end = True
                rollout.terminal = bool(terminated)
                if not terminated:
                    value, value_int = policy.value_of(session, [next_observation], state_row(state, index))
                    rollout.bootstrap_value = float(value[0])
                    if two_streams:
                        rollout.bootstrap_value_int = float(value_int[0])
                if two_streams:
                    awaiting_next_episode.append((rollout, index))
                observations[index] = first_observation
                reset_state_row(state, index, initial)
                tallies[index] = EpisodeTally()
            elif len(rollout) == rollout_len:
                awaiting_value.append((rollout, index))
            else:
                continue
            finished.append((rollout, index, tally))
            rollouts[index] = PartialRollout(state_row(state, index))


class RunnerThread(threading.Thread):
    """Plays the environments with the local policy and queues batches of rollouts for the trainer.

    A failure is kept in `error` for the trainer to re-raise; the thread never dies silently.
    """

    def __init__(self, envs, policy, rollout_len, queue_size, on_episode_end, bonus=None, scaler=None,
                 timings=None, env_threads=False):
        super().__init__(name="runner", daemon=True)
        self.envs = envs
        self.env_threads = env_threads
        self.timings = timings or Timings()
        self.policy = policy
        self.bonus = bonus
        self.scaler = scaler
        self.rollout_len = rollout_len
        self.on_episode_end = on_episode_end
        self.queue = queue.Queue(queue_size)
        self.session = None
        self.error = None
        self.stop_requested = threading.Event()

    def start_runner(self, session):
        self.session = session
        self.start()

    def stop(self):
        self.stop_requested.set()

    def run(self):
        try:
            with env_stepper(len(self.envs), self.env_threads) as step_all:
                batches = env_runner(self.envs, self.policy, self.session, self.rollout_len, self.on_episode_end,
                                     self.bonus, self.scaler, self.timings, step_all)
                for batch in batches:
                    with self.timings.phase("queue_put"):
                        if not self._put(batch):
                            return
        except Exception as error:  # handed to the trainer, which re-raises it
            if self.stop_requested.is_set():
                return  # the session closed under us during shutdown
            logger.exception("runner thread failed")
            self.error = error

    def _put(self, batch):
        while not self.stop_requested.is_set():
            try:
                self.queue.put(batch, timeout=QUEUE_POLL_SECS)
                return True
            except queue.Full:
                continue
        return False


class NonFiniteError(RuntimeError):
    """Updates keep coming out NaN or inf: skipping them does not help, so the worker stops."""


class RunnerError(RuntimeError):
    """The runner thread failed or went silent; the message says which."""


# ---------------------------------------------------------------- losses

Losses = collections.namedtuple("Losses", ["policy", "value", "entropy"])


def a3c_losses(logits, values, actions, advantages, returns):
    """Per-step means of the policy-gradient loss, the value loss and the policy entropy.

    policy = -mean(log pi(a_t|s_t) * A_t)      (A3C, Mnih et al. 2016, eq. for the actor)
    value  = 0.5 * mean((V(s_t) - R_t)^2)
    entropy = mean(-sum_a pi(a|s_t) log pi(a|s_t))
    """
    log_probs = tf.nn.log_softmax(logits)  # [N, A]
    chosen_log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=logits)  # [N]
    policy_loss = -tf.reduce_mean(chosen_log_probs * advantages)
    entropy = tf.reduce_mean(-tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=1))
    return Losses(policy_loss, value_loss(values, returns), entropy)


def value_loss(values, returns):
    """0.5 * mean((V(s_t) - R_t)^2): the value head's loss, of each stream's head on the two-stream path."""
    return 0.5 * tf.reduce_mean(tf.square(values - returns))


# ---------------------------------------------------------------- the trainer

class EpisodeLogger:
    """Writes each finished episode to TensorBoard (`global/episode_*`) and to `episodes_<task>.csv`."""

    COLUMNS = ["global_step", "wall_time", "worker", "reward", "length", "seconds", "env_reward", "truncated",
               "bonus", *GAME_METRICS]  # a game metric the environment does not report is left empty
    GAME_TAGS = {"success": "global/episode_success", "distance": "global/distance",
                 "position_x": "global/POSITION_X", "position_y": "global/POSITION_Y"}  # the original's tags

    def __init__(self, log_dir, task, summary_writer, global_step_fn):
        self.path = logdir.episodes_csv(log_dir, task)
        self.task = task
        self.summary_writer = summary_writer
        self.global_step_fn = global_step_fn
        logdir.cut_partial_line(self.path)
        logdir.keep_earlier_format(self.path, self.COLUMNS)
        is_new = not os.path.exists(self.path)
        self.file = open(self.path, "a", newline="")  # appended on resume: earlier episodes are kept
        self.writer = csv.writer(self.file)
        if is_new:
            self.writer.writerow(self.COLUMNS)
            self.file.flush()
        self.visits_path = logdir.visits_csv(log_dir, task)
        self.visits_file = None  # opened at the first episode with positions
        self.episodes = 0

    def __call__(self, stats):
        global_step = self.global_step_fn()
        self.episodes += 1
        self.writer.writerow([global_step, f"{time.time():.3f}", self.task, f"{stats.reward:.6g}", stats.length,
                              f"{stats.seconds:.3f}", f"{stats.env_reward:.6g}", int(stats.truncated),
                              f"{stats.bonus:.6g}", *(f"{stats.game[key]:.6g}" if key in stats.game else ""
                                                      for key in GAME_METRICS)])
        self.file.flush()
        if stats.visits:
            self._write_visits(global_step, stats.visits)
        if self.summary_writer is not None:
            summary = tf1.Summary()
            summary.value.add(tag="global/episode_reward", simple_value=stats.reward)
            summary.value.add(tag="global/episode_length", simple_value=stats.length)
            summary.value.add(tag="global/episode_time", simple_value=stats.seconds)
            summary.value.add(tag="global/episode_env_reward", simple_value=stats.env_reward)
            summary.value.add(tag="global/episode_bonus", simple_value=stats.bonus)
            for key, value in stats.game.items():
                summary.value.add(tag=self.GAME_TAGS[key], simple_value=value)
            self.summary_writer.add_summary(summary, global_step)
        logger.info("episode %d: reward %.3f, bonus %.4f, length %d, global step %d",
                    self.episodes, stats.reward, stats.bonus, stats.length, global_step)

    def _write_visits(self, global_step, visits):
        if self.visits_file is None:
            logdir.cut_partial_line(self.visits_path)
            is_new = not os.path.exists(self.visits_path)
            self.visits_file = open(self.visits_path, "a", newline="")
            if is_new:
                self.visits_file.write(logdir.VISITS_HEADER)
        self.visits_file.writelines(f"{global_step},{self.task},{self.episodes},{x:.1f},{y:.1f}\n" for x, y in visits)
        self.visits_file.flush()

    def close(self):
        self.file.close()
        if self.visits_file is not None:
            self.visits_file.close()


def build_networks(env, config, design_head=None, unsup="none"):
    """The policy and, with curiosity, its bonus (curiosity.py), in the current variable scope: (policy, bonus or
    None). The policy has a second value head when the bonus is a stream of its own (curiosity.two_streams).

    The trainer builds them twice (global/ and local/); playback builds global/ alone to restore a checkpoint.
    """
    observation_shape, num_actions = env.observation_space.shape, env.action_space.n
    policy = LSTMPolicy(observation_shape, num_actions, design_head, config.lstm_size,
                        curiosity.two_streams(unsup, config))
    if unsup == "none":
        return policy, None
    with tf1.variable_scope("predictor"):
        return policy, curiosity.build(unsup, observation_shape, num_actions, design_head)


def global_step_variable():
    return tf1.get_variable("global_step", [], tf.int64, tf1.zeros_initializer(), trainable=False)


class A3C:
    """Global policy on the parameter server, a local copy per worker, and the asynchronous update."""

    def __init__(self, env, task, config, design_head=None, env_wrap=False, unsup="none", global_device=None,
                 local_device=None, env_threads=False):
        if unsup not in CURIOSITY_CHOICES:
            raise ValueError(f"--unsup {unsup}: not one of {', '.join(CURIOSITY_CHOICES)}")
        self.envs = list(env) if isinstance(env, (list, tuple)) else [env]
        self.task = task
        self.config = config
        self.env_wrap = env_wrap
        self.env_threads = env_threads  # step the environments side by side (see env_stepper)
        def networks():
            return build_networks(self.envs[0], config, design_head, unsup)

        with tf1.device(global_device):
            with tf1.variable_scope("global"):
                self.network, self.predictor = networks()
                self.global_step = global_step_variable()

        with tf1.device(local_device):
            with tf1.variable_scope("local"):
                self.local_network, self.local_predictor = pi, predictor = networks()
            self.actions = tf1.placeholder(tf.int32, [None], name="actions")  # [N]
            self.advantages = tf1.placeholder(tf.float32, [None], name="advantages")  # [N]
            self.returns = tf1.placeholder(tf.float32, [None], name="returns")  # [N]
            self.losses = a3c_losses(pi.step_logits, pi.step_values, self.actions, self.advantages, self.returns)
            value_losses = self.losses.value
            self.intrinsic = None
            if pi.value_int is not None:
                self.intrinsic = IntrinsicStream(config.gamma_int, config.ext_coef, config.int_coef,
                                                 predictor.episodic)
                self.returns_int = tf1.placeholder(tf.float32, [None], name="returns_int")  # [N]
                self.value_int_loss = value_loss(pi.step_values_int, self.returns_int)
                value_losses += self.value_int_loss
            self.loss = (self.losses.policy + config.value_loss_wt * value_losses
                         - config.entropy_beta * self.losses.entropy)
            # The loss is a per-step mean; scaling it by the rollout length keeps the learning rate's meaning
            # independent of the batch size, as in the original.
            loss_scale = float(config.rollout_maxlen)
            grads = tf.gradients(self.loss * loss_scale, pi.var_list)
            if config.policy_no_backprop_steps > 0:  # the policy waits while the predictor warms up
                policy_on = tf.cast(self.global_step > config.policy_no_backprop_steps, tf.float32)
                grads = [policy_on * grad for grad in grads]
            grad_norm = tf.linalg.global_norm(grads)
            grads, _ = tf.clip_by_global_norm(grads, config.grad_norm_clip, use_norm=grad_norm)
            summaries = [
                tf1.summary.scalar("model/policy_loss", self.losses.policy),
                tf1.summary.scalar("model/value_loss", self.losses.value),
                tf1.summary.scalar("model/entropy", self.losses.entropy),
                tf1.summary.scalar("model/grad_global_norm", grad_norm),
                tf1.summary.scalar("model/var_global_norm", tf.linalg.global_norm(pi.var_list)),
            ]
            if self.intrinsic is not None:
                summaries += [
                    tf1.summary.scalar("model/value_int_loss", self.value_int_loss),
                    tf1.summary.scalar("model/value_int", tf.reduce_mean(pi.step_values_int)),
                    tf1.summary.scalar("model/return_int", tf.reduce_mean(self.returns_int)),
                    tf1.summary.scalar("model/value_ext", tf.reduce_mean(pi.step_values)),
                    tf1.summary.scalar("model/return_ext", tf.reduce_mean(self.returns)),
                ]
            local_vars, global_vars = list(pi.var_list), list(self.network.var_list)
            optimizer = tf1.train.AdamOptimizer(config.learning_rate, epsilon=config.adam_epsilon)
            updates = [(optimizer, grads, self.network.var_list)]
            grad_norms = [grad_norm]
            statistics = None  # the bonus's running statistics, updated with the gradients
            if predictor is not None:
                self.predictor_loss = predictor.training_loss(config)
                predictor_grads = tf.gradients(self.predictor_loss * loss_scale, predictor.var_list)
                predictor_grad_norm = tf.linalg.global_norm(predictor_grads)
                predictor_grads, _ = tf.clip_by_global_norm(predictor_grads, config.grad_norm_clip,
                                                            use_norm=predictor_grad_norm)
                # Its own Adam, for its own epsilon (constants: predictor_adam_epsilon); applied in the same step.
                predictor_optimizer = tf1.train.AdamOptimizer(config.learning_rate,
                                                              epsilon=config.predictor_adam_epsilon,
                                                              name="PredictorAdam")
                updates.append((predictor_optimizer, predictor_grads, self.predictor.var_list))
                grad_norms.append(predictor_grad_norm)
                local_vars += predictor.var_list + list(predictor.state_variables)
                global_vars += self.predictor.var_list + list(self.predictor.state_variables)
                statistics = self.predictor.update_statistics(predictor)
                summaries += [
                    tf1.summary.scalar("model/predloss", self.predictor_loss),
                    tf1.summary.scalar("model/predgrad_global_norm", predictor_grad_norm),
                    tf1.summary.scalar("model/predvar_global_norm", tf.linalg.global_norm(predictor.var_list)),
                ] + [tf1.summary.scalar(tag, tensor) for tag, tensor in predictor.summaries().items()]

            self.sync = tf.group(*[local.assign(glob) for local, glob in zip(local_vars, global_vars)])
            batch_size = tf.cast(tf.shape(self.actions)[0], tf.int64)
            self.next_global_step = self.global_step.assign_add(batch_size)
            # A NaN or inf anywhere in a loss or gradient shows in the global norm; such an update is skipped
            # whole (weights and Adam's moments untouched) and counted by process(). The steps still count.
            # Cost, measured (benchmarks/throughput.py --env-id doom --workers 2 --unsup action, 3 pairs): the
            # train phase went 2,400 -> 2,530 us per env step, alike as TF2's functional If or TF1's Switch/Merge.
            self.update_finite = tf.reduce_all(tf.math.is_finite(tf.stack(grad_norms)))
            apply = tf.cond(self.update_finite,
                            lambda: tf.group(*[optimizer.apply_gradients(zip(gradients, variables))
                                               for optimizer, gradients, variables in updates],
                                             *([statistics] if statistics is not None else [])),
                            tf.no_op)
            self.train_op = tf.group(apply, self.next_global_step)
            self.summary_op = tf1.summary.merge(summaries)

        self.runner = None
        self.summary_writer = None
        self.session = None
        self.last_global_step = 0
        self.updates = 0
        self.skipped_updates = 0  # updates whose loss or gradient was not finite (see update_finite)
        self.skipped_in_a_row = 0
        self.steps_trained = 0  # environment steps this worker has trained on
        self.timings = Timings()
        self._fps_start = None
        self._fps_steps = 0

    def start(self, session, summary_writer, on_episode_end):
        """Seed the bonus's statistics if it keeps any, sync the local copy and start the runner thread on
        `session`."""
        self.session = AbortRetrySession(session)
        self.summary_writer = summary_writer
        scaler = None
        if self.predictor is not None:
            self.predictor.warm_up(self.session, self.local_predictor, self.envs, self.config)
            scaler = self.local_predictor.scaler(self.config, len(self.envs))
        self.session.run(self.sync)
        self.last_global_step = int(self.session.run(self.global_step))
        self._fps_start = time.time()
        self.runner = RunnerThread(self.envs, self.local_network, self.config.rollout_maxlen,
                                   self.config.queue_size, on_episode_end, self.local_predictor, scaler,
                                   self.timings, self.env_threads)
        self.runner.start_runner(self.session)

    def stop(self):
        if self.runner is not None:
            self.runner.stop()
            self.runner.join(timeout=QUEUE_POLL_SECS * 5)

    def _next_batch(self):
        waited = 0.0
        while True:
            if self.runner.error is not None:
                raise RunnerError(f"runner thread failed: {type(self.runner.error).__name__}: "
                                  f"{self.runner.error}") from self.runner.error
            try:
                return self.runner.queue.get(timeout=QUEUE_POLL_SECS)
            except queue.Empty:
                waited += QUEUE_POLL_SECS
            if not self.runner.is_alive() and self.runner.error is None:
                raise RunnerError("runner thread stopped without producing a rollout")
            if waited >= ROLLOUT_WAIT_SECS:
                raise RunnerError(f"no rollout from the runner thread in {ROLLOUT_WAIT_SECS:.0f} s: "
                                  f"is the environment hung?")

    def pull_batch_from_queue(self):
        """The next batch of rollouts. With one environment, its rollout is extended with the queued ones that
        continue its episode, as in the original; a batch of K environments is already large."""
        rollouts = self._next_batch()
        if len(self.envs) == 1:
            rollout = rollouts[0]
            while not rollout.episode_end:
                try:
                    rollout.extend(self.runner.queue.get_nowait()[0])
                except queue.Empty:
                    break
        return rollouts

    def process(self):
        """One asynchronous update: compute advantages, sync global -> local, apply the local gradients to the
        global variables."""
        with self.timings.phase("queue_get"):
            rollouts = self.pull_batch_from_queue()
        clip = self.config.reward_clip if self.env_wrap else None
        with self.timings.phase("advantages"):
            batch = stack_batches([process_rollout(rollout, self.config.gamma, self.config.gae_lambda, clip,
                                                   self.config.reward_scale, self.intrinsic)
                                   for rollout in rollouts])
            if self.config.center_advantages:
                batch = batch._replace(advantages=batch.advantages - batch.advantages.mean())
        with self.timings.phase("sync"):
            self.session.run(self.sync)
        pi = self.local_network
        feed = {pi.x: batch.observations, pi.lengths: batch.lengths, pi.state_in.c: batch.features.c,
                pi.state_in.h: batch.features.h, self.actions: batch.actions, self.advantages: batch.advantages,
                self.returns: batch.returns}
        if self.intrinsic is not None:
            feed[self.returns_int] = batch.returns_int
        if self.local_predictor is not None:
            feed.update(self.local_predictor.feed_sequences(batch.sequences, batch.actions))
            feed.update(self.local_predictor.update_feed(rollouts))
        summarise = self.summary_writer is not None and self.updates % self.config.summary_every_updates == 0
        fetches = [self.train_op, self.next_global_step, self.update_finite]
        fetches += [self.summary_op] if summarise else []
        with self.timings.phase("train"):
            results = self.session.run(fetches, feed)
        self.last_global_step = int(results[1])
        self.updates += 1
        self._count_skipped(finite=bool(results[2]), batch=batch)
        steps = len(batch.actions)
        self.steps_trained += steps
        self._fps_steps += steps
        if summarise:
            self.summary_writer.add_summary(results[3], self.last_global_step)
            self._write_fps(rollouts)
        return batch

    def _count_skipped(self, finite, batch):
        """Count a skipped (non-finite) update; many in a row mean a cause that will not pass: stop."""
        if finite:
            self.skipped_in_a_row = 0
            return
        self.skipped_updates += 1
        self.skipped_in_a_row += 1
        inputs = [name for name, values in (("observations", batch.observations), ("rewards", batch.returns))
                  if not np.all(np.isfinite(values))]
        logger.warning("update %d skipped: a loss or gradient was NaN or inf%s (%d skipped in all)", self.updates,
                       f"; the batch's {' and '.join(inputs)} hold NaN or inf" if inputs else "",
                       self.skipped_updates)
        if self.skipped_in_a_row >= NONFINITE_UPDATES_LIMIT:
            raise NonFiniteError(
                f"{self.skipped_in_a_row} updates in a row had a NaN or inf loss or gradient and were skipped "
                f"(the global weights are untouched by them): lower learning_rate, or check the environment's "
                f"{' and '.join(inputs) or 'rewards and observations'}")

    def _write_fps(self, rollouts):
        """diagnostics/fps: environment steps per second this worker trained on since the last summary; and
        model/bonus, the mean reward the bonus gave a step of this update."""
        now = time.time()
        summary = tf1.Summary()
        summary.value.add(tag="diagnostics/fps", simple_value=self._fps_steps / max(now - self._fps_start, 1e-6))
        summary.value.add(tag="diagnostics/skipped_updates", simple_value=self.skipped_updates)
        bonuses = [bonus for rollout in rollouts for bonus in rollout.bonuses]
        if bonuses:
            summary.value.add(tag="model/bonus", simple_value=float(np.mean(bonuses)))
        self.summary_writer.add_summary(summary, self.last_global_step)
        self.summary_writer.flush()
        self._fps_start, self._fps_steps = now, 0
