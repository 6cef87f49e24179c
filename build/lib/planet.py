"""`--algo planet`: PlaNet's world model (Hafner et al. 2019), in graph mode, and its one-process run.

The parts, each tested by hand: the 5-bit quantisation of images and its inverse, the diagonal Gaussians' KL and
free nats of the model's loss, the Gaussian log-likelihood of its observation and reward heads, the cross-entropy
method that plans in the model's latent space, the recurrent state-space model (RSSM) and the world model around
it. Distributions are written out here, not taken from TensorFlow Probability, whose releases no longer follow
TensorFlow's.

The run (`train.py --algo planet`, one process): a few episodes of random actions, then, after each episode, the
world model's updates on sequences of the stored episodes (sequences.py: PlaNet's recent/cache mix) and an episode
played by the planner from the filtered latent state, with exploration noise; evaluations without noise; every
episode in `train_episodes/` (evaluations' in `test_episodes/`), as the replay learners store them.
"""
import logging
import math
import os
import time
import types

import numpy as np
import tensorflow as tf

import acting
import evaluation
import logdir
import runs
import sequences
import cluster as roles
from acting import EpisodeLogger, NetworkCopy
from cluster import LOCAL
from constants import UsageError
from replay import stored_dtype, to_stored
from offpolicy import Acting, STATS_WINDOW, EVAL_MAX_STEPS, DEFAULT_EVAL_EVERY, episode_arrays, new_record, record_step
from sessions import DeferredInterrupt, Heartbeat, StopFlag, Timings, check_checkpoint, local_session_config
from sessions import pretrain_init, restored_session, seed_task

tf1 = tf.compat.v1
logger = logging.getLogger(__name__)

IMAGE_BITS = 5  # PlaNet quantises its 64x64x3 frames to 5 bits a channel
FREE_NATS = 3.0  # the KL below this many nats a step costs nothing: the model keeps that much information free
# The planner at PlaNet's setting: candidates of `horizon` actions, refit `iterations` times to the best `top`
CEM = {"horizon": 12, "iterations": 10, "candidates": 1000, "top": 100}


def quantise(images, bits=IMAGE_BITS, noise=None):
    """uint8 images [..., H, W, C] as the model sees them: `bits` bits a channel, scaled into [-0.5, 0.5), with
    uniform noise across each bin (`noise`, [0, 1) values of the images' shape; none: the bin's lower edge), so
    that the observation model's density is of a continuous variable (PlaNet's preprocessing)."""
    bins = 2 ** bits
    levels = tf.floor(tf.cast(images, tf.float32) / 2 ** (8 - bits))  # 0 .. bins - 1
    if noise is not None:
        levels += noise
    return levels / bins - 0.5


def model_input(observations, images, noise):
    """Stored observations as the model takes them: vectors as they are; uint8 images quantised, with uniform noise
    across each bin while training (`noise` True) and at the bin's centre while acting."""
    if not images:
        return observations
    return quantise(observations, noise=tf.random.uniform(tf.shape(observations)) if noise else 0.5)


def dequantise(images, bits=IMAGE_BITS):
    """The inverse of `quantise` back to uint8: each value's bin, at the bin's lower edge in 0..255."""
    bins = 2 ** bits
    levels = tf.clip_by_value(tf.floor(bins * (images + 0.5)), 0, bins - 1)
    return tf.cast(levels * (256 // bins), tf.uint8)


def diagonal_gaussian_kl(mean, stddev, other_mean, other_stddev):
    """KL(N(mean, stddev^2) || N(other_mean, other_stddev^2)) of diagonal Gaussians, summed over the last axis:
    log(s2 / s1) + (s1^2 + (m1 - m2)^2) / (2 s2^2) - 1/2 for each dimension."""
    variance, other_variance = tf.square(stddev), tf.square(other_stddev)
    return tf.reduce_sum(tf.math.log(other_stddev / stddev)
                         + (variance + tf.square(mean - other_mean)) / (2.0 * other_variance) - 0.5, axis=-1)


def free_nats(kl, nats=FREE_NATS):
    """The KL term of each step as PlaNet's loss takes it: max(0, KL - nats), so that no gradient pushes the
    posterior toward the prior while they differ by less than `nats`."""
    return tf.maximum(0.0, kl - nats)


def gaussian_log_likelihood(value, mean, stddev=1.0, axes=(-1,)):
    """log N(value; mean, stddev^2), summed over `axes`: the observation and reward heads' unit-variance density."""
    stddev = tf.broadcast_to(tf.cast(stddev, mean.dtype), tf.shape(mean))
    log_density = (-0.5 * tf.square((value - mean) / stddev) - tf.math.log(stddev)
                   - 0.5 * math.log(2.0 * math.pi))
    return tf.reduce_sum(log_density, axis=list(axes))


def cross_entropy_method(returns_of, batch, horizon, action_size, candidates, iterations, top, low=-1.0, high=1.0,
                         seed=None):
    """The mean of the action sequences the cross-entropy method settles on, [batch, horizon, action_size]: from
    N(0, 1) over every step and dimension, draw `candidates` sequences (clipped to [low, high]), score them with
    `returns_of` (actions [batch x candidates, horizon, action_size] -> returns [batch x candidates], the
    candidates of one batch row together), and refit the mean and standard deviation to the `top` best; `iterations`
    times, all in the graph (no gradient flows through the planning)."""

    def refit(belief, _):
        mean, stddev = belief  # [batch, horizon, action_size] each
        noise = tf.random.normal([batch, candidates, horizon, action_size], seed=seed)
        actions = tf.clip_by_value(mean[:, None] + stddev[:, None] * noise, low, high)
        scores = tf.reshape(returns_of(tf.reshape(actions, [batch * candidates, horizon, action_size])),
                            [batch, candidates])
        _, best = tf.math.top_k(scores, k=top, sorted=False)  # [batch, top]
        elite = tf.gather(actions, best, batch_dims=1)  # [batch, top, horizon, action_size]
        mean, variance = tf.nn.moments(elite, axes=[1])
        return tf.stop_gradient(mean), tf.stop_gradient(tf.sqrt(variance + 1e-6))

    start = (tf.zeros([batch, horizon, action_size]), tf.ones([batch, horizon, action_size]))
    if iterations < 1:
        return start[0]
    means, _ = tf.scan(refit, tf.range(iterations), initializer=start, back_prop=False)
    return means[-1]


# ---------------------------------------------------------------- the recurrent state-space model

STATE_SIZE, BELIEF_SIZE, HIDDEN_SIZE, MIN_STDDEV = 30, 200, 200, 0.1  # PlaNet's RSSM
SCOPE = "world_model"  # every variable of the model: --restore-include 'world_model/.*' loads it alone


def dense(x, size, name, activation=None):
    """A fully connected layer with Glorot-uniform weights, in the current variable scope."""
    with tf1.variable_scope(name):
        weights = tf1.get_variable("w", [int(x.shape[-1]), size], initializer=tf1.glorot_uniform_initializer())
        bias = tf1.get_variable("b", [size], initializer=tf1.zeros_initializer())
        y = tf.matmul(x, weights) + bias
        return activation(y) if activation else y


def gru(inputs, state, size, name):
    """One step of a gated recurrent unit (Cho et al. 2014): the reset gate r, the update gate u,
    h' = u h + (1 - u) tanh(W [x, r h])."""
    with tf1.variable_scope(name):
        reset, update = tf.split(dense(tf.concat([inputs, state], -1), 2 * size, "gates", tf.sigmoid), 2, axis=-1)
        candidate = dense(tf.concat([inputs, reset * state], -1), size, "candidate", tf.tanh)
        return update * state + (1.0 - update) * candidate


class RSSM:
    """PlaNet's recurrent state-space model: a deterministic belief h_t (a GRU) and a stochastic state s_t, a diagonal
    Gaussian. The prior p(s_t | h_t), h_t = f(h_t-1, s_t-1, a_t-1), imagines without observations; the posterior
    q(s_t | h_t, e_t) also sees the observation's embedding e_t. A state is a dict of `mean`, `stddev`, `sample`
    ([batch, state_size] each) and `belief` ([batch, belief_size]); its features are [s_t, h_t]."""

    def __init__(self, state_size=STATE_SIZE, belief_size=BELIEF_SIZE, hidden_size=HIDDEN_SIZE,
                 min_stddev=MIN_STDDEV, scope=f"{SCOPE}/rssm"):
        self.state_size, self.belief_size, self.hidden_size = state_size, belief_size, hidden_size
        self.min_stddev, self.scope = min_stddev, scope

    def initial(self, batch):
        zeros = tf.zeros([batch, self.state_size])
        return {"mean": zeros, "stddev": zeros, "sample": zeros, "belief": tf.zeros([batch, self.belief_size])}

    @staticmethod
    def features(state):
        return tf.concat([state["sample"], state["belief"]], -1)

    def _gaussian(self, hidden, name):
        mean = dense(hidden, self.state_size, f"{name}_mean")
        stddev = dense(hidden, self.state_size, f"{name}_stddev", tf.nn.softplus) + self.min_stddev
        return {"mean": mean, "stddev": stddev, "sample": mean + stddev * tf.random.normal(tf.shape(mean))}

    def prior(self, state, action):
        """p(s_t | h_t): the next state imagined from `state` and the action taken in it."""
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE):
            hidden = dense(tf.concat([state["sample"], action], -1), self.hidden_size, "transition_in", tf.nn.elu)
            belief = gru(hidden, state["belief"], self.belief_size, "belief")
            hidden = dense(belief, self.hidden_size, "transition_out", tf.nn.elu)
            return {**self._gaussian(hidden, "prior"), "belief": belief}

    def posterior(self, state, action, embedding):
        """(the prior, q(s_t | h_t, e_t)): the next state given its observation's embedding too."""
        prior = self.prior(state, action)
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE):
            hidden = dense(tf.concat([prior["belief"], embedding], -1), self.hidden_size, "posterior_in", tf.nn.elu)
            return prior, {**self._gaussian(hidden, "posterior"), "belief": prior["belief"]}

    def observe(self, embeddings, actions, state=None):
        """(priors, posteriors) of a batch of sequences, [batch, time, ...] each: step t takes a_t, the action that
        led to o_t (the stored episodes' row t: the first row's is zero), and e_t."""
        batch = tf.shape(embeddings)[0]
        state = self.initial(batch) if state is None else state

        def step(carried, inputs):
            _, posterior = carried
            return self.posterior(posterior, *inputs)

        time_major = (tf.transpose(actions, [1, 0, 2]), tf.transpose(embeddings, [1, 0, 2]))
        priors, posteriors = tf.scan(step, time_major, initializer=(state, state))
        return batch_major(priors), batch_major(posteriors)

    def imagine(self, state, actions):
        """The prior states [batch, horizon, ...] that `actions` [batch, horizon, action_size] lead to from `state`."""
        priors = tf.scan(lambda carried, action: self.prior(carried, action), tf.transpose(actions, [1, 0, 2]),
                         initializer=state)
        return batch_major(priors)


def batch_major(states):
    """A scanned state's [time, batch, ...] parts as [batch, time, ...]."""
    return {key: tf.transpose(value, [1, 0] + list(range(2, value.shape.ndims))) for key, value in states.items()}


# ---------------------------------------------------------------- the world model: encoder, decoder, reward, loss

REWARD_SCALE = 10.0  # the reward's log-likelihood weighs this much beside the observations' (PlaNet's)
LEARNING_RATE, ADAM_EPSILON, GRADIENT_CLIP = 1e-3, 1e-4, 1000.0  # PlaNet's optimiser


IMAGE_SHAPE = (64, 64, 3)  # PlaNet's frames: what its convolutions take and its deconvolutions make
# PlaNet's convolutional encoder: (filters in multiples of the depth, kernel) of 4 layers of stride 2, valid padding,
# ReLU: 64 -> 31 -> 14 -> 6 -> 2, flattened to 32 x depth (1,024 at PlaNet's depth of 32); and its decoder: the
# features to 32 x depth, then transposed convolutions to 5 -> 13 -> 30 -> 64 (3 channels, the last)
CNN_DEPTH = 32
ENCODER_LAYERS = ((1, 4), (2, 4), (4, 4), (8, 4))
DECODER_LAYERS = ((4, 5), (2, 5), (1, 6))
DECODER_OUTPUT_KERNEL = 6  # the last transposed convolution's, to the frame's 3 channels without an activation
EMBEDDING_MULTIPLE = 32  # the encoder's 2 x 2 x 8 depth outputs, and the decoder's first layer


def conv(x, filters, kernel, name, activation=tf.nn.relu):
    """A stride-2 convolution with valid padding, Glorot-uniform weights."""
    with tf1.variable_scope(name):
        weights = tf1.get_variable("w", [kernel, kernel, int(x.shape[-1]), filters],
                                   initializer=tf1.glorot_uniform_initializer())
        bias = tf1.get_variable("b", [filters], initializer=tf1.zeros_initializer())
        return activation(tf.nn.conv2d(x, weights, 2, "VALID") + bias)


def deconv(x, filters, kernel, name, activation=tf.nn.relu):
    """A stride-2 transposed convolution with valid padding: side s to 2 s + kernel - 2."""
    with tf1.variable_scope(name):
        weights = tf1.get_variable("w", [kernel, kernel, filters, int(x.shape[-1])],
                                   initializer=tf1.glorot_uniform_initializer())
        bias = tf1.get_variable("b", [filters], initializer=tf1.zeros_initializer())
        side = 2 * int(x.shape[1]) + kernel - 2
        shape = tf.stack([tf.shape(x)[0], side, side, filters])
        y = tf.nn.conv2d_transpose(x, weights, shape, 2, "VALID") + bias
        y.set_shape([None, side, side, filters])
        return activation(y) if activation else y


class WorldModel:
    """The RSSM with its observation's encoder and decoder and a reward head: MLPs of `hidden_size` for vector
    observations, PlaNet's convolutions for 64x64x3 images (given quantised, `quantise`); its loss,
    -log p(o_t | s_t, h_t) - REWARD_SCALE log p(r_t | s_t, h_t) + max(0, KL(q || p) - free nats), each a mean over the
    batch's steps (the observation's log-likelihood summed over its dimensions); its train op. The rewards' density
    is a Gaussian of unit variance, the observations' one of `observation_stddev` (PlaNet's 1)."""

    def __init__(self, observation_shape, action_size, rssm=None, hidden_size=HIDDEN_SIZE, scope=SCOPE,
                 depth=CNN_DEPTH, ensemble_size=0, observation_stddev=1.0):
        shape = (observation_shape,) if isinstance(observation_shape, int) else tuple(observation_shape)
        if len(shape) not in (1, 3) or (len(shape) == 3 and shape != IMAGE_SHAPE):
            raise ValueError(f"the world model takes vectors or {IMAGE_SHAPE} images, not {shape}")
        self.observation_shape, self.images = shape, len(shape) == 3
        self.observation_size = shape[0] if not self.images else None
        self.action_size, self.hidden_size, self.scope, self.depth = action_size, hidden_size, scope, depth
        self.rssm = rssm or RSSM(scope=f"{scope}/rssm")
        self.ensemble_size = ensemble_size  # Plan2Explore's one-step predictors (none without it)
        self.observation_stddev = observation_stddev

    def _mlp(self, x, output_size, name):
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE), tf1.variable_scope(name):
            for layer in range(2):
                x = dense(x, self.hidden_size, f"hidden_{layer}", tf.nn.elu)
            return dense(x, output_size, "out")

    def encode(self, observations):
        """The embeddings e_t of observations [..., *observation_shape] (any leading axes: [batch, time] or [batch])."""
        if not self.images:
            return self._mlp(observations, self.hidden_size, "encoder")
        leading = tf.shape(observations)[:-3]
        x = tf.reshape(observations, [-1, *IMAGE_SHAPE])
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE), tf1.variable_scope("encoder"):
            for index, (multiple, kernel) in enumerate(ENCODER_LAYERS):
                x = conv(x, multiple * self.depth, kernel, f"conv_{index}")
        return tf.reshape(x, tf.concat([leading, [int(np.prod(x.shape[1:]))]], 0))

    def decode(self, features):
        """The observations' means from features [..., features]."""
        if not self.images:
            return self._mlp(features, self.observation_size, "decoder")
        leading = tf.shape(features)[:-1]
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE), tf1.variable_scope("decoder"):
            size = EMBEDDING_MULTIPLE * self.depth
            x = tf.reshape(dense(tf.reshape(features, [-1, int(features.shape[-1])]), size, "in"), [-1, 1, 1, size])
            for index, (multiple, kernel) in enumerate(DECODER_LAYERS):
                x = deconv(x, multiple * self.depth, kernel, f"deconv_{index}")
            x = deconv(x, IMAGE_SHAPE[-1], DECODER_OUTPUT_KERNEL, f"deconv_{len(DECODER_LAYERS)}", None)
        return tf.reshape(x, tf.concat([leading, IMAGE_SHAPE], 0))

    def reward(self, features):
        return self._mlp(features, 1, "reward")[..., 0]

    def losses(self, observations, actions, rewards, nats=FREE_NATS, reward_scale=REWARD_SCALE):
        """{name: scalar} of a batch of sequences [batch, time, ...] as the stored episodes give them (row t: o_t, the
        action that led to it, the reward it brought), and the posteriors."""
        embeddings = self.encode(observations)
        priors, posteriors = self.rssm.observe(embeddings, actions)
        features = self.rssm.features(posteriors)
        event = [-3, -2, -1] if self.images else [-1]
        observation_ll = tf.reduce_mean(gaussian_log_likelihood(observations, self.decode(features),
                                                                self.observation_stddev, axes=event))
        reward_ll = tf.reduce_mean(gaussian_log_likelihood(rewards, self.reward(features), axes=()))
        kl = diagonal_gaussian_kl(posteriors["mean"], posteriors["stddev"], priors["mean"], priors["stddev"])
        divergence = tf.reduce_mean(free_nats(kl, nats))
        losses = {"observation_ll": observation_ll, "reward_ll": reward_ll, "kl": tf.reduce_mean(kl),
                  "divergence": divergence, "loss": -observation_ll - reward_scale * reward_ll + divergence}
        if self.ensemble_size:  # from the features of o_t and a_t+1 to e_t+1; no gradient into the model
            predictions = self.ensemble(tf.stop_gradient(features[:, :-1]), actions[:, 1:])  # [K, B, T - 1, E]
            target = tf.stop_gradient(embeddings[:, 1:])
            losses["ensemble_loss"] = tf.reduce_mean(0.5 * tf.reduce_sum(tf.square(predictions - target), -1))
            losses["loss"] += losses["ensemble_loss"]
        return losses, posteriors

    def ensemble(self, features, actions):
        """Plan2Explore's predictions of the next observation's embedding from [s_t, h_t, a_t+1], one per model of
        the ensemble: [K, ..., embedding] of features [..., F] and actions [..., A]."""
        inputs = tf.concat([features, actions], -1)
        size = EMBEDDING_MULTIPLE * self.depth if self.images else self.hidden_size
        return tf.stack([self._mlp(inputs, size, f"ensemble_{index}") for index in range(self.ensemble_size)])

    def novelty(self, features, actions):
        """Plan2Explore's intrinsic reward of each step [...]: the ensemble's disagreement, the variance of its
        predictions summed over the embedding (curiosity.ensemble_variance_per_step)."""
        from curiosity import ensemble_variance_per_step

        leading = tf.shape(features)[:-1]
        predictions = self.ensemble(features, actions)
        flat = tf.reshape(predictions, [self.ensemble_size, -1, int(predictions.shape[-1])])
        return tf.reshape(ensemble_variance_per_step(flat), leading)

    def variables(self):
        return [v for v in tf1.trainable_variables() if v.name.startswith(f"{self.scope}/")]

    def train_op(self, loss, learning_rate=LEARNING_RATE, epsilon=ADAM_EPSILON, clip=GRADIENT_CLIP):
        """Adam on the model's variables, the gradient clipped at global norm `clip`; (the op, the norm)."""
        variables = self.variables()
        gradients, norm = tf.clip_by_global_norm(tf.gradients(loss, variables), clip)
        optimiser = tf1.train.AdamOptimizer(learning_rate, epsilon=epsilon)
        return optimiser.apply_gradients(zip(gradients, variables)), norm

    def plan(self, state, horizon, candidates, iterations, top, low=-1.0, high=1.0, explore=False):
        """The CEM's action sequence from each of `state`'s batch rows [batch, horizon, action_size]: candidates scored
        by the rewards the model predicts along the prior trajectory they imagine (no observation)."""
        batch = tf.shape(state["belief"])[0]

        score = self.imagined_novelty if explore else self.imagined_return

        def returns_of(actions):
            return score({key: tf.repeat(value, candidates, axis=0) for key, value in state.items()}, actions)

        return cross_entropy_method(returns_of, batch, horizon, self.action_size, candidates, iterations, top, low,
                                    high)

    def imagined_return(self, state, actions):
        """The rewards the model predicts, summed, along the prior trajectory that `actions` [batch, horizon,
        action_size] imagine from `state`: [batch]."""
        return tf.reduce_sum(self.reward(self.rssm.features(self.rssm.imagine(state, actions))), axis=1)

    def imagined_novelty(self, state, actions):
        """Plan2Explore's return of the same trajectory: the novelty of each imagined step, from the state it leaves
        and its action, summed: [batch]."""
        priors = self.rssm.features(self.rssm.imagine(state, actions))  # [batch, horizon, F]
        leaving = tf.concat([self.rssm.features(state)[:, None], priors[:, :-1]], 1)
        return tf.reduce_sum(self.novelty(leaving, actions), axis=1)


# ---------------------------------------------------------------- acting: the filter and the planner

class ActionRepeat:
    """An environment whose step holds the action for `repeat` of the game's steps, the rewards summed, stopping at
    the episode's end; `env_steps` counts the game's steps taken (gymnasium has no such wrapper)."""

    def __init__(self, env, repeat):
        self.env, self.repeat, self.env_steps = env, repeat, 0

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, action):
        total, game = 0.0, 0.0
        for _ in range(self.repeat):
            observation, reward, terminated, truncated, info = self.env.step(action)
            total += reward
            game += info.get("env_reward", reward)
            self.env_steps += 1
            if terminated or truncated:
                break
        return observation, total, terminated, truncated, {**info, "env_reward": game}  # the game's, summed too


def to_bounds(actions, space):
    """Actions in [-1, 1], as the planner and the stored episodes keep them, in the space's [low, high]."""
    low, high = space.low.astype(np.float32), space.high.astype(np.float32)
    return low + (np.asarray(actions, np.float32) + 1.0) * 0.5 * (high - low)


class Filter:
    """The model's acting graph for `count` environments: each step the posterior of the new observation given the
    state and the action before it, from which a behaviour (Planner, LatentActor: `_decide`) chooses the action.
    Each environment's state starts from zero with its episode (`reset`)."""

    horizon = None  # the steps a decision looks ahead (plan_check), if it plans

    def __init__(self, model, count):
        rssm, self.count, self.action_size = model.rssm, count, model.action_size
        sizes = {"mean": rssm.state_size, "stddev": rssm.state_size, "sample": rssm.state_size,
                 "belief": rssm.belief_size}
        self.inputs = {key: tf1.placeholder(tf.float32, [None, size], f"filter_{key}") for key, size in sizes.items()}
        self.previous_action = tf1.placeholder(tf.float32, [None, model.action_size], "filter_action")
        self.dtype = np.uint8 if model.images else np.float32  # what the stored observations are
        self.observation = tf1.placeholder(self.dtype, [None, *model.observation_shape], "filter_observation")
        embedding = model.encode(model_input(self.observation, model.images, noise=False))
        _, self.posterior = rssm.posterior(self.inputs, self.previous_action, embedding)
        self.features = rssm.features(self.posterior)
        self.state = {key: np.zeros((count, size), np.float32) for key, size in sizes.items()}
        self.last_action = np.zeros((count, model.action_size), np.float32)

    def reset(self, index):
        for value in self.state.values():
            value[index] = 0.0
        self.last_action[index] = 0.0

    def act(self, session, observations, rng, noise=0.0):
        """The actions in [-1, 1] for stored `observations` [count, *observation_shape], with Gaussian `noise`
        added."""
        feed = {self.inputs[key]: value for key, value in self.state.items()}
        feed.update({self.previous_action: self.last_action, self.observation: np.asarray(observations, self.dtype)})
        posterior, actions = self._decide(session, feed, rng, noise)
        self.state = {key: np.asarray(value) for key, value in posterior.items()}
        self.last_action = np.clip(actions, -1.0, 1.0).astype(np.float32)
        return self.last_action.copy()

    def took(self, actions):
        """Actions taken without the behaviour (the random episodes'): the filter's next step takes them."""
        self.last_action = np.asarray(actions, np.float32).reshape(self.last_action.shape)


class Planner(Filter):
    """The cross-entropy method's plan from each filtered state, whose first action acts (with Gaussian `noise`)."""

    def __init__(self, model, count, config, explore=False):
        super().__init__(model, count)
        self.explore = explore  # Plan2Explore's novelty in place of the reward
        plan = model.plan(self.posterior, config.cem_horizon, config.cem_candidates, config.cem_iterations,
                          config.cem_top, explore=explore)
        self.first_action, self.horizon = plan[:, 0], config.cem_horizon
        score = model.imagined_novelty if explore else model.imagined_return
        self.predicted_return = score(self.posterior, plan)  # what the model expects of its plan
        self.predicted = np.zeros(count, np.float32)  # the last decision's, each environment's

    def _decide(self, session, feed, rng, noise):
        posterior, actions, self.predicted = session.run([self.posterior, self.first_action, self.predicted_return],
                                                         feed)
        if noise:
            actions = actions + noise * rng.normal(size=actions.shape)
        return posterior, actions


LATENT_ACTOR = "sac"  # the `behaviour` whose actor is SAC on the latent state (a value of the hyper-parameter, not --algo)
LATENT_SCOPE = "latent_sac"  # the latent actor's variables: fresh beside a world model restored from another run


def latent_sac(model, config):
    """SAC's actor, twin critics and temperature (sac.SAC) on the model's features [s_t, h_t], in LATENT_SCOPE; its
    actions in [-1, 1], as the stored episodes keep them."""
    from gymnasium import spaces

    from sac import SAC

    size = model.rssm.state_size + model.rssm.belief_size
    with tf1.variable_scope(LATENT_SCOPE):
        return SAC((size,), spaces.Box(-1.0, 1.0, (model.action_size,), np.float32), config, "mlp")


class LatentActor(Filter):
    """SAC on the world model's latent state (the source system's extension of PlaNet): the actor's action from the
    filtered state's features, no planning; a sample of its policy while collecting (`noise` > 0), its mean action
    without noise."""

    def __init__(self, model, count, sac):
        super().__init__(model, count)
        self.sac = sac

    def _decide(self, session, feed, rng, noise):
        posterior, features = session.run([self.posterior, self.features], feed)
        _, actions = self.sac.act(session, features, rng, greedy=not noise)
        return posterior, actions


def latent_transitions(features, batch, gamma):
    """SAC's batch from a batch of sequences and their posterior features [B, T, F]: (f_t, a_t+1, r_t+1, f_t+1)
    along each sequence (row t+1 holds the action that led from o_t to o_t+1 and its reward), discounted by gamma
    unless the episode ended there; [B x (T - 1), ...] each."""
    def flat(value):
        return np.asarray(value).reshape(-1, *np.shape(value)[2:])

    return {"observations": flat(features[:, :-1]), "next_observations": flat(features[:, 1:]),
            "actions": flat(batch["action"][:, 1:]), "returns": flat(batch["reward"][:, 1:]),
            "discounts": gamma * flat(batch["discount"][:, 1:])}


def check_spaces(observation_space, action_space):
    """UsageError unless the observations are vectors or 64x64x3 images and the actions a bounded vector: what the
    model takes."""
    if len(observation_space.shape) != 1 and tuple(observation_space.shape) != IMAGE_SHAPE:
        raise UsageError(f"--algo planet takes vector observations or {IMAGE_SHAPE[0]}x{IMAGE_SHAPE[1]}x"
                         f"{IMAGE_SHAPE[2]} frames (an <id>-pixels task); this environment's are "
                         f"{observation_space.shape}")
    if not hasattr(action_space, "low") or len(action_space.shape) != 1:
        raise UsageError("--algo planet plans continuous actions: it needs a bounded vector action space (a Box)")


def check_sequences(config, max_episode_steps):
    """UsageError when the task's episodes (of at most `max_episode_steps` of the game's, None: unbounded) hold
    fewer of the model's steps than a training sequence."""
    if max_episode_steps is None:
        return
    rows = -(-max_episode_steps // config.action_repeat) + 1  # the model's steps and the first observation
    if rows < config.sequence_length:
        raise UsageError(f"sequence_length {config.sequence_length} is longer than an episode: {max_episode_steps} "
                         f"steps at action_repeat {config.action_repeat} are {rows} rows; --set sequence_length="
                         f"{rows} or a smaller action_repeat")


def world_model(observation_shape, action_size, config):
    return WorldModel(observation_shape, action_size,
                      RSSM(config.state_size, config.belief_size, config.hidden_size), config.hidden_size,
                      depth=config.cnn_depth, ensemble_size=config.ensemble_size if config.plan2explore else 0,
                      observation_stddev=config.observation_stddev)


def build(observation_shape, action_size, config, count):
    """The run's graph: (the world model, its training's placeholders, losses and train op, `behaviour`'s pair)."""
    if config.cem_top > config.cem_candidates:
        raise UsageError(f"cem_top ({config.cem_top}) must be at most cem_candidates ({config.cem_candidates})")
    model = world_model(observation_shape, action_size, config)
    batch = types.SimpleNamespace(
        observation=tf1.placeholder(np.uint8 if model.images else tf.float32, [None, None, *model.observation_shape],
                                    "observations"),
        action=tf1.placeholder(tf.float32, [None, None, action_size], "actions"),
        reward=tf1.placeholder(tf.float32, [None, None], "rewards"))
    losses, posteriors = model.losses(model_input(batch.observation, model.images, noise=True), batch.action,
                                      batch.reward, config.free_nats, config.model_reward_scale)
    batch.features = tf.stop_gradient(model.rssm.features(posteriors))  # what the latent actor learns from
    train, norm = model.train_op(losses["loss"], config.learning_rate, config.adam_epsilon, config.model_grad_clip)
    losses["grad_norm"] = norm
    make_actor, sac = behaviour(model, config)
    return model, batch, losses, train, make_actor, sac


def behaviour(model, config):
    """(a function of a count of environments, and of whether they collect, that makes their acting graph; the
    latent SAC or None): the planner's, or the latent actor's, every count sharing one SAC. With plan2explore the
    collecting planner maximises the ensemble's disagreement, and the others (evaluation, playback) the learned
    task reward: zero-shot."""
    if config.behaviour == LATENT_ACTOR:
        if config.plan2explore:
            raise UsageError("plan2explore plans its exploration: it needs behaviour=planner")
        sac = latent_sac(model, config)
        return (lambda count, collecting=False: LatentActor(model, count, sac)), sac
    return (lambda count, collecting=False: Planner(model, count, config, collecting and config.plan2explore)), None


class Agent:
    """A PlaNet run's planner in a graph of its own, restored from a checkpoint, for playback and evaluation: the
    plan's first action (with the run's exploration noise unless greedy)."""

    def __init__(self, env, run, config, checkpoint, epsilon=None, seed=0):
        logdir.import_tf()
        check_spaces(env.observation_space, env.action_space)
        self.graph, self.space, self.rng = tf.Graph(), env.action_space, np.random.default_rng(seed)
        self.noise, self.repeat, self.held = config.exploration_noise, config.action_repeat, None
        with self.graph.as_default():
            model = world_model(env.observation_space.shape, env.action_space.shape[0], config)
            make_actor, sac = behaviour(model, config)
            self.planner = make_actor(1)
            variables = model.variables() + (sac.actor_variables if sac else [])
            self.session = restored_session(tf1, self.graph, variables, checkpoint, "world model")

    def reset(self):
        self.planner.reset(0)
        self.held = None

    def act(self, observation, greedy):
        """The plan's first action, held for action_repeat of the game's steps (the model saw every so many)."""
        if self.held is None or self.held[1] == self.repeat:
            actions = self.planner.act(self.session, to_stored([observation], self.planner.dtype), self.rng,
                                       0.0 if greedy else self.noise)
            self.held = [to_bounds(actions[0], self.space), 0]
        self.held[1] += 1
        return self.held[0]

    def bonus(self, observation, next_observation, action):
        return 0.0

    def close(self):
        self.session.close()


class LocalAgent(Agent):
    """The training run's own evaluation planner as evaluation.play_episode's agent: its session and graph, one
    environment, no noise; each episode recorded as the stored episodes keep them (`record`, for test_episodes/)."""

    def __init__(self, session, planner, space, repeat):  # the parent restores a checkpoint: this has the run's session
        self.session, self.planner, self.space, self.noise, self.repeat = session, planner, space, 0.0, repeat
        self.rng, self.record, self.held = np.random.default_rng(0), None, None
        self.predicted, self.rewards, self.checks = [], [], []  # the episode's; its plan_check pairs
        self.unrecorded = None  # [the last observation, the rewards] of the game's steps of a model step under way

    def reset(self):
        super().reset()
        if self.record is not None and self.planner.horizon:
            self.checks += plan_check(self.predicted, self.rewards, self.planner.horizon)
        self.record, self.predicted, self.rewards, self.unrecorded = None, [], [], None

    def act(self, observation, greedy):
        if self.record is None:
            self.record = new_record(to_stored(observation, self.planner.dtype))
        deciding = self.held is None or self.held[1] == self.repeat
        action = super().act(observation, greedy)
        if deciding and self.planner.horizon:
            self.predicted.append(float(self.planner.predicted[0]))
            self.rewards.append(0.0)
        return action

    def on_step(self, observation, action, reward, terminated):
        """Record the model's steps, as the collected episodes are stored (one row for action_repeat of the game's
        steps: the last observation, the rewards summed)."""
        if self.rewards:
            self.rewards[-1] += reward  # the model's step: the game's rewards while its action was held
        self.unrecorded = [observation, reward + (self.unrecorded[1] if self.unrecorded else 0.0)]
        if terminated or self.held[1] == self.repeat:
            self._record_step(terminated)

    def _record_step(self, terminated=False):
        observation, reward = self.unrecorded
        record_step(self.record, to_stored(observation, self.planner.dtype), self.planner.last_action[0].copy(),
                    reward, terminated)
        self.unrecorded = None

    def episode_record(self):
        """The episode just played as a stored episode's record, its last model step included where a time limit
        cut it short."""
        if self.unrecorded is not None:
            self._record_step()
        return self.record

    def plan_checks(self):
        """(predicted, realised) returns of every decision of the episodes played so far that had the planner's
        horizon ahead of it (plan_check)."""
        self.reset()
        return self.checks

    def close(self):
        pass


OPEN_LOOP_CONTEXT, OPEN_LOOP_STEPS = 5, 30  # the open-loop prediction: 5 steps observed, then imagined to 30


class OpenLoop:
    """The model's open-loop prediction of a stored episode, as PlaNet shows its video predictions: the first
    OPEN_LOOP_CONTEXT steps observed (the posteriors), the rest imagined from the last of them with the episode's
    own actions (the priors), every step decoded; written beside the truth as a PNG (frames: the truth above the
    prediction; vectors: each dimension's two curves)."""

    def __init__(self, model):
        self.images = model.images
        self.observation = tf1.placeholder(np.uint8 if model.images else tf.float32,
                                           [1, None, *model.observation_shape], "open_loop_observations")
        self.action = tf1.placeholder(tf.float32, [1, None, model.action_size], "open_loop_actions")
        context = OPEN_LOOP_CONTEXT
        inputs = model_input(self.observation[:, :context], model.images, noise=False)
        _, posteriors = model.rssm.observe(model.encode(inputs), self.action[:, :context])
        priors = model.rssm.imagine({key: value[:, -1] for key, value in posteriors.items()},
                                    self.action[:, context:])
        decoded = model.decode(tf.concat([model.rssm.features(posteriors), model.rssm.features(priors)], 1))
        self.predicted = (dequantise(decoded) if model.images else decoded)[0]  # [T, ...]

    def predict(self, session, episode):
        """(truth, prediction) of the episode's first OPEN_LOOP_STEPS rows, [T, ...] each."""
        rows = slice(0, OPEN_LOOP_STEPS)
        truth = episode["observation"][rows]
        if self.images:  # the truth as the model sees it: quantised to its bins
            truth = ((truth // 2 ** (8 - IMAGE_BITS)) * 2 ** (8 - IMAGE_BITS)).astype(np.uint8)
        feed = {self.observation: episode["observation"][None, rows], self.action: episode["action"][None, rows]}
        return truth, session.run(self.predicted, feed)

    def write(self, session, episode, path):
        truth, predicted = self.predict(session, episode)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if self.images:
            import cv2

            strip = np.concatenate([np.concatenate(list(truth), 1), np.concatenate(list(predicted), 1)], 0)
            cv2.imwrite(path, strip[..., ::-1])  # RGB to cv2's BGR
            return path
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        dimensions = truth.shape[1]
        figure, axes = plt.subplots(dimensions, 1, figsize=(8, 1.6 * dimensions), sharex=True, squeeze=False)
        for index, axis in enumerate(axes[:, 0]):
            axis.plot(truth[:, index], label="truth")
            axis.plot(predicted[:, index], "--", label="open-loop prediction")
            axis.axvline(OPEN_LOOP_CONTEXT - 0.5, color="grey", linewidth=0.8)
            axis.set_ylabel(f"o[{index}]")
        axes[0, 0].legend(loc="upper right", fontsize="small")
        axes[0, 0].set_title(f"observed {OPEN_LOOP_CONTEXT} steps (left of the line), then imagined")
        axes[-1, 0].set_xlabel("model step")
        figure.tight_layout()
        figure.savefig(path, dpi=80)
        plt.close(figure)
        return path


def plan_check(predicted, rewards, horizon):
    """[(the return the model predicted for the plan of decision t, the rewards of the model's steps t .. t +
    horizon - 1 as played)] for every decision t of an episode with `horizon` steps ahead of it: how far the
    planner's imagination is from what its replanning obtains."""
    return [(predicted[t], float(np.sum(rewards[t:t + horizon]))) for t in range(len(rewards) - horizon + 1)]


def write_plan_checks(writer, step, checks):
    """planner/predicted_return and planner/realised_return, the means of an evaluation's plan_check pairs, and
    planner/return_error, the mean of their absolute differences."""
    if not checks:
        return
    predicted, realised = np.asarray(checks, np.float64).T
    summary = tf1.Summary()
    for tag, value in (("predicted_return", predicted.mean()), ("realised_return", realised.mean()),
                       ("return_error", np.abs(predicted - realised).mean())):
        summary.value.add(tag=f"planner/{tag}", simple_value=float(value))
    writer.add_summary(summary, step)
    logger.info("evaluation at step %d: the plans' predicted return %.1f, realised %.1f (horizon's)", step,
                predicted.mean(), realised.mean())


# ---------------------------------------------------------------- collecting and learning, in any placement

class Collector:
    """The collecting half of a PlaNet run, the same in one process and on each of a cluster's actors: uniformly
    random actions while the episode store holds fewer than random_episodes episodes, then the behaviour's (with
    exploration noise); each finished episode into the store (`episodes_dir`) and the episode log. `behaviour` is a
    Filter for the environments, run in `session` (the run's, or an actor's copy of the model)."""

    def __init__(self, envs, config, behaviour, episodes_dir, seed, rng, episode_logger, timings):
        self.envs, self.config, self.behaviour, self.episodes_dir = envs, config, behaviour, episodes_dir
        self.rng, self.episode_logger, self.timings = rng, episode_logger, timings
        self.stored = self.stored_episodes()  # a resumed run's too: its random ones are done
        self.acting = Acting(envs, config, stored_dtype(envs[0].observation_space), seed + self.stored, episodes_dir)
        self.played = 0  # the game's steps, all environments together

    def stored_episodes(self):
        """The episodes in the store: this process's and, on a cluster, every actor's."""
        return len(logdir.episode_files(self.episodes_dir))

    @property
    def random(self):
        return self.stored < self.config.random_episodes

    def starts_planned_episode(self):
        """Whether an episode starts with the next step and the behaviour plays it: the store, counted again (a
        cluster's actors fill it together), holds the random episodes."""
        if not any(self.acting.beginning):
            return False
        self.stored = self.stored_episodes()
        return not self.random

    def step(self, session):
        """Every environment one step of the model (action_repeat of the game's); (the game's steps played, the
        finished episodes' EpisodeStats)."""
        for k in np.flatnonzero(self.acting.beginning):
            self.behaviour.reset(k)
        if self.random:
            actions = self.rng.uniform(-1.0, 1.0, (len(self.envs), self.behaviour.action_size)).astype(np.float32)
            self.behaviour.took(actions)
        else:
            with self.timings.phase("act"):
                actions = self.behaviour.act(session, self.acting.stored_observations(), self.rng,
                                             self.config.exploration_noise)
        with self.timings.phase("env"):
            _, finished = self.acting.step(to_bounds(actions, self.envs[0].action_space), None, actions)
        total = sum(env.env_steps for env in self.envs)
        played, self.played = total - self.played, total
        for stats in finished:
            self.episode_logger(stats)
        if finished:
            self.stored = self.stored_episodes()
        return played, finished

    def close(self):
        self.acting.close()


def updates_owed(config, episodes):
    """The updates a run owes once `episodes` are stored: collect_every for the last random episode and for each one
    after it (PlaNet trains after each episode it collects)."""
    return config.collect_every * max(0, episodes - config.random_episodes + 1)


class ModelLearning:
    """The learning half: the world model's updates (and the latent SAC's) on batches of sequences of the stored
    episodes, collect_every of them for each episode stored after the random ones but the last (`owed`), whoever
    collected it."""

    def __init__(self, batch, losses, train, sac, config, episodes_dir, rng):
        self.batch, self.losses, self.train, self.sac = batch, losses, train, sac
        self.config = config
        self.loader = sequences.EpisodeLoader(episodes_dir, rng, min_rows=config.sequence_length)

    def owed(self, episodes):
        return updates_owed(self.config, episodes)

    def learn(self, session, writer, step, updates, count, beat=None, stop=lambda: False):
        """`count` updates on batches of the stored episodes, `beat()` after each, fewer where `stop()` turns true;
        (the last one's losses, the updates made in all)."""
        config, values = self.config, {}
        for _ in range(count):
            if stop():
                break
            try:
                batch = sequences.batch(self.loader, config.batch_size, config.sequence_length)
            except ValueError as error:  # every episode so far ended sooner: the task's episodes are short
                raise UsageError(f"{error}: the episodes end sooner than sequence_length ({config.sequence_length});"
                                 f" --set sequence_length=... lower") from None
            feed = {self.batch.observation: batch["observation"], self.batch.action: batch["action"],
                    self.batch.reward: batch["reward"]}
            values, _, features = session.run([self.losses, self.train, self.batch.features], feed)
            if self.sac:  # on the posterior states of the batch, before the model's update
                sac_values, _ = self.sac.train(session, latent_transitions(features, batch, config.gamma),
                                               np.ones(config.batch_size * (config.sequence_length - 1), np.float32))
                values = {**values, **sac_values}
            updates += 1
            if updates % config.summary_every_updates == 0:
                summary = tf1.Summary()
                for name, value in values.items():
                    summary.value.add(tag=name if "/" in name else f"model/{name}", simple_value=float(value))
                writer.add_summary(summary, step)
            if beat:
                beat()
        return values, updates


def counters():
    """The run's global step (the game's steps played) and its count of the model's updates: variables, so that a
    checkpoint keeps them."""
    return (tf1.Variable(0, trainable=False, name="global_step", dtype=tf.int64),
            tf1.Variable(0, trainable=False, name="updates", dtype=tf.int64))


def write_open_loop(session, open_loop, log_dir, episodes_dir, step):
    """The open-loop prediction of the newest stored episode, <log-dir>/predictions/open_loop_<step>.png."""
    paths = logdir.episode_files(episodes_dir)
    episode = logdir.read_episode(paths[-1]) if paths else None
    if episode is not None and len(episode["reward"]) > OPEN_LOOP_CONTEXT:
        path = os.path.join(log_dir, logdir.PREDICTIONS, f"open_loop_{step:09d}.png")
        logger.info("open-loop prediction at step %d: %s", step, open_loop.write(session, episode, path))


# ---------------------------------------------------------------- the one-process run

class LocalRun:
    """PlaNet in one process: a Collector and a ModelLearning taking turns (an episode, then the updates it owes);
    evaluations, checkpoints, the episode CSV, TensorBoard, a heartbeat and a progress bar."""

    def __init__(self, log_dir, config, make_env, eval_every=DEFAULT_EVAL_EVERY, eval_episodes=5, progress=True,
                 eval_frames=None):
        self.log_dir, self.config, self.make_env, self.progress = log_dir, config, make_env, progress
        self.eval_every, self.eval_episodes, self.eval_frames = eval_every, eval_episodes, eval_frames
        self.envs = [ActionRepeat(make_env(), config.action_repeat) for _ in range(config.envs_per_worker)]
        space, self.action_space = self.envs[0].observation_space, self.envs[0].action_space
        check_spaces(space, self.action_space)
        seed_task(tf1, config.seed)
        self.model, batch, losses, train, make_actor, self.sac = build(
            space.shape, self.action_space.shape[0], config, len(self.envs))
        self.planner, self.eval_planner = make_actor(len(self.envs), collecting=True), make_actor(1)
        self.open_loop = OpenLoop(self.model)
        self.global_step, self.updates = counters()
        self.saver = tf1.train.Saver(max_to_keep=3)
        self.train_dir = logdir.checkpoints_dir(log_dir)
        self.episodes_dir = os.path.join(log_dir, logdir.TRAIN_EPISODES)
        self.rng = np.random.default_rng(config.seed)
        self.learning = ModelLearning(batch, losses, train, self.sac, config, self.episodes_dir, self.rng)

    def restore_or_initialise(self, session, pretrain=None):
        latest = check_checkpoint(tf1, self.train_dir, tf1.global_variables())
        late = logdir.set_aside_episodes_after(self.episodes_dir, os.path.getmtime(f"{latest}.index") if latest else None,
                                               self.log_dir)
        if late:
            logger.warning("%d stored episodes were collected after %s: moved to %s", len(late),
                           f"{latest}, which the run resumes from" if latest else "the start by a run that left no "
                           "checkpoint; this one starts afresh", os.path.join(self.log_dir, logdir.REWOUND))
        if latest:
            self.saver.restore(session, latest)
            logger.info("resumed from %s at step %d", latest, session.run(self.global_step))
            return
        session.run(tf1.global_variables_initializer())
        if pretrain:
            source, include, exclude = pretrain
            pretrain_init(tf1, source, tf1.trainable_variables(), include, exclude)(session)
        if self.sac:
            self.sac.initialise(session)  # the critics' targets start as the critics

    def evaluate(self, session, step):
        """eval_episodes episodes of the planner without noise, on an environment of its own, each into
        test_episodes/ (and eval_NNN/ with --eval-frames); evaluation.summarise's summary."""
        env = self.make_env("rgb_array" if self.eval_frames else None)
        agent = LocalAgent(session, self.eval_planner, self.action_space, self.config.action_repeat)
        frames_dir = evaluation.frames_dir(self.log_dir, len(logdir.read_rows(os.path.join(self.log_dir,
                                                                                         logdir.EVAL))) + 1)
        rng, episodes = np.random.default_rng([self.config.seed, step]), []
        try:
            for index in range(1, self.eval_episodes + 1):
                episode, frames, _ = evaluation.play_episode(
                    env, agent, True, rng, EVAL_MAX_STEPS, bool(self.eval_frames), False,
                    seed=self.config.seed + 10_000 + index - 1, on_step=agent.on_step)
                episodes.append(episode)
                logdir.write_episode(os.path.join(self.log_dir, logdir.TEST_EPISODES),
                                    episode_arrays(agent.episode_record()))
                if self.eval_frames:
                    evaluation.write_frames(frames_dir, index, frames, self.eval_frames)
        finally:
            env.close()
        return evaluation.summarise(episodes), agent.plan_checks()

    def run(self, session, pretrain=None):
        """Train to max_global_steps; the mean return of the last evaluation. Ctrl-C writes a checkpoint at the
        step reached, then raises KeyboardInterrupt."""
        with DeferredInterrupt() as interrupt:
            return self.play_and_learn(session, interrupt, pretrain)

    def play_and_learn(self, session, interrupt, pretrain=None):
        from tqdm import tqdm

        config = self.config
        self.restore_or_initialise(session, pretrain)
        writer = tf1.summary.FileWriter(logdir.events_dir(self.log_dir, 0), session.graph)
        evaluation_writer = tf1.summary.FileWriter(os.path.join(self.log_dir, logdir.EVAL_EVENTS))
        step, updates = (int(value) for value in session.run([self.global_step, self.updates]))
        episodes = EpisodeLogger(self.log_dir, 0, writer, lambda: step)
        episodes.resume_from(step)
        progress = types.SimpleNamespace(steps_trained=0, last_global_step=step, updates=updates, skipped_updates=0,
                                         timings=Timings())
        collector = Collector(self.envs, config, self.planner, self.episodes_dir, config.seed, self.rng, episodes,
                              progress.timings)
        heartbeat = Heartbeat(self.log_dir, 0, config.max_global_steps, job=LOCAL.job)
        bar = tqdm(total=config.max_global_steps, initial=step, unit="step", disable=not self.progress,
                   dynamic_ncols=True)
        next_eval = (step // self.eval_every + 1) * self.eval_every
        recent, last_eval, losses = [], None, {}

        def learn_owed():  # the updates the stored episodes owe; a Ctrl-C stops them between two
            owed = self.learning.owed(collector.stored) - updates
            if owed <= 0:
                return losses, updates
            with progress.timings.phase("train"):
                return self.learning.learn(session, writer, step, updates, owed,
                                           lambda: heartbeat.beat(progress, episodes.episodes),
                                           lambda: interrupt.requested)

        def evaluate_and_save():  # the evaluation at `step`, its summaries, the open-loop picture, a checkpoint
            summary, checks = self.evaluate(session, step)
            write_plan_checks(writer, step, checks)
            write_open_loop(session, self.open_loop, self.log_dir, self.episodes_dir, step)
            checkpoint = self.save(session, step, updates)
            evaluation.keep(tf1, evaluation_writer, self.log_dir, step, summary, checkpoint)
            return summary["mean_reward"]

        try:
            made = updates
            losses, updates = learn_owed()  # what a run stopped while it learned still owes, before it plays on
            if updates > made and not interrupt.requested and self.evaluation_owed(step):
                last_eval = evaluate_and_save()  # the evaluation it stopped before
            while True:
                if interrupt.requested:
                    self.save(session, step, updates)
                    raise KeyboardInterrupt
                if step >= config.max_global_steps:
                    break
                played, finished = collector.step(session)
                step += played
                progress.steps_trained += played
                recent = (recent + [stats.env_reward for stats in finished])[-STATS_WINDOW:]
                if finished:  # an episode, then the updates it owes
                    losses, updates = learn_owed()
                progress.last_global_step, progress.updates = step, updates
                heartbeat.beat(progress, episodes.episodes)
                if updates < self.learning.owed(collector.stored):
                    continue  # stopped while it learned: saved above, evaluated when resumed
                if step >= next_eval or step >= config.max_global_steps:
                    last_eval = evaluate_and_save()
                    next_eval += self.eval_every
                bar.update(played)
                if finished or step >= config.max_global_steps:
                    bar.set_postfix(episodes=episodes.episodes, mean_return=f"{np.mean(recent):.1f}" if recent else "-",
                                    eval="-" if last_eval is None else f"{last_eval:.1f}", updates=updates,
                                    loss=f"{losses['loss']:.2f}" if losses else "-", refresh=False)
        finally:
            heartbeat.beat(progress, episodes.episodes, state="stopped", force=True)
            bar.close()
            episodes.close()
            writer.close()
            evaluation_writer.close()
            collector.close()
        return last_eval

    def evaluation_owed(self, step):
        """Whether the evaluation due at `step` (eval_every's last multiple, or the run's end) is not in eval.csv: a
        run stopped while it learned evaluates when resumed."""
        rows = logdir.read_rows(os.path.join(self.log_dir, logdir.EVAL))
        last = int(rows[-1]["global_step"]) if rows else 0
        return step // self.eval_every > last // self.eval_every or (step >= self.config.max_global_steps > last)

    def save(self, session, step, updates):
        self.global_step.load(step, session)
        self.updates.load(updates, session)
        return self.saver.save(session, os.path.join(self.train_dir, "model.ckpt"), global_step=step)


# ---------------------------------------------------------------- on a cluster: actors collect, a learner trains

FINISHED_QUEUE = "planet_finished_actors"  # the shared_name of the queue of tokens of the actors that are done
MAX_ACTORS = 1024  # the tokens it holds
STEP_EVERY = 50  # the game's steps an actor plays between adding them to the global step
WAIT_SECS = 0.5  # an actor's pause while its learner owes more updates than it may, and the idle learner's
FINISH_GRACE_SECS = 60.0  # after max_global_steps the learner waits this long at most for every actor to finish


class ClusterGraph:
    """What the learner and every actor build alike (between-graph replication), on the learner's device: the run's
    graph (`build`), its counters, the op that adds an actor's steps to the global step, and the queue of the tokens
    of the actors that have seen the run's end. Each update of the world model counts itself in `updates`, which
    the actors read to wait for a learner that lags."""

    def __init__(self, observation_shape, action_size, config, learner_device):
        with tf1.device(learner_device):
            self.model, self.batch, self.losses, train, self.make_actor, self.sac = build(
                observation_shape, action_size, config, config.envs_per_worker)
            self.global_step, self.updates = counters()
            self.train = tf.group(train, self.updates.assign_add(1))
            self.steps = tf1.placeholder(tf.int64, [], "steps")
            self.add_steps = self.global_step.assign_add(self.steps)
            finished = tf1.FIFOQueue(MAX_ACTORS, [tf.int32], shapes=[[]], shared_name=FINISHED_QUEUE,
                                     name="finished_actors")
            self.finish, self.finished_actors = finished.enqueue(0), finished.size()
            self.open_loop = OpenLoop(self.model)
        self.variables = tf1.global_variables()

    def initialise(self, pretrain):
        """The learner's init_fn for fresh variables: the filtered restore of `pretrain` (sessions.pretrain_init's
        source, include, exclude) if given, and the latent SAC's targets."""
        def initialise(session):
            if pretrain:
                pretrain_init(tf1, pretrain[0], tf1.trainable_variables(), pretrain[1], pretrain[2])(session)
            if self.sac:
                self.sac.initialise(session)
        return initialise


def lagging(config, episodes, updates, actors):
    """Whether the learner, having made `updates`, owes more than an episode's updates for each actor once
    `episodes` are stored: an actor then waits before it starts another episode (as an Ape-X actor waits on a full
    queue), so that the run keeps collect_every updates per episode whatever its number of actors."""
    return updates_owed(config, episodes) - updates > config.collect_every * actors


class ClusterActor:
    """One actor task: a Collector on its own copy of the world model (acting.NetworkCopy), whose weights it fetches
    from the learner at each episode's start, after waiting while the learner lags (`lagging`)."""

    def __init__(self, graph, envs, config, task, actors, episodes_dir, episode_logger):
        self.graph, self.config, self.actors = graph, config, actors
        self.progress = types.SimpleNamespace(steps_trained=0, last_global_step=0, updates=0, skipped_updates=0,
                                              timings=Timings())
        count, seed = len(envs), config.seed + 1000 * (task + 1)

        def acting_copy():  # the collecting behaviour, on a model of the learner's variables' names
            model = world_model(graph.model.observation_shape, graph.model.action_size, config)
            return behaviour(model, config)[0](count, collecting=True)

        self.copy = NetworkCopy(acting_copy, {variable.op.name: variable for variable in graph.variables}, seed)
        self.collector = Collector(envs, config, self.copy.network, episodes_dir, seed,
                                   np.random.default_rng([config.seed, task]), episode_logger, self.progress.timings)

    def run(self, session, stop_flag, heartbeat, episode_logger):
        """Collect until the global step reaches max_global_steps or a stop is asked."""
        progress, unsent = self.progress, 0
        progress.last_global_step = int(session.run(self.graph.global_step))
        while not stop_flag.stop and progress.last_global_step < self.config.max_global_steps:
            if self.collector.starts_planned_episode():
                if not self.wait_for_learner(session, stop_flag, heartbeat, episode_logger):
                    break
                with progress.timings.phase("sync"):
                    self.copy.load(session.run(self.copy.source))
            played, finished = self.collector.step(self.copy.session)
            unsent += played
            if unsent >= STEP_EVERY or finished:
                progress.last_global_step = int(session.run(self.graph.add_steps, {self.graph.steps: unsent}))
                progress.steps_trained += unsent
                unsent = 0
            heartbeat.beat(progress, episode_logger.episodes)

    def wait_for_learner(self, session, stop_flag, heartbeat, episode_logger):
        """Wait while the learner lags; False if the run ended or a stop was asked meanwhile."""
        with self.progress.timings.phase("queue_put"):  # the actor's wait on its learner, as Ape-X's full queue
            while not stop_flag.stop:
                updates, step = (int(value) for value in session.run([self.graph.updates, self.graph.global_step]))
                self.progress.updates, self.progress.last_global_step = updates, step
                if step >= self.config.max_global_steps:
                    return False
                if not lagging(self.config, self.collector.stored_episodes(), updates, self.actors):
                    return True
                heartbeat.beat(self.progress, episode_logger.episodes, state="waiting")
                time.sleep(WAIT_SECS)
        return False

    def close(self):
        self.collector.close()
        self.copy.close()


class ClusterLearner:
    """The learner task: the updates the stored episodes owe (ModelLearning), whoever collected them; an open-loop
    prediction every `open_loop_every` steps (and at the run's end); the run's end."""

    def __init__(self, graph, config, log_dir, writer, open_loop_every):
        self.graph, self.config, self.log_dir, self.writer = graph, config, log_dir, writer
        self.episodes_dir = os.path.join(log_dir, logdir.TRAIN_EPISODES)
        self.learning = ModelLearning(graph.batch, graph.losses, graph.train, graph.sac, config,
                                      self.episodes_dir, np.random.default_rng(config.seed))
        self.open_loop_every = open_loop_every
        self.progress = types.SimpleNamespace(steps_trained=0, last_global_step=0, updates=0, skipped_updates=0,
                                              timings=Timings())

    def run(self, session, stop_flag, heartbeat):
        progress = self.progress
        step, updates = (int(value) for value in session.run([self.graph.global_step, self.graph.updates]))
        next_open_loop = (step // self.open_loop_every + 1) * self.open_loop_every
        heartbeat.beat(progress, 0, force=True)
        while not stop_flag.stop and step < self.config.max_global_steps:
            if not self.train_due(session, step, updates, lambda: heartbeat.beat(self.progress, 0),
                                  lambda: stop_flag.stop):
                time.sleep(WAIT_SECS)
            step, updates = (int(value) for value in session.run([self.graph.global_step, self.graph.updates]))
            progress.steps_trained += step - progress.last_global_step
            progress.last_global_step, progress.updates = step, updates
            if step >= next_open_loop:
                write_open_loop(session, self.graph.open_loop, self.log_dir, self.episodes_dir, step)
                next_open_loop += self.open_loop_every
            heartbeat.beat(progress, 0)

    def train_due(self, session, step, updates, beat, stop=lambda: False):
        """The updates the stored episodes owe, an episode's at most, `beat()` after each, fewer once `stop()` (a
        SIGTERM: the final checkpoint keeps the count, and the resumed learner makes the rest); how many were made."""
        owed = self.learning.owed(len(logdir.episode_files(self.episodes_dir))) - updates
        count = min(owed, self.config.collect_every)
        if count <= 0:
            return 0
        with self.progress.timings.phase("train"):
            made = self.learning.learn(session, self.writer, step, updates, count, beat, stop)[1] - updates
        return made

    def finish(self, session, actors, stop_flag, heartbeat):
        """Wait until each of the `actors` has seen the run's end (FINISH_GRACE_SECS at most), so that the last
        episodes are stored, then make the updates they owe."""
        deadline = time.time() + FINISH_GRACE_SECS
        while time.time() < deadline and session.run(self.graph.finished_actors) < actors and not stop_flag.stop:
            heartbeat.beat(self.progress, 0, state="finishing")
            time.sleep(WAIT_SECS)
        step = self.progress.last_global_step = int(session.run(self.graph.global_step))
        while not stop_flag.stop and self.train_due(session, step, int(session.run(self.graph.updates)),
                                                    lambda: heartbeat.beat(self.progress, 0, state="finishing"),
                                                    lambda: stop_flag.stop):
            pass


def run_task(args):
    """A PlaNet learner or actor (worker.py --job-name learner|actor): the algorithms' table's entry point for
    `--algo planet --num-workers N`. The actors store their episodes in the run's train_episodes/, which the
    learner reads (a directory every machine of the cluster shares); the learner, the chief, initialises or restores
    the variables and checkpoints them."""
    logdir.import_tf()
    job, task = args.job_name, args.task
    is_learner = roles.is_chief(job, task)
    spec = runs.cluster_spec(args)
    actors = len(spec[roles.ACTOR.job])
    stop_flag = StopFlag()
    first = runs.make_env(args)
    try:
        check_spaces(first.observation_space, first.action_space)
        config = runs.effective_config(args, first)
        check_sequences(config, first.spec.max_episode_steps if first.spec else None)
    except UsageError:
        first.close()
        raise
    shape, action_size = first.observation_space.shape, first.action_space.shape[0]
    envs = [] if is_learner else [ActionRepeat(env, config.action_repeat) for env in
                                  [first] + [runs.make_env(args) for _ in range(config.envs_per_worker - 1)]]
    if is_learner:
        first.close()  # the learner plays no game: the first environment told it the shapes
    seed_task(tf1, config.seed + task)
    learner_device = f"/job:{roles.LEARNER.job}/task:0/cpu:0"
    graph = ClusterGraph(shape, action_size, config, learner_device)
    pretrain = (args.pretrain, args.restore_include, args.restore_exclude) if args.pretrain else None

    def learn(session, writer, heartbeat):
        trainer = ClusterLearner(graph, config, args.log_dir, writer, DEFAULT_EVAL_EVERY)
        trainer.run(session, stop_flag, heartbeat)
        if not stop_flag.stop:
            trainer.finish(session, actors, stop_flag, heartbeat)
            write_open_loop(session, graph.open_loop, args.log_dir, trainer.episodes_dir,
                            int(session.run(graph.global_step)))
        return trainer

    def make_actor(writer, episode_logger):
        return ClusterActor(graph, envs, config, task, actors, os.path.join(args.log_dir, logdir.TRAIN_EPISODES),
                            episode_logger)

    acting.run_learner_or_actor(tf1, args, spec, config, stop_flag, envs, graph.variables, graph.global_step,
                                graph.finish, learn, make_actor, progress=lambda trainer: trainer.progress,
                                init_fn=graph.initialise(pretrain))


def run_local(args):
    """`train.py --algo planet` (one process): the whole run in the foreground; exit status."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.algo} %(levelname)s %(message)s")

    def make_env(render_mode=None):
        return runs.make_env(args, render_mode)

    logdir.import_tf()
    probe = make_env()
    try:
        check_spaces(probe.observation_space, probe.action_space)
        config = runs.effective_config(args, probe)
        check_sequences(config, probe.spec.max_episode_steps if probe.spec else None)
    finally:
        probe.close()
    run = LocalRun(args.log_dir, config, make_env, args.eval_every or DEFAULT_EVAL_EVERY, args.eval_episodes,
                   eval_frames=args.eval_frames)
    started = time.time()
    with tf1.Session(config=local_session_config(args.threads)) as session:
        pretrain = (args.pretrain, args.restore_include, args.restore_exclude) if args.pretrain else None
        last = run.run(session, pretrain)
    print(f"run over: step {config.max_global_steps:,} in {time.time() - started:.0f} s; last evaluation "
          f"{last:.1f} ({os.path.join(args.log_dir, logdir.REWARDS_FILE)})" if last is not None else "run over",
          flush=True)
    return 0
