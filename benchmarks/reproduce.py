#!/usr/bin/env python
"""Reproduce the paper's experiments (Pathak et al. 2017): ICM against A3C on Doom's MyWayHome (Figure 5), and
on Super Mario Bros without any reward (Table 1); and compare any bonuses on any tasks, as on MiniGrid's (RIDE's).

    python benchmarks/reproduce.py --task doom doomSparse doomVerySparse --method icm a3c --seeds 0 1 2 \\
        --steps 5M --out tmp/repro
    python benchmarks/reproduce.py --out tmp/repro --report-only --report-dir docs/results/doom
    python benchmarks/reproduce.py --task mario --method icm a3c --seeds 0 1 2 --steps 1.5M --out tmp/mario
    python benchmarks/reproduce.py --task MiniGrid-MultiRoom-N7-S4-v0 MiniGrid-KeyCorridorS3R3-v0 \\
        --method a3c icm rnd ride e3b ngu counts --seeds 0 1 2 --steps 10M --out tmp/bonuses

Each (task, method, seed) is an ordinary run of `train.py --mode child` in <out>/runs/<task>-<method>-s<seed>,
with the original's settings (noreward-rl's `--default`: the ICM for `icm`, none for `a3c`; on Doom no living
penalty, on Mario no reward at all; RND, `--unsup rnd`, for `rnd`), with --envs-per-worker environments per
worker (by default the task's preset's: 4 on Doom, 1 on Mario). Runs go one after another (--parallel N: N at
once), each with --workers workers. Running the same command again skips the runs that reached --steps and
resumes the others from their checkpoints (the runs begun before the new ones), so a study can span several
sittings; a run whose folder is not here but whose archive in --report-dir reached --steps (a sitting on another
machine, since gone) is skipped too; a run that another sitting still has going is waited for, and --steps may
grow between sittings. Every 30 s it prints the runs done, the current runs' steps and success rates (Mario:
distances), and the time left at the current rate. On a machine or a scheduler's job with a time limit,
--stop-after 2h30m stops the runs then (their final checkpoints), writes the report and exits 75: run the same
command again, there or (with --carry) on another machine, to go on. That report evaluates only runs that reached
their budget; the evaluations of the others and the random agent wait for the next report.

Then the report, into --report-dir (default <out>/report), per task:
  <task>/*.png          plots.py's figures, ICM and A3C on each: reward, success rate and bonus against steps,
                        the seeds' mean with their min-max band, and where each method went (visits)
  <task>/summaries_<method>.png  the method's TensorBoard scalars (the learner's losses, entropy, rho, RND's
                        statistics, ...) against steps, a panel a tag and a line a seed, from the archives
  <task>/random_agent.json  a random agent's episodes on the task (demo.py --random, --random-episodes of them)
  <task>/video_<method>.mp4  one greedy episode (Mario: sampled) of the method's best seed run to its budget (by
                        its evaluation so), begun with random actions as the evaluations are, and its .json: the
                        run, its step, the policy, what it did
  results.md            per task: the verdict against the paper by the criterion of PAPER (not given over seeds of
                        different set-ups: workers x environments per worker); per method over its seeds, its
                        set-ups, the success rate over the last 100 episodes at --at steps (mean, lowest, highest),
                        how many seeds first reached 90% and how many were solved for good (every 1,000 episodes
                        in a row at 90% from some step to the end), the median steps to either, the greedy
                        evaluations pooled; the bonus an episode earned at --at steps, per method that has one
                        (each on its own scale: to see it grow or fade); then the same per seed, with what
                        weighed its bonus (prediction_beta, int_coef), its sittings and machine. Mario's
                        tables give the farthest distance an episode reached instead of the success rate (the
                        mean over the last 100 episodes at --at steps, the farthest of any episode, the means of
                        the greedy evaluations and of as many episodes sampling the policy as in training, where
                        greedy play may stand still), beside the paper's 711. MiniGrid's tables add the mean
                        return and the cells an episode stepped into at --at steps, the step each seed reached
                        RIDE's level (RIDE_LEVELS) beside its figure's, and the method with the highest mean return
                        at the last of them against each other one with 3 seeds (Welch's t-test, its p also
                        adjusted by Holm's method for the number of methods tested against)
  figure5.png           the tasks side by side as in the paper's Figure 5, a row per measure, the paper's results
                        marked (a star where its ICM got, a dashed line at its A3C's level: PAPER_MARKS)
  results.json          every number of the tables
  runs/<run>/           each run's archive: its episodes (the columns above), 20,000 of its positions and its
                        TensorBoard scalars (200 means of consecutive summaries a tag and task), as compressed
                        CSVs, its config, its sittings and the machine; the tables are computed from these alone
Only small files go there, so it can be committed; and a report dir that already holds runs keeps them, so one
report gathers the sittings of several machines whose run folders are gone or elsewhere. With --carry a run short
of --steps also leaves its latest checkpoint in its archive (runs/<run>/train/, a few MB, dropped when the run
reaches its budget; .gitignore keeps it out of git: copy the report folder to carry it): a sitting on a machine
without the run's folder, given that report dir, makes the folder again from the archive and resumes the run from
that checkpoint, its episodes, positions and sittings going on from the earlier machine's.
"""
import argparse
import contextlib
import csv
import datetime
import functools
import gzip
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import constants  # noqa: E402
import envs  # noqa: E402
import logdir  # noqa: E402
import plots  # noqa: E402
import status  # noqa: E402
import train  # noqa: E402

METHODS = {"icm": ["--unsup", "action"], "a3c": ["--unsup", "none"], "rnd": ["--unsup", "rnd"],
           "ride": ["--unsup", "ride"], "e3b": ["--unsup", "e3b"], "ngu": ["--unsup", "ngu"],
           "ngu_rnd": ["--unsup", "ngu_rnd"], "counts": ["--unsup", "counts"],
           "disagreement": ["--unsup", "disagreement"]}
NO_BONUS = METHODS["a3c"]  # the learner alone: no bonus to report
METHOD_LABELS = {"icm": "ICM", "a3c": "A3C", "rnd": "RND", "ride": "RIDE", "e3b": "E3B", "ngu": "NGU episodic",
                 "ngu_rnd": "NGU", "counts": "counts", "disagreement": "disagreement"}
PAPER_METHODS = ["icm", "a3c"]  # the paper's Figure 5, what a study runs unless --method says otherwise
PROGRESS_SECS = 30.0
STOP_WAIT_SECS = train.STOP_GRACE_SECS + 30  # a train.py stops its workers (final checkpoints), then the rest
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_TIME_UP = 75  # sysexits.h's EX_TEMPFAIL, "try again later": --stop-after stopped runs short of their budget
# Which runs a sitting takes first, by state (plan()): those another sitting has going (they hold cores that
# --parallel counts), then those begun in an earlier sitting, here or carried from another machine, so that a study
# finishes what it began before it begins more; then the new ones.
LAUNCH_ORDER = {"running": 0, "resume": 1, "carried": 1, "new": 2}
WINDOW = 100  # episodes in the success rate of the tables (the paper's curves average over such windows)
SOLVED = 0.9  # the success rate that counts as solving the task
# Solved for good: from some episode on, every SUSTAINED_WINDOW consecutive episodes to the end of the run have at
# least SOLVED success. One window of WINDOW episodes at 90% is a touch, not a result: a run can fall back below.
SUSTAINED_WINDOW = 1000
# The paper's Figure 5 (20 workers, 3 runs per curve), read off the figure, and the step by which this study asks a
# majority of ICM seeds to be solved for good; the paper's A3C was not solved by then on any task (on the dense one
# its curve levels off near 0.7, on the sparse ones it stays at 0), so a majority of A3C seeds must not be either.
# `a3c_level`: where the paper's A3C curve is at that step, beside which the report gives A3C's success here.
PAPER = {
    "doom": {"icm": "about 1.0 by about 3.5-4M steps", "a3c": "levels off near 0.7", "by": 4_000_000,
             "a3c_level": 0.7},
    "doomSparse": {"icm": "about 1.0 after about 7M steps", "a3c": "0", "by": 7_000_000, "a3c_level": 0.0},
    "doomVerySparse": {"icm": "solved in 2 of 3 runs by about 7.5M steps", "a3c": "0", "by": 7_500_000,
                       "a3c_level": 0.0},
}
# What a verdict against the paper's figure compares besides the method, said under every verdict: the set-up, the
# starts, and what the paper's steps are.
PAPER_SETUP = "20 workers x 1 environment"
PAPER_STEPS = ("the paper's steps are read off its mean curves over 3 runs; this study's are each seed's, by the "
               "sustained criterion above")
PAPER_STARTS = {
    "doom": "the same: one of the stock map's 17 spawn spots at random",
    "doomSparse": "the paper's about 270 steps from the vest on a map it modified; here the stock map's spawn spot "
                  "10, 296 tics from it along a scripted path (docs/environments.md)",
    "doomVerySparse": "the paper's the farthest room, about 350 steps, on its modified map; here the stock map's "
                      "farthest spawn spot, 15, 372 tics along a scripted path (docs/environments.md)",
}
# The paper's results as marks on the report's figure (FIGURE_ROWS' files): (step, value, label), a star at that
# step, or a dashed level where the step is None; read off Figure 5 and Table 1, as PAPER and PAPER_DISTANCE say.
PAPER_MARKS = {
    "doom": {"success_vs_steps.png": [(4_000_000, 1.0, "the paper's ICM: ~1.0 by ~4M"),
                                      (None, 0.7, "the paper's A3C: ~0.7")]},
    "doomSparse": {"success_vs_steps.png": [(7_000_000, 1.0, "the paper's ICM: ~1.0 after ~7M")]},
    "doomVerySparse": {"success_vs_steps.png": [(7_500_000, 2 / 3, "the paper's ICM: 2 of 3 runs solved by ~7.5M")]},
    "mario": {"distance_vs_steps.png": [(1_500_000, 711.0, "the paper's ICM: 711 at 1.5M")]},
}
# The paper's Table 1: with no reward, curiosity alone on level 1-1, from scratch, 1.5M steps: distance 711 +- 59.3
# (mean +- standard error). Reproduced: the ICM seeds' mean distance at that step (each seed's last WINDOW
# episodes) at least the paper's mean less one standard error, and above A3C's without reward (a random walk
# that learns from nothing); beaten: above the paper's mean plus one.
PAPER_DISTANCE = {
    "mario": {"icm": "711 +- 59 (mean +- standard error) after 1.5M steps", "a3c": "not run (here: the random walk "
              "curiosity must beat)", "at": 1_500_000, "distance": 711.0, "error": 59.3},
}
# What a task's runs are given beyond the method, what its tables measure per episode (the Doom tasks, and any
# other: whether the episode reached the goal; Mario, with no reward at all, how far it went), and the steps of
# the tables' columns unless --at says (the paper's step is always one): its curves' span.
# Its final checkpoints' evaluations (demo.py's policies), the last the one its video plays: on Doom greedy play
# from random starts; on Mario also the policy sampled as in training (whose episodes the tables' distances are),
# for there greedy play may stand near the start for the whole game clock (ICM seed 0 at 1.5M: 64 on average over
# 20 greedy episodes, 700 over its last 100 in training)
SUCCESS_TASK = {"flags": ("--noLifeReward",), "measure": "success", "at": ("1M", "2M", "3M", "5M", "7M"),
                "evaluations": ("greedy",)}
# MiniGrid's tasks: a new layout each episode and a reward only at the goal, which the success rate counts; evaluated
# sampling the policy as in training, as RIDE's curves are its training episodes' returns.
# Their tables add the mean return over the same windows (RIDE's measure: 1 - 0.9 x steps / limit at the goal).
MINIGRID_TASK = {"flags": (), "measure": "success", "at": ("1M", "2M", "5M", "10M"), "evaluations": ("sampled",),
                 "goal": "the goal", "returns": True}
# RIDE's Figure 3 (Raileanu and Rocktaschel 2020: IMPALA, 40 actors, mean curves over its seeds), read off: the mean
# return its best curves level off at on each task it ran, and about when each method's curve got there. A run
# reaches the level when the mean return of its last WINDOW episodes first comes within LEVEL_READING of it (what
# reading the figure allows); the report gives the step, beside the figure's.
RIDE_LEVELS = {
    "MiniGrid-MultiRoom-N7-S4-v0": {"panel": "3 (a)", "return": 0.78, "frames": {
        "ride": "about 5M", "counts": "about 5.5M", "rnd": "about 12M", "icm": "about 14M", "a3c": "never in 30M"}},
    "MiniGrid-KeyCorridorS3R3-v0": {"panel": "3 (c)", "return": 0.9, "frames": {
        "ride": "about 10M", "counts": "about 13M", "rnd": "about 20M", "icm": "never in 30M", "a3c": "never in 30M"}},
    "MiniGrid-ObstructedMaze-2Dlh-v0": {"panel": "3 (g)", "return": 0.95, "frames": {
        "ride": "about 30M", "rnd": "about 0.94 at 65M", "counts": "never in 65M", "icm": "never in 65M",
        "a3c": "never in 65M"}},
    "MiniGrid-MultiRoom-N12-S10-v0": {"panel": "3 (h)", "return": 0.65, "frames": {
        "ride": "about 20M", "counts": "never in 100M", "rnd": "never in 100M", "icm": "never in 100M",
        "a3c": "never in 100M"}},
}
LEVEL_READING = 0.02
TASKS = {"mario": {"flags": ("--noReward",), "measure": "distance", "at": ("250k", "500k", "1M"),
                   "evaluations": ("greedy", "sampled")},
         **{task: MINIGRID_TASK for task in ("MiniGrid-MultiRoom-N7-S4-v0", "MiniGrid-MultiRoom-N12-S10-v0",
                                             "MiniGrid-KeyCorridorS4R3-v0", "MiniGrid-ObstructedMaze-2Dlh-v0")},
         # RIDE's figure has RIDE at its level on KeyCorridorS3R3 by about 10M frames and counts by about 13M: a
         # column past both, which a 15M-step run reaches
         "MiniGrid-KeyCorridorS3R3-v0": {**MINIGRID_TASK, "at": (*MINIGRID_TASK["at"], "15M")}}
SEEDS_TO_JUDGE = 3  # the paper's runs per curve: fewer seeds than this get no verdict
BEATEN = 0.75  # "beaten": a majority of ICM seeds solved for good by this fraction of the paper's step
EXP_ID_BASE = 420  # the runs' port offsets (train.py --expId); slot i of --parallel uses EXP_ID_BASE + i
# what a run's archive in the report keeps: the episode columns the tables and figures read, and at most this
# many of its logged positions (every 4th step's are logged: ~3 MB a worker-hour; the heatmap needs far fewer)
ARCHIVED_EPISODE_COLUMNS = ("global_step", "wall_time", "worker", "env_reward", "length", "truncated", "bonus",
                            "success", "distance", "cells")
ARCHIVED_VISITS = 20_000
# the archive's two CSVs, compressed (a 5M-step Doom run's episodes are 0.8 MB as text, 0.2 MB so; logdir reads both)
ARCHIVED_EPISODES, ARCHIVED_POSITIONS = "episodes_all.csv.gz", "visits_all.csv.gz"
# the tasks' TensorBoard scalars (the learner's losses, entropy, RND's statistics, V-trace's rho, ...), each cut
# into at most this many means of consecutive summaries: what a figure of a run shows, in tens of kB
ARCHIVED_SUMMARY_POINTS = 200
ARCHIVED_SUMMARIES = logdir.SUMMARIES + ".gz"
SUMMARIES_FIGURE = "summaries_{method}.png"  # a task's figure of a method's archived summaries, a line a seed
EPISODE_TAGS = ("global/",)  # the per-episode summaries: the archived episodes hold them whole
# --carry: the latest checkpoint of a run short of its budget goes into its archive (<archive>/train/), so that
# a sitting on a machine without the run's folder resumes it from there (restore_carried); the folder restored
# holds the archive's episodes and positions so far under these names (read with the workers' own, as logdir's
# patterns match them) and what it was restored from
CARRIED = logdir.CHECKPOINTS  # the archive is read as a log dir: its checkpoints where a run's are
CARRIED_EPISODES = "episodes_carried.csv"
CARRIED_VISITS = "visits_carried.csv"
CARRIED_FROM = "carried.json"
FIGURE = "figure5.png"  # every task side by side, a row per measure: (y label, plots.py's figure of that measure)
FIGURE_ROWS = (("game reward per episode", "reward_vs_steps.png"), ("success rate", "success_vs_steps.png"),
               ("distance reached", "distance_vs_steps.png"))
RANDOM_BASELINE = "random_agent.json"  # demo.py --random's summary on a task, every episode in it, in the report


def random_seed(task):
    """The random agent's seed on `task`: its own per task (a stable hash of the name), so that the baselines of
    two tasks are independent samples, not the same action sequences played from two starts."""
    return zlib.crc32(task.encode()) % 2**31
# <report>/<task>/video_<method>.mp4: an episode of the method's best seed by the task's last evaluation policy,
# and beside it .json: which run, at which step, by which policy, what the episode did (one video per task and
# method, not per seed: the report is committed)
VIDEO = "video_{}"
VIDEO_QUALITY = "5"  # demo.py --video-quality: a third of the default's size (a Doom minute 0.5 MB against 2.3)
EVALUATION_MEASURE = {"success": "success_rate", "distance": "mean_distance"}  # any evaluation's summary key


def parse_steps(text):
    """'5M' -> 5_000_000, '500k' -> 500_000, '2.5M', '3000000'; ValueError otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*", str(text))
    if not match:
        raise ValueError(f"{text!r} is not a step count (e.g. 3000000, 500k, 5M)")
    scale = {"": 1, "k": 10 ** 3, "m": 10 ** 6, "g": 10 ** 9}[match.group(2).lower()]
    steps = int(round(float(match.group(1)) * scale))
    if steps <= 0:
        raise ValueError(f"{text!r}: a step count must be positive")
    return steps


DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def duration(text):
    """'2h30m' -> 9000.0 seconds, '90m', '45s', '3600'; argparse's error otherwise."""
    text = str(text).strip()
    match = DURATION.fullmatch(text)
    if text.isdigit():
        seconds = float(text)
    elif text and match:
        hours, minutes, secs = (int(part or 0) for part in match.groups())
        seconds = float(hours * 3600 + minutes * 60 + secs)
    else:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 2h30m, 90m, 45s, 3600)")
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be positive")
    return seconds


class TimeUp(Exception):
    """--stop-after: the sitting's time is up; its runs were stopped with their final checkpoints."""


def step_count(text):
    try:
        return parse_steps(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


RUN_NAME = re.compile(r"(?P<task>.+)-(?P<method>" + "|".join(METHODS) + r")-s(?P<seed>\d+)$")


def run_dir(out, task, method, seed):
    return os.path.join(out, "runs", f"{task}-{method}-s{seed}")


def sittings_path(log_dir):
    """Beside the run's folder (train.py owns the folder): a line per launch of the run and per end of one."""
    return log_dir.rstrip(os.sep) + ".sittings.jsonl"


def sitting_line(when, **record):
    """One line of a run's sittings file, as read_sittings reads it back."""
    return json.dumps({"time": when, **record}) + "\n"


def note_sitting(log_dir, **record):
    with open(sittings_path(log_dir), "a") as handle:
        handle.write(sitting_line(time.strftime("%Y-%m-%dT%H:%M:%S"), **record))


def sitting_lines(sitting):
    """The lines that read_sittings reads back as `sitting` (one of its entries): its start, and its end if any."""
    lines = [sitting_line(sitting["started"], event="start", from_step=sitting["from_step"],
                          budget=sitting["budget"], machine=sitting.get("machine"))]
    if "ended" in sitting:
        why = {"restart_reasons": sitting["restart_reasons"]} if sitting.get("restart_reasons") else {}
        lines.append(sitting_line(sitting["ended"], event="end", at_step=sitting["at_step"],
                                  restarts=sitting.get("restarts") or 0, **why))
    return lines


def write_sittings(log_dir, sittings):
    """Write a run's sittings file afresh, so that read_sittings reads back `sittings` (its entries)."""
    with open(sittings_path(log_dir), "w") as handle:
        handle.writelines(line for sitting in sittings for line in sitting_lines(sitting))


def sitting_end(log_dir, step):
    """What the end of a sitting notes of a run: the step it reached, how many times this sitting's supervisor
    started a process of it again, and why each such process was last started again (`w-1: hung (no heartbeat
    for 95 s)`), so that the report says why where the run's logs stay on the machine."""
    members = [(name, member) for record in logdir.supervisor_records(log_dir)
               for name, member in sorted(record.get("processes", {}).items()) if member.get("restarts")]
    end = {"at_step": step, "restarts": sum(member["restarts"] for _, member in members)}
    reasons = [f"{name}: {member.get('last_reason') or 'no reason kept'}" for name, member in members]
    return {**end, "restart_reasons": reasons} if reasons else end


def read_sittings(log_dir):
    """[{started, from_step, budget, machine, ended?, at_step?, restarts?, restart_reasons?}] of the run's
    launches, in order."""
    sittings = []
    path = sittings_path(log_dir)
    for line in (open(path).read().splitlines() if os.path.exists(path) else []):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if record.get("event") == "start":
            sittings.append({"started": record["time"], "from_step": record["from_step"], "budget": record["budget"],
                             "machine": record.get("machine")})
        elif record.get("event") == "end" and sittings:
            sittings[-1].update(ended=record["time"], at_step=record["at_step"], restarts=record["restarts"],
                                **({"restart_reasons": record["restart_reasons"]} if record.get("restart_reasons")
                                   else {}))
    return sittings


def sittings_cell(run):
    """How many sittings the run took, where its budget changed between them, and the supervisor's restarts."""
    sittings = run.get("sittings")
    if not sittings:
        return "-"
    parts = [str(len(sittings))]
    budgets = [sitting["budget"] for sitting in sittings]
    if len(set(budgets)) > 1:
        changed = [budget for i, budget in enumerate(budgets) if i == 0 or budget != budgets[i - 1]]
        parts.append("budget " + " then ".join(short(budget) for budget in changed))
    restarts = sum(sitting.get("restarts") or 0 for sitting in sittings)
    if restarts:
        parts.append(f"{restarts} restart{'s' if restarts > 1 else ''}")
    return ", ".join(parts)


def parse_run_name(name):
    """'doomSparse-icm-s2' -> ('doomSparse', 'icm', 2); None for another name."""
    match = RUN_NAME.match(name)
    return (match["task"], match["method"], int(match["seed"])) if match else None


def reached_step(log_dir):
    """The global step a run got to (0 for a run not started)."""
    return status.collect(log_dir)["global_step"] if os.path.isdir(log_dir) else 0


def archived_step(report_dir, log_dir):
    """The global step that the report's archive of this run reached (0 without one)."""
    kept = logdir.read_json(os.path.join(report_dir, "runs", os.path.basename(log_dir), "run.json")) or {}
    return kept.get("global_step", 0)


def carried_dir(report_dir, log_dir):
    """Where the report keeps the checkpoint that a run short of its budget carries (--carry)."""
    return os.path.join(report_dir, "runs", os.path.basename(log_dir), CARRIED)


def plan(out, tasks, methods, seeds, steps, report_dir=None):
    """[(task, method, seed, log_dir, state)] in the order they run; state: done, archived (no folder here, but the
    report dir's archive of it reached `steps`: an earlier sitting's, on this machine or another), carried (no
    folder here, and its archive carries a checkpoint to resume from), running, resume or new."""
    runs = []
    for task in tasks:
        for method in methods:
            for seed in seeds:
                log_dir = run_dir(out, task, method, seed)
                if train.run_processes(log_dir):
                    state = "running"
                elif reached_step(log_dir) >= steps:
                    state = "done"
                elif report_dir and not os.path.isdir(log_dir) and archived_step(report_dir, log_dir) >= steps:
                    state = "archived"
                elif report_dir and not os.path.isdir(log_dir) and os.path.isdir(carried_dir(report_dir, log_dir)):
                    state = "carried"
                else:
                    state = "resume" if os.path.exists(os.path.join(log_dir, "config.json")) else "new"
                runs.append((task, method, seed, log_dir, state))
    return runs


def task_spec(task):
    return TASKS.get(task, SUCCESS_TASK)


def train_argv(task, method, seed, log_dir, steps, slot, args):
    per_worker = [] if args.envs_per_worker is None else ["--envs-per-worker", str(args.envs_per_worker)]
    return [sys.executable, os.path.join(ROOT, "train.py"), "--mode", "child", "--num-workers", str(args.workers),
            "--env-id", task, *METHODS[method], *task_spec(task)["flags"], *per_worker,
            "--log-dir", log_dir, "--expId", str(EXP_ID_BASE + slot), "--no-tensorboard",
            "--set", f"max_global_steps={steps}", "--set", f"seed={seed}", *args.extra]


def recent_measure(log_dir, measure):
    """The mean of `measure` (success, distance) over the run's last WINDOW episodes, or None."""
    steps, values = episode_arrays(log_dir, measure)
    return float(np.mean(values[-WINDOW:])) if len(values) else None


def progress_line(active, runs_done, total, steps, rates):
    """One line: runs done, each active run's step, rate and success, and the time left at today's rate.
    `active`: [(name, log_dir, status.collect's dict of it)]."""
    parts = [f"{time.strftime('%H:%M:%S')} runs done {runs_done}/{total}"]
    for name, log_dir, collected in active:
        measure = task_spec(parse_run_name(name)[0])["measure"]
        recent = recent_measure(log_dir, measure)
        parts.append(f"{name}: step {collected['global_step']:,}/{steps:,} ({collected['steps_per_sec']:,.0f}/s)"
                     + (f", {measure} {recent:.{2 if measure == 'success' else 0}f}" if recent is not None else ""))
        if collected["steps_per_sec"] > 0:
            rates.append(collected["steps_per_sec"])
    return "; ".join(parts)


def time_left(remaining_steps, rates, parallel):
    if not rates:
        return ""
    seconds = remaining_steps / (np.median(rates[-20:]) * parallel)
    return f"; about {datetime.timedelta(seconds=int(seconds))} left"


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopRequest:
    """Ctrl-C, or SIGTERM (kill, timeout(1), a scheduler): noted here, and run_all stops its runs as Ctrl-C
    does rather than leave them orphans. Noted, not raised from the handler: an exception between a launch and
    its bookkeeping would leave a run untracked (and blocking the signals meanwhile would block them in the
    launched train.py too: a signal mask is inherited)."""

    def __init__(self):
        self.signum = None

    def __call__(self, signum, frame):
        self.signum = self.signum or signum


def stop_runs(active):
    """Stop the runs this sitting started: SIGTERM to each train.py (its child mode stops the run's workers
    with their final checkpoints, then the rest), then whatever a train.py cut short left of its run. Further
    signals are ignored meanwhile: a second Ctrl-C must not leave the runs half stopped."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    ours = {name: (log_dir, process) for name, (log_dir, process, _) in active.items() if process is not None}
    if not ours:
        return
    print(f"stopping {', '.join(ours)} (final checkpoints; up to {STOP_WAIT_SECS} s)", flush=True)
    for _, process in ours.values():
        if process.poll() is None:
            process.terminate()
    deadline = time.time() + STOP_WAIT_SECS
    for name, (log_dir, process) in ours.items():
        try:
            process.wait(timeout=max(deadline - time.time(), 0.0))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if train.run_processes(log_dir):
            train.stop_run(log_dir, None, quiet=True)
        note_sitting(log_dir, event="end", **sitting_end(log_dir, reached_step(log_dir)))
        print(f"{name}: stopped at step {reached_step(log_dir):,}", flush=True)


def run_all(args, launch=subprocess.Popen):
    """Run what the plan leaves to do, --parallel at a time; the names of runs that failed."""
    report_dir = report_dir_of(args)
    runs = plan(args.out, args.task, args.method, args.seeds, args.steps, report_dir)
    total, failed, rates = len(runs), [], []
    todo = sorted((run for run in runs if run[4] not in ("done", "archived")), key=lambda run: LAUNCH_ORDER[run[4]])
    print(f"{total} runs in {args.out}/runs: {sum(run[4] == 'done' for run in runs)} done, "
          f"{sum(run[4] == 'archived' for run in runs)} done in an earlier sitting (archived in {report_dir}), "
          f"{sum(run[4] == 'running' for run in todo)} running elsewhere, "
          f"{sum(run[4] == 'resume' for run in todo)} to resume, "
          f"{sum(run[4] == 'carried' for run in todo)} to resume from a checkpoint the report carries, "
          f"{sum(run[4] == 'new' for run in todo)} new", flush=True)
    active = {}  # name -> (log_dir, process or None for a run another sitting has going, slot)
    next_print = time.time()
    stop = StopRequest()
    ends = None if args.stop_after is None else time.time() + args.stop_after

    def time_up():
        return ends is not None and time.time() >= ends

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        while (todo or active) and not stop.signum and not time_up():
            free = [slot for slot in range(args.parallel) if slot not in {value[2] for value in active.values()}]
            while todo and free and not stop.signum and not time_up():
                task, method, seed, log_dir, state = todo.pop(0)
                name = os.path.basename(log_dir)
                if state == "running":
                    active[name] = (log_dir, None, free.pop(0))
                    print(f"{name}: running already (another sitting); waiting for it", flush=True)
                    continue
                os.makedirs(os.path.dirname(log_dir), exist_ok=True)
                carried = restore_carried(os.path.dirname(carried_dir(report_dir, log_dir)), log_dir) \
                    if state == "carried" else None
                log = open(os.path.join(os.path.dirname(log_dir), f"{name}.launch.log"), "a")
                slot = free.pop(0)
                from_step = reached_step(log_dir) if carried is None else carried
                # its own session: Ctrl-C reaches this process only, which stops the runs once (stop_runs)
                process = launch(train_argv(task, method, seed, log_dir, args.steps, slot, args), stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                                 start_new_session=True)
                log.close()
                active[name] = (log_dir, process, slot)
                note_sitting(log_dir, event="start", from_step=from_step, budget=args.steps,
                             machine=machine())
                how = (f"resumed from the checkpoint at step {carried:,} that {report_dir} carries"
                       if state == "carried" else "resumed" if state == "resume" else "started")
                print(f"{name}: {how} (log {log.name})", flush=True)
            for name, (log_dir, process, slot) in list(active.items()):
                finished = process.poll() is not None if process else not train.run_processes(log_dir)
                if finished:
                    del active[name]
                    step = reached_step(log_dir)
                    code = process.returncode if process else 0
                    if process:
                        note_sitting(log_dir, event="end", **sitting_end(log_dir, step))
                    if process is None and step < args.steps:  # another sitting's run, with a smaller budget
                        todo.insert(0, (*parse_run_name(name), log_dir, "resume"))
                    elif code != 0 or step < args.steps:
                        failed.append(name)
                        print(f"{name}: stopped at step {step:,} of {args.steps:,} (exit status {code}); "
                              f"see {log_dir}/*.out. Run the command again to resume it", flush=True)
                    else:
                        print(f"{name}: done at step {step:,}", flush=True)
            if active and time.time() >= next_print:
                done = total - len(todo) - len(active)
                going = [(name, value[0], status.collect(value[0])) for name, value in active.items()]
                remaining = sum(max(args.steps - reached_step(run[3]), 0) for run in todo) + sum(
                    max(args.steps - collected["global_step"], 0) for _, _, collected in going)
                line = progress_line(going, done, total, args.steps, rates)
                print(line + time_left(remaining, rates, min(args.parallel, len(active))), flush=True)
                next_print = time.time() + PROGRESS_SECS
            time.sleep(1.0)
        if stop.signum:
            stop_runs(active)
            raise Interrupted(stop.signum)
        if todo or active:  # the time --stop-after gave is up
            stop_runs(active)
            raise TimeUp(f"stopped after --stop-after {args.stop_after:,.0f} s with {len(todo) + len(active)} "
                         f"run(s) short of {args.steps:,} steps")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return failed


# ---------------------------------------------------------------- the report

def episode_arrays(log_dir, column):
    """(global steps, values of `column`) of the run's episodes that have it, ordered by global step."""
    return logdir.episode_columns(log_dir, column)[0]


def success_at(steps, success, milestone, reached=None, window=WINDOW):
    """Success rate (or the mean of any measure) over the last `window` episodes that ended by global step
    `milestone`; None when the run did not get that far (`reached`, its global step; by default its last
    episode's) or had no episode before."""
    reached = (steps[-1] if len(steps) else 0) if reached is None else reached
    if not len(steps) or reached < milestone:
        return None
    ended = success[steps <= milestone]
    return float(np.mean(ended[-window:])) if len(ended) else None


def first_solved(steps, success, window=WINDOW, threshold=SOLVED):
    """The global step at which the first full window of `window` episodes reached `threshold` success."""
    if len(success) < window:
        return None
    sums = np.convolve(success, np.ones(window), "valid")  # sums[i]: episodes i .. i + window - 1
    hits = np.flatnonzero(sums >= threshold * window - 1e-9)
    return int(steps[hits[0] + window - 1]) if len(hits) else None


def sustained_from(steps, success, window=SUSTAINED_WINDOW, threshold=SOLVED):
    """The global step from which the run stayed solved to its end: the end of the first window of `window`
    episodes after which every such window, the run's last included, has `threshold` success; None otherwise."""
    if len(success) < window:
        return None
    good = np.convolve(success, np.ones(window), "valid") >= threshold * window - 1e-9
    if not good[-1]:
        return None
    bad = np.flatnonzero(~good)
    first = bad[-1] + 1 if len(bad) else 0
    return int(steps[first + window - 1])


def run_summary(log_dir, milestones, reached, measure="success", level=None):
    """A run's numbers; with a `level` (RIDE_LEVELS'), also the step its mean return first came within LEVEL_READING
    of it."""
    config = run_config(log_dir)
    budget = budget_of(config)
    if measure == "distance":
        return distance_run_summary(log_dir, milestones, reached, config, budget)
    (steps, success), (return_steps, returns), (cell_steps, cells), (bonus_steps, bonuses) = logdir.episode_columns(
        log_dir, "success", "env_reward", "cells", "bonus")
    last = success[-SUSTAINED_WINDOW:]
    return {"log_dir": log_dir, "global_step": reached, "budget": budget, "setup": setup_of(config),
            "weight": weight_of(config),
            "episodes": int(len(success)),
            "success_at": {str(m): success_at(steps, success, m, reached) for m in milestones},
            "return_at": {str(m): success_at(return_steps, returns, m, reached) for m in milestones},
            "cells_at": {str(m): success_at(cell_steps, cells, m, reached) for m in milestones},
            "bonus_at": {str(m): success_at(bonus_steps, bonuses, m, reached) for m in milestones},
            "first_solved": first_solved(steps, success),
            "sustained_from": sustained_from(steps, success),
            "last_episodes": {"episodes": int(len(last)), "success": float(np.mean(last)) if len(last) else None},
            "reached_vest": bool(success.any()) if len(success) else False,
            **({"level_from": first_solved(return_steps, returns, threshold=level - LEVEL_READING)}
               if level is not None else {})}


def distance_run_summary(log_dir, milestones, reached, config, budget):
    """A run measured by distance (Mario): the mean of its episodes' farthest distances over the last WINDOW
    episodes at each milestone and at its end, and the farthest of any episode."""
    (steps, distance), (_, flags), (bonus_steps, bonuses) = logdir.episode_columns(log_dir, "distance", "success",
                                                                                  "bonus")
    return {"log_dir": log_dir, "global_step": reached, "budget": budget, "setup": setup_of(config),
            "weight": weight_of(config),
            "episodes": int(len(distance)), "goals": int(flags.sum()),
            "distance_at": {str(m): success_at(steps, distance, m, reached) for m in milestones},
            "bonus_at": {str(m): success_at(bonus_steps, bonuses, m, reached) for m in milestones},
            "last_episodes": {"episodes": int(len(distance[-WINDOW:])),
                              "distance": float(np.mean(distance[-WINDOW:])) if len(distance) else None,
                              "error": standard_error(distance[-WINDOW:])},
            "farthest": float(distance.max()) if len(distance) else None}


def standard_error(values):
    """The standard error of the mean of `values` (taken as independent draws), None for fewer than 2."""
    import scipy.stats  # here, not at the top: it is most of the command's start-up (0.9 of 1.4 s)

    return float(scipy.stats.sem(values)) if len(values) >= 2 else None


LEARNER_NAMES = {"impala": "IMPALA", "dqn": "DQN", "sac": "SAC", "planet": "PlaNet"}


def setup_of(config):
    """'2 x 16': the run's workers and environments per worker, from its config.json (None where not kept); the
    learner before them where it is not A3C ('IMPALA 2 x 16')."""
    workers = config.get("run", {}).get("num_workers")
    per_worker = config.get("hyperparameters", {}).get("envs_per_worker")
    algo = config.get("run", {}).get("algo", "a3c")
    learner = "" if algo == "a3c" else LEARNER_NAMES.get(algo, algo) + " "
    return f"{learner}{workers} x {per_worker}" if workers and per_worker else None


def weight_of(config):
    """'prediction_beta 0.002': what weighs the run's bonus against the reward, from its config.json (None for no
    bonus, or where not kept): prediction_beta, except for the bonuses int_coef weighs instead; int_coef too on the
    two-stream path; 'normalised' where each step's bonus was divided by its running deviation first (the memory
    bonuses only: the others ignore normalise_bonus)."""
    unsup = config.get("run", {}).get("unsup")
    weights = config.get("hyperparameters", {})
    if unsup in (None, "none") or "prediction_beta" not in weights:
        return None
    int_coef_only = unsup in constants.INT_COEF_BONUSES
    parts = [] if int_coef_only else [f"prediction_beta {weights['prediction_beta']:g}"]
    if int_coef_only or weights.get("two_streams"):
        parts.append(f"int_coef {weights['int_coef']:g}")
    if weights.get("normalise_bonus") and unsup in constants.NORMALISED_BONUSES:
        parts.append("normalised")
    return ", ".join(parts)


def method_label(method, task):
    """How the report names a method on `task`: on the paper's tasks its names (A3C: A3C without a bonus); on
    MiniGrid's, which any learner may run, the method `a3c` is the learner with no bonus (the set-up names the
    learner)."""
    return "no bonus" if method == "a3c" and task_spec(task).get("returns") else METHOD_LABELS[method]


def over_seeds(runs, key, milestones):
    """{milestone: the mean, its standard error, lowest and highest of the runs' run[key][milestone] over the runs
    that got there, and how many did; None where none did}."""
    at = {}
    for milestone in milestones:
        values = [run[key].get(str(milestone)) for run in runs]
        values = [value for value in values if value is not None]
        at[str(milestone)] = ({"mean": float(np.mean(values)), "error": standard_error(values), "min": min(values),
                               "max": max(values), "seeds": len(values)} if values else None)
    return at


def finished(run):
    """Whether a run reached its step budget: one still short of it (going, or paused between sittings) is shown
    but is not yet a seed of the verdict. A row without a budget (an earlier report's) counts as finished."""
    return not run.get("budget") or run.get("global_step", 0) >= run["budget"]


def seeds_summary(seeds):
    """What both kinds of method summary say of a method's seeds (how many, how many run to their budget, their
    set-ups), and the seeds run to their budget, the only ones whose outcome the summaries count."""
    runs = [run for run in seeds.values() if finished(run)]  # a run short of its budget has not failed yet
    return runs, {"seeds": seeds, "runs": len(seeds), "runs_finished": len(runs),
                  "setups": sorted({run["setup"] for run in seeds.values() if run.get("setup")})}


def evaluations_by(runs, measure, policy="greedy"):
    """The evaluations of `runs` by `policy` that measured `measure`."""
    evaluations = [run.get(f"{policy}_eval") or {} for run in runs]
    return [e for e in evaluations if e.get("episodes") and e.get(measure) is not None]


def method_summary(seeds, milestones, policy="greedy"):
    """What a method's seeds did together: the mean, min and max success at each milestone over the seeds
    that got there; over the seeds run to their budget, how many solved (first window, and for good), the median
    steps to either, and the evaluations of the task's `policy` (greedy; MiniGrid's sampled) pooled."""
    at = over_seeds(list(seeds.values()), "success_at", milestones)
    runs, summary = seeds_summary(seeds)
    evaluations = evaluations_by(runs, "success_rate", policy)
    returns = over_seeds([run for run in seeds.values() if "return_at" in run], "return_at", milestones)
    cells = over_seeds([run for run in seeds.values() if "cells_at" in run], "cells_at", milestones)
    bonuses = over_seeds([run for run in seeds.values() if "bonus_at" in run], "bonus_at", milestones)
    return {**summary, "success_at": at, "return_at": returns, "cells_at": cells, "bonus_at": bonuses,
            "mean_success_at": {m: (v["mean"] if v else None) for m, v in at.items()},
            "runs_solved": sum(run.get("first_solved") is not None for run in runs),
            "runs_sustained": sum(run.get("sustained_from") is not None for run in runs),
            "median_first_solved": median_or_none([run.get("first_solved") for run in runs]),
            "median_sustained_from": median_or_none([run.get("sustained_from") for run in runs]),
            "runs_reached_vest": sum(run["reached_vest"] for run in runs),
            "runs_at_level": sum(run.get("level_from") is not None for run in runs),
            "median_level_from": median_or_none([run.get("level_from") for run in runs]),
            "greedy": ({"successes": int(round(sum(e["success_rate"] * e["episodes"] for e in evaluations))),
                        "episodes": sum(e["episodes"] for e in evaluations)} if evaluations else None)}


def distance_method_summary(seeds, milestones, policies):
    """A method's seeds measured by distance: the mean, lowest and highest of the seeds' distances at each
    milestone (over the seeds that got there), the farthest any episode went, and the mean of each of the
    `policies`' evaluations (of the seeds run to their budget)."""
    at = over_seeds(list(seeds.values()), "distance_at", milestones)
    runs, summary = seeds_summary(seeds)
    farthest = [run["farthest"] for run in seeds.values() if run.get("farthest") is not None]
    bonuses = over_seeds([run for run in seeds.values() if "bonus_at" in run], "bonus_at", milestones)
    return {**summary, "distance_at": at, "bonus_at": bonuses, "farthest": max(farthest) if farthest else None,
            "goals": sum(run.get("goals", 0) for run in runs), "episodes": sum(run["episodes"] for run in runs),
            "seeds_with_goals": sum(run.get("goals", 0) > 0 for run in runs),
            **{policy: pooled_distance(evaluations_by(runs, "mean_distance", policy))
               for policy in policies}}


def pooled_distance(evaluations):
    """The mean distance over every episode of `evaluations`, its standard error (where each kept its episodes),
    and how many; None without any."""
    episodes = sum(e["episodes"] for e in evaluations)
    distances = [episode_distances(e) for e in evaluations]
    return {"mean_distance": sum(e["mean_distance"] * e["episodes"] for e in evaluations) / episodes,
            "error": None if None in distances else standard_error(sum(distances, [])),
            "episodes": episodes} if evaluations else None


def episode_distances(evaluation):
    """The distance of each episode of an evaluation (demo.py's summary), None where it did not keep them all."""
    details = evaluation.get("episode_details") or []
    distances = [episode.get("distance") for episode in details]
    return distances if len(distances) == evaluation.get("episodes") and None not in distances else None


def evaluation_error(evaluation):
    """The standard error of an evaluation's mean distance, None where it did not keep its episodes."""
    distances = episode_distances(evaluation or {})
    return standard_error(distances) if distances else None


def distance_verdict(task, methods):
    """Whether the paper's distance on `task` is reproduced, by PAPER_DISTANCE's criterion, at its step."""
    paper = PAPER_DISTANCE[task]
    not_judged = unjudged(methods)
    if not_judged:
        return not_judged
    icm_at, a3c_at = (methods[method]["distance_at"].get(str(paper["at"])) for method in ("icm", "a3c"))
    if icm_at is None or a3c_at is None or min(icm_at["seeds"], a3c_at["seeds"]) < SEEDS_TO_JUDGE:
        return {"verdict": "not judged", "why": f"{SEEDS_TO_JUDGE} seeds of each must reach {short(paper['at'])} "
                                                "steps"}
    why = (f"at {short(paper['at'])} the ICM's seeds went {icm_at['mean']:.0f} on average (A3C's "
           f"{a3c_at['mean']:.0f}); the paper's {paper['distance']:.0f} +- {paper['error']:.0f}")
    if icm_at["mean"] < paper["distance"] - paper["error"] or icm_at["mean"] <= a3c_at["mean"]:
        return {"verdict": "not reproduced", "why": why}
    return {"verdict": "beaten" if icm_at["mean"] > paper["distance"] + paper["error"] else "reproduced", "why": why,
            "lead": lead_over_a3c(methods, paper["at"])}


def lead_over_a3c(methods, step):
    """The ICM's lead over A3C at `step`, over their seeds (each seed's mean over its last WINDOW episodes, one
    value a seed): the difference of the means, its standard error, Welch's t-test; and how many episodes of each
    reached the goal (Mario's flag), in how many seeds."""
    import scipy.stats  # here, not at the top: see standard_error

    icm, a3c = (seeds_at(methods[method], "distance_at", step) for method in ("icm", "a3c"))
    goals = {method: {key: methods[method].get(key) for key in ("goals", "episodes", "seeds_with_goals",
                                                                 "runs_finished")} for method in ("icm", "a3c")}
    return {**welch(icm, a3c), "goals": goals}


def seeds_at(summary, key, step):
    """A method's value of run[key] at `step`, one a seed run to its budget that got there."""
    return [run[key][str(step)] for run in summary["seeds"].values()
            if finished(run) and run.get(key, {}).get(str(step)) is not None]


def welch(first, second):
    """The difference of two groups' means (one value a seed), its standard error and Welch's t-test; t and p None
    where the seeds do not vary (or a group has one seed): there is nothing to test."""
    import scipy.stats  # here, not at the top: see standard_error

    error = (float(np.sqrt(np.var(first, ddof=1) / len(first) + np.var(second, ddof=1) / len(second)))
             if min(len(first), len(second)) >= 2 else 0.0)
    test = scipy.stats.ttest_ind(first, second, equal_var=False) if error > 0 else None
    return {"difference": float(np.mean(first) - np.mean(second)), "error": error,
            "t": float(test.statistic) if test else None, "p": float(test.pvalue) if test else None,
            "seeds": [len(first), len(second)]}


def against_best(methods, step):
    """On a task measured by its return (MiniGrid's): the method whose seeds' mean return at `step` is highest,
    over the methods with SEEDS_TO_JUDGE seeds run to their budget there, against each other such method: the
    difference of the means, its standard error and Welch's t-test (welch). None where fewer than two such."""
    returns = {method: seeds_at(summary, "return_at", step) for method, summary in methods.items()}
    judged = {method: values for method, values in returns.items() if len(values) >= SEEDS_TO_JUDGE}
    if len(judged) < 2:
        return None
    best = max(judged, key=lambda method: np.mean(judged[method]))
    others = {method: welch(judged[best], values) for method, values in judged.items() if method != best}
    tested = [method for method, test in others.items() if test["p"] is not None]
    for method, adjusted in zip(tested, holm([others[method]["p"] for method in tested])):
        others[method]["p_holm"] = adjusted
    return {"step": step, "best": best, "mean": float(np.mean(judged[best])), "others": others}


def holm(p_values):
    """Holm's step-down adjustment of a family of p-values (Holm 1979), in their order: the i-th smallest times the
    m - i + 1 not yet rejected, never below the one before it, at most 1. A best method tested against each of the
    others makes m tests, and one of them clears 5% by chance more often than one test does. Written out: scipy
    adjusts only for the false discovery rate (false_discovery_control), and statsmodels is not a dependency."""
    order = sorted(range(len(p_values)), key=lambda index: p_values[index])
    adjusted, running = [None] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def lead_line(lead):
    """The line under Mario's verdict: the ICM's lead over A3C with its test, and the flags."""
    icm, a3c = lead["goals"]["icm"], lead["goals"]["a3c"]
    if lead["p"] is None:
        tested = "the seeds do not vary: no test to give)"
    else:
        separated = ("separate the means at the 5% level" if lead["p"] < 0.05 else
                     "do not separate the means at the 5% level")
        tested = (f"Welch's t-test over {lead['seeds'][0]} + {lead['seeds'][1]} seeds: t = {lead['t']:.2f}, p = "
                  f"{lead['p']:.2f}): {lead['seeds'][0]} seeds a method {separated}")
    return (f"The ICM's lead over A3C: {lead['difference']:.0f} +- {lead['error']:.0f} (difference of the seeds' "
            f"means +- its standard error; {tested}. The flag: "
            f"reached in {icm['goals']:,} of {icm['episodes']:,} ICM episodes ({icm['seeds_with_goals']} of "
            f"{icm['runs_finished']} seeds), {a3c['goals']:,} of {a3c['episodes']:,} A3C episodes "
            f"({a3c['seeds_with_goals']} of {a3c['runs_finished']} seeds).")


def median_or_none(values):
    values = [value for value in values if value is not None]
    return int(np.median(values)) if values else None


def unjudged(methods):
    """Why no verdict can be given over the ICM's and A3C's seeds (too few run to their budget, or of different
    set-ups: workers x environments per worker), as a verdict; None when one can."""
    icm, a3c = methods.get("icm"), methods.get("a3c")
    if icm is None or a3c is None or min(icm["runs_finished"], a3c["runs_finished"]) < SEEDS_TO_JUDGE:
        have = f"{icm['runs_finished'] if icm else 0} ICM and {a3c['runs_finished'] if a3c else 0} A3C seeds"
        short_of = sum(summary["runs"] - summary["runs_finished"] for summary in (icm, a3c) if summary)
        have += f" run to their budget ({short_of} more short of it)" if short_of else ""
        return {"verdict": "not judged", "why": f"{have}; {SEEDS_TO_JUDGE} of each are needed"}
    mixed = [METHOD_LABELS[method] for method in ("icm", "a3c") if len(methods[method].get("setups", [])) > 1]
    if mixed:
        return {"verdict": "not judged", "why": f"the {' and '.join(mixed)} seeds differ in workers x environments "
                                                f"per worker; seeds of one set-up are needed"}
    return None


def verdict(task, methods):
    """Whether the paper's result on `task` is reproduced, by the criterion PAPER states: a majority of the ICM's
    seeds solved for good by the paper's step ("beaten" where by BEATEN of it), and, as the paper's A3C was not
    solved by then on any task, a majority of A3C's seeds not solved by then either. Not judged while unsolved ICM seeds whose budgets end before
    the paper's step could make that majority. None for a task the paper did not run."""
    paper = PAPER.get(task)
    if paper is None:
        return None
    not_judged = unjudged(methods)
    if not_judged:
        return not_judged
    icm, a3c = methods["icm"], methods["a3c"]

    def solved_by(summary, step):
        return sum(1 for run in summary["seeds"].values()
                   if finished(run) and run.get("sustained_from") is not None and run["sustained_from"] <= step)

    def stopped_short(summary, step):
        """The seeds run to a budget short of `step` without being solved: they might still have been by then (not
        a row without a budget, an earlier report's: nothing says how far it went, nor can it be run on)."""
        return [run for run in summary["seeds"].values()
                if finished(run) and run.get("sustained_from") is None and (run.get("budget") or step) < step]

    def stopped_at(runs):
        return short(max(run["budget"] for run in runs))

    majority = icm["runs_finished"] // 2 + 1
    icm_solved, icm_soon = solved_by(icm, paper["by"]), solved_by(icm, int(BEATEN * paper["by"]))
    a3c_solved = solved_by(a3c, paper["by"])
    why = (f"ICM solved for good by {short(paper['by'])} in {icm_solved} of {icm['runs_finished']} seeds "
           f"(by {short(int(BEATEN * paper['by']))} in {icm_soon}); A3C in {a3c_solved} of {a3c['runs_finished']}")
    a3c_short = stopped_short(a3c, paper["by"])
    if a3c_short:
        why += f" ({len(a3c_short)} of them run to {stopped_at(a3c_short)} only)"
    a3c_at = a3c.get("success_at", {}).get(str(paper["by"]))
    if a3c_at:
        why += (f", its success at {short(paper['by'])} {rate(a3c_at['min'])}-{rate(a3c_at['max'])} (the paper's "
                f"A3C: {paper['a3c_level']:g})")
    if a3c_solved >= a3c["runs_finished"] // 2 + 1:
        return {"verdict": "not reproduced", "why": why + ": A3C learned what the paper's did not"}
    if icm_solved < majority:
        icm_short = stopped_short(icm, paper["by"])
        if icm_solved + len(icm_short) >= majority:  # the seeds that stopped early decide: run them on
            return {"verdict": "not judged", "why": f"{why}; {len(icm_short)} unsolved ICM seeds stopped at "
                                                    f"{stopped_at(icm_short)}, short of the paper's "
                                                    f"{short(paper['by'])}: run them on to it"}
        return {"verdict": "not reproduced", "why": why}
    return {"verdict": "beaten" if icm_soon >= majority else "reproduced", "why": why,
            "differs": differences(task, icm)}


def differences(task, icm):
    """What differs from the paper's figure besides the method, for the line under a verdict."""
    setups = ", ".join(icm.get("setups") or []) or "not kept"
    return (f"set-up {setups} here, {PAPER_SETUP} in the paper; starts: {PAPER_STARTS.get(task, 'as the paper')}; "
            f"{PAPER_STEPS}")


def find_runs(folder):
    """{run name: its folder} of the study's runs directly under `folder`."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return {name: os.path.join(folder, name) for name in names
            if parse_run_name(name) and os.path.isdir(os.path.join(folder, name))}


def machine():
    return f"{platform.node() or 'unknown host'}, {os.cpu_count()} cores"


def archive_run(log_dir, archive, reached, evaluations):
    """Keep what the report needs of a run in `archive` (a small folder that plots.py reads as a log dir): its episodes
    (the report's columns), an even sample of its positions, config.json, and run.json (the global step reached, the
    evaluations, {policy: demo.py's summary or None}, each as <policy>_eval, the machine). The run's own folder holds
    checkpoints and lives outside the repository, on one machine; the archive goes with the report, so runs made in
    other sittings and on other machines stay in the tables and the figures. `reached`: the run's global step
    (reached_step). Whether it archived the run: not where the report already holds it further (and keeps that)."""
    kept = logdir.read_json(os.path.join(archive, "run.json")) or {}
    if kept.get("global_step", 0) > reached:
        print(f"{os.path.basename(log_dir)}: the report already holds this run to step {kept['global_step']:,}, "
              f"further than {log_dir} ({reached:,}); keeping that", file=sys.stderr)
        return False
    os.makedirs(archive, exist_ok=True)
    for name in (ARCHIVED_EPISODES, ARCHIVED_POSITIONS):  # an earlier version's plain copy would be read twice
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(archive, name.removesuffix(".gz")))
    episodes = logdir.episode_rows(log_dir, "global_step")
    write_rows(os.path.join(archive, ARCHIVED_EPISODES), ARCHIVED_EPISODE_COLUMNS, episodes)
    visits = visit_sample(log_dir, reached)
    sittings = read_sittings(log_dir)
    if visits:
        write_rows(os.path.join(archive, ARCHIVED_POSITIONS), ("x", "y"), visits)
    summaries = summary_sample(logdir.event_scalars(log_dir, EPISODE_TAGS), logdir.summary_rows(archive))
    if summaries:
        write_rows(os.path.join(archive, ARCHIVED_SUMMARIES), logdir.SUMMARY_COLUMNS, summaries)
    config = logdir.read_json(os.path.join(log_dir, "config.json"))
    if config is not None:
        logdir.write_json_atomically(os.path.join(archive, "config.json"), config)
    run = {"global_step": reached}
    for policy, evaluation in evaluations.items():
        # an earlier evaluation stands only for the step it was made at: not beside a run that has gone on since
        key = f"{policy}_eval"
        run[key] = evaluation or (kept.get(key) if kept.get("global_step") == reached else None)
    logdir.write_json_atomically(os.path.join(archive, "run.json"), {
        **run, "machine": last_machine(sittings) or kept.get("machine") or machine(),
        "sittings": sittings or kept.get("sittings")})
    return True


def summary_sample(series, archived=(), points=ARCHIVED_SUMMARY_POINTS):
    """Rows (logdir.SUMMARY_COLUMNS) of each (source, tag) series of event_scalars, by global step, cut into at
    most `points` runs of consecutive summaries, each the mean of its values at its last step. `archived`: the rows
    an earlier sitting archived; those of a series below its first step here are kept (a sitting on another machine,
    from a carried checkpoint, has only its own events)."""
    rows = []
    for (source, tag), (steps, values) in sorted(series.items()):
        order = np.argsort(steps, kind="stable")
        steps, values = np.asarray(steps)[order], np.asarray(values, float)[order]
        rows += [row for row in archived if row["source"] == source and row["tag"] == tag
                 and int(row["global_step"]) < steps[0]]
        for chunk_steps, chunk_values in zip(np.array_split(steps, min(points, len(steps))),
                                             np.array_split(values, min(points, len(steps)))):
            rows.append({"source": source, "tag": tag, "global_step": int(chunk_steps[-1]),
                         "value": f"{chunk_values.mean():.6g}"})
    kept = {(source, tag) for source, tag in series}
    return rows + [row for row in archived if (row["source"], row["tag"]) not in kept]


def evenly(rows, count):
    """`count` of `rows` spread evenly over them (all of them if fewer)."""
    if count <= 0 or not rows:
        return []
    return [rows[i] for i in np.linspace(0, len(rows) - 1, min(len(rows), count)).astype(int)]


def visit_sample(log_dir, reached):
    """At most ARCHIVED_VISITS of the run's logged positions, spread evenly over its steps. A run restored from a
    carried checkpoint has only its archive's sample of the positions before it: that sample keeps the share of
    the run's steps it stands for, so the map does not lean to the later sittings."""
    carried_path = os.path.join(log_dir, CARRIED_VISITS)
    own = [row for path in logdir.paths_of(log_dir, "visits*.csv") if path != carried_path
           for row in logdir.read_rows(path)]
    carried = logdir.read_rows(carried_path) if os.path.exists(carried_path) else []
    carried_step = (logdir.read_json(os.path.join(log_dir, CARRIED_FROM)) or {}).get("step", 0)
    share = min(1.0, carried_step / reached) if carried and own and reached else 1.0 if carried else 0.0
    kept = evenly(carried, round(ARCHIVED_VISITS * share))
    return kept + evenly(own, ARCHIVED_VISITS - len(kept))


def run_config(log_dir):
    """The run's config.json ({} without one)."""
    return logdir.read_json(os.path.join(log_dir, "config.json")) or {}


def budget_of(config):
    """A run's max_global_steps, from its config (None without one)."""
    return config.get("hyperparameters", {}).get("max_global_steps")


def reached_budget(folder, step):
    """Whether the run whose config.json is in `folder` (its log dir or its archive) reached its budget at `step`."""
    return finished({"budget": budget_of(run_config(folder)), "global_step": step})


def checkpoint_step(log_dir):
    """The global step of the run's latest checkpoint (its name, model.ckpt-<step>), or None."""
    prefix, _ = logdir.latest_checkpoint(log_dir)
    match = re.search(r"-(\d+)$", prefix or "")
    return int(match[1]) if match else None


def carry_checkpoint(log_dir, archive, carry, reached):
    """A run short of its budget carries its latest checkpoint in its archive when `carry` says (--carry), in place
    of the one it carried before, so that a sitting on another machine resumes it (restore_carried); a run that
    `reached` its budget carries none. The step carried, or None. Not while the run goes: its saver deletes old
    checkpoints as it writes new ones."""
    carried = os.path.join(archive, CARRIED)
    budget = budget_of(run_config(log_dir))
    if budget is not None and reached >= budget:
        shutil.rmtree(carried, ignore_errors=True)
        return None
    prefix, _ = logdir.latest_checkpoint(log_dir)
    if not carry or prefix is None or train.run_processes(log_dir):
        return None
    staging = carried + ".new"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    name = os.path.basename(prefix)
    for entry in os.listdir(os.path.dirname(prefix)):  # the variables; not the graph (.meta), which a run rebuilds
        if entry == name + ".index" or entry.startswith(name + ".data-"):
            shutil.copy2(os.path.join(os.path.dirname(prefix), entry), staging)
    with open(os.path.join(staging, "checkpoint"), "w") as handle:
        handle.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')
    shutil.rmtree(carried, ignore_errors=True)
    os.replace(staging, carried)
    return checkpoint_step(archive)


def restore_carried(archive, log_dir):
    """The folder of a run that a sitting on another machine left carried in its archive (carry_checkpoint): the
    checkpoint, config.json, the episodes and positions so far (those logged past the checkpoint set aside, as a
    resumed run sets aside its own) and the sittings, so that train.py resumes it from the checkpoint and its
    archive goes on from the earlier one's. Made aside and moved into place whole. The checkpoint's step."""
    kept = logdir.read_json(os.path.join(archive, "run.json")) or {}
    step = checkpoint_step(archive)
    staging = log_dir.rstrip(os.sep) + ".restoring"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(logdir.checkpoints_dir(archive), logdir.checkpoints_dir(staging))
    shutil.copy2(os.path.join(archive, "config.json"), os.path.join(staging, "config.json"))
    episodes = os.path.join(staging, CARRIED_EPISODES)
    write_plain(archived(archive, ARCHIVED_EPISODES), episodes)
    logdir.set_aside_rows_after(episodes, step, staging)
    if archived(archive, ARCHIVED_POSITIONS):
        write_plain(archived(archive, ARCHIVED_POSITIONS), os.path.join(staging, CARRIED_VISITS))
    logdir.write_json_atomically(os.path.join(staging, CARRIED_FROM), {
        "step": step, "archived_step": kept.get("global_step"), "machine": kept.get("machine")})
    write_sittings(log_dir, kept.get("sittings") or [])
    os.replace(staging, log_dir)
    return step


def last_machine(sittings):
    """The machine of a run's latest sitting, or None (a run launched before sittings named their machine): a
    run made afresh where an earlier one's archive was is not that run's machine."""
    return next((sitting["machine"] for sitting in reversed(sittings or []) if sitting.get("machine")), None)


def write_rows(path, columns, rows):
    """A CSV of `rows`; compressed where `path` ends with .gz, with no time in its header, so that the same rows
    archived again make the same bytes (nothing for git to see)."""
    with open(path, "wb") as raw, (gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.endswith(".gz")
                                   else contextlib.nullcontext(raw)) as binary:
        handle = io.TextIOWrapper(binary, newline="")
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        handle.flush()
        handle.detach()


def archived(archive, name):
    """The archive's file `name`, compressed or (an archive of an earlier version) not; None where neither is."""
    for path in (os.path.join(archive, name), os.path.join(archive, name.removesuffix(".gz"))):
        if os.path.exists(path):
            return path
    return None


def write_plain(source, path):
    """`source`, compressed or not, as plain text at `path` (a run's folder holds plain CSVs: its workers append)."""
    with (gzip.open(source, "rb") if source.endswith(".gz") else open(source, "rb")) as read, open(path, "wb") as out:
        shutil.copyfileobj(read, out)


def evaluate(log_dir, episodes, out, policy="greedy"):
    """demo.py's evaluation of the run's final checkpoint by `policy` (greedy or sampled; cached by checkpoint);
    its summary, or None while the run is still going."""
    checkpoint_index = os.path.join(log_dir, "train", "checkpoint")
    if episodes <= 0 or not os.path.exists(checkpoint_index) or train.run_processes(log_dir):
        return None
    summary_path = os.path.join(out, "summary.json")
    stamp = os.path.getmtime(checkpoint_index)
    cached = logdir.read_json(summary_path) if os.path.exists(summary_path) else None
    if (cached and os.path.getmtime(summary_path) > stamp and cached.get("episodes") == episodes
            and cached.get("random_start") == constants.EVAL_RANDOM_START
            and cached.get("policy", "greedy") == policy):
        return cached
    if cached:  # of an older checkpoint or another way of evaluating: not to be read back if this one fails
        os.remove(summary_path)
    return run_demo(["--log-dir", log_dir, *policy_flags(policy), "--episodes", str(episodes), "--random-start",
                     str(constants.EVAL_RANDOM_START)], out, f"{policy} evaluation of {log_dir}")


def policy_flags(policy):
    """demo.py's flags for an evaluation `policy`: greedy, or sampled (its default)."""
    return ["--greedy"] if policy == "greedy" else []


def evaluations_of(task):
    """The policies `task`'s final checkpoints are evaluated by, the last the one its video plays."""
    return task_spec(task)["evaluations"]


def video_policy(task):
    """The policy `task`'s videos play, and their seeds are ranked by: its last evaluation's."""
    return evaluations_of(task)[-1]


def evaluation_dir(eval_dir, name, policy):
    """Where `name`'s evaluation by `policy` is made and kept (the greedy one where it always was)."""
    return os.path.join(eval_dir, name if policy == "greedy" else f"{name}-{policy}")


def run_demo(flags, out, what):
    """demo.py with `flags`, writing into `out`: its summary, or None after a line saying that `what` failed."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "demo.py"), *flags, "--out", out],
                            capture_output=True, text=True, cwd=ROOT)
    summary = logdir.read_json(os.path.join(out, "summary.json"))
    if result.returncode != 0 or not summary:
        print(f"{what} failed: {(result.stderr or result.stdout).strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return summary


def play_random(out, report_dir, task, episodes):
    """demo.py --random on `task` for `episodes` episodes, its summary (every episode) kept in the report, once."""
    kept = os.path.join(report_dir, task, RANDOM_BASELINE)
    if episodes <= 0 or os.path.exists(kept):
        return
    scratch = os.path.join(out, "random", task)
    print(f"{task}: a random agent, {episodes} episodes (the baseline)", flush=True)
    seed = random_seed(task)
    summary = run_demo(["--log-dir", scratch, "--random", "--env-id", task, "--episodes", str(episodes),
                        "--seed", str(seed)], scratch, f"the random agent on {task}")
    if not summary:
        return
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    logdir.write_json_atomically(kept, {**summary, "seed": seed})


def record_videos(report_dir, evaluated):
    """A video per task and method from the game's frames, of the seed whose final checkpoint evaluated best
    (`evaluated`: {run name: (log dir, its global step, its evaluations {policy: summary or None})}) by the task's video
    policy (evaluations_of's last): one such episode begun with random actions, as the evaluations are. Made again when
    that seed, its step or the policy changes; a task and method with no evaluated run here (their folders on another
    machine) keep the video they have. Only runs at their budget: one stopped short of it is not yet the method's
    policy; and a kept video of a seed at its budget that evaluated better than the best here (its folder elsewhere)
    stands."""
    best = {}
    for name, (log_dir, step, evaluations) in evaluated.items():
        task, method, seed = parse_run_name(name)
        evaluation = evaluations.get(video_policy(task))
        if evaluation is None or not reached_budget(log_dir, step):
            continue
        score = video_score(task, seed, evaluation)
        if (task, method) not in best or score > best[task, method][0]:
            best[task, method] = score, name, seed, log_dir, step
    for (task, method), (score, name, seed, log_dir, step) in sorted(best.items()):
        stem = os.path.join(report_dir, task, VIDEO.format(method))
        kept, policy = logdir.read_json(stem + ".json") or {}, video_policy(task)
        same_policy = kept.get("policy", "greedy") == policy  # videos from before the policy was kept: greedy
        if (kept.get("run") == name and kept.get("global_step") == step and same_policy
                and os.path.exists(stem + ".mp4")):
            continue
        if kept.get("run") not in (None, name) and same_policy and kept_video_score(report_dir, kept["run"]) > score:
            continue
        print(f"{name}: a video of one {policy} episode", flush=True)
        flags = ["--log-dir", log_dir, *policy_flags(policy), "--episodes", "1", "--random-start",
                 str(constants.EVAL_RANDOM_START), "--record", "--video-quality", VIDEO_QUALITY]
        with tempfile.TemporaryDirectory() as scratch:
            summary = run_demo(flags, scratch, f"the video of {name}")
            if not summary:
                continue
            os.makedirs(os.path.dirname(stem), exist_ok=True)
            shutil.move(summary["episode_details"][0]["video"], stem + ".mp4")
        episode = {key: summary["episode_details"][0].get(key)
                   for key in ("length", "random_steps", "success", "distance", "reward")}
        logdir.write_json_atomically(stem + ".json", {
            "run": name, "seed": seed, "global_step": step, "policy": policy,
            "checkpoint": summary.get("checkpoint"),
            "episode": episode, "command": " ".join(["demo.py", flags[0], f"<out>/runs/{name}", *flags[2:]])})


def video_score(task, seed, evaluation):
    """How record_videos ranks a seed: its evaluation's measure (by the video's policy), then the lower seed."""
    return ((evaluation or {}).get(EVALUATION_MEASURE[task_spec(task)["measure"]]) or 0.0, -seed)


def kept_video_score(report_dir, name):
    """The video_score of the run a kept video shows, from its archive; the lowest unless the archive says the
    run reached its budget."""
    archive = os.path.join(report_dir, "runs", name)
    kept = logdir.read_json(os.path.join(archive, "run.json"))
    if not kept or not reached_budget(archive, kept["global_step"]):
        return (float("-inf"),)
    task, _, seed = parse_run_name(name)
    return video_score(task, seed, kept.get(f"{video_policy(task)}_eval"))


def report(out, report_dir, milestones, eval_episodes, eval_dir=None, random_episodes=0, videos=False, carry=False,
           time_up=False):
    """Figures, tables and JSON of every run in <out>/runs and every run the report dir already holds (from
    other sittings or machines: its runs/ archives, and the rows of an earlier results.json); the results. With
    `videos`, a video per task and method (record_videos); with `carry`, each unfinished run's latest checkpoint
    in its archive (carry_checkpoint). With `time_up` (the sitting's --stop-after has passed), only what cannot
    wait: no greedy evaluation of a run short of its budget and no random agent (a later report makes them; on
    Mario they take many minutes), but the evaluation of a run at its budget, whose folder may not outlive the
    sitting."""
    eval_dir = eval_dir or os.path.join(out, "eval")
    evaluated, deferred = {}, []
    for name, log_dir in find_runs(os.path.join(out, "runs")).items():
        step = reached_step(log_dir)
        if step == 0:  # stopped before its first step (a sitting stopped as it began): no seed
            print(f"{name}: not started; left out of the report", file=sys.stderr)
            continue
        at_budget = reached_budget(log_dir, step)
        policies = evaluations_of(parse_run_name(name)[0])
        if time_up and not at_budget and eval_episodes > 0:
            deferred.append(f"the {' and '.join(policies)} evaluation{'s' * (len(policies) > 1)} of {name}")
        evaluations = {policy: evaluate(log_dir, eval_episodes if at_budget or not time_up else 0,
                                        evaluation_dir(eval_dir, name, policy), policy) for policy in policies}
        evaluated[name] = log_dir, step, evaluations
        archive = os.path.join(report_dir, "runs", name)
        if archive_run(log_dir, archive, step, evaluations):
            carried = carry_checkpoint(log_dir, archive, carry, step)
            if carried is not None:
                print(f"{name}: its checkpoint at step {carried:,} carried in {archive} (a sitting on a machine "
                      "without this run's folder resumes it from there)", file=sys.stderr)
    if videos:
        record_videos(report_dir, evaluated)
    found = archived_runs(report_dir)
    if not found and not unarchived_rows(report_dir, found):
        raise plots.PlotError(f"no runs in {os.path.join(out, 'runs')}: run the study first")
    figure = plot_tasks(found, report_dir)
    for task in found:
        if time_up and random_episodes > 0 and not os.path.exists(os.path.join(report_dir, task, RANDOM_BASELINE)):
            deferred.append(f"the random agent on {task}")
        play_random(out, report_dir, task, 0 if time_up else random_episodes)
    if deferred:
        print(f"the time is up: {', '.join(deferred)} left to the next report (the same command, or --report-only)",
              file=sys.stderr)
    results = summarise(report_dir, milestones)
    results["figure"] = {"file": FIGURE, **(figure or {"panels": None})}
    logdir.write_json_atomically(os.path.join(report_dir, "results.json"), results)
    with open(os.path.join(report_dir, "results.md"), "w") as handle:
        handle.write(markdown(results))
    return results


def archived_runs(report_dir):
    """{task: {method: {seed: archive folder}}} of the runs the report holds."""
    found = {}
    for name, archive in find_runs(os.path.join(report_dir, "runs")).items():
        task, method, seed = parse_run_name(name)
        found.setdefault(task, {}).setdefault(method, {})[seed] = archive
    return found


def unarchived_rows(report_dir, found):
    """{task: {method: {seed: summary}}}: the rows of the report's results.json whose runs have no archive
    (their episodes were never kept), so they stay in the tables."""
    earlier = logdir.read_json(os.path.join(report_dir, "results.json")) or {}
    rows = {}
    for task, methods in earlier.get("tasks", {}).items():
        for method, summary in methods.items():
            for seed, run in summary["seeds"].items():
                if int(seed) not in found.get(task, {}).get(method, {}):
                    rows.setdefault(task, {}).setdefault(method, {})[int(seed)] = run
    return rows


def summarise(report_dir, milestones):
    """The report's numbers, computed from its archives alone (and the rows it holds without one): every table
    of results.md can be recomputed from what is committed."""
    found = archived_runs(report_dir)
    rows = unarchived_rows(report_dir, found)
    for task, methods in found.items():
        for method, seeds in methods.items():
            for seed, archive in seeds.items():
                kept = logdir.read_json(os.path.join(archive, "run.json")) or {}
                summary = run_summary(archive, measured_steps(task, milestones), kept.get("global_step", 0),
                                      task_spec(task)["measure"], RIDE_LEVELS.get(task, {}).get("return"))
                summary.update(log_dir=os.path.relpath(archive, report_dir), machine=kept.get("machine"),
                               sittings=kept.get("sittings"),
                               **{f"{policy}_eval": kept.get(f"{policy}_eval") for policy in evaluations_of(task)})
                rows.setdefault(task, {}).setdefault(method, {})[seed] = summary
    results = {"window": WINDOW, "solved_at": SOLVED, "sustained_window": SUSTAINED_WINDOW,
               "milestones": None if milestones is None else list(milestones), "tasks": {}}
    for task in sorted(rows, key=task_order):
        summary_of = (functools.partial(distance_method_summary, policies=evaluations_of(task))
                      if task_spec(task)["measure"] == "distance"
                      else functools.partial(method_summary, policy=video_policy(task)))
        results["tasks"][task] = {
            method: summary_of({str(seed): run for seed, run in sorted(rows[task][method].items())},
                               measured_steps(task, milestones))
            for method in METHODS if method in rows[task]}
    results["compared"] = {task: against_best(methods, max(task_milestones(task, milestones)))
                           for task, methods in results["tasks"].items() if task_spec(task).get("returns")}
    results["verdicts"] = {task: (distance_verdict if task in PAPER_DISTANCE else verdict)(task, methods)
                           for task, methods in results["tasks"].items() if task in PAPER or task in PAPER_DISTANCE}
    results["random"] = {task: random_baseline(report_dir, task) for task in results["tasks"]}
    results["videos"] = {task: kept_videos(report_dir, task) for task in results["tasks"]}
    return results


def kept_videos(report_dir, task):
    """{method: what record_videos wrote beside its video, and the video's file} of the task's videos."""
    videos = {}
    for method in METHODS:
        stem = os.path.join(task, VIDEO.format(method))
        kept = logdir.read_json(os.path.join(report_dir, stem + ".json"))
        if kept and os.path.exists(os.path.join(report_dir, stem + ".mp4")):
            videos[method] = {**kept, "file": stem + ".mp4"}
    return videos


def video_lines(results, task):
    """results.md's line naming the task's videos, and what the episode in each did; none without videos."""
    described, policies = [], set()
    for method, video in results.get("videos", {}).get(task, {}).items():
        policies.add(video.get("policy", "greedy"))
        episode = video["episode"]
        if task_spec(task)["measure"] == "distance":  # its success, where it has one, is the level's end
            outcome = f"went {distance(episode.get('distance'))}" + (
                f" and {envs.success_meaning(task)}" if episode.get("success") else "")
        elif episode.get("success") is not None:
            outcome = "reached the vest" if episode["success"] else "did not reach the vest"
        else:
            outcome = f"went {distance(episode.get('distance'))}"
        described.append(f"[{method_label(method, task)}]({video['file']}) (seed {video['seed']} at "
                         f"{short(video['global_step'])}: after {episode.get('random_steps') or 0} random actions "
                         f"it {outcome} in {episode['length']} steps)")
    if not described:
        return []
    policy = " or ".join(sorted(policies))
    return [f"A {policy} episode of each method's best seed by its {policy} evaluation: {'; '.join(described)}.", ""]


def measured_steps(task, milestones):
    """The steps at which the summaries measure `task`: the tables' (task_milestones), and the paper's step of its
    verdict, where the verdict compares A3C's success with the paper's curve."""
    steps = task_milestones(task, milestones)
    by = PAPER.get(task, {}).get("by")
    return sorted(set(steps) | ({by} if by else set()))


def task_milestones(task, milestones):
    """The tables' steps for `task`: those asked for (None: the task's own), and the step of the paper's figure
    where it gives one."""
    if milestones is None:
        milestones = [parse_steps(step) for step in task_spec(task)["at"]]
    paper_step = PAPER_DISTANCE.get(task, {}).get("at")
    return sorted(set(milestones) | ({paper_step} if paper_step else set()))


def plot_tasks(found, report_dir):
    """plots.py's figures of each task (ICM and A3C on each, the seeds' mean and band), then the tasks side by side
    in FIGURE, as the paper's Figure 5, with the paper's results marked (PAPER_MARKS); that figure's panels ({y
    label: [task, ...]}) and marks."""
    rows = {}
    earlier_tasks = [name for name in os.listdir(report_dir)
                     if os.path.isfile(os.path.join(report_dir, name, plots.CURVES))]
    for task in sorted(set(found) | set(earlier_tasks), key=task_order):
        methods = found.get(task, {})
        groups = {method_label(method, task): [methods[method][seed] for seed in sorted(methods[method])]
                  for method in METHODS if method in methods}
        kept = kept_curves(report_dir, task, groups)
        # cover "any": a seed that is still running must not cut the finished seeds' curves short
        written = plots.make_plots(groups, os.path.join(report_dir, task), WINDOW, kept,
                                   [method_label(method, task) for method in METHODS],
                                   cover="any")
        for ylabel, name in FIGURE_ROWS:
            if name in written:
                rows.setdefault(ylabel, {})[task] = written[name]
        for method in (method for method in METHODS if method in methods):
            plots.summaries_figure({f"seed {seed}": logdir.summary_rows(methods[method][seed])
                                    for seed in sorted(methods[method])},
                                   os.path.join(report_dir, task, SUMMARIES_FIGURE.format(method=method)),
                                   f"{method_label(method, task)} on {task}: the tasks' TensorBoard scalars")
    if not rows:
        return None
    marks = {ylabel: {task: [list(mark) for mark in PAPER_MARKS[task][name]] for task in rows[ylabel]
                      if name in PAPER_MARKS.get(task, {})} for ylabel, name in FIGURE_ROWS if ylabel in rows}
    shown = {ylabel: plots.success_label(rows[ylabel]) for ylabel, name in FIGURE_ROWS
             if name == "success_vs_steps.png" and ylabel in rows}  # tasks are environment ids
    return {"panels": plots.panels_figure(rows, os.path.join(report_dir, FIGURE), marks, shown), "paper": marks}


def kept_curves(report_dir, task, groups):
    """The curves of the task's earlier figures whose runs the report no longer has (no archive: their folders
    were lost with an earlier machine), so that they stay in the figures: {figure: {label: data}}."""
    earlier = logdir.read_json(os.path.join(report_dir, task, plots.CURVES)) or {}
    kept = {name: {label: curve for label, curve in data.items() if label not in groups}
            for name, data in earlier.items() if name.endswith(("_vs_steps.png", "_vs_time.png"))}
    kept.update({name: data for name, data in earlier.items()  # a map's picture stays as it was drawn
                 if name.startswith("visits_") and name not in {plots.visits_name(label) for label in groups}})
    return kept


def task_order(task):
    """The paper's order (dense, sparse, very sparse), then any other task by name."""
    known = ["doom", "doomSparse", "doomVerySparse"]
    return (known.index(task), "") if task in known else (len(known), task)


def short(steps):
    return f"{steps / 1e6:.3g}M" if steps >= 10 ** 6 else f"{steps / 1e3:.0f}k"


def steps_cell(run):
    """The steps a run got to, and its budget where it has not got there yet (a run still going on)."""
    budget = run.get("budget")
    return short(run["global_step"]) + (f" of {short(budget)}" if budget and run["global_step"] < budget else "")


def rate(value):
    """A success rate as its exact decimal where that has 2 or 3 digits (0.25; 0.005, not 0.01), else to 3
    digits: a rate over 100 episodes is exact to 2, a mean over seeds may need a third, and rounding it to 2
    would invent a digit."""
    if value is None:
        return "-"
    for digits in (2, 3):
        if abs(value * 10 ** digits - round(value * 10 ** digits)) < 1e-6:
            return f"{round(value, digits):.{digits}f}"
    return f"{value:.3f}"


def p_text(p):
    """A test's p as the tables print it: three decimals, or below the smallest they show."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def spread(at, shown=rate, error=False):
    """'mean [min-max]' of a milestone's success (or distance, `shown` by `distance`) over the seeds that got
    there, with its standard error ('mean +- error [min-max]') where `error` and 2 or more did; '-' where none did."""
    if at is None:
        return "-"
    text = with_error(at["mean"], at.get("error") if error else None, shown)
    return text if at["min"] == at["max"] else f"{text} [{shown(at['min'])}-{shown(at['max'])}]"


def steps_or_dash(steps):
    return short(steps) if steps else "-"


def greedy_cell(evaluation):
    """The success rate of a greedy evaluation, and how many of its episodes differed, where it says."""
    text = rate(evaluation.get("success_rate"))
    return f"{text} ({evaluation['distinct_episodes']})" if "distinct_episodes" in evaluation else text


def random_baseline(report_dir, task):
    """The random agent's episodes on `task` (demo.py --random's summary, kept in the report), in brief."""
    summary = logdir.read_json(os.path.join(report_dir, task, RANDOM_BASELINE))
    if not summary or not summary.get("episodes"):
        return None
    return {"episodes": summary["episodes"], "success_rate": summary.get("success_rate"),
            "mean_distance": summary.get("mean_distance"), "error": evaluation_error(summary),
            "file": os.path.join(task, RANDOM_BASELINE)}


def markdown(results):
    """results.md: per task, the verdict against the paper, a row per method over its seeds, then a row per
    seed."""
    window, sustained = results["window"], results["sustained_window"]
    by_success = [task for task in results["tasks"] if task_spec(task)["measure"] == "success"]
    goals = sorted({goal_of(task) for task in by_success})
    lines = [] if not by_success else [
             f"Success: the fraction of the last {window} episodes that reached {' or '.join(goals)}, at each "
             "global step "
             f"(`-`: the run did not get there); per method the mean over the seeds that got there, and in brackets "
             f"their lowest and highest. First {SOLVED:.0%}: the first {window} episodes with >= {SOLVED:.0%} "
             f"success. Solved for good: from that step to the end of the run every {sustained:,} episodes in a row "
             f"had >= {SOLVED:.0%} success; steps are the seeds' median over those that got there. Greedy: the "
             f"final checkpoints' greedy evaluations, each episode begun with 0 to {constants.EVAL_RANDOM_START} "
             "random actions (per seed, in brackets, how many episodes took different actions). Seeds: those run to "
             "their budget, which the columns after the milestones count, and those still short of it. Rates are "
             "exact where 2 or 3 digits say them, else given to 3 digits. Set-up: the learner where it is not A3C, and "
             "workers x environments per worker (a method whose seeds differ lists each); on MiniGrid's tasks `no "
             "bonus` is the learner alone. Steps run: `of N` where a run has not reached its budget of "
             "N. Machine: the host and cores of the sitting that last reported the run (`-`: an "
             "earlier report's row, its episodes not kept).", ""]
    for task, methods in results["tasks"].items():
        if task_spec(task)["measure"] == "distance":
            lines += distance_markdown(task, methods, results)
            continue
        lines += [f"### {task}", ""]
        milestones = task_milestones(task, results["milestones"])
        paper, judged = PAPER.get(task), results.get("verdicts", {}).get(task)
        if paper:
            lines += [f"The paper: ICM {paper['icm']}; A3C {paper['a3c']}. **{judged['verdict']}**: "
                      f"{judged['why']}.", ""]
            if judged.get("differs"):
                lines += [f"What differs from the paper: {judged['differs']}.", ""]
        baseline = results.get("random", {}).get(task)
        if baseline:
            lines += [f"A random agent: {rate(baseline['success_rate'])} over {baseline['episodes']} episodes "
                      f"(`{baseline['file']}`).", ""]
        lines += video_lines(results, task)
        lines += ["| method | seeds | set-up | " + " | ".join(short(m) for m in milestones)
                  + f" | first {SOLVED:.0%} | solved for good | reached {goal_of(task)} | {video_policy(task)} |",
                  "|---" * (len(milestones) + 7) + "|"]
        for method, summary in methods.items():
            runs, greedy = summary["runs_finished"], summary.get("greedy")
            lines.append(f"| {method_label(method, task)} | {seeds_cell(summary)} | "
                         f"{', '.join(summary.get('setups') or []) or '-'} | "
                         + " | ".join(spread(summary["success_at"][str(m)]) for m in milestones)
                         + f" | {summary['runs_solved']} of {runs} ({steps_or_dash(summary['median_first_solved'])})"
                         + f" | {summary['runs_sustained']} of {runs} "
                         + f"({steps_or_dash(summary['median_sustained_from'])}) | "
                         + f"{summary['runs_reached_vest']} of {runs} | "
                         + (f"{greedy['successes']} of {greedy['episodes']}" if greedy else "-") + " |")
        lines += extra_tables(task, methods, milestones, window)
        lines += level_lines(task, methods, window)
        lines += compared_lines(task, results.get("compared", {}).get(task), window)
        lines += ["", *seed_table_head(milestones, [f"last {sustained:,}", f"first {SOLVED:.0%}", "solved for good",
                                                    f"{video_policy(task)} (distinct)"])]
        for method, summary in methods.items():
            for seed, run in summary["seeds"].items():
                last = run.get("last_episodes") or {}
                lines.append(seed_row(method_label(method, task), seed, run, [rate(run["success_at"].get(str(m))) for m in milestones] + [
                    rate(last.get("success")), steps_or_dash(run["first_solved"]),
                    steps_or_dash(run.get("sustained_from")),
                    greedy_cell(run.get(f"{video_policy(task)}_eval") or {})]))
        lines += ["", *restart_lines(methods)]
    return "\n".join(lines)


def level_lines(task, methods, window):
    """The table of RIDE's level on a task its Figure 3 has: per method, the seeds run to their budget whose mean
    return reached it, the median step, and when the figure's curve got there."""
    level = RIDE_LEVELS.get(task)
    if not level:
        return []
    lines = ["", f"RIDE's level: the mean return of {level['return']:.2f} that RIDE's Figure {level['panel']} "
                 f"(Raileanu and Rocktaschel 2020) levels off at; a seed reached it when the mean return of its last "
                 f"{window} episodes first came within {LEVEL_READING} of it.", "",
             "| method | seeds that reached it | median step | RIDE's Figure " + level["panel"] + " |", "|---|---|---|---|"]
    for method, summary in methods.items():
        lines.append(f"| {method_label(method, task)} | {summary.get('runs_at_level', 0)} of {summary['runs_finished']} | "
                     f"{steps_or_dash(summary.get('median_level_from'))} | {level['frames'].get(method, 'not run')} |")
    return lines


def compared_lines(task, compared, window):
    """The table of the best method's lead over each other one (against_best); none where it was not judged."""
    if not compared:
        return []
    lines = ["", f"Compared: of the methods with {SEEDS_TO_JUDGE} seeds or more run to their budget, "
                 f"{method_label(compared['best'], task)} had the highest mean return at {short(compared['step'])} "
                 f"({compared['mean']:.3f}: the mean over seeds of each seed's mean over its last {window} episodes). "
                 "Its lead over each other one: the difference of the seeds' means +- its standard error, and "
                 "Welch's t-test; p adjusted by Holm's method for the number of methods it is tested against (the "
                 "best is chosen by the same seeds, which favours a lead further).",
             "", "| against | seeds | lead | t | p | p, Holm's |", "|---|---|---|---|---|---|"]
    for method, test in sorted(compared["others"].items(), key=lambda item: -item[1]["difference"]):
        tested = ([f"{test['t']:.2f}", p_text(test["p"]), p_text(test["p_holm"])] if test["p"] is not None
                  else ["-", "the seeds do not vary: no test", "-"])
        lines.append(f"| {method_label(method, task)} | {test['seeds'][0]} + {test['seeds'][1]} | "
                     f"{test['difference']:.3f} +- {test['error']:.3f} | " + " | ".join(tested) + " |")
    return lines


# The tables under a task's success table: (summary key, title, how a value is shown, which tasks have it): a task
# with "returns" (MiniGrid's) its return and coverage; every task the bonus of each method that has one, on its own
# scale (the ICM's error times prediction_beta, RND's normalised error, ...), to see it grow or fade.
EXTRA_TABLES = (("return_at", "Return: the mean game reward of the last {window} episodes at each global step, over "
                              "the seeds that got there (lowest and highest in brackets).", rate,
                 lambda spec: spec.get("returns")),
                ("cells_at", "Coverage: the distinct cells an episode stepped into, the mean of the last {window} "
                             "episodes at each global step, over the seeds that got there.", lambda v: f"{v:.1f}",
                 lambda spec: spec.get("returns")),
                ("bonus_at", "Bonus: the curiosity bonus an episode earned (its steps' bonuses summed as the learner "
                             "took them, before `int_coef`; each method's on its own scale), the mean of the last "
                             "{window} episodes at each global step, over the seeds that got there.",
                 lambda v: f"{v:,.0f}" if abs(v) >= 100 else f"{v:#.3g}", lambda spec: True))


def extra_tables(task, methods, milestones, window):
    """The task's EXTRA_TABLES, a row per method that has the measure (a method without a bonus has no bonus row);
    a table no method has a value in (an earlier report's rows, their episodes not kept) is left out."""
    lines = []
    for key, title, shown, tasks in EXTRA_TABLES:
        shown_methods = {method: summary for method, summary in methods.items()
                         if key in summary and (key != "bonus_at" or METHODS[method] != NO_BONUS)}
        if not tasks(task_spec(task)) or not any(summary[key][str(m)] for summary in shown_methods.values()
                                                 for m in milestones):
            continue
        lines += ["", title.format(window=window), "", "| method | " + " | ".join(short(m) for m in milestones)
                  + " |", "|---" * (len(milestones) + 1) + "|"]
        for method, summary in shown_methods.items():
            lines.append(f"| {method_label(method, task)} | "
                         + " | ".join(spread(summary[key][str(m)], shown) for m in milestones) + " |")
    return lines


def goal_of(task):
    """What a success task's episodes reach: the vest on Doom."""
    return task_spec(task).get("goal", "the vest")


def seeds_cell(summary):
    """A method's seeds run to their budget, and those short of it (whose milestones count, but not yet the rest)."""
    short_of = summary["runs"] - summary["runs_finished"]
    return f"{summary['runs_finished']}" + (f" (+{short_of} short of budget)" if short_of else "")


def machine_cell(run):
    """The machine a run ran on; where its sittings moved it between machines, each with the step it handed the run
    on at (a run begun on a large machine and finished on a small one is not the small one's alone)."""
    spans = []  # [(machine, the step its first sitting began at)], a new one each time the machine changes
    for sitting in run.get("sittings") or []:
        if sitting.get("machine") and (not spans or spans[-1][0] != sitting["machine"]):
            spans.append((sitting["machine"], sitting.get("from_step") or 0))
    if len(spans) < 2:
        return run.get("machine") or "-"
    handed_on = [f"{machine} to {short(step)}" for (machine, _), (_, step) in zip(spans, spans[1:])]
    return ", then ".join(handed_on + [spans[-1][0]])


def seed_table_head(milestones, columns):
    """The header and rule of a table with a row per seed: whose run, its set-up, how far it ran, the milestones,
    `columns`, its sittings and machine."""
    names = ["method", "seed", "set-up", "bonus weight", "steps run", *(short(m) for m in milestones), *columns,
             "sittings", "machine"]
    return ["| " + " | ".join(names) + " |", "|---" * len(names) + "|"]


def seed_row(label, seed, run, cells):
    return "| " + " | ".join([label, str(seed), run.get("setup") or "-", run.get("weight") or "-", steps_cell(run),
                              *cells, sittings_cell(run), machine_cell(run)]) + " |"


def restart_lines(methods):
    """Under a seed table, a line per sitting in which the supervisor started a process of a run again, and why."""
    lines = []
    for method, summary in methods.items():
        for seed, run in summary["seeds"].items():
            for number, sitting in enumerate(run.get("sittings") or [], 1):
                if sitting.get("restarts"):
                    why = "; ".join(sitting.get("restart_reasons") or []) or "why was not kept then"
                    span = [short(step) if step else "0" for step in (sitting["from_step"], sitting.get("at_step"))]
                    lines.append(f"- {METHOD_LABELS[method]} seed {seed}, sitting {number} ({span[0]} to {span[1]}): "
                                 f"{sitting['restarts']} restart{'s' if sitting['restarts'] > 1 else ''}: {why}")
    return ["Restarts by the supervisor:", "", *lines, ""] if lines else []


def distance(value):
    """A distance in the game's pixels, whole: the mean of such counts has no digit worth showing after them."""
    return "-" if value is None else f"{value:,.0f}"


def with_error(value, error, shown=distance):
    """'value +- error' (its standard error), or the value alone where there is none."""
    return shown(value) if value is None or error is None else f"{shown(value)} +- {shown(error)}"


def episodes(count):
    return f"{count} episode{'' if count == 1 else 's'}"


def distance_markdown(task, methods, results):
    """A task measured by distance (Mario): the verdict, a row per method over its seeds, then a row per seed."""
    milestones, window = task_milestones(task, results["milestones"]), results["window"]
    paper, judged = PAPER_DISTANCE.get(task), results.get("verdicts", {}).get(task)
    policies = evaluations_of(task)
    lines = [f"### {task}", "", f"Distance: the farthest point of the level an episode reached (the game's x, in "
             f"pixels), the mean over the last {window} episodes at each global step (`-`: the run did not get "
             "there); per method the mean over the seeds that got there, in brackets the lowest and highest. "
             "Farthest: of any episode. Greedy, sampled: the final checkpoints' evaluations, the mean distance "
             "over their episodes, each begun with 0 to "
             f"{constants.EVAL_RANDOM_START} random actions, playing the most likely action, or sampling the policy "
             "as in training (of the seeds run to their budget; seeds: those, and those still short of it). +-: "
             "the standard error of the mean, over the seeds (where 2 or more got there) or over the episodes "
             "(taken as independent).", ""]
    if paper:
        lines += [f"The paper: ICM {paper['icm']}; A3C {paper['a3c']}. **{judged['verdict']}**: {judged['why']}.", ""]
        if judged.get("lead"):
            lines += [lead_line(judged["lead"]), ""]
    baseline = results.get("random", {}).get(task)
    if baseline and baseline.get("mean_distance") is not None:
        lines += [f"A random agent: {with_error(baseline['mean_distance'], baseline.get('error'))} over "
                  f"{episodes(baseline['episodes'])} "
                  f"(`{baseline['file']}`).", ""]
    lines += video_lines(results, task)
    lines += ["| method | seeds | set-up | " + " | ".join(short(m) for m in milestones)
              + " | farthest | " + " | ".join(policies) + " |", "|---" * (len(milestones) + 4 + len(policies)) + "|"]
    for method, summary in methods.items():
        pooled = [f"{with_error(e['mean_distance'], e.get('error'))} ({episodes(e['episodes'])})" if e else "-"
                  for e in (summary.get(policy) for policy in policies)]
        lines.append(f"| {METHOD_LABELS[method]} | {seeds_cell(summary)} | {', '.join(summary['setups']) or '-'} | "
                     + " | ".join(spread(summary["distance_at"][str(m)], distance, error=True) for m in milestones)
                     + f" | {distance(summary['farthest'])} | " + " | ".join(pooled) + " |")
    lines += extra_tables(task, methods, milestones, window)
    lines += ["", *seed_table_head(milestones, [f"last {window}", "farthest", *policies])]
    for method, summary in methods.items():
        for seed, run in summary["seeds"].items():
            lines.append(seed_row(METHOD_LABELS[method], seed, run, [distance(run["distance_at"].get(str(m))) for m in milestones] + [
                with_error(run["last_episodes"].get("distance"), run["last_episodes"].get("error")),
                distance(run.get("farthest")), *(evaluation_cell(run.get(f"{policy}_eval")) for policy in policies)]))
    return lines + ["", *restart_lines(methods)]


def evaluation_cell(evaluation):
    """A seed's evaluation: its mean distance, with its standard error where it kept its episodes."""
    return with_error((evaluation or {}).get("mean_distance"), evaluation_error(evaluation))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", nargs="+", default=["doom", "doomSparse", "doomVerySparse"],
                        help="environment ids (train.py --env-id)")
    parser.add_argument("--method", nargs="+", choices=tuple(METHODS), default=PAPER_METHODS,
                        help="icm, a3c (the paper's, the default), rnd (Burda et al. 2018) and the bonuses of "
                             "docs/curiosity.md: ride, e3b, ngu, ngu_rnd, counts, disagreement")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=step_count, default=parse_steps("5M"), help="global steps per run")
    parser.add_argument("--out", required=True, help="the study's folder: runs/ (one log dir per run), eval/")
    parser.add_argument("--workers", type=int, default=2, help="workers per run")
    parser.add_argument("--envs-per-worker", type=int,
                        help="environments per worker (default: the task's preset's: 4 on Doom, 1 on Mario)")
    parser.add_argument("--parallel", type=int, default=1, help="runs at once")
    parser.add_argument("--at", type=step_count, nargs="+",
                        help="global steps of the tables' columns (default: the task's: 1M 2M 3M 5M 7M on Doom, "
                             "250k 500k 1M on Mario, 1M 2M 5M 10M on MiniGrid and 15M too on KeyCorridorS3R3; "
                             "the paper's step is added)")
    parser.add_argument("--eval-episodes", type=int, default=20, help="greedy episodes per final checkpoint (0: none)")
    parser.add_argument("--random-episodes", type=int, default=100,
                        help="episodes of a random agent per task, played once and kept in the report (0: none)")
    parser.add_argument("--no-video", action="store_true", help="no video of each method's best seed")
    parser.add_argument("--report-only", action="store_true", help="no runs: the report of what is there")
    parser.add_argument("--stop-after", type=duration, metavar="DURATION",
                        help="stop the runs after this long (2h30m, 90m, 3600: seconds), with their final "
                             "checkpoints, write the report (leave it some minutes: the greedy evaluations of runs "
                             "that finished; runs short of their budget and the random agent wait for the next "
                             "report) and exit 75, for a machine or a scheduler's job with a time limit; the same "
                             "command goes on from there")
    parser.add_argument("--carry", action="store_true",
                        help="keep the latest checkpoint of each run short of its budget in its archive in the "
                             "report (runs/<run>/train/, a few MB; dropped when the run reaches its budget), so "
                             "that a sitting on a machine without the run's folder resumes it from there: commit "
                             "or copy the report folder between machines")
    parser.add_argument("--report-dir", help="where the report goes (default <out>/report)")
    parser.add_argument("extra", nargs="*", help="more train.py flags for every run, after --")
    args = parser.parse_args(argv)
    too_few = min(args.workers, args.parallel, 1 if args.envs_per_worker is None else args.envs_per_worker) < 1
    if too_few or min(args.eval_episodes, args.random_episodes) < 0:
        parser.error("--workers, --envs-per-worker and --parallel must be >= 1, --eval-episodes and "
                     "--random-episodes >= 0")
    if min(args.seeds) < 0:
        parser.error("--seeds must be >= 0")
    if not args.report_only:  # refused here, not once per run as each run's train.py fails
        for task in args.task:
            try:
                envs.check_env_id(task)
            except envs.EnvError as error:
                parser.error(f"--task: {error}")
    args.out = os.path.abspath(os.path.expanduser(args.out))
    return args


def report_dir_of(args):
    return args.report_dir or os.path.join(args.out, "report")


def main(argv=None):
    args = parse_args(argv)
    failed, time_up = [], None
    try:
        if not args.report_only:
            os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
            try:
                failed = run_all(args)
            except TimeUp as up:
                time_up = up
        report_dir = report_dir_of(args)
        report(args.out, report_dir, args.at, args.eval_episodes, random_episodes=args.random_episodes,
               videos=not args.no_video, carry=args.carry, time_up=time_up is not None)
    except plots.PlotError as error:
        print(f"reproduce.py: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"reproduce.py: error: {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # run_all has stopped the runs with their final checkpoints
        print("reproduce.py: stopped; run the same command again to go on", file=sys.stderr)
        return 128 + getattr(stop, "signum", signal.SIGINT)
    print(f"wrote {os.path.join(report_dir, 'results.md')}, results.json and the figures")
    if time_up:
        print(f"reproduce.py: {time_up}; run the same command again to go on", file=sys.stderr)
        return EXIT_TIME_UP
    if failed:
        print(f"reproduce.py: {len(failed)} run(s) stopped early: {', '.join(failed)}; run the command again",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
