#!/usr/bin/env python
"""Reproduce the paper's Doom experiments (Pathak et al. 2017, Figure 5): ICM against A3C on MyWayHome.

    python benchmarks/reproduce.py --task doom doomSparse doomVerySparse --method icm a3c --seeds 0 1 2 \\
        --steps 5M --out ~/runs/repro
    python benchmarks/reproduce.py --out ~/runs/repro --report-only --report-dir docs/results/doom

Each (task, method, seed) is an ordinary run of `train.py --mode child` in <out>/runs/<task>-<method>-s<seed>,
with the original's settings (noreward-rl's `--default`: the ICM for `icm`, none for `a3c`, no living penalty;
RND, `--unsup rnd`, for `rnd`)
and --envs-per-worker environments per worker. Runs go one after another (--parallel N: N at once), each with
--workers workers. Running the same command again skips the runs that reached --steps and resumes the others
from their checkpoints, so a study can span several sittings; a run that another sitting still has going is
waited for, and --steps may grow between sittings. Every 30 s it prints the runs done, the current runs' steps
and success rates, and the time left at the current rate.

Then the report, into --report-dir (default <out>/report), per task:
  <task>/*.png          plots.py's figures, ICM and A3C on each: reward, success rate and bonus against steps,
                        the seeds' mean with their min-max band, and where each method went (visits)
  results.md            per task and method: the success rate over the last 100 episodes at --at steps (each
                        seed, and their mean), the steps to the first 100 episodes with >= 90% success, the runs
                        that ever reached the vest, and the greedy evaluation of each run's final checkpoint
  results.json          every number of the tables
  runs/<run>/           each run's archive: its episodes (the columns above), 20,000 of its positions, its
                        config and the machine; the report is drawn from these
Only small files go there (no checkpoints), so it can be committed; and a report dir that already holds runs
keeps them, so one report gathers the sittings of several machines whose run folders are gone or elsewhere.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import constants  # noqa: E402
import logdir  # noqa: E402
import plots  # noqa: E402
import status  # noqa: E402
import train  # noqa: E402

METHODS = {"icm": ["--unsup", "action"], "a3c": ["--unsup", "none"], "rnd": ["--unsup", "rnd"]}
METHOD_LABELS = {"icm": "ICM", "a3c": "A3C", "rnd": "RND"}
PAPER_METHODS = ["icm", "a3c"]  # the paper's Figure 5, what a study runs unless --method says otherwise
PROGRESS_SECS = 30.0
STOP_WAIT_SECS = train.STOP_GRACE_SECS + 30  # a train.py stops its workers (final checkpoints), then the rest
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
WINDOW = 100  # episodes in the success rate of the tables (the paper's curves average over such windows)
SOLVED = 0.9  # a run is solved at the first window of WINDOW episodes with this success rate
EXP_ID_BASE = 420  # the runs' port offsets (train.py --expId); slot i of --parallel uses EXP_ID_BASE + i
DEFAULT_AT = ("1M", "2M", "3M", "5M", "7M")
# what a run's archive in the report keeps: the episode columns the tables and figures read, and at most this
# many of its logged positions (every 4th step's are logged: ~3 MB a worker-hour; the heatmap needs far fewer)
ARCHIVED_EPISODE_COLUMNS = ("global_step", "wall_time", "worker", "env_reward", "length", "truncated", "bonus",
                            "success", "distance")
ARCHIVED_VISITS = 20_000
FIGURE = "figure5.png"  # every task side by side, a row per measure: (y label, plots.py's figure of that measure)
FIGURE_ROWS = (("game reward per episode", "reward_vs_steps.png"), ("success rate", "success_vs_steps.png"))


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


def step_count(text):
    try:
        return parse_steps(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


RUN_NAME = re.compile(r"(?P<task>.+)-(?P<method>" + "|".join(METHODS) + r")-s(?P<seed>\d+)$")


def run_dir(out, task, method, seed):
    return os.path.join(out, "runs", f"{task}-{method}-s{seed}")


def parse_run_name(name):
    """'doomSparse-icm-s2' -> ('doomSparse', 'icm', 2); None for another name."""
    match = RUN_NAME.match(name)
    return (match["task"], match["method"], int(match["seed"])) if match else None


def reached_step(log_dir):
    """The global step a run got to (0 for a run not started)."""
    return status.collect(log_dir)["global_step"] if os.path.isdir(log_dir) else 0


def plan(out, tasks, methods, seeds, steps):
    """[(task, method, seed, log_dir, state)] in the order they run; state: done, running, resume or new."""
    runs = []
    for task in tasks:
        for method in methods:
            for seed in seeds:
                log_dir = run_dir(out, task, method, seed)
                if train.run_processes(log_dir):
                    state = "running"
                elif reached_step(log_dir) >= steps:
                    state = "done"
                else:
                    state = "resume" if os.path.exists(os.path.join(log_dir, "config.json")) else "new"
                runs.append((task, method, seed, log_dir, state))
    return runs


def train_argv(task, method, seed, log_dir, steps, slot, args):
    return [sys.executable, os.path.join(ROOT, "train.py"), "--mode", "child", "--num-workers", str(args.workers),
            "--env-id", task, *METHODS[method], "--noLifeReward", "--envs-per-worker", str(args.envs_per_worker),
            "--log-dir", log_dir, "--expId", str(EXP_ID_BASE + slot), "--no-tensorboard",
            "--set", f"max_global_steps={steps}", "--set", f"seed={seed}", *args.extra]


def recent_success(log_dir):
    """The success rate over the run's last WINDOW episodes, or None."""
    steps, success = episode_arrays(log_dir, "success")
    return float(np.mean(success[-WINDOW:])) if len(success) else None


def progress_line(active, runs_done, total, steps, rates):
    """One line: runs done, each active run's step, rate and success, and the time left at today's rate.
    `active`: [(name, log_dir, status.collect's dict of it)]."""
    parts = [f"{time.strftime('%H:%M:%S')} runs done {runs_done}/{total}"]
    for name, log_dir, collected in active:
        success = recent_success(log_dir)
        parts.append(f"{name}: step {collected['global_step']:,}/{steps:,} ({collected['steps_per_sec']:,.0f}/s)"
                     + (f", success {success:.2f}" if success is not None else ""))
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
        print(f"{name}: stopped at step {reached_step(log_dir):,}", flush=True)


def run_all(args, launch=subprocess.Popen):
    """Run what the plan leaves to do, --parallel at a time; the names of runs that failed."""
    runs = plan(args.out, args.task, args.method, args.seeds, args.steps)
    total, failed, rates = len(runs), [], []
    # runs another sitting has going come first: they hold cores that --parallel counts
    todo = sorted((run for run in runs if run[4] != "done"), key=lambda run: run[4] != "running")
    print(f"{total} runs in {args.out}/runs: {total - len(todo)} done, "
          f"{sum(run[4] == 'running' for run in todo)} running elsewhere, "
          f"{sum(run[4] == 'resume' for run in todo)} to resume, {sum(run[4] == 'new' for run in todo)} new",
          flush=True)
    active = {}  # name -> (log_dir, process or None for a run another sitting has going, slot)
    next_print = time.time()
    stop = StopRequest()
    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        while (todo or active) and not stop.signum:
            free = [slot for slot in range(args.parallel) if slot not in {value[2] for value in active.values()}]
            while todo and free and not stop.signum:
                task, method, seed, log_dir, state = todo.pop(0)
                name = os.path.basename(log_dir)
                if state == "running":
                    active[name] = (log_dir, None, free.pop(0))
                    print(f"{name}: running already (another sitting); waiting for it", flush=True)
                    continue
                os.makedirs(os.path.dirname(log_dir), exist_ok=True)
                log = open(os.path.join(os.path.dirname(log_dir), f"{name}.launch.log"), "a")
                slot = free.pop(0)
                # its own session: Ctrl-C reaches this process only, which stops the runs once (stop_runs)
                process = launch(train_argv(task, method, seed, log_dir, args.steps, slot, args), stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                                 start_new_session=True)
                log.close()
                active[name] = (log_dir, process, slot)
                print(f"{name}: {'resumed' if state == 'resume' else 'started'} (log {log.name})", flush=True)
            for name, (log_dir, process, slot) in list(active.items()):
                finished = process.poll() is not None if process else not train.run_processes(log_dir)
                if finished:
                    del active[name]
                    step = reached_step(log_dir)
                    code = process.returncode if process else 0
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
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return failed


# ---------------------------------------------------------------- the report

def episode_arrays(log_dir, column):
    """(global steps, values of `column`) of the run's episodes that have it, ordered by global step."""
    rows = logdir.episode_rows(log_dir, column)
    return (np.array([int(row["global_step"]) for row in rows], dtype=np.int64),
            np.array([float(row[column]) for row in rows]))


def success_at(steps, success, milestone, reached=None, window=WINDOW):
    """Success rate over the last `window` episodes that ended by global step `milestone`; None when the run
    did not get that far (`reached`, its global step; by default its last episode's) or had no episode before."""
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


def run_summary(log_dir, milestones, reached):
    steps, success = episode_arrays(log_dir, "success")
    config = logdir.read_json(os.path.join(log_dir, "config.json")) or {}
    budget = config.get("hyperparameters", {}).get("max_global_steps")
    return {"log_dir": log_dir, "global_step": reached, "budget": budget,
            "episodes": int(len(success)),
            "success_at": {str(m): success_at(steps, success, m, reached) for m in milestones},
            "first_solved": first_solved(steps, success),
            "reached_vest": bool(success.any()) if len(success) else False}


def find_runs(folder):
    """{run name: its folder} of the study's runs directly under `folder`."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return {name: os.path.join(folder, name) for name in names
            if parse_run_name(name) and os.path.isdir(os.path.join(folder, name))}


def machine():
    return f"{platform.node() or 'unknown host'}, {os.cpu_count()} cores"


def archive_run(log_dir, archive, greedy_eval):
    """Keep what the report needs of a run in `archive` (a small folder that plots.py reads as a log dir): its
    episodes (the report's columns), an even sample of its positions, config.json, and run.json (the global
    step reached, the greedy evaluation, the machine). The run's own folder holds checkpoints and lives outside
    the repository, on one machine; the archive goes with the report, so runs made in other sittings and on
    other machines stay in the tables and the figures."""
    reached = reached_step(log_dir)
    kept = logdir.read_json(os.path.join(archive, "run.json")) or {}
    if kept.get("global_step", 0) > reached:
        print(f"{os.path.basename(log_dir)}: the report already holds this run to step {kept['global_step']:,}, "
              f"further than {log_dir} ({reached:,}); keeping that", file=sys.stderr)
        return
    os.makedirs(archive, exist_ok=True)
    episodes = logdir.episode_rows(log_dir, "global_step")
    write_rows(os.path.join(archive, "episodes_all.csv"), ARCHIVED_EPISODE_COLUMNS, episodes)
    visits = logdir.visit_rows(log_dir)
    if visits:
        sample = np.linspace(0, len(visits) - 1, min(len(visits), ARCHIVED_VISITS)).astype(int)
        write_rows(os.path.join(archive, "visits_all.csv"), ("x", "y"), [visits[i] for i in sample])
    config = logdir.read_json(os.path.join(log_dir, "config.json"))
    if config is not None:
        logdir.write_json_atomically(os.path.join(archive, "config.json"), config)
    logdir.write_json_atomically(os.path.join(archive, "run.json"), {
        "global_step": reached,
        # an earlier evaluation stands only for the step it was made at: not beside a run that has gone on since
        "greedy_eval": greedy_eval or (kept.get("greedy_eval") if kept.get("global_step") == reached else None),
        "machine": kept.get("machine") or machine()})


def write_rows(path, columns, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def mean_or_none(values):
    values = [value for value in values if value is not None]
    return float(np.mean(values)) if values else None


def evaluate(log_dir, episodes, out):
    """demo.py's greedy evaluation of the run's final checkpoint (cached by checkpoint); its summary, or None
    while the run is still going."""
    checkpoint_index = os.path.join(log_dir, "train", "checkpoint")
    if episodes <= 0 or not os.path.exists(checkpoint_index) or train.run_processes(log_dir):
        return None
    summary_path = os.path.join(out, "summary.json")
    stamp = os.path.getmtime(checkpoint_index)
    cached = logdir.read_json(summary_path) if os.path.exists(summary_path) else None
    if (cached and os.path.getmtime(summary_path) > stamp and cached.get("episodes") == episodes
            and cached.get("random_start") == constants.EVAL_RANDOM_START):
        return cached
    if cached:  # of an older checkpoint or another way of evaluating: not to be read back if this one fails
        os.remove(summary_path)
    result = subprocess.run([sys.executable, os.path.join(ROOT, "demo.py"), "--log-dir", log_dir, "--greedy",
                             "--episodes", str(episodes), "--random-start", str(constants.EVAL_RANDOM_START),
                             "--out", out], capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0 or not os.path.exists(summary_path):
        print(f"evaluation of {log_dir} failed: {(result.stderr or result.stdout).strip().splitlines()[-1:]}",
              file=sys.stderr)
        return None
    with open(summary_path) as handle:
        return json.load(handle)


def report(out, report_dir, milestones, eval_episodes, eval_dir=None):
    """Figures, tables and JSON of every run in <out>/runs and every run the report dir already holds (from
    other sittings or machines: its runs/ archives, and the rows of an earlier results.json); the results."""
    eval_dir = eval_dir or os.path.join(out, "eval")
    archives = os.path.join(report_dir, "runs")
    for name, log_dir in find_runs(os.path.join(out, "runs")).items():
        archive_run(log_dir, os.path.join(archives, name),
                    evaluate(log_dir, eval_episodes, os.path.join(eval_dir, name)))
    earlier = logdir.read_json(os.path.join(report_dir, "results.json")) or {}
    found = {}  # task -> method -> {seed: archive folder}
    for name, archive in find_runs(archives).items():
        task, method, seed = parse_run_name(name)
        found.setdefault(task, {}).setdefault(method, {})[seed] = archive
    rows = {}  # task -> method -> {seed: summary}
    for task, methods in earlier.get("tasks", {}).items():  # runs whose episodes were never archived
        for method, summary in methods.items():
            for seed, run in summary["seeds"].items():
                if int(seed) not in found.get(task, {}).get(method, {}):
                    rows.setdefault(task, {}).setdefault(method, {})[int(seed)] = run
    if not found and not rows:
        raise plots.PlotError(f"no runs in {os.path.join(out, 'runs')}: run the study first")
    figure = plot_tasks(found, report_dir)
    for task, methods in found.items():
        for method, seeds in methods.items():
            for seed, archive in seeds.items():
                kept = logdir.read_json(os.path.join(archive, "run.json")) or {}
                summary = run_summary(archive, milestones, kept.get("global_step", 0))
                summary.update(log_dir=os.path.relpath(archive, report_dir), greedy_eval=kept.get("greedy_eval"),
                               machine=kept.get("machine"))
                rows.setdefault(task, {}).setdefault(method, {})[seed] = summary
    results = {"window": WINDOW, "solved_at": SOLVED, "milestones": list(milestones), "tasks": {},
               "figure": {"file": FIGURE, "panels": figure}}
    for task in sorted(rows, key=task_order):
        results["tasks"][task] = {}
        for method in (method for method in METHODS if method in rows[task]):
            seeds = {str(seed): run for seed, run in sorted(rows[task][method].items())}
            results["tasks"][task][method] = {
                "seeds": seeds,
                "mean_success_at": {str(m): mean_or_none([s["success_at"].get(str(m)) for s in seeds.values()])
                                    for m in milestones},
                "runs_solved": sum(s["first_solved"] is not None for s in seeds.values()),
                "runs_reached_vest": sum(s["reached_vest"] for s in seeds.values()), "runs": len(seeds)}
    logdir.write_json_atomically(os.path.join(report_dir, "results.json"), results)
    with open(os.path.join(report_dir, "results.md"), "w") as handle:
        handle.write(markdown(results))
    return results


def plot_tasks(found, report_dir):
    """plots.py's figures of each task (ICM and A3C on each, the seeds' mean and band), then the tasks side by side
    in FIGURE, as the paper's Figure 5; that figure's panels ({y label: [task, ...]})."""
    rows = {}
    earlier_tasks = [name for name in os.listdir(report_dir)
                     if os.path.isfile(os.path.join(report_dir, name, plots.CURVES))]
    for task in sorted(set(found) | set(earlier_tasks), key=task_order):
        methods = found.get(task, {})
        groups = {METHOD_LABELS[method]: [methods[method][seed] for seed in sorted(methods[method])]
                  for method in METHODS if method in methods}
        kept = kept_curves(report_dir, task, groups)
        # cover "any": a seed that is still running must not cut the finished seeds' curves short
        written = plots.make_plots(groups, os.path.join(report_dir, task), WINDOW, kept, list(METHOD_LABELS.values()),
                                   cover="any")
        for ylabel, name in FIGURE_ROWS:
            if name in written:
                rows.setdefault(ylabel, {})[task] = written[name]
    return plots.panels_figure(rows, os.path.join(report_dir, FIGURE)) if rows else None


def kept_curves(report_dir, task, groups):
    """The curves of the task's earlier figures whose runs the report no longer has (no archive: their folders
    were lost with an earlier machine), so that they stay in the figures: {figure: {label: data}}."""
    earlier = logdir.read_json(os.path.join(report_dir, task, plots.CURVES)) or {}
    kept = {name: {label: curve for label, curve in data.items() if label not in groups}
            for name, data in earlier.items() if name.endswith(("_vs_steps.png", "_vs_time.png"))}
    kept.update({name: data for name, data in earlier.items()  # a map's picture stays as it was drawn
                 if name.startswith("visits_") and name[len("visits_"):-len(".png")] not in groups})
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


def cell(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def greedy_cell(evaluation):
    """The success rate of a greedy evaluation, and how many of its episodes differed, where it says."""
    rate = cell(evaluation.get("success_rate"))
    return f"{rate} ({evaluation['distinct_episodes']})" if "distinct_episodes" in evaluation else rate


def markdown(results):
    """The tables of results.md: one per task, a row per method and seed, and each method's mean."""
    milestones = results["milestones"]
    lines = [f"Success rate over the last {results['window']} episodes at each global step; `-`: the run did not "
             f"get there. Solved: the first {results['window']} episodes with >= {results['solved_at']:.0%} "
             "success. Greedy: the final checkpoint's success rate in demo.py's greedy evaluation, each episode "
             f"begun with 0 to {constants.EVAL_RANDOM_START} random actions; in brackets, how many of its episodes "
             "took different actions (none given: an evaluation from before the random start). Steps run: `of N` "
             "where a run has not reached its budget of N steps yet (still going on, or stopped short). Machine: the "
             "host and cores of the sitting that last reported the run (`-`: an earlier report's row, its episodes "
             "not kept).", ""]
    for task, methods in results["tasks"].items():
        lines += [f"### {task}", "",
                  "| method | seed | steps run | " + " | ".join(short(m) for m in milestones)
                  + " | solved at | reached the vest | greedy (distinct) | machine |",
                  "|---" * (len(milestones) + 7) + "|"]
        for method, summary in methods.items():
            for seed, run in summary["seeds"].items():
                greedy = greedy_cell(run["greedy_eval"] or {})
                lines.append(f"| {METHOD_LABELS[method]} | {seed} | {steps_cell(run)} | "
                             + " | ".join(cell(run["success_at"].get(str(m))) for m in milestones)
                             + f" | {short(run['first_solved']) if run['first_solved'] else '-'} | "
                             + f"{'yes' if run['reached_vest'] else 'no'} | {greedy} | "
                             + f"{run.get('machine') or '-'} |")
            lines.append(f"| {METHOD_LABELS[method]} | mean | | "
                         + " | ".join(cell(summary["mean_success_at"][str(m)]) for m in milestones)
                         + f" | {summary['runs_solved']} of {summary['runs']} | {summary['runs_reached_vest']} of "
                         + f"{summary['runs']} | | |")
        lines.append("")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", nargs="+", default=["doom", "doomSparse", "doomVerySparse"],
                        help="environment ids (train.py --env-id)")
    parser.add_argument("--method", nargs="+", choices=tuple(METHODS), default=PAPER_METHODS,
                        help="icm, a3c (the paper's, the default) and rnd (Burda et al. 2018)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=step_count, default=parse_steps("5M"), help="global steps per run")
    parser.add_argument("--out", required=True, help="the study's folder: runs/ (one log dir per run), eval/")
    parser.add_argument("--workers", type=int, default=2, help="workers per run")
    parser.add_argument("--envs-per-worker", type=int, default=16)
    parser.add_argument("--parallel", type=int, default=1, help="runs at once")
    parser.add_argument("--at", type=step_count, nargs="+", default=[parse_steps(m) for m in DEFAULT_AT],
                        help="global steps of the tables' columns")
    parser.add_argument("--eval-episodes", type=int, default=20, help="greedy episodes per final checkpoint (0: none)")
    parser.add_argument("--report-only", action="store_true", help="no runs: the report of what is there")
    parser.add_argument("--report-dir", help="where the report goes (default <out>/report)")
    parser.add_argument("extra", nargs="*", help="more train.py flags for every run, after --")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.envs_per_worker < 1 or args.parallel < 1 or args.eval_episodes < 0:
        parser.error("--workers, --envs-per-worker and --parallel must be >= 1, --eval-episodes >= 0")
    if min(args.seeds) < 0:
        parser.error("--seeds must be >= 0")
    args.out = os.path.abspath(os.path.expanduser(args.out))
    return args


def main(argv=None):
    args = parse_args(argv)
    failed = []
    try:
        if not args.report_only:
            os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
            failed = run_all(args)
        report_dir = args.report_dir or os.path.join(args.out, "report")
        report(args.out, report_dir, args.at, args.eval_episodes)
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
    if failed:
        print(f"reproduce.py: {len(failed)} run(s) stopped early: {', '.join(failed)}; run the command again",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
