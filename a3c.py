"""A3C (Mnih et al. 2016) with a curiosity bonus: returns and advantages, the losses, the asynchronous update, and
the task that runs it (on the cluster, or in one process).

Data path: `env.step` -> `acting.env_runner` (policy acts, curiosity bonus) -> `PartialRollout` -> queue ->
`A3C.process` (advantages, sync global -> local, apply the local gradients to the global variables on the
parameter server). Only the trainer thread runs train ops; the runner thread only acts. The acting plumbing is
in acting.py, the session plumbing in sessions.py, the bonuses in curiosity.py.
"""
import collections
import logging
import queue
import time

import numpy as np
import scipy.signal
import tensorflow as tf

import cluster as roles
import curiosity
import envs
import logdir
import runs
import sessions
from acting import QUEUE_POLL_SECS, ActingCopy, EpisodeLogger, RunnerThread
from constants import CURIOSITY_CHOICES, UsageError
from model import LSTMPolicy
from sessions import AbortRetrySession, NonFiniteGuard, Timings, global_step_variable, guarded_apply, retried_runs

tf1 = tf.compat.v1
logger = logging.getLogger(__name__)


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

def build_networks(env, config, design_head=None, unsup="none"):
    """The policy and, with curiosity, its bonus (curiosity.py), in the current variable scope: (policy, bonus or
    None). The policy has a second value head when the bonus is a stream of its own (curiosity.two_streams).

    The trainer builds them twice (global/ and local/); playback builds global/ alone to restore a checkpoint.
    """
    policy = build_policy(env, config, design_head, unsup)
    if unsup == "none":
        return policy, None
    with tf1.variable_scope("predictor"):
        return policy, curiosity.build(unsup, env.observation_space.shape, env.action_space.n, design_head)


def build_policy(env, config, design_head=None, unsup="none"):
    return LSTMPolicy(env.observation_space.shape, env.action_space.n, design_head, config.lstm_size,
                      curiosity.two_streams(unsup, config), config.mlp_units)


class A3C:
    """Global policy on the parameter server, a local copy per worker, and the asynchronous update."""

    def __init__(self, env, task, config, design_head=None, clip_rewards=False, unsup="none", global_device=None,
                 local_device=None, env_threads=False):
        if unsup not in CURIOSITY_CHOICES:
            raise ValueError(f"--unsup {unsup}: not one of {', '.join(CURIOSITY_CHOICES)}")
        self.envs = list(env) if isinstance(env, (list, tuple)) else [env]
        self.task = task
        self.config = config
        self.clip_rewards = clip_rewards  # envs.clips_rewards
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

            syncs = [local.assign(glob) for local, glob in zip(local_vars, global_vars)]
            self.sync = tf.group(*syncs)
            self.synced_policy = syncs[:len(pi.var_list)]  # the policy's weights as the sync left them
            batch_size = tf.cast(tf.shape(self.actions)[0], tf.int64)
            self.next_global_step = self.global_step.assign_add(batch_size)
            # A skipped (NaN or inf) update is counted by process(); its steps still count.
            apply, self.update_finite = guarded_apply(updates, grad_norms, [statistics] if statistics else [])
            self.train_op = tf.group(apply, self.next_global_step)
            self.summary_op = tf1.summary.merge(summaries)

        # the runner's copy of the local policy (acting.ActingCopy), or None: it acts on the local policy itself
        self.acting_copy = None
        if config.acting_copy:
            self.acting_copy = ActingCopy(lambda: build_policy(self.envs[0], config, design_head, unsup),
                                          self.local_network, config.seed + task)
        self.runner = None
        self.summary_writer = None
        self.session = None
        self.last_global_step = 0
        self.updates = 0
        self.nonfinite = NonFiniteGuard()  # updates whose loss or gradient was not finite (see update_finite)
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
        self.sync_local()
        self.last_global_step = int(self.session.run(self.global_step))
        self._fps_start = time.time()
        self.runner = RunnerThread(self.envs, self.acting_copy or self.local_network, self.config.rollout_maxlen,
                                   self.config.queue_size, on_episode_end, self.local_predictor, scaler,
                                   self.timings, self.env_threads, self.config.bootstrap_time_limit)
        self.runner.start_runner(self.session)

    def sync_local(self):
        """global -> local, and the policy's new weights into the runner's copy."""
        if self.acting_copy is None:
            self.session.run(self.sync)
        else:
            self.acting_copy.load(self.session.run([self.sync, self.synced_policy])[1])

    def stop(self):
        if self.runner is not None:
            self.runner.stop()
            self.runner.join(timeout=QUEUE_POLL_SECS * 5)
            if self.acting_copy is not None and not self.runner.is_alive():
                self.acting_copy.close()

    def pull_batch_from_queue(self):
        """The next batch of rollouts. With one environment, its rollout is extended with the queued ones that
        continue its episode, as in the original; a batch of K environments is already large."""
        rollouts = self.runner.next_batch()
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
        with self.timings.phase("advantages"):
            batch = self.batch_of(rollouts)
        with self.timings.phase("sync"):
            self.sync_local()
        feed = self.train_feed(batch, rollouts)
        summarise = self.summary_writer is not None and self.updates % self.config.summary_every_updates == 0
        fetches = [self.train_op, self.next_global_step, self.update_finite]
        fetches += [self.summary_op] if summarise else []
        with self.timings.phase("train"):
            results = self.session.run(fetches, feed)
        self.last_global_step = int(results[1])
        self.updates += 1
        self.nonfinite.count(bool(results[2]), self.updates, {"observations": batch.observations,
                                                              "rewards": batch.returns})
        steps = len(batch.actions)
        self.steps_trained += steps
        self._fps_steps += steps
        if summarise:
            self.summary_writer.add_summary(results[3], self.last_global_step)
            self._write_fps(rollouts)
        return batch

    def batch_of(self, rollouts):
        """The rollouts as one padded batch with their returns and advantages."""
        clip = self.config.reward_clip if self.clip_rewards else None
        batch = stack_batches([process_rollout(rollout, self.config.gamma, self.config.gae_lambda, clip,
                                               self.config.reward_scale, self.intrinsic) for rollout in rollouts])
        if self.config.center_advantages:
            batch = batch._replace(advantages=batch.advantages - batch.advantages.mean())
        return batch

    def train_feed(self, batch, rollouts):
        """The feed of the train call on `batch` (made of `rollouts`)."""
        pi = self.local_network
        feed = {pi.x: batch.observations, pi.lengths: batch.lengths, pi.state_in.c: batch.features.c,
                pi.state_in.h: batch.features.h, self.actions: batch.actions, self.advantages: batch.advantages,
                self.returns: batch.returns}
        if self.intrinsic is not None:
            feed[self.returns_int] = batch.returns_int
        if self.local_predictor is not None:
            feed.update(self.local_predictor.feed_sequences(batch.sequences, batch.actions))
            feed.update(self.local_predictor.update_feed(rollouts))
        return feed

    @property
    def skipped_updates(self):
        return self.nonfinite.skipped

    def status(self):
        """What the heartbeat shows beside the common fields: the session.runs the distributed runtime made the
        worker run again (AbortRetrySession), by cause."""
        return retried_runs(self.session)

    @property
    def skipped_in_a_row(self):
        return self.nonfinite.in_a_row

    def _write_fps(self, rollouts):
        """diagnostics/fps: environment steps per second this worker trained on since the last summary; and
        model/bonus, the mean reward the bonus gave a step of this update."""
        now = time.time()
        summary = tf1.Summary()
        summary.value.add(tag="diagnostics/fps", simple_value=self._fps_steps / max(now - self._fps_start, 1e-6))
        summary.value.add(tag="diagnostics/skipped_updates", simple_value=self.skipped_updates)
        for cause, count in self.status().get("retried_runs", {}).items():
            summary.value.add(tag=f"diagnostics/{cause}_runs_retried", simple_value=count)
        bonuses = [bonus for rollout in rollouts for bonus in rollout.bonuses]
        if bonuses:
            summary.value.add(tag="model/bonus", simple_value=float(np.mean(bonuses)))
        self.summary_writer.add_summary(summary, self.last_global_step)
        self.summary_writer.flush()
        self._fps_start, self._fps_steps = now, 0


# ---------------------------------------------------------------- playback

class Agent:
    """The run's global policy (and predictor) in a graph of its own, restored from a checkpoint, for playback."""

    def __init__(self, env, run, config, checkpoint, epsilon=None, seed=0):
        logdir.import_tf()  # graph mode, as the run trained
        self.graph = tf.Graph()
        self.config = config
        with self.graph.as_default():
            tf1.set_random_seed(seed)  # a sampled policy's draws, as its environments' starts, follow the demo's --seed
            with tf1.variable_scope("global"):
                self.policy, self.predictor = build_networks(env, config, run.get("design_head"), run["unsup"])
                global_step_variable()
            self.session = sessions.restored_session(tf1, self.graph, tf1.global_variables(), checkpoint, "model")
        self.state = None

    def reset(self):
        self.state = self.policy.initial_state()

    def act(self, observation, greedy):
        actions, _, self.state = self.policy.act(self.session, [observation], self.state, greedy=greedy)
        return int(actions[0])

    def bonus(self, observation, next_observation, action):
        if self.predictor is None:
            return 0.0
        return self.predictor.playback_bonus(self.session, observation, next_observation, action, self.config)

    def close(self):
        self.session.close()


# ---------------------------------------------------------------- the task: one worker, on the cluster or alone

Placement = collections.namedtuple("Placement", [
    "job", "task",  # the task's role and index (cluster.py): a worker, or the one-process run
    "global_device", "local_device",  # where the global variables and the worker's own ops go (None: here)
    "target",  # the session's master: the task's server, or "" (in this process)
    "session_config",  # the tf.ConfigProto of its sessions
    "server",  # the task's tf.train.Server, or None
    "progress",  # progress(total, initial): a progress bar of the global step (one process), or None
])


def cluster_placement(args):
    """Worker `args.task` of the cluster: the global variables on the parameter servers, its own ops here."""
    logdir.import_tf()
    spec = runs.cluster_spec(args)
    worker_device = f"/job:{roles.WORKER.job}/task:{args.task}/cpu:0"
    server = sessions.task_server(tf1, spec, roles.WORKER.job, args.task)
    return Placement(roles.WORKER.job, args.task, sessions.ps_device_setter(len(spec[roles.PS.job]), worker_device),
                     worker_device, server.target,
                     sessions.task_session_config(tf1, [f"/job:{roles.PS.job}", worker_device]), server, None)


def run_task(args):
    """A worker of an A3C cluster (worker.py --job-name worker): the algorithms' table's entry point."""
    train_worker(args, cluster_placement)


def run_local(args):
    """`train.py --num-workers 0`: the whole A3C run in this process, its runner and trainer threads on one graph
    with the global variables beside the local ones, a progress bar of the global step; exit status. The same
    worker as on the cluster (train_worker), placed here."""
    from tqdm import tqdm

    logging.basicConfig(level=logging.INFO, format="%(asctime)s a3c %(levelname)s %(message)s")
    args.task = 0

    def progress(total, initial):
        return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True)

    def placement(args):
        # the threads of a cluster's worker (sessions.TASK_THREADS) unless --threads says otherwise
        threads = (args.threads,) if args.threads else sessions.TASK_THREADS
        return Placement(roles.LOCAL.job, 0, None, None, "", sessions.local_session_config(*threads), None, progress)

    last = train_worker(args, placement)
    print(f"run over: global step {last:,} (episodes in {logdir.episodes_csv(args.log_dir, 0)})", flush=True)
    return 0


def train_worker(args, place):
    """One A3C worker's life, wherever `place(args)` (a Placement) puts it: build the global and local networks,
    restore or initialise (the chief), train until max_global_steps or a stop; the global step reached."""
    logdir.import_tf()
    task = args.task
    stop_flag = sessions.StopFlag()
    delay = envs.startup_delay(args.env_id, task)
    if delay:
        logger.info("waiting %.0f s before starting the game engine: simultaneous launches are fragile", delay)
        time.sleep(delay)
    first = runs.make_env(args, "human" if args.visualise else None)  # --visualise shows the first environment
    config = runs.effective_config(args, first)
    worker_envs = [first] + [runs.make_env(args) for _ in range(config.envs_per_worker - 1)]
    env_threads = envs.steps_in_threads(args.env_id) and len(worker_envs) > 1
    logger.info("playing %d %s environment%s at once%s", len(worker_envs), args.env_id,
                "s" if len(worker_envs) > 1 else "", ", stepped side by side in threads" if env_threads else "")
    for index, env in enumerate(worker_envs):  # worker i's k-th environment: seed + i K + k, unique in the run
        env.reset(seed=config.seed + task * config.envs_per_worker + index)
        env.action_space.seed(config.seed + task * config.envs_per_worker + index)
    sessions.seed_task(tf1, config.seed + task)
    placement = place(args)
    chief = roles.is_chief(placement.job, task)
    try:
        trainer = A3C(worker_envs, task, config, design_head=args.design_head,
                      clip_rewards=envs.clips_rewards(args.env_id, args.env_wrap), unsup=args.unsup,
                      global_device=placement.global_device, local_device=placement.local_device,
                      env_threads=env_threads)
    except ValueError as error:  # an impossible head/observation combination
        raise UsageError(str(error)) from None
    variables_to_save = [v for v in tf1.global_variables() if not v.name.startswith("local")]
    train_dir = logdir.checkpoints_dir(args.log_dir)
    init_fn = None
    if chief:
        latest = sessions.check_checkpoint(tf1, train_dir, variables_to_save)
        if latest:
            logger.info("resuming from %s%s", latest, " (--pretrain ignored: this run has its own checkpoint)"
                        if args.pretrain else "")
        elif args.pretrain:
            trainable = [v for v in tf1.trainable_variables() if v.name.startswith("global/")]
            init_fn = sessions.pretrain_init(tf1, args.pretrain, trainable, args.restore_include,
                                             args.restore_exclude)
        else:
            logger.info("no checkpoint in %s: starting fresh", train_dir)
    summary_writer = tf1.summary.FileWriter(logdir.events_dir(args.log_dir, task))
    supervisor, saver = sessions.managed_supervisor(tf1, chief, train_dir, variables_to_save, trainer.global_step,
                                                    summary_writer, config.checkpoint_secs, init_fn)
    episode_logger = EpisodeLogger(args.log_dir, task, summary_writer, lambda: trainer.last_global_step)
    heartbeat = sessions.Heartbeat(args.log_dir, task, config.max_global_steps, job=placement.job)
    if placement.server is not None:
        logger.info("%s; connecting to the parameter server%s", runs.describe_cluster(args),
                    "" if chief else " (waiting for the chief to initialise)")
    try:
        train(supervisor, saver, trainer, chief, stop_flag, placement, summary_writer, episode_logger, heartbeat)
    except (tf1.errors.UnavailableError, tf1.errors.DeadlineExceededError) as error:
        raise roles.ClusterError(f"lost the parameter server at {getattr(args, 'ps_hosts', None)} "
                                    f"({error.message.strip().splitlines()[0]}); relaunch the run to resume") from None
    except sessions.NonFiniteError as error:  # the run cannot go on by itself: the supervisor stops it with this line
        raise UsageError(str(error)) from None
    finally:
        try:
            heartbeat.beat(trainer, episode_logger.episodes, state="stopped", force=True)
            episode_logger.close()
            summary_writer.close()  # its events are written by a thread of its own: wait for all of them
        except OSError as error:  # the disk that failed the run fails these too: the error above is the news
            logger.warning("could not record the stop: %s", error)
        for env in worker_envs:
            env.close()
    logger.info("%s done at global step %d", roles.task_name(placement.job, task), trainer.last_global_step)
    return trainer.last_global_step


def train(supervisor, saver, trainer, chief, stop_flag, placement, summary_writer, episode_logger, heartbeat):
    """The session loop: train until the max global step or a stop request; the chief saves at the end."""
    config = trainer.config
    bar = None
    with supervisor.managed_session(placement.target, config=placement.session_config) as session:
        episode_logger.resume_from(int(session.run(trainer.global_step)))
        trainer.start(session, summary_writer, episode_logger)
        stop_flag.training = True
        logger.info("training from global step %d to %d", trainer.last_global_step, config.max_global_steps)
        if placement.progress is not None:
            bar = placement.progress(config.max_global_steps, trainer.last_global_step)
        while (not supervisor.should_stop() and not stop_flag.stop
               and trainer.last_global_step < config.max_global_steps):
            before = trainer.last_global_step
            trainer.process()
            heartbeat.beat(trainer, episode_logger.episodes)
            if bar is not None:
                bar.update(trainer.last_global_step - before)
                if trainer.updates % config.summary_every_updates == 0:
                    bar.set_postfix(episodes=episode_logger.episodes, mean_return=episode_logger.mean_return(),
                                    refresh=False)
        if bar is not None:
            bar.close()
        heartbeat.beat(trainer, episode_logger.episodes, state="stopping", force=True)
        trainer.stop()
        if chief:
            saver.save(session, supervisor.save_path, global_step=trainer.global_step)
            logger.info("saved the final checkpoint at global step %d", trainer.last_global_step)
