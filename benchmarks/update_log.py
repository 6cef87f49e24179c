#!/usr/bin/env python
"""Update-by-update log of one worker training alone in one process, to see how a run goes wrong.

No parameter server and no second worker: the worker's A3C trainer runs on a plain session, so every update is
logged, in order, with its losses, gradient norm, entropy, weight norm and its batch's returns, advantages and
actions. Writes `<out>/seed<N>.jsonl` (one line per update) and prints one summary line per seed: when the mean
of the last 100 episodes first reached 475 (CartPole's "solved"), the final mean, and collapses (the mean of 10
episodes falling from >= 400 to <= 20), the way CartPole runs fall into pushing one way in every state.

    python benchmarks/update_log.py --env-id CartPole-v1 --seeds 0 1 --seconds 150 --out tmp/update-log
    python benchmarks/update_log.py --seeds 0 1 --envs-per-worker 8 -- --set adam_epsilon=1e-8 --set grad_norm_clip=1
    python benchmarks/update_log.py --seeds 0 --value-stop-grad   # the value head may not change the shared layers

Seeds run one after another. Arguments after `--` are `--set` and `--preset` flags as train.py takes them.
"""
import argparse
import collections
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402

logdir.tf_environment()

import numpy as np  # noqa: E402

import constants  # noqa: E402
import envs  # noqa: E402

SOLVED_MEAN = 475.0  # gymnasium's threshold for CartPole-v1, over the last 100 episodes
HIGH, LOW, WINDOW = 400.0, 20.0, 10  # a collapse: the mean of WINDOW episodes falls from >= HIGH to <= LOW


class SummaryCatcher:
    """Stands in for the summary writer: keeps the values of the latest `model/*` and fps summaries."""

    def __init__(self, tf1):
        self.tf1 = tf1
        self.latest = {}

    def add_summary(self, summary, global_step):
        proto = summary if not isinstance(summary, bytes) else self.tf1.Summary.FromString(summary)
        self.latest.update({value.tag.split("/")[-1]: round(value.simple_value, 5) for value in proto.value})

    def flush(self):
        pass


def collapses(episodes):
    """[(seconds, length)] -> number of collapses."""
    count, high = 0, False
    for end in range(WINDOW, len(episodes) + 1):
        mean = sum(length for _, length in episodes[end - WINDOW:end]) / WINDOW
        if mean >= HIGH:
            high = True
        elif high and mean <= LOW:
            count, high = count + 1, False
    return count


def stop_value_gradient():
    """Build the value head on the shared layers' output through tf.stop_gradient: it still learns, but its
    loss no longer changes what the policy sees."""
    import tensorflow as tf

    import model
    linear = model.linear
    model.linear = lambda x, size, name, initializer=None: linear(
        tf.stop_gradient(x) if name == "value" else x, size, name, initializer)


def run_seed(args, overrides, preset, seed):
    import tensorflow as tf

    from a3c import A3C

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    tf1.reset_default_graph()
    config = constants.config_from_overrides(
        overrides + [f"envs_per_worker={args.envs_per_worker}", f"seed={seed}", "summary_every_updates=1"], preset)
    worker_envs = [envs.create_env(args.env_id) for _ in range(config.envs_per_worker)]
    for index, env in enumerate(worker_envs):
        env.reset(seed=seed * config.envs_per_worker + index)
        env.action_space.seed(seed * config.envs_per_worker + index)
    tf1.set_random_seed(seed)
    np.random.seed(seed)
    trainer = A3C(worker_envs, 0, config)
    recent = collections.deque(maxlen=100)
    episodes = []
    catcher = SummaryCatcher(tf1)
    start = time.time()
    solved_at = None

    def on_episode_end(stats):
        recent.append(stats.reward)
        episodes.append((time.time() - start, stats.length))

    path = os.path.join(args.out, f"seed{seed}.jsonl")
    with open(path, "w") as log, tf1.Session(config=tf1.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)) as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, catcher, on_episode_end)
        try:
            while time.time() - start < args.seconds:
                batch = trainer.process()
                mean = float(np.mean(recent)) if recent else 0.0
                seconds = time.time() - start
                if solved_at is None and len(recent) == recent.maxlen and mean >= SOLVED_MEAN:
                    solved_at = seconds
                record = dict(catcher.latest, seconds=round(seconds, 2), global_step=trainer.last_global_step,
                              mean100=round(mean, 1), steps=len(batch.actions),
                              returns_mean=round(float(batch.returns.mean()), 4),
                              advantages_mean=round(float(batch.advantages.mean()), 4),
                              advantages_std=round(float(batch.advantages.std()), 4),
                              actions_mean=round(float(batch.actions.mean()), 3))
                log.write(json.dumps(record) + "\n")
        finally:
            trainer.stop()
            for env in worker_envs:
                env.close()
    return {"seed": seed, "solved_at_seconds": None if solved_at is None else round(solved_at, 1),
            "final_mean100": round(float(np.mean(recent)), 1) if recent else None, "collapses": collapses(episodes),
            "global_step": trainer.last_global_step, "log": path}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--seconds", type=float, default=150.0, help="training time per seed")
    parser.add_argument("--envs-per-worker", type=int, default=1)
    parser.add_argument("--value-stop-grad", action="store_true",
                        help="an experiment: the value loss does not train the layers it shares with the policy")
    parser.add_argument("--out", default="tmp/update-log")
    parser.add_argument("extra", nargs="*", help="--set and --preset flags as train.py takes them, after --")
    args = parser.parse_args(argv)
    flags = argparse.ArgumentParser(prog="-- flags")
    flags.add_argument("--set", dest="overrides", action="append", default=[])
    flags.add_argument("--preset", default="auto", choices=constants.PRESET_CHOICES)
    extra = flags.parse_args(args.extra)
    try:
        envs.check_env_id(args.env_id)
        probe = envs.create_env(args.env_id)
        preset = constants.resolve_preset(extra.preset, envs.observation_kind(probe.observation_space),
                                          envs.env_family(args.env_id))
        probe.close()
        constants.config_from_overrides(extra.overrides, preset)
    except (envs.EnvError, constants.ConfigError) as error:
        sys.exit(f"update_log.py: error: {error}")
    os.makedirs(args.out, exist_ok=True)
    if args.value_stop_grad:
        stop_value_gradient()
    results = []
    for seed in args.seeds:
        print(f"seed {seed}: training for {args.seconds:.0f} s ({args.env_id}, preset {preset}, "
              f"K = {args.envs_per_worker}{', ' + ' '.join(extra.overrides) if extra.overrides else ''})", flush=True)
        result = run_seed(args, extra.overrides, preset, seed)
        print(json.dumps(result), flush=True)
        results.append(result)
    with open(os.path.join(args.out, "summary.json"), "w") as handle:
        json.dump({"env_id": args.env_id, "preset": preset, "overrides": extra.overrides,
                   "envs_per_worker": args.envs_per_worker, "value_stop_grad": args.value_stop_grad,
                   "seconds": args.seconds, "results": results}, handle, indent=2)
    print(f"wrote {os.path.join(args.out, 'summary.json')}")


if __name__ == "__main__":
    main()
