#!/usr/bin/env python
"""PlaNet's learning per step, beside SAC: one-process runs of each method on one task, every seed to the same
step; then each evaluation's mean return (--eval-episodes episodes without exploration noise) against steps, the
first step at which it reached --solved-mean, the seeds' spread at each evaluation, Welch's test of two methods at
the last one, the figures, and a table.

    python benchmarks/planet_learning.py --env-id Pendulum-v1 --steps 3000 --eval-every 1000 --eval-episodes 10 \\
        --seeds 0 1 2 --methods planet --out tmp/planet-pendulum -- --set action_repeat=2
    python benchmarks/planet_learning.py --env-id Pendulum-v1-pixels --steps 5000 --eval-every 1000 \\
        --eval-episodes 5 --methods planet planet_latent_sac sac --out tmp/planet-pixels \\
        --method-flags "planet=--set action_repeat=2 --set collect_every=50" \\
        --method-flags "planet_latent_sac=--set action_repeat=2 --set collect_every=50" \\
        --method-flags "sac=--set learning_starts=1000 --set replay_capacity=5000"

Methods: `planet` (the planner), `planet_latent_sac` (SAC on the model's latent state, `--set behaviour=sac`,
learning beside the model from the start) and `sac` (SAC on the observations themselves); the flags after `--` go
to every run, those of --method-flags METHOD=FLAGS to that method's only (train.py refuses one algorithm's own
hyper-parameter on another's run). The runs live in <out>/<method>-seed<seed> (output in <out>/<method>-seed<seed>.log) and resume as
benchmarks/replay_learning.py's do: run the command again to go on; a finished run is not run again. Writes
<out>/planet_learning.json and, through plots.py, <out>/plots/ (evaluations and training returns against steps,
each method's seeds as mean and min-max band).
"""
import argparse
import json
import os
import shlex
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logdir  # noqa: E402
import plots  # noqa: E402
import replay_learning  # noqa: E402

METHODS = {"planet": ["--algo", "planet"], "planet_latent_sac": ["--algo", "planet", "--set", "behaviour=sac"],
           "sac": ["--algo", "sac"]}
SOLVED_MEAN = -200.0  # Pendulum-v1's: the mean return the issue asks of 10 episodes


def first_solved(evaluations, solved_mean):
    """The first step whose evaluation's mean return reached `solved_mean`, or None."""
    return next((step for step, mean in evaluations if mean >= solved_mean), None)


def at_steps(results, steps):
    """{step: (mean, min, max, n)} of the seeds' evaluations at each of `steps` that every seed evaluated at."""
    table = {}
    for step in steps:
        values = [dict(result["evaluations"]).get(step) for result in results]
        if values and None not in values:
            table[step] = (float(np.mean(values)), float(min(values)), float(max(values)), len(values))
    return table


def welch(first, second):
    """Welch's t-test of two samples: (t, p), or None where either has fewer than 2 values or neither varies."""
    if len(first) < 2 or len(second) < 2 or (np.std(first) == 0 and np.std(second) == 0):
        return None
    from scipy import stats

    result = stats.ttest_ind(first, second, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def recorded_argv(run):
    """The train.py flags a run was started with, as its config.json recorded them (None before it wrote one)."""
    try:
        with open(os.path.join(run, "config.json")) as handle:
            return json.load(handle).get("argv")
    except (OSError, ValueError):
        return None


def wall_minutes(run):
    """Minutes from a run's first episode's start to its last episode or evaluation (pauses and resumes included);
    None before it has played."""
    episodes = logdir.rows_of(run, "episodes_*.csv")
    if not episodes:
        return None
    start = min(float(row["wall_time"]) - float(row["seconds"]) for row in episodes)
    end = max(float(row["wall_time"]) for row in episodes + logdir.rows_of(run, logdir.EVAL))
    return (end - start) / 60


def run_result(run, seed):
    """A run's evaluations [(step, mean return)], the flags it was started with and its wall minutes."""
    return {"seed": seed, "evaluations": logdir.read_rewards(run), "argv": recorded_argv(run),
            "wall_minutes": wall_minutes(run)}


def parse_method_flags(items, choices):
    """{method: [train.py flags]} of --method-flags METHOD=FLAGS items; ValueError naming a bad one."""
    found = {}
    for item in items:
        method, separator, flags = item.partition("=")
        if not separator or method not in choices:
            raise ValueError(f"--method-flags {item!r}: give METHOD=FLAGS with METHOD one of {', '.join(choices)}")
        found[method] = found.get(method, []) + shlex.split(flags)
    return found


def flags_of(args):
    """{method: its train.py flags}: its row in METHODS, then its --method-flags."""
    return {method: METHODS[method] + args.method_flags.get(method, []) for method in args.methods}


def report(args):
    found = {method: [seed for seed in args.seeds if os.path.isdir(replay_learning.run_dir(args.out, method, seed))]
             for method in args.methods}
    results = {method: [run_result(replay_learning.run_dir(args.out, method, seed), seed) for seed in seeds]
               for method, seeds in found.items() if seeds}
    steps = sorted({step for runs in results.values() for run in runs for step, _ in run["evaluations"]})
    print(f"\n{args.env_id}, one process per run, {args.steps:,} steps, flags {args.extra}; the mean return of "
          f"{args.eval_episodes} evaluation episodes: the seeds' mean (min to max)")
    summary = {}
    for method, runs in results.items():
        for run in runs:
            run["solved_at"] = first_solved(run["evaluations"], args.solved_mean)
        table = at_steps(runs, steps)
        solved = [run["solved_at"] for run in runs]
        summary[method] = {"seeds": [run["seed"] for run in runs], "at_steps": table,
                           "solved": sum(step is not None for step in solved), "solved_at": solved}
        cells = "  ".join(f"{step:,}: {mean:.0f} ({low:.0f} to {high:.0f})" for step, (mean, low, high, _) in
                          table.items())
        print(f"{method:>18} {len(runs)} seeds  {cells}")
        minutes = [run["wall_minutes"] for run in runs if run["wall_minutes"] is not None]
        summary[method]["wall_minutes"] = [min(minutes), max(minutes)] if minutes else None
        print(f"{'':>18} reached {args.solved_mean:g} in {summary[method]['solved']} of {len(runs)} seeds, at "
              f"{', '.join('-' if step is None else f'{step:,}' for step in solved)}" +
              (f"; {min(minutes):.0f}-{max(minutes):.0f} min a run" if minutes else ""))
    tests = {}
    last = steps[-1] if steps else None
    methods = list(results)
    for index, first in enumerate(methods):
        for second in methods[index + 1:]:
            values = [[dict(run["evaluations"]).get(last) for run in results[method]] for method in (first, second)]
            if any(None in part for part in values):
                continue
            test = welch(*values)
            if test is not None:
                tests[f"{first} vs {second}"] = {"step": last, "t": test[0], "p": test[1]}
                print(f"at {last:,}: {first} against {second}: Welch t = {test[0]:.2f}, p = {test[1]:.3f}")
    with open(os.path.join(args.out, "planet_learning.json"), "w") as handle:
        json.dump({"command": args.command, "env_id": args.env_id, "steps": args.steps, "eval_every": args.eval_every,
                   "eval_episodes": args.eval_episodes, "solved_mean": args.solved_mean, "train_flags": args.extra,
                   "methods": {method: flags for method, flags in flags_of(args).items() if method in results},
                   "results": results,
                   "summary": {method: {**values, "at_steps": {str(step): cell for step, cell in
                                                               values["at_steps"].items()}}
                               for method, values in summary.items()},
                   "tests": tests}, handle, indent=2)
    groups = {method: [replay_learning.run_dir(args.out, method, run["seed"]) for run in runs]
              for method, runs in results.items()}
    if groups:
        plots.make_plots(groups, os.path.join(args.out, "plots"), args.window)
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="Pendulum-v1")
    parser.add_argument("--steps", type=int, default=3000, help="environment steps of every run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=["planet"], choices=sorted(METHODS))
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1, help="runs at once")
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--solved-mean", type=float, default=SOLVED_MEAN)
    parser.add_argument("--window", type=int, default=5, help="training episodes in each mean of the figures")
    parser.add_argument("--method-flags", action="append", default=[], metavar="METHOD=FLAGS",
                        help="train.py flags for METHOD's runs only (repeatable), e.g. 'sac=--set learning_starts=1000'")
    parser.add_argument("--report-only", action="store_true", help="the table and figures of the runs in --out")
    parser.add_argument("--out", default=os.path.join("tmp", "bench-planet"))
    parser.add_argument("extra", nargs="*", help="more train.py flags for every run, after --")
    args = parser.parse_args(argv)
    # the command that makes these runs, for the results file: a --report-only run's without it
    args.command = shlex.join(["benchmarks/planet_learning.py"] + [
        part for part in (sys.argv[1:] if argv is None else argv) if part != "--report-only"])
    try:
        args.method_flags = parse_method_flags(args.method_flags, sorted(METHODS))
    except ValueError as error:
        parser.error(str(error))
    if min(args.steps, args.parallel, args.window, args.eval_every, args.eval_episodes) < 1:
        parser.error("--steps, --parallel, --window, --eval-every and --eval-episodes must be >= 1")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        parser.error(f"--out {args.out}: {error.strerror}; choose another --out")
    if not args.report_only and not replay_learning.train_all(args, flags_of(args)):
        return 130
    report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
