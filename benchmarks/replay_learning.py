#!/usr/bin/env python
"""Prioritized against uniform replay, learning per step: one-process DQN runs of each on one game (Pong by
default), every seed to the same step, side by side; then each run's training return at every quarter of the
steps, its greedy evaluations, the figures, and a table.

    python benchmarks/replay_learning.py --env-id PongDeterministic-v4 --steps 1000000 --seeds 0 --out tmp/pong
    python benchmarks/replay_learning.py --steps 1000000 --seeds 0 --out tmp/pong --report-only

The runs live in <out>/<replay>-seed<seed>, each with its output in <out>/<replay>-seed<seed>.log, and run with
the same flags but `prioritized` (the preset's, `--set` after `--` for more). Run the command again to go on: a
run that stopped resumes its checkpoint (the replay refills; what the learner had learned is kept), and a run that
is done is not run again. `--parallel` runs that many at once (default: one per core), each with its share of the
cores as its TensorFlow threads (train.py's `--threads`: two Pong runs on 2 cores went 1.17 times as fast each
with 1 thread than with TensorFlow's default, docs/history/2026-11-25-dqn.md). Writes <out>/replay_learning.json and,
through plots.py, <out>/plots/ (the training return and the evaluations against steps, one curve per replay, seeds as
mean and band).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402
import plots  # noqa: E402

REPLAYS = {"prioritized": ["--algo", "dqn"], "uniform": ["--algo", "dqn", "--set", "prioritized=false"]}
QUARTERS = (0.25, 0.5, 0.75, 1.0)
PROGRESS_SECS = 60.0


def run_dir(out, method, seed):
    return os.path.join(out, f"{method}-seed{seed}")


def launch(args, method, seed, flags):
    """A one-process run of `method` (its train.py `flags`) at `seed`, its output appended to its .log."""
    log_dir = run_dir(args.out, method, seed)
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--num-workers", "0", "--mode", "child",
            "--env-id", args.env_id, "--log-dir", log_dir, "--no-tensorboard", "--eval-every", str(args.eval_every),
            "--eval-episodes", str(args.eval_episodes), "--set", f"max_global_steps={args.steps}", "--set",
            f"seed={seed}", "--threads", str(max(1, (os.cpu_count() or 1) // args.parallel)), *flags, *args.extra]
    with open(log_dir + ".log", "a") as output:  # a session of its own: Ctrl-C reaches it once, from stop_runs
        return subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def stop_runs(processes):
    """Ctrl-C's end of the runs under way: each is asked to stop (it writes a checkpoint at the step it reached,
    after an evaluation under way, which can take minutes) and waited for; a second Ctrl-C ends them at once."""
    for process in processes:
        process.send_signal(signal.SIGINT)
    print("stopping: each run writes a checkpoint at the step it reached (after an evaluation under way); Ctrl-C "
          "again ends them at once, without it", file=sys.stderr, flush=True)
    try:
        for process in processes:
            process.wait()
    except KeyboardInterrupt:
        for process in processes:
            process.kill()
            process.wait()
        print("ended without a checkpoint past each run's last one", file=sys.stderr)


def summarise(log_dir, steps, window):
    """The step the run reached, its episodes, the mean training return and length of the `window` episodes that
    ended last by each quarter of `steps` it reached (None before), and its evaluations [(step, mean return)]. In
    Pong a longer episode is a longer rally: the ball returned before the returns show it."""
    rows = logdir.episode_rows(log_dir, "env_reward")
    ends = [int(row["global_step"]) for row in rows]
    evaluations = logdir.read_rewards(log_dir)
    reached = max(ends[-1:] + [step for step, _ in evaluations[-1:]] + [0])
    columns = {"mean_return_at": "env_reward", "mean_length_at": "length"}
    values = {key: [float(row[column]) for row in rows] for key, column in columns.items()}
    summary = {"global_step": reached, "episodes": len(rows), **{key: {} for key in columns}}
    for quarter in QUARTERS:
        upto = sum(end <= quarter * steps for end in ends)  # the episodes that ended by this quarter
        for key in columns:
            summary[key][f"{quarter * steps:.0f}"] = (round(sum(values[key][max(0, upto - window):upto]) /
                                                            min(upto, window), 2)
                                                      if upto and reached >= quarter * steps else None)
    return {**summary, "evaluations": evaluations}


def done(log_dir, steps):
    evaluations = logdir.read_rewards(log_dir)  # the last evaluation is made at max_global_steps
    return bool(evaluations) and evaluations[-1][0] >= steps


def train_all(args, methods=REPLAYS):
    """Run every (method, seed) of `methods` ({name: train.py flags}) not done yet, --parallel at a time; False if
    interrupted."""
    waiting = [(method, seed) for seed in args.seeds for method in methods
               if not done(run_dir(args.out, method, seed), args.steps)]
    running, shown = [], 0.0
    try:
        while waiting or running:
            while waiting and len(running) < args.parallel:
                method, seed = waiting.pop(0)
                running.append((method, seed, launch(args, method, seed, methods[method])))
            time.sleep(2)
            if time.time() - shown >= PROGRESS_SECS:
                shown = time.time()
                for method, seed, _ in running:
                    summary = summarise(run_dir(args.out, method, seed), args.steps, args.window)
                    print(f"{time.strftime('%H:%M:%S')} {method} seed {seed}: step {summary['global_step']:,}/"
                          f"{args.steps:,}, {summary['episodes']} episodes", flush=True)
            for item in [item for item in running if item[2].poll() is not None]:
                running.remove(item)
                if item[2].returncode != 0:
                    print(f"{item[0]} seed {item[1]} exited with status {item[2].returncode}: see "
                          f"{run_dir(args.out, item[0], item[1])}.log", file=sys.stderr)
    except KeyboardInterrupt:
        stop_runs([process for _, _, process in running])
        print("stopped; run the same command again to go on", file=sys.stderr)
        return False
    return True


def report(args):
    present = [(replay, seed) for replay in REPLAYS for seed in args.seeds
               if os.path.isdir(run_dir(args.out, replay, seed))]
    results = [{"replay": replay, "seed": seed, **summarise(run_dir(args.out, replay, seed), args.steps, args.window)}
               for replay, seed in present]
    print(f"\n{args.env_id}, one process per run, {args.steps:,} steps, flags {args.extra}; the mean training return "
          f"(and episode length) of the last {args.window} episodes by each step, and the greedy evaluations' best "
          f"and last")
    print(f"{'replay':>11} {'seed':>4} " + " ".join(f"{quarter * args.steps:>16,.0f}" for quarter in QUARTERS) +
          f" {'best eval':>10} {'last eval':>10}")
    for result in results:
        means = " ".join(f"{value:>7.2f} ({length:>6.0f})" if value is not None else f"{'-':>16}"
                         for value, length in zip(result["mean_return_at"].values(),
                                                  result["mean_length_at"].values()))
        evaluations = [mean for _, mean in result["evaluations"]]
        best, last = (f"{max(evaluations):.1f}", f"{evaluations[-1]:.1f}") if evaluations else ("-", "-")
        print(f"{result['replay']:>11} {result['seed']:>4} {means} {best:>10} {last:>10}")
    with open(os.path.join(args.out, "replay_learning.json"), "w") as handle:
        json.dump({"env_id": args.env_id, "steps": args.steps, "window": args.window, "train_flags": args.extra,
                   "eval_every": args.eval_every, "eval_episodes": args.eval_episodes, "results": results}, handle,
                  indent=2)
    groups = {}
    for replay, seed in present:
        groups.setdefault(replay, []).append(run_dir(args.out, replay, seed))
    plots.make_plots(groups, os.path.join(args.out, "plots"), args.window)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="PongDeterministic-v4")
    parser.add_argument("--steps", type=int, default=1_000_000, help="environment steps of every run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1, help="runs at once")
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--eval-episodes", type=int, default=3)
    parser.add_argument("--window", type=int, default=20, help="training episodes in each mean (and the figures')")
    parser.add_argument("--report-only", action="store_true", help="the table and figures of the runs in --out")
    parser.add_argument("--out", default=os.path.join("tmp", "bench-replay"))
    parser.add_argument("extra", nargs="*", help="more train.py flags for every run, after --")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.parallel < 1 or args.window < 1:
        parser.error("--steps, --parallel and --window must be >= 1")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        parser.error(f"--out {args.out}: {error.strerror}; choose another --out")
    if not args.report_only and not train_all(args):
        return 130
    report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
