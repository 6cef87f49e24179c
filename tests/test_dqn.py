"""DQN: Double DQN targets by hand, what trains and what the target network copies, the replay ratio and the
exploration schedule, and the one-process mode end to end (learns a corridor, logs, resumes, plays back in
demo.py, refuses another algorithm on its log directory)."""
import csv
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import constants
import logdir
import preloaded
import status
from conftest import ROOT, episode_line, side_by_side


def test_double_dqn_targets_by_hand(graph):
    import tensorflow as tf

    import dqn

    returns, discounts = tf.constant([1.0, 0.5]), tf.constant([0.9, 0.5])
    next_q_online = tf.constant([[1.0, 3.0], [5.0, 2.0]])  # the online network picks actions 1 and 0
    next_q_target = tf.constant([[10.0, 20.0], [30.0, 40.0]])  # the target network values them: 20 and 30
    targets = dqn.double_q_targets(returns, discounts, next_q_online, next_q_target)
    with tf.compat.v1.Session() as session:
        # 1 + 0.9 x 20 and 0.5 + 0.5 x 30; the target network's own max would give 0.5 + 0.5 x 40 = 20.5
        assert session.run(targets) == pytest.approx([19.0, 15.5])


def small_config(**changes):
    return constants.config_from_overrides([f"{name}={value}" for name, value in changes.items()], "dqn_classic")


def random_batch(size=8):
    """A replayed batch of CartPole-shaped transitions (4 numbers, 2 actions), each discounted by 0.9."""
    rng = np.random.default_rng(0)
    return {"observations": rng.random((size, 4), np.float32), "next_observations": rng.random((size, 4), np.float32),
            "actions": rng.integers(0, 2, size), "returns": rng.random(size, np.float32),
            "discounts": np.full(size, 0.9, np.float32)}


def test_an_update_trains_the_online_network_only_and_the_target_copies_it_when_told(graph):
    import tensorflow as tf

    import dqn

    network = dqn.DQN((4,), 2, small_config(), "mlp")
    batch = random_batch()
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(network.update_target)
        online_before, target_before = session.run([network.online_variables, network.target_variables])
        assert all(np.array_equal(a, b) for a, b in zip(online_before, target_before))
        q_values = session.run(network.q_values, {network.observations: batch["observations"]})
        targets = session.run(network.targets, {network.next_observations: batch["next_observations"],
                                                network.returns: batch["returns"],
                                                network.discounts: batch["discounts"]})
        _, td_errors = network.train(session, batch, np.ones(8, np.float32))
        # the TD errors are those of the weights before the update: y - Q(s, a)
        assert td_errors == pytest.approx(np.abs(targets - q_values[np.arange(8), batch["actions"]]), abs=1e-5)
        online_after, target_after = session.run([network.online_variables, network.target_variables])
        assert any(not np.array_equal(a, b) for a, b in zip(online_before, online_after))
        assert all(np.array_equal(a, b) for a, b in zip(target_before, target_after))
        assert session.run(network.updates) == 1
        session.run(network.update_target)
        online, target = session.run([network.online_variables, network.target_variables])
        assert all(np.array_equal(a, b) for a, b in zip(online, target))


def huber(x):
    x = np.abs(x)
    return np.where(x <= 1.0, 0.5 * x ** 2, x - 0.5)


def test_the_loss_weighs_each_transition_by_its_importance_weight(graph):
    """loss = mean_i w_i Huber(y_i - Q(s_i, a_i)) (Schaul et al. 2016): a transition of weight 0 adds nothing, one of
    weight 2 twice its error."""
    import tensorflow as tf

    import dqn

    network = dqn.DQN((4,), 2, small_config(), "mlp")
    batch = random_batch(4)
    feed = {network.observations: batch["observations"], network.next_observations: batch["next_observations"],
            network.actions: batch["actions"], network.returns: np.zeros(4, np.float32),
            network.discounts: batch["discounts"]}
    weights = np.array([0.0, 2.0, 1.0, 0.5], np.float32)
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        # the returns that make the errors these, on both parts of the Huber loss (an error is linear in its return)
        errors = np.array([0.3, -2.5, 0.6, 4.0], np.float32)
        feed[network.returns] = errors - session.run(network.td_errors, feed)
        td_errors, loss = session.run([network.td_errors, network.loss], {**feed, network.weights: weights})
        assert td_errors == pytest.approx(errors, abs=1e-5)
        assert loss == pytest.approx(np.mean(weights * huber(errors)), rel=1e-5)
        # a zero weight: that transition's error does not reach the gradient
        gradient = tf.gradients(network.loss, network.online_variables)
        alone = session.run(gradient, {**feed, network.weights: np.array([0, 0, 1, 0], np.float32)})
        changed = dict(feed)
        changed[network.returns] = feed[network.returns] + np.array([100.0, 0, 0, 0], np.float32)
        still = session.run(gradient, {**changed, network.weights: np.array([0, 0, 1, 0], np.float32)})
        assert all(np.allclose(a, b) for a, b in zip(alone, still))


def test_the_dueling_head_is_the_value_plus_the_advantages_less_their_mean(graph):
    """Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a') (Wang et al. 2016, eq. 9), by hand from the head's weights."""
    import tensorflow as tf

    import dqn

    tf1 = tf.compat.v1
    features = tf1.placeholder(tf.float32, [None, 3])
    with tf1.variable_scope("head"):
        q_values = dqn.q_head(features, 4, dueling=True)
    weights = {v.op.name: v for v in tf1.trainable_variables()}
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(5, 3)).astype(np.float32)
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        # the initialiser gives the advantages tiny weights: make them count
        for variable in tf1.trainable_variables():
            variable.load(rng.normal(size=variable.shape.as_list()).astype(np.float32), session)
        q, values = session.run([q_values, weights], {features: inputs})
    value = inputs @ values["head/value/w"] + values["head/value/b"]  # [5, 1]
    advantages = inputs @ values["head/advantages/w"] + values["head/advantages/b"]  # [5, 4]
    assert q == pytest.approx(value + advantages - advantages.mean(axis=1, keepdims=True), abs=1e-5)
    assert q.mean(axis=1) == pytest.approx(value[:, 0], abs=1e-5)


def test_the_target_network_copies_the_online_one_every_target_update_period_updates(graph):
    import tensorflow as tf

    import dqn

    network = dqn.DQN((4,), 2, small_config(target_update_period=3), "mlp")
    batch = random_batch()
    copied = []
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        network.initialise(session)
        for update in range(1, 7):
            network.train(session, batch, np.ones(8, np.float32))
            network.after_update(session, update)
            online, target = session.run([network.online_variables, network.target_variables])
            copied.append(all(np.array_equal(a, b) for a, b in zip(online, target)))
    assert copied == [False, False, True, False, False, True]


def test_ape_x_actors_initial_priorities_are_their_td_errors_by_hand():
    """|R + d max_a Q(s', a) - Q(s, a)| from the actor's Q of the observations, then of the next ones."""
    import apex

    q_values = np.array([[1.0, 2.0], [0.5, -1.0],  # Q(s, .) of the two transitions
                         [3.0, 4.0], [-2.0, -3.0]], np.float32)  # Q(s', .)
    actions, returns, discounts = np.array([1, 0]), np.array([1.0, 0.25]), np.array([0.9, 0.0])
    priorities = apex.initial_priorities(q_values, 2, actions, returns, discounts)
    # 1 + 0.9 x 4 - 2 = 2.6; 0.25 + 0 x (-2) - 0.5 = -0.25 (terminated: no bootstrap)
    assert priorities == pytest.approx([2.6, 0.25])


def test_an_annealed_learning_rate_falls_linearly_to_zero_at_the_last_step_or_at_anneal_steps(graph):
    import tensorflow as tf

    import dqn
    import sessions

    network = dqn.DQN((4,), 2, small_config(anneal_lr="true", learning_rate=0.1, max_global_steps=1000), "mlp")
    batch = random_batch()
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        rate = sessions.annealed_rate(network.config, network.global_step)
        longer = sessions.annealed_rate(small_config(anneal_lr="true", learning_rate=0.1, max_global_steps=1000,
                                                     anneal_steps=4000), network.global_step)
        for step, expected, expected_longer in [(0, 0.1, 0.1), (250, 0.075, 0.09375), (900, 0.01, 0.0775),
                                                (1000, 0.0, 0.075), (5000, 0.0, 0.0)]:
            network.global_step.load(step, session)
            assert session.run([rate, longer]) == pytest.approx([expected, expected_longer], abs=1e-7)
        before = session.run(network.online_variables)
        network.train(session, batch, np.ones(8, np.float32))  # at step 5,000: a step of size 0
        assert all(np.array_equal(a, b) for a, b in zip(before, session.run(network.online_variables)))
        network.global_step.load(500, session)
        network.train(session, batch, np.ones(8, np.float32))
        assert any(not np.array_equal(a, b) for a, b in zip(before, session.run(network.online_variables)))


def test_the_replay_ratio_is_kept_from_the_end_of_the_warm_up():
    import offpolicy

    config = small_config(learning_starts=100, batch_size=32, replay_ratio=8)  # a batch of 32 every 4 inserts
    assert offpolicy.updates_due(99, 0, config) == 0
    assert offpolicy.updates_due(100, 0, config) == 1
    assert offpolicy.updates_due(103, 1, config) == 0 and offpolicy.updates_due(104, 1, config) == 1
    assert offpolicy.updates_due(100 + 400, 0, config) == 101  # 400 inserts x 8 / 32, and the first one


def test_exploration_decays_linearly_then_stays():
    import dqn

    config = small_config(epsilon_start=1.0, epsilon_final=0.1, epsilon_decay_steps=100)
    assert [dqn.epsilon_at(step, config) for step in (0, 50, 100, 1000)] == pytest.approx([1.0, 0.55, 0.1, 0.1])


def train_py(*args):
    return preloaded.run("train.py", *args, timeout=300)


CORRIDOR = ["--algo", "dqn", "--num-workers", "0", "--env-id", "Corridor-v0", "--eval-every", "500",
            "--eval-episodes", "2", "--set", "learning_starts=200", "--set", "epsilon_decay_steps=1000",
            "--set", "replay_ratio=16", "--set", "target_update_period=100", "--set", "batch_size=64"]


def heartbeat_state(log_dir):
    try:
        return json.load(open(log_dir / "status_local.json"))["state"]
    except (OSError, ValueError, KeyError):
        return None


def test_one_process_mode_learns_a_corridor_logs_stops_on_ctrl_c_and_resumes(tmp_path):
    log_dir = tmp_path / "run"
    first = train_py(*CORRIDOR, "--log-dir", str(log_dir), "--threads", "1", "--set", "max_global_steps=2000",
                     "--eval-frames", "png")
    assert first.returncode == 0, first.stderr[-3000:]
    lines = (log_dir / "rewards.txt").read_text().splitlines()
    assert [line.split()[:2] for line in lines] == [["1", "500"], ["2", "1000"], ["3", "1500"], ["4", "2000"]]
    assert all(re.fullmatch(r"\s*\d+\s+\d+ -?\d+\.\d", line) for line in lines), lines
    # greedy, the corridor's 7 steps to the right pay 1 in each of the two evaluation episodes
    assert lines[-1].split()[2] == "1.0", lines
    # the one evaluation log, as demo.py --watch writes a cluster's: eval.csv, rewards.txt its view, the best kept
    rows = logdir.read_rows(str(log_dir / "eval.csv"))
    assert [f"{index:3d} {int(row['global_step']):8d} {float(row['mean_reward']):.1f}" for index, row in
            enumerate(rows, 1)] == lines and {row["episodes"] for row in rows} == {"2"}
    best = json.load(open(log_dir / "best" / "best.json"))
    assert best["mean_reward"] == 1.0 and best["global_step"] == min(
        int(row["global_step"]) for row in rows if float(row["mean_reward"]) == 1.0)
    # --eval-frames png: each evaluation's episodes, a frame per step and the reset's, in eval_NNN/episode_K/, as
    # many as the steps of the episodes written into test_episodes/
    assert sorted(name for name in os.listdir(log_dir) if name.startswith("eval_")) == [
        "eval_001", "eval_002", "eval_003", "eval_004"]
    frames = [sorted(os.listdir(log_dir / f"eval_00{index}" / f"episode_{episode}")) for index in (1, 2, 3, 4)
              for episode in (1, 2)]
    assert all(names[0] == "frame_00000.png" and names[-1] == f"frame_{len(names) - 1:05d}.png" for names in frames)
    stored = logdir.read_episodes(str(log_dir / "test_episodes"))
    assert sorted(map(len, frames)) == sorted(len(episode["reward"]) for episode in stored) and len(stored) == 8
    config = json.load(open(log_dir / "config.json"))
    assert config["run"]["algo"] == "dqn" and config["preset"] == "dqn_classic"
    episodes = len(read_lines(log_dir / "episodes_0.csv"))
    assert episodes > 20 and read_lines(log_dir / "episodes_0.csv")[0].startswith("global_step,")
    # the status view: the run's heartbeat (its step, its updates at the replay ratio), replay, evaluations
    beat = json.load(open(log_dir / "status_local.json"))
    assert (beat["name"], beat["state"], beat["global_step"]) == ("local", "stopped", 2000), beat
    assert beat["updates"] == (beat["inserted"] - 200) * 16 // 64 + 1 and beat["replay_size"] > 1900, beat
    text = status.render(status.collect(str(log_dir)))
    assert re.search(r"\nlocal +stopped +2,000 ", text) and "\nreplay " in text, text
    assert re.search(r"\nevaluation at step 2,000: mean reward 1   best 1 at step [\d,]+ \(kept in best/\)$", text), text

    # as if the run had gone on past its checkpoint at 2,000 before it was killed: the resume sets those episodes aside
    with open(log_dir / "episodes_0.csv", "a") as handle:
        handle.write(episode_line(2100, "1795000000.000", 0, 0, 7, 0.1, 0, 0, 0)
                     + episode_line(2150, "1795000001.000", 0, 1, 7, 0.1, 1, 0, 0))

    # a larger budget resumes; Ctrl-C writes a checkpoint at the step reached, between two evaluations
    process = preloaded.start("train.py", *CORRIDOR, "--log-dir", log_dir, "--eval-every", "1000", "--set",
                              "max_global_steps=200000", output=tmp_path / "train.log")
    try:
        deadline = time.time() + 120
        # 1,400 steps or more on, and the heartbeat beats while it trains
        while len(read_lines(log_dir / "episodes_0.csv")) < episodes + 200 or heartbeat_state(log_dir) != "training":
            assert process.poll() is None and time.time() < deadline, (tmp_path / "train.log").read_text()[-3000:]
            time.sleep(0.1)
        # a second run on the same log directory is refused while this one holds it
        second = train_py(*CORRIDOR, "--log-dir", str(log_dir), "--set", "max_global_steps=200000")
        assert second.returncode == 2 and f"a one-process run is already using {log_dir} (pid {process.pid})" in \
            second.stderr and "Traceback" not in second.stderr, second.stderr
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        process.kill()
    text = (tmp_path / "train.log").read_text()
    assert process.returncode == 130 and "Traceback" not in text and "checkpoint at the step reached" in text, text
    assert "resumed from" in text
    assert "2 episodes of episodes_0.csv were played past global step 2000, the checkpoint the run resumes" in text
    assert [row["global_step"] for row in logdir.read_rows(str(log_dir / "rewound" / "episodes_0.csv"))] == [
        "2100", "2150"]
    steps = [int(row["global_step"]) for row in logdir.read_rows(str(log_dir / "episodes_0.csv"))]
    assert steps == sorted(steps) and steps[-1] > 3000, "each step counted once"
    # resumed, it trains on its refill at once, and its replay's figures count what it played: the ratio exactly
    beat = json.load(open(log_dir / "status_local.json"))
    assert beat["state"] == "stopped" and beat["updates"] == beat["inserted"] * 16 // 64 + 1, beat
    lines = (log_dir / "rewards.txt").read_text().splitlines()
    assert [line.split()[:2] for line in lines[4:5]] == [["5", "3000"]], lines  # counted on from the first run's
    saved = int(open(log_dir / "train" / "checkpoint").readline().split("-")[-1].strip('"\n'))
    assert saved == beat["global_step"] > 3000, (saved, beat["global_step"])  # the step Ctrl-C found it at

    # demo.py plays its checkpoint: argmax Q walks the corridor
    demo = preloaded.run("demo.py", "--log-dir", log_dir, "--greedy", "--episodes", "2", "--out", tmp_path / "demo",
                         timeout=120)
    assert demo.returncode == 0, demo.stderr[-2000:]
    summary = json.load(open(tmp_path / "demo" / "summary.json"))
    assert summary["global_step"] == saved and summary["mean_reward"] == 1.0 and summary["policy"] == "greedy"

    # plots.py draws its evaluations from rewards.txt, point for point, beside the episodes' curve
    import plots

    curves = plots.make_plots({"dqn": [str(log_dir)]}, str(tmp_path / "plots"), smooth=5)
    evaluations = [line.split() for line in (log_dir / "rewards.txt").read_text().splitlines()]
    steps, means = np.array([[float(step), float(mean)] for _, step, mean in evaluations]).T
    curve = curves["eval_vs_steps.png"]["dqn"]
    assert (curve["x"][0], curve["x"][-1]) == (steps[0], steps[-1])
    assert np.allclose(curve["mean"], np.interp(curve["x"], steps, means))
    assert {"reward_vs_steps.png", "eval_vs_steps.png"} <= set(os.listdir(tmp_path / "plots"))

    other = train_py("--algo", "a3c", "--num-workers", "1", "--env-id", "Corridor-v0", "--log-dir", str(log_dir),
                     "--mode", "child")
    assert other.returncode != 0 and "algo='dqn'" in other.stderr and "Traceback" not in other.stderr, other.stderr


def test_dqn_with_the_nature_cnn_sees_four_84x84_frames(tmp_path):
    """A Q network has no memory, so images reach the replay learners as the last 4 frames (where a ball goes,
    not only where it is), at 84x84 for the Nature CNN: the checkpoint's layers say so."""
    import tensorflow as tf

    log_dir = tmp_path / "run"
    run = train_py("--algo", "dqn", "--num-workers", "0", "--env-id", "CorridorPixels-v0", "--log-dir", str(log_dir),
                   "--design-head", "nature", "--eval-every", "100", "--eval-episodes", "1", "--set",
                   "learning_starts=32", "--set", "batch_size=32", "--set", "max_global_steps=100")
    assert run.returncode == 0, run.stderr[-3000:]
    shapes = {name: shape for name, shape in tf.train.list_variables(str(log_dir / "train"))
              if name.startswith("online/")}
    # 84 -> 20 -> 9 -> 7 through the 8/4, 4/2 and 3/1 convolutions: 7 x 7 x 64 = 3,136 inputs to the 512 units
    assert shapes["online/l1/W"] == [8, 8, 4, 32] and shapes["online/fc/w"] == [3136, 512], shapes


@pytest.mark.parametrize("algo,design_head,shape", [("dqn", "nature", (84, 84, 4)), ("sac", None, (42, 42, 4)),
                                                    ("a3c", "nature", (42, 42, 1))])
def test_playback_builds_the_frames_its_learner_trained_on(algo, design_head, shape):
    import argparse

    import demo

    run = {"algo": algo, "design_head": design_head, "env_id": "CorridorPixels-v0"}
    env = demo.make_env(argparse.Namespace(env_id=None, random_start=0), run, record=False)
    assert env.observation_space.shape == shape


def assert_the_replay_ratio_held(learner):
    """The run's end found the learner owing no update: as many as CORRIDOR's replay ratio gives for the transitions
    received (a batch of 64 per 4 from the 200th on), and those are every step the actors played but the n-step
    buffers' unfinished tails (2 steps in each of the 2 actors' environments)."""
    assert learner["updates"] == (learner["inserted"] - 200) * 16 // 64 + 1, learner
    assert learner["global_step"] - 2 * 2 <= learner["inserted"] <= learner["global_step"], learner


def test_apex_cluster_fills_the_replay_trains_at_the_replay_ratio_and_resumes(tmp_path):
    """A learner and 2 actors (worker.py processes on TensorFlow's runtime): the actors' transitions reach the
    learner's replay through the queue, the learner trains at the replay ratio, checkpoints, and a relaunch with a
    larger budget resumes its weights and update count."""
    import tensorflow as tf

    from test_distributed import free_exp_id

    log_dir = tmp_path / "run"
    apex = [*CORRIDOR, "--num-workers", "2", "--mode", "child", "--no-tensorboard", "--log-dir", str(log_dir),
            "--expId", str(free_exp_id(2, 480))]
    first = train_py(*apex, "--set", "max_global_steps=3000")
    assert first.returncode == 0 and "every learner finished" in first.stdout, first.stdout + first.stderr
    learner = json.load(open(log_dir / "status_learner.json"))
    assert learner["global_step"] >= 3000 and learner["replay_size"] >= 2800, learner
    assert_the_replay_ratio_held(learner)
    for actor in (0, 1):  # each actor fed the learner (one may start late under load: how much it fed varies)
        beat = json.load(open(log_dir / f"status_{actor}.json"))
        assert beat["name"] == f"a-{actor}" and beat["steps_trained"] > 0, beat
        assert len(read_lines(log_dir / f"episodes_{actor}.csv")) >= 2  # the header and an episode
    text = status.render(status.collect(str(log_dir)))  # the status view: the replay's line, the learner first
    assert re.search(r"\nreplay [\d,]+ transitions +[\d,]+ inserts/s +[\d,]+ samples/s +sample:insert [\d.]+ +"
                     r"learner [\d,]+ updates/s\n", text), text
    assert [line.split()[0] for line in text.splitlines() if line.startswith(("learner ", "a-"))] == [
        "learner", "a-0", "a-1"], text
    epsilons = [json.load(open(log_dir / f"status_{actor}.json"))["epsilons"] for actor in (0, 1)]
    assert max(epsilons[0]) == pytest.approx(0.4) and max(epsilons[1]) < 0.4, "Ape-X's: each actor its own"
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("a-")}
    assert rows["a-0"].endswith("0.4") and "explores: epsilon " in rows["a-1"] and not rows["a-1"].endswith("0.4")
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    updates = tf.train.load_variable(latest, "updates")
    assert int(latest.rsplit("-", 1)[1]) >= 3000 and updates == learner["updates"] > 100

    with open(log_dir / "episodes_1.csv", "a") as handle:  # as if a-1 had played past the learner's checkpoint
        handle.write(episode_line(10**9, "1795000000.000", 1, 0, 7, 0.1, 0, 0, 0))
    # a larger budget resumes; the learner killed alone once the actors feed it, the supervisor starts it and the
    # actors (whose sessions held its variables) again, and they reconnect to it and play the run to its end
    with open(tmp_path / "more.log", "w") as output:
        more = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), *apex, "--set",
                                 "max_global_steps=8000"], stdout=output, stderr=subprocess.STDOUT)
    try:
        def beat(name):
            return logdir.read_json(str(log_dir / f"status_{name}.json")) or {}

        def fed():  # the resumed learner, past its checkpoint on both resumed actors' transitions
            beats = {name: beat(name) for name in ("learner", 0, 1)}
            return (all(beats[name].get("pid") not in (None, before[name]) for name in beats) and
                    beats["learner"].get("state") == "training" and beats["learner"].get("global_step", 0) > 3200
                    and all(beats[actor].get("steps_trained") for actor in (0, 1)))

        before = {name: beat(name).get("pid") for name in ("learner", 0, 1)}  # the first launch's processes
        deadline = time.time() + 120
        while not fed():
            assert more.poll() is None and time.time() < deadline, (tmp_path / "more.log").read_text()[-3000:]
            time.sleep(0.1)
        killed = beat("learner")["pid"], beat(0)["pid"], beat(1)["pid"]
        os.kill(killed[0], signal.SIGKILL)
        more.wait(timeout=240)
    finally:
        more.kill()
    assert more.returncode == 0, (tmp_path / "more.log").read_text()[-3000:]
    record = logdir.read_json(str(log_dir / logdir.SUPERVISOR))["processes"]
    assert record["learner"]["restarts"] == 1 and all(  # the actors at once, by the learner's rule
        record[actor]["restarts"] >= 1 and record[actor]["last_reason"] == "restarted with learner"
        for actor in ("a-0", "a-1")), record
    assert (beat("learner")["pid"], beat(0)["pid"], beat(1)["pid"]) != killed and all(
        pid not in killed for pid in (beat("learner")["pid"], beat(0)["pid"], beat(1)["pid"]))
    assert (log_dir / "learner.out").read_text().count("resuming from") >= 2
    assert beat("learner")["global_step"] >= 8000 and beat(0)["steps_trained"] > 0 and beat(1)["steps_trained"] > 0
    moved = logdir.read_rows(str(log_dir / "rewound" / "episodes_1.csv"))
    assert str(10**9) in [row["global_step"] for row in moved]
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    assert int(latest.rsplit("-", 1)[1]) >= 8000 and tf.train.load_variable(latest, "updates") > updates


def test_the_curiosity_reward_is_added_to_the_stored_reward_and_counted_apart():
    import envs
    import offpolicy

    config = small_config(n_step=1, gamma=0.5)
    acting = offpolicy.Acting([envs.create_env("Corridor-v0")], config, np.float32, seed=0)
    seen = []

    def bonus(observations, following, actions):
        seen.append((observations.copy(), following.copy(), list(actions)))
        return np.array([0.25])

    transitions, _ = acting.step([1], offpolicy.StepBonus(bonus))  # one step right: reward 0, the bonus 0.25
    observations, following, actions = seen[0]
    assert actions == [1] and not np.array_equal(observations, following)
    assert transitions.n_step_return[0] == pytest.approx(0.25) and transitions.discount[0] == pytest.approx(0.5)
    assert np.array_equal(transitions.following, following) and acting.tallies[0].bonus == pytest.approx(0.25)
    assert acting.tallies[0].reward == 0.0, "the episode's reward is the environment's alone"


def test_a_relabelled_bonus_is_not_stored_and_comes_from_the_predictor_of_now(graph):
    """relabel_bonus: the stored reward holds no bonus (the tally still counts it); a replayed batch's returns get
    int_coef x the bonus of the predictor of now over the bonuses' running root mean square: after the predictor
    trained on some transitions, those have a smaller bonus than ones it never saw."""
    import tensorflow as tf

    import curiosity
    import envs
    import offpolicy

    config = small_config(n_step=1, relabel_bonus=True, int_coef=0.5, learning_rate=1e-2)
    env = envs.create_env("Corridor-v0")
    curious = offpolicy.Curious("action", env.observation_space.shape, curiosity.action_spec(env.action_space),
                                config, "mlp", np.float32)
    acting = offpolicy.Acting([env], config, np.float32, seed=0)
    session = tf.compat.v1.Session()
    session.run(tf.compat.v1.global_variables_initializer())
    bonus = curious.acting_bonus(session, 1)
    played = [acting.step([action], bonus)[0] for action in (1, 1, 1, 0, 0, 1, 1, 1)]
    assert acting.tallies[0].bonus > 0 and all(t.n_step_return[0] == 0.0 for t in played), "counted, not stored"
    batch = {"observations": np.concatenate([t.observation for t in played]),
             "following": np.concatenate([t.following for t in played]),
             "actions": np.concatenate([t.action for t in played]), "returns": np.zeros(8, np.float32)}
    raw = graph.get_tensor_by_name(curious.module.bonus_per_step.name)
    before = session.run(raw, curious.feed(batch["observations"], batch["following"], batch["actions"]))
    relabelled, values = curious.train(session, batch)
    # the first batch is its own root mean square
    assert relabelled["returns"] == pytest.approx(0.5 * before / np.sqrt(np.mean(before ** 2)), rel=1e-4)
    assert values["curiosity/replayed_bonus"] == pytest.approx(np.mean(relabelled["returns"]))
    seen = {key: value[:4] for key, value in batch.items()}  # the first four steps only: 1, 1, 1, 0
    for _ in range(100):
        curious.train(session, seen)
    relabelled, _ = curious.train(session, batch)
    assert relabelled["returns"][4:].mean() > 5 * relabelled["returns"][:4].mean() > 0
    assert not batch["returns"].any(), "the replay's own batch is not changed"
    # the episode log counts a step's bonus on the replayed scale of the moment
    observation, counted = acting.stored_observations(), acting.tallies[0].bonus
    step, finished = acting.step([0], bonus)
    assert not finished
    raw_now = session.run(raw, curious.feed(observation, step.following, np.array([0])))
    assert acting.tallies[0].bonus - counted == pytest.approx(
        0.5 * raw_now[0] / np.sqrt(curious.bonus_mean_square), rel=1e-4)


def test_relabelling_needs_one_step_returns():
    with pytest.raises(constants.ConfigError, match="relabel_bonus=True needs n_step=1"):
        small_config(n_step=3, relabel_bonus=True)


def test_dqn_with_the_icm_trains_its_predictor_on_replayed_batches(tmp_path):
    """On the deterministic corridor the forward model's error, hence the bonus, falls once the predictor trains on
    the replay's (s_t, a_t, s_t+1); the run still learns the corridor (an evaluation reaches the goal: with the bonus
    stored at acting time a run may lose it again, the stale bonus relabel_bonus exists for)."""
    log_dir = tmp_path / "run"
    result = train_py(*CORRIDOR, "--unsup", "action", "--log-dir", str(log_dir), "--set", "max_global_steps=2000")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = list(csv.DictReader(open(log_dir / "episodes_0.csv")))
    per_step = [float(row["bonus"]) / int(row["length"]) for row in rows]
    first, last = np.mean(per_step[:20]), np.mean(per_step[-20:])  # the first 20: before any update (200 steps)
    assert first > 0 and last < first / 10, (first, last)
    assert max(float(line.split()[2]) for line in open(log_dir / "rewards.txt").read().splitlines()) == 1.0


def test_a_one_process_run_is_reproducible_with_its_batches_drawn_in_a_thread(tmp_path):
    """The same seed twice: the same episodes (step, reward, length), though every batch is drawn in the sampler's
    thread while TensorFlow trains: the thread's timing must not change what a draw sees."""
    runs = []
    for name in ("a", "b"):
        result = train_py(*CORRIDOR, "--log-dir", str(tmp_path / name), "--set", "max_global_steps=1200")
        assert result.returncode == 0, result.stderr[-3000:]
        runs.append([(row["global_step"], row["reward"], row["length"])
                     for row in csv.DictReader(open(tmp_path / name / "episodes_0.csv"))])
    assert len(runs[0]) > 20 and runs[0] == runs[1]


RND_WARM_UP = 300


def rnd_statistics(checkpoint):
    import tensorflow as tf

    values = {name: tf.train.load_variable(checkpoint, name) for name, _ in tf.train.list_variables(checkpoint)
              if name.startswith("curiosity/") and ("_count" in name or "_var" in name)}
    return (values["curiosity/observation_count"], values["curiosity/return_count"],
            float(np.mean(values["curiosity/observation_var"])))


def test_dqn_with_rnd_seeds_and_merges_its_statistics_and_keeps_its_target(tmp_path):
    """One process on the corridor: the observation statistics count the warm-up's random steps, then every step
    acted (merged in blocks of ActingBonus.STATISTICS_EVERY, and what is left of a block before each checkpoint);
    the bonus returns too; the bonus reaches the episodes; the target network is the same in both checkpoints
    (never trained) while the predictor moves."""
    import tensorflow as tf

    log_dir = tmp_path / "run"
    result = train_py(*CORRIDOR, "--unsup", "rnd", "--log-dir", str(log_dir), "--set", "max_global_steps=1000",
                      "--set", f"rnd_warm_up_steps={RND_WARM_UP}")
    assert result.returncode == 0, result.stderr[-3000:]
    checkpoints = tf.train.get_checkpoint_state(str(log_dir / "train")).all_model_checkpoint_paths
    first, last = checkpoints[0], checkpoints[-1]  # at steps 500 and 1,000
    observations, returns, observation_var = rnd_statistics(last)
    assert (observations, returns) == (pytest.approx(RND_WARM_UP + 1000), pytest.approx(1000))
    assert 0 < observation_var < 1, "the corridor's positions, not the starting variance of 1"
    assert rnd_statistics(first)[:2] == (pytest.approx(RND_WARM_UP + 500), pytest.approx(500))
    target = [name for name, _ in tf.train.list_variables(last) if name.startswith("curiosity/target/")]
    predictor = [name for name, _ in tf.train.list_variables(last) if name.startswith("curiosity/predictor/")
                 and "Adam" not in name]
    assert target and predictor
    for name in target:
        np.testing.assert_array_equal(tf.train.load_variable(first, name), tf.train.load_variable(last, name))
    assert any(not np.array_equal(tf.train.load_variable(first, name), tf.train.load_variable(last, name))
               for name in predictor)
    rows = list(csv.DictReader(open(log_dir / "episodes_0.csv")))
    assert sum(float(row["bonus"]) for row in rows) > 0


def test_an_apex_actors_rnd_copy_syncs_the_learners_target_and_statistics(graph):
    """The target network and the running statistics are state, not trainable: an actor that synced only the
    predictor would compute its bonus against a target of its own."""
    import gymnasium as gym
    import tensorflow as tf

    import apex

    config = constants.config_from_overrides([], "dqn_classic")
    apex_graph = apex.ApeXGraph(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), config, "mlp", "/cpu:0",
                                "/cpu:0", unsup="rnd")
    learner, actor = apex_graph.curious.module, apex_graph.bonus
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(learner.observation_moments.merge(tf.random.normal([10, 4], 3.0)))
        session.run(apex_graph.sync)
        for theirs, mine in zip(learner.state_variables, actor.state_variables):
            np.testing.assert_array_equal(*session.run([theirs, mine]))
        assert session.run(actor.observation_moments.count) > 10


def test_apex_actors_add_the_bonus_with_their_copy_and_the_learner_trains_it(tmp_path):
    """A bonus on the cluster (RND, whose statistics the ICM lacks; the rest is the same path): the actors' bonus
    reaches their episodes, the learner's bonus is checkpointed and not the actors' copies; the statistics, kept
    by the learner, hold what the actors merged."""
    import tensorflow as tf

    from test_distributed import free_exp_id

    log_dir = tmp_path / "run"
    result = train_py(*CORRIDOR, "--unsup", "rnd", "--num-workers", "2", "--mode", "child", "--no-tensorboard",
                      "--log-dir", str(log_dir), "--expId", str(free_exp_id(2, 490)), "--set", "max_global_steps=1200",
                      "--set", f"rnd_warm_up_steps={RND_WARM_UP}")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [row for actor in (0, 1) for row in csv.DictReader(open(log_dir / f"episodes_{actor}.csv"))]
    assert sum(float(row["bonus"]) for row in rows) > 0
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    names = [name for name, _ in tf.train.list_variables(latest)]
    assert any(name.startswith("curiosity/") for name in names), names  # the learner's bonus, checkpointed
    assert not any(name.startswith("actor") for name in names), "an actor's copies are not checkpointed"
    # the learner trained the bonus as often as the replay ratio says, though it is slower than the actors here
    assert_the_replay_ratio_held(json.load(open(log_dir / "status_learner.json")))
    # one actor seeded the statistics (the other found them seeded), both merged their steps; the checkpoint may
    # fall between the two merges of one block of an actor's steps (observations, then returns, in one group op)
    import offpolicy

    observations, returns, _ = rnd_statistics(latest)
    in_flight = 2 * offpolicy.ActingBonus.STATISTICS_EVERY
    assert returns >= 600 and observations >= RND_WARM_UP + returns - in_flight, (observations, returns)


def read_lines(path):
    return open(path).read().splitlines() if os.path.exists(path) else []


APEX_CLUSTER = {"learner": ["127.0.0.1:2222"], "actor": ["127.0.0.1:2223"]}


def train_py_side_by_side(*argvs):
    return side_by_side("train.py", *argvs)


def test_one_process_evaluations_on_images_begin_with_random_actions(tmp_path):
    """The corridor starts where it started, and greedy walks it the same way each time: on images (as Atari's,
    Mario's and Doom's fixed starts) each evaluation episode begins with 0 to 30 random actions, so that its
    episodes are not one episode counted several times; on vectors (classic control starts at random) none."""
    import logdir

    cases = {"CorridorPixels-v0": True, "Corridor-v0": False}
    runs = train_py_side_by_side(*[("--algo", "dqn", "--num-workers", "0", "--env-id", env_id, "--log-dir",
                                    str(tmp_path / env_id), "--eval-every", "100", "--eval-episodes", "4", "--set",
                                    "learning_starts=32", "--set", "batch_size=32", "--set", "max_global_steps=100",
                                    "--set", "eval_epsilon=0") for env_id in cases])
    for (env_id, random_start), run in zip(cases.items(), runs):
        assert run.returncode == 0, run.stderr[-3000:]
        episodes = logdir.read_episodes(str(tmp_path / env_id / "test_episodes"))
        actions = {tuple(episode["action"]) for episode in episodes}
        assert len(episodes) == 4 and (len(actions) > 1) == random_start, (env_id, actions)


def test_a_one_process_run_takes_the_tensorflow_threads_it_is_given():
    import sessions

    one = sessions.local_session_config(1)
    assert (one.intra_op_parallelism_threads, one.inter_op_parallelism_threads) == (1, 1)
    default = sessions.local_session_config(0)  # TensorFlow's default: a thread per core
    assert (default.intra_op_parallelism_threads, default.inter_op_parallelism_threads) == (0, 0)


def test_a_learner_takes_the_cores_its_actors_leave_on_its_machine_or_the_threads_it_is_given():
    import sessions

    spec = {"learner": ["10.9.0.1:2222"], "actor": ["10.9.0.1:2223", "10.9.0.1:2224", "10.9.0.2:2222"]}
    assert sessions.learner_threads(spec, cores=16) == (14, 14)  # the actor on 10.9.0.2 takes none of its cores
    assert sessions.learner_threads(spec, cores=2) == sessions.TASK_THREADS  # never fewer than an actor's
    assert sessions.learner_threads(spec, requested=3, cores=16) == (3, 3)
    crowded = {"learner": ["localhost:1"], "actor": [f"localhost:{port}" for port in range(2, 16)]}
    assert sessions.learner_threads(crowded, cores=16) == (2, 2)


def test_an_impossible_network_in_one_process_is_one_line(tmp_path):
    cases = {("--design-head", "nature"): "--designHead nature needs image observations; this environment gives vectors",
             ("--unsup", "state"): "--unsup state predicts images with the universe head: it needs image observations"}
    results = train_py_side_by_side(*[("--algo", "dqn", "--num-workers", "0", "--env-id", "CartPole-v1", "--log-dir",
                                       str(tmp_path / flags[1]), *flags) for flags in cases])
    for message, result in zip(cases.values(), results):
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith("train.py: error: "), result.stderr


@pytest.mark.parametrize("algo, flags, spec, message", [
    ("dqn", ["--ps-hosts", "127.0.0.1:2222", "--worker-hosts", "127.0.0.1:2223"], None, "name A3C's jobs"),
    ("dqn", [], {"learner": ["127.0.0.1:2222", "127.0.0.1:2224"], "actor": ["127.0.0.1:2223"]},
     "the cluster has 2 learners: give one learner address"),
    ("dqn", [], {"learner": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}, '(--algo a3c) or {"learner"'),
    ("a3c", [], APEX_CLUSTER,
     "(learner and actor) are those of --algo dqn or sac or planet or impala; this run is --algo a3c"),
    ("dqn", [], {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}, "are those of --algo a3c; this run is"),
    ("sac", ["--ps-hosts", "127.0.0.1:2222", "--worker-hosts", "127.0.0.1:2223"], None, "name A3C's jobs"),
    ("sac", [], {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}, "are those of --algo a3c; this run is"),
    ("sac", ["--num-workers", "2", "--prefill-random", "3"], None, "--prefill-random is the one-process run's"),
])
def test_a_cluster_that_is_not_the_algorithms_is_one_line(algo, flags, spec, message, tmp_path):
    if spec is not None:
        (tmp_path / "cluster.json").write_text(json.dumps(spec))
        flags = ["--cluster", str(tmp_path / "cluster.json")]
    result = train_py("--algo", algo, "--env-id", "CartPole-v1", "--log-dir", str(tmp_path / "run"), "--dry-run",
                      *flags)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_apex_actor_acts_on_its_copy_of_the_learners_q_after_each_sync(graph):
    """acting_copy: after a sync the actor's Q (in a session of its own) is the learner's online Q, before it is
    not; without the copy it reads the cluster's actor-side Q, the same values."""
    import tensorflow as tf

    import apex
    import envs

    env = envs.create_env("Corridor-v0")
    config = small_config()
    network = apex.ApeXGraph(env.observation_space, env.action_space, config, "mlp", "/cpu:0", "/cpu:0")
    session = tf.compat.v1.Session()
    session.run(tf.compat.v1.global_variables_initializer())
    assert config.acting_copy, "on in the DQN presets"
    actor = apex.Actor(network, [env], config, 0, 2)
    assert actor.status() == {"epsilons": [pytest.approx(actor.epsilons[0])]}, "the status view's exploration"
    rng = np.random.default_rng(0)
    observations = rng.random((5, *env.observation_space.shape), dtype=np.float32)
    online = network.network
    session.run([variable.assign(rng.normal(0, 0.5, variable.shape)) for variable in online.online_variables])
    learners = session.run(online.q_values, {online.observations: observations})
    assert not np.allclose(actor.acting_outputs(session, observations), learners)
    actor.sync(session)
    np.testing.assert_allclose(actor.acting_outputs(session, observations), learners, rtol=1e-5, atol=1e-6)
    actor.close()
    actor.copy = None  # acting on the cluster's actor-side copy instead
    np.testing.assert_allclose(actor.acting_outputs(session, observations), learners, rtol=1e-5, atol=1e-6)



class StuckOnce:
    """A session whose first run that `sticks(fetches)` picks never returns, as TensorFlow's distributed runtime
    now and then leaves one: it fails as its deadline fails it, with a DeadlineExceededError."""

    def __init__(self, session, sticks):
        self.session, self.sticks, self.stuck = session, sticks, 0

    def run(self, fetches, feed_dict=None, options=None):
        import tensorflow as tf

        if not self.stuck and self.sticks(fetches[0] if isinstance(fetches, list) else fetches):
            self.stuck += 1
            raise tf.errors.DeadlineExceededError(None, None, "Timed out waiting for the step")
        return self.session.run(fetches, feed_dict, options=options)


class Unattended:
    """The stop flag, heartbeat and episode logger of an actor or learner run by hand: never stops, logs nothing."""
    stop = False
    episodes = 0

    def beat(self, *args, **kwargs):
        pass

    def __call__(self, stats):
        pass


def test_an_apex_learner_that_receives_nothing_says_so(graph, monkeypatch, caplog):
    """A learner with no actor left (on a machine whose run is over) would otherwise wait in silence."""
    import tensorflow as tf

    import apex
    import envs
    import replay

    config = small_config(max_global_steps=120)
    env = envs.create_env("Corridor-v0")
    network = apex.ApeXGraph(env.observation_space, env.action_space, config, "mlp", "/cpu:0", "/cpu:0")
    session = tf.compat.v1.Session()
    session.run(tf.compat.v1.global_variables_initializer())
    memory = replay.PrioritizedReplay(1000, env.observation_space.shape, np.float32, alpha=0.5)
    learner = apex.Learner(network, config, memory, writer=None)
    monkeypatch.setattr(apex, "STARVED_SECS", 0.2)

    class StopOnWarning(Unattended):
        def beat(self, *args, **kwargs):  # the loop's every round: stop once warned (bounded by the clock)
            self.stop = "no transitions" in caplog.text or time.time() > deadline

    deadline = time.time() + 30
    with caplog.at_level(logging.WARNING, logger="apex"):
        flag = StopOnWarning()  # the stop flag and the heartbeat
        learner.run(session, flag, flag)
    learner.close()
    assert "no transitions from the actors for 0 s at global step 0 of 120" in caplog.text, caplog.text
    assert time.time() < deadline


def test_an_apex_actor_runs_a_stuck_sync_again_but_never_a_send(graph):
    """A stuck weight fetch is cancelled and run again, and the actor plays on; a stuck send is raised (the
    worker ends and the supervisor restarts it), since a cancelled enqueue_many may have put part of its
    transitions in the queue. A learner's stuck receive is run again too."""
    import tensorflow as tf

    import apex
    import envs
    import replay

    config = small_config(max_global_steps=120)
    env = envs.create_env("Corridor-v0")
    network = apex.ApeXGraph(env.observation_space, env.action_space, config, "mlp", "/cpu:0", "/cpu:0")
    session = tf.compat.v1.Session()
    session.run(tf.compat.v1.global_variables_initializer())
    unattended = Unattended()

    def play(sticks):
        actor = apex.Actor(network, [env], config, 0, 2)
        stuck = StuckOnce(session, sticks)
        try:
            actor.run(stuck, unattended, unattended, unattended)
        finally:
            actor.close()
        return actor, stuck

    actor, stuck = play(lambda fetch: fetch is network.sync)
    sent = int(session.run(network.queue.size()))
    assert stuck.stuck == 1 and actor.last_global_step >= config.max_global_steps and sent > 0
    memory = replay.PrioritizedReplay(1000, env.observation_space.shape, np.float32, alpha=0.5)
    learner = apex.Learner(network, config, memory, writer=None)
    receiving = StuckOnce(session, lambda fetch: fetch is network.received)
    learner.run(receiving, unattended, unattended)  # its first receive takes all: the run is over
    receiving.stuck = 0  # and again in its finish, on the same session
    learner.finish(0, unattended, unattended)
    learner.close()
    assert receiving.stuck == 1 and memory.inserted == sent
    assert actor.status()["retried_runs"] == {"stuck": 1, "aborted": 0}, "the status view shows them"
    assert learner.status()["retried_runs"] == {"stuck": 2, "aborted": 0}
    step = int(session.run(network.network.global_step))
    with pytest.raises(tf.errors.DeadlineExceededError):
        play(lambda fetch: fetch is network.send)
    assert int(session.run(network.network.global_step)) == step
