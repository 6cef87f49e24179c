"""What a run is, as each of its processes sets it up: its cluster from the flags, its environments, and the
hyper-parameters it trains with, recorded in <log-dir>/config.json.

Every learner's task (a3c.run_task, apex.run_task), the one-process runs and playback build their environments and
their configuration here, so that they cannot drift apart. This module does not import TensorFlow.
"""
import collections
import logging
import os
import sys
import time

import algorithms
import cluster as roles
import constants
import envs
import logdir
from constants import UsageError

logger = logging.getLogger("runs")


def algorithm_of(args):
    """The row of the run's --algo (parsed flags, or config.json's "run" as a namespace or dict)."""
    name = args.get("algo") if isinstance(args, dict) else getattr(args, "algo", None)
    return algorithms.get(name)


def make_env(run, render_mode=None, env_id=None):
    """The environment of a run as its learner sees it: `run` is the run's flags (parsed arguments, or config.json's
    "run"), `env_id` another game with the same observations and actions. The algorithm's row says whether actions
    may be continuous and which frames a replay learner stacks."""
    get = run.get if isinstance(run, dict) else lambda name, default=None: getattr(run, name, default)
    row = algorithm_of(run)
    return envs.create_env(env_id or get("env_id"), env_wrap=get("env_wrap", False), no_reward=get("no_reward", False),
                           no_life_reward=get("no_life_reward", False), render_mode=render_mode,
                           continuous_actions=row.continuous, **envs.learner_frames(row.replay, get("design_head")))


def cluster_spec(args):
    """The cluster of a task's flags (--ps-hosts ... --actor-hosts, or what TF_CONFIG or Slurm filled in),
    {job: [host:port, ...]}, of the jobs of its algorithm."""
    row = algorithm_of(args)
    return roles.from_hosts({job: getattr(args, roles.hosts_attribute(job)) for job in row.jobs}, row.name)


def describe_cluster(args):
    """The line every process logs: the cluster's digest (train.py prints the same on each machine) and hosts."""
    spec = cluster_spec(args)
    return f"cluster {roles.digest(spec)}: {roles.describe(spec)}"


def run_flags(args):
    """The flags that define what a log directory's run is, as stored in config.json: with the number of playing
    tasks (A3C's workers, Ape-X's actors) of its cluster, or 0 for a run in one process."""
    hosts = getattr(args, roles.hosts_attribute(algorithm_of(args).playing.job), None)
    return dict(constants.recorded_run_flags(args), num_workers=len(hosts.split(",")) if hosts else args.num_workers)


def write_config(log_dir, args, preset, config, saved=None):
    """`<log-dir>/config.json`: every effective hyper-parameter and the run's flags, and the history of changes
    allowed on relaunches (from `saved`, the file as it was)."""
    record = {"run": run_flags(args), "preset": preset, "hyperparameters": config.to_dict(), "argv": sys.argv,
              "written": time.strftime("%Y-%m-%dT%H:%M:%S"), "changes": (saved or {}).get("changes", [])}
    logdir.write_json_atomically(os.path.join(log_dir, logdir.CONFIG), record)


def effective_config(args, env):
    """The run's hyper-parameters, logged and written to config.json: those saved in config.json when the run
    resumes (train.py has applied any change it was allowed to make), else the preset for this environment;
    --set on top."""
    saved = constants.read_run_config(args.log_dir)
    if saved and "hyperparameters" in saved:
        config, changes = constants.relaunch_config(saved, args.overrides, args.preset)
        if constants.guarded(changes):
            raise UsageError(f"{args.log_dir}/{logdir.CONFIG} has other hyper-parameters "
                             f"({', '.join(constants.guarded(changes))}); relaunch with train.py "
                             f"--allow-config-change to change them")
        preset = saved.get("preset", args.preset)
        logger.info("resuming with the hyper-parameters of %s/%s", args.log_dir, logdir.CONFIG)
    else:
        preset = constants.resolve_preset(args.preset, envs.observation_kind(env.observation_space),
                                          envs.env_family(args.env_id), args.unsup, args.algo)
        config = constants.config_from_overrides(args.overrides, preset)
    logger.info("preset %s", preset)
    for key, value in config.to_dict().items():
        logger.info("hyper-parameter %s = %r", key, value)
    write_config(args.log_dir, args, preset, config, saved)
    return config


TaskStart = collections.namedtuple("TaskStart", ("job", "task", "is_learner", "spec", "first", "config"))


def start_task(args):
    """What a task of a learner-and-actors cluster begins with (apex.run_task, impala.run_task): its job and index,
    whether it is the learner (the chief), its algorithm's cluster, its first environment (which tells every task
    the shapes) and the run's hyper-parameters (effective_config)."""
    job, task = args.job_name, args.task
    spec = cluster_spec(args)
    first = make_env(args)
    return TaskStart(job, task, roles.is_chief(job, task), spec, first, effective_config(args, first))
