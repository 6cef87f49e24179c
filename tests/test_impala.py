"""IMPALA (impala.py): V-trace against the paper's sums and by hand, the trajectories' packing and targets, the
learner's update, and real runs: one process learns CartPole, a learner and two actors on TensorFlow's runtime,
and every kind of bonus composing with it."""
import csv
import json
import statistics
from types import SimpleNamespace

import numpy as np
import pytest

import preloaded
from acting import PartialRollout
from model import LSTMState

import impala
import plots


def test_vtrace_on_policy_is_the_n_step_return_and_its_advantage_by_hand():
    """pi = mu: v_s is the discounted rewards to the end plus the bootstrap; the advantage r + gamma v_s+1 - V."""
    targets, advantages = impala.vtrace_reference(np.zeros(3), [0.9] * 3, [1.0, 0.0, 2.0], [0.5, 1.0, 1.5],
                                                  bootstrap=2.0)
    # v_2 = 2 + 0.9 x 2; v_1 = 0 + 0.9 x v_2; v_0 = 1 + 0.9 x v_1
    assert targets == pytest.approx([4.078, 3.42, 3.8])
    assert advantages == pytest.approx([1 + 0.9 * 3.42 - 0.5, 0 + 0.9 * 3.8 - 1.0, 2 + 0.9 * 2 - 1.5])


def test_vtrace_off_policy_clips_the_ratios_and_stops_at_a_termination_by_hand():
    """pi/mu = 2 then 0.5, the episode terminated at the second step (its discount 0: the bootstrap unused)."""
    targets, advantages = impala.vtrace_reference(np.log([2.0, 0.5]), [0.9, 0.0], [1.0, 1.0], [1.0, 2.0],
                                                  bootstrap=5.0)
    # rho_0 = c_0 = min(1, 2) = 1, rho_1 = c_1 = 0.5; delta_0 = 1 (1 + 0.9 x 2 - 1) = 1.8, delta_1 = 0.5 (1 - 2)
    assert targets == pytest.approx([1 + 1.8 + 0.9 * 1 * -0.5, 2 - 0.5])
    assert advantages == pytest.approx([1 + 0.9 * 1.5 - 1, 0.5 * (1 - 2)])


@pytest.mark.parametrize("clips", [(1.0, 1.0, 1.0), (2.0, 1.5, 0.7)])
def test_the_graphs_vtrace_is_the_papers_sums_on_padded_trajectories(graph, clips):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    lengths, steps = np.array([6, 3, 1, 5]), 6
    mask = (np.arange(steps)[None] < lengths[:, None]).astype(np.float32)
    log_rhos = rng.normal(0, 0.8, (4, steps)).astype(np.float32)
    rewards = rng.normal(0, 1, (4, steps)).astype(np.float32)
    discounts = np.full((4, steps), 0.95, np.float32)
    discounts[1, 2] = 0.0  # the second one terminated at its last step
    values = rng.normal(0, 1, (4, steps + 1)).astype(np.float32)  # V(x_0 .. x_T); x_length's value: the bootstrap
    with tf.compat.v1.Session() as session:
        targets, advantages = session.run(impala.vtrace(
            tf.constant(log_rhos), tf.constant(discounts), tf.constant(rewards), tf.constant(values[:, :-1]),
            tf.constant(values[:, 1:]), tf.constant(mask), *clips))
    for row, length in enumerate(lengths):
        expected = impala.vtrace_reference(log_rhos[row, :length], discounts[row, :length], rewards[row, :length],
                                           values[row, :length], values[row, length], *clips)
        assert targets[row, :length] == pytest.approx(expected[0], abs=1e-5)
        assert advantages[row, :length] == pytest.approx(expected[1], abs=1e-5)
        assert not targets[row, length:].any() and not advantages[row, length:].any()


def rollout(length, terminal=False, start=0.0, lstm=4):
    made = PartialRollout(LSTMState(np.full((1, lstm), start + 0.5, np.float32), np.full((1, lstm), start, np.float32)))
    for step in range(length):
        made.add(np.full(2, start + step, np.float32), step % 2, 1.0 + step, 0.0)
        made.behaviour_log_probs.append(-0.1 * step)
    made.bonuses = [0.5] * length
    made.last_observation = np.full(2, start + length, np.float32)
    made.terminal = made.episode_end = terminal
    made.next_episode_value_int = 7.0 if terminal else 0.0
    return made


def test_unrolls_are_packed_with_each_rollouts_frames_steps_and_the_lstm_state_of_the_first():
    """Unrolls of 4 steps (5 frames): one rollout of 4 steps; and a rollout of 1 step whose episode terminated, then
    the next episode's first 2 steps: frames 10 11 | 20 21 22, the LSTM reset at frame 2, no step at frame 1 (the
    frame after the first rollout's last step)."""
    columns = impala.trajectory_columns((2,), 4, 4)
    packed = dict(zip([column.name for column in columns],
                      impala.pack([[rollout(4)], [rollout(1, True, 10.0), rollout(2, False, 20.0)]], columns)))
    assert packed["frames"].shape == (2, 5, 2) and packed["frames"][1, :, 0].tolist() == [10, 11, 20, 21, 22]
    assert packed["resets"].tolist() == [[0] * 5, [0, 0, 1, 0, 0]] and packed["length"].tolist() == [5, 5]
    assert packed["actions"].tolist() == [[0, 1, 0, 1], [0, 0, 0, 1]]
    assert packed["mask"].tolist() == [[1, 1, 1, 1], [1, 0, 1, 1]]
    assert packed["rewards"][1].tolist() == [1, 0, 1, 2] and packed["bonuses"][1].tolist() == [0.5, 0, 0.5, 0.5]
    assert packed["behaviour_log_probs"][0] == pytest.approx([0, -0.1, -0.2, -0.3])
    assert packed["terminal"].tolist() == [[0] * 4, [1, 0, 0, 0]] and packed["episode_end"][1].tolist() == [1, 0, 0, 0]
    assert packed["next_episode_value_int"][1].tolist() == [7, 0, 0, 0]
    assert packed["c"][1].tolist() == [10.5] * 4 and packed["h"][0].tolist() == [0.0] * 4
    sequences, actions = impala.unroll_rollouts(packed)
    assert [sequence[:, 0].tolist() for sequence in sequences] == [[0, 1, 2, 3, 4], [10, 11], [20, 21, 22]]
    assert actions.tolist() == [0, 1, 0, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="an unroll of 6 frames does not fit in 5"):
        impala.pack([[rollout(2), rollout(2)]], columns)


def test_an_actor_sends_each_rollout_alone_or_an_environments_rollouts_once_they_fill_an_unroll():
    made = []
    for env, end in ((0, False), (1, True), (0, True)):
        made.append(rollout(2))
        made[-1].env, made[-1].unroll_end = env, end
    assert impala.fill_unrolls({}, made, through=False) == [[made[0]], [made[1]], [made[2]]]
    pending = {}
    assert impala.fill_unrolls(pending, made, through=True) == [[made[1]], [made[0], made[2]]] and pending == {}


def test_the_graphs_vtrace_on_an_unroll_of_two_rollouts_is_each_ones_sums(graph):
    """A rollout of 3 steps cut by its time limit (bootstrapped from the value of the frame after it), then one of 2
    that terminated: the graph's V-trace over the unroll's 7 frames is the paper's sums over each rollout alone."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    mask = np.array([[1, 1, 1, 0, 1, 1]], np.float32)
    discounts = np.array([[0.9, 0.9, 0.9, 0.9, 0.9, 0.0]], np.float32) * mask
    log_rhos, rewards = (rng.normal(0, 0.8, (1, 6)).astype(np.float32) for _ in range(2))
    values = rng.normal(0, 1, (1, 7)).astype(np.float32)
    with tf.compat.v1.Session() as session:
        targets, advantages = session.run(impala.vtrace(
            tf.constant(log_rhos), tf.constant(discounts), tf.constant(rewards), tf.constant(values[:, :-1]),
            tf.constant(values[:, 1:]), tf.constant(mask)))
    for steps in (slice(0, 3), slice(4, 6)):
        expected = impala.vtrace_reference(log_rhos[0, steps], discounts[0, steps], rewards[0, steps],
                                           values[0, steps], values[0, steps.stop])
        assert targets[0, steps] == pytest.approx(expected[0], abs=1e-5)
        assert advantages[0, steps] == pytest.approx(expected[1], abs=1e-5)
    assert targets[0, 3] == advantages[0, 3] == 0.0


def test_the_learners_policy_runs_each_rollout_of_an_unroll_as_if_alone(graph):
    """The learner's feed of an unroll of a rollout of 3 steps, then a new episode's 2: the policy's values over its
    frames are the first rollout's from its own LSTM state, then the second's from the zero state."""
    import tensorflow as tf

    import constants
    from model import LSTMPolicy
    from sessions import global_step_variable

    tf1 = tf.compat.v1
    config = constants.config_from_overrides(["lstm_size=4"], "impala_classic")
    network = LSTMPolicy((2,), 2, lstm_size=4)
    learning = impala.VTraceLearning(network, None, config, global_step_variable(), "none")
    columns = impala.trajectory_columns((2,), 6, 4)
    first, second = rollout(3, True, 1.0), rollout(2, False, 5.0)
    second.features = network.initial_state(1)  # a new episode's
    batch = dict(zip([column.name for column in columns], impala.pack([[first, second]], columns)))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        values = session.run(network.value, learning.feed(batch, impala.targets_inputs(batch, config)))
        alone = [session.run(network.value, {network.x: np.array(each.observations + [each.last_observation])[None],
                                             network.state_in.c: each.features.c, network.state_in.h: each.features.h})
                 for each in (first, second)]
    np.testing.assert_allclose(values[:7], np.concatenate(alone), rtol=1e-5, atol=1e-6)


def test_the_targets_rewards_and_discounts_one_stream_and_two(graph):
    """One stream: the scaled extrinsic reward plus the bonus, clipped as A3C's; a terminated trajectory's last
    discount 0. Two streams: the bonus alone; a non-episodic bonus's return goes on over the episode's end, from
    the next episode's value."""
    from a3c import IntrinsicStream

    columns = impala.trajectory_columns((2,), 4, 4)
    batch = dict(zip([column.name for column in columns], impala.pack([[rollout(4)], [rollout(2, True)]], columns)))
    config = SimpleNamespace(reward_scale=0.1, gamma=0.9)
    one = impala.targets_inputs(batch, config, reward_clip=0.55)
    assert one.mask.tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    assert one.rewards[0] == pytest.approx([0.55, 0.55, 0.55, 0.55])  # 0.1 r + 0.5, clipped
    assert one.discounts == pytest.approx(np.array([[0.9] * 4, [0.9, 0, 0, 0]]))
    two = impala.targets_inputs(batch, config, intrinsic=IntrinsicStream(0.99, 2.0, 1.0, episodic=False))
    assert two.rewards[0] == pytest.approx([0.1, 0.2, 0.3, 0.4]) and two.rewards_int[1].tolist() == [0.5, 0.5, 0, 0]
    assert two.discounts_int[1] == pytest.approx([0.99, 0.99, 0, 0]) and two.given_int[1].tolist() == [0, 1, 0, 0]
    episodic = impala.targets_inputs(batch, config, intrinsic=IntrinsicStream(0.99, 2.0, 1.0, episodic=True))
    assert episodic.discounts_int[1] == pytest.approx([0.99, 0, 0, 0]) and not episodic.given_int.any()


def episodes(path):
    with open(path) as handle:
        return [float(row["reward"]) for row in csv.DictReader(handle)]


def test_one_process_impala_learns_cartpole(tmp_path):
    """The learner and its actor thread: CartPole's return, 22 for a random policy, climbs past 80 within 25,000
    steps and stays well above chance. The actor thread runs beside the learner, so no two runs are alike: over 8
    runs the best 20 episodes in a row averaged 112-160 and the last 100 92-115, where the last 20 alone once fell
    to 78 after 194 a few episodes before."""
    result = preloaded.run("train.py", "--algo", "impala", "--num-workers", "0", "--env-id", "CartPole-v1",
                           "--log-dir", tmp_path, "--no-tensorboard", "--set", "max_global_steps=25000", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    rewards = episodes(tmp_path / "episodes_0.csv")
    best = plots.trailing_mean(np.array(rewards), 20)[19:].max()  # the best 20 episodes in a row
    assert best > 80 and statistics.mean(rewards[-100:]) > 50, (best, rewards[-100:])
    beat = json.load(open(tmp_path / "status_local.json"))
    assert beat["state"] == "stopped" and beat["steps_trained"] == beat["global_step"] >= 25000, beat


def bonus_trained(log_dir, tasks):
    """The checkpoint's variables, once the bonus reached the actors' episodes and the learner's Adam trained it."""
    import tensorflow as tf

    for task in tasks:
        with open(log_dir / f"episodes_{task}.csv") as handle:
            assert sum(float(row["bonus"]) for row in csv.DictReader(handle)) > 0
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    names = dict(tf.train.list_variables(latest))
    assert any(name.startswith("global/predictor/") and "PredictorAdam" in name for name in names), sorted(names)
    return latest, names


def test_a_learner_and_two_actors_with_the_icm_train_on_every_step_played_and_checkpoint(tmp_path):
    """worker.py processes on TensorFlow's runtime: both actors' trajectories reach the learner through the queue,
    each actor's copy of the ICM gives their bonus, the learner trains on every step they played and trains the
    ICM, checkpoints at the end; playback restores the policy as A3C's."""
    from test_distributed import free_exp_id

    result = preloaded.run("train.py", "--algo", "impala", "--num-workers", "2", "--mode", "child",
                           "--no-tensorboard", "--env-id", "CartPole-v1", "--log-dir", tmp_path, "--expId",
                           free_exp_id(2, 480), "--unsup", "action", "--set", "max_global_steps=5000", timeout=300)
    assert result.returncode == 0 and "every learner finished" in result.stdout, result.stdout + result.stderr
    learner = json.load(open(tmp_path / "status_learner.json"))
    assert learner["steps_trained"] == learner["global_step"] >= 5000 and learner["updates"] > 30, learner
    played = [len(episodes(tmp_path / f"episodes_{actor}.csv")) for actor in (0, 1)]
    for actor in (0, 1):  # each actor fed the learner (one may start late under load: how much it fed varies)
        beat = json.load(open(tmp_path / f"status_{actor}.json"))
        assert beat["name"] == f"a-{actor}" and beat["steps_trained"] > 0 and played[actor] >= 1, (beat, played)
    assert sum(played) > 40, played
    latest, _ = bonus_trained(tmp_path, (0, 1))
    assert int(latest.rsplit("-", 1)[1]) == learner["global_step"]
    played = preloaded.run("demo.py", "--log-dir", tmp_path, "--greedy", "--episodes", "1")
    assert played.returncode == 0 and "episode 1: reward" in played.stdout, played.stdout + played.stderr


@pytest.mark.parametrize("unsup, unrolls", [("rnd", "cut"), ("ride", "through")])
def test_a_two_stream_bonus_and_an_episodic_memory_compose_with_impala(tmp_path, unsup, unrolls):
    """RND (two streams, statistics the actor merges into the learner's) and RIDE (a memory of the episode, here in
    unrolls through episodes' ends): the actor's copy computes the bonus, the learner trains the predictor."""
    import tensorflow as tf

    result = preloaded.run("train.py", "--algo", "impala", "--num-workers", "0", "--env-id", "CartPole-v1",
                           "--log-dir", tmp_path, "--no-tensorboard", "--unsup", unsup, "--set",
                           "max_global_steps=3000", "--set", "rnd_warm_up_steps=100", "--set", f"unrolls={unrolls}",
                           timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    latest, names = bonus_trained(tmp_path, (0,))
    if unsup == "rnd":  # the acted steps merged into the learner's statistics, beyond the warm-up's
        seen = [name for name in names if name.startswith("global/predictor/") and name.endswith("observation_count")]
        assert seen and tf.train.load_variable(latest, seen[0]) > 2000


def test_rides_models_each_train_by_an_rmsprop_of_their_own_with_their_own_clip(graph):
    """predictor_optimizer rmsprop (RIDE's code): the embedding, the forward and the inverse model each have an
    RMSProp, each model's gradient clipped on its own; one step of each is PyTorch's RMSProp by hand (RIDE's; its mean
    square starts at 0). With adam, one Adam and one clip for all of them."""
    import tensorflow as tf

    import constants
    import curiosity

    tf1 = tf.compat.v1
    bonus = curiosity.build("ride", (7, 7, 3), 7)
    parts = bonus.parts()
    assert sorted(parts) == ["embedding", "forward", "inverse"]
    assert sorted(v.name for part in parts.values() for v in part) == sorted(v.name for v in bonus.var_list)
    layers = {part: {v.name.split("/")[-2] for v in variables} for part, variables in parts.items()}
    assert layers == {"embedding": {"l1", "l2", "l3", "l4"}, "forward": {"f1", "flast"}, "inverse": {"g1", "glast"}}

    clip = 1e-3  # far below every model's gradient norm: each is scaled to it on its own
    config = constants.config_from_overrides(["predictor_optimizer=rmsprop", f"grad_norm_clip={clip}",
                                              "learning_rate=1"], "impala_minigrid")  # steps float32 can tell
    loss = bonus.training_loss(config)
    updates, norms = impala.bonus_updates(bonus, loss, config)
    assert [type(optimizer).__name__ for optimizer, _, _ in updates] == ["TorchRMSProp"] * 3
    adam, _ = impala.bonus_updates(bonus, loss, constants.config_from_overrides([], "impala_classic"))
    assert [(type(optimizer).__name__, len(variables)) for optimizer, _, variables in adam] == [
        ("AdamOptimizer", len(bonus.var_list))]
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 6, (9, 7, 7, 3)).astype(np.float32)
    feed = bonus.feed_sequences([frames], rng.integers(0, 7, 8))
    apply = tf.group(*[optimizer.apply_gradients(zip(gradients, variables)) for optimizer, gradients, variables
                       in updates])
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        before, raw, part_norms = session.run([bonus.var_list, tf.gradients(loss, bonus.var_list), norms], feed)
        session.run(apply, feed)
        after = session.run(bonus.var_list)
    assert min(part_norms) > clip
    index = {v.name: i for i, v in enumerate(bonus.var_list)}
    for (_, _, variables), norm in zip(updates, part_norms):
        for variable in variables:
            i = index[variable.name]
            gradient = raw[i] * clip / norm  # clipped by its own model's norm alone
            step = config.learning_rate * gradient / (
                np.sqrt((1 - config.rmsprop_decay) * gradient ** 2) + config.rmsprop_epsilon)
            np.testing.assert_allclose(before[i] - after[i], step, rtol=1e-2, atol=1e-6)


@pytest.mark.parametrize("form", ["tensorflow", "pytorch"])
def test_rmsprop_of_each_form_steps_as_its_library_by_hand(graph, form):
    """rmsprop_form: TensorFlow's RMSProp (v from 1, epsilon under the root) and PyTorch's (v from 0, epsilon added
    to the root, RIDE's), three annealed steps of each against the formulas written out; PyTorch's first step is
    about 10 times the rate where TensorFlow's is about the rate times the gradient."""
    import tensorflow as tf

    import constants

    tf1 = tf.compat.v1
    config = constants.config_from_overrides([f"rmsprop_form={form}", "rmsprop_epsilon=1e-5"], "impala_classic")
    weights = tf1.get_variable("w", initializer=np.array([0.5, -0.3, 0.0], np.float32))
    gradient = tf1.placeholder(tf.float32, [3])
    rate = tf1.placeholder(tf.float32, [])
    step = impala.rmsprop(config, rate, "RMSProp").apply_gradients([(gradient, weights)])
    gradients = np.array([[0.02, -0.001, 0.3], [0.01, 0.002, -0.2], [-0.03, 0.0, 0.1]], np.float32)
    rates = [1e-3, 5e-4, 2e-4]
    expected, mean_square = np.array([0.5, -0.3, 0.0]), np.full(3, 1.0 if form == "tensorflow" else 0.0)
    moves = []
    for g, r in zip(gradients, rates):
        mean_square = config.rmsprop_decay * mean_square + (1 - config.rmsprop_decay) * g ** 2
        if form == "tensorflow":
            move = r * g / np.sqrt(mean_square + config.rmsprop_epsilon)
        else:
            move = r * g / (np.sqrt(mean_square) + config.rmsprop_epsilon)
        expected, moves = expected - move, moves + [move]
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        for g, r in zip(gradients, rates):
            session.run(step, {gradient: g, rate: r})
        np.testing.assert_allclose(session.run(weights), expected, rtol=1e-5, atol=1e-8)
    first = np.abs(moves[0][0]) / rates[0]
    assert first > 9 if form == "pytorch" else first < 0.03


def test_pytorchs_rmsprop_steps_a_gathered_variable_as_a_dense_one(graph):
    """A gradient through tf.gather comes as IndexedSlices (a repeated index summed by TensorFlow's optimiser):
    TorchRMSProp's sparse path scatters it into the dense gradient and steps as the dense path does."""
    import tensorflow as tf

    import constants

    tf1 = tf.compat.v1
    config = constants.config_from_overrides(["rmsprop_form=pytorch"], "impala_classic")
    initial = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    sparse, dense = (tf1.get_variable(name, initializer=initial) for name in ("sparse", "dense"))
    weights = tf.constant([[0.5, -1.0], [2.0, 0.25], [0.1, 0.3]])
    sparse_loss = tf.reduce_sum(tf.gather(sparse, [0, 2, 0]) * weights)
    dense_loss = tf.reduce_sum(tf.stack([dense[0], dense[2], dense[0]]) * weights)
    optimizer = impala.rmsprop(config, 0.01, "RMSProp")
    gradients = optimizer.compute_gradients(sparse_loss + dense_loss, [sparse, dense])
    assert isinstance(gradients[0][0], tf.IndexedSlices) and not isinstance(gradients[1][0], tf.IndexedSlices)
    step = optimizer.apply_gradients(gradients)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        for _ in range(3):
            session.run(step)
        after_sparse, after_dense = session.run([sparse, dense])
    np.testing.assert_allclose(after_sparse, after_dense, rtol=1e-6)
    assert after_sparse[1].tolist() == initial[1].tolist() and not np.allclose(after_sparse[0], initial[0])


def test_the_doom_preset_steps_about_its_rate_on_the_small_gradients_of_a_bonus(graph):
    """--preset auto on Doom picks impala_doom, which trains the policy by A3C's Adam, a step about its rate a weight on
    gradients of 4e-3 (the ICM's on doomSparse); so does its RMSProp with epsilon 1e-8 (`--set
    policy_optimizer=rmsprop`) once its mean square has settled, where the `impala` preset's epsilon of 0.01 under
    the root keeps its steps under a tenth of its rate (the policy that did not move:
    history/2026-12-06-impala-doom.md)."""
    import tensorflow as tf

    import algorithms
    import constants

    tf1 = tf.compat.v1
    assert algorithms.IMPALA.preset("image", "doom", "action") == "impala_doom"
    settings = {"impala_doom": [], "impala_doom rmsprop": ["policy_optimizer=rmsprop"], "impala": []}
    ratios, optimizers = {}, {}
    for number, (name, overrides) in enumerate(settings.items()):
        config = constants.config_from_overrides(overrides, name.split()[0])
        weights = tf1.get_variable(f"w_{number}", initializer=np.zeros(3, np.float32))
        with tf1.variable_scope(f"setting_{number}"):
            optimizers[name] = impala.policy_optimizer(config, config.learning_rate)
            step = optimizers[name].apply_gradients([(tf.constant([4e-3, -4e-3, 4e-3]), weights)])
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            for _ in range(1500):  # 0.99 ** 1500: RMSProp's mean square's start at 1 forgotten
                before = session.run(weights)
                session.run(step)
            ratios[name] = float(np.abs(session.run(weights) - before).mean()) / config.learning_rate
    assert isinstance(optimizers["impala_doom"], tf1.train.AdamOptimizer), optimizers
    assert isinstance(optimizers["impala"], tf1.train.RMSPropOptimizer), optimizers
    assert 0.9 < ratios["impala_doom"] < 1.1, ratios
    assert 0.9 < ratios["impala_doom rmsprop"] < 1.1, ratios
    assert ratios["impala"] < 0.1, ratios


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
def test_the_learner_trains_the_policy_by_the_optimizer_asked(graph, optimizer):
    """policy_optimizer: the learner's first update moves each of the policy's weights with a gradient by Adam's
    first step, the rate (A3C's optimizer), or by TensorFlow's RMSProp's, whose mean square starts at 1: the rate
    times the gradient, far less."""
    import tensorflow as tf

    import constants
    from model import LSTMPolicy
    from sessions import global_step_variable

    tf1 = tf.compat.v1
    config = constants.config_from_overrides(["lstm_size=4", f"policy_optimizer={optimizer}", "learning_rate=1e-3",
                                              "anneal_lr=false"], "impala_classic")
    tf1.set_random_seed(0)
    network = LSTMPolicy((2,), 2, lstm_size=4)
    learning = impala.VTraceLearning(network, None, config, global_step_variable(), "none")
    columns = impala.trajectory_columns((2,), 4, 4)
    batch = dict(zip([column.name for column in columns], impala.pack([[rollout(4)], [rollout(3, True)]], columns)))
    feed = learning.feed(batch, impala.targets_inputs(batch, config))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        before, gradients = session.run([network.var_list, tf.gradients(learning.loss, network.var_list)], feed)
        session.run(learning.apply, feed)
        after = session.run(network.var_list)
    scale = min(1.0, config.grad_norm_clip / np.sqrt(sum(np.sum(g ** 2) for g in gradients)))
    kept = [np.abs(g * scale) > 1e-5 for g in gradients]  # clipped, far above Adam's epsilon of 1e-8
    moved = np.concatenate([np.abs(a - b)[k] for a, b, k in zip(after, before, kept)])
    assert moved.size > 100
    if optimizer == "adam":
        np.testing.assert_allclose(moved, config.learning_rate, rtol=0.05)
    else:
        assert config.rmsprop_form == "tensorflow"
        clipped = np.concatenate([np.abs(g * scale)[k] for g, k in zip(gradients, kept)])
        step = config.learning_rate * clipped / np.sqrt(config.rmsprop_decay + (1 - config.rmsprop_decay) * clipped ** 2
                                                        + config.rmsprop_epsilon)
        np.testing.assert_allclose(moved, step, rtol=0.05, atol=1e-7)
