"""The Intrinsic Curiosity Module: loss values, the bonus, gradient routing, and learning."""
import math

import numpy as np
import pytest
import tensorflow as tf

import constants
from conftest import losses_while_training
import envs
from a3c import A3C
from acting import env_runner
from curiosity import (BetaScaler, StateActionPredictor, StatePredictor, forward_loss_per_step, inverse_loss,
                       pixel_loss_per_step)

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def test_inverse_loss_of_zero_logits_over_two_actions_is_ln2(graph):
    loss = inverse_loss(tf.zeros([5, 2]), tf.constant([0, 1, 1, 0, 1]))
    with tf1.Session() as session:
        assert session.run(loss) == pytest.approx(math.log(2), rel=1e-6)


def test_forward_loss_scales_with_the_feature_size(graph):
    """0.5 x mean over 288 features x 288 (the original's scaling) = 0.5 x the sum of squares."""
    predicted = tf.zeros([2, 288])
    target = tf.concat([tf.ones([1, 288]), 2 * tf.ones([1, 288])], axis=0)
    with tf1.Session() as session:
        np.testing.assert_allclose(session.run(forward_loss_per_step(predicted, target)), [144.0, 576.0])


def test_universe_encoder_gives_288_features(graph):
    assert StateActionPredictor((42, 42, 1), 4).feature_size == 288


def curious_trainer(**overrides):
    np.random.seed(0)  # the output-layer initialiser draws from numpy
    config = constants.Config(lstm_size=16, **overrides)
    return A3C(envs.create_env("Corridor-v0", seed=0), 0, config, unsup="action")


def test_gradient_routing(graph):
    trainer = curious_trainer()
    pi, predictor = trainer.local_network, trainer.local_predictor
    assert not set(pi.var_list) & set(predictor.var_list)
    assert all(g is None for g in tf.gradients(trainer.predictor_loss, pi.var_list)), \
        "curiosity must not train the policy"
    assert all(g is None for g in tf.gradients(trainer.loss, predictor.var_list)), \
        "the policy loss must not train the predictor"
    assert tf.gradients(predictor.forward_loss, predictor.action_input) == [None], \
        "the forward loss must not flow into the action input"
    encoder = [v for v in predictor.var_list if "/encoder/" in v.name]
    assert encoder and all(g is not None for g in tf.gradients(predictor.inverse_loss, encoder))


def test_the_icm_on_two_streams_has_its_own_value_head_and_episodic_return(graph):
    trainer = curious_trainer(two_streams=True, gamma_int=0.5)
    pi = trainer.local_network
    assert pi.value_int is not None and trainer.intrinsic.episodic and trainer.intrinsic.gamma == 0.5
    value_int_head = [v for v in pi.var_list if "/value_int/" in v.name]
    assert value_int_head and all(g is not None for g in tf.gradients(trainer.loss, value_int_head))
    assert all(g is None for g in tf.gradients(trainer.loss, trainer.local_predictor.var_list))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        batch = trainer.process()
        trainer.stop()
    assert batch.returns_int is not None and len(batch.returns_int) == len(batch.actions)
    # one environment: the batch is one rollout, whose intrinsic returns follow R_t = b_t + gamma_int R_t+1; the
    # ICM's bonus b_t is positive at every step (the last return also holds V_int's bootstrap, of either sign)
    bonuses = batch.returns_int[:-1] - 0.5 * batch.returns_int[1:]
    assert np.all(bonuses > 0), "the ICM's bonus is positive at every step"


def test_bonus_is_beta_times_the_forward_loss_of_each_step(graph):
    trainer = curious_trainer(prediction_beta=0.25)
    predictor = trainer.local_predictor
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        batches = env_runner(trainer.envs, trainer.local_network, session, 5, lambda stats: None, predictor,
                             BetaScaler(0.25))
        [rollout] = next(batches)
        losses = session.run(predictor.forward_loss_per_step,
                             predictor.feed(rollout.observations, rollout.next_observations(), rollout.actions))
    assert len(rollout.bonuses) == len(rollout) == 5
    np.testing.assert_allclose(rollout.bonuses, 0.25 * losses, rtol=1e-6)
    assert all(bonus > 0 for bonus in rollout.bonuses)


@pytest.mark.learning
def test_forward_loss_falls_on_a_deterministic_environment(graph):
    tf1.set_random_seed(3)
    trainer = curious_trainer(learning_rate=1e-3)
    predictor = trainer.local_predictor
    history = []
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        for _ in range(300):
            batch = trainer.process()
            feed = predictor.feed_sequences(batch.sequences, batch.actions)
            history.append(session.run(trainer.predictor.forward_loss, {
                getattr(trainer.predictor, name): feed[getattr(predictor, name)]
                for name in ("frames", "first", "second", "actions")}))
        trainer.stop()
    assert np.mean(history[-30:]) < 0.3 * np.mean(history[:5])


MAX_UPDATES = 2000  # a bound on waits for episodes: Corridor-v0's time limit ends one every 64 steps at most


def test_no_reward_trains_on_the_bonus_alone(graph):
    trainer = A3C(envs.create_env("Corridor-v0", seed=0, no_reward=True), 0, constants.Config(lstm_size=16),
                  unsup="action")
    finished = []
    learned_from = []  # the rollouts the updates were computed from: what reaches the gradient
    pull = trainer.pull_batch_from_queue

    def pull_and_keep():
        rollouts = pull()
        learned_from.extend(rollouts)
        return rollouts

    trainer.pull_batch_from_queue = pull_and_keep
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, finished.append)
        while len(finished) < 10 and trainer.updates < MAX_UPDATES:
            trainer.process()
        trainer.stop()
    assert len(finished) >= 10, f"10 episodes not ended in {MAX_UPDATES} updates"
    assert all(stats.reward == 0.0 for stats in finished)
    assert any(stats.env_reward == 1.0 for stats in finished), "the game's own reward is still reported"
    assert all(reward == 0.0 for rollout in learned_from for reward in rollout.rewards)
    bonuses = [bonus for rollout in learned_from for bonus in rollout.bonuses]
    assert len(bonuses) == sum(len(rollout) for rollout in learned_from) and min(bonuses) > 0.0


def test_pixel_loss_is_normalised_over_the_image_not_the_batch(graph):
    predicted = tf.zeros([2, 42, 42, 1])
    target = tf.concat([tf.ones([1, 42, 42, 1]), tf.zeros([1, 42, 42, 1])], axis=0)
    with tf1.Session() as session:
        np.testing.assert_allclose(session.run(pixel_loss_per_step(predicted, target)), [0.5, 0.0])


@pytest.mark.parametrize("channels", [1, 4])
def test_state_predictor_predicts_whole_frames(graph, channels):
    predictor = StatePredictor((42, 42, channels), 3)
    frames = np.random.rand(5, 42, 42, channels).astype(np.float32)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        predicted = session.run(predictor.predicted_s2, predictor.feed(frames, frames, [0, 1, 2, 0, 1]))
    assert predicted.shape == (5, 42, 42, channels)


def test_pixel_baselines_refuse_vectors_and_other_heads(graph):
    with pytest.raises(ValueError, match="needs image observations"):
        StatePredictor((4,), 2)
    with pytest.raises(ValueError, match="--designHead universe"):
        StatePredictor((42, 42, 1), 2, design_head="nips", unsup="stateAenc")


def test_state_aenc_bonus_is_the_feature_distance_of_consecutive_frames(graph):
    np.random.seed(0)
    predictor = StatePredictor((42, 42, 1), 2, unsup="stateAenc")
    encoder = tf1.get_default_graph().get_tensor_by_name("encoder/Reshape:0")  # phi(s1), [N, 288]
    frames = np.random.rand(3, 42, 42, 1).astype(np.float32)
    following = np.random.rand(3, 42, 42, 1).astype(np.float32)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        bonus = session.run(predictor.bonus_per_step, predictor.feed(frames, following, [0, 1, 0]))
        phi1 = session.run(encoder, {predictor.frames: frames})
        phi2 = session.run(encoder, {predictor.frames: following})
    np.testing.assert_allclose(bonus, 0.5 * np.mean((phi1 - phi2) ** 2, axis=1), rtol=1e-5)


@pytest.mark.learning
@pytest.mark.parametrize("unsup", ["state", "stateAenc"])
def test_pixel_baselines_train_and_their_loss_falls(graph, unsup):
    np.random.seed(0)
    tf1.set_random_seed(0)
    trainer = A3C(envs.create_env("CorridorPixels-v0", seed=0), 0,
                  constants.Config(lstm_size=16, learning_rate=1e-3), unsup=unsup)
    assert all(g is None for g in tf.gradients(trainer.predictor_loss, trainer.local_network.var_list))
    losses, episodes = losses_while_training(trainer, 200, trainer.local_predictor.forward_loss)
    bonuses = [stats.bonus for stats in episodes]
    assert bonuses and all(bonus > 0 for bonus in bonuses)
    # measured: the last 10 updates' mean 0.055 (state) and 0.057 (stateAenc) of the first 3 updates' at 200
    # updates, 0.17 and 0.15 at 150
    assert np.mean(losses[-10:]) < 0.2 * np.mean(losses[:3])
