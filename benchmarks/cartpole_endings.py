#!/usr/bin/env python
"""Why a CartPole run's greedy episodes end: the cart off the track (|x| > 2.4), the pole down (|angle| > 12
degrees), or the 500-step limit; the state at each ending.

    python benchmarks/cartpole_endings.py --log-dir tmp/CartPole-v1 --episodes 30

Plays the run's last checkpoint (A3C, DQN or SAC: demo.py's agents) greedily from --episodes starts (seeds 1000,
1001, ...) and prints one line per episode and the count of each ending. A DQN that forgets on CartPole
(docs/history/2026-11-25-dqn.md) lets the cart drift off one end with the pole upright; this tells that from a pole
that falls.
"""
import argparse
import math
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import constants  # noqa: E402
import demo  # noqa: E402
import envs  # noqa: E402
import evaluation  # noqa: E402
import logdir  # noqa: E402

TRACK_LIMIT = 2.4  # gymnasium's CartPole: x_threshold
ANGLE_LIMIT = 12 * 2 * math.pi / 360  # gymnasium's CartPole: theta_threshold_radians, as it computes it
FIRST_SEED = 1000


def ending(state, length, max_steps):
    """'cart', 'pole' or 'limit' from CartPole's state (x, x', angle, angle') when the episode ended."""
    if abs(state[0]) > TRACK_LIMIT:
        return "cart"
    if abs(state[2]) > ANGLE_LIMIT:
        return "pole"
    return "limit" if length >= max_steps else "other"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("--episodes", type=int, default=30)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        sys.exit("cartpole_endings.py: --episodes must be >= 1")
    if constants.read_run_config(args.log_dir) is None:
        sys.exit(f"cartpole_endings.py: {args.log_dir} has no {logdir.CONFIG}: is it a run's log directory?")
    run, config = demo.run_settings(args.log_dir)
    if not run["env_id"].startswith("CartPole"):
        sys.exit(f"cartpole_endings.py: {args.log_dir} is a run of {run['env_id']}, not CartPole")
    train_dir = logdir.checkpoints_dir(args.log_dir)
    if not os.path.exists(os.path.join(train_dir, "checkpoint")):
        sys.exit(f"cartpole_endings.py: {demo.NO_CHECKPOINT.format(train_dir)}")
    env = envs.create_env(run["env_id"], continuous_actions=run.get("algo") == "sac")
    max_steps = env.spec.max_episode_steps
    counts, rng = {}, np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint, step = demo.snapshot_checkpoint(demo.import_tf(), train_dir, None, scratch)
        agent = demo.make_agent(argparse.Namespace(epsilon=0.0, seed=0), env, run, config, checkpoint)
        print(f"{run['env_id']}: greedy policy, checkpoint at global step {step}")
        for index in range(args.episodes):
            episode, _, _ = evaluation.play_episode(env, agent, True, rng, max_steps, False, False, seed=FIRST_SEED + index)
            length, state = episode["length"], env.unwrapped.state  # the state the episode ended in
            why = ending(state, length, max_steps)
            counts[why] = counts.get(why, 0) + 1
            print(f"episode {index}: {length} steps, {why}; x {state[0]:+.2f}, x' {state[1]:+.2f}, "
                  f"angle {state[2]:+.3f}, angle' {state[3]:+.2f}")
        agent.close()
    print("endings: " + ", ".join(f"{why} {count}" for why, count in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
