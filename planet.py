"""`--algo planet`: PlaNet's world model (Hafner et al. 2019), in graph mode.

This module grows with the issue that adds the algorithm; what it holds so far are the parts every later one
stands on, each tested by hand: the 5-bit quantisation of images and its inverse, the diagonal Gaussians' KL and
free nats of the model's loss, the Gaussian log-likelihood of its observation and reward heads, and the
cross-entropy method that plans in the model's latent space. Distributions are written out here, not taken from
TensorFlow Probability, whose releases no longer follow TensorFlow's.
"""
import math

import tensorflow as tf

tf1 = tf.compat.v1

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


class WorldModel:
    """The RSSM with its observation's encoder and decoder and a reward head, for vector observations (MLPs of
    `hidden_size`); its loss, -log p(o_t | s_t, h_t) - REWARD_SCALE log p(r_t | s_t, h_t) + max(0, KL(q || p) - free
    nats), each a mean over the batch's steps; its train op. The observations' and rewards' densities are Gaussians
    of unit variance."""

    def __init__(self, observation_size, action_size, rssm=None, hidden_size=HIDDEN_SIZE, scope=SCOPE):
        self.observation_size, self.action_size, self.hidden_size, self.scope = (observation_size, action_size,
                                                                                 hidden_size, scope)
        self.rssm = rssm or RSSM(scope=f"{scope}/rssm")

    def _mlp(self, x, output_size, name):
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE), tf1.variable_scope(name):
            for layer in range(2):
                x = dense(x, self.hidden_size, f"hidden_{layer}", tf.nn.elu)
            return dense(x, output_size, "out")

    def encode(self, observations):
        """The embeddings e_t of observations [batch, time, observation_size]."""
        return self._mlp(observations, self.hidden_size, "encoder")

    def decode(self, features):
        return self._mlp(features, self.observation_size, "decoder")

    def reward(self, features):
        return self._mlp(features, 1, "reward")[..., 0]

    def losses(self, observations, actions, rewards, nats=FREE_NATS):
        """{name: scalar} of a batch of sequences [batch, time, ...] as the stored episodes give them (row t: o_t, the
        action that led to it, the reward it brought), and the posteriors."""
        priors, posteriors = self.rssm.observe(self.encode(observations), actions)
        features = self.rssm.features(posteriors)
        observation_ll = tf.reduce_mean(gaussian_log_likelihood(observations, self.decode(features)))
        reward_ll = tf.reduce_mean(gaussian_log_likelihood(rewards, self.reward(features), axes=()))
        kl = diagonal_gaussian_kl(posteriors["mean"], posteriors["stddev"], priors["mean"], priors["stddev"])
        divergence = tf.reduce_mean(free_nats(kl, nats))
        return {"observation_ll": observation_ll, "reward_ll": reward_ll, "kl": tf.reduce_mean(kl),
                "divergence": divergence,
                "loss": -observation_ll - REWARD_SCALE * reward_ll + divergence}, posteriors

    def variables(self):
        return [v for v in tf1.trainable_variables() if v.name.startswith(f"{self.scope}/")]

    def train_op(self, loss, learning_rate=LEARNING_RATE, epsilon=ADAM_EPSILON, clip=GRADIENT_CLIP):
        """Adam on the model's variables, the gradient clipped at global norm `clip`; (the op, the norm)."""
        variables = self.variables()
        gradients, norm = tf.clip_by_global_norm(tf.gradients(loss, variables), clip)
        optimiser = tf1.train.AdamOptimizer(learning_rate, epsilon=epsilon)
        return optimiser.apply_gradients(zip(gradients, variables)), norm

    def plan(self, state, horizon, candidates, iterations, top, low=-1.0, high=1.0):
        """The CEM's action sequence from each of `state`'s batch rows [batch, horizon, action_size]: candidates scored
        by the rewards the model predicts along the prior trajectory they imagine (no observation)."""
        batch = tf.shape(state["belief"])[0]

        def returns_of(actions):
            tiled = {key: tf.repeat(value, candidates, axis=0) for key, value in state.items()}
            return tf.reduce_sum(self.reward(self.rssm.features(self.rssm.imagine(tiled, actions))), axis=1)

        return cross_entropy_method(returns_of, batch, horizon, self.action_size, candidates, iterations, top, low,
                                    high)
