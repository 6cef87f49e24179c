#!/usr/bin/env python
"""Memory probe: does a worker's own memory grow when one part of it runs alone?

Three ways, one process each, the process's own (anonymous) resident memory printed every minute:

  env      the environment alone, `create_env(env_id)` stepped with random actions;
  trainer  one A3C trainer (runner thread, queue, updates) on a plain session, no parameter server, no
           summaries, CSVs or heartbeats: the learner's graph as the worker runs it;
  fake     the same trainer on a stand-in environment of the same observation and action spaces (random
           frames, episodes of 50-2,100 steps), to tell the game's part from TensorFlow's.
  remote   the trainer of `trainer` with its global variables on a parameter server in another process, through
           a gRPC session as the worker has it, but without the Supervisor, summaries, CSVs or heartbeats: the
           distributed runtime's part.

    python benchmarks/memory_probe.py --part env --env-id doom --minutes 5
    python benchmarks/memory_probe.py --part trainer --env-id doom --unsup action --minutes 9
    python benchmarks/memory_probe.py --part fake --env-id doom --unsup action --minutes 9
    python benchmarks/memory_probe.py --part remote --env-id doom --unsup action --minutes 9

The soak (`benchmarks/faults.py --soak`) measures the whole run; this narrows down which part grows.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402

logdir.tf_environment()

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import constants  # noqa: E402
import envs  # noqa: E402
import supervise  # noqa: E402

SHORTEST_EPISODE, LONGEST_EPISODE = 50, 2100  # the stand-in's episode lengths (Doom's timeout is 2,100 steps)


class StandIn(gym.Env):
    """Random observations in the spaces of a real environment; episodes end by truncation."""

    def __init__(self, observation_space, action_space):
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps, self.length = 0, self.np_random.integers(SHORTEST_EPISODE, LONGEST_EPISODE)
        return self._observation(), {}

    def step(self, action):
        self.steps += 1
        return self._observation(), 0.0, False, self.steps >= self.length, {}

    def _observation(self):
        return self.np_random.random(self.observation_space.shape, dtype=np.float32)


class Minutes:
    """Prints the own resident memory once a minute, with what `counts` says has been done."""

    def __init__(self, minutes):
        self.start, self.minutes, self.next = time.time(), minutes, 0

    def running(self, counts):
        elapsed = time.time() - self.start
        if elapsed >= self.next * 60:
            print(f"minute {self.next}: {counts()}, own resident memory "
                  f"{supervise.resident_mb(field='RssAnon'):.0f} MB", flush=True)
            self.next += 1
        return elapsed < self.minutes * 60


def probe_env(args):
    env = envs.create_env(args.env_id, seed=0)
    steps, clock = 0, Minutes(args.minutes)
    while clock.running(lambda: f"{steps} steps"):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    env.close()


def probe_trainer(args):
    import tensorflow as tf

    from a3c import A3C

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    config = constants.config_from_overrides([f"envs_per_worker={args.envs_per_worker}"], args.preset)
    games = [envs.create_env(args.env_id, seed=index) for index in range(config.envs_per_worker)]
    if args.part == "fake":
        spaces_of = [(game.observation_space, game.action_space) for game in games]
        for game in games:
            game.close()
        games = [envs.ExtrinsicReward(StandIn(*spaces)) for spaces in spaces_of]
        for index, game in enumerate(games):
            game.reset(seed=index)
    threads = envs.steps_in_threads(args.env_id)
    session_config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
    target, parameter_server = "", None
    if args.part == "remote":
        parameter_server, target, devices = remote_cluster(tf1)
        session_config = tf1.ConfigProto(device_filters=["/job:ps", devices["local_device"]])
        trainer = A3C(games, 0, config, unsup=args.unsup, env_threads=threads, **devices)
    else:
        trainer = A3C(games, 0, config, unsup=args.unsup, env_threads=threads)
    with tf1.Session(target, config=session_config) as session:
        session.run(tf1.global_variables_initializer())
        trainer.start(session, None, lambda stats: None)
        clock = Minutes(args.minutes)
        while clock.running(lambda: f"{trainer.updates} updates, {trainer.steps_trained} steps"):
            trainer.process()
        trainer.stop()
    for game in games:
        game.close()
    if parameter_server:
        parameter_server.kill()


def remote_cluster(tf1):
    """A parameter server in a process of its own and this process's worker server on free localhost ports:
    (the ps process, the worker's session target, A3C's device arguments)."""
    import socket
    import subprocess

    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    spec = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    parameter_server = subprocess.Popen([sys.executable, os.path.join(ROOT, "worker.py"), "--job-name", "ps",
                                         "--ps-hosts", spec["ps"][0], "--worker-hosts", spec["worker"][0]])
    server = tf1.train.Server(tf1.train.ClusterSpec(spec), job_name="worker", task_index=0,
                              config=tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2))
    worker_device = "/job:worker/task:0/cpu:0"
    devices = {"global_device": tf1.train.replica_device_setter(1, worker_device=worker_device),
               "local_device": worker_device}
    return parameter_server, server.target, devices


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("env", "trainer", "fake", "remote"), required=True)
    parser.add_argument("--env-id", default="doom")
    parser.add_argument("--unsup", default="action", choices=constants.CURIOSITY_CHOICES)
    parser.add_argument("--preset", default="paper", choices=tuple(constants.PRESETS))
    parser.add_argument("--envs-per-worker", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=9.0)
    args = parser.parse_args(argv)
    try:
        envs.check_env_id(args.env_id)
    except envs.EnvError as error:
        sys.exit(f"memory_probe.py: error: {error}")
    if args.part == "env":
        probe_env(args)
    else:
        probe_trainer(args)


if __name__ == "__main__":
    main()
