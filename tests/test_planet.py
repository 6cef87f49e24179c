"""planet.py: the world model's parts against hand computations (the KL of diagonal Gaussians, free nats, the 5-bit
quantisation and its inverse, the Gaussian log-likelihood) and the cross-entropy method on a known quadratic."""
import math

import numpy as np
import pytest
import tensorflow as tf

import logdir
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


def test_the_rssm_prior_imagines_without_the_observation_and_the_posterior_sees_it():
    """Shapes, the stddev's floor, and causality by gradients (the samples are random, their dependence is not): the
    last step's prior does not depend on its observation, its posterior does, and no earlier step does."""
    rssm = planet.RSSM(state_size=4, belief_size=6, hidden_size=8)
    batch, time = 3, 5
    embeddings = tf.constant(np.random.default_rng(0).normal(size=(batch, time, 7)), tf.float32)
    priors, posteriors = rssm.observe(embeddings, tf.zeros([batch, time, 2]))
    imagined = rssm.imagine({key: value[:, -1] for key, value in posteriors.items()}, tf.zeros([batch, 4, 2]))

    def reaches(output):  # |d sum(output) / d the last step's embedding|
        return tf.reduce_sum(tf.abs(tf.gradients(tf.reduce_sum(output), embeddings)[0][:, -1]))

    checks = [reaches(priors["mean"][:, -1]), reaches(posteriors["mean"][:, -1]),
              reaches(posteriors["mean"][:, :-1]), reaches(imagined["mean"])]
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        first, second, future, gradients = session.run([priors, posteriors, imagined, checks])
    assert first["mean"].shape == (batch, time, 4) and first["belief"].shape == (batch, time, 6)
    assert future["sample"].shape == (batch, 4, 4) and future["belief"].shape == (batch, 4, 6)
    assert min(first["stddev"].min(), second["stddev"].min()) >= 0.1, "the stddev's floor"
    assert np.allclose(first["belief"], second["belief"]), "the posterior keeps the prior's belief"
    prior_last, posterior_last, posterior_before, imagination = gradients
    assert prior_last == 0.0 and posterior_before == 0.0, "nothing before an observation depends on it"
    assert posterior_last > 0.0 and imagination > 0.0, "its posterior does, and what is imagined from it"


def pendulum_like_sequences(rng, batch, time):
    """A deterministic system for the model to learn: the angle moves by 0.5 a_t, the observation is (cos, sin) of
    it, the reward cos of it; random actions. Row t holds o_t, the action that led to it, the reward on arriving."""
    angles = rng.uniform(-np.pi, np.pi, size=(batch, 1))
    actions = rng.uniform(-1, 1, size=(batch, time, 1))
    actions[:, 0] = 0.0
    angle = angles + 0.5 * np.cumsum(actions[..., 0], axis=1)
    observations = np.stack([np.cos(angle), np.sin(angle)], -1)
    return observations.astype(np.float32), actions.astype(np.float32), np.cos(angle).astype(np.float32)


def test_the_observations_density_has_the_models_standard_deviation_and_the_rewards_unit_variance():
    """observation_ll is log N(o; decoded, 0.1^2) summed over the observation's dimensions, by hand from the decoded
    means of the same posterior samples; reward_ll keeps unit variance."""
    model = planet.WorldModel(2, 1, rssm=planet.RSSM(state_size=4, belief_size=8, hidden_size=8), hidden_size=8,
                              observation_stddev=0.1)
    observations, actions, rewards = (tf.constant(x) for x in pendulum_like_sequences(np.random.default_rng(0), 3, 5))
    losses, posteriors = model.losses(observations, actions, rewards)
    features = model.rssm.features(posteriors)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        got, decoded, predicted, o, r = session.run([losses, model.decode(features), model.reward(features),
                                                     observations, rewards])
    log_norm = 0.5 * math.log(2 * math.pi)
    expected = np.mean(np.sum(-0.5 * ((o - decoded) / 0.1) ** 2 - math.log(0.1) - log_norm, -1))
    assert got["observation_ll"] == pytest.approx(expected, rel=1e-4)
    assert got["reward_ll"] == pytest.approx(np.mean(-0.5 * (r - predicted) ** 2 - log_norm), rel=1e-4)


def test_the_world_model_learns_a_deterministic_system_and_plans_toward_its_reward():
    """Its loss falls; its imagined rewards follow the truth; from an angle of 0.8 the planner, whose return is the
    predicted reward (cos of the angle), turns back toward 0 (a negative first action)."""
    time, batch = 12, 16
    model = planet.WorldModel(2, 1, rssm=planet.RSSM(state_size=6, belief_size=32, hidden_size=32), hidden_size=32)
    observations = tf1.placeholder(tf.float32, [None, time, 2])
    actions = tf1.placeholder(tf.float32, [None, time, 1])
    rewards = tf1.placeholder(tf.float32, [None, time])
    losses, posteriors = model.losses(observations, actions, rewards, nats=0.5)
    train, _ = model.train_op(losses["loss"], learning_rate=3e-3)
    last = {key: value[:, -1] for key, value in posteriors.items()}
    plan = model.plan(last, horizon=4, candidates=200, iterations=4, top=20)
    rng = np.random.default_rng(0)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())

        def feed(data):
            return dict(zip((observations, actions, rewards), data))

        held_out = feed(pendulum_like_sequences(np.random.default_rng(1), 64, time))
        before = session.run(losses, held_out)
        for _ in range(400):
            session.run(train, feed(pendulum_like_sequences(rng, batch, time)))
        after = session.run(losses, held_out)
        # one sequence that ends at an angle of 0.8 (its actions zero): the plan from its last posterior
        angle = np.full((1, time), 0.8, np.float32)
        still = (np.stack([np.cos(angle), np.sin(angle)], -1), np.zeros((1, time, 1), np.float32), np.cos(angle))
        first_actions = [session.run(plan, feed(still))[0, 0, 0] for _ in range(5)]
    # unit-variance Gaussians: -log N(x; x, 1) = log(2 pi) / 2 a dimension is the floor of each term
    floor = 0.5 * math.log(2 * math.pi)
    assert before["loss"] > (2 + planet.REWARD_SCALE) * floor + 3.0, before
    assert after["loss"] < (2 + planet.REWARD_SCALE) * floor + 0.5, (before, after)
    assert -after["reward_ll"] < floor + 0.02 and -after["observation_ll"] < 2 * floor + 0.1, after
    assert np.mean(first_actions) < -0.2, first_actions


class CountingEnv:
    """Rewards 1, 2, 3, ... a step; the episode ends at its 5th step."""

    def __init__(self):
        self.steps = 0

    def step(self, action):
        self.steps += 1
        return np.array([self.steps], np.float32), float(self.steps), self.steps == 5, False, {"env_reward": -1.0}


def test_an_action_repeat_sums_the_rewards_stops_at_the_end_and_counts_the_games_steps():
    env = planet.ActionRepeat(CountingEnv(), 3)
    observation, reward, terminated, _, info = env.step(0)
    assert reward == 1 + 2 + 3 and observation[0] == 3 and not terminated and env.env_steps == 3
    assert info["env_reward"] == -3.0, "the game's own reward (logged beside a shaped one) is summed as well"
    observation, reward, terminated, _, _ = env.step(0)
    assert reward == 4 + 5 and terminated and env.env_steps == 5, "cut short by the episode's end"


def test_playback_holds_each_planned_action_for_the_action_repeat():
    import gymnasium as gym

    class Planner:
        calls, horizon, dtype = 0, 2, np.float32

        def act(self, session, observations, rng, noise):
            Planner.calls += 1
            self.last_action = np.array([[Planner.calls / 10.0]], np.float32)
            self.predicted = np.array([100.0 * Planner.calls])  # what the plan of this decision expects
            return self.last_action

        def reset(self, index):
            pass

    agent = planet.LocalAgent(None, Planner(), gym.spaces.Box(-2.0, 2.0, (1,)), repeat=3)
    agent.reset()
    actions = []
    for step in range(1, 8):  # the game's rewards 1 .. 7
        actions.append(float(agent.act(np.zeros(3), True)[0]))
        agent.on_step(np.zeros(3), actions[-1], float(step), False)
    assert Planner.calls == 3, "planned at the 1st, 4th and 7th step"
    assert actions == pytest.approx([0.2] * 3 + [0.4] * 3 + [0.6]), "each in the space's bounds: 2 x the plan"
    agent.reset()
    agent.act(np.zeros(3), True)
    assert Planner.calls == 4, "a new episode plans at once"
    # the model's steps' rewards 1+2+3, 4+5+6, 7: decisions 1 and 2 have the horizon of 2 steps ahead of them
    assert agent.plan_checks() == [(100.0, 6 + 15), (200.0, 15 + 7)]
    assert planet.plan_check([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], 3) == [(1.0, 7.0)]
    assert planet.plan_check([1.0], [1.0], 2) == [], "no decision with the horizon ahead"


def test_the_image_model_encodes_64x64x3_frames_to_1024_and_decodes_them_back_in_one_update():
    """PlaNet's convolutions: 64 -> 31 -> 14 -> 6 -> 2 (x 256 = 1,024), and back to 64x64x3; a batch of quantised
    frames trains (every variable of encoder and decoder gets a gradient)."""
    model = planet.WorldModel((64, 64, 3), 2, rssm=planet.RSSM(state_size=4, belief_size=8, hidden_size=8),
                              hidden_size=8)
    frames = tf.constant(np.random.default_rng(0).integers(0, 256, (2, 3, 64, 64, 3)), tf.uint8)
    observations = planet.quantise(frames, noise=tf.random.uniform([2, 3, 64, 64, 3]))
    embedded = model.encode(observations)
    losses, posteriors = model.losses(observations, tf.zeros([2, 3, 2]), tf.zeros([2, 3]))
    decoded = model.decode(model.rssm.features(posteriors))
    variables = [v for v in model.variables() if "/encoder/" in v.name or "/decoder/" in v.name]
    gradients = tf.gradients(losses["loss"], variables)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        shapes, values = session.run([(tf.shape(embedded), tf.shape(decoded)), gradients])
    assert list(shapes[0]) == [2, 3, 1024] and list(shapes[1]) == [2, 3, 64, 64, 3]
    assert len(variables) == 2 * (4 + 5) and all(np.abs(value).sum() > 0 for value in values)
    with pytest.raises(ValueError, match="vectors or"):
        planet.WorldModel((42, 42, 1), 2)


def test_a_narrower_image_model_has_the_same_layers_with_fewer_filters():
    """cnn_depth 8: the encoder's filters 8, 16, 32, 64 and an embedding of 2 x 2 x 64 = 256; the decoder's 32, 16,
    8, then 3 channels of 64x64."""
    model = planet.WorldModel((64, 64, 3), 1, rssm=planet.RSSM(state_size=4, belief_size=8, hidden_size=8),
                              hidden_size=8, depth=8)
    frames = tf.zeros([1, 2, 64, 64, 3])
    embedded, decoded = model.encode(frames), model.decode(tf.zeros([1, 2, 12]))
    filters = {v.name.split("/")[-2]: v.shape[-1] if "encoder" in v.name else v.shape[-2]
               for v in model.variables() if v.name.endswith("/w:0") and ("conv_" in v.name)}
    assert filters == {"conv_0": 8, "conv_1": 16, "conv_2": 32, "conv_3": 64, "deconv_0": 32, "deconv_1": 16,
                       "deconv_2": 8, "deconv_3": 3}
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        shapes = session.run([tf.shape(embedded), tf.shape(decoded)])
    assert list(shapes[0]) == [1, 2, 256] and list(shapes[1]) == [1, 2, 64, 64, 3]


def tiny_explorer(ensemble_size=5):
    return planet.WorldModel(2, 1, rssm=planet.RSSM(state_size=4, belief_size=8, hidden_size=16), hidden_size=16,
                             ensemble_size=ensemble_size)


def test_plan2explores_novelty_is_zero_for_identical_predictors_and_grows_with_their_spread():
    model = tiny_explorer()
    features, actions = tf.random.normal([6, 12], seed=1), tf.random.normal([6, 1], seed=2)
    novelty = model.novelty(features, actions)  # [6]
    members = [[v for v in model.variables() if f"/ensemble_{index}/" in v.name] for index in range(5)]
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        first = session.run(members[0])
        for variables in members[1:]:
            for variable, value in zip(variables, first):
                variable.load(value, session)
        feed_values = session.run([features, actions])
        feed = dict(zip((features, actions), feed_values))
        assert session.run(novelty, feed) == pytest.approx(np.zeros(6), abs=1e-6)
        spread = []
        for scale in (0.1, 1.0):  # each member's output bias moved by its own noise of this scale
            for index, variables in enumerate(members):
                bias = [v for v in variables if v.name.endswith("out/b:0")][0]
                bias.load(first[-1] + scale * np.random.default_rng(index).normal(size=first[-1].shape), session)
            spread.append(session.run(novelty, feed).mean())
    # the variance of 5 draws of std s, summed over the 16 outputs: about 16 s^2 (5 - 1) / 5
    assert 0 < spread[0] < spread[1] and spread[1] == pytest.approx(100 * spread[0], rel=1e-3), spread
    assert spread[1] == pytest.approx(16 * 0.8, rel=0.5), spread


def test_the_exploring_planner_seeks_the_actions_its_ensemble_has_not_learned():
    """The ensemble learns the next embedding only after actions in [-1, 0]: planning for novelty from any state,
    the first action is positive (where the predictors disagree); planning for the reward it is not driven there."""
    model = tiny_explorer()
    time, batch = 8, 32
    observations = tf1.placeholder(tf.float32, [None, time, 2])
    actions = tf1.placeholder(tf.float32, [None, time, 1])
    losses, posteriors = model.losses(observations, actions, tf.zeros([batch, time]))
    ensemble = [v for v in model.variables() if "/ensemble_" in v.name]
    train = tf1.train.AdamOptimizer(3e-3).minimize(losses["ensemble_loss"], var_list=ensemble)
    last = {key: value[:, -1] for key, value in posteriors.items()}
    plan = model.plan(last, horizon=3, candidates=100, iterations=3, top=10, explore=True)
    rng = np.random.default_rng(0)

    def feed():
        taken = rng.uniform(-1.0, 0.0, (batch, time, 1)).astype(np.float32)
        return {observations: np.cumsum(np.concatenate([taken, taken], -1), axis=1) * 0.1, actions: taken}

    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        for _ in range(300):
            session.run(train, feed())
        known = session.run(model.novelty(tf.zeros([1, 12]), tf.constant([[-0.5]])))
        unknown = session.run(model.novelty(tf.zeros([1, 12]), tf.constant([[0.9]])))
        first = session.run(plan, feed())[:, 0, 0]
    assert unknown[0] > 3 * known[0], (known, unknown)
    assert np.mean(first) > 0.3, first


def test_the_open_loop_prediction_observes_five_steps_and_imagines_the_rest():
    """The imagined part of the prediction has no gradient from the observations after the first five and has one
    from the actions after them (what it sees, checked on random weights); 30 rows at most, the truth beside it."""
    model = planet.WorldModel(3, 1, rssm=planet.RSSM(state_size=4, belief_size=8, hidden_size=16), hidden_size=16)
    open_loop = planet.OpenLoop(model)
    context = planet.OPEN_LOOP_CONTEXT
    imagined = tf.reduce_sum(open_loop.predicted[context:])
    from_observations, from_actions = tf.gradients(imagined, [open_loop.observation, open_loop.action])
    rng = np.random.default_rng(0)
    episode = {"observation": rng.normal(size=(40, 3)).astype(np.float32),
               "action": rng.uniform(-1, 1, (40, 1)).astype(np.float32)}
    rows = slice(0, planet.OPEN_LOOP_STEPS)
    feed = {open_loop.observation: episode["observation"][None, rows], open_loop.action: episode["action"][None, rows]}
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        truth, predicted = open_loop.predict(session, episode)
        observed, acted = session.run([from_observations, from_actions], feed)
    assert truth.shape == predicted.shape == (planet.OPEN_LOOP_STEPS, 3)
    assert np.array_equal(truth, episode["observation"][rows])
    assert np.abs(observed[0, :context]).sum() > 0 and not observed[0, context:].any(), "later frames unseen"
    assert np.abs(acted[0, context:]).sum(axis=1).min() > 0, "each later action drives the imagination"


def test_the_latent_sacs_transitions_pair_each_state_with_the_action_and_reward_that_follow_it():
    features = np.arange(12, dtype=np.float32).reshape(2, 3, 2)  # [B=2, T=3, F=2]
    batch = {"action": np.array([[[0.0], [0.1], [0.2]], [[0.0], [0.3], [0.4]]], np.float32),
             "reward": np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0]], np.float32),
             "discount": np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], np.float32)}  # the second ended at its last
    transitions = planet.latent_transitions(features, batch, gamma=0.9)
    assert transitions["observations"].tolist() == [[0, 1], [2, 3], [6, 7], [8, 9]]
    assert transitions["next_observations"].tolist() == [[2, 3], [4, 5], [8, 9], [10, 11]]
    assert transitions["actions"][:, 0].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert transitions["returns"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert transitions["discounts"].tolist() == pytest.approx([0.9, 0.9, 0.9, 0.0])


def test_with_plan2explore_the_run_collects_for_novelty_and_evaluates_for_the_reward(tmp_path):
    import constants
    import envs

    config = constants.config_from_overrides(["plan2explore=true", "ensemble_size=2", "state_size=4",
                                              "belief_size=8", "hidden_size=8"], "planet_cpu")
    run = planet.LocalRun(str(tmp_path), config,
                          lambda render_mode=None: envs.create_env("Pendulum-v1", continuous_actions=True))
    assert run.planner.explore and not run.eval_planner.explore
    assert any("/ensemble_1/" in v.name for v in run.model.variables()) and "ensemble_loss" in run.learning.losses
    with pytest.raises(constants.UsageError, match="plan2explore plans its exploration: it needs behaviour=planner"):
        planet.behaviour(run.model, constants.config_from_overrides(["plan2explore=true", "behaviour=sac"],
                                                                    "planet_cpu"))


def test_ctrl_c_stops_a_planet_run_between_two_updates_and_the_resumed_run_makes_the_rest_before_it_plays(tmp_path):
    """Ctrl-C during an episode's 10 updates stops them after the one under way (not after all 10), saves, and the
    same run resumed makes the 7 left, then the evaluation due at that step, before its next episode: the updates
    and evaluations fall where an unbroken run has them. An episode stored after the checkpoint is set aside."""
    import types

    import constants
    import envs

    config = constants.config_from_overrides(
        ["random_episodes=2", "collect_every=10", "batch_size=2", "sequence_length=10", "state_size=4",
         "belief_size=8", "hidden_size=8", "cem_candidates=10", "cem_top=2", "cem_iterations=1", "cem_horizon=2",
         "action_repeat=4", "max_global_steps=600"], "planet_cpu")
    interrupt, calls = types.SimpleNamespace(requested=False), []

    def play(interrupt_after):
        with tf.Graph().as_default():
            run = planet.LocalRun(str(tmp_path), config, lambda render_mode=None: envs.create_env(
                "Pendulum-v1", continuous_actions=True), eval_every=400, eval_episodes=1, progress=False)
            learn = run.learning.learn

            def counted(session, writer, step, updates, count, beat=None, stop=lambda: False):
                calls.append((step, updates, count))
                made = [0]

                def beat_and_count():
                    made[0] += 1
                    interrupt.requested = made[0] == interrupt_after  # Ctrl-C during the update after this one
                    beat()
                return learn(session, writer, step, updates, count, beat_and_count, stop)

            run.learning.learn = counted
            with tf1.Session() as session:
                return run.play_and_learn(session, interrupt)

    with pytest.raises(KeyboardInterrupt):
        play(interrupt_after=3)  # the 2 random episodes end at step 400: 10 updates owed, 3 made
    latest = tf1.train.latest_checkpoint(str(tmp_path / "train"))
    assert latest.endswith("-400") and tf1.train.load_variable(latest, "updates") == 3
    # an episode stored after the checkpoint (as by a run killed later): set aside, not trained on nor counted
    stored = sorted((tmp_path / "train_episodes").iterdir())
    late = tmp_path / "train_episodes" / ("z" + stored[-1].name)
    late.write_bytes(stored[-1].read_bytes())
    interrupt.requested = False
    play(interrupt_after=None)
    assert (tmp_path / "rewound" / "train_episodes" / late.name).exists() and not late.exists()
    assert calls == [(400, 0, 10), (400, 3, 7), (600, 10, 10)]
    evaluations = logdir.read_rows(str(tmp_path / logdir.EVAL))
    assert [row["global_step"] for row in evaluations] == ["400", "600"]  # the one at 400 made when resumed
    assert [tf1.train.load_variable(str(tmp_path / "train" / row["checkpoint"]), "updates")
            for row in evaluations] == [10, 20]
