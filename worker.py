#!/usr/bin/env python
"""One process of a run: the parameter server (`--job-name ps`) or a worker that trains (`--job-name worker`).

The launcher (`train.py`) starts one parameter server and N workers with the same cluster description. Workers
keep a local copy of the policy, play their environment and push gradients to the global variables on the
parameter server (between-graph replication). Worker 0 is the chief: it initialises or restores the global
variables and checkpoints them every `checkpoint_secs`.
"""
import argparse
import errno
import logging
import os
import signal
import sys
import threading
import time

import numpy as np

import logdir

logdir.tf_environment()

import constants  # noqa: E402
import cluster as roles  # noqa: E402  -- the cluster's roles (`cluster` is the ClusterSpec below)
import envs  # noqa: E402
import supervise  # noqa: E402
from constants import UsageError  # noqa: E402
from logdir import checkpoint_shapes, import_tf  # noqa: E402

logger = logging.getLogger("worker")

FORCE_EXIT_SECS = 20  # after SIGTERM/SIGINT, a worker stuck in a session.run is ended this much later
OPERATION_TIMEOUT_SECS = 120  # a session.run this slow means the parameter server is gone
CHIEF_WAIT_POLL_SECS = 1  # how often a non-chief worker checks whether the chief has initialised
CHECKPOINTS_KEPT = 5


class ClusterError(Exception):
    """The parameter server went away or stopped answering; reported as one line, exit status 1."""


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
    parser = argparse.ArgumentParser(description="Run one parameter server or worker of a curiosity-agent run.")
    parser.add_argument("--job-name", choices=roles.JOBS, help="this process's role (default: TF_CONFIG's)")
    parser.add_argument("--task", type=int, default=None, help="index of this process within its job")
    parser.add_argument("--ps-hosts", help="host:port of the parameter server")
    parser.add_argument("--worker-hosts", help="comma-separated host:port of every worker")
    parser.add_argument("--learner-hosts", help="--algo dqn or sac: host:port of the learner")
    parser.add_argument("--actor-hosts", help="--algo dqn or sac: comma-separated host:port of every actor")
    parser.add_argument("--log-dir", default="tmp/doom")
    constants.add_run_flags(parser)
    args = parser.parse_args(argv)
    try:
        role = roles.role_from_tf_config(os.environ.get("TF_CONFIG"))
    except ValueError as error:
        parser.error(f"TF_CONFIG: {error}")
    if not role:
        try:
            role = roles.role_from_slurm(os.environ)
        except ValueError as error:
            parser.error(f"Slurm: {error}")
    for name, value in role.items():  # the command line wins; TF_CONFIG or Slurm fills what it leaves out
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.job_name in (roles.LEARNER.job, roles.ACTOR.job):
        if args.learner_hosts is None or args.actor_hosts is None:
            parser.error(f"--job-name {args.job_name}: give --learner-hosts and --actor-hosts")
    elif args.job_name is None or args.ps_hosts is None or args.worker_hosts is None:
        parser.error("give --job-name, --ps-hosts and --worker-hosts, or set TF_CONFIG, or run under srun")
    args.task = args.task or 0
    return args


def cluster_spec(args):
    """The cluster of this process's flags, {job: [host:port, ...]}."""
    if args.job_name in (roles.LEARNER.job, roles.ACTOR.job):
        return {roles.LEARNER.job: args.learner_hosts.split(","), roles.ACTOR.job: args.actor_hosts.split(",")}
    return roles.from_hosts(args.ps_hosts, args.worker_hosts)


def describe_cluster(args):
    """The line every process logs: the cluster's digest (train.py prints the same on each machine) and hosts."""
    spec = cluster_spec(args)
    return f"cluster {roles.digest(spec)}: {roles.describe(spec)}"


class SizeBalanced:
    """replica_device_setter's ps_strategy: each variable goes to the parameter server that holds the fewest bytes
    so far. TensorFlow's default deals variables out in turn, whatever their size (its greedy byte balancer was in
    tf.contrib, which is gone). Every worker builds the same graph in the same order, so all place alike."""

    def __init__(self, num_ps):
        self.loads = [0] * num_ps

    def __call__(self, op):
        import tensorflow as tf

        shape = tf.TensorShape(op.get_attr("shape"))
        size = (shape.num_elements() or 1) * tf.as_dtype(op.get_attr("dtype")).size
        index = self.loads.index(min(self.loads))
        self.loads[index] += size
        return index


def ps_device_setter(tf1, num_ps, worker_device):
    """Global variables on the parameter servers (spread by size over several), everything else on this worker."""
    return tf1.train.replica_device_setter(num_ps, worker_device=worker_device,
                                           ps_strategy=SizeBalanced(num_ps) if num_ps > 1 else None)


def run_flags(args):
    """The flags that define what a log directory's run is, as stored in config.json."""
    # the actors of a replay learner's cluster, A3C's workers; neither in train.py's one-process mode
    replay_learner = getattr(args, "algo", "a3c") in constants.REPLAY_ALGOS
    hosts = getattr(args, "actor_hosts" if replay_learner else "worker_hosts", None)
    return dict(constants.recorded_run_flags(args), num_workers=len(hosts.split(",")) if hosts else args.num_workers)


def write_config(log_dir, args, preset, config, saved=None):
    """`<log-dir>/config.json`: every effective hyper-parameter and the run's flags, and the history of changes
    allowed on relaunches (from `saved`, the file as it was)."""
    record = {"run": run_flags(args), "preset": preset, "hyperparameters": config.to_dict(), "argv": sys.argv,
              "written": time.strftime("%Y-%m-%dT%H:%M:%S"), "changes": (saved or {}).get("changes", [])}
    logdir.write_json_atomically(os.path.join(log_dir, logdir.CONFIG), record)


def run_ps(args):
    tf1 = import_tf()
    cluster = tf1.train.ClusterSpec(roles.from_hosts(args.ps_hosts, args.worker_hosts))
    server = tf1.train.Server(cluster, job_name=roles.PS.job, task_index=args.task,
                              config=tf1.ConfigProto(device_filters=[f"/job:{roles.PS.job}"]))
    logger.info("parameter server %d listening on %s; %s", args.task, cluster.task_address(roles.PS.job, args.task),
                describe_cluster(args))
    server.join()


def check_checkpoint(tf1, train_dir, variables):
    """Refuse to start on a checkpoint that cannot be restored, rather than silently starting over."""
    state_file = os.path.join(train_dir, "checkpoint")
    if logdir.relocate_checkpoints(train_dir):
        logger.info("%s named checkpoints in another directory (the run was copied or moved here): it names "
                    "those in %s now", state_file, train_dir)
    latest = tf1.train.latest_checkpoint(train_dir)
    if latest is None:
        if os.path.exists(state_file):
            raise UsageError(f"{state_file} names checkpoints that do not exist; restore them, or move "
                             f"{train_dir} away to start over")
        return None
    shapes = checkpoint_shapes(tf1, latest, f"delete it or move {train_dir} away to start over")
    for variable in variables:
        name = variable.op.name
        if name not in shapes:
            raise UsageError(f"checkpoint {latest} lacks {name}: it was written by a different model; "
                             f"use another --log-dir")
        if list(shapes[name]) != variable.shape.as_list():
            raise UsageError(f"checkpoint {latest} has {name} of shape {shapes[name]}, the model needs "
                             f"{variable.shape.as_list()}: use another --log-dir")
    return latest


def joining_session_manager(tf1, ready_op):
    """The workers' SessionManager: a chief restores the latest checkpoint only into a parameter server that
    lacks the variables (a new or restarted one). TensorFlow's restores it whenever the chief starts, so a
    restarted chief rolled the whole run back to its last checkpoint while the parameter server had kept the
    newer values (benchmarks/faults.py on CartPole: 12,033 steps, 11.7 s of training, lost to one SIGKILL of the
    chief). The override is of `_restore_checkpoint`, the one step of `prepare_session` that differs."""

    class JoiningSessionManager(tf1.train.SessionManager):
        def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                                wait_for_checkpoint=False, max_wait_secs=7200, config=None):
            session = tf1.Session(master, graph=self._graph, config=config)
            if self._model_ready(session)[0]:
                logger.info("the parameter server holds the run's variables: joining them, not restoring the "
                            "checkpoint")
                return session, True
            session.close()
            return super()._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                               wait_for_checkpoint, max_wait_secs, config)

    return JoiningSessionManager(ready_op=ready_op, graph=tf1.get_default_graph(),
                                 recovery_wait_secs=CHIEF_WAIT_POLL_SECS)


class StopFlag:
    """Set by SIGTERM/SIGINT/SIGHUP so that the chief can write a last checkpoint before exiting; a process still
    busy FORCE_EXIT_SECS later (stuck on a parameter server that is gone) is ended. Before its session is up
    (`training` false: building the graph, or a worker waiting for the chief to initialise) a process has nothing
    to save or finish, and leaves at once."""

    def __init__(self):
        self.stop = False
        self.training = False
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, self._set)
        signal.signal(signal.SIGHUP, self._set)  # the tmux session was killed

    def _set(self, signum, frame):
        if self.stop:
            return
        self.stop = True
        timer = threading.Timer(FORCE_EXIT_SECS, os._exit, [128 + signum])
        timer.daemon = True
        timer.start()
        if not self.training:
            # Raised where the main thread is: the stack unwinds through the closing of what is open (the events
            # writer among them), which os._exit would cut short.
            logger.info("signal %d received before training began: nothing to save, leaving now", signum)
            raise SystemExit(128 + signum)
        logger.info("signal %d received: stopping after this update", signum)


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


def run_worker(args):
    from a3c import A3C
    from acting import EpisodeLogger
    from sessions import Heartbeat, NonFiniteError

    tf1 = import_tf()
    task = args.task
    chief = roles.is_chief(roles.WORKER.job, task)
    stop_flag = StopFlag()
    delay = envs.startup_delay(args.env_id, task)
    if delay:
        logger.info("waiting %.0f s before starting the game engine: simultaneous launches are fragile", delay)
        time.sleep(delay)
    def make_env(render_mode=None):
        return envs.create_env(args.env_id, env_wrap=args.env_wrap, no_reward=args.no_reward,
                               no_life_reward=args.no_life_reward, render_mode=render_mode)

    first = make_env("human" if args.visualise else None)  # --visualise shows the first environment
    config = effective_config(args, first)
    worker_envs = [first] + [make_env() for _ in range(config.envs_per_worker - 1)]
    env_threads = envs.steps_in_threads(args.env_id) and len(worker_envs) > 1
    logger.info("playing %d %s environment%s at once%s", len(worker_envs), args.env_id,
                "s" if len(worker_envs) > 1 else "", ", stepped side by side in threads" if env_threads else "")
    for index, env in enumerate(worker_envs):  # worker i's k-th environment: seed + i K + k, unique in the run
        env.reset(seed=config.seed + task * config.envs_per_worker + index)
        env.action_space.seed(config.seed + task * config.envs_per_worker + index)
    tf1.set_random_seed(config.seed + task)
    np.random.seed(config.seed + task)  # the output layers' initial weights are drawn with numpy (model.py)
    worker_device = f"/job:{roles.WORKER.job}/task:{task}/cpu:0"
    try:
        trainer = A3C(worker_envs, task, config, design_head=args.design_head,
                      env_wrap=envs.paper_preprocessing(args.env_id, args.env_wrap), unsup=args.unsup,
                      global_device=ps_device_setter(tf1, len(args.ps_hosts.split(",")), worker_device),
                      local_device=worker_device, env_threads=env_threads)
    except ValueError as error:  # an impossible head/observation combination
        raise UsageError(str(error)) from None
    variables_to_save = [v for v in tf1.global_variables() if not v.name.startswith("local")]
    train_dir = logdir.checkpoints_dir(args.log_dir)
    init_fn = None
    if chief:
        latest = check_checkpoint(tf1, train_dir, variables_to_save)
        if latest:
            logger.info("resuming from %s%s", latest, " (--pretrain ignored: this run has its own checkpoint)"
                        if args.pretrain else "")
        elif args.pretrain:
            from sessions import pretrain_init

            trainable = [v for v in tf1.trainable_variables() if v.name.startswith("global/")]
            init_fn = pretrain_init(tf1, args.pretrain, trainable, args.restore_include, args.restore_exclude)
        else:
            logger.info("no checkpoint in %s: starting fresh", train_dir)

    cluster = tf1.train.ClusterSpec(roles.from_hosts(args.ps_hosts, args.worker_hosts))
    server = tf1.train.Server(cluster, job_name=roles.WORKER.job, task_index=task,
                              config=tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2))
    summary_writer = tf1.summary.FileWriter(logdir.events_dir(args.log_dir, task))
    saver = tf1.train.Saver(variables_to_save, max_to_keep=CHECKPOINTS_KEPT, save_relative_paths=True)  # movable
    ready_op = tf1.report_uninitialized_variables(variables_to_save)
    supervisor = tf1.train.Supervisor(
        is_chief=chief, logdir=train_dir, saver=saver, summary_op=None,
        init_op=tf1.variables_initializer(variables_to_save), init_fn=init_fn, ready_op=ready_op,
        global_step=trainer.global_step, summary_writer=summary_writer,
        save_model_secs=config.checkpoint_secs, save_summaries_secs=config.checkpoint_secs,
        session_manager=joining_session_manager(tf1, ready_op))
    session_config = tf1.ConfigProto(device_filters=[f"/job:{roles.PS.job}", worker_device],
                                     operation_timeout_in_ms=OPERATION_TIMEOUT_SECS * 1000)
    episode_logger = EpisodeLogger(args.log_dir, task, summary_writer, lambda: trainer.last_global_step)
    heartbeat = Heartbeat(args.log_dir, task, config.max_global_steps)

    logger.info("%s; connecting to the parameter server%s", describe_cluster(args),
                "" if chief else " (waiting for the chief to initialise)")
    try:
        train(supervisor, saver, trainer, chief, stop_flag, server.target, session_config, summary_writer,
              episode_logger, heartbeat)
    except (tf1.errors.UnavailableError, tf1.errors.DeadlineExceededError) as error:
        raise ClusterError(f"lost the parameter server at {args.ps_hosts} "
                           f"({error.message.strip().splitlines()[0]}); relaunch the run to resume") from None
    except NonFiniteError as error:  # the run cannot go on by itself: the supervisor stops it with this line
        raise UsageError(str(error)) from None
    finally:
        try:
            heartbeat.beat(trainer, episode_logger.episodes, state="stopped", force=True)
            episode_logger.close()
            summary_writer.close()  # its events are written by a thread of its own: wait for all of them
        except OSError as error:  # the disk that failed the run fails these too: the error above is the news
            logger.warning("could not record the stop: %s", error)
        for env in worker_envs:
            env.close()
    logger.info("worker %d done at global step %d", task, trainer.last_global_step)


def run_apex(args):
    """An Ape-X learner or actor (apex.py), on the session plumbing of the A3C workers: the chief (the learner)
    initialises or restores the variables and checkpoints them; an actor waits for it."""
    import apex
    import model
    import offpolicy
    from acting import EpisodeLogger
    from sessions import Heartbeat

    tf1 = import_tf()
    job, task = args.job_name, args.task
    is_learner = roles.is_chief(job, task)
    spec = cluster_spec(args)
    stop_flag = StopFlag()

    def make_env():
        return offpolicy.learner_env(args)

    first = make_env()
    config = effective_config(args, first)
    actor_envs = [] if is_learner else [first] + [make_env() for _ in range(config.envs_per_worker - 1)]
    space, action_space = first.observation_space, first.action_space
    if is_learner:
        first.close()  # the learner plays no game: the first environment told it the shapes
    tf1.set_random_seed(config.seed + task)
    np.random.seed(config.seed + task)  # model.py draws some initial weights with numpy
    try:
        head = model.choose_head(space.shape, args.design_head)
        graph = apex.ApeXGraph(space, action_space, config, head, *apex.devices(job, task), unsup=args.unsup,
                               algo=args.algo)
    except ValueError as error:  # an impossible head/observation combination
        raise UsageError(str(error)) from None
    train_dir = logdir.checkpoints_dir(args.log_dir)
    if is_learner:
        latest = check_checkpoint(tf1, train_dir, graph.shared_variables)
        logger.info("resuming from %s; the replay refills first (%d transitions)" % (latest, config.learning_starts)
                    if latest else f"no checkpoint in {train_dir}: starting fresh")
    server = tf1.train.Server(tf1.train.ClusterSpec(spec), job_name=job, task_index=task,
                              config=tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2))
    key = roles.heartbeat_key(job, task)
    summary_writer = tf1.summary.FileWriter(logdir.events_dir(args.log_dir, key))
    saver = tf1.train.Saver(graph.shared_variables, max_to_keep=CHECKPOINTS_KEPT, save_relative_paths=True)
    ready_op = tf1.report_uninitialized_variables(graph.shared_variables)
    supervisor = tf1.train.Supervisor(
        is_chief=is_learner, logdir=train_dir, saver=saver, summary_op=None,
        init_op=tf1.variables_initializer(graph.shared_variables),
        init_fn=graph.network.initialise, ready_op=ready_op,
        local_init_op=tf1.variables_initializer(graph.actor_variables), global_step=graph.network.global_step,
        summary_writer=summary_writer, save_model_secs=config.checkpoint_secs, save_summaries_secs=0,
        session_manager=joining_session_manager(tf1, ready_op))
    own_device = apex.devices(job, task)[1]
    seen = [f"/job:{roles.LEARNER.job}", *([own_device] if own_device else [])]
    session_config = tf1.ConfigProto(device_filters=seen, operation_timeout_in_ms=OPERATION_TIMEOUT_SECS * 1000)
    heartbeat = Heartbeat(args.log_dir, task, config.max_global_steps, job=job)
    logger.info("%s; %s", describe_cluster(args), "the learner" if is_learner else
                f"actor {task} of {len(spec[roles.ACTOR.job])}, waiting for the learner to initialise")
    episodes = 0  # an actor's, at the end
    try:
        with supervisor.managed_session(server.target, config=session_config) as session:
            stop_flag.training = True
            if is_learner:
                memory = apex_replay(config, space, graph, one_step=graph.curious is not None)
                trainer = apex.Learner(graph, config, memory, summary_writer)
                try:
                    trainer.run(session, stop_flag, heartbeat)
                    if not stop_flag.stop:
                        trainer.finish(len(spec[roles.ACTOR.job]), stop_flag, heartbeat)
                finally:
                    trainer.close()
                heartbeat.beat(trainer, 0, state="stopping", force=True)
                saved = saver.save(session, supervisor.save_path, global_step=graph.network.global_step)
                logger.info("saved the final checkpoint %s", saved)  # named by the global step when saved
            else:
                trainer = apex.Actor(graph, actor_envs, config, task, len(spec[roles.ACTOR.job]))
                episode_logger = EpisodeLogger(args.log_dir, task, summary_writer, lambda: trainer.last_global_step)
                episode_logger.resume_from(int(session.run(graph.network.global_step)))
                try:
                    trainer.run(session, stop_flag, heartbeat, episode_logger)
                    trainer.send(session)
                    if not stop_flag.stop:
                        session.run(graph.finish)  # the learner may go
                finally:
                    episode_logger.close()
                    trainer.close()
                episodes = episode_logger.episodes
            heartbeat.beat(trainer, episodes, state="stopped", force=True)
    except (tf1.errors.UnavailableError, tf1.errors.DeadlineExceededError, tf1.errors.AbortedError) as error:
        raise ClusterError(f"lost the learner at {args.learner_hosts} ({error.message.strip().splitlines()[0]}); "
                           f"relaunch the run to resume") from None
    finally:
        summary_writer.close()
        for env in actor_envs:
            env.close()
    logger.info("%s done at global step %d", roles.task_name(job, task), trainer.last_global_step)


def apex_replay(config, space, graph, one_step):
    import replay

    return replay.PrioritizedReplay(config.replay_capacity, space.shape, graph.dtype, config.priority_alpha,
                                    uniform=not config.prioritized, seed=config.seed, one_step=one_step,
                                    action_shape=graph.network.action_shape, action_dtype=graph.network.action_dtype)


def train(supervisor, saver, trainer, chief, stop_flag, target, session_config, summary_writer, episode_logger,
          heartbeat):
    """The session loop: train until the max global step or a stop request; the chief saves at the end."""
    config = trainer.config
    with supervisor.managed_session(target, config=session_config) as session:
        episode_logger.resume_from(int(session.run(trainer.global_step)))
        trainer.start(session, summary_writer, episode_logger)
        stop_flag.training = True
        logger.info("training from global step %d to %d", trainer.last_global_step, config.max_global_steps)
        while (not supervisor.should_stop() and not stop_flag.stop
               and trainer.last_global_step < config.max_global_steps):
            trainer.process()
            heartbeat.beat(trainer, episode_logger.episodes)
        heartbeat.beat(trainer, episode_logger.episodes, state="stopping", force=True)
        trainer.stop()
        if chief:
            saver.save(session, supervisor.save_path, global_step=trainer.global_step)
            logger.info("saved the final checkpoint at global step %d", trainer.last_global_step)


def main(argv=None):
    args = parse_args(argv)
    name = roles.task_name(args.job_name, args.task)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s",
                        stream=sys.stderr)
    supervise.enable_stack_dumps()  # the supervisor asks a hung worker where it hangs before it kills it
    try:
        if args.job_name == roles.PS.job:
            run_ps(args)
            return 0
        os.makedirs(args.log_dir, exist_ok=True)
        constants.check_same_run(args.log_dir, run_flags(args))
        if args.job_name in (roles.LEARNER.job, roles.ACTOR.job):
            run_apex(args)
        else:
            run_worker(args)
        return 0
    except (UsageError, logdir.UnreadableCheckpoint, constants.ConfigError, envs.EnvError) as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 2
    except ClusterError as error:
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
