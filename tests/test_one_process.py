"""A3C in one process (`train.py --num-workers 0`): the cluster's worker (a3c.train_worker), placed in the launcher's
process with the global variables beside the local ones: it trains, checkpoints, beats a heartbeat the status view
reads, shows a progress bar, and a relaunch resumes from its checkpoint."""
import json
import os
import subprocess
import sys

import logdir
from conftest import ROOT


def train(log_dir, steps, *flags):
    return subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), "--num-workers", "0", "--env-id",
                           "CartPole-v1", "--log-dir", str(log_dir), "--set", f"max_global_steps={steps}",
                           "--set", "envs_per_worker=2", *flags], capture_output=True, text=True, timeout=300)


def test_a3c_in_one_process_trains_checkpoints_and_resumes(tmp_path):
    import tensorflow as tf

    import status

    log_dir = tmp_path / "run"
    first = train(log_dir, 1000)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "run over: global step" in first.stdout and "step/s" in first.stderr, "the progress bar"
    config = json.loads((log_dir / "config.json").read_text())
    assert config["run"]["algo"] == "a3c" and config["run"]["num_workers"] == 0 and config["preset"] == "classic"
    beat = json.loads((log_dir / "status_local.json").read_text())
    assert (beat["name"], beat["state"]) == ("local", "stopped") and beat["global_step"] >= 1000, beat
    assert beat["steps_trained"] == beat["global_step"], "one worker: every step of the run is its own"
    saved = tf.train.latest_checkpoint(str(log_dir / "train"))
    assert tf.train.load_variable(saved, "global/global_step") == beat["global_step"]
    rows = logdir.read_rows(str(log_dir / "episodes_0.csv"))
    assert len(rows) > 10 and all(int(row["global_step"]) <= beat["global_step"] for row in rows)
    assert "\nlocal " in status.render(status.collect(str(log_dir)))

    second = train(log_dir, 2000)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resuming from {saved}" in second.stderr
    again = json.loads((log_dir / "status_local.json").read_text())
    assert again["global_step"] >= 2000 and again["steps_trained"] == again["global_step"] - beat["global_step"]
    assert len(logdir.read_rows(str(log_dir / "episodes_0.csv"))) > len(rows), "appended to"
