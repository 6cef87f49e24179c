#!/usr/bin/env python
"""Does curiosity find a sparse reward that the plain learner misses? Trains A3C, or DQN (`--configs dqn dqn_icm
dqn_rnd`, one process each; or SAC, `--configs sac sac_icm sac_rnd`, for continuous actions), with and without
`--unsup action` (or `rnd`) on a hard-exploration task, several seeds each, and reports how often each reaches the
goal.

An episode reaches the goal when it ends by termination rather than by the time limit (the `truncated`
column of the episode CSVs): on CorridorLong-v0, walking 63 cells right within 192 steps, which a random walk
essentially never does; on MountainCar-v0, driving up the hill within 200 steps. Prints, per configuration,
the fraction of runs that ever reached the goal, the global step of the first success, and the fraction of
the last quarter of episodes that succeeded; writes `<out>/curiosity_exploration.json`.

    python benchmarks/curiosity_exploration.py --env-id CorridorLong-v0 --seeds 0 1 2 --minutes 2
    python benchmarks/curiosity_exploration.py --env-id MountainCarContinuous-v0 --configs sac sac_icm sac_rnd \
        --minutes 20 -- --set max_global_steps=50000
    python benchmarks/curiosity_exploration.py --env-id MountainCar-v0 --configs dqn dqn_icm --parallel 2 \
        --minutes 15 -- --set max_global_steps=100000

Each run stops at its --minutes or its max_global_steps, whichever comes first (give a step budget for a
comparison per step); --parallel runs that many at once (a one-process DQN uses about one core).
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
import train  # noqa: E402

CONFIGS = {"a3c": [], "icm": ["--unsup", "action"], "dqn": ["--algo", "dqn"],
           "dqn_icm": ["--algo", "dqn", "--unsup", "action"], "dqn_rnd": ["--algo", "dqn", "--unsup", "rnd"],
           "sac": ["--algo", "sac"], "sac_icm": ["--algo", "sac", "--unsup", "action"],
           "sac_rnd": ["--algo", "sac", "--unsup", "rnd"]}
# run with --num-workers 0, in the launcher's process: stopped by Ctrl-C
ONE_PROCESS = ("dqn", "dqn_icm", "dqn_rnd", "sac", "sac_icm", "sac_rnd")
LATE_FRACTION = 0.25


def episodes(log_dir):
    rows = []
    for path in glob.glob(os.path.join(log_dir, "episodes_*.csv")):
        with open(path) as handle:
            rows += list(csv.DictReader(handle))
    return sorted(rows, key=lambda row: float(row["wall_time"]))


def summarise(rows):
    successes = [row for row in rows if row["truncated"] == "0"]
    late = rows[int(len(rows) * (1 - LATE_FRACTION)):]
    return {"episodes": len(rows), "successes": len(successes),
            "first_success_step": int(successes[0]["global_step"]) if successes else None,
            "late_success_rate": round(sum(row["truncated"] == "0" for row in late) / max(len(late), 1), 3),
            "global_step": int(rows[-1]["global_step"]) if rows else 0}


def run(args, config, seed, exp_id):
    log_dir = os.path.join(args.out, f"{config}-seed{seed}")
    if os.path.exists(log_dir):
        sys.exit(f"{log_dir} exists: remove it or choose another --out")
    workers = 0 if config in ONE_PROCESS else args.num_workers
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--mode", "child", "--num-workers",
            str(workers), "--env-id", args.env_id, "--log-dir", log_dir, "--expId", str(exp_id),
            "--no-tensorboard", "--set", f"seed={seed}", *CONFIGS[config], *args.extra]
    launcher = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    return log_dir, launcher


def stop(config, log_dir, launcher):
    if launcher.poll() is None:
        if config in ONE_PROCESS:
            launcher.send_signal(signal.SIGINT)  # it writes a checkpoint and exits
        else:
            train.stop_run(log_dir, None, quiet=True)
    launcher.wait(timeout=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="CorridorLong-v0")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--configs", nargs="+", choices=tuple(CONFIGS), default=("a3c", "icm"))
    parser.add_argument("--minutes", type=float, default=2.0, help="wall time of each run")
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--exp-id", type=int, default=250)
    parser.add_argument("--parallel", type=int, default=1, help="runs at once")
    parser.add_argument("--out", default=os.path.join("tmp", "bench-curiosity"))
    parser.add_argument("extra", nargs="*", help="more train.py flags for every run, after --")
    args = parser.parse_args()
    results, waiting, running = [], [(seed, config) for seed in args.seeds for config in args.configs], []
    while waiting or running:
        while waiting and len(running) < args.parallel:
            seed, config = waiting.pop(0)
            log_dir, launcher = run(args, config, seed, args.exp_id + len(results) + len(running))  # unique
            running.append((seed, config, log_dir, launcher, time.time()))
        time.sleep(10)
        for item in list(running):
            seed, config, log_dir, launcher, start = item
            summary = summarise(episodes(log_dir))
            print(f"{config} seed {seed}: {time.time() - start:5.0f} s, {summary}", flush=True)
            if time.time() - start >= args.minutes * 60 or launcher.poll() is not None:
                stop(config, log_dir, launcher)
                results.append({"config": config, "seed": seed, **summarise(episodes(log_dir))})
                running.remove(item)
    print(f"\n{args.env_id}, {args.minutes:g} min per run at most, {args.num_workers} A3C worker(s), seeds {args.seeds}"
          f", flags {args.extra}")
    for config in args.configs:
        runs = [r for r in results if r["config"] == config]
        reached = [r for r in runs if r["successes"]]
        firsts = sorted(r["first_success_step"] for r in reached)
        late = sum(r["late_success_rate"] for r in runs) / len(runs)
        print(f"{config:>4}: {len(reached)}/{len(runs)} runs reached the goal; first success at global steps "
              f"{firsts or '-'}; success rate over the last {LATE_FRACTION:.0%} of episodes {late:.2f}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "curiosity_exploration.json"), "w") as handle:
        json.dump({"env_id": args.env_id, "minutes": args.minutes, "num_workers": args.num_workers,
                   "train_flags": args.extra, "parallel": args.parallel, "cpus": os.cpu_count(),
                   "results": results}, handle, indent=2)


if __name__ == "__main__":
    main()
