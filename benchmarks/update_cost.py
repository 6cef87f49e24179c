#!/usr/bin/env python
"""What one A3C update costs as its batch grows: the act call, the sync and the train call, each timed alone, with
the global variables in this process and on a parameter server in another.

The trainer of the preset (Doom's `doom` preset; the ICM with --unsup action) plays K_max environments whose steps
cost nothing (throughput.py's FreeEnv) until one batch of rollouts of rollout_maxlen steps is made; then, with
nothing else running in the process, the act call for K environments, the sync (global -> local) and the train
call (gradients, applied to the global variables) run again and again on the first K of them. A least-squares line
through each call's time against its steps gives its cost per call and per step, and with them the steps/s that
K environments a worker allow at most against K': where the doom preset's K = 4 loses to K = 16.

    python benchmarks/update_cost.py --env-id doom --unsup action --envs-per-worker 1 4 16
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import logdir  # noqa: E402

logdir.tf_environment()

import numpy as np  # noqa: E402

import cluster  # noqa: E402
import constants  # noqa: E402
import envs  # noqa: E402
import sessions  # noqa: E402
from throughput import FreeEnv  # noqa: E402

WARMUP_CALLS = 3
PS_READY_SECS = 60
# the parameter server: the cluster's task server, as worker.py's parameter servers make it
PS_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import logdir, sessions
sessions.task_server(logdir.import_tf(), json.loads(sys.argv[2]), "ps", 0).join()
"""


def timed(call, repeats):
    """The median seconds of `call()` over `repeats` calls, after WARMUP_CALLS."""
    for _ in range(WARMUP_CALLS):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def line(steps, seconds):
    """(milliseconds a call, microseconds a step) of the least-squares line through (steps, seconds)."""
    slope, intercept = np.polyfit(np.asarray(steps, float), np.asarray(seconds, float), 1)
    return round(1e3 * intercept, 2), round(1e6 * slope, 1)


def measure(env_id, unsup, counts, repeats, placement):
    """{K: {call: seconds}} of the act, sync and train calls, the global variables `placement` ("local": in this
    process; "ps": on a parameter server in a child process)."""
    from a3c import A3C

    tf1 = logdir.import_tf()
    game = envs.create_env(env_id, seed=0)
    spaces = game.observation_space, game.action_space
    preset = constants.resolve_preset("auto", envs.observation_kind(game.observation_space), envs.env_family(env_id),
                                      unsup)
    game.close()
    config = constants.config_from_overrides([f"envs_per_worker={max(counts)}"], preset)
    server = ps = None
    global_device = local_device = None
    target, session_config = "", sessions.local_session_config(*sessions.TASK_THREADS)
    if placement == "ps":
        ps_port, worker_port = cluster.free_ports(2)
        spec = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
        ps = subprocess.Popen([sys.executable, "-c", PS_SCRIPT, ROOT, json.dumps(spec)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = sessions.task_server(tf1, spec, "worker", 0)
        local_device = "/job:worker/task:0/cpu:0"
        global_device = sessions.ps_device_setter(1, local_device)
        target = server.target
        session_config = sessions.task_session_config(tf1, ["/job:ps", local_device])
        session_config.operation_timeout_in_ms = PS_READY_SECS * 1000
    try:
        with tf1.Graph().as_default():
            trainer = A3C([FreeEnv(*spaces, k) for k in range(max(counts))], 0, config,
                          clip_rewards=envs.clips_rewards(env_id, False), unsup=unsup,
                          global_device=global_device, local_device=local_device)
            with tf1.Session(target, config=session_config) as session:
                session.run(tf1.global_variables_initializer())
                trainer.start(session, None, lambda stats: None)
                try:
                    rollouts = trainer.pull_batch_from_queue()
                finally:
                    trainer.stop()
                return {count: calls(trainer, session, rollouts[:count], repeats) for count in counts}
    finally:
        if ps is not None:
            ps.kill()
            ps.wait()


def calls(trainer, session, rollouts, repeats):
    """The seconds of each call for these rollouts."""
    batch = trainer.batch_of(rollouts)
    feed = trainer.train_feed(batch, rollouts)
    fetches = [trainer.train_op, trainer.next_global_step, trainer.update_finite]
    policy = trainer.local_network
    observations = [rollout.observations[0] for rollout in rollouts]
    state = policy.initial_state(len(rollouts))
    return {"act": timed(lambda: policy.act(session, observations, state), repeats),
            "sync": timed(trainer.sync_local, repeats),
            "train": timed(lambda: session.run(fetches, feed), repeats),
            "steps": int(len(batch.actions))}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="doom")
    parser.add_argument("--unsup", default="action", help="the bonus (action: the ICM)")
    parser.add_argument("--envs-per-worker", type=int, nargs="+", default=[1, 4, 16], metavar="K")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls of each kind at each K")
    parser.add_argument("--placements", nargs="+", choices=("local", "ps"), default=["local", "ps"])
    parser.add_argument("--out", default=os.path.join("tmp", "bench-update-cost"))
    args = parser.parse_args()
    if len(set(args.envs_per_worker)) < 2 or min(args.envs_per_worker) < 1 or args.repeats < 1:
        parser.error("--envs-per-worker needs two or more distinct counts >= 1, and --repeats >= 1")
    os.makedirs(args.out, exist_ok=True)
    results = {}
    print(f"{args.env_id} --unsup {args.unsup} on {os.cpu_count()} cores, median of {args.repeats} calls", flush=True)
    print(f"{'placement':>9} {'K':>3} {'steps':>6} {'act ms':>7} {'sync ms':>8} {'train ms':>9} "
          f"{'update us/step':>15}", flush=True)
    for placement in args.placements:
        measured = measure(args.env_id, args.unsup, sorted(set(args.envs_per_worker)), args.repeats, placement)
        for count, found in measured.items():
            per_step = 1e6 * (found["sync"] + found["train"]) / found["steps"]
            print(f"{placement:>9} {count:>3} {found['steps']:>6} {1e3 * found['act']:>7.2f} "
                  f"{1e3 * found['sync']:>8.2f} {1e3 * found['train']:>9.2f} {per_step:>15.0f}", flush=True)
        counts = sorted(measured)
        fits = {"act": line(counts, [measured[k]["act"] for k in counts]),
                **{call: line([measured[k]["steps"] for k in counts], [measured[k][call] for k in counts])
                   for call in ("sync", "train")}}
        print(f"{'':>9} per call (ms) + per step (us): " + ", ".join(
            f"{call} {ms} + {us}" for call, (ms, us) in fits.items()) + " (act: per environment)", flush=True)
        results[placement] = {"calls": {str(count): found for count, found in measured.items()},
                              "fits_ms_per_call_us_per_step": fits}
    path = os.path.join(args.out, "update_cost.json")
    with open(path, "w") as handle:
        json.dump({"env_id": args.env_id, "unsup": args.unsup, "cpus": os.cpu_count(), "repeats": args.repeats,
                   "results": results}, handle, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
