"""Seeing and judging agents: playback with video, periodic evaluation, plots, the Doom visitation map, status.

The runs are real: train.py in child mode trains CartPole (and a short Doom run) for a few thousand steps, and
the commands read what those runs wrote."""
import csv
import glob
import json
import os
import re
import sys
import time

import imageio.v3 as iio
import numpy as np
import pytest
import tensorflow as tf
from conftest import ROOT, side_by_side
from test_distributed import free_exp_id, launch

import constants
import demo as playback
import evaluation
import logdir
import plots
import preloaded
import status

tf1 = tf.compat.v1


def train_run(log_dir, env_id, workers, max_steps, exp_id, *extra):
    result = launch(log_dir, max_steps, exp_id, *extra, env_id=env_id, workers=workers)
    assert result.returncode == 0, result.stdout + result.stderr
    return log_dir


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    """A3C + ICM on CartPole, 2 workers, 4000 steps, evaluated every 1000 steps while it trains."""
    log_dir = tmp_path_factory.mktemp("analysis") / "cartpole"
    return train_run(log_dir, "CartPole-v1", 2, 4000, free_exp_id(2, 460), "--unsup", "action",
                     "--eval-every", "1000", "--eval-episodes", "2")


@pytest.fixture(scope="module")
def doom_run(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("analysis") / "doom"
    # 2 environments (not the doom preset's 16), so that each plays past the end of a 525-step episode
    return train_run(log_dir, "doomSparse", 1, 1500, free_exp_id(1, 470), "--envs-per-worker", "2")


def demo(*argv):
    return demos(argv)[0]


def demos(*argvs):
    """demo.py with each of `argvs`, all at once: their results."""
    return side_by_side("demo.py", *argvs)


def test_playback_records_a_video_that_decodes_with_one_frame_per_step(cartpole_run, tmp_path):
    result = demo("--log-dir", cartpole_run, "--episodes", "2", "--greedy", "--record", "--record-signal",
                  "--out", tmp_path, "--max-steps", "60")
    assert result.returncode == 0, result.stderr
    assert "greedy policy, checkpoint at global step" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["policy"] == "greedy" and summary["global_step"] >= 4000 and summary["episodes"] == 2
    for index, episode in enumerate(summary["episode_details"], 1):
        assert f"episode {index}: reward {episode['reward']:.4g}, length {episode['length']}" in result.stdout
        video = iio.imread(tmp_path / f"episode_{index}.mp4")
        assert video.shape == (episode["length"] + 1, 400, 600, 3), "the first frame, then one per step"
        assert video.std() > 10, "the video shows the cart, not a blank screen"
        signal = np.load(tmp_path / f"episode_{index}_signal.npz")["observations"]
        assert signal.shape == (episode["length"] + 1, 4)  # CartPole's inputs are its 4 numbers
        assert episode["bonus"] > 0, "the run's curiosity module scores the steps"


def test_playback_sampled_and_random_policies(cartpole_run, tmp_path):
    sampled, again, other, random = demos(
        *[("--log-dir", cartpole_run, "--episodes", "3", "--out", tmp_path / name, "--seed", seed)
          for name, seed in (("sampled", "3"), ("again", "3"), ("other", "4"))],
        ("--log-dir", cartpole_run, "--episodes", "3", "--random", "--out", tmp_path / "random", "--video-format",
         "gif", "--record"))
    assert all(result.returncode == 0 for result in (sampled, again, other, random)), sampled.stderr + random.stderr
    assert "sampled policy" in sampled.stdout and "random policy" in random.stdout
    digests = {name: [episode["actions_digest"] for episode in
                      json.loads((tmp_path / name / "summary.json").read_text())["episode_details"]]
               for name in ("sampled", "again", "other")}
    assert digests["sampled"] == digests["again"], "a sampled playback is the same again with the same --seed"
    assert digests["sampled"] != digests["other"]
    summary = json.loads((tmp_path / "random" / "summary.json").read_text())
    frames = iio.imread(tmp_path / "random" / "episode_1.gif")  # GIF merges identical consecutive frames
    assert 2 <= len(frames) <= summary["episode_details"][0]["length"] + 1 and frames.shape[1:] == (400, 600, 3)
    assert summary["mean_reward"] < 100, "a random CartPole agent falls within a few dozen steps"


def test_ctrl_c_during_playback_keeps_the_episodes_played(cartpole_run, tmp_path):
    import signal

    log = tmp_path / "demo.log"
    process = preloaded.start("demo.py", "--log-dir", cartpole_run, "--episodes", "100000", "--out",
                              tmp_path / "out", output=log)
    try:
        deadline = time.time() + 120
        while "episode 2:" not in log.read_text():
            assert process.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        process.kill()
    text = log.read_text()
    assert process.returncode == 130 and "Traceback" not in text, text
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    played = summary["episodes"]
    assert summary["interrupted"] and 2 <= played < 100000 and len(summary["episode_details"]) == played
    assert f"over {played} episodes, {summary['distinct_episodes']} distinct (interrupted: {played} of 100000 played)" \
        in text, text


class FixedStartGame:
    """A deterministic game with one start: 6 steps whatever the actions; it keeps the actions it was given."""

    class action_space:
        n = 3

    def reset(self, seed=None):
        self.actions = []
        return 0, {}

    def step(self, action):
        self.actions.append(action)
        return len(self.actions), 0.0, len(self.actions) == 6, False, {}


class AlwaysZero:
    """A greedy policy that takes action 0 and counts the frames it was shown."""

    def reset(self):
        self.frames = 0

    def act(self, observation, greedy):
        self.frames += 1
        return 0

    def bonus(self, *transition):
        return 0.0


def test_cartpole_endings_tell_the_cart_off_the_track_from_the_pole_down(cartpole_run, capsys):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import cartpole_endings

    assert cartpole_endings.ending([2.41, 0.1, 0.05, 0.0], 120, 500) == "cart"
    assert cartpole_endings.ending([-2.41, -0.1, 0.3, 0.0], 120, 500) == "cart"
    assert cartpole_endings.ending([0.5, 0.0, -0.21, -1.0], 40, 500) == "pole"
    assert cartpole_endings.ending([0.5, 0.0, 0.20946, 0.0], 60, 500) == "pole"  # just past gymnasium's 12 degrees
    assert cartpole_endings.ending([0.5, 0.0, 0.01, 0.0], 500, 500) == "limit"
    assert cartpole_endings.main(["--log-dir", str(cartpole_run), "--episodes", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    episodes = [re.match(r"episode \d: (\d+) steps, (\w+);", line) for line in lines if line.startswith("episode")]
    assert len(episodes) == 3 and all(episodes)
    for match in episodes:  # an episode that ended before the limit says how
        assert match.group(2) == "limit" if int(match.group(1)) == 500 else match.group(2) in ("cart", "pole")
    assert lines[-1].startswith("endings: ") and sum(int(n) for n in re.findall(r"\d+", lines[-1])) == 3


def test_random_starts_make_greedy_episodes_of_a_deterministic_game_differ():
    game, agent = FixedStartGame(), AlwaysZero()

    def play(random_start, rng):
        episode, _, _ = evaluation.play_episode(game, agent, True, rng, 100, False, False, random_start=random_start)
        assert agent.frames == 6, "the policy sees every frame, the random ones too (its LSTM state follows them)"
        first = episode["random_steps"]
        assert 0 <= first <= random_start and game.actions[first:] == [0] * (6 - first)
        return episode

    rng = np.random.default_rng(0)
    replayed = [play(0, rng) for _ in range(5)]
    assert evaluation.summarise(replayed)["distinct_episodes"] == 1, "one trajectory, five times"
    varied = [play(4, rng) for _ in range(20)]
    assert {episode["random_steps"] for episode in varied} == {0, 1, 2, 3, 4}
    assert evaluation.summarise(varied)["distinct_episodes"] > 5


@pytest.mark.parametrize("env_id, expected", [("CorridorPixels-v0", 30), ("CartPole-v1", 0)])
def test_evaluations_random_start_is_30_on_images_and_none_on_vectors(env_id, expected):
    """`--random-start auto`, what the cluster's evaluator gets: a fixed-start game on images begins with up to 30
    random actions; classic control, whose resets are random, with none (30 random actions end many a CartPole
    episode before the policy acts)."""
    import train

    args = playback.parse_args(["--log-dir", "x", "--random-start", "auto"])
    playback.make_env(args, {"env_id": env_id, "algo": "a3c"}, record=False)
    assert args.random_start == expected
    plan = train.create_commands("s", 1, env_id, "/tmp/x", mode="child", eval_every=1000)
    evaluator = next(process.argv for process in plan.processes if process.name == "eval")
    assert evaluator[evaluator.index("--random-start") + 1] == "auto"
    with pytest.raises(SystemExit):  # argparse's one line
        playback.parse_args(["--log-dir", "x", "--random-start", "some"])


def test_playback_without_a_checkpoint_is_a_one_line_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"run": {"env_id": "CartPole-v1", "unsup": "none"},
                                                      "hyperparameters": {}}))
    result = demo("--log-dir", tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "demo.py: error: no checkpoint in" in result.stderr and "--random" in result.stderr


def test_evaluation_rows_appear_while_training_and_the_best_checkpoint_is_kept(cartpole_run):
    with open(cartpole_run / "eval.csv") as handle:
        rows = list(csv.DictReader(handle))
    steps = [int(row["global_step"]) for row in rows]
    # the run's last checkpoint is evaluated, the launcher waiting for it; the ones before every 1000 steps or more
    assert steps and steps[-1] >= 4000, "the last checkpoint's evaluation"
    assert steps == sorted(steps) and all(later - earlier >= 1000 for earlier, later in zip(steps, steps[1:-1]))
    # rewards.txt: eval.csv's view, a line per row, as a one-process replay learner's (evaluation.py writes both)
    view = [(step, float(f"{float(row['mean_reward']):.1f}")) for step, row in zip(steps, rows)]
    assert logdir.read_rewards(str(cartpole_run)) == view
    best = json.loads((cartpole_run / "best" / "best.json").read_text())
    assert best["mean_reward"] == max(float(row["mean_reward"]) for row in rows)
    restored = tf1.train.NewCheckpointReader(tf1.train.latest_checkpoint(str(cartpole_run / "best")))
    assert restored.get_tensor("global/global_step") == best["global_step"]
    tags = set()
    for path in glob.glob(str(cartpole_run / "eval" / "events.out.tfevents.*")):
        for event in tf1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    assert {"global/eval_reward_mean", "global/eval_reward_min", "global/eval_reward_max"} <= tags


def test_plots_write_pngs_whose_curves_match_the_csv(cartpole_run, tmp_path):
    written = plots.make_plots({"icm": [str(cartpole_run)]}, str(tmp_path), smooth=5)
    for name in ("reward_vs_steps.png", "reward_vs_time.png", "bonus_vs_steps.png", "eval_vs_steps.png"):
        image = iio.imread(tmp_path / name)
        assert image.shape[:2] == (500, 800), name
    rows = []
    for path in glob.glob(str(cartpole_run / "episodes_*.csv")):
        with open(path) as handle:
            rows += list(csv.DictReader(handle))
    rows.sort(key=lambda row: (int(row["global_step"]), float(row["wall_time"])))
    steps = np.array([int(row["global_step"]) for row in rows], float)
    rewards = np.array([float(row["env_reward"]) for row in rows])
    smoothed = [rewards[max(0, i - 4):i + 1].mean() for i in range(len(rewards))]
    curve = json.loads((tmp_path / "curves.json").read_text())["reward_vs_steps.png"]["icm"]
    assert curve == written["reward_vs_steps.png"]["icm"] and curve["runs"] == 1
    assert np.allclose(curve["mean"], np.interp(curve["x"], steps, smoothed))
    assert curve["x"][0] == steps[0] and curve["x"][-1] == steps[-1]


def test_plots_compare_configurations_with_seeds_as_mean_and_band(cartpole_run, tmp_path):
    """Two seeds of "a": the run and a copy whose every episode earned three times as much; "b": the run alone.
    The mean of "a" is twice b's, its band runs from b's curve to three times it (smoothing and the grid are linear)."""
    tripled = tmp_path / "tripled"
    tripled.mkdir()
    (tripled / "config.json").write_text((cartpole_run / "config.json").read_text())
    for path in glob.glob(str(cartpole_run / "episodes_*.csv")):
        with open(path) as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            row["env_reward"] = str(3 * float(row["env_reward"]))
        with open(tripled / os.path.basename(path), "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    data = plots.make_plots({"a": [str(cartpole_run), str(tripled)], "b": [str(cartpole_run)]}, str(tmp_path / "out"),
                            smooth=5)
    a, b = data["reward_vs_steps.png"]["a"], data["reward_vs_steps.png"]["b"]
    assert a["runs"] == 2 and b["runs"] == 1 and a["x"] == b["x"]
    assert np.allclose(a["mean"], 2 * np.array(b["mean"])) and np.allclose(a["min"], b["mean"])
    assert np.allclose(a["max"], 3 * np.array(b["mean"]))


def test_a_published_result_is_marked_beside_the_curves():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    plots.draw_references(axes, [(4_000_000, 1.0, "the paper's ICM"), (None, 0.7, "the paper's A3C")])
    star, level = axes.get_lines()
    assert list(star.get_xdata()) == [4_000_000] and list(star.get_ydata()) == [1.0] and star.get_marker() == "*"
    assert list(level.get_ydata()) == [0.7, 0.7] and level.get_linestyle() == "--"
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["the paper's ICM", "the paper's A3C"]
    plt.close(figure)


def test_plots_refuse_a_folder_that_is_not_a_run(tmp_path):
    assert plots.main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2


def test_doom_visitation_map_from_a_short_run(doom_run, tmp_path):
    with open(doom_run / "visits_0.csv") as handle:
        visits = list(csv.DictReader(handle))
    assert len(visits) > 100
    data = plots.make_plots({"sparse": [str(doom_run)]}, str(tmp_path), smooth=5)
    assert data["visits_sparse.png"]["positions"] == len(visits) and data["visits_sparse.png"]["cells_visited"] > 5
    assert iio.imread(tmp_path / "visits_sparse.png").shape[:2] == (500, 800)
    first = visits[0]
    assert abs(float(first["x"]) - 240) < 40 and abs(float(first["y"]) + 176) < 40, "doomSparse starts west"


def test_the_success_axis_says_what_success_is_in_the_game_played(tmp_path, monkeypatch):
    # Mario's success is the flag, MyWayHome's the vest; a figure of both, or of a game that says nothing more
    # than "ended early", keeps the plain label. Checked on what make_plots hands to the axes.
    def run(name, env_id):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"run": {"env_id": env_id}}))
        rows = [{"global_step": 100 * (i + 1), "wall_time": 1000.0 + i, "worker": 0, "reward": 0, "length": 10,
                 "seconds": 1.0, "env_reward": 0, "truncated": 0, "bonus": 0, "success": i % 2} for i in range(6)]
        with open(folder / "episodes_0.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return str(folder)

    drawn = {}
    original = plots.draw_curves
    monkeypatch.setattr(plots, "draw_curves", lambda axes, data, xlabel, ylabel, title, colors=None: (
        drawn.setdefault(title, []).append(ylabel), original(axes, data, xlabel, ylabel, title, colors)))
    runs = {"mario": run("m", "mario-1-1"), "sparse": run("d", "doomSparse"), "pole": run("c", "CartPole-v1")}
    for label, groups in (("flag", {"a": [runs["mario"]]}), ("vest", {"a": [runs["sparse"]]}),
                          ("both", {"a": [runs["mario"]], "b": [runs["sparse"]]}), ("pole", {"a": [runs["pole"]]})):
        drawn.clear()
        plots.make_plots(groups, str(tmp_path / label), smooth=2)
        assert drawn["Success rate (moving average)"] == [{
            "flag": "success rate (reached the flag)", "vest": "success rate (reached the vest)"}.get(
                label, "success rate")], label
    assert plots.success_label(["doom", "doomVerySparse"]) == "success rate (reached the vest)"
    assert plots.success_label(["mario", "doom"]) == plots.success_label([None]) == "success rate"


def test_status_reports_a_worker_that_stopped_updating_as_stale(cartpole_run, tmp_path):
    finished = status.collect(str(cartpole_run))
    assert [worker["state"] for worker in finished["workers"]] == ["stopped", "stopped"]
    assert finished["global_step"] >= 4000 and finished["episodes"] > 0 and "recent_reward" in finished
    now = time.time()
    for task, age in ((0, 1.0), (1, 300.0)):
        beat = {"task": task, "pid": 1, "time": now - age, "state": "training", "global_step": 5000 + task,
                "max_global_steps": 10000, "steps_per_sec": 100.0, "episodes": 3, "skipped_updates": 7 * task,
                "retried_runs": {"stuck": 2 * task, "aborted": task}}
        (tmp_path / f"status_{task}.json").write_text(json.dumps(beat))
    live = status.collect(str(tmp_path), now=now)
    assert live["stale"] == [1] and [worker["state"] for worker in live["workers"]] == ["training", "STALE"]
    assert live["steps_per_sec"] == 100.0, "a stale worker's last rate is not counted"
    text = status.render(live, tensorboard_port=6006)
    assert "w-1     STALE" in text and "hung or dead" in text and "http://127.0.0.1:6006" in text
    assert "(7 NaN/inf updates skipped)" in text and text.count("NaN/inf") == 1
    assert "(session.runs retried: 2 stuck, 1 aborted)" in text and text.count("retried") == 1
    assert "global step 5,001 / 10,000 (50.01%)" in text
    # the supervisor's record: restarts per worker, and why the run ended
    (tmp_path / "supervisor.json").write_text(json.dumps({"outcome": [1, "w-1 failed 5 times in 10 min"],
                                                           "processes": {"ps": {"restarts": 2},
                                                                         "w-1": {"restarts": 5}}}))
    text = status.render(status.collect(str(tmp_path), now=now))
    restarts = [line.split()[5] for line in text.splitlines() if line.startswith("w-")]
    assert restarts == ["0", "5"] and "restarted 2 time(s)" in text and "run over: w-1 failed 5 times" in text


def test_a_run_across_machines_is_read_as_one_run_from_their_log_dirs(tmp_path, capsys):
    from acting import EpisodeLogger, EpisodeTally

    now, machines = time.time(), [tmp_path / "machine-a", tmp_path / "machine-b"]
    for task, (log_dir, episodes) in enumerate(zip(machines, (3, 2))):  # worker 0 on a, worker 1 on b
        log_dir.mkdir()
        logger = EpisodeLogger(str(log_dir), task, None, lambda: 1000 * (task + 1))
        for _ in range(episodes):
            logger(EpisodeTally().stats(truncated=False))
        logger.close()
        beat = {"task": task, "pid": 1, "time": now, "state": "training", "global_step": 1000 * (task + 1),
                "max_global_steps": 10000, "steps_per_sec": 50.0, "episodes": episodes}
        (log_dir / f"status_{task}.json").write_text(json.dumps(beat))
        (log_dir / "supervisor.json").write_text(json.dumps({"processes": {f"w-{task}": {"restarts": task + 1}}}))
    (machines[0] / "config.json").write_text(json.dumps({"run": {"env_id": "CartPole-v1", "unsup": "action"}}))
    run = status.collect([str(path) for path in machines], now=now)
    assert [worker["task"] for worker in run["workers"]] == [0, 1] and run["episodes"] == 5
    assert run["steps_per_sec"] == 100.0 and run["global_step"] == 2000 and run["env_id"] == "CartPole-v1"
    assert [worker["restarts"] for worker in run["workers"]] == [1, 2]
    assert status.main(["--log-dir", str(machines[0]), str(machines[1])]) == 0
    assert "w-0" in capsys.readouterr().out
    curves = plots.make_plots(plots.parse_groups([f"run={machines[0]}+{machines[1]}"]), str(tmp_path / "p"), 1)
    assert curves["reward_vs_steps.png"]["run"]["runs"] == 1  # one run, not two seeds
    assert curves["reward_vs_steps.png"]["run"]["x"][-1] == 2000  # its episodes from both machines


def test_plots_to_an_unwritable_folder_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "episodes_0.csv").write_text("global_step,wall_time,worker,reward,env_reward,bonus\n1,1.0,0,1,1,0\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert plots.main([str(tmp_path), "--out", str(blocker / "out")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("plots.py: error: ") and error.count("\n") == 1 and "choose another --out" in error


@pytest.mark.parametrize("script,argv,expected", [
    ("status.py", ["--log-dir", "{tmp}/nowhere"], "does not exist: is it a run's --log-dir?"),
    ("status.py", ["--log-dir", "{tmp}", "--interval", "0"], "--interval and --stale-seconds must be positive"),
    ("demo.py", ["--log-dir", "{tmp}", "--episodes", "0"], "--episodes must be at least 1, got 0"),
    ("demo.py", ["--log-dir", "{tmp}", "--video-quality", "11"], "--video-quality must lie in [0, 10], got 11.0"),
    ("demo.py", ["--log-dir", "{tmp}", "--random", "--env-id", "Nope-v0"], "unknown environment id 'Nope-v0'"),
    ("demo.py", ["--log-dir", "{tmp}/cut"], "config.json is unreadable"),
    ("demo.py", ["--log-dir", "{tmp}"], "has no config.json: is it a run's log directory?"),
])
def test_status_and_playback_answer_bad_input_in_one_line(tmp_path, script, argv, expected):
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "config.json").write_text('{"run": {"env_id": "CartPole-v1"')
    result = preloaded.run(script, *(a.format(tmp=tmp_path) for a in argv), timeout=120)
    assert result.returncode == 2 and expected in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"{script}: error: ") and "Traceback" not in result.stderr


def test_exploration_coverage_counts_the_cells_a_pendulums_states_visit():
    """Pendulum's (cos, sin, velocity) as (angle, velocity) by hand; a 24 x 24 grid over [-pi, pi] x [-8, 8]: three
    states in two cells (two share one), the upper bounds in the last cells."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import exploration_coverage as coverage

    observations = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.1], [-1.0, 1e-9, 8.0]]  # upright still twice; hanging, at full speed
    states = coverage.pendulum_state(observations)
    assert states[:, 0] == pytest.approx([0.0, 0.0, np.pi]) and states[:, 1].tolist() == [0.0, 0.1, 8.0]
    counts = coverage.visits(states, ((-np.pi, np.pi), (-8.0, 8.0)))
    assert counts.shape == (24, 24) and counts.sum() == 3
    assert counts[12, 12] == 2 and counts[23, 23] == 1
    assert coverage.coverage(counts) == pytest.approx(2 / 576)


def test_the_peers_benchmark_reads_sample_factorys_reports_as_agent_steps_in_time():
    """benchmarks/peers.py measures sample-factory from its periodic reports: their time and "Samples:" count."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import peers

    text = ("\x1b[36m[2026-12-04 07:55:04,580][14833] Fps is (10 sec: 512.0, 60 sec: 352.1, 300 sec: 288.0). Total num "
            "frames: 23040. Throughput: 0: 89.9. Samples: 5792. Policy #0 lag: (min: 0.0, avg: 0.8, max: 3.0)\x1b[0m\n"
            "[2026-12-04 07:55:05,001][14833] Heartbeat connected on Batcher_0\n"
            "\x1b[36m[2026-12-04 07:55:09,631][14833] Fps is (10 sec: 382.0, 60 sec: 351.7, 300 sec: 285.9). Total num "
            "frames: 24320. Throughput: 0: 88.3. Samples: 6076. Policy #0 lag: (min: 0.0, avg: 0.1, max: 1.0)\x1b[0m\n")
    (first, before), (second, after) = peers.sample_factory_reports(text)
    assert (before, after) == (5792, 6076) and second - first == 5


def test_the_throughput_benchmark_reads_impalas_learner_for_training_and_its_actors_for_playing():
    """A3C's workers both play and train; IMPALA's actors play and its learner alone trains on what they send."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import throughput

    assert throughput.measured_tasks("a3c", 2) == ([0, 1], [0, 1])
    assert throughput.measured_tasks("impala", 2) == ([0, 1], ["learner"])


def test_the_throughput_benchmark_measures_each_rollout_length_in_a_directory_of_its_own():
    """--rollout-maxlen T: the run's --set overrides, applied in order as train.py does, give T over an earlier
    --set and the preset's; no T keeps the preset's; each (K, T) gets its own log directory."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import throughput

    def measured(rollout_maxlen):
        log_dir, argv = throughput.training_command("PongDeterministic-v4", 2, "out", 350, "none", 16, False, 1,
                                                    ["rollout_maxlen=10", "gamma=0.98"], "a3c", rollout_maxlen)
        overrides = [argv[index + 1] for index, part in enumerate(argv) if part == "--set"]
        config = constants.config_from_overrides(overrides, "atari")
        return log_dir, argv[argv.index("--envs-per-worker") + 1], config.rollout_maxlen, config.gamma

    assert measured(5)[1:] == ("16", 5, 0.98)
    assert measured(None)[1:] == ("16", 10, 0.98)
    assert len({measured(length)[0] for length in (5, 20, None)}) == 3


def test_the_update_cost_benchmark_fits_a_cost_per_call_and_per_step():
    """10 ms a call and 500 us a step: 20 ms at 20 steps, 50 ms at 80, 170 ms at 320."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import update_cost

    assert update_cost.line([20, 80, 320], [0.020, 0.050, 0.170]) == (pytest.approx(10.0), pytest.approx(500.0))
