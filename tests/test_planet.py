"""planet.py: the world model's parts against hand computations (the KL of diagonal Gaussians, free nats, the 5-bit
quantisation and its inverse, the Gaussian log-likelihood) and the cross-entropy method on a known quadratic."""
import math

import numpy as np
import pytest
import tensorflow as tf

import planet

tf1 = tf.compat.v1


def run(*tensors):
    with tf1.Session() as session:
        return session.run(list(tensors)) if len(tensors) > 1 else session.run(tensors[0])


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default():
        tf1.set_random_seed(0)
        yield


def test_the_kl_of_diagonal_gaussians_is_the_formula_summed_over_dimensions():
    mean, stddev = np.array([[0.0, 1.0]]), np.array([[1.0, 0.5]])
    other_mean, other_stddev = np.array([[1.0, 1.0]]), np.array([[2.0, 0.5]])
    # dimension 1: log 2 + (1 + 1) / 8 - 1/2 = log 2 - 1/4; dimension 2: equal Gaussians, 0
    expected = math.log(2.0) - 0.25
    kl = run(planet.diagonal_gaussian_kl(*(tf.constant(x, tf.float32) for x in (mean, stddev, other_mean,
                                                                                  other_stddev))))
    assert kl.shape == (1,) and kl[0] == pytest.approx(expected, rel=1e-6)
    same = run(planet.diagonal_gaussian_kl(tf.constant(mean), tf.constant(stddev), tf.constant(mean),
                                           tf.constant(stddev)))
    assert same[0] == pytest.approx(0.0, abs=1e-12)
    backwards = run(planet.diagonal_gaussian_kl(*(tf.constant(x, tf.float32) for x in (other_mean, other_stddev,
                                                                                         mean, stddev))))
    assert backwards[0] == pytest.approx(-math.log(2.0) + (4 + 1) / 2 - 0.5, rel=1e-6), "KL is not symmetric"


def test_free_nats_cost_nothing_below_them_and_pass_the_gradient_above():
    kl = tf.constant([1.0, 3.0, 5.0])
    loss = planet.free_nats(kl, 3.0)
    gradient = tf.gradients(tf.reduce_sum(loss), kl)[0]
    value, slope = run(loss, gradient)
    assert list(value) == [0.0, 0.0, 2.0] and list(slope) == [0.0, 0.0, 1.0]


def test_five_bit_quantisation_keeps_each_bin_and_its_inverse_returns_the_bins_lower_edge():
    images = np.arange(256, dtype=np.uint8).reshape(1, 16, 16, 1)
    noise = np.full(images.shape, 0.5, np.float32)
    quantised, noisy = run(planet.quantise(tf.constant(images)), planet.quantise(tf.constant(images),
                                                                                 noise=tf.constant(noise)))
    levels = images.astype(np.int64) // 8  # 32 bins of 8 values
    assert np.allclose(quantised, levels / 32 - 0.5) and quantised.min() == -0.5 and quantised.max() < 0.5
    assert np.allclose(noisy - quantised, 0.5 / 32), "the noise spreads each value across its own bin only"
    back = run(planet.dequantise(tf.constant(noisy)))
    assert back.dtype == np.uint8 and (back == levels * 8).all()
    assert (run(planet.dequantise(tf.constant([-0.9, 0.7]))) == [0, 248]).all(), "out of range: the end bins"


def test_the_gaussian_log_likelihood_is_the_density_summed_over_the_given_axes():
    value = np.array([[0.0, 2.0], [1.0, 1.0]], np.float32)
    mean = np.zeros_like(value)
    unit = run(planet.gaussian_log_likelihood(tf.constant(value), tf.constant(mean)))
    expected = [-0.5 * (0 + 4) - math.log(2 * math.pi), -0.5 * (1 + 1) - math.log(2 * math.pi)]
    assert unit == pytest.approx(expected, rel=1e-6)
    wide = run(planet.gaussian_log_likelihood(tf.constant(value), tf.constant(mean), stddev=2.0, axes=(0, 1)))
    assert wide == pytest.approx(sum(-0.5 * (x / 2) ** 2 - math.log(2) - 0.5 * math.log(2 * math.pi)
                                     for x in value.ravel()), rel=1e-6)


def test_the_cross_entropy_method_finds_the_optimum_of_a_known_quadratic_return():
    """return = -sum_t,d (a_t,d - target_t,d)^2 for a target inside the action bounds, a different one for each of
    two batch rows: the planner's mean must come to it."""
    horizon, size = 4, 2
    targets = np.array([[[0.5, -0.3]] * horizon, [[-0.7, 0.2], [0.1, 0.9], [0.0, 0.0], [-0.4, -0.4]]], np.float32)

    def returns_of(actions):  # [2 x candidates, horizon, size], the candidates of one batch row together
        target = tf.repeat(tf.constant(targets), 200, axis=0)
        return -tf.reduce_sum(tf.square(actions - target), axis=[1, 2])

    plan = planet.cross_entropy_method(returns_of, batch=2, horizon=horizon, action_size=size, candidates=200,
                                       iterations=10, top=20)
    found = run(plan)
    assert found.shape == targets.shape
    assert np.abs(found - targets).max() < 0.05, np.abs(found - targets).max()
    one = run(planet.cross_entropy_method(returns_of, batch=2, horizon=horizon, action_size=size, candidates=200,
                                          iterations=1, top=20))
    assert np.abs(one - targets).max() > np.abs(found - targets).max(), "the refits improve on the first"


def test_the_planners_defaults_are_planets():
    assert planet.CEM == {"horizon": 12, "iterations": 10, "candidates": 1000, "top": 100}
    assert planet.IMAGE_BITS == 5 and planet.FREE_NATS == 3.0
