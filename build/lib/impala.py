"""IMPALA (Espeholt et al. 2018): actors that only act, and one learner that trains on their trajectories with
V-trace; every curiosity bonus composes with it as with A3C. `train.py --algo impala --num-workers N` runs one
learner and N actors (algorithms.IMPALA.roles), each a worker.py process; `--num-workers 0` runs the same learner and
one actor in one process, the actor in a thread.

    actor i   plays its K environments with its own copy of the policy (acting.env_runner, as A3C's runner thread:
              the curiosity bonus of its copy of the predictor, turned into rewards by the bonus's scaler), and
              records each action's log-probability under the policy that chose it. Its rollouts (cut where an
              episode ends, each with the LSTM state at its start) become trajectories of rollout_maxlen + 1
              frames: one rollout each, padded, or with `unrolls` through one environment's rollouts one after
              another through episodes' ends, as IMPALA's fixed unrolls; those filled go into the learner's queue in
              one enqueue_many that adds their steps to the global step; then the actor fetches the learner's
              weights, as IMPALA's actors do before each unroll
    learner   (the chief) takes batch_size trajectories from the queue, runs its current policy over them, corrects
              their returns for the lag between the policies that acted and its own with V-trace (`vtrace`), and
              applies one RMSProp step; the bonus's predictor trains on the same transitions. It checkpoints every
              checkpoint_secs and ends the run at max_global_steps, once the actors have sent their last steps

The trajectories travel as Ape-X's transitions do: a FIFOQueue on the learner's device with a shared_name, so that
the queue op in every process's graph is the one queue (DeepMind's scalable_agent feeds its learner so). A restarted
learner restores the last checkpoint; the trajectories in the queue die with it. A restarted actor loses its unsent
rollouts. Inside an unroll the learner's LSTM starts each episode's rollout from the zero state and the first rollout
from the state it began with; each rollout keeps the frame after its last step, so that its bootstrap value and the
bonus's last transition are its own.
"""
import collections
import logging
import threading
import time

import numpy as np
import tensorflow as tf

import acting
import cluster as roles
import envs
import logdir
import model
import runs
import sessions
from a3c import IntrinsicStream, build_networks, build_policy
from acting import ActingCopy, EpisodeLogger, env_runner, env_stepper
from constants import UsageError
from curiosity import two_streams
from sessions import (AbortRetrySession, NonFiniteGuard, Timings, annealed_rate, global_step_variable, guarded_apply,
                      retried_runs)

tf1 = tf.compat.v1
logger = logging.getLogger("impala")

QUEUE_NAME = "impala_trajectories"  # the shared_name: one queue for every process's graph
MAX_ACTORS = 1024  # the tokens the finished actors' queue holds
RECEIVE_IDLE_SECS = 0.005  # the learner's pause when the queue held nothing
FINISH_GRACE_SECS = 30.0  # after max_global_steps the learner serves until every actor has finished, this long at most
ACTOR_SCOPE = "actor"  # an actor's copy of the policy and the bonus, on its own device


# ---------------------------------------------------------------- V-trace: numpy, as the paper writes it

def vtrace_reference(log_rhos, discounts, rewards, values, bootstrap, clip_rho=1.0, clip_pg_rho=1.0, clip_c=1.0):
    """V-trace targets and policy-gradient advantages of one trajectory of T steps, by the sums of the paper's
    definition (Espeholt et al. 2018, eq. 1 and section 4.2), in plain numpy: the ground truth `vtrace` is tested
    against.

    rho_t = min(clip_rho, pi/mu), c_i = min(clip_c, pi/mu), delta_t = rho_t (r_t + gamma_t V(x_t+1) - V(x_t)),
    v_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i c_i) delta_t,   V(x_T) = bootstrap;
    advantage_s = min(clip_pg_rho, pi/mu) (r_s + gamma_s v_s+1 - V(x_s)),   v_T = bootstrap.
    `discounts` [T] are gamma_t: 0 where the episode ended at step t.
    """
    rhos = np.exp(np.asarray(log_rhos, np.float64))
    discounts, rewards = np.asarray(discounts, np.float64), np.asarray(rewards, np.float64)
    values = np.asarray(values, np.float64)
    following = np.append(values[1:], bootstrap)
    deltas = np.minimum(clip_rho, rhos) * (rewards + discounts * following - values)
    traces = discounts * np.minimum(clip_c, rhos)
    steps = len(rewards)
    targets = np.array([values[s] + sum(np.prod(traces[s:t]) * deltas[t] for t in range(s, steps))
                        for s in range(steps)])
    next_targets = np.append(targets[1:], bootstrap)
    advantages = np.minimum(clip_pg_rho, rhos) * (rewards + discounts * next_targets - values)
    return targets, advantages


# ---------------------------------------------------------------- V-trace: the graph

def vtrace(log_rhos, discounts, rewards, values, next_values, mask, clip_rho=1.0, clip_pg_rho=1.0, clip_c=1.0):
    """V-trace on a batch of unrolls, [B, T] each: (targets v_s, policy-gradient advantages), zero where `mask` is
    (padding, and the frame after a rollout's last step), no gradient through them. `next_values` [B, T] are
    V(x_t+1): at a rollout's last step the value of the frame after it, its bootstrap; a masked step between two
    rollouts stops the sum, so each rollout's sums are its own. The recursion v_s - V(x_s) = delta_s + gamma_s c_s (v_s+1 - V(x_s+1)) (the paper's
    Remark 1), right to left; `vtrace_reference` is the same by the sums."""
    rhos = tf.exp(log_rhos)
    discounts = discounts * mask
    deltas = tf.minimum(clip_rho, rhos) * mask * (rewards + discounts * next_values - values)  # [B, T]
    traces = discounts * tf.minimum(clip_c, rhos)  # [B, T], zero on padding: the sum stops there
    corrections = tf.transpose(tf.scan(lambda later, step: step[0] + step[1] * later,
                                       (tf.transpose(deltas), tf.transpose(traces)),
                                       initializer=tf.zeros_like(deltas[:, 0]), reverse=True))  # [B, T]: v_s - V(x_s)
    following = tf.concat([corrections[:, 1:], tf.zeros_like(corrections[:, :1])], 1)  # v_s+1 - V(x_s+1)
    advantages = tf.minimum(clip_pg_rho, rhos) * (rewards + discounts * (next_values + following) - values)
    return tf.stop_gradient((values + corrections) * mask), tf.stop_gradient(advantages * mask)


# ---------------------------------------------------------------- trajectories: numpy

Column = collections.namedtuple("Column", ["name", "dtype", "shape"])


def trajectory_columns(observation_shape, steps, lstm_size):
    """What a trajectory sends: an unroll of `steps` + 1 frames (rollout_maxlen + 1), one rollout or (unrolls
    through) one environment's rollouts one after another (acting.env_runner's unroll_frames), each its frames s_0 ..
    s_n, the LSTM state zeroed at each
    rollout's first frame but the first's (`resets`), zero-padded after the last (`length`: the frames used). Per
    step, at the position of its frame s_t: the action, extrinsic reward, bonus and behaviour log-probability,
    `mask` 1 (0 at a rollout's s_n and on padding), and at a rollout's last step whether its episode ended there by
    termination or at all and V_int of the next episode's first state (the two-stream path's non-episodic
    bootstrap, from the acting policy). The LSTM state at the first rollout's start."""
    frames, per_step = [steps + 1], [steps]
    return [Column("frames", np.float32, [*frames, *observation_shape]), Column("resets", np.float32, frames),
            Column("length", np.int32, []), Column("actions", np.int32, per_step),
            Column("rewards", np.float32, per_step), Column("bonuses", np.float32, per_step),
            Column("behaviour_log_probs", np.float32, per_step), Column("mask", np.float32, per_step),
            Column("terminal", np.float32, per_step), Column("episode_end", np.float32, per_step),
            Column("next_episode_value_int", np.float32, per_step), Column("c", np.float32, [lstm_size]),
            Column("h", np.float32, [lstm_size])]


def pack(unrolls, columns):
    """Unrolls, each a list of consecutive rollouts (acting.PartialRollout) of one environment, as the arrays of
    `columns`, [n, ...] each: laid out as trajectory_columns says."""
    arrays = {column.name: np.zeros((len(unrolls), *column.shape), column.dtype) for column in columns}
    room = arrays["frames"].shape[1]
    for row, rollouts in enumerate(unrolls):
        start = 0
        for rollout in rollouts:
            length = len(rollout)
            end = start + length  # the position of s_n, the frame after the rollout's last step
            if end >= room:
                raise ValueError(f"an unroll of {sum(len(each) + 1 for each in rollouts)} frames does not fit "
                                 f"in {room}")
            arrays["frames"][row, start:end + 1] = rollout.observations + [rollout.last_observation]
            arrays["resets"][row, start] = start > 0
            steps = slice(start, end)
            arrays["actions"][row, steps] = rollout.actions
            arrays["rewards"][row, steps] = rollout.rewards
            arrays["bonuses"][row, steps] = rollout.bonuses or 0.0
            arrays["behaviour_log_probs"][row, steps] = rollout.behaviour_log_probs
            arrays["mask"][row, steps] = 1.0
            arrays["terminal"][row, end - 1] = rollout.terminal
            arrays["episode_end"][row, end - 1] = rollout.episode_end
            arrays["next_episode_value_int"][row, end - 1] = rollout.next_episode_value_int
            start = end + 1
        arrays["length"][row] = start
        arrays["c"][row], arrays["h"][row] = rollouts[0].features.c[0], rollouts[0].features.h[0]
    return [arrays[column.name] for column in columns]


def fill_unrolls(unrolls, rollouts, through):
    """The unrolls that `rollouts` (a batch of env_runner's) complete, taken out of `unrolls` ({environment: its
    rollouts so far}): with `through` where a rollout is marked unroll_end, else each rollout alone."""
    full = []
    for rollout in rollouts:
        unrolls.setdefault(rollout.env, []).append(rollout)
        if rollout.unroll_end or not through:
            full.append(unrolls.pop(rollout.env))
    return full


def unroll_rollouts(batch):
    """The rollouts inside a batch's unrolls, as a bonus's feed_sequences takes them: (their frame sequences
    s_0 .. s_n, their actions, concatenated)."""
    sequences, actions = [], []
    for frames, resets, length, row_actions in zip(batch["frames"], batch["resets"], batch["length"],
                                                   batch["actions"]):
        starts = [0, *np.flatnonzero(resets[:length]), length]
        for start, end in zip(starts[:-1], starts[1:]):
            sequences.append(frames[start:end])
            actions.append(row_actions[start:end - 1])
    return sequences, np.concatenate(actions)


Targets = collections.namedtuple("Targets", [
    "mask",  # [B, T]: 1 on an unroll's steps, 0 at the frame after a rollout's last step and on padding
    "rewards", "discounts",  # [B, T]: the rewards V-trace sums (one stream: with the bonus), gamma_t
    "rewards_int", "discounts_int",  # [B, T] the bonus's stream, on the two-stream path; else None
    "given_int",  # [B, T]: 1 where V_int(x_t+1) is the next episode's (a non-episodic bonus's episode end)
])


def targets_inputs(batch, config, reward_clip=None, intrinsic=None):
    """What V-trace is fed of a batch of trajectories (the arrays of trajectory_columns, by name), as A3C's
    process_rollout makes its rewards: the extrinsic reward times reward_scale, clipped with `reward_clip`; one
    stream, plus the bonus, the sum clipped again; two streams (`intrinsic`, an a3c.IntrinsicStream), the bonus a
    stream of its own with gamma_int, whose return goes on across an episode's end unless episodic."""
    mask = batch["mask"]  # [B, T]
    rewards = batch["rewards"].astype(np.float64) * config.reward_scale
    if reward_clip is not None:
        rewards = np.clip(rewards, -reward_clip, reward_clip)
    if intrinsic is None:
        rewards = rewards + batch["bonuses"]
        if reward_clip is not None:
            rewards = np.clip(rewards, -reward_clip, reward_clip)
    ended = batch["terminal"]  # [B, T]: 1 at the step where an episode terminated
    discounts = config.gamma * mask * (1.0 - ended)
    rewards_int = discounts_int = None
    given_int = np.zeros_like(mask)
    if intrinsic is not None:
        rewards_int = batch["bonuses"] * mask
        discounts_int = intrinsic.gamma * mask * (1.0 - ended if intrinsic.episodic else 1.0)
        if not intrinsic.episodic:
            given_int = batch["episode_end"]
    as_float = (lambda array: None if array is None else np.asarray(array, np.float32))
    return Targets(mask, as_float(rewards * mask), as_float(discounts), as_float(rewards_int),
                   as_float(discounts_int), given_int)


# ---------------------------------------------------------------- the graph

class ImpalaGraph:
    """What the learner and every actor build alike (between-graph replication): in `global/` on the learner's
    device the policy and its bonus (a3c.build_networks, so that playback and evaluation restore them as A3C's), the
    trajectories' queue and the learner's update; with `actor_device` (None: this process) an actor's copies of
    the policy and bonus in `actor/`, and the op that fetches the learner's weights into them."""

    def __init__(self, env, config, head, unsup, learner_device=None, actor_device=None, acts=True):
        self.config = config
        steps = config.rollout_maxlen
        shape = env.observation_space.shape
        self.two_streams = two_streams(unsup, config)
        with tf1.device(learner_device):
            with tf1.variable_scope("global"):
                self.network, self.predictor = build_networks(env, config, head, unsup)
                self.global_step = global_step_variable()
            self.columns = trajectory_columns(shape, steps, config.lstm_size)
            dtypes = [tf.as_dtype(column.dtype) for column in self.columns]
            shapes = [column.shape for column in self.columns]
            self.queue = tf1.FIFOQueue(config.queue_size * config.batch_size, dtypes, shapes=shapes,
                                       shared_name=QUEUE_NAME, name="trajectories")
            self.sent = [tf1.placeholder(dtype, [None, *each], f"sent_{column.name}")
                         for dtype, each, column in zip(dtypes, shapes, self.columns)]
            self.steps = tf1.placeholder(tf.int64, [], "steps")
            with tf.control_dependencies([self.queue.enqueue_many(self.sent)]):
                self.send = self.global_step.assign_add(self.steps)  # the environment steps, counted
            self.received = self.queue.dequeue_many(tf.minimum(self.queue.size(), config.batch_size))
            # a token from each actor that has seen the end of the run (as Ape-X's)
            finished = tf1.FIFOQueue(MAX_ACTORS, [tf.int32], shapes=[[]], shared_name=QUEUE_NAME + "_finished",
                                     name="finished_actors")
            self.finish = finished.enqueue(0)
            self.finished_actors = finished.size()
            self.close_queue = self.queue.close(cancel_pending_enqueues=True)  # a stopped run's blocked sends end
            self.learning = VTraceLearning(self.network, self.predictor, config, self.global_step, unsup)
        self.shared_variables = tf1.global_variables()  # the learner's: checkpointed; the actors wait for them
        self.actor_variables = []
        self.actor_network = self.actor_predictor = self.merge = None
        if acts:
            with tf1.device(actor_device):
                with tf1.variable_scope(ACTOR_SCOPE):
                    self.actor_network, self.actor_predictor = build_networks(env, config, head, unsup)
                pairs = list(zip(self.network.var_list, self.actor_network.var_list))
                if self.predictor is not None:
                    pairs += zip(self.predictor.var_list + list(self.predictor.state_variables),
                                 self.actor_predictor.var_list + list(self.actor_predictor.state_variables))
                    # the steps the actor's bonus is fed, merged into the learner's running statistics (RND's)
                    self.merge = self.predictor.update_statistics(self.actor_predictor)
                self.actor_variables = [v for v in tf1.global_variables() if v not in self.shared_variables]
                syncs = [mine.assign(theirs) for theirs, mine in pairs]
                self.sync = tf.group(*syncs)
                self.synced_policy = syncs[:len(self.actor_network.var_list)]
        self.make_policy = lambda: build_policy(env, config, head, unsup)


class TorchRMSProp(tf1.train.Optimizer):
    """PyTorch's RMSProp (torch.optim.RMSprop without momentum, as torchbeast's and RIDE's code use it):
    v = decay v + (1 - decay) g^2 from v = 0, and w -= rate g / (sqrt(v) + epsilon). Written here because
    TensorFlow's graph-mode RMSProp starts v at 1 and puts epsilon under the root: with gradients well below 1 its
    steps are many times smaller for the first few hundred updates, so it cannot stand in for PyTorch's."""

    def __init__(self, learning_rate, decay, epsilon, name="TorchRMSProp"):
        super().__init__(use_locking=False, name=name)
        self._rate, self._decay, self._epsilon = learning_rate, decay, epsilon

    def _create_slots(self, var_list):
        for variable in var_list:
            self._zeros_slot(variable, "rms", self._name)

    def _step(self, gradient, variable):
        mean_square = self.get_slot(variable, "rms")
        mean_square = mean_square.assign(self._decay * mean_square + (1.0 - self._decay) * tf.square(gradient))
        rate = tf.cast(self._rate, variable.dtype.base_dtype)  # a tensor where annealed
        return tf.group(variable.assign_sub(rate * gradient / (tf.sqrt(mean_square) + self._epsilon)))

    _apply_dense = _resource_apply_dense = _step

    def _resource_apply_sparse(self, gradient, variable, indices):  # indices unique: the base class summed repeats
        return self._step(tf.math.unsorted_segment_sum(gradient, indices, tf.shape(variable)[0]), variable)


def rmsprop(config, rate, name):
    """The RMSProp of config.rmsprop_form at `rate`, without momentum (IMPALA's and torchbeast's)."""
    if config.rmsprop_form == "pytorch":
        return TorchRMSProp(rate, config.rmsprop_decay, config.rmsprop_epsilon, name=name)
    return tf1.train.RMSPropOptimizer(rate, decay=config.rmsprop_decay, momentum=0.0, epsilon=config.rmsprop_epsilon,
                                      name=name)


def policy_optimizer(config, rate):
    """The policy's optimizer by policy_optimizer: IMPALA's RMSProp, or A3C's Adam (its step about the rate whatever
    the gradients' scale)."""
    if config.policy_optimizer == "adam":
        return tf1.train.AdamOptimizer(rate, epsilon=config.adam_epsilon)
    return rmsprop(config, rate, "RMSProp")


def bonus_updates(predictor, loss, config):
    """The bonus's updates [(optimizer, gradients, variables)] and their gradient norms, by predictor_optimizer:
    adam, A3C's (one Adam over all its variables at learning_rate, the gradient clipped at grad_norm_clip as one);
    or rmsprop, RIDE's code's (an RMSProp with the policy's form, decay and epsilon for each of its models, the
    embedding, the forward and the inverse model, each model's gradient clipped at grad_norm_clip on its own; the
    rate not annealed, as RIDE anneals the policy's only)."""
    if config.predictor_optimizer == "adam":
        parts = {"bonus": predictor.var_list}
    else:
        parts = predictor.parts()
    updates, norms = [], []
    for part, variables in parts.items():
        gradients = tf.gradients(loss, variables)
        norm = tf.linalg.global_norm(gradients)
        gradients, _ = tf.clip_by_global_norm(gradients, config.grad_norm_clip, use_norm=norm)
        if config.predictor_optimizer == "adam":
            optimizer = tf1.train.AdamOptimizer(config.learning_rate, epsilon=config.predictor_adam_epsilon,
                                                name="PredictorAdam")
        else:
            optimizer = rmsprop(config, config.learning_rate, f"PredictorRMSProp_{part}")
        updates.append((optimizer, gradients, variables))
        norms.append(norm)
    return updates, norms


class VTraceLearning:
    """The learner's update: the policy run over a batch of trajectories, V-trace's targets and advantages (for each
    stream on the two-stream path, their advantages weighed by ext_coef and int_coef as A3C's), IMPALA's loss summed
    over the batch's steps, RMSProp or Adam (policy_optimizer; the rate falling linearly to 0 at anneal_steps with
    anneal_lr); the bonus's predictor on the same transitions by optimisers of its own (bonus_updates)."""

    def __init__(self, network, predictor, config, global_step, unsup):
        self.network, self.predictor = network, predictor
        batch, time = tf.shape(network.x)[0], tf.shape(network.x)[1] - 1
        self.actions = tf1.placeholder(tf.int32, [None, None], "actions")  # [B, T]
        self.behaviour_log_probs = tf1.placeholder(tf.float32, [None, None], "behaviour_log_probs")  # [B, T]
        self.mask, self.rewards, self.discounts, self.given_int = (
            tf1.placeholder(tf.float32, [None, None], name) for name in ("mask", "rewards", "discounts", "given_int"))
        self.next_values_int = tf1.placeholder(tf.float32, [None, None], "next_episode_values_int")  # [B, T]
        logits = tf.reshape(network.logits, [batch, time + 1, network.num_actions])[:, :-1]  # [B, T, A]
        values = tf.reshape(network.value, [batch, time + 1])  # [B, T + 1]: the last, or a padded, step's too
        log_probs = tf.nn.log_softmax(logits)  # [B, T, A]
        chosen = tf.reduce_sum(tf.one_hot(self.actions, network.num_actions) * log_probs, axis=2)  # [B, T]
        log_rhos = chosen - self.behaviour_log_probs
        clips = (config.vtrace_clip_rho, config.vtrace_clip_pg_rho, config.vtrace_clip_c)
        targets, advantages = vtrace(log_rhos, self.discounts, self.rewards, values[:, :-1], values[:, 1:], self.mask,
                                     *clips)
        count = tf.reduce_sum(self.mask)
        value_losses = value_loss = 0.5 * tf.reduce_sum(self.mask * tf.square(targets - values[:, :-1]))
        self.rewards_int = self.discounts_int = None
        summaries = []
        if network.value_int is not None:
            self.rewards_int, self.discounts_int = (tf1.placeholder(tf.float32, [None, None], name)
                                                    for name in ("rewards_int", "discounts_int"))
            values_int = tf.reshape(network.value_int, [batch, time + 1])
            next_values_int = (self.given_int * self.next_values_int
                               + (1.0 - self.given_int) * values_int[:, 1:])
            targets_int, advantages_int = vtrace(log_rhos, self.discounts_int, self.rewards_int, values_int[:, :-1],
                                                 next_values_int, self.mask, *clips)
            advantages = config.ext_coef * advantages + config.int_coef * advantages_int
            value_int_loss = 0.5 * tf.reduce_sum(self.mask * tf.square(targets_int - values_int[:, :-1]))
            value_losses += value_int_loss
            summaries += [tf1.summary.scalar("model/value_int_loss", value_int_loss / count),
                          tf1.summary.scalar("model/return_int", tf.reduce_sum(targets_int) / count)]
        policy_loss = -tf.reduce_sum(self.mask * chosen * advantages)
        entropy = tf.reduce_sum(self.mask * -tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=2))
        self.loss = policy_loss + config.value_loss_wt * value_losses - config.entropy_beta * entropy
        gradients = tf.gradients(self.loss, network.var_list)
        gradient_norm = tf.linalg.global_norm(gradients)
        gradients, _ = tf.clip_by_global_norm(gradients, config.grad_norm_clip, use_norm=gradient_norm)
        rate = annealed_rate(config, global_step) if config.anneal_lr else config.learning_rate
        updates, norms = [(policy_optimizer(config, rate), gradients, network.var_list)], [gradient_norm]
        summaries += [tf1.summary.scalar("model/policy_loss", policy_loss / count),
                      tf1.summary.scalar("model/value_loss", value_loss / count),
                      tf1.summary.scalar("model/entropy", entropy / count),
                      tf1.summary.scalar("model/grad_global_norm", gradient_norm),
                      tf1.summary.scalar("model/var_global_norm", tf.linalg.global_norm(network.var_list)),
                      tf1.summary.scalar("impala/rho",
                                         tf.reduce_sum(self.mask * tf.minimum(tf.exp(log_rhos), 1.0)) / count),
                      tf1.summary.scalar("impala/learning_rate", rate)]
        if predictor is not None:
            # A3C's: the predictor's per-step loss times the rollout length, by optimisers of its own
            predictor_loss = predictor.training_loss(config) * float(config.rollout_maxlen)
            predictor_updates, predictor_norms = bonus_updates(predictor, predictor_loss, config)
            updates += predictor_updates
            norms += predictor_norms
            predictor_norm = tf.linalg.global_norm(predictor_norms)  # of all its gradients, before the clips
            summaries += [tf1.summary.scalar("model/predloss", predictor_loss / float(config.rollout_maxlen)),
                          tf1.summary.scalar("model/predgrad_global_norm", predictor_norm)]
            summaries += [tf1.summary.scalar(tag, tensor) for tag, tensor in predictor.summaries().items()]
        self.apply, self.finite = guarded_apply(updates, norms)
        self.summary_op = tf1.summary.merge(summaries)

    def feed(self, batch, targets):
        """The update's feed from a batch of trajectories (by column name) and its targets_inputs."""
        network = self.network
        feed = {network.x: batch["frames"], network.lengths: batch["length"], network.resets: batch["resets"],
                network.state_in.c: batch["c"], network.state_in.h: batch["h"], self.actions: batch["actions"],
                self.behaviour_log_probs: batch["behaviour_log_probs"], self.mask: targets.mask,
                self.rewards: targets.rewards, self.discounts: targets.discounts}
        if self.rewards_int is not None:
            feed.update({self.rewards_int: targets.rewards_int, self.discounts_int: targets.discounts_int,
                         self.given_int: targets.given_int, self.next_values_int: batch["next_episode_value_int"]})
        if self.predictor is not None:
            feed.update(self.predictor.feed_sequences(*unroll_rollouts(batch)))
        return feed


# ---------------------------------------------------------------- the actor and the learner

class Actor:
    """One actor: plays, sends its rollouts as trajectories of rollout_maxlen + 1 frames (one each, or with unrolls
    through an environment's rollouts once they fill one: fill_unrolls), fetches the learner's weights after each
    send."""

    def __init__(self, graph, envs, config, task, env_threads=False):
        self.graph, self.envs, self.config, self.task, self.env_threads = graph, envs, config, task, env_threads
        # its policy in a session of its own (acting.ActingCopy), loaded at each sync; None: it acts through the
        # graph's session on its actor/ copy
        self.copy = (ActingCopy(graph.make_policy, graph.actor_network, config.seed + task, ACTOR_SCOPE)
                     if config.acting_copy else None)
        self.session = None
        self.last_global_step = self.steps_trained = self.updates = self.skipped_updates = 0
        self.timings = Timings()

    def run(self, session, stop_flag, heartbeat, episode_logger):
        """Play until the global step reaches max_global_steps or a stop is asked; then send what is left."""
        graph = self.graph
        sender = session  # sends are never run again on a deadline (see apex.Actor.send)
        self.session = session = AbortRetrySession(session)
        self.last_global_step = int(session.run(graph.global_step))
        self.sync()
        scaler = None
        if graph.predictor is not None:
            graph.predictor.warm_up(session, graph.actor_predictor, self.envs, self.config)
            self.sync()  # the statistics just seeded, into the copy that acts
            scaler = graph.actor_predictor.scaler(self.config, len(self.envs))
        policy = self.copy or graph.actor_network
        through = self.config.unrolls == "through"
        with env_stepper(len(self.envs), self.env_threads) as step_all:
            batches = env_runner(self.envs, policy, session, self.config.rollout_maxlen, episode_logger,
                                 graph.actor_predictor, scaler, self.timings, step_all, behaviour=True,
                                 bootstrap_time_limit=self.config.bootstrap_time_limit,
                                 unroll_frames=self.config.rollout_maxlen + 1 if through else None)
            unrolls = {}  # each environment's rollouts of the unroll it is filling
            for rollouts in batches:
                if graph.merge is not None:
                    self.merge_statistics(session, rollouts)
                full = fill_unrolls(unrolls, rollouts, through)
                if full:
                    self.send(sender, full)
                    with self.timings.phase("sync"):
                        self.sync()
                heartbeat.beat(self, episode_logger.episodes)
                if stop_flag.stop or self.last_global_step >= self.config.max_global_steps:
                    break
        if unrolls and not stop_flag.stop:
            self.send(sender, list(unrolls.values()))  # the unrolls begun, not full: the last steps played

    def merge_statistics(self, session, rollouts):
        """The steps the bonus was fed, into the learner's running statistics (RND's), as A3C's update merges
        them."""
        bonus = self.graph.actor_predictor
        feed = bonus.feed_sequences([rollout.observations + [rollout.last_observation] for rollout in rollouts],
                                    [action for rollout in rollouts for action in rollout.actions])
        feed.update(bonus.update_feed(rollouts))
        session.run(self.graph.merge, feed)

    def send(self, session, unrolls):
        """Unrolls (lists of rollouts) as trajectories into the learner's queue, and their steps into the global
        step, in one session.run (it waits while the queue is full)."""
        graph = self.graph
        steps = sum(len(rollout) for rollouts in unrolls for rollout in rollouts)
        feed = dict(zip(graph.sent, pack(unrolls, graph.columns)))
        feed[graph.steps] = steps
        with self.timings.phase("queue_put"):
            self.last_global_step = int(session.run(graph.send, feed))
        self.steps_trained += steps

    def sync(self):
        """The learner's weights (and the bonus's) into this actor's copies."""
        if self.copy is None:
            self.session.run(self.graph.sync)
        else:
            self.copy.load(self.session.run([self.graph.sync, self.graph.synced_policy])[1])

    def close(self):
        if self.copy is not None:
            self.copy.close()

    def status(self):
        return retried_runs(self.session)


class Learner:
    """The learner: trajectories from the queue, batch_size of them an update; the run's end."""

    def __init__(self, graph, config, writer, reward_clip=None):
        self.graph, self.config, self.writer, self.reward_clip = graph, config, writer, reward_clip
        self.intrinsic = None
        if graph.network.value_int is not None:
            self.intrinsic = IntrinsicStream(config.gamma_int, config.ext_coef, config.int_coef,
                                             graph.predictor.episodic)
        self.names = [column.name for column in graph.columns]
        self.pending = []  # received trajectories' columns, not trained on yet
        self.session = None
        self.last_global_step = self.steps_trained = self.updates = 0
        self.nonfinite = NonFiniteGuard()
        self.timings = Timings()
        self.since = (time.time(), 0)  # (time, steps trained) of the last fps summary

    @property
    def skipped_updates(self):
        return self.nonfinite.skipped

    def run(self, session, stop_flag, heartbeat, alive=lambda: None):
        """Receive and train until the global step reaches max_global_steps or a stop is asked. `alive()` raises
        when an actor of this process has failed."""
        self.session = session = AbortRetrySession(session)
        while not stop_flag.stop and self.last_global_step < self.config.max_global_steps:
            alive()
            if not self.receive(session):
                time.sleep(RECEIVE_IDLE_SECS)
            heartbeat.beat(self, 0)

    def waiting(self):
        return sum(len(columns[0]) for columns in self.pending)

    def receive(self, session):
        """What the queue holds, batch_size trajectories at most, and the updates they complete; the number
        received."""
        with self.timings.phase("queue_get"):
            received, step = session.run([self.graph.received, self.graph.global_step])
        self.last_global_step = int(step)
        if len(received[0]):
            self.pending.append(received)
        self.train_ready(session)
        return len(received[0])

    def train_ready(self, session, at_least=None):
        """Updates on every full batch received (with `at_least`, on batches of that many or more); how many."""
        made = 0
        while self.waiting() >= (at_least or self.config.batch_size):
            columns = [np.concatenate(parts) for parts in zip(*self.pending)]
            size = min(self.config.batch_size, len(columns[0]))
            self.pending = [[column[size:] for column in columns]] if len(columns[0]) > size else []
            self.train(session, {name: column[:size] for name, column in zip(self.names, columns)})
            made += 1
        return made

    def train(self, session, batch):
        """One update on `batch` (trajectories' arrays by column name)."""
        learning = self.graph.learning
        with self.timings.phase("advantages"):  # V-trace's inputs
            targets = targets_inputs(batch, self.config, self.reward_clip, self.intrinsic)
            feed = learning.feed(batch, targets)
        summarise = self.updates % self.config.summary_every_updates == 0
        fetches = [learning.apply, learning.finite, *([learning.summary_op] if summarise else [])]
        with self.timings.phase("train"):
            results = session.run(fetches, feed)
        self.updates += 1
        steps = int(batch["mask"].sum())
        self.steps_trained += steps
        self.nonfinite.count(bool(results[1]), self.updates, {"frames": batch["frames"], "rewards": targets.rewards})
        if summarise:
            self.writer.add_summary(results[2], self.last_global_step)
            self.write_rates(batch, targets)

    def write_rates(self, batch, targets):
        """diagnostics/fps (steps trained a second since the last summary) and model/bonus."""
        now = time.time()
        summary = tf1.Summary()
        summary.value.add(tag="diagnostics/fps",
                          simple_value=(self.steps_trained - self.since[1]) / max(now - self.since[0], 1e-6))
        summary.value.add(tag="diagnostics/skipped_updates", simple_value=self.skipped_updates)
        if self.graph.predictor is not None:
            summary.value.add(tag="model/bonus", simple_value=float(batch["bonuses"].sum() / targets.mask.sum()))
        self.writer.add_summary(summary, self.last_global_step)
        self.writer.flush()
        self.since = (now, self.steps_trained)

    def finish(self, actors, stop_flag, heartbeat, alive=lambda: None):
        """Serve the `actors` until each has finished by itself (FINISH_GRACE_SECS at most), so that no actor's last
        send waits on a full queue; then train on what they sent last, the last batch as large as it comes."""
        session = self.session
        deadline = time.time() + FINISH_GRACE_SECS
        while time.time() < deadline and session.run(self.graph.finished_actors) < actors:
            alive()
            if not self.receive(session):
                time.sleep(RECEIVE_IDLE_SECS * 20)
            heartbeat.beat(self, 0, state="finishing")
        while self.receive(session):
            pass
        self.train_ready(session, at_least=1)

    def status(self):
        return {"trajectories_waiting": self.waiting(), **retried_runs(self.session)}


# ---------------------------------------------------------------- the tasks: on the cluster, or in one process

def devices(job, task):
    learner = f"/job:{roles.LEARNER.job}/task:0/cpu:0"
    return learner, (None if job == roles.LEARNER.job else f"/job:{job}/task:{task}/cpu:0")


def actor_envs(args, config, task, first=None):
    """Actor `task`'s environments, seeded apart from every other actor's: seed + task K + k."""
    made = ([first] if first is not None else []) + [runs.make_env(args) for _ in
                                                      range(config.envs_per_worker - (first is not None))]
    for index, env in enumerate(made):
        env.reset(seed=config.seed + task * config.envs_per_worker + index)
        env.action_space.seed(config.seed + task * config.envs_per_worker + index)
    return made


def build_graph(args, env, config, learner_device=None, actor_device=None, acts=True):
    try:
        head = model.choose_head(env.observation_space.shape, args.design_head)
        return ImpalaGraph(env, config, head, args.unsup, learner_device, actor_device, acts)
    except ValueError as error:  # an impossible head/observation combination
        raise UsageError(str(error)) from None


def reward_clip(args, config):
    """The clip of the rewards where the run clips them (envs.clips_rewards, as A3C's), else None."""
    return config.reward_clip if envs.clips_rewards(args.env_id, args.env_wrap) else None


def run_task(args):
    """An IMPALA learner or actor (worker.py --job-name learner|actor): the algorithms' table's entry point. The
    chief (the learner) initialises or restores the variables and checkpoints them; an actor waits for it."""
    logdir.import_tf()
    job, task, is_learner, spec, first, config = runs.start_task(args)
    stop_flag = sessions.StopFlag()
    sessions.seed_task(tf1, config.seed + task)
    graph = build_graph(args, first, config, *devices(job, task), acts=not is_learner)
    played = [] if is_learner else actor_envs(args, config, task, first)
    if is_learner:
        first.close()  # the learner plays no game: the first environment told it the shapes

    def learn(session, writer, heartbeat):
        trainer = Learner(graph, config, writer, reward_clip(args, config))
        trainer.run(session, stop_flag, heartbeat)
        if not stop_flag.stop:
            trainer.finish(len(spec[roles.ACTOR.job]), stop_flag, heartbeat)
        return trainer

    acting.run_learner_or_actor(
        tf1, args, spec, config, stop_flag, played, graph.shared_variables, graph.global_step, graph.finish, learn,
        lambda writer, episode_logger: Actor(graph, played, config, task,
                                             envs.steps_in_threads(args.env_id) and len(played) > 1),
        local_variables=graph.actor_variables)


class ActorThread(threading.Thread):
    """The one-process run's actor: Actor.run in a thread of its own; a failure is kept for the learner to raise."""

    def __init__(self, actor, session, stop_flag, heartbeat, episode_logger):
        super().__init__(name="actor", daemon=True)
        self.actor, self.arguments = actor, (session, stop_flag, heartbeat, episode_logger)
        self.error = None

    def run(self):
        stop_flag = self.arguments[1]
        try:
            self.actor.run(*self.arguments)
            if not stop_flag.stop:
                self.actor.session.run(self.actor.graph.finish)
        except Exception as error:  # noqa: BLE001 -- handed to the learner, which raises it
            if stop_flag.stop:
                return  # its send was cancelled as the run stopped
            logger.exception("actor thread failed")
            self.error = error

    def check(self):
        if self.error is not None:
            raise RuntimeError(f"the actor failed: {type(self.error).__name__}: {self.error}") from self.error


class QuietBeat:
    """The one-process actor's heartbeat: the run's one heartbeat is the learner's."""

    def beat(self, *args, **kwargs):
        pass


class ProgressBeat:
    """The one-process learner's heartbeat, with the episodes its actor played, and the progress bar."""

    def __init__(self, heartbeat, episode_logger, bar):
        self.heartbeat, self.episode_logger, self.bar = heartbeat, episode_logger, bar

    def beat(self, trainer, episodes, **kwargs):
        self.heartbeat.beat(trainer, self.episode_logger.episodes, **kwargs)
        self.bar.update(max(0, trainer.last_global_step - self.bar.n))


def run_local(args):
    """`train.py --algo impala --num-workers 0`: the learner and one actor in this process (the actor in a thread),
    the same Learner and Actor as on the cluster, a progress bar of the global step; exit status."""
    from tqdm import tqdm

    logging.basicConfig(level=logging.INFO, format="%(asctime)s impala %(levelname)s %(message)s")
    logdir.import_tf()
    stop_flag = sessions.StopFlag()
    first = runs.make_env(args)
    config = runs.effective_config(args, first)
    sessions.seed_task(tf1, config.seed)
    graph = build_graph(args, first, config)
    played = actor_envs(args, config, 0, first)
    train_dir = logdir.checkpoints_dir(args.log_dir)
    latest = sessions.check_checkpoint(tf1, train_dir, graph.shared_variables)
    logger.info("resuming from %s" % latest if latest else f"no checkpoint in {train_dir}: starting fresh")
    writer = tf1.summary.FileWriter(logdir.events_dir(args.log_dir, 0))
    supervisor, saver = sessions.managed_supervisor(
        tf1, True, train_dir, graph.shared_variables, graph.global_step, writer, config.checkpoint_secs,
        local_variables=graph.actor_variables, save_summaries=False)
    heartbeat = sessions.Heartbeat(args.log_dir, 0, config.max_global_steps, job=roles.LOCAL.job)
    threads = (args.threads,) if args.threads else sessions.TASK_THREADS
    learner = Learner(graph, config, writer, reward_clip(args, config))
    actor = Actor(graph, played, config, 0, envs.steps_in_threads(args.env_id) and len(played) > 1)
    episode_logger = EpisodeLogger(args.log_dir, 0, writer, lambda: actor.last_global_step)
    try:
        with supervisor.managed_session("", config=sessions.local_session_config(*threads)) as session:
            stop_flag.training = True
            start = int(session.run(graph.global_step))
            episode_logger.resume_from(start)
            thread = ActorThread(actor, session, stop_flag, QuietBeat(), episode_logger)
            thread.start()
            with tqdm(total=config.max_global_steps, initial=start, unit="step", dynamic_ncols=True) as bar:
                beating = ProgressBeat(heartbeat, episode_logger, bar)
                learner.run(session, stop_flag, beating, thread.check)
                if not stop_flag.stop:
                    learner.finish(1, stop_flag, beating, thread.check)
            stop_flag.stop = True  # the actor leaves at its next batch ...
            session.run(graph.close_queue)  # ... or now, if it waits on a full queue
            thread.join(timeout=FINISH_GRACE_SECS)
            thread.check()
            heartbeat.beat(learner, episode_logger.episodes, state="stopping", force=True)
            saver.save(session, supervisor.save_path, global_step=graph.global_step)
            heartbeat.beat(learner, episode_logger.episodes, state="stopped", force=True)
    finally:
        episode_logger.close()
        actor.close()
        writer.close()
        for env in played:
            env.close()
    print(f"run over: global step {learner.last_global_step:,} (episodes in {logdir.episodes_csv(args.log_dir, 0)})",
          flush=True)
    return 0
