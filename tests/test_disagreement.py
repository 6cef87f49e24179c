"""The disagreement bonus (Pathak et al. 2019): an ensemble's variance, its routing, and that it falls where the
ensemble has learned."""
import numpy as np
import pytest
import tensorflow as tf

import curiosity
from curiosity import ContinuousActions, Disagreement, ensemble_variance_per_step

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def test_the_ensemble_variance_is_each_features_variance_across_the_models_summed(graph):
    predictions = np.array([[[1.0, 0.0], [2.0, 2.0]],
                            [[3.0, 0.0], [2.0, 2.0]],
                            [[5.0, 3.0], [2.0, 2.0]]], np.float32)  # [K=3, N=2, F=2]
    with tf1.Session() as session:
        value = session.run(ensemble_variance_per_step(tf.constant(predictions)))
    # step 0: feature 0 is 1, 3, 5 (mean 3, variance 8/3); feature 1 is 0, 0, 3 (mean 1, variance 2)
    assert value == pytest.approx([8 / 3 + 2, 0.0])


def bonus_of(session, bonus, observations, next_observations, actions):
    return session.run(bonus.bonus_per_step, bonus.feed(observations, next_observations, actions))


def test_disagreement_is_zero_for_identical_models_and_grows_with_their_spread(graph):
    """Every model given model 0's weights: no bonus anywhere; then each model's output layer moved by noise of a
    growing scale: the bonus grows with it."""
    bonus = Disagreement((4,), 3)
    rng = np.random.default_rng(0)
    observations, following = rng.normal(size=(16, 4)), rng.normal(size=(16, 4))
    actions = rng.integers(0, 3, 16)
    models = [[v for v in bonus.var_list if f"ensemble_{index}/" in v.name] for index in range(curiosity.ENSEMBLE_SIZE)]
    assert all(len(variables) == 4 for variables in models)  # f1 and flast, weights and biases
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        assert bonus_of(session, bonus, observations, following, actions).min() > 0, "each model its own draw"
        first = session.run(models[0])
        for variables in models[1:]:
            for variable, value in zip(variables, first):
                variable.load(value, session)
        assert bonus_of(session, bonus, observations, following, actions) == pytest.approx(np.zeros(16), abs=1e-6)
        means = []
        for scale in (0.01, 0.1, 1.0):
            for variables in models:
                output_bias = [v for v in variables if "flast/b" in v.name][0]
                output_bias.load(first[3] + scale * rng.normal(size=first[3].shape), session)
            means.append(bonus_of(session, bonus, observations, following, actions).mean())
    assert means[0] < means[1] < means[2], means
    # a bias moved by noise of std sigma in each model: the bonus is about F x sigma^2 x (K - 1) / K
    expected = bonus.feature_size * np.array([0.01, 0.1, 1.0]) ** 2 * (curiosity.ENSEMBLE_SIZE - 1) / curiosity.ENSEMBLE_SIZE
    assert np.allclose(means, expected, rtol=0.5), (means, expected)


def test_only_the_inverse_model_trains_the_encoder_and_each_model_learns_from_its_own_error(graph):
    bonus = Disagreement((4,), ContinuousActions(2))
    encoder = [v for v in bonus.var_list if "encoder/" in v.name]
    ensemble = [v for v in bonus.var_list if "ensemble_" in v.name]
    assert encoder and ensemble
    assert all(g is None for g in tf.gradients(bonus.forward_loss, encoder)), "phi is held fixed for the models"
    assert all(g is not None for g in tf.gradients(bonus.inverse_loss, encoder))
    assert all(g is not None for g in tf.gradients(bonus.forward_loss, ensemble))
    assert tf.gradients(bonus.forward_loss, bonus.action_input) == [None]


def test_the_disagreement_falls_on_the_transitions_the_ensemble_trains_on(graph):
    """A deterministic system (s' = s + a): after training on one region of states, the models agree there more
    than on states far from it."""
    bonus = Disagreement((2,), ContinuousActions(2))
    train = tf1.train.AdamOptimizer(1e-3).minimize(bonus.training_loss(type("C", (), {
        "prediction_lr_scale": 1.0, "forward_loss_wt": 0.5})()))
    rng = np.random.default_rng(1)

    def transitions(centre, count=64):
        states = centre + 0.3 * rng.normal(size=(count, 2))
        actions = rng.uniform(-1, 1, (count, 2))
        return states, states + 0.1 * actions, actions

    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        for _ in range(300):
            session.run(train, bonus.feed(*transitions(0.0)))
        familiar = bonus_of(session, bonus, *transitions(0.0, 256)).mean()
        novel = bonus_of(session, bonus, *transitions(4.0, 256)).mean()
    assert familiar < 0.5 * novel, (familiar, novel)


LEARNERS = {
    "a3c": ["--algo", "a3c", "--num-workers", "0", "--env-id", "Corridor-v0", "--set", "max_global_steps=600"],
    "dqn": ["--algo", "dqn", "--num-workers", "0", "--env-id", "Corridor-v0", "--set", "max_global_steps=800",
            "--set", "learning_starts=200", "--set", "replay_ratio=16", "--set", "batch_size=64"],
    "sac": ["--algo", "sac", "--env-id", "Pendulum-v1", "--set", "max_global_steps=600", "--set",
            "learning_starts=256"],
    "impala": ["--algo", "impala", "--num-workers", "0", "--env-id", "Corridor-v0", "--set", "max_global_steps=1600"],
}


def test_disagreement_trains_with_every_learner_that_takes_a_bonus(tmp_path):
    """`--unsup disagreement` with each learner in one process, side by side: every episode gets a bonus, and where
    the states repeat (the corridor) the ensemble comes to agree on them: the bonus a step falls."""
    import csv

    from conftest import side_by_side

    results = side_by_side("train.py", *([*flags, "--unsup", "disagreement", "--log-dir", tmp_path / algo]
                                         for algo, flags in LEARNERS.items()))
    for algo, result in zip(LEARNERS, results):
        assert result.returncode == 0, (algo, result.stderr[-3000:])
        rows = list(csv.DictReader(open(tmp_path / algo / "episodes_0.csv")))
        per_step = [float(row["bonus"]) / int(row["length"]) for row in rows]
        assert len(rows) >= 3 and all(value > 0 for value in per_step), (algo, per_step)
        assert per_step[-1] < 0.5 * per_step[0], (algo, per_step)
