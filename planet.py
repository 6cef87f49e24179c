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
