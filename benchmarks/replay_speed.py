#!/usr/bin/env python
"""The learner's updates per second with prioritized against uniform replay, measured in one run.

    python benchmarks/replay_speed.py --capacity 1000000 --batch-size 512 --seconds 20 --pairs 3

A replay of --capacity transitions (CartPole's 4-number observations; --image for 84x84 uint8 frames) is filled,
then the DQN learner's update (sample, train on the batch, new priorities: drawn and applied in a
replay.PrefetchingSampler's thread as the learners do, or --in-line) runs for --seconds with each kind of replay in
turn, --pairs times, alternating, so that a machine whose speed drifts weighs on both alike. Also the replay's own
part (sample and new priorities, no TensorFlow). Prints a line per measurement and the ratios, and
with --out writes them as JSON.
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import constants  # noqa: E402
import logdir  # noqa: E402
import replay  # noqa: E402


def filled_replay(capacity, shape, dtype, uniform, seed=0, fanout=16):
    memory = replay.PrioritizedReplay(capacity, shape, dtype, uniform=uniform, seed=seed, fanout=fanout)
    rng = np.random.default_rng(seed)
    chunk = 100_000
    for start in range(0, capacity, chunk):
        count = min(chunk, capacity - start)
        observations = (rng.random((count, *shape)) * (255 if dtype == np.uint8 else 1)).astype(dtype)
        memory.add(observations, rng.integers(0, 2, count), rng.random(count), np.full(count, 0.97),
                   observations, priorities=rng.random(count) * 2)
    return memory


def time_updates(update, seconds):
    """Updates per second of `update()` over `seconds` (after one untimed call)."""
    update()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        update()
        count += 1
    return count / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=20.0, help="per measurement")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--image", action="store_true", help="84x84x1 uint8 frames and the Nature CNN")
    parser.add_argument("--fanout", type=int, default=16, help="children per node of the sum tree (2: binary)")
    parser.add_argument("--in-line", action="store_true",
                        help="draw and update priorities in the learner's thread (not prefetched), as before")
    parser.add_argument("--out", help="JSON of every measurement")
    args = parser.parse_args(argv)
    if min(args.capacity, args.batch_size, args.pairs) < 1 or args.seconds <= 0 or args.batch_size > args.capacity:
        parser.error("--capacity, --batch-size, --pairs and --seconds must be positive, the batch within the capacity")
    tf1 = logdir.import_tf()
    import dqn

    shape, dtype, head = ((84, 84, 1), np.uint8, "nature") if args.image else ((4,), np.float32, "mlp")
    config = constants.config_from_overrides([f"batch_size={args.batch_size}", "learning_starts="
                                              f"{args.batch_size}"], "dqn" if args.image else "dqn_classic")
    network = dqn.DQN(shape, 2, config, head, dtype)
    memories = {kind: filled_replay(args.capacity, shape, dtype, uniform=kind == "uniform", fanout=args.fanout)
                for kind in ("uniform", "prioritized")}
    results = {"uniform": {"updates": [], "replay_only": []}, "prioritized": {"updates": [], "replay_only": []}}
    with tf1.Session() as session:
        session.run(tf1.global_variables_initializer())
        for pair in range(args.pairs):
            for kind, memory in memories.items():
                sampler = memory if args.in_line else replay.PrefetchingSampler(memory)

                def update():  # what offpolicy.learn_step does
                    slots, batch, weights = sampler.sample(args.batch_size, 0.4)
                    _, errors = network.train(session, batch, weights)
                    sampler.update_priorities(slots, errors)

                def replay_only():
                    slots, _, _ = memory.sample(args.batch_size, 0.4)
                    memory.update_priorities(slots, np.random.random(args.batch_size))

                rate = time_updates(update, args.seconds)
                if sampler is not memory:
                    sampler.close()
                alone = time_updates(replay_only, args.seconds / 4)
                results[kind]["updates"].append(rate)
                results[kind]["replay_only"].append(alone)
                print(f"pair {pair + 1}, {kind:11s}: {rate:8.1f} updates/s; the replay alone {alone:9.1f} "
                      f"samples+updates of {args.batch_size}/s", flush=True)
    ratios = [p / u for p, u in zip(results["prioritized"]["updates"], results["uniform"]["updates"])]
    print(f"prioritized / uniform updates/s per pair: {', '.join(f'{r:.2f}' for r in ratios)} "
          f"(median {np.median(ratios):.2f})")
    if args.out:
        record = {"argv": sys.argv, "fanout": args.fanout, "prefetch": not args.in_line,
                  "machine": f"{platform.node()}, {os.cpu_count()} cores",
                  "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": results, "ratios": ratios}
        logdir.write_json_atomically(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
