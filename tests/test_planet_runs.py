"""`--algo planet` from the command line: one-process runs that collect, learn, evaluate, resume and play back,
from vectors and from pixels; the latent SAC started from a planner run's world model; what it refuses."""
import os

import numpy as np
import pytest
import tensorflow as tf

import planet
import preloaded

tf1 = tf.compat.v1


def train_py(*args):
    return preloaded.run("train.py", *args, timeout=280)


TINY = ["--algo", "planet", "--env-id", "Pendulum-v1", "--eval-every", "400", "--eval-episodes", "2",
        "--set", "random_episodes=2", "--set", "collect_every=3", "--set", "batch_size=4",
        "--set", "sequence_length=10", "--set", "state_size=4", "--set", "belief_size=16", "--set", "hidden_size=16",
        "--set", "cem_candidates=20", "--set", "cem_top=4", "--set", "cem_iterations=2", "--set", "cem_horizon=3"]


@pytest.fixture(scope="module")
def planner_run(tmp_path_factory):
    """A planner run of 800 steps, its log dir and its result: the one-process test goes on from it, and the latent
    SAC starts from its world model."""
    log_dir = tmp_path_factory.mktemp("planet") / "run"
    return log_dir, train_py(*TINY, "--log-dir", str(log_dir), "--set", "max_global_steps=800")


def test_planet_in_one_process_collects_learns_evaluates_resumes_and_plays(planner_run, tmp_path):
    """Two random episodes, then an update batch after each episode and planned episodes; an evaluation and a
    checkpoint every 400 steps, every episode stored; the same command goes on from the checkpoint (step and update
    count); demo.py plays the checkpoint with the planner. (Not whether it learns: tests/test_planet's model test
    and the benchmark measure that.)"""
    import json

    log_dir, result = planner_run
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split() for line in open(log_dir / "rewards.txt")]
    assert [int(row[1]) for row in rows] == [400, 800]
    assert len(os.listdir(log_dir / "train_episodes")) == 4 and len(os.listdir(log_dir / "test_episodes")) == 4
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    # episodes end at 200, 400, 600, 800; updates after the 2nd, 3rd and 4th: 3 x collect_every
    assert latest.endswith("-800") and tf.train.load_variable(latest, "updates") == 9
    assert any(name.startswith("world_model/rssm/") for name, _ in tf.train.list_variables(latest))
    result = train_py(*TINY, "--log-dir", str(log_dir), "--allow-config-change", "--set", "max_global_steps=1000")
    assert result.returncode == 0, result.stderr[-3000:]
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    assert "resumed from" in result.stderr and tf.train.load_variable(latest, "updates") == 12
    played = preloaded.run("demo.py", "--log-dir", log_dir, "--greedy", "--episodes", "1", "--out", tmp_path / "demo",
                           timeout=200)
    assert played.returncode == 0, played.stderr[-2000:]
    summary = json.load(open(tmp_path / "demo" / "summary.json"))
    assert summary["episodes"] == 1 and summary["mean_length"] == 200


def test_planet_from_pixels_stores_uint8_frames_and_plays_them_back(tmp_path):
    """Pendulum-v1-pixels: the episodes stored as 64x64x3 uint8 frames (a quarter of float32's bytes), the model's
    convolutions in the checkpoint, an evaluation whose episode is stored per model step as the collected ones, and
    demo.py's playback of the checkpoint from pixels."""
    import json

    log_dir = tmp_path / "run"
    result = train_py(*TINY, "--env-id", "Pendulum-v1-pixels", "--log-dir", str(log_dir), "--set", "cnn_depth=2",
                      "--set", "action_repeat=4", "--set", "max_global_steps=400", "--eval-episodes", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    episode = np.load(sorted((log_dir / "train_episodes").iterdir())[0])
    assert episode["observation"].dtype == np.uint8 and episode["observation"].shape == (51, 64, 64, 3)
    assert episode["observation"].max() == 255 and episode["observation"].min() < 128, "white ground, a dark rod"
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    assert tf.train.load_variable(latest, "world_model/encoder/conv_3/w").shape == (4, 4, 8, 16)
    assert [int(line.split()[1]) for line in open(log_dir / "rewards.txt")] == [400]
    tested = np.load(sorted((log_dir / "test_episodes").iterdir())[0])  # stored per model step, as the collected
    assert tested["observation"].shape == (51, 64, 64, 3) and tested["action"].shape == (51, 1)
    assert np.all(tested["action"][1:-1] != tested["action"][2:]), "one row per decision, not per game step"
    assert tested["reward"].sum() == pytest.approx(float(open(log_dir / "rewards.txt").read().split()[2]), abs=0.1)
    import cv2

    strip = cv2.imread(str(log_dir / "predictions" / "open_loop_000000400.png"))
    assert strip.shape == (2 * 64, 30 * 64, 3), "the truth above the open-loop prediction, 30 frames"
    played = preloaded.run("demo.py", "--log-dir", log_dir, "--greedy", "--episodes", "1", "--out", tmp_path / "demo",
                           timeout=200)
    assert played.returncode == 0, played.stderr[-2000:]
    assert json.load(open(tmp_path / "demo" / "summary.json"))["mean_length"] == 200


REFUSED = [(["--unsup", "action"], "--algo planet takes no curiosity bonus yet"),
           (["--env-id", "CartPole-v1"], "plans continuous actions"),
           (["--env-id", "PongDeterministic-v4"], "takes vector observations or 64x64x3 frames"),
           (["--set", "action_repeat=8"], "sequence_length 50 is longer than an episode: 200 steps at action_repeat 8 "
                                          "are 26 rows")]


def test_what_planet_cannot_take_is_one_line(tmp_path):
    from conftest import side_by_side

    results = side_by_side("train.py", *(["--algo", "planet", "--env-id", "Pendulum-v1", "--log-dir",
                                          tmp_path / f"run{index}", *flags] for index, (flags, _) in enumerate(REFUSED)))
    for (flags, says), result in zip(REFUSED, results):
        assert result.returncode == 2 and says in result.stderr, (flags, result.stderr[-2000:])
        assert "Traceback" not in result.stderr


def test_the_latent_sac_starts_from_a_trained_world_model_with_its_own_heads_fresh(planner_run, tmp_path, caplog):
    """A planner run's checkpoint, then --set behaviour=sac --pretrain it --restore-include 'world_model/.*': every
    variable of the world model holds the checkpoint's value, the latent SAC's are new (and logged as fresh), its
    critics' targets start as the critics; the run from the command line trains it and demo.py plays its actor."""
    import logging

    import constants
    import envs

    source, result = planner_run
    assert result.returncode == 0, result.stderr[-3000:]
    checkpoint = tf.train.latest_checkpoint(str(source / "train"))
    sets = [value for flag, value in zip(TINY, TINY[1:]) if flag == "--set" and value.split("=")[0] in (
        "state_size", "belief_size", "hidden_size", "batch_size", "sequence_length")]
    config = constants.config_from_overrides(sets + ["behaviour=sac"], "planet_cpu")
    with tf.Graph().as_default():
        run = planet.LocalRun(str(tmp_path / "latent"), config,
                              lambda render_mode=None: envs.create_env("Pendulum-v1", continuous_actions=True))
        with tf1.Session() as session, caplog.at_level(logging.INFO):
            run.restore_or_initialise(session, pretrain=(str(source), "world_model/.*", None))
            model = {v.op.name: value for v, value in zip(run.model.variables(),
                                                           session.run(run.model.variables()))}
            critics, targets = session.run([run.sac.critic_variables, run.sac.target_variables])
        fresh = [v.op.name for v in tf1.trainable_variables() if v.op.name.startswith(planet.LATENT_SCOPE + "/")]
    assert model and all(np.array_equal(value, tf.train.load_variable(checkpoint, name))
                         for name, value in model.items())
    in_checkpoint = {name for name, _ in tf.train.list_variables(checkpoint)}
    assert fresh and not set(fresh) & in_checkpoint
    said = "\n".join(record.getMessage() for record in caplog.records)
    assert f"restoring {len(model)} of {len(model) + len(fresh)} trainable variables" in said, said
    assert "world_model/rssm/belief/gates/w" in said.split("not restored")[0] and fresh[0] in said
    assert all(np.array_equal(critic, target) for critic, target in zip(critics, targets))

    latent = tmp_path / "latent-cli"
    result = train_py(*TINY, "--log-dir", str(latent), "--set", "behaviour=sac", "--set", "max_global_steps=400",
                      "--pretrain", str(source), "--restore-include", "world_model/.*")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "pretrain: restored world_model/" in result.stderr
    trained = tf.train.latest_checkpoint(str(latent / "train"))
    assert tf.train.load_variable(trained, "latent_sac/updates") == 3, "one SAC update with each of the model's"
    played = preloaded.run("demo.py", "--log-dir", latent, "--greedy", "--episodes", "1", "--out", tmp_path / "demo",
                           timeout=200)
    assert played.returncode == 0, played.stderr[-2000:]
