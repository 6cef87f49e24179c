"""Soft Actor-Critic: its formulas against hand computations, and one update of the real graph."""
import os
import re

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

import constants
import preloaded
import sac

tf1 = tf.compat.v1


def evaluate(tensor):
    with tf1.Session() as session:
        return session.run(tensor)


def test_the_tanh_gaussian_log_probability_by_hand(graph):
    """u = 0.5 of N(0.2, 0.5): the Gaussian's log density -0.5 (0.3 / 0.5)^2 - log 0.5 - 0.5 log 2 pi = -0.405792,
    less log(1 - tanh(0.5)^2) = -0.240229: -0.165563. Two dimensions sum; u = 20 stays finite (about -38.6 less)."""
    pre_tanh = tf.constant([[0.5], [20.0]])
    log_prob = evaluate(sac.tanh_gaussian_log_prob(pre_tanh, tf.constant([[0.2], [0.2]]),
                                                   tf.math.log(tf.constant([[0.5], [0.5]]))))
    assert log_prob[0] == pytest.approx(-0.165563, abs=1e-5)
    gaussian = -0.5 * (19.8 / 0.5) ** 2 - np.log(0.5) - 0.5 * np.log(2 * np.pi)
    assert np.isfinite(log_prob[1]) and log_prob[1] == pytest.approx(gaussian - 2 * (np.log(2) - 20.0), rel=1e-5)
    two = evaluate(sac.tanh_gaussian_log_prob(tf.constant([[0.5, -1.0]]), tf.constant([[0.2, 0.0]]),
                                              tf.constant([[np.log(0.5), 0.0]], tf.float32)))
    second = -0.5 * 1.0 - 0.5 * np.log(2 * np.pi) - np.log(1 - np.tanh(-1.0) ** 2)
    assert two[0] == pytest.approx(-0.165563 + second, abs=1e-5)


def test_the_twin_q_target_with_the_entropy_term_by_hand(graph):
    """Continuous: min(3, 2) - 0.5 x (-1) = 2.5; y = 1 + 0.9 x 2.5 = 3.25, and 1 where the episode ended (d = 0).
    Discrete: pi = (0.25, 0.75), min Q = (1, 4) (each from another twin): 0.25 (1 - 0.5 log 0.25) + 0.75 (4 - 0.5
    log 0.75) = 3.5312; y = 0.5 + 0.99 x 3.5312 = 3.9959."""
    value = sac.soft_value(tf.constant([3.0, 3.0]), tf.constant([2.0, 2.0]), tf.constant([-1.0, -1.0]), 0.5)
    targets = evaluate(sac.soft_q_targets(tf.constant([1.0, 1.0]), tf.constant([0.9, 0.0]), value))
    np.testing.assert_allclose(targets, [3.25, 1.0], rtol=1e-6)
    probabilities = tf.constant([[0.25, 0.75]])
    discrete = sac.discrete_soft_value(tf.constant([[1.0, 5.0]]), tf.constant([[2.0, 4.0]]), probabilities,
                                       tf.math.log(probabilities), 0.5)
    by_hand = 0.25 * (1 - 0.5 * np.log(0.25)) + 0.75 * (4 - 0.5 * np.log(0.75))
    target = evaluate(sac.soft_q_targets(tf.constant([0.5]), tf.constant([0.99]), discrete))
    assert target[0] == pytest.approx(0.5 + 0.99 * by_hand, rel=1e-6)


@pytest.mark.parametrize("log_prob, direction", [(-0.1, 1.0), (-3.0, -1.0)])
def test_the_temperature_rises_while_the_entropy_is_below_its_target_and_falls_above(graph, log_prob, direction):
    """Target entropy 1: an entropy of 0.1 (log pi -0.1) is below it, so descent on the loss raises log alpha;
    an entropy of 3 lowers it. Discrete: the same through the expectation over actions."""
    log_alpha = tf.Variable(0.0)
    continuous = tf.gradients(sac.temperature_loss(log_alpha, tf.constant([log_prob]), 1.0), log_alpha)[0]
    probabilities = tf.constant([[0.5, 0.5]])
    discrete = tf.gradients(sac.temperature_loss(log_alpha, tf.constant([[log_prob, log_prob]]), 1.0,
                                                 probabilities), log_alpha)[0]
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        gradients = session.run([continuous, discrete])
    for gradient in gradients:
        assert -gradient * direction > 0 and gradient == pytest.approx(-(log_prob + 1.0))


def random_batch(agent, observation_size, size, rng):
    actions = (rng.integers(0, agent.num_actions, size) if agent.discrete
               else rng.uniform(-1, 1, (size, agent.action_size)).astype(np.float32))
    return {"observations": rng.normal(size=(size, observation_size)).astype(np.float32),
            "next_observations": rng.normal(size=(size, observation_size)).astype(np.float32),
            "actions": actions, "returns": rng.normal(size=size).astype(np.float32),
            "discounts": np.full(size, 0.99, np.float32)}


@pytest.mark.parametrize("space", [gym.spaces.Box(-2.0, 2.0, (1,), np.float32), gym.spaces.Discrete(3)])
def test_one_update_trains_each_part_and_moves_the_targets_by_tau(graph, space):
    """After one update: the critics, the actor and the temperature changed; each target variable is (1 - tau) of
    itself plus tau of its critic's new value; actions lie in the space (scaled to [-2, 2])."""
    config = constants.config_from_overrides(["tau=0.25"], "dqn_classic")
    agent = sac.SAC((3,), space, config, "mlp")
    rng = np.random.default_rng(0)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        session.run(agent.copy_to_target)
        before = session.run([agent.actor_variables, agent.critic_variables, agent.target_variables,
                              agent.log_alpha])
        stats, td_errors = agent.train(session, random_batch(agent, 3, 16, rng), np.ones(16, np.float32))
        actor, critic, target, log_alpha = session.run([agent.actor_variables, agent.critic_variables,
                                                        agent.target_variables, agent.log_alpha])
        played, stored = agent.act(session, rng.normal(size=(5, 3)).astype(np.float32), rng)
    assert any(not np.allclose(a, b) for a, b in zip(before[0], actor)), "the actor did not train"
    assert any(not np.allclose(a, b) for a, b in zip(before[1], critic)), "the critics did not train"
    assert log_alpha != before[3]
    for old, new_critic, new_target in zip(before[2], critic, target):
        np.testing.assert_allclose(new_target, 0.75 * old + 0.25 * new_critic, rtol=1e-5, atol=1e-6)
    assert td_errors.shape == (16,) and set(stats) >= {"sac/critic_loss", "sac/actor_loss", "sac/alpha"}
    if agent.discrete:
        assert played.dtype.kind == "i" and set(played) <= {0, 1, 2} and np.array_equal(played, stored)
    else:
        # low + (a + 1) / 2 (high - low) cancels near 0: float32 leaves about 1e-7 of absolute error there
        assert played.shape == (5, 1) and np.all(np.abs(played) <= 2.0)
        np.testing.assert_allclose(played, 2.0 * stored, rtol=1e-5, atol=1e-6)


def train_py(*args):
    return preloaded.run("train.py", *args, timeout=280)


def evaluations(log_dir):
    return [float(line.split()[2]) for line in open(log_dir / "rewards.txt")]


def test_discrete_sac_in_one_process_evaluates_checkpoints_and_resumes(tmp_path):
    """`--algo sac` on the 8-cell corridor (discrete actions), its first 2 episodes random (--prefill-random): an
    evaluation and a checkpoint every 500 steps, an update per step after the warm-up; the same command again
    goes on from the checkpoint (its step and update count) to the new max_global_steps, its replay refilled from
    the stored episodes, so it trains from its first step. (Not whether it learns the corridor: SAC's entropy
    bonus, paid every step, outweighs the corridor's +1 for ending the episode; docs/history/2026-11-25-sac.md.)"""
    import tensorflow as tf

    flags = ["--algo", "sac", "--env-id", "Corridor-v0", "--log-dir", str(tmp_path), "--eval-every", "500",
             "--eval-episodes", "2", "--set", "learning_starts=200", "--set", "batch_size=64",
             "--set", "replay_ratio=64"]
    result = train_py(*flags, "--set", "max_global_steps=1000", "--prefill-random", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(evaluations(tmp_path)) == 2
    assert "prefill: the first 2 episodes play uniformly random actions" in result.stderr
    result = train_py(*flags, "--allow-config-change", "--set", "max_global_steps=1500")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in result.stderr and len(evaluations(tmp_path)) == 3
    assert len(os.listdir(tmp_path / "test_episodes")) == 3 * 2, "each evaluation's 2 episodes, one file each"
    assert re.search(r"refilled the replay with \d+ transitions of the \d+ newest episodes", result.stderr)
    latest = tf.train.latest_checkpoint(str(tmp_path / "train"))
    # 801 updates in the first run (one at the warm-up's end, then one per step), 501 in the second, which trains
    # on its stored episodes from its first step (it would make 301 if it refilled by playing 200 steps first)
    assert latest.endswith("-1500") and tf.train.load_variable(latest, "updates") == 801 + 501


SHORT_PENDULUM = ["--algo", "sac", "--env-id", "Pendulum-v1", "--eval-every", "300", "--eval-episodes", "1",
                  "--set", "max_global_steps=300", "--set", "learning_starts=256"]


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    """A short continuous SAC run (300 steps, 45 updates), shared by the tests that read its checkpoint."""
    log_dir = tmp_path_factory.mktemp("pendulum") / "run"
    result = train_py(*SHORT_PENDULUM, "--log-dir", str(log_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    return log_dir


def test_demo_plays_a_continuous_sac_checkpoint_with_vector_actions(pendulum_run, tmp_path):
    """demo.py on a Pendulum run: the greedy policy (the mean action) is deterministic, so a second playback from
    the same seeds takes the same actions, and the two episodes (two starts) take different ones; recorded."""
    import json

    digests = []
    for index, record in enumerate((["--record"], [])):
        out = tmp_path / f"demo{index}"
        demo = preloaded.run("demo.py", "--log-dir", pendulum_run, "--greedy", *record, "--episodes", "2", "--seed",
                             "0", "--max-steps", "50", "--out", out, timeout=120)
        assert demo.returncode == 0, demo.stderr[-2000:]
        digests.append([episode["actions_digest"] for episode in
                        json.load(open(out / "summary.json"))["episode_details"]])
    assert digests[0] == digests[1] and digests[0][0] != digests[0][1]
    assert (tmp_path / "demo0" / "episode_1.mp4").exists()


def test_a_filtered_restore_loads_the_included_variables_and_leaves_the_rest_fresh(pendulum_run, tmp_path):
    """--pretrain with --restore-include '^actor/' --restore-exclude 'log_std': a new run starts with the source's
    actor but for its log-std layer; its critics, that layer and the temperature start fresh. The learning rate is
    too small to move the weights in its updates, so its checkpoint shows what was loaded. The log says which."""
    import tensorflow as tf

    result = train_py(*SHORT_PENDULUM, "--log-dir", str(tmp_path / "new"), "--pretrain", str(pendulum_run),
                      "--restore-include", "^actor/", "--restore-exclude", "log_std", "--set", "learning_rate=1e-12",
                      "--set", "seed=7")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "pretrain: left out by --restore-include/--restore-exclude: " in result.stderr
    source = tf.train.latest_checkpoint(str(pendulum_run / "train"))
    new = tf.train.latest_checkpoint(str(tmp_path / "new" / "train"))
    names = [name for name, _ in tf.train.list_variables(new) if "adam" not in name.lower()
             and name.split("/")[0] in ("actor", "critic", "log_alpha")]
    loaded = [name for name in names if name.startswith("actor/") and "log_std" not in name]
    assert loaded and len(loaded) < len(names)
    for name in names:
        same = np.allclose(tf.train.load_variable(source, name), tf.train.load_variable(new, name), atol=1e-6)
        assert same == (name in loaded), name


@pytest.mark.parametrize("flags, message", [
    (["--restore-include", "^actor/"], "--restore-include filters what --pretrain restores: give --pretrain too"),
    (["--pretrain", "x", "--restore-exclude", "("], "--restore-exclude '(' is not a regular expression"),
])
def test_bad_restore_filters_are_one_line(flags, message, tmp_path):
    result = train_py(*SHORT_PENDULUM, "--log-dir", str(tmp_path), *flags)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.learning
def test_sac_learns_the_best_action_of_a_continuous_bandit(graph):
    """One-step episodes whose reward is -(a - 0.5)^2, from batches of uniformly random actions: the critics learn
    the parabola and the actor's mean moves from far from 0.5 to its top (the whole loop learning to swing the pendulum
    up is benchmarks/replay_learning.py's: minutes, not a test's)."""
    tf1.set_random_seed(0)
    config = constants.config_from_overrides(["learning_rate=3e-3", "tau=0.05"], "sac_classic")
    agent = sac.SAC((2,), gym.spaces.Box(-1.0, 1.0, (1,), np.float32), config, "mlp")
    rng = np.random.default_rng(0)
    probe = rng.normal(size=(32, 2)).astype(np.float32)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        session.run(agent.copy_to_target)
        start = agent.act(session, probe, rng, greedy=True)[0]
        for _ in range(500):
            actions = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
            batch = {"observations": rng.normal(size=(64, 2)).astype(np.float32),
                     "next_observations": rng.normal(size=(64, 2)).astype(np.float32), "actions": actions,
                     "returns": -np.square(actions[:, 0] - 0.5), "discounts": np.zeros(64, np.float32)}
            agent.train(session, batch, np.ones(64, np.float32))
        learned = agent.act(session, probe, rng, greedy=True)[0]
    assert np.abs(start - 0.5).min() > 0.2 and np.abs(learned - 0.5).max() < 0.15, (start.ravel(), learned.ravel())


def test_each_episode_is_one_npz_in_planets_format_and_comes_back_as_the_same_transitions(tmp_path):
    """The corridor walked right to its end (7 steps): one file, named by time, id and length 7, 8 rows: the reset
    observation with action 0, reward 0, discount 1; discount 0 on the step that terminated it. Read back, its
    n-step transitions are those Acting made while it played."""
    import envs
    import logdir
    import offpolicy

    config = constants.config_from_overrides(["n_step=3", "gamma=0.5"], "dqn_classic")
    acting = offpolicy.Acting([envs.create_env("Corridor-v0")], config, np.float32, seed=0,
                              episodes_dir=str(tmp_path))
    played = [acting.step([1])[0] for _ in range(7)]
    played = [column for step in played if step is not None for column in zip(*step)]
    files = logdir.episode_files(str(tmp_path))
    assert len(files) == 1 and re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{32}-7\.npz", files[0].split("/")[-1])
    (episode,) = logdir.read_episodes(str(tmp_path))
    assert episode["observation"].shape == (8, 8) and episode["observation"][0].argmax() == 0
    assert list(episode["action"]) == [0] + [1] * 7 and list(episode["reward"]) == [0] * 7 + [1]
    assert list(episode["discount"]) == [1] * 7 + [0]
    loaded = list(zip(*offpolicy.transitions_of([episode], config)))
    assert len(loaded) == len(played) == 7
    for mine, theirs in zip(loaded, played):
        for a, b in zip(mine, theirs):
            np.testing.assert_allclose(a, b)


def test_a_truncated_episode_file_is_skipped_with_a_warning_and_unfinished_writes_are_not_read(tmp_path, caplog):
    import logdir

    episode = {"observation": np.zeros((3, 2), np.float32), "action": np.array([[0.0], [0.5], [-0.5]], np.float32),
               "reward": np.array([0, 1, 2], np.float32), "discount": np.ones(3, np.float32)}
    good = logdir.write_episode(str(tmp_path), episode)
    cut = tmp_path / "20000101T000000-cut-2.npz"
    cut.write_bytes(open(good, "rb").read()[:100])
    (tmp_path / "20991231T000000-unfinished-2.npz.tmp").write_bytes(b"partial")
    with caplog.at_level("WARNING"):
        episodes = logdir.read_episodes(str(tmp_path))
    assert len(episodes) == 1 and np.array_equal(episodes[0]["action"], episode["action"])
    assert "skipping episode file" in caplog.text and "cut-2.npz" in caplog.text
    assert logdir.read_episodes(str(tmp_path), max_steps=1) == [], "the newest episode (2 steps) does not fit 1"


def test_the_icms_inverse_model_regresses_continuous_actions(graph):
    """0.5 x the squared error summed over the action's dimensions: prediction (0.5, -0.5) of (1, 0) costs 0.25.
    Built with ContinuousActions, the ICM learns to tell a 2-d action from (s, s') where s' = s + the action (its
    inverse loss falls to a third), and its bonus is fed float actions."""
    import curiosity

    loss = curiosity.inverse_regression_loss(tf.constant([[0.5, -0.5]]), tf.constant([[1.0, 0.0]]))
    with tf1.Session() as session:
        assert session.run(loss) == pytest.approx(0.25)
    module = curiosity.build("action", (4,), curiosity.ContinuousActions(2))
    train = tf1.train.AdamOptimizer(1e-3).minimize(module.inverse_loss, var_list=module.var_list)
    rng = np.random.default_rng(0)

    def batch():
        observations = rng.normal(size=(64, 4)).astype(np.float32)
        actions = rng.uniform(-1, 1, (64, 2)).astype(np.float32)
        return module.feed(observations, observations + np.pad(actions, ((0, 0), (0, 2))), actions)

    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        first = np.mean([session.run(module.inverse_loss, batch()) for _ in range(5)])
        for _ in range(300):
            session.run(train, batch())
        last = np.mean([session.run(module.inverse_loss, batch()) for _ in range(5)])
        assert session.run(module.bonus_per_step, batch()).shape == (64,)
    assert last < first / 3, (first, last)


def test_sac_with_curiosity_on_continuous_actions_adds_the_bonus(tmp_path):
    import csv

    result = train_py(*SHORT_PENDULUM, "--log-dir", str(tmp_path), "--unsup", "action")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "episodes_0.csv")))
    assert rows and all(float(row["bonus"]) > 0 for row in rows)


def test_an_apex_sac_actor_acts_on_its_copy_of_the_policy_randomly_until_learning_starts(graph):
    """--algo sac on a cluster: after a sync the actor's copy of the policy (in a session of its own) gives the
    learner's logits; before the global step reaches learning_starts it plays uniformly random actions, then
    samples the policy (a policy sure of action 2 plays 2); it computes no priorities, so the learner stores its
    transitions at the largest priority seen. Continuous: actions within the bounds, kept in [-1, 1]."""
    import apex

    config = constants.config_from_overrides(["learning_starts=300", "acting_copy=true"], "sac_classic")
    space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    network = apex.ApeXGraph(space, gym.spaces.Discrete(3), config, "mlp", "/cpu:0", "/cpu:0", algo="sac")
    session = tf1.Session()
    session.run(tf1.global_variables_initializer())
    actor = apex.Actor(network, [gym.make("CartPole-v1")], config, 0, 2)
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(6, 4)).astype(np.float32)
    learner = network.network
    logits_bias = next(variable for variable in learner.actor_variables if "logits/b" in variable.name)
    session.run(logits_bias.assign([0.0, 0.0, 50.0]))
    logits = session.run(learner.logits, {learner.observations: observations})
    assert not np.allclose(actor.acting_outputs(session, observations), logits)
    actor.sync(session)
    outputs = actor.acting_outputs(session, observations)
    np.testing.assert_allclose(outputs, logits, rtol=1e-5, atol=1e-5)
    early = np.concatenate([learner.actor_actions(outputs, rng, 299, actor.epsilons)[0] for _ in range(50)])
    assert set(early) == {0, 1, 2}, "uniformly random before learning_starts"
    assert set(learner.actor_actions(outputs, rng, 300, actor.epsilons)[0]) == {2}, "then the policy's"
    assert not learner.actor_priorities
    actor.last_global_step = 299
    assert actor.status() == {"exploration": "random"}, "the status view says what the actor does"
    actor.last_global_step = 300
    assert actor.status() == {"exploration": "policy"}
    actor.close()

    import offpolicy
    import replay

    acting = offpolicy.Acting(actor.envs, config, np.float32, seed=0)
    actor.pending = [acting.step([action])[0] for action in (0, 1, 0)]  # one-step transitions
    actor.unsent_steps = 3
    actor.send(session)
    memory = replay.PrioritizedReplay(100, (4,), np.float32, alpha=0.5)
    memory.max_priority = 4.0  # the largest seen so far: each new transition's, as Schaul et al. insert them
    receiver = apex.Learner(network, config, memory, writer=None)
    assert receiver.receive(session) == 3 and receiver.last_global_step == 3
    receiver.close()
    np.testing.assert_allclose(memory.tree.get(np.arange(3)), [2.0, 2.0, 2.0])

    with tf.Graph().as_default():
        continuous = apex.ApeXGraph(space, gym.spaces.Box(-2.0, 2.0, (2,), np.float32), config, "mlp", "/cpu:0",
                                    "/cpu:0", algo="sac")
    played, stored = continuous.network.actor_actions(rng.uniform(-1, 1, (5, 2)).astype(np.float32), rng, 300, None)
    assert played.shape == stored.shape == (5, 2) and np.all(np.abs(played) <= 2.0) and np.all(np.abs(stored) <= 1.0)
    np.testing.assert_allclose(played, 2.0 * stored, rtol=1e-5, atol=1e-6)


def test_sac_on_a_cluster_fills_the_learners_replay_trains_at_the_replay_ratio_and_its_checkpoint_plays(tmp_path):
    """`--algo sac --num-workers 2`: a learner and 2 actors (worker.py processes) on Pendulum with the ICM; the
    actors' transitions (vector actions) reach the learner's replay through TensorFlow's queue, the learner makes
    the updates the replay ratio owes (one per step after the warm-up: a batch of 64 at a ratio of 64), the
    actors add the bonus, and demo.py plays the learner's checkpoint."""
    import csv
    import json

    from test_distributed import free_exp_id

    log_dir = tmp_path / "run"
    result = train_py("--algo", "sac", "--num-workers", "2", "--env-id", "Pendulum-v1", "--unsup", "action",
                      "--mode", "child", "--no-tensorboard", "--log-dir", str(log_dir), "--expId",
                      str(free_exp_id(2, 480)), "--set", "max_global_steps=1000", "--set", "learning_starts=300",
                      "--set", "batch_size=64", "--set", "replay_ratio=64")
    assert result.returncode == 0 and "every learner finished" in result.stdout, result.stdout + result.stderr
    learner = json.load(open(log_dir / "status_learner.json"))
    assert learner["global_step"] >= 1000 and learner["replay_size"] == learner["inserted"] >= 950, learner
    assert learner["updates"] == learner["inserted"] - 300 + 1, learner
    rows = []
    for actor in (0, 1):  # each sent transitions; which finishes episodes depends on which started first
        actor_status = json.load(open(log_dir / f"status_{actor}.json"))
        assert actor_status["steps_trained"] > 0 and actor_status["exploration"] == "policy", actor_status
        rows += list(csv.DictReader(open(log_dir / f"episodes_{actor}.csv")))
    assert len(rows) >= 3 and all(float(row["bonus"]) > 0 for row in rows), rows
    assert json.load(open(log_dir / "config.json"))["run"]["algo"] == "sac"
    import status

    text = status.render(status.collect(str(log_dir)))
    assert text.startswith(f"run {log_dir}   sac   env Pendulum-v1   curiosity action\n"), text
    assert [line.split()[0] for line in text.splitlines() if line.startswith(("learner ", "a-"))] == [
        "learner", "a-0", "a-1"], text
    assert re.search(r"\na-1 .* explores: policy(\n|$)", text), text
    demo = preloaded.run("demo.py", "--log-dir", log_dir, "--greedy", "--episodes", "1", "--max-steps", "20", "--out",
                         tmp_path / "demo", timeout=120)
    assert demo.returncode == 0 and "checkpoint at global step" in demo.stdout, demo.stdout + demo.stderr
