#!/usr/bin/env python
"""One process of a run's cluster: a parameter server (`--job-name ps`), or a task of an algorithm's cluster
(an A3C worker, an Ape-X learner or actor), run by the entry point its row of the algorithms' table names.

The launcher (`train.py`) starts every task with the same cluster description. A3C's workers keep a local copy
of the policy, play their environment and push gradients to the global variables on the parameter server
(between-graph replication: a3c.run_task); Ape-X's actors send transitions to the learner (apex.run_task). The
chief (worker 0, the learner) initialises or restores the global variables and checkpoints them every
`checkpoint_secs`.
"""
import argparse
import errno
import logging
import os
import sys

import logdir

logdir.tf_environment()

import algorithms  # noqa: E402
import cluster as roles  # noqa: E402  -- the cluster's roles (`cluster` is the ClusterSpec below)
import constants  # noqa: E402
import envs  # noqa: E402
import runs  # noqa: E402
import supervise  # noqa: E402
from constants import UsageError  # noqa: E402
from logdir import import_tf  # noqa: E402

logger = logging.getLogger("worker")

WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)  # a write into the log directory failed


def write_failure(error, log_dir):
    """The one line that stops a worker whose write into the log directory failed (a full disk, a filesystem
    gone read-only), or None when `error` is something else. TensorFlow's checkpoint errors carry only text."""
    cause = error.__cause__ if error.__cause__ is not None else error  # the runner thread's, via RunnerError
    if isinstance(cause, OSError) and cause.errno in WRITE_ERRNOS:
        return f"cannot write {cause.filename or log_dir} ({cause.strerror}): stopped; {supervise.resume_note(log_dir)}"
    text = getattr(cause, "message", "")
    reason = next((os.strerror(number) for number in WRITE_ERRNOS if os.strerror(number) in text), None)
    if reason is None or log_dir not in text:
        return None
    return (f"cannot write a checkpoint in {logdir.checkpoints_dir(log_dir)} ({reason}): stopped; "
            f"{supervise.resume_note(log_dir)}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Run one task of a curiosity-agent run's cluster.")
    parser.add_argument("--job-name", choices=roles.JOBS, help="this process's role (default: TF_CONFIG's)")
    parser.add_argument("--task", type=int, default=None, help="index of this process within its job")
    for job in roles.JOBS:
        users = " or ".join(name for name, row in algorithms.ALGORITHMS.items() if job in row.jobs)
        parser.add_argument(roles.hosts_flag(job), dest=roles.hosts_attribute(job),
                            help=f"comma-separated host:port of every {roles.ROLES[job].title} (--algo {users})")
    parser.add_argument("--log-dir", default="tmp/doom")
    constants.add_run_flags(parser)
    args = parser.parse_args(argv)
    try:
        args.design_head = envs.default_design_head(args.env_id, args.design_head)
    except envs.EnvError as error:
        parser.error(str(error))
    row = algorithms.get(args.algo)
    try:
        role = roles.role_from_tf_config(os.environ.get("TF_CONFIG"), row.name)
    except ValueError as error:
        parser.error(f"TF_CONFIG: {error}")
    if not role:
        try:
            role = roles.role_from_slurm(os.environ, row.name)
        except ValueError as error:
            parser.error(f"Slurm: {error}")
    for name, value in role.items():  # the command line wins; TF_CONFIG or Slurm fills what it leaves out
        if getattr(args, name) is None:
            setattr(args, name, value)
    hosts = " and ".join(roles.hosts_flag(job) for job in row.jobs)
    if args.job_name is None:
        parser.error(f"give --job-name and {hosts}, or set TF_CONFIG, or run under srun")
    if args.job_name not in row.jobs:
        parser.error(f"--job-name {args.job_name} is not a job of --algo {row.name}'s cluster "
                     f"({', '.join(row.jobs)})")
    if any(getattr(args, roles.hosts_attribute(job)) is None for job in row.jobs):
        parser.error(f"--job-name {args.job_name}: give {hosts}, or set TF_CONFIG, or run under srun")
    args.task = args.task or 0
    return args


def run_ps(args):
    tf1 = import_tf()
    spec = runs.cluster_spec(args)
    cluster = tf1.train.ClusterSpec(spec)
    server = tf1.train.Server(cluster, job_name=args.job_name, task_index=args.task,
                              config=tf1.ConfigProto(device_filters=[f"/job:{args.job_name}"]))
    logger.info("%s %d listening on %s; %s", roles.ROLES[args.job_name].title, args.task,
                cluster.task_address(args.job_name, args.task), runs.describe_cluster(args))
    server.join()


def main(argv=None):
    args = parse_args(argv)
    name = roles.task_name(args.job_name, args.task)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s",
                        stream=sys.stderr)
    supervise.enable_stack_dumps()  # the supervisor asks a hung worker where it hangs before it kills it
    try:
        if roles.ROLES[args.job_name].serves:
            run_ps(args)
            return 0
        os.makedirs(args.log_dir, exist_ok=True)
        constants.check_same_run(args.log_dir, runs.run_flags(args))
        algorithms.get(args.algo).entry("task")(args)
        return 0
    except (UsageError, logdir.UnreadableCheckpoint, constants.ConfigError, envs.EnvError) as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 2
    except roles.ClusterError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 -- only a failed write into the log directory becomes a line
        line = write_failure(error, args.log_dir)
        if line is None:
            raise
        print(f"{name}: error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
