"""Acting plumbing that every learner uses: rollouts, stepping the environments, the runner thread that plays
them with the local policy (and computes the curiosity bonus), and the episode log.

Data path: `env.step` -> `env_runner` (policy acts, curiosity bonus) -> `PartialRollout` -> `RunnerThread`'s
queue -> the learner's update. Only the learner's thread runs train ops; the runner thread only acts.
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

import tensorflow as tf

import cluster as roles
import logdir
import runs
import sessions
from curiosity import assign_in_order
from envs import GAME_METRICS, GameRecord
from sessions import Timings

tf1 = tf.compat.v1
logger = logging.getLogger(__name__)

ROLLOUT_WAIT_SECS = 600.0  # the learner gives up when the runner delivers nothing for this long
QUEUE_POLL_SECS = 1.0  # how often blocked queue operations look for a stop request or a dead thread


class PartialRollout:
    """Consecutive steps of one episode, with the LSTM state at their start (`features`).

    `terminal`: the return ends here (no bootstrap): the episode terminated, or was truncated where truncations
    are not bootstrapped. `truncated`: its time limit cut it. `episode_end`: the episode ended in any way;
    rollouts are never joined across it. `env`: the runner's index of the environment that played it;
    `unroll_end`: it fills its unroll (env_runner's unroll_frames).
    """

    def __init__(self, features):
        self.observations = []
        self.actions = []
        self.rewards = []
        self.values = []
        self.values_int = []  # V_int per step, on the two-stream path
        self.bonuses = []  # curiosity bonus per step; empty without curiosity
        self.bonus_data = []  # per step, what the bonus's scaler keeps for its statistics' update (RND's returns)
        self.behaviour_log_probs = []  # log pi(a_t|s_t) of the acting policy per step, where the runner records it
        self.state_keys = []  # per step, the environment's key of s_t+1's whole state (info's state_key), or None
        self.last_observation = None  # s_T: the observation after the last step
        self.bootstrap_value = 0.0
        self.bootstrap_value_int = 0.0  # V_int(s_T)
        self.next_episode_value_int = 0.0  # V_int of the next episode's first state, after an episode end
        self.terminal = False
        self.truncated = False
        self.episode_end = False
        self.episode_start = False  # its first step is its episode's first
        self.features = features
        self.env = None
        self.unroll_end = False

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
        self.behaviour_log_probs.extend(other.behaviour_log_probs)
        self.state_keys.extend(other.state_keys)
        self.bonuses.extend(other.bonuses)
        self.bonus_data.extend(other.bonus_data)
        self.last_observation = other.last_observation
        self.bootstrap_value = other.bootstrap_value
        self.bootstrap_value_int = other.bootstrap_value_int
        self.next_episode_value_int = other.next_episode_value_int
        self.terminal = other.terminal
        self.truncated = other.truncated
        self.episode_end = other.episode_end
        self.unroll_end = other.unroll_end

    def next_observations(self):
        """s_1 .. s_T, the observation each step led to."""
        return self.observations[1:] + [self.last_observation]

    def __len__(self):
        return len(self.rewards)


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
               step_all=map, behaviour=False, bootstrap_time_limit=True, unroll_frames=None):
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
    in order, so the data do not depend on how they were stepped. With `behaviour` each step's rollout also keeps
    the log-probability of its action under the policy that chose it (what IMPALA's V-trace corrects for).
    Without `bootstrap_time_limit` a truncation ends its rollout as a termination does (constants.Config's field).
    With `unroll_frames` (IMPALA's unrolls) each environment's rollouts also fill unrolls of that many frames, each
    step of a rollout taking one and the observation after its last one more: a rollout is also cut where its unroll
    is full, an episode's end leaves the rest of the unroll to the next episode's rollouts, and the rollout after
    which the unroll has no room for another step is marked `unroll_end`.
    """
    timings = timings or Timings()
    count = len(envs)
    observations = [env.reset()[0] for env in envs]
    initial = policy.initial_state(1)
    state = policy.initial_state(count)
    rollouts = [PartialRollout(state_row(state, k)) for k in range(count)]
    for index, rollout in enumerate(rollouts):
        rollout.episode_start, rollout.env = True, index
    room = [unroll_frames] * count  # the frames left in each environment's unroll
    tallies = [EpisodeTally() for _ in range(count)]
    finished = []  # (rollout, index, tally) ended since the last batch, in order
    awaiting_value = []  # (rollout, index) cut at the last step: their V(s_T) comes with the next act call
    awaiting_next_episode = []  # (rollout, index) that ended an episode: V_int of the next one's first state
    two_streams = policy.act_value_int is not None
    while True:
        batch_complete = len({index for _, index, _ in finished}) == count
        fetches, feed = [policy.act_value_int] if two_streams else [], None
        fetches += [policy.act_log_probs] if behaviour else []
        bonus_now = batch_complete and bonus is not None
        if bonus_now:
            fetches += [bonus.bonus_per_step, *scaler.fetches]
            feed = bonus.feed_sequences([rollout.observations + [rollout.last_observation]
                                         for rollout, _, _ in finished],
                                        [action for rollout, _, _ in finished for action in rollout.actions])
        with timings.phase("act_and_bonus" if bonus_now else "act"):
            actions, values, state, fetched = policy.act_and_fetch(session, observations, state, fetches, feed)
        values_int = fetched.pop(0) if two_streams else None
        log_probs = fetched.pop(0) if behaviour else None  # [K, A]
        for rollout, index in awaiting_value:
            rollout.bootstrap_value = float(values[index])
            if two_streams:
                rollout.bootstrap_value_int = float(values_int[index])
        for rollout, index in awaiting_next_episode:
            rollout.next_episode_value_int = float(values_int[index])
        awaiting_value, awaiting_next_episode = [], []
        if batch_complete:
            if bonus_now:
                assign_in_order(scaler, fetched[0], fetched[1:], [(rollout, index) for rollout, index, _ in finished])
            for rollout, _, tally in finished:
                tally.bonus += sum(rollout.bonuses)
                if rollout.episode_end:
                    on_episode_end(tally.stats(rollout.truncated))
            yield [rollout for rollout, _, _ in finished]
            finished = []
        with timings.phase("env"):
            steps = list(step_all(step_and_reset, envs, [int(action) for action in actions]))
        for index, (next_observation, reward, terminated, truncated, info, first_observation) in enumerate(steps):
            rollout, tally, action = rollouts[index], tallies[index], int(actions[index])
            rollout.add(observations[index], action, reward, float(values[index]),
                        float(values_int[index]) if two_streams else None)
            if behaviour:
                rollout.behaviour_log_probs.append(float(log_probs[index, action]))
            rollout.state_keys.append(info.get("state_key"))
            tally.reward += reward
            tally.env_reward += info.get("env_reward", reward)
            tally.length += 1
            tally.observe(info)
            rollout.last_observation = observations[index] = next_observation
            if terminated or truncated:
                rollout.episode_end = True
                rollout.truncated = not terminated
                rollout.terminal = bool(terminated) or not bootstrap_time_limit
                if not rollout.terminal:
                    value, value_int = policy.value_of(session, [next_observation], state_row(state, index))
                    rollout.bootstrap_value = float(value[0])
                    if two_streams:
                        rollout.bootstrap_value_int = float(value_int[0])
                if two_streams:
                    awaiting_next_episode.append((rollout, index))
                observations[index] = first_observation
                reset_state_row(state, index, initial)
                tallies[index] = EpisodeTally()
            elif len(rollout) == rollout_len or (unroll_frames and len(rollout) + 1 == room[index]):
                awaiting_value.append((rollout, index))
            else:
                continue
            if unroll_frames:
                room[index] -= len(rollout) + 1
                if room[index] < 2:  # no room for a step and the observation after it
                    rollout.unroll_end, room[index] = True, unroll_frames
            finished.append((rollout, index, tally))
            rollouts[index] = PartialRollout(state_row(state, index))
            rollouts[index].episode_start, rollouts[index].env = rollout.episode_end, index


class NetworkCopy:
    """A copy of a network in a graph and a plain in-process session of its own, loaded with the weights the
    learner's sync brings (`load`), for acting.

    On TensorFlow's cluster every session.run of a process goes through the distributed master, even for a network
    on the process's own device: acting on a copy here, a Doom worker's act time per step fell by a third (K = 4,
    the ICM; docs/history/2026-11-24-speed.md). `build()` makes the network in the copy's graph, in the variable scope
    of `source`'s variables, which it must match name for name.
    """

    def __init__(self, build, source_variables, seed):
        """`source_variables`: the network's, in the order the copy makes its own, or {name: variable} of a graph
        that holds them among others (`source` then lists those the copy takes, in its order)."""
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf1.set_random_seed(seed)
            before = set(tf1.trainable_variables())
            self.network = build()
            self.variables = [v for v in tf1.trainable_variables() if v not in before]
            self.weights = [tf1.placeholder(v.dtype.base_dtype, v.shape) for v in self.variables]
            self.load_op = tf.group(*[v.assign(weight) for v, weight in zip(self.variables, self.weights)])
            initialise = tf1.variables_initializer(self.variables)
        if isinstance(source_variables, dict):
            source_variables = [source_variables.get(v.op.name) for v in self.variables]
        sources = [v if v is None else (v.name, v.shape) for v in source_variables]
        if [(v.name, v.shape) for v in self.variables] != sources:
            raise ValueError("a network's copy has other variables than the network")
        self.source = list(source_variables)
        self.session = tf1.Session(graph=self.graph, config=tf1.ConfigProto(intra_op_parallelism_threads=1,
                                                                             inter_op_parallelism_threads=1))
        self.session.run(initialise)

    def load(self, values):
        """The network's weights, in the order of its variables."""
        self.session.run(self.load_op, dict(zip(self.weights, values)))

    def close(self):
        self.session.close()


class ActingCopy(NetworkCopy):
    """The runner thread's copy of an LSTMPolicy, with its acting calls; fetches of the cluster's graph (the bonus
    of a finished batch) are still run in the cluster's session, in a call of their own."""

    def __init__(self, make_policy, source, seed, scope="local"):
        def build():
            with tf1.variable_scope(scope):  # `source`'s, whose variable names the copy's must match
                return make_policy()

        super().__init__(build, source.var_list, seed)
        self.policy = self.network
        self.act_value_int = self.policy.act_value_int
        self.act_log_probs = self.policy.act_log_probs

    def initial_state(self, batch_size=1):
        return self.policy.initial_state(batch_size)

    def act_and_fetch(self, session, observations, state, fetches=(), feed=None, greedy=False):
        """LSTMPolicy.act_and_fetch, the policy's part here and the fetches of `session`'s graph there."""
        mine = [index for index, fetch in enumerate(fetches) if getattr(fetch, "graph", None) is self.graph]
        theirs = [index for index in range(len(fetches)) if index not in mine]
        actions, values, state, fetched = self.policy.act_and_fetch(
            self.session, observations, state, [fetches[index] for index in mine], greedy=greedy)
        results = dict(zip(mine, fetched))
        if theirs:
            results.update(zip(theirs, session.run([fetches[index] for index in theirs], feed)))
        return actions, values, state, [results[index] for index in range(len(fetches))]

    def value_of(self, session, observations, state):
        return self.policy.value_of(self.session, observations, state)


class RunnerThread(threading.Thread):
    """Plays the environments with the local policy and queues batches of rollouts for the trainer.

    A failure is kept in `error` for the trainer to re-raise; the thread never dies silently.
    """

    def __init__(self, envs, policy, rollout_len, queue_size, on_episode_end, bonus=None, scaler=None,
                 timings=None, env_threads=False, bootstrap_time_limit=True):
        super().__init__(name="runner", daemon=True)
        self.bootstrap_time_limit = bootstrap_time_limit
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
                                     self.bonus, self.scaler, self.timings, step_all,
                                     bootstrap_time_limit=self.bootstrap_time_limit)
                for batch in batches:
                    with self.timings.phase("queue_put"):
                        if not self._put(batch):
                            return
        except Exception as error:  # handed to the trainer, which re-raises it
            if self.stop_requested.is_set():
                return  # the session closed under us during shutdown
            logger.exception("runner thread failed")
            self.error = error

    def next_batch(self):
        """The next batch from the queue, for the learner's thread: RunnerError if this thread failed, stopped,
        or delivered nothing for ROLLOUT_WAIT_SECS."""
        waited = 0.0
        while True:
            if self.error is not None:
                raise RunnerError(f"runner thread failed: {type(self.error).__name__}: {self.error}") from self.error
            try:
                return self.queue.get(timeout=QUEUE_POLL_SECS)
            except queue.Empty:
                waited += QUEUE_POLL_SECS
            if not self.is_alive() and self.error is None:
                raise RunnerError("runner thread stopped without producing a rollout")
            if waited >= ROLLOUT_WAIT_SECS:
                raise RunnerError(f"no rollout from the runner thread in {ROLLOUT_WAIT_SECS:.0f} s: "
                                  f"is the environment hung?")

    def _put(self, batch):
        while not self.stop_requested.is_set():
            try:
                self.queue.put(batch, timeout=QUEUE_POLL_SECS)
                return True
            except queue.Full:
                continue
        return False


class RunnerError(RuntimeError):
    """The runner thread failed or went silent; the message says which."""


class EpisodeLogger:
    """Writes each finished episode to TensorBoard (`global/episode_*`) and to `episodes_<task>.csv`."""

    COLUMNS = ["global_step", "wall_time", "worker", "reward", "length", "seconds", "env_reward", "truncated",
               "bonus", *GAME_METRICS]  # a game metric the environment does not report is left empty
    GAME_TAGS = {"success": "global/episode_success", "distance": "global/distance",
                 "position_x": "global/POSITION_X", "position_y": "global/POSITION_Y",  # the original's tags
                 "cells": "global/episode_cells"}
    RECENT = 100  # episodes in mean_return, as a progress bar shows it

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
        self.recent = collections.deque(maxlen=self.RECENT)  # the game's rewards of the last episodes

    def resume_from(self, step):
        """Called once the run's global step is known, before the first episode: what this task logged past `step`
        (the checkpoint a resumed run went back to) is set aside (logdir.set_aside_rows_after), and TensorBoard is
        told to purge this writer's events past it, so that the steps played again are counted once."""
        log_dir = os.path.dirname(self.path)
        moved = logdir.set_aside_rows_after(self.path, step, log_dir)
        logdir.set_aside_rows_after(self.visits_path, step, log_dir)
        if moved:
            logger.warning("%d episodes of %s were played past global step %d, the checkpoint the run resumes "
                           "from: moved to %s", moved, os.path.basename(self.path), step,
                           os.path.join(log_dir, logdir.REWOUND))
        if self.summary_writer is not None:
            self.summary_writer.add_session_log(tf1.SessionLog(status=tf1.SessionLog.START), step)
        return moved

    def __call__(self, stats):
        global_step = self.global_step_fn()
        self.episodes += 1
        self.recent.append(stats.env_reward)
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

    def mean_return(self):
        """The mean game reward of the last RECENT episodes, as text; "-" before the first."""
        return f"{sum(self.recent) / len(self.recent):.1f}" if self.recent else "-"

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


def run_learner_or_actor(tf1, args, spec, config, stop_flag, envs, variables, global_step, finish, learn, make_actor,
                         progress=lambda trainer: trainer, init_fn=None, local_variables=(), resume_note=""):
    """A task of an algorithm with a learner and actors on TensorFlow's cluster (Ape-X, IMPALA, PlaNet), from its
    server to its last heartbeat. The learner, the chief, restores `variables` from its checkpoint (or initialises
    them, or runs `init_fn`), checkpoints them every checkpoint_secs, runs `learn(session, writer, heartbeat)` to the
    run's end (it returns the trainer) and saves a final checkpoint. An actor waits until they are ready, makes its
    trainer with `make_actor(writer, episode_logger)`, runs it (`run(session, stop_flag, heartbeat, episode_logger)`)
    and then `finish`, which tells the learner it may go. `progress(trainer)` is what the heartbeat reads."""
    job, task = args.job_name, args.task
    is_learner = roles.is_chief(job, task)
    train_dir = logdir.checkpoints_dir(args.log_dir)
    if is_learner:
        latest = sessions.check_checkpoint(tf1, train_dir, variables)
        logger.info("resuming from %s%s" % (latest, resume_note) if latest else
                    f"no checkpoint in {train_dir}: starting fresh")
    threads = sessions.learner_threads(spec, args.threads) if is_learner else sessions.TASK_THREADS
    server = sessions.task_server(tf1, spec, job, task, threads)
    writer = tf1.summary.FileWriter(logdir.events_dir(args.log_dir, roles.heartbeat_key(job, task)))
    supervisor, saver = sessions.managed_supervisor(
        tf1, is_learner, train_dir, variables, global_step, writer, config.checkpoint_secs, init_fn=init_fn,
        local_variables=local_variables, save_summaries=False)
    own = [] if is_learner else [f"/job:{job}/task:{task}"]
    heartbeat = sessions.Heartbeat(args.log_dir, task, config.max_global_steps, job=job)
    logger.info("%s; %s", runs.describe_cluster(args), f"the learner, {threads[0]} TensorFlow threads" if is_learner else
                f"actor {task} of {len(spec[roles.ACTOR.job])}, waiting for the learner to initialise")
    trainer, episodes = None, 0
    try:
        session_config = sessions.task_session_config(tf1, [f"/job:{roles.LEARNER.job}", *own])
        with roles.learner_lost(tf1, args.learner_hosts), supervisor.managed_session(
                server.target, config=session_config) as session:
            stop_flag.training = True
            if is_learner:
                trainer = learn(session, writer, heartbeat)
                heartbeat.beat(progress(trainer), 0, state="stopping", force=True)
                logger.info("saved the final checkpoint %s",  # named by the global step when saved
                            saver.save(session, supervisor.save_path, global_step=global_step))
            else:
                episode_logger = EpisodeLogger(args.log_dir, task, writer, lambda: progress(trainer).last_global_step)
                episode_logger.resume_from(int(session.run(global_step)))
                trainer = make_actor(writer, episode_logger)
                try:
                    trainer.run(session, stop_flag, heartbeat, episode_logger)
                    if not stop_flag.stop:
                        session.run(finish)  # the learner may go
                finally:
                    episode_logger.close()
                    trainer.close()
                episodes = episode_logger.episodes
            heartbeat.beat(progress(trainer), episodes, state="stopped", force=True)
    finally:
        writer.close()
        for env in envs:
            env.close()
    logger.info("%s done at global step %d", roles.task_name(job, task), progress(trainer).last_global_step)

