"""Losses, gradients, network shapes, parameter placement and sync, and learning on a tiny environment."""
import collections
import json
import math

import numpy as np
import pytest
import tensorflow as tf

import constants
import envs
from a3c import A3C, a3c_losses, stack_batches
from acting import RunnerError
from cluster import free_ports
from model import LSTMCell, LSTMPolicy, LSTMState, choose_head, input_gates, lstm_variables

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def test_losses_on_zero_logits(graph):
    logits = tf.zeros([3, 2])
    values = tf.constant([1.0, 2.0, 3.0])
    actions = tf.constant([0, 1, 1])
    advantages = tf.constant([1.0, -2.0, 4.0])
    returns = tf.constant([2.0, 2.0, 1.0])
    losses = a3c_losses(logits, values, actions, advantages, returns)
    grad = tf.gradients(losses.policy, logits)[0]
    with tf1.Session() as session:
        policy, value, entropy, grad = session.run([losses.policy, losses.value, losses.entropy, grad])
    assert entropy == pytest.approx(math.log(2), rel=1e-6)  # uniform over two actions
    assert policy == pytest.approx(math.log(2) * (1 - 2 + 4) / 3, rel=1e-6)  # -mean(log(1/2) * A)
    assert value == pytest.approx(0.5 * (1 + 0 + 4) / 3, rel=1e-6)
    # d(-log softmax(a))/d logits = softmax - one_hot(a), times A / N
    expected = np.array([[-0.5, 0.5], [0.5, -0.5], [0.5, -0.5]]) * np.array([[1.0], [-2.0], [4.0]]) / 3
    np.testing.assert_allclose(grad, expected, rtol=1e-6)


@pytest.mark.parametrize("head,features", [("universe", 288), ("nips", 256), ("nature", 512), ("doom", 256)])
def test_image_heads_act_for_a_batch_of_environments(graph, head, features):
    policy = LSTMPolicy((42, 42, 1), num_actions=4, design_head=head, lstm_size=32)
    assert policy.head == head
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        observations = np.random.rand(3, 42, 42, 1).astype(np.float32)
        actions, values, state = policy.act(session, observations, policy.initial_state(3))
    assert actions.shape == (3,) and values.shape == (3,) and state.c.shape == (3, 32)
    assert set(actions) <= {0, 1, 2, 3}
    assert policy.features.shape[-1] == features


def test_vector_observations_get_the_mlp_head(graph):
    assert choose_head((4,)) == "mlp"
    assert choose_head((42, 42, 1)) == "universe"
    with pytest.raises(ValueError, match="needs image observations"):
        choose_head((4,), "universe")
    with pytest.raises(ValueError, match="does not take images"):
        choose_head((42, 42, 1), "mlp")


def test_mlp_units_sets_the_width_of_the_a3c_and_dqn_trunks_on_vectors(graph):
    import dqn

    def kernels(scope):
        return {v.name.split("/")[-2]: v.shape.as_list() for v in tf1.trainable_variables(scope)
                if v.name.endswith("/w:0") and "/fc" in v.name}

    with tf1.variable_scope("policy"):
        LSTMPolicy((3,), num_actions=2, lstm_size=8, mlp_units=16)
    dqn.DQN((4,), 2, constants.Config(mlp_units=24), "mlp")
    assert kernels("policy") == {"fc1": [3, 16], "fc2": [16, 16]}
    assert kernels("online") == kernels("target") == {"fc1": [4, 24], "fc2": [24, 24]}


def test_lstm_state_carries_information(graph):
    policy = LSTMPolicy((3,), num_actions=2, lstm_size=8)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        zero = policy.initial_state()
        _, value_a, state = policy.act(session, [[1.0, 0.0, 0.0]], zero)
        value_fresh, _ = policy.value_of(session, [[0.0, 1.0, 0.0]], zero)
        value_after, _ = policy.value_of(session, [[0.0, 1.0, 0.0]], state)
    assert not np.allclose(state.h, 0.0)
    assert value_fresh[0] != pytest.approx(value_after[0], abs=1e-7)


def numpy_lstm(features, c, h, kernel, bias, length):
    """A basic LSTM (forget-gate bias 1) written out: gates = [x, h] W + b, split input, candidate, forget, output;
    the outputs of the steps past `length` are zeros and the state stays that of its last real step."""
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    outputs = np.zeros((len(features), len(h)))
    for t, x in enumerate(features[:length]):
        i, j, f, o = np.split(np.concatenate([x, h]) @ kernel + bias, 4)
        c = c * sigmoid(f + 1.0) + sigmoid(i) * np.tanh(j)
        h = outputs[t] = np.tanh(c) * sigmoid(o)
    return outputs, c, h


RandomRun = collections.namedtuple("RandomRun",
                                   ["features", "c", "h", "logits", "kernel", "bias", "w", "b", "c0", "h0"])


def run_random_lstm_policy(seed, batch, steps, feed):
    """An LSTMPolicy on 3 inputs, 2 actions and an LSTM of 5, with random LSTM weights, run on random observations
    [batch, steps, 3] from a random start state, fed `feed(policy)` besides: what the numpy LSTM is checked against
    (its logits [batch, steps, 2])."""
    policy = LSTMPolicy((3,), num_actions=2, lstm_size=5)
    kernel_var, bias_var = [v for v in policy.var_list if "/lstm_cell/gates/" in v.name]
    action_w, action_b = [v for v in policy.var_list if v.name.startswith("action/")]
    rng = np.random.default_rng(seed)
    observations = rng.normal(size=(batch, steps, 3)).astype(np.float32)
    c0, h0 = rng.normal(size=(2, batch, 5)).astype(np.float32)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        session.run([kernel_var.assign(rng.normal(size=kernel_var.shape) / 2),
                     bias_var.assign(rng.normal(size=bias_var.shape) / 2)])
        features, (c, h), logits, kernel, bias, w, b = session.run(
            [policy.features, policy.state_out, policy.logits, kernel_var, bias_var, action_w, action_b],
            {policy.x: observations, policy.state_in.c: c0, policy.state_in.h: h0, **feed(policy)})
    return RandomRun(features, c, h, logits.reshape(batch, steps, 2), kernel, bias, w, b, c0, h0)


def test_the_policys_lstm_is_the_lstm_written_out_over_sequences_of_different_lengths(graph):
    """Random weights, a random start state, sequences of 4, 1 and 3 real steps padded to 4: the state out and the
    logits at every real step are the numpy LSTM's (its gates from the concatenated [x, h]), the padded steps'
    outputs are zeros (the logits their bias)."""
    lengths = [4, 1, 3]
    run = run_random_lstm_policy(1, 3, 4, lambda policy: {policy.lengths: lengths})
    for k, length in enumerate(lengths):
        outputs, c_k, h_k = numpy_lstm(run.features[k], run.c0[k], run.h0[k], run.kernel, run.bias, length)
        np.testing.assert_allclose(run.c[k], c_k, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(run.h[k], h_k, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(run.logits[k], outputs @ run.w + run.b, rtol=1e-4, atol=1e-5)


def test_acting_a_step_at_a_time_gives_what_the_sequence_path_gives_over_the_same_steps(graph):
    """The act path runs the cell once a call, outside dynamic_rnn's loop: 3 environments acted on for 4 steps, each
    call fed the last one's state, give the sequence path's logits, values (both heads) and final state over those
    4 steps from the same start; greedy actions are the logits' argmax, a behaviour's log-probabilities theirs."""
    policy = LSTMPolicy((3,), num_actions=2, lstm_size=5, two_streams=True)
    rng = np.random.default_rng(3)
    observations = rng.normal(size=(3, 4, 3)).astype(np.float32)
    start = LSTMState(*rng.normal(size=(2, 3, 5)).astype(np.float32))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        session.run([v.assign(rng.normal(size=v.shape) / 2) for v in policy.var_list])
        logits, values, values_int, (c, h) = session.run(
            [policy.logits, policy.value, policy.value_int, policy.state_out],
            {policy.x: observations, policy.state_in.c: start.c, policy.state_in.h: start.h})
        state, acted = start, []
        for step in range(4):
            actions, step_values, next_state, (step_logits, step_values_int, log_probs) = policy.act_and_fetch(
                session, observations[:, step], state, [policy.act_logits, policy.act_value_int,
                                                        policy.act_log_probs], greedy=True)
            acted.append((actions, step_values, step_logits, step_values_int, log_probs))
            state = next_state
    logits, values, values_int = logits.reshape(3, 4, 2), values.reshape(3, 4), values_int.reshape(3, 4)
    for step, (actions, step_values, step_logits, step_values_int, log_probs) in enumerate(acted):
        np.testing.assert_allclose(step_logits, logits[:, step], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(step_values, values[:, step], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(step_values_int, values_int[:, step], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(actions, logits[:, step].argmax(axis=1))
        np.testing.assert_allclose(np.exp(log_probs).sum(axis=1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(log_probs[:, 1] - log_probs[:, 0], logits[:, step, 1] - logits[:, step, 0],
                                   rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(state.c, c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.h, h, rtol=1e-5, atol=1e-6)


def test_a_reset_inside_a_sequence_starts_the_policys_lstm_again_from_zeros(graph):
    """Sequences of 5 frames with a reset at frame 2 (the first) and at none (the second): the first's outputs are
    the numpy LSTM's over frames 0-1 from its start state, then over frames 2-4 from the zero state; the second's
    are unchanged by the other's reset."""
    resets = np.zeros((2, 5), np.float32)
    resets[0, 2] = 1.0
    run = run_random_lstm_policy(2, 2, 5, lambda policy: {policy.resets: resets})
    before, _, _ = numpy_lstm(run.features[0, :2], run.c0[0], run.h0[0], run.kernel, run.bias, 2)
    after, c_0, h_0 = numpy_lstm(run.features[0, 2:], np.zeros(5), np.zeros(5), run.kernel, run.bias, 3)
    whole, c_1, h_1 = numpy_lstm(run.features[1], run.c0[1], run.h0[1], run.kernel, run.bias, 5)
    np.testing.assert_allclose(run.logits[0], np.concatenate([before, after]) @ run.w + run.b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run.logits[1], whole @ run.w + run.b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run.c, [c_0, c_1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run.h, [h_0, h_1], rtol=1e-4, atol=1e-5)


@pytest.fixture
def cluster(graph):
    """A parameter server and a worker, in this process, on free localhost ports."""
    ps_port, worker_port = free_ports(2)
    spec = tf1.train.ClusterSpec({"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]})
    ps = tf1.train.Server(spec, job_name="ps", task_index=0)
    worker = tf1.train.Server(spec, job_name="worker", task_index=0)
    return ps, worker


def test_globals_on_ps_locals_on_worker_and_sync(cluster):
    _, worker = cluster
    env = envs.create_env("Corridor-v0", seed=0)
    worker_device = "/job:worker/task:0/cpu:0"
    trainer = A3C(env, 0, constants.Config(lstm_size=16), global_device=tf1.train.replica_device_setter(
        1, worker_device=worker_device), local_device=worker_device)
    assert all(v.device.startswith("/job:ps") for v in trainer.network.var_list + [trainer.global_step])
    assert all(v.device.startswith("/job:worker") for v in trainer.local_network.var_list)
    adam_slots = [v for v in tf1.global_variables() if "Adam" in v.name or "power" in v.name]
    assert adam_slots and all(v.device.startswith("/job:ps") for v in adam_slots)
    with tf1.Session(worker.target) as session:
        session.run(tf1.global_variables_initializer())
        local_before = session.run(trainer.local_network.var_list)
        global_values = session.run(trainer.network.var_list)
        assert not all(np.allclose(a, b) for a, b in zip(local_before, global_values))  # independent inits
        session.run(trainer.sync)
        for local, glob in zip(session.run(trainer.local_network.var_list), global_values):
            np.testing.assert_array_equal(local, glob)


def test_two_parameter_servers_hold_the_global_variables_split_by_size(graph):
    import sessions

    ports = free_ports(3)
    spec = tf1.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"],
                                  "worker": [f"127.0.0.1:{ports[2]}"]})
    servers = [tf1.train.Server(spec, job_name="ps", task_index=i) for i in (0, 1)]
    worker = tf1.train.Server(spec, job_name="worker", task_index=0)
    worker_device = "/job:worker/task:0/cpu:0"
    env = envs.create_env("Corridor-v0", seed=0)
    trainer = A3C(env, 0, constants.Config(lstm_size=16), unsup="action",
                  global_device=sessions.ps_device_setter(2, worker_device), local_device=worker_device)
    held = {0: 0, 1: 0}
    for variable in tf1.global_variables():
        if variable.name.startswith("local"):
            continue
        task = int(variable.device.split("/task:")[1].split("/")[0])
        assert variable.device.startswith("/job:ps"), variable.name
        held[task] += variable.shape.num_elements() * variable.dtype.size
    assert held[0] > 0 and held[1] > 0
    # greedy by size: the larger share exceeds the smaller by at most the largest variable's bytes (with its
    # two Adam slots, which sit beside it)
    largest = max(v.shape.num_elements() * v.dtype.size for v in tf1.trainable_variables())
    assert abs(held[0] - held[1]) <= 3 * largest
    with tf1.Session(worker.target) as session:
        session.run(tf1.global_variables_initializer())
        session.run(trainer.sync)
        for local, glob in zip(session.run(trainer.local_network.var_list), session.run(trainer.network.var_list)):
            np.testing.assert_array_equal(local, glob)
    del servers


def test_the_heartbeat_shows_the_runs_the_runtime_made_a_worker_retry(graph, tmp_path):
    import sessions

    trainer = A3C(envs.create_env("Corridor-v0", seed=0), 0, constants.Config(lstm_size=8))
    assert trainer.status() == {}, "before its session"
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        trainer.session.timeouts, trainer.session.aborts = 2, 1  # as the wrapper counts them (test_runner)
        sessions.Heartbeat(str(tmp_path), 0, 100).beat(trainer, 0, force=True)
        trainer.stop()
    beat = json.loads((tmp_path / "status_0.json").read_text())
    assert beat["retried_runs"] == {"stuck": 2, "aborted": 1}


def test_update_moves_globals_not_locals_and_counts_steps(graph):
    env = envs.create_env("Corridor-v0", seed=0)
    trainer = A3C(env, 0, constants.Config(lstm_size=16, learning_rate=1e-2))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        before = session.run(trainer.network.var_list)
        batch = trainer.process()
        after = session.run(trainer.network.var_list)
        local = session.run(trainer.local_network.var_list)
        trainer.stop()
    assert trainer.last_global_step == len(batch.actions) > 0
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    for a, b in zip(local, before):  # the local copy holds what was synced before the update
        np.testing.assert_array_equal(a, b)


def test_a_batch_of_sequences_of_different_lengths_is_the_sum_of_its_sequences(graph):
    """Padding must not leak: the update on K rollouts of different lengths (an episode ended early) has the
    step-weighted mean of the losses, and the gradient, of each rollout fed alone."""
    from a3c import process_rollout, stack_batches
    from acting import PartialRollout

    trainer = A3C([envs.create_env("CorridorPixels-v0", seed=k) for k in range(3)], 0,
                  constants.Config(lstm_size=16), unsup="action")
    pi, rng = trainer.local_network, np.random.default_rng(0)
    rollouts = []
    for length in (5, 2, 4):
        state = LSTMState(*rng.normal(size=(2, 1, 16)).astype(np.float32))
        rollout = PartialRollout(state)
        for _ in range(length):
            rollout.add(rng.random((42, 42, 1), np.float32), int(rng.integers(2)), float(rng.normal()),
                        float(rng.normal()))
        rollout.last_observation = rng.random((42, 42, 1), np.float32)
        rollouts.append(rollout)
    batches = [process_rollout(rollout, 0.99) for rollout in rollouts]
    loss = trainer.loss + trainer.predictor_loss
    gradients = tf.gradients(loss, pi.var_list + trainer.local_predictor.var_list)

    def run(batch, session):
        feed = {pi.x: batch.observations, pi.lengths: batch.lengths, pi.state_in.c: batch.features.c,
                pi.state_in.h: batch.features.h, trainer.actions: batch.actions,
                trainer.advantages: batch.advantages, trainer.returns: batch.returns}
        feed.update(trainer.local_predictor.feed_sequences(batch.sequences, batch.actions))
        return session.run([loss, gradients], feed)

    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        stacked = stack_batches(batches)
        assert stacked.observations.shape == (3, 5, 42, 42, 1) and list(stacked.lengths) == [5, 2, 4]
        assert not stacked.observations[1, 2:].any(), "padded with zeros"
        together = run(stacked, session)
        alone = [run(stack_batches([batch]), session) for batch in batches]
    weights = np.array([5, 2, 4]) / 11
    assert together[0] == pytest.approx(sum(w * each[0] for w, each in zip(weights, alone)), rel=1e-5)
    for index, gradient in enumerate(together[1]):
        np.testing.assert_allclose(gradient, sum(w * each[1][index] for w, each in zip(weights, alone)),
                                   rtol=1e-4, atol=1e-6)


def test_adam_epsilon_reaches_the_optimizer(graph):
    """Each optimizer's epsilon constant, where its ApplyAdam ops read it: inside the update's conditional
    (see A3C.update_finite), a function of the graph."""
    A3C(envs.create_env("Corridor-v0"), 0, constants.Config(lstm_size=8, adam_epsilon=0.1,
                                                              predictor_adam_epsilon=1e-5), unsup="action")
    branches = [function for function in graph.as_graph_def().library.function
                if any(node.op.endswith("ApplyAdam") for node in function.node_def)]
    assert len(branches) == 1
    epsilons = {node.name: tf.make_ndarray(node.attr["value"].tensor) for node in branches[0].node_def
                if node.name.endswith("Adam/epsilon")}
    assert epsilons == {"Adam/epsilon": pytest.approx(0.1), "PredictorAdam/epsilon": pytest.approx(1e-5)}


@pytest.mark.learning
def test_a3c_learns_the_corridor(graph):
    """A random walk needs ~45 steps for the 8-cell corridor; the optimum is 7. Learned policies settle near
    10 (measured over seeds 0-7: solved in 255-423 updates), the entropy bonus keeping some randomness."""
    np.random.seed(1)
    tf1.set_random_seed(1)
    env = envs.create_env("Corridor-v0", seed=1)
    trainer = A3C(env, 0, constants.Config(learning_rate=1e-3, lstm_size=32))
    lengths, recent = [], []
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: lengths.append(stats.length))
        while trainer.updates < 1500:
            trainer.process()
            recent = lengths[-50:]  # the runner thread keeps appending: judge the window that was seen
            if len(lengths) > 120 and np.mean(recent) <= 12:
                break
        trainer.stop()
    assert np.mean(lengths[:20]) > 20, "the untrained policy should wander like a random walk"
    assert np.mean(recent) <= 12, f"not solved after {trainer.updates} updates"
    assert trainer.updates < 1500


class FailingEnv(envs.gym.Wrapper):
    def step(self, action):
        raise RuntimeError("the game engine died")


def test_trainer_reraises_runner_failure_with_a_clear_message(graph):
    trainer = A3C(FailingEnv(envs.create_env("Corridor-v0")), 0, constants.Config(lstm_size=8))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        with pytest.raises(RunnerError, match="runner thread failed: RuntimeError: the game engine died"):
            trainer.process()


def test_lstm_cell_against_hand_computation(graph):
    """Zero weights: every gate is sigmoid(0) = 1/2 except forget, sigmoid(0 + 1); the candidate is tanh(0) = 0."""
    inputs = tf.zeros([1, 3])
    state = LSTMState(tf.constant([[1.0, -2.0]]), tf.constant([[0.5, 0.5]]))
    with tf1.variable_scope("cell", initializer=tf1.zeros_initializer()):
        kernel, bias = lstm_variables(3, 2)
    h, new_state = LSTMCell(2, kernel)(input_gates(inputs, kernel, bias), state)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        h, c = session.run([h, new_state.c])
    forget = 1 / (1 + math.exp(-1.0))
    np.testing.assert_allclose(c, [[forget, -2 * forget]], rtol=1e-6)
    np.testing.assert_allclose(h, np.tanh(c) * 0.5, rtol=1e-6)


class PoisonedRewards(envs.gym.Wrapper):
    """Rewards turn NaN while `poisoned` is set, as from a broken environment or reward scale."""
    poisoned = True

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, float("nan") if self.poisoned else reward, terminated, truncated, info


def test_a_nan_update_is_skipped_whole_and_many_in_a_row_stop_the_worker(graph, monkeypatch):
    import sessions

    env = PoisonedRewards(envs.create_env("Corridor-v0", seed=0))
    trainer = A3C(env, 0, constants.Config(lstm_size=8, learning_rate=1e-2), unsup="action")
    # the global weights, both optimizers' moments and beta powers: everything an update may write
    written = [v for v in tf1.global_variables() if not v.name.startswith(("local/", "global/global_step"))]
    assert any("PredictorAdam" in v.name for v in written) and any("beta1_power" in v.name for v in written)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        before = session.run(written)
        steps = sum(len(trainer.process().actions) for _ in range(2))
        for a, b in zip(before, session.run(written)):
            np.testing.assert_array_equal(a, b)
        assert (trainer.skipped_updates, trainer.skipped_in_a_row) == (2, 2)
        assert trainer.last_global_step == steps, "the steps of a skipped update still count"

        env.poisoned = False  # rollouts already queued are still NaN: wait for a clean update, boundedly
        while trainer.skipped_in_a_row and trainer.updates < 30:
            trainer.process()
        assert trainer.skipped_in_a_row == 0 and trainer.skipped_updates < trainer.updates
        assert any(not np.array_equal(a, b) for a, b in zip(before, session.run(written)))

        env.poisoned = True
        monkeypatch.setattr(sessions, "NONFINITE_UPDATES_LIMIT", 3)
        with pytest.raises(sessions.NonFiniteError, match="3 updates in a row .* check the environment's rewards"):
            for _ in range(30):
                trainer.process()
        trainer.stop()


def first_update_change(config, unsup="none"):
    """(change of the policy's global weights, of the predictor's) in one update: (norm, norm or None)."""
    trainer = A3C(envs.create_env("Corridor-v0", seed=0), 0, config, unsup=unsup)
    parts = [trainer.network.var_list] + ([trainer.predictor.var_list] if trainer.predictor else [])
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        before = session.run(parts)
        trainer.process()
        after = session.run(parts)
        trainer.stop()
    norms = [np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(x, y))) for x, y in zip(before, after)]
    return norms[0], (norms[1] if len(norms) > 1 else None)


def test_gradients_are_clipped_to_their_global_norm(graph):
    """Adam's first step is lr * sqrt(1 - beta2) * g / (sqrt(1 - beta2) |g| + eps) per weight; with eps much
    larger than |g| it is linear in g, so the change's norm is lr * sqrt(1 - beta2) / eps * |clipped g|."""
    clip, learning_rate, epsilon = 1e-3, 100.0, 1.0
    changed, _ = first_update_change(constants.Config(lstm_size=8, grad_norm_clip=clip, learning_rate=learning_rate,
                                                      adam_epsilon=epsilon))
    assert changed == pytest.approx(learning_rate * math.sqrt(1 - 0.999) / epsilon * clip, rel=0.02)


def test_unclipped_gradients_are_larger_than_the_clip_in_the_test_above(graph):
    changed, _ = first_update_change(constants.Config(lstm_size=8, grad_norm_clip=1e9, learning_rate=100.0,
                                                      adam_epsilon=1.0))
    assert changed > 10 * 100.0 * math.sqrt(1 - 0.999) * 1e-3, "else the clip test could not fail"


def test_policy_no_backprop_steps_hold_the_policy_while_the_predictor_learns(graph):
    held, predictor = first_update_change(constants.Config(lstm_size=8, policy_no_backprop_steps=10**9), "action")
    assert held == 0.0 and predictor > 0.0


class FeedRecorder:
    """Stands in for the trainer's session: runs everything, keeps what was fed to `placeholder`."""

    def __init__(self, session, placeholder):
        self.session, self.placeholder, self.fed = session, placeholder, []

    def run(self, fetches, feed_dict=None, options=None):
        if feed_dict and self.placeholder in feed_dict:
            self.fed.append(np.array(feed_dict[self.placeholder]))
        return self.session.run(fetches, feed_dict, options=options)


@pytest.mark.parametrize("center", [True, False])
def test_center_advantages_feeds_the_loss_advantages_less_their_batch_mean(graph, monkeypatch, center):
    import a3c

    raw = []
    monkeypatch.setattr(a3c, "stack_batches", lambda batches: raw.append(stack_batches(batches)) or raw[-1])
    # A reward of 1 on every step makes every TD error and so every batch's mean advantage clearly positive: with
    # the corridor's own rewards a batch that reached no goal has a mean near 0, which could not tell.
    corridors = [envs.gym.wrappers.TransformReward(envs.create_env("Corridor-v0", seed=seed), lambda r: r + 1.0)
                 for seed in (0, 1, 2)]
    trainer = A3C(corridors, 0, constants.Config(lstm_size=8, center_advantages=center))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        recorder = FeedRecorder(session, trainer.advantages)
        trainer.start(recorder, None, lambda stats: None)
        for _ in range(3):
            trainer.process()
        trainer.stop()
    assert len(recorder.fed) == len(raw) == 3
    for fed, batch in zip(recorder.fed, raw):
        assert batch.advantages.mean() > 0.1, "a batch whose mean is already 0 could not tell"
        expected = batch.advantages - batch.advantages.mean() if center else batch.advantages
        np.testing.assert_allclose(fed, expected, rtol=1e-6, atol=1e-6)


class HungEnv(envs.gym.Wrapper):
    """An environment whose step never returns until released (a game engine that hangs)."""

    def __init__(self, env):
        super().__init__(env)
        import threading

        self.release = threading.Event()

    def step(self, action):
        self.release.wait()
        return self.env.step(action)


def test_a_hung_environment_is_reported_by_the_trainer_not_waited_on_forever(graph, monkeypatch):
    import acting

    monkeypatch.setattr(acting, "ROLLOUT_WAIT_SECS", 2.0)
    env = HungEnv(envs.create_env("Corridor-v0"))
    trainer = A3C(env, 0, constants.Config(lstm_size=8))
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        with pytest.raises(RunnerError, match="no rollout from the runner thread in 2 s: is the environment hung"):
            trainer.process()  # raised after ROLLOUT_WAIT_SECS (pytest's timeout bounds a wait for ever)
        env.release.set()
        trainer.stop()


def test_a_checkpoint_of_another_model_is_refused_in_one_line(graph, tmp_path):
    import sessions
    from constants import UsageError

    train_dir = tmp_path / "train"
    with tf.Graph().as_default():
        tf1.get_variable("global/weights", [2, 3])
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(train_dir / "model.ckpt"), global_step=7)
    same = tf1.get_variable("global/weights", [2, 3])
    assert sessions.check_checkpoint(tf1, str(train_dir), [same]).endswith("model.ckpt-7")
    other_shape = tf1.get_variable("global/weights_other", [2, 4])
    with pytest.raises(UsageError, match="lacks global/weights_other: it was written by a different model"):
        sessions.check_checkpoint(tf1, str(train_dir), [other_shape])
    with tf.Graph().as_default():
        wider = tf1.get_variable("global/weights", [2, 4])
        with pytest.raises(UsageError, match=r"has global/weights of shape \[2, 3\], the model needs \[2, 4\]"):
            sessions.check_checkpoint(tf1, str(train_dir), [wider])
    for path in train_dir.glob("model.ckpt-7.*"):
        path.unlink()
    with pytest.raises(UsageError, match="names checkpoints that do not exist"):
        sessions.check_checkpoint(tf1, str(train_dir), [same])
