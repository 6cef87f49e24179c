#!/usr/bin/env python
"""Throughput benchmark: environment steps per second per worker, and in aggregate, for 1..N workers.

Measurements per worker count (and, for acting and training, per number K of environments per worker):
  env              the environment alone, random actions (the ceiling);
  acting           each worker process plays K environments with the LSTM policy (one session.run per step
                   for all K), no training;
  acting+icm       the same with the ICM bonus, computed as the runner does: inside the next act call;
  acting+icm/step  the same with the bonus computed the original's way: a second session.run per step (K = 1);
  learner          one worker's runner and trainer threads, as in training, on K environments whose steps cost
                   nothing (the game's spaces, one fixed observation) and with the variables in the process:
                   what the model's arithmetic alone allows, the ceiling of training on these cores
                   (--unsup as for training);
  training         the real run: `train.py --mode child` (parameter server + workers + updates), measured
                   from the tasks' heartbeats after a warm-up; with --algo impala a learner and N actors, the
                   steps the learner trained a second.
Each line also gives the rate as a fraction of the environment-only rate of the same run.

    python benchmarks/throughput.py --workers 1 2 --seconds 30
    python benchmarks/throughput.py --env-id doom --workers 2 --envs-per-worker 1 4 8 --unsup action \
        --measurements env training
    python benchmarks/throughput.py --env-id doom --workers 8 --envs-per-worker 16 --unsup action \
        --measurements training --num-ps 1 2          # one parameter server against two, and their CPU
    python benchmarks/throughput.py --env-id doom --workers 2 4 8 --unsup action --measurements training \
        --num-ps 1 2 --set rollout_maxlen=1          # updates as small as they get: the parameter servers' load
    python benchmarks/throughput.py --env-id doom --workers 1 2 --envs-per-worker 16 --unsup action \
        --measurements env learner training          # the game's ceiling, the arithmetic's, and what training gets
    python benchmarks/throughput.py --env-id doom --workers 1 2 --envs-per-worker 16 --unsup action \
        --measurements training --cores-per-worker 1 # scaling per core: worker i on core i alone
    python benchmarks/throughput.py --env-id doom --workers 1 8 14 --envs-per-worker 4 --unsup action \
        --measurements training --algo impala        # IMPALA: a learner and 1, 8, 14 actors
    python benchmarks/throughput.py --env-id PongDeterministic-v4 --workers 2 --envs-per-worker 1 16 \
        --rollout-maxlen 20 5 --measurements env training  # each K with rollouts of 20 and of 5 steps
"""
import argparse
import collections
import itertools
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

import gymnasium

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import algorithms  # noqa: E402
import cluster  # noqa: E402
import logdir  # noqa: E402

logdir.tf_environment()

import envs  # noqa: E402
import supervise  # noqa: E402
import train  # noqa: E402

WARMUP_SECS = 10.0


def env_only(env_id, seconds, seed, env_wrap=False):
    env = envs.create_env(env_id, env_wrap=env_wrap, seed=seed, continuous_actions=True)  # any action space
    try:
        env.reset(seed=seed)
        steps, start = 0, time.time()
        while time.time() - start < seconds:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
        return steps / (time.time() - start)
    finally:
        env.close()  # a pool worker is terminated without clean-up: a game engine would outlive it


def acting(env_id, seconds, seed, bonus="none", count=1, env_wrap=False):
    """Steps/s of one process playing `count` environments with the LSTM policy, no training.
    bonus="rollout": with the ICM, its bonus computed as env_runner does (inside the next act call);
    bonus="per-step": with the ICM, its bonus computed by a second session.run after every step, as the
    original did (one environment)."""
    from acting import env_runner, env_stepper
    from curiosity import BetaScaler, StateActionPredictor
    from model import LSTMPolicy

    tf1 = logdir.import_tf()
    worker_envs = [envs.create_env(env_id, env_wrap=env_wrap, seed=seed * count + k) for k in range(count)]
    env = worker_envs[0]
    shape, num_actions = env.observation_space.shape, env.action_space.n
    policy = LSTMPolicy(shape, num_actions)
    with tf1.variable_scope("predictor"):
        predictor = StateActionPredictor(shape, num_actions) if bonus != "none" else None
    config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
    with tf1.Session(config=config) as session, env_stepper(count, envs.steps_in_threads(env_id)) as step_all:
        session.run(tf1.global_variables_initializer())
        if bonus == "per-step":
            steps = per_step_bonus_loop(session, env, policy, predictor)
        else:
            steps = (sum(len(rollout) for rollout in batch)
                     for batch in env_runner(worker_envs, policy, session, 20, lambda stats: None, predictor,
                                             BetaScaler(0.01), step_all=step_all))
        try:
            return timed_rate(steps, seconds)
        finally:
            for each in worker_envs:
                each.close()


def per_step_bonus_loop(session, env, policy, predictor):
    """The original's runner: act, step, then one more session.run for the bonus of that step."""
    observation, _ = env.reset()
    state = policy.initial_state()
    while True:
        actions, _, state = policy.act(session, [observation], state)
        next_observation, _, terminated, truncated, _ = env.step(int(actions[0]))
        session.run(predictor.bonus_per_step, predictor.feed([observation], [next_observation], actions))
        observation = next_observation
        if terminated or truncated:
            observation, _ = env.reset()
            state = policy.initial_state()
        yield 1


def timed_rate(step_counts, seconds, warmup=2.0):
    """Steps per second over `seconds`, after `warmup` seconds, of an iterator of step counts."""
    began = time.time()
    start, steps = None, 0
    for count in step_counts:
        now = time.time()
        if start is None and now - began >= warmup:
            start, steps = now, 0
        if start is not None and now - start >= seconds:
            break
        steps += count
    return steps / (time.time() - start)


def acting_plain(env_id, seconds, seed, count, env_wrap):
    return acting(env_id, seconds, seed, count=count, env_wrap=env_wrap)


def acting_icm_rollout(env_id, seconds, seed, count, env_wrap):
    return acting(env_id, seconds, seed, bonus="rollout", count=count, env_wrap=env_wrap)


def acting_icm_per_step(env_id, seconds, seed, count, env_wrap):
    return acting(env_id, seconds, seed, bonus="per-step", env_wrap=env_wrap)


def env_alone(env_id, seconds, seed, count, env_wrap):
    return env_only(env_id, seconds, seed, env_wrap)


FREE_EPISODE_STEPS = 525  # doomSparse's time limit in agent steps: episodes end, and their LSTM state resets


class FreeEnv(gymnasium.Env):
    """An environment whose steps cost nothing, with a game's spaces: one fixed random observation, reward 0,
    episodes of FREE_EPISODE_STEPS. Hand-written: nothing in gymnasium returns a given space's sample for free."""

    def __init__(self, observation_space, action_space, seed):
        self.observation_space, self.action_space = observation_space, action_space
        self.observation_space.seed(seed)
        self.observation = self.observation_space.sample()
        self.steps = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self.observation, {}

    def step(self, action):
        self.steps += 1
        return self.observation, 0.0, False, self.steps >= FREE_EPISODE_STEPS, {}


def learner(env_id, seconds, seed, count, env_wrap, unsup="none"):
    """Steps/s of one worker's runner and trainer threads (the A3C trainer of train.py's workers, its preset's
    hyper-parameters) on `count` FreeEnvs, with the global variables in this process: no game, no network."""
    import constants
    from a3c import A3C

    tf1 = logdir.import_tf()
    game = envs.create_env(env_id, env_wrap=env_wrap, seed=seed)
    spaces = game.observation_space, game.action_space
    preset = constants.resolve_preset("auto", envs.observation_kind(game.observation_space), envs.env_family(env_id),
                                      unsup)
    game.close()
    config = constants.config_from_overrides([f"envs_per_worker={count}"], preset)
    trainer = A3C([FreeEnv(*spaces, seed * count + k) for k in range(count)], 0, config,
                  clip_rewards=envs.clips_rewards(env_id, env_wrap), unsup=unsup)
    session_config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
    with tf1.Session(config=session_config) as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        try:
            return timed_rate((len(trainer.process().actions) for _ in itertools.count()), seconds)
        finally:
            trainer.stop()


def in_processes(function, env_id, seconds, workers, count, env_wrap=False, *more):
    """Per-worker steps/s of `function` run in `workers` processes at once."""
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return pool.starmap(function, [(env_id, seconds, seed, count, env_wrap, *more) for seed in range(workers)])


def task_status(log_dir, keys):
    """The heartbeats (status_<key>.json) of the tasks `keys`, or None while one is missing."""
    records = [logdir.read_json(logdir.heartbeat_json(log_dir, key)) for key in keys]
    return None if any(record is None or "seconds_in" not in record for record in records) else records


def measured_tasks(algo, workers):
    """(the heartbeat keys of the tasks that play, of those that train) in a run of `algo` with `workers` players:
    A3C's workers do both; IMPALA's actors play and its learner trains on what they send."""
    row = algorithms.get(algo)
    players = [cluster.heartbeat_key(row.playing.job, task) for task in range(workers)]
    learns = [cluster.heartbeat_key(row.serving.job, 0)] if row.serving.chief else players
    return players, learns


def cpu_seconds(pids):
    """{name: CPU seconds (user + system) so far} of the processes {name: pid}."""
    found = {name: supervise.cpu_seconds(pid) for name, pid in pids.items()}
    return {name: seconds for name, seconds in found.items() if seconds is not None}


def pin(pid, cores):
    """Confine a process, every thread of it and every process below it (a worker's game engines) to `cores`:
    sched_setaffinity acts on one thread, and threads started later inherit their starter's set."""
    for process in [pid, *train.descendants([pid])]:
        try:
            threads = os.listdir(f"/proc/{process}/task")
        except OSError:  # gone meanwhile
            continue
        for thread in threads:
            try:
                os.sched_setaffinity(int(thread), cores)
            except OSError:
                pass


def pin_workers(log_dir, cores_per_worker, playing_job):
    """Player i (A3C's worker, an actor) on cores [i * C, (i + 1) * C) (modulo the machine's), the rest unpinned:
    {name: cores}. Then one worker's rate against several workers' is scaling per core, not one worker spreading
    its threads and engines over every core against several sharing them."""
    placed = {}
    for name, pid in train.run_roles(log_dir).items():
        found = cluster.parse_task_name(name)
        if found is not None and found[0] == playing_job:
            first = found[1] * cores_per_worker
            placed[name] = sorted({(first + offset) % os.cpu_count() for offset in range(cores_per_worker)})
            pin(pid, placed[name])
    return placed


def training_command(env_id, workers, out, exp_id, unsup, count, env_wrap, num_ps, overrides, algo, rollout_maxlen):
    """The log directory and train.py's command of one training measurement: K = `count`, and the rollout length
    after --set's overrides (a later --set wins) where one is measured."""
    length = f"-t{rollout_maxlen}" if rollout_maxlen else ""
    log_dir = os.path.join(out, f"train-{algo}-{workers}x{count}{length}-ps{num_ps}")
    argv = [sys.executable, os.path.join(ROOT, "train.py"), "--mode", "child", "--num-workers", str(workers),
            "--algo", algo, "--env-id", env_id, "--log-dir", log_dir, "--expId", str(exp_id), "--no-tensorboard",
            "--unsup", unsup, "--envs-per-worker", str(count)] + (["--envWrap"] if env_wrap else [])
    argv += ["--num-ps", str(num_ps)] if algorithms.get(algo).serving.job == cluster.PS.job else []
    argv += [part for override in overrides for part in ("--set", override)]
    argv += ["--set", f"rollout_maxlen={rollout_maxlen}"] if rollout_maxlen else []
    return log_dir, argv


def training(env_id, seconds, workers, out, exp_id, unsup="none", count=1, env_wrap=False, num_ps=1, overrides=(),
             cores_per_worker=0, algo="a3c", rollout_maxlen=None):
    """Aggregate steps/s trained by a real run over `seconds` after a warm-up, from the tasks' heartbeats; with it,
    each thread's seconds per environment step by phase (mean over the players; IMPALA's learner apart), the
    processes' memory and the CPU use (percent of one core) of the tasks that hold the variables (A3C's parameter
    servers, IMPALA's learner) over the same seconds."""
    row = algorithms.get(algo)
    log_dir, argv = training_command(env_id, workers, out, exp_id, unsup, count, env_wrap, num_ps, overrides, algo,
                                     rollout_maxlen)
    shutil.rmtree(log_dir, ignore_errors=True)
    players, learns = measured_tasks(algo, workers)
    launcher = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and task_status(log_dir, players + learns) is None:
            time.sleep(1)
        placed = pin_workers(log_dir, cores_per_worker, row.playing.job) if cores_per_worker else None
        time.sleep(WARMUP_SECS)
        servers = {name: pid for name, pid in train.run_roles(log_dir).items()
                   if cluster.parse_task_name(name)[0] == row.serving.job}
        before, cpu_before, started = task_status(log_dir, players + learns), cpu_seconds(servers), time.time()
        time.sleep(seconds)
        after, cpu_after, elapsed = task_status(log_dir, players + learns), cpu_seconds(servers), time.time() - started
        memory = train.run_memory_mb(log_dir)
    finally:
        train.stop_run(log_dir, None, quiet=True)
        launcher.wait(timeout=60)
    if before is None or after is None:
        raise SystemExit(f"the run in {log_dir} did not start training within 120 s: see its *.out")
    tasks = {key: (start, end) for key, start, end in zip(players + learns, before, after)}
    rates = [steps_per_sec(*tasks[key]) for key in learns]
    updates = sum(tasks[key][1]["updates"] - tasks[key][0]["updates"] for key in learns)
    ps_seconds = {name: cpu_after[name] - cpu_before[name] for name in sorted(cpu_before) if name in cpu_after}
    ps_cpu = {name: round(100 * seconds / elapsed) for name, seconds in ps_seconds.items()}
    # One update moves the same bytes to and from the parameter servers whatever its batch (the gradients of
    # every global variable, then their values at the next sync), so their CPU per update says how many
    # updates per second they can serve, and so at how many workers they stop keeping up.
    profile = {"microseconds_per_step": phase_microseconds([tasks[key] for key in players]),
               "rss_mb": memory, "ps_cpu_percent": ps_cpu, "worker_cores": placed,
               "updates_per_sec": round(updates / elapsed, 1),
               "ps_cpu_ms_per_update": round(1000 * sum(ps_seconds.values()) / updates, 2) if updates else None}
    if learns != players:
        profile["learner_microseconds_per_step"] = phase_microseconds([tasks[key] for key in learns])
        profile["played_steps_per_sec"] = round(sum(steps_per_sec(*tasks[key]) for key in players), 1)
    return rates, profile


def steps_per_sec(start, end):
    """A task's steps (played or trained) a second between two of its heartbeats."""
    return (end["steps_trained"] - start["steps_trained"]) / (end["time"] - start["time"])


def phase_microseconds(spans):
    """Microseconds an environment step in each phase, the mean over tasks of (start, end) heartbeats, each task's
    seconds divided by the steps it played or trained itself."""
    per_step = collections.defaultdict(float)
    for start, end in spans:
        steps = max(end["steps_trained"] - start["steps_trained"], 1)
        for phase, value in end["seconds_in"].items():
            per_step[phase] += (value - start["seconds_in"][phase]) / steps / len(spans)
    return {phase: round(1e6 * value) for phase, value in per_step.items()}


def print_profile(profile):
    """Where a worker's time goes, per environment step, in each of its two threads (IMPALA: an actor's phases,
    then the learner's per step trained)."""
    from sessions import Timings

    micro = profile["microseconds_per_step"]
    learner = profile.get("learner_microseconds_per_step")
    threads = ((("actor", Timings.RUNNER + ("sync",), micro), ("learner", Timings.TRAINER, learner)) if learner else
               (("runner", Timings.RUNNER, micro), ("trainer", Timings.TRAINER, micro)))
    for thread, phases, values in threads:
        busy = ", ".join(f"{phase} {values[phase]}" for phase in phases if phase in values)
        total = sum(values.get(phase, 0) for phase in phases)
        print(f"{'':>12}{thread}, us per env step: {busy} (sum {total})", flush=True)
    if learner:
        print(f"{'':>12}the actors sent {profile['played_steps_per_sec']:.0f} steps/s", flush=True)
    print(f"{'':>12}resident MB: " + ", ".join(f"{name} {mb}" for name, mb in profile["rss_mb"].items()), flush=True)
    if profile["worker_cores"]:
        print(f"{'':>12}pinned to cores: " + ", ".join(f"{name} {','.join(map(str, cores))}"
                                                      for name, cores in profile["worker_cores"].items()), flush=True)
    print(f"{'':>12}CPU of the tasks holding the variables, % of a core: "
          + ", ".join(f"{name} {percent}" for name, percent in profile["ps_cpu_percent"].items())
          + f"; {profile['updates_per_sec']} updates/s, {profile['ps_cpu_ms_per_update']} ms of their CPU per "
            f"update", flush=True)


MEASUREMENTS = {"env": env_alone, "acting": acting_plain, "acting+icm": acting_icm_rollout,
                "acting+icm/step": acting_icm_per_step, "learner": learner, "training": None}
PER_K = {"acting", "acting+icm", "learner", "training"}  # measured for each --envs-per-worker


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--measurements", nargs="+", choices=tuple(MEASUREMENTS), default=tuple(MEASUREMENTS))
    parser.add_argument("--envs-per-worker", type=int, nargs="+", default=[1], metavar="K",
                        help="environments per worker for acting and training")
    parser.add_argument("--exp-id", type=int, default=350)
    parser.add_argument("--num-ps", type=int, nargs="+", default=[1], metavar="P",
                        help="parameter servers of the training measurement (each P is measured)")
    parser.add_argument("--unsup", default="none",
                        help="curiosity of the learner and training measurements (action: the ICM)")
    parser.add_argument("--env-wrap", action="store_true", help="the paper's preprocessing (train.py's --envWrap)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="a hyper-parameter of the training measurement (train.py's --set; repeatable)")
    parser.add_argument("--rollout-maxlen", type=int, nargs="+", default=[None], metavar="T",
                        help="training: the rollout lengths measured at each K (default: the preset's)")
    parser.add_argument("--cores-per-worker", type=int, default=0, metavar="C",
                        help="training: worker i and its engines on cores [i*C, (i+1)*C) only (0: unpinned)")
    parser.add_argument("--algo", default="a3c", choices=("a3c", "impala"),
                        help="training: A3C's workers, or IMPALA's learner and --workers actors")
    parser.add_argument("--out", default=os.path.join("tmp", "bench-throughput"))
    args = parser.parse_args()
    if any(length is not None and length < 1 for length in args.rollout_maxlen):
        parser.error("--rollout-maxlen must be at least 1")
    if args.cores_per_worker < 0 or args.cores_per_worker > os.cpu_count():
        parser.error(f"--cores-per-worker must be 0 to {os.cpu_count()} (the machine's cores)")
    os.makedirs(args.out, exist_ok=True)
    results = []
    wrap = " with --envWrap" if args.env_wrap else ""
    print(f"{args.env_id}{wrap} on {os.cpu_count()} CPU cores, {args.seconds:.0f} s per measurement", flush=True)
    print(f"{'workers':>7} {'K':>3} {'measurement':>18} {'steps/s per worker':>19} {'aggregate steps/s':>18} "
          f"{'of env':>7}", flush=True)
    for workers in args.workers:
        env_rate = None
        for name in args.measurements:
            for count, num_ps, length in [(count, num_ps, length)
                                          for count in (args.envs_per_worker if name in PER_K else [1])
                                          for num_ps in (args.num_ps if name == "training" else [1])
                                          for length in (args.rollout_maxlen if name == "training" else [None])]:
                profile = None
                if name == "training":
                    per_worker, profile = training(args.env_id, args.seconds, workers, args.out, args.exp_id,
                                                   args.unsup, count, args.env_wrap, num_ps, args.overrides,
                                                   args.cores_per_worker, args.algo, length)
                else:
                    more = (args.unsup,) if name == "learner" else ()
                    per_worker = in_processes(MEASUREMENTS[name], args.env_id, args.seconds, workers, count,
                                              args.env_wrap, *more)
                label = f"{name} ({num_ps} ps)" if name == "training" and args.num_ps != [1] else name
                label = f"{args.algo} {label}" if name == "training" and args.algo != "a3c" else label
                label = f"{label} T={length}" if length else label
                total = sum(per_worker)
                env_rate = total if name == "env" else env_rate
                ratio = f"{total / env_rate:7.2f}" if env_rate else f"{'':>7}"
                results.append({"workers": workers, "envs_per_worker": count, "measurement": name,
                                "num_ps": num_ps if name == "training" else None, "rollout_maxlen": length,
                                "steps_per_sec_per_worker": round(total / workers, 1),
                                "aggregate_steps_per_sec": round(total, 1),
                                "fraction_of_env": round(total / env_rate, 3) if env_rate else None,
                                **({"profile": profile} if profile else {})})
                print(f"{workers:>7} {count:>3} {label:>18} {total / workers:>19.0f} {total:>18.0f} {ratio}",
                      flush=True)
                if profile:
                    print_profile(profile)
    with open(os.path.join(args.out, "throughput.json"), "w") as handle:
        json.dump({"env_id": args.env_id, "env_wrap": args.env_wrap, "unsup": args.unsup, "cpus": os.cpu_count(),
                   "algo": args.algo,
                   "overrides": args.overrides, "cores_per_worker": args.cores_per_worker,
                   "seconds": args.seconds,
                   "results": results},
                  handle, indent=2)
    print(f"wrote {os.path.join(args.out, 'throughput.json')}")


if __name__ == "__main__":
    main()
