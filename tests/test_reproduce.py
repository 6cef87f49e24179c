"""benchmarks/reproduce.py: which runs a sitting starts, resumes or skips, and the report's numbers against
episode CSVs made by hand."""
import contextlib
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from conftest import ROOT, wait_for

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import logdir  # noqa: E402
import plots  # noqa: E402
import replay_learning  # noqa: E402
import reproduce  # noqa: E402
import status  # noqa: E402

HEADER = ["global_step", "wall_time", "worker", "reward", "length", "seconds", "env_reward", "truncated", "bonus",
          "success", "distance", "position_x", "position_y", "cells"]


def write_episodes(log_dir, successes, step_every=10_000, workers=2, bonus=lambda index: 0.0):
    """Episode i (1-based) ends at global step i * step_every with success successes[i - 1] and bonus bonus(i); the
    episodes are dealt to the workers' CSVs in turn, as workers interleave."""
    os.makedirs(log_dir, exist_ok=True)
    handles = [open(os.path.join(log_dir, f"episodes_{task}.csv"), "w", newline="") for task in range(workers)]
    writers = [csv.writer(handle) for handle in handles]
    for writer in writers:
        writer.writerow(HEADER)
    for index, success in enumerate(successes, 1):
        task = index % workers
        writers[task].writerow([index * step_every, 1_000_000 + index, task, success, 100, 1.0, success, 0,
                                bonus(index), success, "", "", "", ""])
    for handle in handles:
        handle.close()


def write_distances(log_dir, distances, step_every=10_000, bonus=lambda index: 0.0):
    """Mario's episodes: episode i (1-based) ends at global step i * step_every having gone distances[i - 1], with
    bonus bonus(i)."""
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, "episodes_0.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for index, distance in enumerate(distances, 1):
            writer.writerow([index * step_every, 1_000_000 + index, 0, 0, 500, 1.0, 0, 0, bonus(index), "", distance,
                             "", "", ""])


def test_mario_is_measured_by_distance_against_the_papers_711(tmp_path):
    """Each ICM seed goes 300 for 100 episodes, then 1,000 + 100 x seed; A3C 250 throughout; an episode is 10k
    steps. At 1.5M (the paper's step, added to the columns) the last 100 episodes are 51-150: half at 300."""
    out = tmp_path / "study"
    for seed in range(3):
        write_distances(out / "runs" / f"mario-icm-s{seed}", [300] * 100 + [1000 + 100 * seed] * 100)  # to 2M
        write_distances(out / "runs" / f"mario-a3c-s{seed}", [250] * 200)
    results = reproduce.report(str(out), str(tmp_path / "report"), [1_000_000, 2_000_000], eval_episodes=0)

    icm = results["tasks"]["mario"]["icm"]
    assert icm["seeds"]["1"]["distance_at"] == {"1000000": 300.0, "1500000": 700.0, "2000000": 1100.0}
    assert icm["distance_at"]["1500000"] == {"mean": 700.0, "error": pytest.approx(50 / 3 ** 0.5), "min": 650.0,
                                             "max": 750.0, "seeds": 3}  # 650, 700, 750: standard deviation 50
    assert icm["farthest"] == 1200.0 and results["tasks"]["mario"]["a3c"]["distance_at"]["1500000"]["mean"] == 250.0
    # 700 lies within the paper's 711 +- 59.3, above A3C's 250
    assert results["verdicts"]["mario"]["verdict"] == "reproduced"
    table = (tmp_path / "report" / "results.md").read_text()
    assert "| ICM | 3 | - | 300 +- 0 | 700 +- 29 [650-750] | 1,100 +- 58 [1,000-1,200] | 1,200 | - | - |" in table
    assert "| ICM | 1 | - | - | 2M | 300 | 700 | 1,100 | 1,100 +- 0 | 1,100 | - | - |" in table, "last 100: +- over them"
    assert "| A3C | 2 | - | - | 2M | 250 | 250 | 250 | 250 +- 0 | 250 | - | - |" in table
    assert "Success: the fraction" not in table, "no Doom task: no success rates explained"
    assert (tmp_path / "report" / "mario" / "distance_vs_steps.png").stat().st_size > 0

    def judged(icm_mean, a3c_mean):
        methods = {method: {"runs": 3, "runs_finished": 3, "distance_at": {"1500000": {"mean": mean, "seeds": 3}},
                            "seeds": {str(seed): {"distance_at": {"1500000": mean + seed - 1}} for seed in range(3)}}
                   for method, mean in (("icm", icm_mean), ("a3c", a3c_mean))}
        return reproduce.distance_verdict("mario", methods)["verdict"]

    assert [judged(651, 250), judged(652, 250), judged(771, 250), judged(700, 700)] == [
        "not reproduced", "reproduced", "beaten", "not reproduced"]
    # as on Doom, no verdict over seeds of different set-ups
    mixed = {method: {"runs": 3, "runs_finished": 3, "setups": ["2 x 1", "2 x 4"],
                      "distance_at": {"1500000": {"mean": 700, "seeds": 3}}}
             for method in ("icm", "a3c")}
    assert "differ in workers x environments" in reproduce.distance_verdict("mario", mixed)["why"]


def test_the_icms_lead_over_a3c_is_welchs_test_over_seeds_and_the_flags_are_counted(tmp_path):
    """Three ICM seeds at 600, 700, 800 and three A3C seeds at 500, 560, 540 over their last 100 episodes at 1.5M:
    Welch's t-test written out (unequal variances, Welch-Satterthwaite degrees of freedom)."""
    import scipy.stats

    out = tmp_path / "study"
    for seed, (icm, a3c) in enumerate(((600, 500), (700, 560), (800, 540))):
        write_distances(out / "runs" / f"mario-icm-s{seed}", [icm] * 150)
        write_distances(out / "runs" / f"mario-a3c-s{seed}", [a3c] * 150)
    with open(out / "runs" / "mario-icm-s1" / "episodes_0.csv", "a", newline="") as handle:  # two flags, seed 1
        csv.writer(handle).writerows([[1_510_000 + i, 2_000_000 + i, 0, 0, 500, 1.0, 0, 0, 0.0, 1, 3161, "", "", ""]
                                      for i in range(2)])
    results = reproduce.report(str(out), str(tmp_path / "report"), [1_500_000], eval_episodes=0)
    lead = results["verdicts"]["mario"]["lead"]
    icm, a3c = np.array([600.0, 700.0, 800.0]), np.array([500.0, 560.0, 540.0])
    v1, v2 = icm.var(ddof=1) / 3, a3c.var(ddof=1) / 3
    t = (icm.mean() - a3c.mean()) / np.sqrt(v1 + v2)
    dof = (v1 + v2) ** 2 / (v1 ** 2 / 2 + v2 ** 2 / 2)
    assert lead["difference"] == pytest.approx(500 / 3) and lead["error"] == pytest.approx(np.sqrt(v1 + v2))
    assert lead["t"] == pytest.approx(t) and lead["p"] == pytest.approx(2 * scipy.stats.t.sf(t, dof))
    assert lead["goals"]["icm"] == {"goals": 2, "episodes": 452, "seeds_with_goals": 1, "runs_finished": 3}
    assert lead["goals"]["a3c"]["goals"] == 0
    assert ("Welch's t-test over 3 + 3 seeds: t = 2.76, p = 0.09): 3 seeds a method do not separate the means"
            in (tmp_path / "report" / "results.md").read_text())


def test_each_task_has_its_own_columns_unless_at_says(tmp_path):
    # Mario's 1.5M-step curves get columns within them, Doom's its 1M-7M; --at sets every task's (the paper's
    # Mario step stays)
    write_distances(tmp_path / "study" / "runs" / "mario-icm-s0", [300] * 150)
    write_episodes(tmp_path / "study" / "runs" / "doom-icm-s0", [1] * 700)
    results = reproduce.report(str(tmp_path / "study"), str(tmp_path / "report"), None, eval_episodes=0)
    assert list(results["tasks"]["mario"]["icm"]["distance_at"]) == ["250000", "500000", "1000000", "1500000"]
    assert list(results["tasks"]["doom"]["icm"]["success_at"]) == ["1000000", "2000000", "3000000", "4000000",
                                                                   "5000000", "7000000"]  # 4M: the verdict's
    table = (tmp_path / "report" / "results.md").read_text()
    assert "| method | seeds | set-up | 250k | 500k | 1M | 1.5M | farthest | greedy | sampled |" in table
    assert "| method | seeds | set-up | 1M | 2M | 3M | 5M | 7M | first 90% |" in table
    assert reproduce.task_milestones("mario", [2_000_000]) == [1_500_000, 2_000_000]
    assert reproduce.parse_args(["--out", str(tmp_path)]).at is None


def test_step_counts_read_as_people_write_them():
    assert [reproduce.parse_steps(text) for text in ("5M", "500k", "2.5M", "3000000", "1G")] == [
        5_000_000, 500_000, 2_500_000, 3_000_000, 1_000_000_000]
    for bad in ("five", "0", "-1M", "5X"):
        with pytest.raises(ValueError):
            reproduce.parse_steps(bad)


def test_an_unknown_task_is_refused_before_any_run_starts(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        reproduce.parse_args(["--task", "doomSparse", "Nope-v0", "--out", str(tmp_path / "study")])
    assert exit_.value.code == 2
    assert "error: --task: unknown environment id 'Nope-v0'" in capsys.readouterr().err
    assert not (tmp_path / "study").exists()
    # its archives still report where the task's game is not installed
    assert reproduce.parse_args(["--task", "Nope-v0", "--report-only", "--out", str(tmp_path)]).task == ["Nope-v0"]


# Seed 0 of ICM: episodes 1-100 fail, 101-200 succeed every 4th (25%), 201-300 succeed but every 10th (90%).
ICM_SEED_0 = [0] * 100 + [int(i % 4 == 0) for i in range(101, 201)] + [int(i % 10 != 0) for i in range(201, 301)]


def test_the_tables_numbers_match_episodes_counted_by_hand(tmp_path, monkeypatch):
    out = tmp_path / "study"
    drawn, draw = [], plots.panels_figure

    def panels_figure(rows, path, marks=None, shown=None):  # the figure drawn as ever, its marks and labels noted
        drawn.append((marks, shown))
        return draw(rows, path, marks, shown)

    monkeypatch.setattr(plots, "panels_figure", panels_figure)
    write_episodes(out / "runs" / "doom-icm-s0", ICM_SEED_0)  # to 3M
    write_episodes(out / "runs" / "doom-a3c-s0", [0] * 150)  # to 1.5M, never at the vest
    write_episodes(out / "runs" / "doom-a3c-s1", [0] * 4 + [1] + [0] * 145)  # once, by chance
    milestones = [1_000_000, 2_000_000, 3_000_000, 5_000_000]
    results = reproduce.report(str(out), str(tmp_path / "report"), milestones, eval_episodes=0)

    icm = results["tasks"]["doom"]["icm"]["seeds"]["0"]
    assert icm["global_step"] == 3_000_000 and icm["episodes"] == 300
    # the 100 episodes ended by 1M are 1-100 (0 successes), by 2M 101-200 (25), by 3M 201-300 (90); 5M: not run
    assert icm["success_at"] == {"1000000": 0.0, "2000000": 0.25, "3000000": 0.9, "4000000": None,
                                 "5000000": None}  # 4M: the paper's step, measured for the verdict
    # the first 100 episodes with 90 successes end with episode 298: 199 (0), 200 (1), and 201-298 (89 of 98)
    assert icm["first_solved"] == 2_980_000 and icm["reached_vest"]
    a3c = results["tasks"]["doom"]["a3c"]
    assert a3c["seeds"]["0"]["success_at"]["1000000"] == 0.0 and a3c["seeds"]["1"]["success_at"]["1000000"] == 0.01
    assert a3c["seeds"]["0"]["success_at"]["2000000"] is None  # 1.5M steps only
    assert a3c["mean_success_at"]["1000000"] == pytest.approx(0.005) and a3c["mean_success_at"]["2000000"] is None
    assert (a3c["runs_reached_vest"], a3c["runs_solved"], a3c["runs"]) == (1, 0, 2)

    table = (tmp_path / "report" / "results.md").read_text()
    # the last 1,000 episodes are all 300: 115 successes; too few for "solved for good"
    assert "| ICM | 0 | - | - | 3M | 0.00 | 0.25 | 0.90 | - | 0.383 | 2.98M | - | - | - |" in table
    # the seeds' mean 0.005 is shown as it is, not rounded up to 0.01; then the lowest and highest seed
    assert "| A3C | 2 | - | 0.005 [0.00-0.01] | - | - | - | 0 of 2 (-) | 0 of 2 (-) | 1 of 2 | - |" in table
    assert json.loads((tmp_path / "report" / "results.json").read_text()) == results
    assert (tmp_path / "report" / "doom" / "success_vs_steps.png").stat().st_size > 0
    assert results["figure"]["panels"] == {"game reward per episode": ["doom"], "success rate": ["doom"]}
    paper = results["figure"]["paper"]  # the paper's dense result marked on the success rate's panel only
    assert paper["game reward per episode"] == {} and [mark[:2] for mark in paper["success rate"]["doom"]] == [
        [4_000_000, 1.0], [None, 0.7]]
    assert drawn == [(paper, {"success rate": "success rate (reached the vest)"})], "the marks and the axis label drawn"
    assert (tmp_path / "report" / "figure5.png").stat().st_size > 0


def test_a_report_gives_each_bonus_an_episode_at_each_step_and_none_for_the_learner_alone(tmp_path):
    """Where a bonus grows or fades (RND's on the sparse Doom task grew while its agents left the vest): episode i
    of the RND seeds earns i / 100 (seed 0) and i / 50 (seed 1); the last 100 episodes by 1M are 1-100 (mean 0.505
    and 1.01), by 2M 101-200 (1.505 and 3.01). A3C has no bonus, so no row."""
    out = tmp_path / "study"
    write_episodes(out / "runs" / "doomSparse-rnd-s0", [0] * 200, bonus=lambda index: index / 100)
    write_episodes(out / "runs" / "doomSparse-rnd-s1", [0] * 200, bonus=lambda index: index / 50)
    write_episodes(out / "runs" / "doomSparse-a3c-s0", [0] * 200)
    results = reproduce.report(str(out), str(tmp_path / "report"), [1_000_000, 2_000_000], eval_episodes=0)
    rnd = results["tasks"]["doomSparse"]["rnd"]
    assert rnd["seeds"]["0"]["bonus_at"]["1000000"] == pytest.approx(0.505)
    assert rnd["seeds"]["1"]["bonus_at"]["2000000"] == pytest.approx(3.01)
    assert rnd["bonus_at"]["2000000"]["mean"] == pytest.approx((1.505 + 3.01) / 2)
    table = (tmp_path / "report" / "results.md").read_text()
    bonus_table = table[table.index("Bonus: the curiosity bonus an episode earned"):]
    assert "| RND | 0.758 [0.505-1.01] | 2.26 [1.50-3.01] |" in bonus_table, bonus_table
    assert "| A3C |" not in bonus_table.split("\n\n")[1], "the learner alone has no bonus row"

    # Mario's tables too (measured by distance; the paper's 1.5M added): episodes 51-150 by 1.5M, mean 1.005
    write_distances(tmp_path / "mario" / "runs" / "mario-icm-s0", [300] * 200, bonus=lambda index: index / 100)
    reproduce.report(str(tmp_path / "mario"), str(tmp_path / "mario_report"), [1_000_000, 2_000_000],
                     eval_episodes=0)
    table = (tmp_path / "mario_report" / "results.md").read_text()
    assert "| ICM | 0.505 | 1.00 | 1.50 |" in table[table.index("Bonus: the curiosity bonus"):], table


def write_minigrid_episodes(log_dir, first, goal_return, length, cells):
    """200 episodes of a MiniGrid run, one every 10,000 steps, that reach the goal (returning `goal_return`) from
    episode `first` on; `cells`: the cells an episode steps into before and from then."""
    os.makedirs(log_dir)
    with open(log_dir / "episodes_0.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for index in range(1, 201):
            reached = int(index >= first)
            writer.writerow([index * 10_000, 1_000_000 + index, 0, goal_return * reached, length, 1.0,
                             goal_return * reached, 0, 0.1, reached, "", 3, 4, cells[reached]])


def test_a_minigrid_task_reports_its_return_beside_its_success(tmp_path):
    """RIDE's measure, the mean game reward over the last 100 episodes at each step, and the coverage under the
    success table: seed 0 reaches the goal (return 0.6, 30 cells) from its 101st episode, seed 1 from its 151st."""
    task = "MiniGrid-MultiRoom-N7-S4-v0"
    for seed, first in ((0, 101), (1, 151)):
        write_minigrid_episodes(tmp_path / "study" / "runs" / f"{task}-ride-s{seed}", first, 0.6, 50, (10, 30))
    results = reproduce.report(str(tmp_path / "study"), str(tmp_path / "report"), [1_000_000, 2_000_000],
                               eval_episodes=0)
    ride = results["tasks"][task]["ride"]
    assert ride["seeds"]["0"]["return_at"] == {"1000000": 0.0, "2000000": pytest.approx(0.6)}
    assert ride["return_at"]["2000000"]["mean"] == pytest.approx(0.45)
    table = (tmp_path / "report" / "results.md").read_text()
    assert "episodes that reached the goal" in table and "| reached the goal |" in table
    assert "| RIDE | 0.00 | 0.45 [0.30-0.60] |" in table, table
    # coverage: 10 cells an episode before the goal, 30 after: 30 and 20 at 2M
    assert ride["seeds"]["1"]["cells_at"] == {"1000000": 10.0, "2000000": 20.0}
    assert "| RIDE | 10.0 | 25.0 [20.0-30.0] |" in table, table


def test_a_minigrid_task_reports_the_step_its_seeds_reached_rides_level(tmp_path):
    """RIDE's Figure 3 (a) levels off at a return of 0.78 on N7-S4: seed 0 returns 0.77 from its 101st episode of
    200 (within the reading's 0.02), so its last 100 first average 0.76 at its 199th; seed 1's 0.7 never does."""
    task = "MiniGrid-MultiRoom-N7-S4-v0"
    for seed, level in ((0, 0.77), (1, 0.7)):
        write_minigrid_episodes(tmp_path / "study" / "runs" / f"{task}-counts-s{seed}", 101, level, 40, (30, 30))
    results = reproduce.report(str(tmp_path / "study"), str(tmp_path / "report"), [1_000_000, 2_000_000],
                               eval_episodes=0)
    counts = results["tasks"][task]["counts"]
    assert counts["seeds"]["0"]["level_from"] == 1_990_000 and counts["seeds"]["1"]["level_from"] is None
    assert counts["runs_at_level"] == 1 and counts["median_level_from"] == 1_990_000
    table = (tmp_path / "report" / "results.md").read_text()
    assert "RIDE's Figure 3 (a)" in table and "| counts | 1 of 2 | 1.99M | about 5.5M |" in table, table


def test_a_minigrid_task_compares_the_best_methods_return_with_each_others_by_welchs_test(tmp_path):
    """Counts' seeds return 0.6, 0.7, 0.8 over their last 100 episodes at 2M, RIDE's 0.5, 0.55, 0.6 and E3B's 0.45,
    0.5, 0.55: counts is the best, its lead over each Welch's t-test written out, the two p-values adjusted by Holm's
    method (the smaller doubled, the larger kept but never below it); the ICM's two seeds are fewer than the judging
    needs."""
    import scipy.stats

    task = "MiniGrid-MultiRoom-N7-S4-v0"
    groups = {"counts": (0.6, 0.7, 0.8), "ride": (0.5, 0.55, 0.6), "e3b": (0.45, 0.5, 0.55), "icm": (0.9, 0.9)}
    for method, returns in groups.items():
        for seed, level in enumerate(returns):
            write_minigrid_episodes(tmp_path / "study" / "runs" / f"{task}-{method}-s{seed}", 101, level, 40, (9, 9))
    results = reproduce.report(str(tmp_path / "study"), str(tmp_path / "report"), [1_000_000, 2_000_000],
                               eval_episodes=0)
    compared = results["compared"][task]
    assert compared["best"] == "counts" and compared["step"] == 2_000_000 and set(compared["others"]) == {"ride", "e3b"}
    counts, p = np.array(groups["counts"]), {}
    for method in ("ride", "e3b"):
        other = np.array(groups[method])
        v1, v2 = counts.var(ddof=1) / 3, other.var(ddof=1) / 3
        t = (counts.mean() - other.mean()) / np.sqrt(v1 + v2)
        dof = (v1 + v2) ** 2 / (v1 ** 2 / 2 + v2 ** 2 / 2)
        lead = compared["others"][method]
        assert lead["difference"] == pytest.approx(counts.mean() - other.mean())
        assert lead["error"] == pytest.approx(np.sqrt(v1 + v2)) and lead["t"] == pytest.approx(t)
        p[method] = 2 * scipy.stats.t.sf(t, dof)
        assert lead["p"] == pytest.approx(p[method])
    assert p["e3b"] < p["ride"] < 2 * p["e3b"]  # so Holm's lifts RIDE's to E3B's adjusted value
    assert compared["others"]["e3b"]["p_holm"] == pytest.approx(2 * p["e3b"])
    assert compared["others"]["ride"]["p_holm"] == pytest.approx(2 * p["e3b"])
    table = (tmp_path / "report" / "results.md").read_text()
    assert "run to their budget, counts had the highest mean return at 2M (0.700" in table, table
    ride = compared["others"]["ride"]
    assert (f"| RIDE | 3 + 3 | 0.150 +- {ride['error']:.3f} | {ride['t']:.2f} | {ride['p']:.3f} | "
            f"{2 * p['e3b']:.3f} |") in table, table


def test_the_comparison_table_prints_a_p_below_its_three_places_as_below_them_not_as_zero():
    """A p of 0.0004 is '< 0.001' in results.md, as the README words it, not '0.000' (a p is never zero)."""
    test = {"seeds": (3, 3), "difference": 0.777, "error": 0.003, "t": 238.14, "p": 0.0004, "p_holm": 0.0008}
    compared = {"best": "ride", "step": 10_000_000, "mean": 0.777, "others": {"a3c": test}}
    lines = reproduce.compared_lines("MiniGrid-MultiRoom-N7-S4-v0", compared, 100)
    assert "| no bonus | 3 + 3 | 0.777 +- 0.003 | 238.14 | < 0.001 | < 0.001 |" in lines, lines


def write_visits(log_dir, count):
    with open(os.path.join(log_dir, "visits_0.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["global_step", "worker", "episode", "x", "y"])
        writer.writerows([step, 0, 0, step, -step] for step in range(count))


def test_runs_of_an_earlier_sitting_on_another_machine_stay_in_the_report(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "ARCHIVED_VISITS", 50)
    first, report_dir, milestones = tmp_path / "machine-a", tmp_path / "report", [1_000_000, 3_000_000]
    write_episodes(first / "runs" / "doom-icm-s0", ICM_SEED_0)
    write_visits(first / "runs" / "doom-icm-s0", 1_000)
    before = reproduce.report(str(first), str(report_dir), milestones, eval_episodes=0)
    archive = report_dir / "runs" / "doom-icm-s0"
    visits = logdir.read_rows(str(archive / reproduce.ARCHIVED_POSITIONS))
    assert len(visits) == 50 and (visits[0]["x"], visits[-1]["x"]) == ("0", "999")  # spread over the whole run

    # another sitting, on a machine without the first one's run folders: an A3C run and a second ICM seed
    second = tmp_path / "machine-b"
    write_episodes(second / "runs" / "doom-a3c-s0", [0] * 150)
    write_episodes(second / "runs" / "doom-icm-s1", [1] * 100)
    after = reproduce.report(str(second), str(report_dir), milestones, eval_episodes=0)
    icm = after["tasks"]["doom"]["icm"]
    assert icm["seeds"]["0"] == before["tasks"]["doom"]["icm"]["seeds"]["0"]
    assert icm["seeds"]["1"]["success_at"]["1000000"] == 1.0 and icm["runs"] == 2
    assert icm["mean_success_at"]["1000000"] == pytest.approx(0.5)  # seed 0: 0.0 at 1M, seed 1: 1.0
    assert after["tasks"]["doom"]["a3c"]["seeds"]["0"]["global_step"] == 1_500_000
    write_episodes(second / "runs" / "doomSparse-icm-s0", [0] * 10)
    after = reproduce.report(str(second), str(report_dir), milestones, eval_episodes=0)
    assert after["figure"]["panels"]["success rate"] == ["doom", "doomSparse"]  # the paper's order, side by side
    curves = json.loads((report_dir / "doom" / "curves.json").read_text())
    assert curves["success_vs_steps.png"]["ICM"]["runs"] == 2 and curves["success_vs_steps.png"]["A3C"]["runs"] == 1
    assert curves["visits_ICM.png"]["positions"] == 50


def test_a_seed_still_running_does_not_cut_the_finished_seeds_curves_short(tmp_path):
    out = tmp_path / "study"
    write_episodes(out / "runs" / "doom-icm-s0", ICM_SEED_0)  # to 3M
    write_episodes(out / "runs" / "doom-icm-s1", [1] * 50)  # to 0.5M so far
    for seed in (0, 1):
        (out / "runs" / f"doom-icm-s{seed}" / "config.json").write_text(json.dumps(
            {"hyperparameters": {"max_global_steps": 3_000_000}}))  # config.json's shape
    reproduce.report(str(out), str(tmp_path / "report"), [1_000_000], eval_episodes=0)
    table = (tmp_path / "report" / "results.md").read_text()
    assert "| ICM | 0 | - | - | 3M | 0.00 |" in table and "| ICM | 1 | - | - | 500k of 3M | - |" in table
    curve = json.loads((tmp_path / "report" / "doom" / "curves.json").read_text())["success_vs_steps.png"]["ICM"]
    x, mean, low, high = (np.array(curve[key]) for key in ("x", "mean", "min", "max"))
    assert x[-1] == 3_000_000 and curve["runs"] == 2 and curve["ends"] == [500_000, 3_000_000]
    both, one = x <= 500_000, x > 500_000
    assert (low[both] < high[both]).any(), "where both seeds got to, the band spans them"
    assert np.allclose(low[one], high[one]) and np.allclose(mean[one], low[one]), "beyond, seed 0 alone"
    assert mean[-1] == pytest.approx(0.9)  # seed 0's last 100 episodes
    plain = plots.make_plots({"ICM": [str(out / "runs" / "doom-icm-s0"), str(out / "runs" / "doom-icm-s1")]},
                             str(tmp_path / "plain"), 100)
    assert plain["success_vs_steps.png"]["ICM"]["x"][-1] == 500_000, "plots.py itself averages where all seeds are"


def test_a_run_the_report_holds_further_is_not_replaced_by_a_shorter_copy(tmp_path):
    report_dir = tmp_path / "report"
    write_episodes(tmp_path / "a" / "runs" / "doom-icm-s0", ICM_SEED_0)
    reproduce.report(str(tmp_path / "a"), str(report_dir), [1_000_000], eval_episodes=0)
    write_episodes(tmp_path / "b" / "runs" / "doom-icm-s0", ICM_SEED_0[:50])
    results = reproduce.report(str(tmp_path / "b"), str(report_dir), [1_000_000], eval_episodes=0)
    assert results["tasks"]["doom"]["icm"]["seeds"]["0"]["global_step"] == 3_000_000


def test_a_run_stopped_before_its_first_step_is_not_a_seed(tmp_path):
    write_episodes(tmp_path / "runs" / "doom-icm-s0", ICM_SEED_0)
    (tmp_path / "runs" / "doom-a3c-s0").mkdir()  # what a sitting stopped as the run began leaves
    results = reproduce.report(str(tmp_path), str(tmp_path / "report"), [1_000_000], eval_episodes=0)
    assert "a3c" not in results["tasks"]["doom"]
    assert not (tmp_path / "report" / "runs" / "doom-a3c-s0").exists()


def test_rows_of_an_earlier_report_without_archived_episodes_are_kept(tmp_path):
    report_dir = tmp_path / "report"
    write_episodes(tmp_path / "a" / "runs" / "doom-icm-s0", ICM_SEED_0)
    earlier = reproduce.report(str(tmp_path / "a"), str(report_dir), [1_000_000], eval_episodes=0)
    row = earlier["tasks"]["doom"]["icm"]["seeds"]["0"]
    row["machine"] = None  # as an earlier report's rows were, before archives
    (report_dir / "results.json").write_text(json.dumps(earlier))
    import shutil

    shutil.rmtree(report_dir / "runs")
    write_episodes(tmp_path / "b" / "runs" / "doomSparse-icm-s0", [0] * 20)
    results = reproduce.report(str(tmp_path / "b"), str(report_dir), [1_000_000], eval_episodes=0)
    assert list(results["tasks"]) == ["doom", "doomSparse"]
    assert results["tasks"]["doom"]["icm"]["seeds"]["0"] == row
    assert "| ICM | 0 | - | - | 3M | 0.00 | 0.383 | 2.98M | - | - | - | - |" in (report_dir / "results.md").read_text()
    # its curves stay in the figures too, drawn from the earlier curves.json, beside the runs made since
    curves_before = json.loads((report_dir / "doom" / "curves.json").read_text())
    assert results["figure"]["panels"]["success rate"] == ["doom", "doomSparse"]
    write_episodes(tmp_path / "c" / "runs" / "doom-a3c-s0", [0] * 20)
    reproduce.report(str(tmp_path / "c"), str(report_dir), [1_000_000], eval_episodes=0)
    curves = json.loads((report_dir / "doom" / "curves.json").read_text())
    assert curves["success_vs_steps.png"]["ICM"] == curves_before["success_vs_steps.png"]["ICM"]
    assert curves["success_vs_steps.png"]["A3C"]["x"][-1] == 200_000  # 20 episodes, 10k steps apart
    assert list(curves["success_vs_steps.png"]) == ["ICM", "A3C"], "each method keeps its place, and its colour"


def test_greedy_evaluations_begin_at_random_and_one_made_without_is_made_again(tmp_path, monkeypatch):
    out, report_dir = tmp_path / "study", tmp_path / "report"
    log_dir = out / "runs" / "doomSparse-icm-s0"
    write_episodes(log_dir, [1] * 100)
    (log_dir / "train").mkdir()
    (log_dir / "train" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1000000"\n')
    summary = out / "eval" / "doomSparse-icm-s0" / "summary.json"
    summary.parent.mkdir(parents=True)
    # the evaluation of an earlier sitting: greedy from the fixed start, one trajectory twenty times
    summary.write_text(json.dumps({"episodes": 20, "success_rate": 1.0, "distinct_episodes": 1}))
    calls = []

    def demo_py(argv, **kwargs):
        calls.append(argv)
        start = int(argv[argv.index("--random-start") + 1])
        summary.write_text(json.dumps({"episodes": 20, "success_rate": 0.85, "distinct_episodes": 19,
                                       "random_start": start}))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(reproduce, "subprocess", type("Subprocess", (), {"run": staticmethod(demo_py)}))
    results = reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20)
    assert len(calls) == 1 and calls[0][calls[0].index("--random-start") + 1] == "30" and "--greedy" in calls[0]
    run = results["tasks"]["doomSparse"]["icm"]["seeds"]["0"]
    assert run["greedy_eval"]["success_rate"] == 0.85
    assert "| ICM | 0 | - | - | 1M | 1.00 | 1.00 | 1M | - | 0.85 (19) |" in (report_dir / "results.md").read_text()
    reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20)
    assert len(calls) == 1, "an evaluation of this checkpoint made this way is read back, not made again"

    write_episodes(log_dir, [1] * 150)  # the run went on (a relaunch with more --steps), and is going now
    monkeypatch.setattr(reproduce.train, "run_processes", lambda log_dir: {4242: ["worker.py"]})
    results = reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20)
    run = results["tasks"]["doomSparse"]["icm"]["seeds"]["0"]
    assert run["global_step"] == 1_500_000 and run["greedy_eval"] is None and len(calls) == 1
    assert "| ICM | 0 | - | - | 1.5M | 1.00 | 1.00 | 1M | - | - |" in (report_dir / "results.md").read_text()


def test_mario_is_evaluated_greedy_and_sampled_each_kept_and_shown_apart(tmp_path, monkeypatch):
    out, report_dir = tmp_path / "study", tmp_path / "report"
    for name in ("mario-icm-s0", "doomSparse-icm-s0"):
        (write_distances if name.startswith("mario") else write_episodes)(out / "runs" / name, [1] * 100)
        (out / "runs" / name / "train").mkdir()
        (out / "runs" / name / "train" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1000000"\n')
    calls = []

    def demo_py(argv, **kwargs):
        calls.append(argv)
        greedy, folder = "--greedy" in argv, argv[argv.index("--out") + 1]
        os.makedirs(folder, exist_ok=True)
        summary = {"episodes": 20, "random_start": 30, "policy": "greedy" if greedy else "sampled",
                   "mean_distance": 64.0 if greedy else 700.0, "success_rate": 0.9}
        if not greedy:  # the sampled one keeps its episodes (600, 800, ...), the greedy one does not say them
            summary["episode_details"] = [{"distance": 600.0 + 200 * (i % 2)} for i in range(20)]
        with open(os.path.join(folder, "summary.json"), "w") as handle:
            json.dump(summary, handle)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(reproduce, "subprocess", type("Subprocess", (), {"run": staticmethod(demo_py)}))
    results = reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20)
    made = sorted((os.path.basename(argv[argv.index("--log-dir") + 1]), "--greedy" in argv) for argv in calls)
    assert made == [("doomSparse-icm-s0", True), ("mario-icm-s0", False), ("mario-icm-s0", True)]
    kept = json.loads((report_dir / "runs" / "mario-icm-s0" / "run.json").read_text())
    assert kept["greedy_eval"]["mean_distance"] == 64.0 and kept["sampled_eval"]["mean_distance"] == 700.0
    assert "sampled_eval" not in json.loads((report_dir / "runs" / "doomSparse-icm-s0" / "run.json").read_text())
    error = (20 * 100 ** 2 / 19) ** 0.5 / 20 ** 0.5  # the standard error of 20 episodes 100 either side of 700
    assert results["tasks"]["mario"]["icm"]["sampled"] == {"mean_distance": 700.0, "error": pytest.approx(error),
                                                           "episodes": 20}
    assert results["tasks"]["mario"]["icm"]["greedy"] == {"mean_distance": 64.0, "error": None, "episodes": 20}
    table = (report_dir / "results.md").read_text()
    assert ("| farthest | greedy | sampled |\n|---|---|---|---|---|---|---|---|\n| ICM | 1 | - | 1 | - | 1 | 64 (20 "
            "episodes) | 700 +- 23 (20 episodes) |") in table
    assert "| ICM | 0 | - | - | 1M | 1 | - | 1 +- 0 | 1 | 64 | 700 +- 23 | - |" in table
    reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20)
    assert len(calls) == 3, "each policy's evaluation of this checkpoint is read back, neither taken for the other"


def test_when_the_time_is_up_only_runs_at_their_budget_are_evaluated_and_the_rest_waits(tmp_path, monkeypatch,
                                                                                         capsys):
    out, report_dir = tmp_path / "study", tmp_path / "report"
    for seed, budget in ((0, 1_000_000), (1, 2_000_000)):  # seed 0 at its budget, seed 1 paused halfway
        log_dir = out / "runs" / f"doomSparse-icm-s{seed}"
        write_episodes(log_dir, [1] * 100)
        (log_dir / "config.json").write_text(json.dumps({"hyperparameters": {"max_global_steps": budget}}))
        (log_dir / "train").mkdir()
        (log_dir / "train" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1000000"\n')
    calls = []

    def demo_py(argv, **kwargs):
        calls.append(argv)
        target = argv[argv.index("--out") + 1]
        os.makedirs(target, exist_ok=True)
        summary = ({"episodes": 5, "success_rate": 0.0, "episode_details": []} if "--random" in argv else
                   {"episodes": 20, "success_rate": 0.9, "distinct_episodes": 20, "random_start": 30})
        with open(os.path.join(target, "summary.json"), "w") as handle:
            json.dump(summary, handle)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(reproduce, "subprocess", type("Subprocess", (), {"run": staticmethod(demo_py)}))
    results = reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20, random_episodes=5,
                               time_up=True)
    assert [os.path.basename(argv[argv.index("--log-dir") + 1]) for argv in calls] == ["doomSparse-icm-s0"]
    seeds = results["tasks"]["doomSparse"]["icm"]["seeds"]
    assert seeds["0"]["greedy_eval"]["success_rate"] == 0.9 and seeds["1"]["greedy_eval"] is None
    assert not (report_dir / "doomSparse" / reproduce.RANDOM_BASELINE).exists()
    assert ("the time is up: the greedy evaluation of doomSparse-icm-s1, the random agent on doomSparse left to "
            "the next report") in capsys.readouterr().err
    reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20, random_episodes=5)
    assert sorted(os.path.basename(argv[argv.index("--log-dir") + 1]) for argv in calls[1:]) == [
        "doomSparse", "doomSparse-icm-s1"], "the next report makes what waited, and not the evaluation made"
    assert (report_dir / "doomSparse" / reproduce.RANDOM_BASELINE).exists()


def test_a_video_is_made_of_each_methods_best_seed_once_per_step(tmp_path, monkeypatch):
    out, report_dir = tmp_path / "study", tmp_path / "report"
    greedy = {"doomSparse-icm-s0": 0.5, "doomSparse-icm-s1": 0.9, "doomSparse-a3c-s0": 0.0, "mario-icm-s0": 700.0,
              "mario-icm-s1": 900.0}
    for name in greedy:
        if name.startswith("mario"):  # measured by distance: its evaluation gives a mean distance, its episode one
            write_distances(out / "runs" / name, [300] * 100)
        else:
            write_episodes(out / "runs" / name, [1] * 100)
        (out / "runs" / name / "train").mkdir()
        (out / "runs" / name / "train" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1000000"\n')
    recorded = []

    def demo_py(argv, **kwargs):
        run, folder = os.path.basename(argv[argv.index("--log-dir") + 1]), argv[argv.index("--out") + 1]
        mario = run.startswith("mario")
        summary = {"episodes": 20, "mean_distance" if mario else "success_rate": greedy[run], "distinct_episodes": 20,
                   "random_start": 30}
        if "--record" in argv:
            recorded.append((run, argv))
            video = os.path.join(folder, "episode_1.mp4")
            with open(video, "w") as handle:
                handle.write(f"frames of {run}")
            outcome = {"distance": 1234.0, "success": False} if mario else {"success": True}
            summary = {"checkpoint": "model.ckpt-1000000", "episode_details": [
                {"length": 143, "random_steps": 12, "reward": 1.0, "video": video, **outcome}]}
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "summary.json"), "w") as handle:
            json.dump(summary, handle)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(reproduce, "subprocess", type("Subprocess", (), {"run": staticmethod(demo_py)}))
    results = reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20, videos=True)
    assert sorted(run for run, _ in recorded) == ["doomSparse-a3c-s0", "doomSparse-icm-s1", "mario-icm-s1"], (
        "each method's best seed only")
    argv = dict(recorded)["doomSparse-icm-s1"]
    assert "--greedy" in argv and argv[argv.index("--random-start") + 1] == "30"
    assert argv[argv.index("--episodes") + 1] == "1"
    assert "--greedy" not in dict(recorded)["mario-icm-s1"], "Mario's video samples the policy, as in training"
    assert json.loads((report_dir / "mario" / "video_icm.json").read_text())["policy"] == "sampled"
    assert (report_dir / "doomSparse" / "video_icm.mp4").read_text() == "frames of doomSparse-icm-s1"
    assert results["videos"]["doomSparse"]["icm"]["seed"] == 1
    assert ("[ICM](doomSparse/video_icm.mp4) (seed 1 at 1M: after 12 random actions it reached the vest in 143 steps)"
            in (report_dir / "results.md").read_text())
    assert ("A sampled episode of each method's best seed by its sampled evaluation: [ICM](mario/video_icm.mp4) "
            "(seed 1 at 1M: after 12 random actions it went 1,234 in 143 steps)"
            in (report_dir / "results.md").read_text())
    assert "A greedy episode of each method's best seed by its greedy evaluation: [ICM](doomSparse" in (
        report_dir / "results.md").read_text()
    reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20, videos=True)
    assert len(recorded) == 3, "a video of this seed at this step is kept, not made again"

    write_episodes(out / "runs" / "doomSparse-icm-s1", [1] * 150)  # the run went on in another sitting
    (out / "runs" / "doomSparse-icm-s1" / "train" / "checkpoint").touch()
    reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20, videos=True)
    assert [run for run, _ in recorded[3:]] == ["doomSparse-icm-s1"]
    assert json.loads((report_dir / "doomSparse" / "video_icm.json").read_text())["global_step"] == 1_500_000

    # a run stopped short of its budget is no video, however it evaluates; the kept video of a seed at its budget
    # (its folder now elsewhere) stands against a worse seed here
    greedy.update({"doomSparse-icm-s2": 1.0, "doomSparse-icm-s3": 0.6})
    for name in ("doomSparse-icm-s2", "doomSparse-icm-s3"):
        write_episodes(out / "runs" / name, [1] * 100)
        (out / "runs" / name / "train").mkdir()
        (out / "runs" / name / "train" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1000000"\n')
    (out / "runs" / "doomSparse-icm-s2" / "config.json").write_text(
        json.dumps({"hyperparameters": {"max_global_steps": 2_000_000}}))
    shutil.move(out / "runs" / "doomSparse-icm-s1", tmp_path / "elsewhere")
    reproduce.report(str(out), str(report_dir), [1_000_000], eval_episodes=20, videos=True)
    assert [run for run, _ in recorded[4:]] == []
    assert json.loads((report_dir / "doomSparse" / "video_icm.json").read_text())["run"] == "doomSparse-icm-s1"


def test_a_run_stopped_mid_episode_past_a_milestone_is_counted_there():
    import numpy as np

    steps, success = np.array([1_000, 2_000, 2_990]), np.array([0.0, 1.0, 1.0])
    assert reproduce.success_at(steps, success, 3_000) is None  # by its episodes alone it did not get there
    assert reproduce.success_at(steps, success, 3_000, reached=3_004) == pytest.approx(2 / 3)


def test_solved_for_good_is_the_first_window_after_the_last_dip_that_lasts_to_the_end():
    # episodes 1-10 fail, 11-20 succeed, 21-22 fail, 23-45 succeed; windows of 10 episodes at 90%
    success = np.array([0] * 10 + [1] * 10 + [0, 0] + [1] * 23, dtype=float)
    steps = np.arange(1, len(success) + 1) * 1_000
    # first: episodes 10-19 hold 9 successes; every window holding both 21 and 22 (those ending 22-30) has 8
    assert reproduce.first_solved(steps, success, window=10) == 19_000
    assert reproduce.sustained_from(steps, success, window=10) == 31_000  # episodes 22-31: 9 of 10, and on
    # a dip at the very end undoes it; so does a run shorter than one window
    assert reproduce.sustained_from(steps, np.append(success, [0, 0]), window=10) is None
    assert reproduce.sustained_from(steps[:9], success[:9] * 0 + 1, window=10) is None
    assert reproduce.sustained_from(steps[10:20], success[10:20], window=10) == 20_000  # solved from the start


def test_rates_show_every_digit_they_have_and_no_more():
    assert [reproduce.rate(value) for value in (0.25, 0.005, 0.9, 1.0, 1 / 3, 0.0, None)] == [
        "0.25", "0.005", "0.90", "1.00", "0.333", "0.00", "-"]


def summary_of(sustained_steps, budget=5_000_000, setups=None, reached=None, budgets=None):
    """A method's summary whose seeds were solved for good at these steps (None: never), each of a set-up, each
    run to `reached` steps of its budget (default: all of it; `budgets`: one per seed)."""
    setups = setups or ["2 x 4"] * len(sustained_steps)
    budgets = budgets or [budget] * len(sustained_steps)
    reached = reached or budgets
    seeds = {str(seed): {"sustained_from": step, "first_solved": step, "success_at": {}, "reached_vest": True,
                         "setup": setup, "global_step": steps, "budget": budget}
             for seed, (step, setup, steps, budget) in enumerate(zip(sustained_steps, setups, reached, budgets))}
    return reproduce.method_summary(seeds, [])


def test_the_verdict_follows_the_stated_criterion():
    verdict = reproduce.verdict
    # doomSparse: the paper's ICM at about 1.0 after about 7M, its A3C at 0
    judged = verdict("doomSparse", {"icm": summary_of([4_600_000, 6_900_000, None]), "a3c": summary_of([None] * 3)})
    assert judged["verdict"] == "reproduced"  # 2 of 3 by 7M, only 1 by 5.25M
    assert verdict("doomSparse", {"icm": summary_of([4_600_000, 5_000_000, None]),
                                  "a3c": summary_of([None] * 3)})["verdict"] == "beaten"  # 2 of 3 by 5.25M
    assert verdict("doomSparse", {"icm": summary_of([4_600_000, None, None], budget=7_000_000),
                                  "a3c": summary_of([None] * 3)})["verdict"] == "not reproduced"
    # unsolved seeds that stopped short of the paper's step could still have been solved by it: no verdict...
    stopped = verdict("doomSparse", {"icm": summary_of([4_600_000, None, None]), "a3c": summary_of([None] * 3)})
    assert stopped == {"verdict": "not judged", "why": "ICM solved for good by 7M in 1 of 3 seeds (by 5.25M in 1); "
                       "A3C in 0 of 3 (3 of them run to 5M only); 2 unsolved ICM seeds stopped at 5M, short of the "
                       "paper's 7M: run them on to it"}
    # ...unless they cannot change it
    assert verdict("doomSparse", {"icm": summary_of([None] * 3, budgets=[7_000_000, 7_000_000, 5_000_000]),
                                  "a3c": summary_of([None] * 3)})["verdict"] == "not reproduced"
    assert verdict("doomSparse", {"icm": summary_of([4_600_000] * 3),
                                  "a3c": summary_of([3_000_000, 4_000_000, None])})["verdict"] == "not reproduced"
    # on the dense task the paper's A3C levels off near 0.7 by 4M: an A3C solved by then is not the paper's...
    assert verdict("doom", {"icm": summary_of([2_000_000] * 3),
                            "a3c": summary_of([3_000_000] * 3)})["verdict"] == "not reproduced"
    # ...one solved only after it is
    assert verdict("doom", {"icm": summary_of([2_000_000] * 3),
                            "a3c": summary_of([4_500_000, 4_900_000, None])})["verdict"] == "beaten"
    assert verdict("doom", {"icm": summary_of([4_500_000] * 3),
                            "a3c": summary_of([None] * 3)})["verdict"] == "not reproduced"  # later than 4M
    # rows without a budget (an earlier report's) count as run to their end: none of them can be run on
    assert verdict("doomSparse", {"icm": summary_of([4_600_000, None, None], budgets=[None] * 3),
                                  "a3c": summary_of([None] * 3)})["verdict"] == "not reproduced"
    two_seeds = verdict("doomSparse", {"icm": summary_of([4_600_000] * 2), "a3c": summary_of([None] * 3)})
    assert two_seeds["verdict"] == "not judged" and "2 ICM and 3 A3C seeds" in two_seeds["why"]
    assert verdict("MountainCar-v0", {}) is None
    # a seed still short of its budget (going, or paused) is shown but is not yet one of the verdict's
    going = verdict("doomSparse", {"icm": summary_of([4_600_000] * 3),
                                   "a3c": summary_of([None] * 3, reached=[5_000_000, 5_000_000, 960])})
    assert going == {"verdict": "not judged",
                     "why": "3 ICM and 2 A3C seeds run to their budget (1 more short of it); 3 of each are needed"}
    solved_early = verdict("doomSparse", {"icm": summary_of([4_600_000, 4_600_000, 3_000_000, None],
                                                            reached=[5_000_000] * 2 + [3_500_000, 5_000_000]),
                                          "a3c": summary_of([None] * 3)})
    assert solved_early["why"].startswith("ICM solved for good by 7M in 2 of 3 seeds"), solved_early
    # seeds of different set-ups are not pooled into a verdict
    mixed = verdict("doomSparse", {"icm": summary_of([4_600_000] * 3, setups=["2 x 16", "2 x 4", "2 x 4"]),
                                   "a3c": summary_of([None] * 3)})
    assert mixed["verdict"] == "not judged" and "the ICM seeds differ in workers x environments" in mixed["why"]


def test_the_set_up_of_a_run_is_read_from_its_config_and_shown_per_seed_and_method(tmp_path):
    for seed, per_worker, beta in ((0, 16, 0.01), (1, 4, 0.005)):
        log_dir = tmp_path / "runs" / f"doom-icm-s{seed}"
        write_episodes(log_dir, [0, 1] * 10)
        (log_dir / "config.json").write_text(json.dumps({"run": {"num_workers": 2, "unsup": "action"},
                                                         "hyperparameters": {
            "envs_per_worker": per_worker, "max_global_steps": 200_000, "prediction_beta": beta}}))
    results = reproduce.report(str(tmp_path), str(tmp_path / "report"), [100_000], eval_episodes=0)
    assert results["tasks"]["doom"]["icm"]["setups"] == ["2 x 16", "2 x 4"]
    table = (tmp_path / "report" / "results.md").read_text()
    assert "| ICM | 2 | 2 x 16, 2 x 4 | 0.50 | 0 of 2 (-) |" in table
    assert "| ICM | 0 | 2 x 16 | prediction_beta 0.01 | 200k |" in table
    assert "| ICM | 1 | 2 x 4 | prediction_beta 0.005 | 200k |" in table


COMMITTED_REPORTS = sorted(os.path.relpath(os.path.dirname(path), ROOT) for path in glob.glob(
    os.path.join(ROOT, "docs", "results", "**", "results.json"), recursive=True)
    if os.path.isdir(os.path.join(os.path.dirname(path), "runs")))


def test_the_committed_reports_are_found():
    assert {"docs/results/doom", "docs/results/doom-k4"} <= set(COMMITTED_REPORTS)


@pytest.mark.parametrize("report", COMMITTED_REPORTS)
def test_a_committed_report_is_what_its_archived_episodes_say(report):
    report_dir = os.path.join(ROOT, report)
    committed = json.load(open(os.path.join(report_dir, "results.json")))
    results = reproduce.summarise(report_dir, committed["milestones"])
    assert reproduce.markdown(results) == open(os.path.join(report_dir, "results.md")).read()
    archived = os.listdir(os.path.join(report_dir, "runs"))
    assert archived and all(reproduce.parse_run_name(name) for name in archived)


def test_a_run_short_of_the_window_is_not_solved():
    steps, success = reproduce.episode_arrays("/nonexistent", "success")
    assert reproduce.first_solved(steps, success) is None and reproduce.success_at(steps, success, 1) is None


class FakeTrain:
    """Stands in for train.py: on launch it writes episodes up to the run's max_global_steps (or, for the log
    dirs in `fail`, a tenth of them and exit status 1)."""

    def __init__(self, fail=()):
        self.launched, self.fail = [], set(fail)

    def __call__(self, argv, **kwargs):
        log_dir = argv[argv.index("--log-dir") + 1]
        steps = int(next(item for item in argv if item.startswith("max_global_steps=")).split("=")[1])
        self.launched.append(argv)
        failing = os.path.basename(log_dir) in self.fail
        write_episodes(log_dir, [0] * (1 if failing else 10), step_every=steps // 10)
        with open(os.path.join(log_dir, "config.json"), "w") as handle:
            json.dump({}, handle)
        return FakeProcess(1 if failing else 0)


class FakeProcess:
    def __init__(self, returncode):
        self.returncode = returncode

    def poll(self):
        return self.returncode


def study_args(out, steps):
    return reproduce.parse_args(["--task", "doom", "--method", "icm", "a3c", "--seeds", "0", "1", "--steps", steps,
                                 "--out", str(out), "--envs-per-worker", "4"])


def test_a_second_sitting_skips_finished_runs_and_resumes_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "PROGRESS_SECS", 0.0)
    out = str(tmp_path / "study")
    write_episodes(reproduce.run_dir(out, "doom", "icm", 0), [0] * 10, step_every=100_000)  # done: 1M
    write_episodes(reproduce.run_dir(out, "doom", "a3c", 1), [0] * 3, step_every=100_000)  # 300k of 1M
    with open(os.path.join(reproduce.run_dir(out, "doom", "a3c", 1), "config.json"), "w") as handle:
        json.dump({}, handle)
    states = {os.path.basename(run[3]): run[4] for run in reproduce.plan(out, ["doom"], ["icm", "a3c"], [0, 1],
                                                                        1_000_000)}
    assert states == {"doom-icm-s0": "done", "doom-icm-s1": "new", "doom-a3c-s0": "new", "doom-a3c-s1": "resume"}
    # a run of another machine's sitting, its folder gone, whose archive reached the budget is not run again
    report_dir = tmp_path / "report"
    for name, step in (("doom-icm-s1", 1_000_000), ("doom-a3c-s0", 999_999)):
        os.makedirs(report_dir / "runs" / name)
        (report_dir / "runs" / name / "run.json").write_text(json.dumps({"global_step": step}))
    states = {os.path.basename(run[3]): run[4] for run in reproduce.plan(out, ["doom"], ["icm", "a3c"], [0, 1],
                                                                        1_000_000, str(report_dir))}
    assert states == {"doom-icm-s0": "done", "doom-icm-s1": "archived", "doom-a3c-s0": "new",
                      "doom-a3c-s1": "resume"}

    fake = FakeTrain(fail={"doom-a3c-s0"})
    args = study_args(out, "1M")
    failed = reproduce.run_all(args, launch=fake)
    assert failed == ["doom-a3c-s0"]
    assert [os.path.basename(argv[argv.index("--log-dir") + 1]) for argv in fake.launched] == [
        "doom-a3c-s1", "doom-icm-s1", "doom-a3c-s0"], "the run begun in an earlier sitting first, then the new"
    first = fake.launched[1]
    for flag, value in (("--env-id", "doom"), ("--unsup", "action"), ("--envs-per-worker", "4"),
                        ("--expId", str(reproduce.EXP_ID_BASE)), ("--mode", "child")):
        assert first[first.index(flag) + 1] == value
    assert "seed=1" in first and "max_global_steps=1000000" in first and "--noLifeReward" in first
    assert fake.launched[2][fake.launched[2].index("--unsup") + 1] == "none"

    again = FakeTrain()
    assert reproduce.run_all(study_args(out, "1M"), launch=again) == []
    assert [os.path.basename(argv[argv.index("--log-dir") + 1]) for argv in again.launched] == ["doom-a3c-s0"]
    longer = FakeTrain()  # a larger budget in a later sitting resumes every run
    assert reproduce.run_all(study_args(out, "2M"), launch=longer) == []
    assert len(longer.launched) == 4 and all("max_global_steps=2000000" in argv for argv in longer.launched)
    # each launch and each end is noted beside the run, and the report says a run took sittings and budgets
    sittings = reproduce.read_sittings(reproduce.run_dir(out, "doom", "a3c", 0))
    assert [(sitting["from_step"], sitting["budget"], sitting["at_step"], sitting["restarts"])
            for sitting in sittings] == [(0, 1_000_000, 100_000, 0), (100_000, 1_000_000, 1_000_000, 0),
                                         (1_000_000, 2_000_000, 2_000_000, 0)]
    assert reproduce.sittings_cell({"sittings": sittings}) == "3, budget 1M then 2M"
    assert reproduce.sittings_cell({"sittings": sittings[:1] + [{**sittings[1], "restarts": 2}]}) == "2, 2 restarts"
    # the machine column names each machine the run moved to, and the step it moved at
    assert reproduce.machine_cell({"machine": "a, 2 cores", "sittings": sittings}) == "a, 2 cores"
    moved = [{**sitting, "machine": machine} for sitting, machine in zip(sittings, ["a, 16 cores", "b", "b"])]
    assert reproduce.machine_cell({"machine": "b", "sittings": moved}) == "a, 16 cores to 100k, then b"
    moved[2]["machine"] = "a, 16 cores"
    assert reproduce.machine_cell({"sittings": moved}) == "a, 16 cores to 100k, then b to 1M, then a, 16 cores"


def test_sittings_written_again_from_an_archive_read_back_the_same(tmp_path):
    """A run restored from a carried archive writes its sittings file again from the archive's entries: read back,
    they are the same entries, a sitting still going (no end) included."""
    log_dir = str(tmp_path / "doom-icm-s0")
    os.makedirs(log_dir)
    with open(os.path.join(log_dir, logdir.SUPERVISOR), "w") as handle:  # what the sitting's supervisor kept
        json.dump({"processes": {"ps": {"restarts": 0, "last_reason": None},
                                 "w-1": {"restarts": 2, "last_reason": "hung (no heartbeat for 95 s)"}}}, handle)
    reproduce.note_sitting(log_dir, event="start", from_step=0, budget=1_000_000, machine="a, 2 cores")
    reproduce.note_sitting(log_dir, event="end", **reproduce.sitting_end(log_dir, 300_000))
    reproduce.note_sitting(log_dir, event="start", from_step=300_000, budget=2_000_000, machine=None)
    sittings = reproduce.read_sittings(log_dir)
    assert len(sittings) == 2 and "ended" not in sittings[1]
    assert (sittings[0]["restarts"], sittings[0]["restart_reasons"]) == (2, ["w-1: hung (no heartbeat for 95 s)"])
    reproduce.write_sittings(log_dir, sittings)
    assert reproduce.read_sittings(log_dir) == sittings
    # the report says why under the seed table, and where a sitting kept only the count, that it did
    older = {**sittings[0], "from_step": 300_000, "at_step": 2_000_000, "restart_reasons": None, "restarts": 1}
    methods = {"icm": {"seeds": {"0": {"sittings": sittings + [older]}, "1": {"sittings": sittings[1:]}}}}
    assert reproduce.restart_lines(methods) == [
        "Restarts by the supervisor:", "",
        "- ICM seed 0, sitting 1 (0 to 300k): 2 restarts: w-1: hung (no heartbeat for 95 s)",
        "- ICM seed 0, sitting 3 (300k to 2M): 1 restart: why was not kept then", ""]
    assert reproduce.restart_lines({"icm": {"seeds": {"1": {"sittings": sittings[1:]}}}}) == []


def test_a_run_made_afresh_over_an_earlier_archive_is_archived_with_its_own_machine(tmp_path):
    """An earlier machine's run reached 300k and its folder is gone; the run made again from 0 here passes it: its
    archive takes the new run's episodes, sittings and machine (the machine of the latest sitting)."""
    log_dir = str(tmp_path / "study" / "runs" / "doom-icm-s0")
    archive = str(tmp_path / "report" / "runs" / "doom-icm-s0")
    os.makedirs(archive)
    with open(os.path.join(archive, "run.json"), "w") as handle:
        json.dump({"global_step": 300_000, "machine": "old-host, 2 cores", "sittings": []}, handle)
    write_episodes(log_dir, [0] * 5, step_every=100_000)  # 500k
    reproduce.write_sittings(log_dir, [{"started": "t0", "from_step": 0, "budget": 5_000_000,
                                        "machine": "new-host, 16 cores"}])
    reproduce.archive_run(log_dir, archive, reproduce.reached_step(log_dir), {"greedy": None})
    kept = json.load(open(os.path.join(archive, "run.json")))
    assert (kept["global_step"], kept["machine"], len(kept["sittings"])) == (500_000, "new-host, 16 cores", 1)


def write_scalars(events_dir, steps, tags=("model/entropy", "global/episode_reward")):
    """TensorBoard events as a task writes them: each of `tags` at each of `steps`, its value the step."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(events_dir))
    for step in steps:
        writer.add_event(event_pb2.Event(step=step, wall_time=1e9 + step, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=tag, simple_value=float(step)) for tag in tags])))
    writer.close()


def test_a_runs_archive_keeps_its_tensorboard_scalars_as_means_of_consecutive_summaries(tmp_path):
    """The learner's scalar at steps 1-1,000, each the step, cut into 200 runs of 5: each run's mean at its last
    step (3 at 5, 8 at 10, ..., 998 at 1,000); the per-episode tags (global/) are the episodes' to keep. A sitting
    on another machine with the events from step 601 on only (a carried checkpoint's) keeps the earlier sitting's
    rows below 601 and cuts its own 400 summaries into 200 runs of 2 (601.5 at 602, ...). The report draws them."""
    study, archive = tmp_path / "study", str(tmp_path / "report" / "runs" / "doomSparse-icm-s0")
    log_dir = study / "runs" / "doomSparse-icm-s0"
    write_episodes(log_dir, [0] * 10, step_every=100)
    write_scalars(log_dir / "train_learner", range(1, 1001))
    reproduce.archive_run(str(log_dir), archive, 1_000, {"greedy": None})
    rows = logdir.summary_rows(archive)
    assert {row["tag"] for row in rows} == {"model/entropy"} and {row["source"] for row in rows} == {"train_learner"}
    assert [(int(row["global_step"]), float(row["value"])) for row in rows] == [
        (5 * (i + 1), 5 * i + 3) for i in range(200)]

    shutil.rmtree(log_dir / "train_learner")
    write_scalars(log_dir / "train_learner", range(601, 1001))
    reproduce.archive_run(str(log_dir), archive, 1_000, {"greedy": None})
    again = [(int(row["global_step"]), float(row["value"])) for row in logdir.summary_rows(archive)]
    assert again == [(5 * (i + 1), 5 * i + 3) for i in range(120)] + [(602 + 2 * i, 601.5 + 2 * i)
                                                                      for i in range(200)]

    reproduce.plot_tasks(reproduce.archived_runs(str(tmp_path / "report")), str(tmp_path / "report"))
    assert (tmp_path / "report" / "doomSparse" / "summaries_icm.png").stat().st_size > 0


def test_runs_another_sitting_has_going_are_waited_for_then_resumed_if_short(tmp_path):
    import train

    out = str(tmp_path / "study")
    sleepers, log_dirs = [], []
    for seed, episodes in ((1, 10), (2, 3)):  # seed 1 gets to the budget of 1M, seed 2 stops at 300k
        log_dir = reproduce.run_dir(out, "doom", "icm", seed)
        log_dirs.append(log_dir)
        write_episodes(log_dir, [0] * episodes, step_every=100_000)
        with open(os.path.join(log_dir, "config.json"), "w") as handle:
            json.dump({}, handle)
        # stand-ins for the other sitting's workers: they run until their stdin closes
        sleepers.append(subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", train.WORKER_SCRIPT,
                                          "--log-dir", log_dir], stdin=subprocess.PIPE))
    # Popen returns once the exec has begun, and for a moment after the new command line may read empty in /proc
    for log_dir in log_dirs:
        wait_for(lambda: train.run_processes(log_dir), 30, f"the stand-in in {log_dir} seen", every=0.05)
    fake = FakeTrain()
    ending = threading.Timer(1.0, lambda: [sleeper.stdin.close() for sleeper in sleepers])

    def launch(argv, **kwargs):
        assert all(sleeper.poll() is not None for sleeper in sleepers), "launched before the other sitting ended"
        return fake(argv, **kwargs)

    try:
        args = reproduce.parse_args(["--task", "doom", "--method", "icm", "--seeds", "0", "1", "2", "--steps", "1M",
                                     "--out", out])
        # seed 0 is new, but with one run at a time it waits for the runs that hold the cores now
        assert [run[4] for run in reproduce.plan(out, ["doom"], ["icm"], [0, 1, 2], 1_000_000)] == [
            "new", "running", "running"]
        ending.start()
        assert reproduce.run_all(args, launch=launch) == []
        assert [os.path.basename(argv[argv.index("--log-dir") + 1]) for argv in fake.launched] == [
            "doom-icm-s2", "doom-icm-s0"]
    finally:
        ending.cancel()
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


# A stand-in for train.py in child mode that started its cluster and was cut short: it records the signals it
# gets, takes a second to stop, and leaves its "worker" (a sleeper whose command line is a worker's) running.
CUT_SHORT_TRAIN = """
import os, signal, subprocess, sys, time
log_dir, worker_script = sys.argv[1:]
os.makedirs(log_dir, exist_ok=True)
got = []
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda signum, frame: got.append(signal.Signals(signum).name))
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", worker_script, "--log-dir", log_dir],
                 start_new_session=True)
with open(os.path.join(log_dir, "ready"), "w") as handle:
    handle.write(str(os.getpid()))
while not got:
    time.sleep(0.05)
time.sleep(1.0)
with open(os.path.join(log_dir, "signals"), "w") as handle:
    handle.write(" ".join(got))
"""

STUDY_DRIVER = """
import sys
sys.path.insert(0, sys.argv[1])
import reproduce, train
reproduce.train_argv = lambda task, method, seed, log_dir, *rest: [sys.executable, "-c", sys.argv[2], log_dir,
                                                                  train.WORKER_SCRIPT]
sys.exit(reproduce.main(sys.argv[3:]))
"""


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_the_runs_once_waits_for_them_and_leaves_nothing_running(tmp_path, how):
    """Ctrl-C reaches the terminal's whole process group, SIGTERM (kill, a scheduler) the study alone: either way
    each run gets one stop signal, the study waits for it to stop, stops what it left, and exits 128 + signal."""
    import signal

    import train

    out = tmp_path / "study"
    log_dir = reproduce.run_dir(str(out), "doom", "icm", 0)
    study = subprocess.Popen([sys.executable, "-c", STUDY_DRIVER, os.path.join(ROOT, "benchmarks"), CUT_SHORT_TRAIN,
                              "--task", "doom", "--method", "icm", "--seeds", "0", "--steps", "1M", "--out",
                              str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        deadline = time.time() + 60
        while not (os.path.exists(os.path.join(log_dir, "ready")) and train.run_processes(log_dir)):
            assert study.poll() is None and time.time() < deadline, study.communicate()[0]
            time.sleep(0.1)
        if how == "ctrl-c":
            os.killpg(study.pid, signal.SIGINT)
        else:
            study.send_signal(signal.SIGTERM)
        output = study.communicate(timeout=120)[0]
        left = train.run_processes(log_dir)
    finally:
        study.kill()
        study.wait()
        ready = os.path.join(log_dir, "ready")
        if os.path.exists(ready) and open(ready).read():  # a stand-in that no stop reached
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(open(ready).read()), signal.SIGKILL)
        train.stop_run(log_dir, None, quiet=True)
    assert study.returncode == 128 + (signal.SIGINT if how == "ctrl-c" else signal.SIGTERM), output
    with open(os.path.join(log_dir, "signals")) as handle:
        assert handle.read() == "SIGTERM", "the run got no stop, or more than one: " + output
    assert not left, "the run's worker was left running"
    assert "stopping doom-icm-s0" in output and "doom-icm-s0: stopped at step 0" in output, output
    assert "Traceback" not in output, output


def test_stop_after_stops_the_runs_writes_the_report_and_exits_75(tmp_path):
    """A machine or a job with a time limit: when --stop-after's time is up, the runs get their stop (final
    checkpoints), the report is written as ever, and the exit status (75, "try again later") says to go on."""
    import signal

    import train

    out = tmp_path / "study"
    log_dir = reproduce.run_dir(str(out), "doom", "icm", 0)
    write_episodes(reproduce.run_dir(str(out), "doom", "a3c", 0), [0] * 20)  # an earlier run, for the report
    started = time.time()
    study = subprocess.run([sys.executable, "-c", STUDY_DRIVER, os.path.join(ROOT, "benchmarks"), CUT_SHORT_TRAIN,
                            "--task", "doom", "--method", "icm", "--seeds", "0", "--steps", "1M", "--out", str(out),
                            "--stop-after", "3s", "--eval-episodes", "0", "--random-episodes", "2", "--no-video"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    try:
        left = train.run_processes(log_dir)
    finally:
        ready = os.path.join(log_dir, "ready")
        if os.path.exists(ready) and open(ready).read():  # a stand-in that no stop reached
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(open(ready).read()), signal.SIGKILL)
        train.stop_run(log_dir, None, quiet=True)
    assert study.returncode == reproduce.EXIT_TIME_UP == 75, study.stdout
    assert time.time() - started >= 3.0
    with open(os.path.join(log_dir, "signals")) as handle:
        assert handle.read() == "SIGTERM", "the run got no stop, or more than one: " + study.stdout
    assert not left, "the run's worker was left running"
    assert "doom-icm-s0: stopped at step 0" in study.stdout and "run the same command again" in study.stdout
    assert (out / "report" / "results.md").exists(), "the report is written after the runs stop"
    assert "the random agent on doom left to the next report" in study.stdout, "the time is up: it waits"
    assert not (out / "report" / "doom" / reproduce.RANDOM_BASELINE).exists()
    assert "Traceback" not in study.stdout, study.stdout


def test_the_runs_command_line_is_one_train_py_accepts(tmp_path):
    argv = reproduce.train_argv("doomSparse", "icm", 2, str(tmp_path / "run"), 5_000_000, 1,
                                study_args(tmp_path, "5M"))
    result = subprocess.run([*argv, "--dry-run"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "doomSparse" in result.stdout and "max_global_steps=5000000" in result.stdout
    # Mario's runs have no reward at all, and by default the task's preset's environments per worker
    mario = reproduce.train_argv("mario", "icm", 0, str(tmp_path / "mario"), 1_500_000, 0,
                                 reproduce.parse_args(["--task", "mario", "--out", str(tmp_path)]))
    assert "--noReward" in mario and "--noLifeReward" not in mario and "--envs-per-worker" not in mario
    assert "--noLifeReward" in argv and argv[argv.index("--envs-per-worker") + 1] == "4"
    # every bonus is a method, and MiniGrid's runs keep its reward and its preset's environments per worker
    for method in ("ride", "e3b", "ngu", "ngu_rnd", "counts", "disagreement"):
        grid = reproduce.train_argv("MiniGrid-KeyCorridorS3R3-v0", method, 1, str(tmp_path / method), 10_000_000, 0,
                                    reproduce.parse_args(["--task", "MiniGrid-KeyCorridorS3R3-v0", "--out",
                                                          str(tmp_path)]))
        assert grid[grid.index("--unsup") + 1] == method and "--noLifeReward" not in grid
        assert "--noReward" not in grid and "--envs-per-worker" not in grid
        assert reproduce.parse_run_name(f"MiniGrid-KeyCorridorS3R3-v0-{method}-s1") == (
            "MiniGrid-KeyCorridorS3R3-v0", method, 1)
    assert reproduce.task_spec("MiniGrid-KeyCorridorS3R3-v0")["evaluations"] == ("sampled",)
    # its table's last column past RIDE's and counts' steps in RIDE's figure (10M, 13M); MultiRoom's ends at 10M
    assert reproduce.task_milestones("MiniGrid-KeyCorridorS3R3-v0", None)[-1] == 15_000_000
    assert reproduce.task_milestones("MiniGrid-MultiRoom-N7-S4-v0", None)[-1] == 10_000_000


def test_bad_flags_get_one_line_and_exit_2(tmp_path):
    for flags, message in ((["--steps", "five"], "--steps"), (["--parallel", "0"], "must be >= 1"),
                           (["--method", "ppo"], "--method"), (["--envs-per-worker", "0"], "must be >= 1"),
                           (["--stop-after", "2 hours"], "not a duration"), (["--stop-after", "0m"], "positive")):
        result = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "reproduce.py"), "--out",
                                 str(tmp_path), *flags], capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and "Traceback" not in result.stderr and message in result.stderr, result.stderr
    empty = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "reproduce.py"), "--out",
                            str(tmp_path), "--report-only"], capture_output=True, text=True, timeout=60)
    assert empty.returncode == 2 and empty.stderr.strip().count("\n") == 0 and "no runs" in empty.stderr


def test_time_to_solve_reads_the_first_greedy_evaluation_at_the_solved_mean(tmp_path):
    import cartpole_time_to_solve

    (tmp_path / "rewards.txt").write_text("  1     5000 117.8\n  2    10000 474.9\n  3    15000 475.0\n"
                                          "  4    20000 301.2\n")
    assert cartpole_time_to_solve.evaluations(str(tmp_path), 475.0) == {"first_eval_solved_step": 15000,
                                                                        "last_eval": 301.2}
    assert cartpole_time_to_solve.evaluations(str(tmp_path), 500.0)["first_eval_solved_step"] is None
    assert cartpole_time_to_solve.evaluations(str(tmp_path / "none"), 475.0) == {"first_eval_solved_step": None,
                                                                                 "last_eval": None}


def test_replay_comparison_reports_the_return_by_each_quarter_of_the_steps_by_hand(tmp_path, capsys):
    import logdir

    out = tmp_path / "pong"
    write_episodes(out / "prioritized-seed0", [index - 21 for index in range(1, 11)], workers=1)  # -20 .. -11
    (out / "prioritized-seed0" / logdir.REWARDS_FILE).write_text("  1    50000 -14.0\n  2   100000 -13.0\n")
    write_episodes(out / "uniform-seed0", [-21] * 5, workers=1)  # still running: at 50,000 steps
    assert replay_learning.main(["--out", str(out), "--steps", "100000", "--window", "2", "--report-only"]) == 0
    results = json.load(open(out / "replay_learning.json"))["results"]
    assert [(result["replay"], result["global_step"]) for result in results] == [("prioritized", 100_000),
                                                                                  ("uniform", 50_000)]
    # the last 2 episodes that ended by 25k, 50k, 75k and 100k steps: (-20, -19), (-17, -16), (-15, -14), (-12, -11)
    assert list(results[0]["mean_return_at"].values()) == [-19.5, -16.5, -14.5, -11.5]
    assert list(results[1]["mean_return_at"].values()) == [-21.0, -21.0, None, None]
    assert list(results[1]["mean_length_at"].values()) == [100.0, 100.0, None, None]
    assert results[0]["evaluations"] == [[50_000, -14.0], [100_000, -13.0]]
    assert {"reward_vs_steps.png", "eval_vs_steps.png"} <= set(os.listdir(out / "plots"))
    assert "-11.50" in capsys.readouterr().out


def test_planet_learning_reports_each_evaluation_over_seeds_the_first_solved_step_and_welchs_test(tmp_path):
    import planet_learning
    from scipy import stats

    out = tmp_path / "pendulum"
    evaluations = {("planet", 0): [-1000.0, -400.0, -150.0], ("planet", 1): [-900.0, -190.0, -170.0],
                   ("sac", 0): [-1200.0, -1100.0, -600.0], ("sac", 1): [-1300.0, -1000.0, -800.0]}
    for (method, seed), means in evaluations.items():
        write_episodes(out / f"{method}-seed{seed}", [-1000.0] * 3, workers=1)
        (out / f"{method}-seed{seed}" / "rewards.txt").write_text(
            "".join(f"{index + 1:3d} {1000 * (index + 1):8d} {mean:.1f}\n" for index, mean in enumerate(means)))
    assert planet_learning.main(["--out", str(out), "--steps", "3000", "--seeds", "0", "1", "--methods", "planet",
                                 "sac", "--report-only"]) == 0
    report = json.load(open(out / "planet_learning.json"))
    planet, sac = report["summary"]["planet"], report["summary"]["sac"]
    assert planet["solved_at"] == [3000, 2000] and planet["solved"] == 2 and sac["solved_at"] == [None, None]
    assert planet["at_steps"]["2000"] == [-295.0, -400.0, -190.0, 2]
    expected = stats.ttest_ind([-150.0, -170.0], [-600.0, -800.0], equal_var=False)
    test = report["tests"]["planet vs sac"]
    assert test["step"] == 3000 and abs(test["p"] - expected.pvalue) < 1e-12 and test["t"] > 0
    assert "eval_vs_steps.png" in os.listdir(out / "plots")
    assert report["command"] == (f"benchmarks/planet_learning.py --out {out} --steps 3000 --seeds 0 1 --methods "
                                 "planet sac")  # without --report-only: the command that makes the runs


def test_planet_learning_gives_each_method_its_own_flags_and_records_each_runs_flags_and_time(tmp_path, monkeypatch):
    import planet_learning
    import replay_learning

    out = tmp_path / "pixels"
    launched = {}

    def launch(args, method, seed, flags):  # a finished run in place of train.py, its flags kept
        launched[method, seed] = flags
        run = out / f"{method}-seed{seed}"
        write_episodes(run, [-1000.0] * 3, workers=1)
        (run / "rewards.txt").write_text("  1     3000 -500.0\n")
        (run / "config.json").write_text(json.dumps({"argv": ["train.py", *flags]}))
        (run / "eval.csv").write_text("global_step,wall_time,episodes,mean_reward\n3000,1000120,5,-500\n")
        return subprocess.Popen(["true"])

    monkeypatch.setattr(replay_learning, "launch", launch)
    monkeypatch.setattr(replay_learning, "done", lambda run, steps: False)
    assert planet_learning.main(["--out", str(out), "--steps", "3000", "--seeds", "0", "--methods", "planet", "sac",
                                 "--method-flags", "planet=--set action_repeat=2 --set collect_every=50",
                                 "--method-flags", "sac=--set learning_starts=1000"]) == 0
    assert launched == {("planet", 0): ["--algo", "planet", "--set", "action_repeat=2", "--set", "collect_every=50"],
                        ("sac", 0): ["--algo", "sac", "--set", "learning_starts=1000"]}
    report = json.load(open(out / "planet_learning.json"))
    assert report["methods"]["sac"] == ["--algo", "sac", "--set", "learning_starts=1000"]
    assert report["results"]["planet"][0]["argv"] == ["train.py", *launched["planet", 0]]
    # from the first episode's start (its end 1,000,001 less its 1 s) to the evaluation at 1,000,120
    assert report["results"]["sac"][0]["wall_minutes"] == pytest.approx(2.0)
    assert report["summary"]["sac"]["wall_minutes"] == [pytest.approx(2.0)] * 2
    with pytest.raises(SystemExit):
        planet_learning.main(["--out", str(out), "--method-flags", "dreamer=--set seed=1"])


def write_checkpoint(log_dir, *steps):
    """TensorFlow's files of checkpoints at `steps` (the last the latest), made up, under <log-dir>/train."""
    train_dir = os.path.join(log_dir, "train")
    os.makedirs(train_dir, exist_ok=True)
    for step in steps:
        for suffix, data in ((".index", b"index"), (".data-00000-of-00001", bytes(range(256)) * 4),
                             (".meta", b"graph")):
            with open(os.path.join(train_dir, f"model.ckpt-{step}{suffix}"), "wb") as handle:
                handle.write(data + str(step).encode())
    with open(os.path.join(train_dir, "checkpoint"), "w") as handle:
        handle.write(f'model_checkpoint_path: "model.ckpt-{steps[-1]}"\n' + "".join(
            f'all_model_checkpoint_paths: "model.ckpt-{step}"\n' for step in steps))


def test_a_run_carried_in_the_report_resumes_on_another_machine_from_its_checkpoint(tmp_path, monkeypatch, capsys):
    """Machine A's run stopped at 300k of 1M (checkpoint at 255k) carries that checkpoint in its archive (--carry);
    machine B, without A's folders, restores the run from the archive and resumes it there: the episodes after the
    checkpoint set aside, the sittings going on, the positions' map keeping the share of the steps A's stand for."""
    monkeypatch.setattr(reproduce, "ARCHIVED_VISITS", 40)
    monkeypatch.setattr(reproduce, "PROGRESS_SECS", 0.0)
    report_dir = tmp_path / "report"
    unfinished, finished = (str(tmp_path / "a" / "runs" / f"doom-icm-s{seed}") for seed in (0, 1))
    for log_dir, episodes, checkpoints in ((unfinished, 30, (200_000, 255_000)), (finished, 100, (1_000_000,))):
        write_episodes(log_dir, [1] * episodes)
        write_checkpoint(log_dir, *checkpoints)
        with open(os.path.join(log_dir, "config.json"), "w") as handle:
            json.dump({"hyperparameters": {"max_global_steps": 1_000_000}}, handle)
        reproduce.note_sitting(log_dir, event="start", from_step=0, budget=1_000_000, machine="a, 2 cores")
        reproduce.note_sitting(log_dir, event="end", at_step=episodes * 10_000, restarts=1)
    write_visits(unfinished, 1_000)  # x from 0 to 999
    archive = report_dir / "runs" / "doom-icm-s0"
    reproduce.report(str(tmp_path / "a"), str(report_dir), [100_000], eval_episodes=0)
    assert not (archive / "train").exists(), "no checkpoint in the report unless --carry asks"
    reproduce.report(str(tmp_path / "a"), str(report_dir), [100_000], eval_episodes=0, carry=True)
    assert sorted(os.listdir(archive / "train")) == [
        "checkpoint", "model.ckpt-255000.data-00000-of-00001", "model.ckpt-255000.index"]
    assert not (report_dir / "runs" / "doom-icm-s1" / "train").exists(), "a run at its budget carries none"
    assert "its checkpoint at step 255,000 carried" in capsys.readouterr().err

    out = tmp_path / "b"
    states = {os.path.basename(run[3]): run[4]
              for run in reproduce.plan(str(out), ["doom"], ["icm"], [0, 1], 1_000_000, str(report_dir))}
    assert states == {"doom-icm-s0": "carried", "doom-icm-s1": "archived"}
    seen = {}

    def launch(argv, **kwargs):  # train.py on machine B: what it finds in the folder, then its own play
        log_dir = argv[argv.index("--log-dir") + 1]
        seen["checkpoint"] = reproduce.checkpoint_step(log_dir)
        seen["data"] = open(os.path.join(log_dir, "train", "model.ckpt-255000.data-00000-of-00001"), "rb").read()
        seen["config"] = json.load(open(os.path.join(log_dir, "config.json")))
        seen["steps"] = [int(row["global_step"]) for row in logdir_rows(log_dir, "episodes_carried.csv")]
        seen["set aside"] = len(logdir_rows(os.path.join(log_dir, "rewound"), "episodes_carried.csv"))
        seen["status"] = status.render(status.collect(log_dir))  # the carried episodes have no "reward" column
        with open(os.path.join(log_dir, "episodes_0.csv"), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            writer.writerows([step, 2_000_000 + step, 0, 0, 100, 1.0, 0, 0, 0.0, 0, "", "", "", ""]
                             for step in range(260_000, 1_000_001, 10_000))
        with open(os.path.join(log_dir, "visits_0.csv"), "w", newline="") as handle:
            csv.writer(handle).writerows([["global_step", "worker", "episode", "x", "y"]] + [
                [step, 0, 0, 10_000 + step, 0] for step in range(3_000)])
        return FakeProcess(0)

    args = reproduce.parse_args(["--task", "doom", "--method", "icm", "--seeds", "0", "1", "--steps", "1M",
                                 "--out", str(out), "--report-dir", str(report_dir)])
    assert reproduce.run_all(args, launch=launch) == []
    assert "doom-icm-s0: resumed from the checkpoint at step 255,000" in capsys.readouterr().out
    assert seen["checkpoint"] == 255_000 and seen["data"].endswith(b"255000")
    assert seen["config"] == {"hyperparameters": {"max_global_steps": 1_000_000}}
    assert seen["steps"] == list(range(10_000, 250_001, 10_000)) and seen["set aside"] == 5
    assert "last 20 episodes: mean bonus 0   success rate 1.00" in seen["status"], seen["status"]

    results = reproduce.report(str(out), str(report_dir), [100_000], eval_episodes=0, carry=True)
    run = results["tasks"]["doom"]["icm"]["seeds"]["0"]
    assert run["global_step"] == 1_000_000 and run["episodes"] == 25 + 75
    assert run["success_at"]["100000"] == 1.0, "machine A's episodes stay in the run"
    assert [(sitting["machine"], sitting["from_step"]) for sitting in run["sittings"]] == [
        ("a, 2 cores", 0), (reproduce.machine(), 255_000)]
    visits = logdir.read_rows(str(archive / reproduce.ARCHIVED_POSITIONS))
    assert len(visits) == 40 and sum(float(row["x"]) < 10_000 for row in visits) == 10  # a quarter: 255k of 1M
    assert not (archive / "train").exists(), "the run reached its budget: the report carries its checkpoint no more"


def logdir_rows(directory, name):
    path = os.path.join(directory, name)
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def test_the_random_agents_of_the_committed_reports_are_independent_samples_per_task():
    """Each task's random agent plays its own action sequences (a seed per task), not the same ones from another
    start: no episode's actions recur across the tasks of a report."""
    assert len({reproduce.random_seed(task) for task in reproduce.PAPER}) == len(reproduce.PAPER)
    for report in COMMITTED_REPORTS:
        digests = {}
        for path in glob.glob(os.path.join(ROOT, report, "*", reproduce.RANDOM_BASELINE)):
            summary = json.load(open(path))
            digests[path] = {episode["actions_digest"] for episode in summary["episode_details"]}
        for first in digests:
            for second in digests:
                assert first == second or not digests[first] & digests[second], f"{first} and {second} share episodes"


def test_a_run_names_what_weighs_its_bonus():
    """A seed's row says what weighed its bonus against the reward, from its config.json: prediction_beta, RND's
    int_coef instead (its scaler never reads prediction_beta), int_coef too on the two-stream path, and whether each
    step's bonus was normalised first; nothing for a run without a bonus."""
    def config(unsup, **weights):
        return {"run": {"unsup": unsup}, "hyperparameters": {"prediction_beta": 0.01, "int_coef": 1.0,
                                                              "two_streams": False, "normalise_bonus": False,
                                                              **weights}}
    assert reproduce.weight_of(config("counts", prediction_beta=0.002)) == "prediction_beta 0.002"
    assert reproduce.weight_of(config("rnd", int_coef=0.5, normalise_bonus=True)) == "int_coef 0.5"
    assert reproduce.weight_of(config("action", two_streams=True, int_coef=0.5, normalise_bonus=True)) == (
        "prediction_beta 0.01, int_coef 0.5")  # the ICM's scaler never reads normalise_bonus
    assert reproduce.weight_of(config("e3b", prediction_beta=0.007, normalise_bonus=True)) == (
        "prediction_beta 0.007, normalised")
    assert reproduce.weight_of(config("none")) is None and reproduce.weight_of({}) is None
