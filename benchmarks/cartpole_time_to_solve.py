#!/usr/bin/env python
"""Time-to-solve benchmark: launch `train.py` as a user would and time how long CartPole-v1 takes to be solved.

Solved (gymnasium's threshold): mean reward >= 475 over the last 100 episodes of all workers together (or of the
workers `--counted` names), read from the episode CSVs while the run trains; `--solved-mean` and `--window` set
another criterion. One run per seed; prints progress, then a summary, and writes `<out>/time_to_solve.json`
(each run's output in `<out>/seed<N>.log`).

    python benchmarks/cartpole_time_to_solve.py --num-workers 2 --seeds 0 1 2 --mode tmux
    python benchmarks/cartpole_time_to_solve.py --num-workers 2 --seeds 0 1 2 --mode child --counted 1 -- --algo dqn
    python benchmarks/cartpole_time_to_solve.py --num-workers 0 --seeds 0 1 2 --mode child -- --algo sac
    python benchmarks/cartpole_time_to_solve.py --env-id Pendulum-v1 --solved-mean -200 --window 10 \
        --num-workers 0 --seeds 0 1 2 --mode child -- --algo sac

A one-process run (`--num-workers 0`: DQN or SAC) ends at its max_global_steps: a seed not solved by then is
reported as not solved, with the steps it ran. Its greedy evaluations (`rewards.txt`) are reported too: the first
step whose evaluation reached the solved mean, and the last evaluation. `--greedy-episodes N` plays N greedy
episodes of each run's final checkpoint (`demo.py --greedy`) and reports their mean: SAC's training episodes
sample its stochastic policy, and the greedy policy is the one it hands over.

With `--algo dqn` (Ape-X) actor 0 explores with epsilon 0.4 throughout, so its episodes say little of the policy:
`--counted 1` judges by the actor that explores least (epsilon 0.4^8).
"""
import argparse
import csv
import glob
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402
import train  # noqa: E402

SOLVED_MEAN = 475.0
WINDOW = 100
POLL_SECS = 5.0


def recent_rewards(log_dir, tasks=None):
    """All finished episodes of all workers (or of `tasks`), ordered by wall time: [(wall_time, reward,
    global_step)]."""
    rows = []
    paths = [os.path.join(log_dir, f"episodes_{task}.csv") for task in tasks] if tasks else glob.glob(
        os.path.join(log_dir, "episodes_*.csv"))
    for path in filter(os.path.exists, paths):
        with open(path) as handle:
            rows += [(float(r["wall_time"]), float(r["reward"]), int(r["global_step"])) for r in csv.DictReader(handle)]
    return sorted(rows)


def run_seed(args, seed):
    log_dir = os.path.join(args.out, f"seed{seed}")
    if os.path.exists(log_dir):
        sys.exit(f"{log_dir} exists: remove it or choose another --out")
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--mode", args.mode, "--num-workers",
            str(args.num_workers), "--env-id", args.env_id, "--log-dir", log_dir, "--expId", str(args.exp_id),
            "--expName", f"bench-solve-{seed}", "--no-tensorboard", "--set", f"seed={seed}", *args.extra]
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    output_path = os.path.join(args.out, f"seed{seed}.log")
    with open(output_path, "w") as output:  # a file, not a pipe: a progress bar must not fill a pipe and block
        launcher = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, text=True)
    if args.mode == "tmux":
        launcher.wait()
        if launcher.returncode != 0:
            sys.exit(f"launch failed: {open(output_path).read().strip()[-2000:]}")
    result = {"seed": seed, "solved": False, "seconds": None, "global_step": None, "episodes": 0}
    try:
        while time.time() - start < args.max_minutes * 60:
            time.sleep(POLL_SECS)
            rows = recent_rewards(log_dir, args.counted)
            elapsed = time.time() - start
            if rows:
                window = [reward for _, reward, _ in rows[-args.window:]]
                mean = sum(window) / len(window)
                print(f"seed {seed}: {elapsed:6.0f} s, global step {rows[-1][2]:8d}, {len(rows):5d} episodes, "
                      f"mean reward of the last {len(window)}: {mean:6.1f}", flush=True)
                result.update(episodes=len(rows), global_step=rows[-1][2])
                if len(window) == args.window and mean >= args.solved_mean:
                    result.update(solved=True, seconds=round(rows[-1][0] - start, 1))
                    break
            if args.mode == "child" and launcher.poll() is not None:
                break
    finally:
        if args.num_workers == 0:  # one process in the foreground: Ctrl-C, which writes a checkpoint and ends it
            if launcher.poll() is None:
                launcher.send_signal(signal.SIGINT)
        else:
            train.stop_run(log_dir, f"bench-solve-{seed}" if args.mode == "tmux" else None, quiet=True)
        if launcher.poll() is None:
            launcher.wait(timeout=120)
    if args.num_workers == 0:
        result.update(evaluations(log_dir, args.solved_mean))
    if args.greedy_episodes:
        result["greedy_mean"] = greedy_mean(log_dir, args.greedy_episodes)
    return result


def evaluations(log_dir, solved_mean):
    """{first_eval_solved_step, last_eval} from the one-process run's rewards.txt ("eval step mean" lines)."""
    scores = logdir.read_rewards(log_dir)
    first = next((step for step, mean in scores if mean >= solved_mean), None)
    return {"first_eval_solved_step": first, "last_eval": scores[-1][1] if scores else None}


def greedy_mean(log_dir, episodes):
    """The mean return of `episodes` greedy episodes of the run's last checkpoint, played by demo.py."""
    out = os.path.join(log_dir, "greedy")
    played = subprocess.run([sys.executable, os.path.join(ROOT, "demo.py"), "--log-dir", log_dir, "--greedy",
                             "--episodes", str(episodes), "--out", out], capture_output=True, text=True)
    if played.returncode != 0:
        sys.exit(f"demo.py failed on {log_dir}: {played.stderr.strip()[-2000:]}")
    with open(os.path.join(out, "summary.json")) as handle:
        return json.load(handle)["mean_reward"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--mode", choices=("tmux", "child"), default="tmux")
    parser.add_argument("--max-minutes", type=float, default=15.0)
    parser.add_argument("--exp-id", type=int, default=300)
    parser.add_argument("--out", default=os.path.join("tmp", "bench-time-to-solve"))
    parser.add_argument("--counted", type=int, nargs="+", default=None, metavar="TASK",
                        help="judge by the episodes of these workers (actors) only (default: all)")
    parser.add_argument("--solved-mean", type=float, default=SOLVED_MEAN, help="the mean return that solves it")
    parser.add_argument("--window", type=int, default=WINDOW, help="episodes in that mean")
    parser.add_argument("--greedy-episodes", type=int, default=0, metavar="N",
                        help="greedy episodes of each run's final checkpoint, by demo.py (default: none)")
    parser.add_argument("extra", nargs="*", help="more train.py flags, after --")
    args = parser.parse_args()
    results, interrupted = [], False
    try:
        for seed in args.seeds:
            results.append(run_seed(args, seed))
    except KeyboardInterrupt:  # run_seed has stopped its run; report the seeds that finished
        interrupted = True
        print(f"stopped: {len(results)} of {len(args.seeds)} seeds finished", file=sys.stderr)
    for r in results:
        verdict = f"solved in {r['seconds']} s at global step {r['global_step']}" if r["solved"] else "NOT solved"
        extra = "".join(f", {name.replace('_', ' ')} {r[name]}" for name in ("first_eval_solved_step", "last_eval",
                                                                               "greedy_mean") if name in r)
        print(f"seed {r['seed']}: {verdict} ({r['episodes']} episodes{extra})")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "time_to_solve.json"), "w") as handle:
        json.dump({"num_workers": args.num_workers, "env_id": args.env_id, "cpus": os.cpu_count(),
                   "solved_mean": args.solved_mean, "window": args.window,
                   "counted": args.counted, "train_flags": args.extra, "interrupted": interrupted,
                   "results": results}, handle, indent=2)
    if interrupted:
        return 130
    return 0 if all(r["solved"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
