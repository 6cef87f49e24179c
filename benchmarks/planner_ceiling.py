#!/usr/bin/env python
"""What `--algo planet`'s planner scores on Pendulum-v1 with a perfect model: the same cross-entropy method
(planet.cross_entropy_method, each preset's candidates, refits and horizon, the run's action repeat) scoring its
candidates with Pendulum's own dynamics and reward, written in the graph, in place of the world model's imagination.
The gap between this and a run's evaluations is the learned model's; this is the most the planner can give.

    python benchmarks/planner_ceiling.py --presets planet_cpu planet --action-repeat 2 --episodes 10

Plays --episodes greedy episodes per preset from the seeds a seed-0 run's evaluations use, and writes
<out>/planner_ceiling.json (each episode's return, the mean).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import constants  # noqa: E402
import logdir  # noqa: E402

EVAL_SEED = 10_000  # a seed-0 run's evaluation episodes start from these seeds (planet.LocalRun.evaluate)


def pendulum_returns(physics, state, actions, repeat):
    """The rewards Pendulum-v1 gives `actions` [N, horizon, 1] in [-1, 1] (scaled to its torque) from `state` [2]
    (angle, angular velocity), each held for `repeat` steps, summed: [N]. gymnasium's PendulumEnv.step, in the
    graph."""
    import tensorflow as tf

    count = tf.shape(actions)[0]
    angle, velocity = tf.fill([count], state[0]), tf.fill([count], state[1])
    total = tf.zeros([count])
    for step in range(actions.shape[1]):
        torque = physics["max_torque"] * actions[:, step, 0]
        for _ in range(repeat):
            normalised = tf.math.floormod(angle + np.pi, 2 * np.pi) - np.pi
            total -= normalised ** 2 + 0.1 * velocity ** 2 + 0.001 * torque ** 2
            velocity = tf.clip_by_value(
                velocity + (3 * physics["g"] / (2 * physics["l"]) * tf.sin(angle)
                            + 3.0 / (physics["m"] * physics["l"] ** 2) * torque) * physics["dt"],
                -physics["max_speed"], physics["max_speed"])
            angle = angle + velocity * physics["dt"]
    return total


def ceiling(preset, repeat, episodes):
    import gymnasium as gym
    import tensorflow as tf

    import planet

    tf1 = tf.compat.v1
    config = constants.config_from_overrides([f"action_repeat={repeat}"], preset)
    env = gym.make("Pendulum-v1")
    unwrapped = env.unwrapped
    physics = {name: float(getattr(unwrapped, name)) for name in ("g", "m", "l", "dt", "max_speed", "max_torque")}
    returns, started = [], time.time()
    with tf.Graph().as_default():
        state = tf1.placeholder(tf.float32, [2])
        plan = planet.cross_entropy_method(
            lambda actions: pendulum_returns(physics, state, actions, repeat), 1, config.cem_horizon, 1,
            config.cem_candidates, config.cem_iterations, config.cem_top)
        with tf1.Session() as session:
            for index in range(episodes):
                env.reset(seed=EVAL_SEED + index)
                total, done = 0.0, False
                while not done:
                    action = session.run(plan, {state: np.asarray(unwrapped.state, np.float32)})[0, 0]
                    for _ in range(repeat):  # held, as the run's ActionRepeat holds it
                        _, reward, terminated, truncated, _ = env.step(physics["max_torque"] * action)
                        total += reward
                        done = terminated or truncated
                        if done:
                            break
                returns.append(round(float(total), 1))
    env.close()
    return {"preset": preset, "candidates": config.cem_candidates, "iterations": config.cem_iterations,
            "top": config.cem_top, "horizon": config.cem_horizon, "action_repeat": repeat, "returns": returns,
            "mean": round(float(np.mean(returns)), 1), "seconds": round(time.time() - started)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=["planet_cpu", "planet"])
    parser.add_argument("--action-repeat", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", default=os.path.join(ROOT, "tmp", "planner_ceiling"))
    args = parser.parse_args(argv)
    unknown = sorted(set(args.presets) - set(constants.PRESETS))
    if unknown:
        parser.error(f"unknown preset {unknown[0]}; choose from {', '.join(sorted(constants.PRESETS))}")
    logdir.tf_environment()
    results = []
    for preset in args.presets:
        results.append(ceiling(preset, args.action_repeat, args.episodes))
        print(json.dumps(results[-1]), flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "planner_ceiling.json")
    with open(path, "w") as handle:
        json.dump({"command": "benchmarks/planner_ceiling.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                   "env_id": "Pendulum-v1", "results": results}, handle, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
