#!/usr/bin/env python
"""How much of a task's state does each explorer visit in the same environment steps? Plan2Explore (`--algo planet
--set plan2explore=true`), SAC with the ICM and with disagreement (no extrinsic reward: `--no-reward`), and a random
policy (PlaNet's random episodes, every episode); several seeds each. Coverage is the share of the cells of a grid
over the task's state that the stored episodes (`train_episodes/`) visit; for Pendulum-v1 the state is (angle,
angular velocity), 24 x 24 cells over [-pi, pi] x [-8, 8]. Plan2Explore's evaluations plan with the reward its model
learned from the same episodes (which keep the game's reward; its planner never sees it while collecting): its
zero-shot return.

    python benchmarks/exploration_coverage.py --out tmp/coverage --seeds 0 1 2 --steps 3000

Resumable: each run is `<out>/<method>-seed<S>` and train.py resumes it from its checkpoint; a finished run is
read, not run again. Writes `<out>/coverage.json` (per run: coverage, zero-shot returns; per method: mean, standard
deviation, Welch's t-test of Plan2Explore against each other method) and `<out>/coverage.png` (each method's
visitation map, its first seed). PlaNet's episodes are stored per model step (action_repeat of the game's steps
each) and the others' per step, so the world model's coverage is counted from fewer rows.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402

PLANET = ["--algo", "planet", "--set", "action_repeat=2"]
METHODS = {
    "plan2explore": PLANET + ["--set", "plan2explore=true"],
    "random": PLANET + ["--set", "random_episodes=1000000"],
    "sac_icm": ["--algo", "sac", "--unsup", "action", "--no-reward"],
    "sac_disagreement": ["--algo", "sac", "--unsup", "disagreement", "--no-reward"],
}
GRID = 24
ZERO_SHOT, ZERO_SHOT_EPISODES = ("plan2explore",), 10  # whose last evaluation is its result; the others' play one


def pendulum_state(observations):
    """(angle, angular velocity) [N, 2] of Pendulum-v1's observations (cos, sin, velocity)."""
    observations = np.asarray(observations, np.float64)
    return np.stack([np.arctan2(observations[:, 1], observations[:, 0]), observations[:, 2]], axis=1)


STATES = {"Pendulum-v1": (pendulum_state, ((-np.pi, np.pi), (-8.0, 8.0)))}


def visits(states, bounds, grid=GRID):
    """The grid's visit counts [grid, grid] of states [N, 2] within `bounds` ((low, high) per dimension); a state
    on the upper bound counts in the last cell."""
    counts, _, _ = np.histogram2d(states[:, 0], states[:, 1], bins=grid, range=bounds)
    return counts


def coverage(counts):
    """The share of the grid's cells visited at least once."""
    return float(np.count_nonzero(counts)) / counts.size


def run_counts(log_dir, env_id):
    states, bounds = STATES[env_id]
    observations = [episode["observation"] for episode in logdir.read_episodes(os.path.join(
        log_dir, logdir.TRAIN_EPISODES), None)] if os.path.isdir(os.path.join(log_dir, logdir.TRAIN_EPISODES)) else []
    if not observations:
        return np.zeros((GRID, GRID))
    return visits(states(np.concatenate(observations)), bounds)


def train(args, method, seed):
    log_dir = os.path.join(args.out, f"{method}-seed{seed}")
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--num-workers", "0", "--env-id", args.env_id,
            "--log-dir", log_dir, "--eval-every", str(args.steps), "--threads", "1",
            "--eval-episodes", str(ZERO_SHOT_EPISODES if method in ZERO_SHOT else 1),
            "--set", f"max_global_steps={args.steps}", "--set", f"seed={seed}", *METHODS[method]]
    if os.path.exists(os.path.join(log_dir, "config.json")):
        argv.append("--allow-config-change")  # a longer --steps continues the run
    print(f"{method} seed {seed}: {' '.join(argv[1:])}", flush=True)
    with open(os.path.join(args.out, f"{method}-seed{seed}.log"), "a") as out:
        subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=True)
    return log_dir


def summary(args, logs):
    from scipy import stats

    runs = []
    for (method, seed), log_dir in logs.items():
        rows = logdir.read_rows(os.path.join(log_dir, logdir.EVAL))
        runs.append({"method": method, "seed": seed, "coverage": coverage(run_counts(log_dir, args.env_id)),
                     "evaluation": float(rows[-1]["mean_reward"]) if rows else None})
    methods = {}
    for method in args.methods:
        values = [run["coverage"] for run in runs if run["method"] == method]
        methods[method] = {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1)) if len(values) > 1
                           else 0.0, "runs": len(values)}
    p2e = [run["coverage"] for run in runs if run["method"] == "plan2explore"]
    for method in args.methods:
        other = [run["coverage"] for run in runs if run["method"] == method]
        if method != "plan2explore" and len(p2e) > 1 and len(other) > 1 and np.std(p2e + other) > 0:
            methods[method]["welch_p_against_plan2explore"] = float(stats.ttest_ind(p2e, other,
                                                                                  equal_var=False).pvalue)
    return {"command": args.command, "env_id": args.env_id, "steps": args.steps, "grid": GRID, "methods": methods,
            "runs": runs}


def figure(args, logs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (_, bounds) = STATES[args.env_id]
    shown = [(method, logs[(method, args.seeds[0])]) for method in args.methods]
    fig, axes = plt.subplots(1, len(shown), figsize=(3.2 * len(shown), 3.2), squeeze=False)
    for axis, (method, log_dir) in zip(axes[0], shown):
        counts = run_counts(log_dir, args.env_id)
        axis.imshow(np.log1p(counts.T), origin="lower", aspect="auto",
                    extent=(*bounds[0], *bounds[1]), cmap="viridis")
        axis.set_title(f"{method}: {coverage(counts):.0%} of cells", fontsize="small")
        axis.set_xlabel("angle")
    axes[0, 0].set_ylabel("angular velocity")
    fig.suptitle(f"{args.env_id}: states visited in {args.steps:,} steps (seed {args.seeds[0]}, log counts)",
                 fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="Pendulum-v1", choices=tuple(STATES))
    parser.add_argument("--methods", nargs="+", default=tuple(METHODS), choices=tuple(METHODS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=3000, help="environment steps of every run")
    parser.add_argument("--out", default=os.path.join("tmp", "coverage"))
    args = parser.parse_args()
    args.command = shlex.join(["benchmarks/exploration_coverage.py"] + sys.argv[1:])
    os.makedirs(args.out, exist_ok=True)
    logs = {(method, seed): train(args, method, seed) for seed in args.seeds for method in args.methods}
    result = summary(args, logs)
    with open(os.path.join(args.out, "coverage.json"), "w") as handle:
        json.dump(result, handle, indent=2)
    figure(args, logs, os.path.join(args.out, "coverage.png"))
    for method, values in result["methods"].items():
        print(f"{method:>16}: coverage {values['mean']:.1%} +- {values['std']:.1%} over {values['runs']} seeds"
              + (f", Welch p {values['welch_p_against_plan2explore']:.3f} against plan2explore"
                 if "welch_p_against_plan2explore" in values else ""))


if __name__ == "__main__":
    main()
