"""`--algo planet` on TensorFlow's cluster: a learner and actors, the one-process run's collecting and learning
halves placed apart (in a file of its own, so that the test processes share planet's runs)."""
import os

import tensorflow as tf

import planet
from test_planet_runs import TINY, train_py


def test_planet_on_a_cluster_trains_on_every_actors_episodes_and_evaluates(tmp_path):
    """A learner and 2 actors (worker.py processes under the launcher's supervisor): both actors store episodes in
    the one train_episodes/, random ones first; the learner makes exactly the updates those episodes owe
    (collect_every for the last random one and each after it: it reads every actor's), checkpoints them with the
    global step the actors counted, draws the open-loop prediction; the evaluation process beside the run
    evaluates its checkpoints with the planner."""
    import csv

    log_dir = tmp_path / "run"
    result = train_py(*TINY, "--num-workers", "2", "--mode", "child", "--no-tensorboard", "--log-dir", str(log_dir),
                      "--eval-episodes", "1", "--set", "max_global_steps=1600")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    stored = os.listdir(log_dir / "train_episodes")
    logged = {task: list(csv.DictReader(open(log_dir / f"episodes_{task}.csv"))) for task in (0, 1)}
    assert all(logged.values()), "each actor collects"
    # an actor stops mid-episode at the run's end, and that episode is not stored: 200 steps each at most
    assert len(stored) == sum(map(len, logged.values())) >= (1600 - 2 * 200) // 200
    latest = tf.train.latest_checkpoint(str(log_dir / "train"))
    collect_every, random_episodes = 3, 2  # TINY's
    assert tf.train.load_variable(latest, "updates") == collect_every * (len(stored) - random_episodes + 1)
    assert tf.train.load_variable(latest, "global_step") >= 1600
    assert os.listdir(log_dir / "predictions")
    evaluations = [int(line.split()[1]) for line in open(log_dir / "rewards.txt")]
    assert evaluations and evaluations[-1] >= 1600, evaluations


def test_an_actor_waits_for_a_learner_that_lags_by_more_than_an_episode_each():
    import constants

    config = constants.config_from_overrides(["collect_every=10", "random_episodes=5"], "planet_cpu")
    assert planet.updates_owed(config, 4) == 0 and planet.updates_owed(config, 5) == 10
    assert planet.updates_owed(config, 8) == 40
    # 8 episodes owe 40; two actors may run ahead of the learner by 20 updates, one by 10
    assert not planet.lagging(config, 8, 20, actors=2) and planet.lagging(config, 8, 19, actors=2)
    assert planet.lagging(config, 8, 29, actors=1) and not planet.lagging(config, 8, 30, actors=1)
