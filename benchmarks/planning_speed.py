#!/usr/bin/env python
"""The cost of one planning decision of `--algo planet`: the filter's posterior step and the cross-entropy method over
the world model's imagined rewards, timed at PlaNet's setting (1,000 candidates, 10 refits, a horizon of 12) and at
the presets' others, for a model of PlaNet's sizes.

    python benchmarks/planning_speed.py --observation-size 3 --action-size 1 --decisions 20

Prints, for each preset, the median and the spread of --decisions timed decisions (after 3 untimed ones) in
milliseconds, and writes <out>/planning_speed.json. The model is untrained: a decision's cost does not depend on the
weights.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import algorithms  # noqa: E402
import constants  # noqa: E402
import logdir  # noqa: E402

WARM_UP = 3  # decisions before the timed ones: the graph's first runs allocate and optimise


def time_decisions(preset, observation_size, action_size, decisions, threads):
    import planet

    tf1 = planet.tf1
    config = constants.config_from_overrides([], preset)
    with planet.tf.Graph().as_default():
        model = planet.WorldModel(observation_size, action_size,
                                  planet.RSSM(config.state_size, config.belief_size, config.hidden_size),
                                  config.hidden_size)
        planner = planet.Planner(model, 1, config)
        session_config = tf1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
        with tf1.Session(config=session_config) as session:
            session.run(tf1.global_variables_initializer())
            rng = np.random.default_rng(0)
            seconds = []
            for index in range(WARM_UP + decisions):
                observation = rng.normal(size=(1, observation_size))
                started = time.perf_counter()
                planner.act(session, observation, rng)
                if index >= WARM_UP:
                    seconds.append(time.perf_counter() - started)
    return {"preset": preset, "candidates": config.cem_candidates, "iterations": config.cem_iterations,
            "top": config.cem_top, "horizon": config.cem_horizon, "decisions": decisions,
            "median_ms": 1000 * float(np.median(seconds)), "min_ms": 1000 * float(min(seconds)),
            "max_ms": 1000 * float(max(seconds))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--observation-size", type=int, default=3)
    parser.add_argument("--action-size", type=int, default=1)
    parser.add_argument("--decisions", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="TensorFlow's threads a pool (0: one per core)")
    parser.add_argument("--presets", nargs="+", default=list(algorithms.PLANET.hyperparameters))
    parser.add_argument("--out", default=os.path.join("tmp", "bench-planning"))
    args = parser.parse_args(argv)
    if args.decisions < 1 or min(args.observation_size, args.action_size) < 1:
        parser.error("--decisions, --observation-size and --action-size must be at least 1")
    unknown = [name for name in args.presets if name not in algorithms.PLANET.hyperparameters]
    if unknown:
        parser.error(f"not a preset of --algo planet: {', '.join(unknown)}")
    logdir.import_tf()
    results = []
    for preset in args.presets:
        result = time_decisions(preset, args.observation_size, args.action_size, args.decisions, args.threads)
        results.append(result)
        print(f"{preset}: {result['candidates']} candidates x {result['iterations']} refits, horizon "
              f"{result['horizon']}: {result['median_ms']:.0f} ms a decision (median of {args.decisions}; "
              f"{result['min_ms']:.0f}-{result['max_ms']:.0f})", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "planning_speed.json"), "w") as handle:
        json.dump({"observation_size": args.observation_size, "action_size": args.action_size,
                   "cpus": os.cpu_count(), "threads": args.threads, "results": results}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
