"""TensorFlow session plumbing that every learner uses: the bound on TensorFlow's error messages, the session
that retries the distributed runtime's spurious aborts and stuck steps, the global step, the update that skips
NaN and inf, the phase timings and the heartbeat that status.py and the supervisor read; and the set-up of a
task's session: the checkpoint check, the session manager that joins a live parameter server, the stop on a
signal, the placement of the global variables, a checkpoint restored for playback.

A learner builds its graph and runs its session through these; `AbortRetrySession` installs the bound on error
messages itself, so no learner can lose the fix for hung workers by forgetting an import.
"""
import contextlib
import logging
import os
import re
import signal
import threading
import time

import numpy as np
import tensorflow as tf

import cluster
import logdir
import supervise

tf1 = tf.compat.v1
logger = logging.getLogger(__name__)

ABORT_RETRIES = 10  # retries of a session.run that TF aborted as a duplicate RunGraph request, or that stuck
# A session.run of an A3C worker's, or of an Ape-X actor's or learner's, that has not returned after this long is
# stuck in the distributed runtime (an A3C update takes well under a second, even at K = 16 on a loaded 2-core
# machine): cancelled and run again, before the supervisor, which waits 30 s without a heartbeat, takes the worker
# for hung and restarts it.
RUN_TIMEOUT_SECS = 20.0
DUPLICATE_REQUEST = "request was received twice"  # the distributed runtime's spurious abort (AbortRetrySession)
ERROR_MESSAGE_KEPT = 2048  # characters kept at each end of a TensorFlow error message (bound_error_messages)
NONFINITE_UPDATES_LIMIT = 100  # skipped (NaN/inf) updates in a row after which the worker stops
HEARTBEAT_SECS = 2.0  # how often a worker rewrites its status_<task>.json
FORCE_EXIT_SECS = 20  # after SIGTERM/SIGINT, a worker stuck in a session.run is ended this much later
OPERATION_TIMEOUT_SECS = 120  # a session.run this slow means the parameter server is gone
CHIEF_WAIT_POLL_SECS = 1  # how often a non-chief worker checks whether the chief has initialised
CHECKPOINTS_KEPT = 5


class DeferredInterrupt:
    """Ctrl-C noted, and raised as KeyboardInterrupt only where `check()` is called. Raised wherever the main
    thread happens to be, it can land inside a TensorFlow call made from C (a Tensor's __hash__ in a feed dict),
    and the process then dies of SIGSEGV instead of unwinding: what was played or learned is lost. A second
    Ctrl-C before a check interrupts at once. Outside the main thread (where handlers cannot be set) it does
    nothing, and Ctrl-C behaves as usual."""

    def __init__(self):
        self.requested = False
        self.previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc_info):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _note(self, signum, frame):
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def check(self):
        if self.requested:
            raise KeyboardInterrupt


class Timings:
    """Seconds a worker spent in each phase of its two threads, summed since start; the heartbeat publishes them
    and `benchmarks/throughput.py --profile` turns them into time per environment step."""

    RUNNER = ("env", "act", "act_and_bonus", "queue_put")  # env.step/reset; session.run to act (with the bonus)
    TRAINER = ("queue_get", "advantages", "sync", "train")  # train: gradients and apply, one session.run

    def __init__(self):
        self.seconds = dict.fromkeys(self.RUNNER + self.TRAINER, 0.0)  # each key written by one thread only

    @contextlib.contextmanager
    def phase(self, name):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def snapshot(self):
        return {name: round(value, 3) for name, value in self.seconds.items()}


def bound_error_messages():
    """Cut TensorFlow's error messages to their two ends before `Session.run` parses them.

    This is why workers hung. The distributed runtime's duplicate-RunGraph `AbortedError` carries the whole
    request, feeds included, as text (tens of kB for one act call, megabytes for an update), and `Session.run`
    scans every error message with a regular expression whose time grows with the square of its length
    (`error_interpolation.parse_message`: 22 s for 80 kB here), holding the GIL, so every thread of the worker
    stops. Seen with stack dumps of hung Doom workers on 16 cores: the runner thread inside `parse_message`, the
    trainer waiting in its `session.run`. The node tag that interpolation looks for ends a message, so both ends
    are kept. TensorFlow offers no setting for this, hence the patch of its module function.
    """
    from tensorflow.python.framework import error_interpolation
    original = error_interpolation.interpolate_graph
    if getattr(original, "bounded", False):
        return

    def interpolate_graph(message, graph):
        if len(message) > 2 * ERROR_MESSAGE_KEPT:
            message = (f"{message[:ERROR_MESSAGE_KEPT]} ... [{len(message) - 2 * ERROR_MESSAGE_KEPT} characters "
                       f"cut] ... {message[-ERROR_MESSAGE_KEPT:]}")
        return original(message, graph)

    interpolate_graph.bounded = True
    error_interpolation.interpolate_graph = interpolate_graph



def abort_reason(message):
    """The line of an AbortedError's message that says why: the duplicate request's, else the first that says
    anything."""
    lines = cluster.error_lines(message)
    why = next((line for line in lines if "twice" in line or "Aborted" in line), lines[0] if lines else "")
    return why[:200]


class AbortRetrySession:
    """Wraps a session so that `run` retries what the distributed runtime now and then does to a request that
    did not fail: TF's spurious duplicate-RunGraph AbortedError, and a step that never returns.

    Under load the distributed runtime intermittently raises `AbortedError: The same RunGraph (Worker) request
    was received twice` (or the CancelledError it causes, `retryable`) while two threads share a session; the
    request did not run, so running it again is safe.
    And about once in two or three 5M-step Doom runs on 2 cores one update's `session.run` never returned: stack
    dumps of three such workers show the trainer waiting in TensorFlow's `LocalMaster::RunStep` for a step that
    never finished, while the other worker and the parameter server went on. So every run carries a deadline
    (`timeout`, TensorFlow's `RunOptions.timeout_in_ms`, which cancels the step); a run past it is run again. An
    update cancelled after its gradients reached the parameter server may be applied twice: one stale gradient
    more, as asynchronous training takes them, where restarting the worker lost a minute and its rollouts. A step
    that cancellation cannot end is not caught: past the deadline TensorFlow cancels it and then waits for it
    without limit (local_master.cc), so that hang is left to the supervisor (docs/operations.md).
    """

    def __init__(self, session, retries=ABORT_RETRIES, timeout=RUN_TIMEOUT_SECS):
        bound_error_messages()
        self.session = session
        self.retries = retries
        self.options = tf1.RunOptions(timeout_in_ms=int(timeout * 1000))
        self.timeout = timeout
        self.aborts = 0
        self.timeouts = 0

    def run(self, fetches, feed_dict=None):
        for attempt in range(self.retries + 1):
            try:
                return self.session.run(fetches, feed_dict, options=self.options)
            except (tf.errors.OpError, ValueError) as raised:
                error = described_error(raised)
                if not retryable(error) or attempt == self.retries:
                    raise error from None
                if isinstance(error, tf.errors.DeadlineExceededError):
                    self.timeouts += 1
                    logger.warning("session.run did not return in %g s (stuck in TensorFlow's distributed "
                                   "runtime): cancelled; running it again", self.timeout)
                else:
                    self.aborts += 1
                    logger.warning("session.run aborted (%s); retrying", abort_reason(error.message))

    def retried(self):
        """The runs it ran again, by cause, as a heartbeat shows them (status.py's worker line)."""
        return {"retried_runs": {"stuck": self.timeouts, "aborted": self.aborts}}


def retryable(error):
    """Whether AbortRetrySession runs again the run that failed with `error`: a step past its deadline, an abort,
    and a cancellation that the duplicate-RunGraph abort caused. TensorFlow reports the step's first error, and
    when the parameter server aborts its part as a duplicate request the worker's own part of the same step may be
    cancelled first: a Mario A3C worker died twice of that CancelledError ("RecvFromRemoteAsync is cancelled" and,
    below it, "ABORTED: ... received twice") in one 2-core sitting. Any other cancellation (a closing session, a
    stop) is not retried."""
    if isinstance(error, (tf.errors.AbortedError, tf.errors.DeadlineExceededError)):
        return True
    return isinstance(error, tf.errors.CancelledError) and DUPLICATE_REQUEST in (error.message or "")


def retried_runs(session):
    """A task's heartbeat field of the runs its AbortRetrySession ran again (`retried`); none before it has one."""
    return {} if session is None else session.retried()


def described_error(raised):
    """The OpError that `Session.run` failed on, also where it failed while describing it.

    Before it raises an OpError, `Session.run` takes the first `[[name` of the message for a node of the graph,
    and a name with a colon makes it raise a ValueError instead. The duplicate-RunGraph abort quotes the request's
    tensors as text, which now and then holds `[[...:`: on 16 cores a Doom worker died of that `ValueError: Name
    '<binary>' appears to refer to a Tensor` instead of retrying its abort.
    """
    if isinstance(raised, ValueError) and isinstance(raised.__context__, tf.errors.OpError):
        return raised.__context__
    return raised


def global_step_variable():
    return tf1.get_variable("global_step", [], tf.int64, tf1.zeros_initializer(), trainable=False)


def annealed_rate(config, step):
    """learning_rate x (1 - step / anneal_steps, or max_global_steps where it is 0), not below 0: a tensor of the
    global step."""
    steps = config.anneal_steps or config.max_global_steps
    return config.learning_rate * tf.maximum(1.0 - tf.cast(step, tf.float32) / float(steps), 0.0)


def guarded_apply(updates, gradient_norms, extra=()):
    """The op that applies `updates` [(optimizer, gradients, variables)] and runs `extra` ops, all or nothing:
    skipped whole (weights and optimizer moments untouched) when a gradient norm of `gradient_norms` is NaN or
    inf, which a NaN or inf anywhere in a loss or gradient shows; and the boolean of whether it was applied.
    Cost, measured (benchmarks/throughput.py --env-id doom --workers 2 --unsup action, 3 pairs): the train phase
    went 2,400 -> 2,530 us per env step, alike as TF2's functional If or TF1's Switch/Merge."""
    finite = tf.reduce_all(tf.math.is_finite(tf.stack(gradient_norms)))
    apply = tf.cond(finite,
                    lambda: tf.group(*[optimizer.apply_gradients(zip(gradients, variables))
                                       for optimizer, gradients, variables in updates], *extra),
                    tf.no_op)
    return apply, finite


class NonFiniteError(RuntimeError):
    """Updates keep coming out NaN or inf: skipping them does not help, so the worker stops."""


class NonFiniteGuard:
    """Counts the updates `guarded_apply` skipped; many in a row mean a cause that will not pass: stop."""

    def __init__(self):
        self.skipped = 0
        self.in_a_row = 0

    def count(self, finite, update, inputs):
        """After update number `update`; `inputs` {name: array} are what the update was fed, to name those that
        hold NaN or inf."""
        if finite:
            self.in_a_row = 0
            return
        self.skipped += 1
        self.in_a_row += 1
        bad = [name for name, values in inputs.items() if not np.all(np.isfinite(values))]
        logger.warning("update %d skipped: a loss or gradient was NaN or inf%s (%d skipped in all)", update,
                       f"; the batch's {' and '.join(bad)} hold NaN or inf" if bad else "", self.skipped)
        if self.in_a_row >= NONFINITE_UPDATES_LIMIT:
            raise NonFiniteError(
                f"{self.in_a_row} updates in a row had a NaN or inf loss or gradient and were skipped "
                f"(the global weights are untouched by them): lower learning_rate, or check the environment's "
                f"{' and '.join(bad) or 'rewards and observations'}")


class Heartbeat:
    """`<log-dir>/status_<task>.json`, rewritten every HEARTBEAT_SECS while training: what status.py shows, and
    how it tells a hung or dead worker (an old heartbeat) from a working one."""

    def __init__(self, log_dir, task, max_global_steps, job=cluster.WORKER.job):
        self.path = logdir.heartbeat_json(log_dir, cluster.heartbeat_key(job, task))
        self.record = {"task": task, "name": cluster.task_name(job, task), "pid": os.getpid(),
                       "max_global_steps": max_global_steps, "started": time.time()}
        self.last = None  # (time, steps trained) of the previous beat

    def beat(self, trainer, episodes, state="training", force=False):
        """Rewrite the heartbeat (at most every HEARTBEAT_SECS unless forced), with what else the trainer has to
        show from its `status()` where it has one (the Ape-X learner's replay)."""
        now = time.time()
        if not force and self.last is not None and now - self.last[0] < HEARTBEAT_SECS:
            return
        rate = (trainer.steps_trained - self.last[1]) / max(now - self.last[0], 1e-6) if self.last else 0.0
        self.last = (now, trainer.steps_trained)
        self.record.update(time=now, state=state, global_step=trainer.last_global_step, updates=trainer.updates,
                           skipped_updates=trainer.skipped_updates,
                           steps_trained=trainer.steps_trained, steps_per_sec=rate, episodes=episodes,
                           seconds_in=trainer.timings.snapshot(), rss_mb=supervise.resident_mb(),
                           **getattr(trainer, "status", dict)())
        logdir.write_json_atomically(self.path, self.record)


def pretrain_checkpoint(tf1, source):
    """The checkpoint that --pretrain names: a run's log dir, its train/ dir, or a checkpoint prefix."""
    from constants import UsageError

    for directory in (logdir.checkpoints_dir(source), source):
        latest = tf1.train.latest_checkpoint(directory) if os.path.isdir(directory) else None
        if latest:
            return latest
    if os.path.exists(source + ".index"):
        return source
    raise UsageError(f"--pretrain {source}: no checkpoint there; give a run's log directory or a checkpoint")


def pretrain_init(tf1, source, variables, include=None, exclude=None):
    """An init_fn that restores, of `variables`, those whose names match the regular expression `include` (all
    when None) and not `exclude`, and that the checkpoint of `source` holds with the same shape; the rest start
    fresh (the global step and the optimizers' state always do). Logs what was restored and what was not, and why.
    As PlaNet's filtered restore: new heads train while the old ones load."""
    from constants import UsageError

    path = pretrain_checkpoint(tf1, source)
    shapes = logdir.checkpoint_shapes(tf1, path, "--pretrain from another run")
    try:
        wanted = [v for v in variables if (include is None or re.search(include, v.op.name))
                  and not (exclude and re.search(exclude, v.op.name))]
    except re.error as error:
        raise UsageError(f"--restore-include/--restore-exclude: not a regular expression ({error})") from None
    restored = [v for v in wanted if list(shapes.get(v.op.name, [])) == v.shape.as_list()]
    filtered = [v.op.name for v in variables if v not in wanted]
    missing = [v.op.name for v in wanted if v not in restored]
    if not restored:
        raise UsageError(f"--pretrain {source}: checkpoint {path} has none of the variables asked for "
                         f"({len(wanted)} of this model's {len(variables)} pass the include/exclude filters)")
    saver = tf1.train.Saver(restored)
    logger.info("pretrain: restoring %d of %d trainable variables from %s", len(restored), len(variables), path)
    logger.info("pretrain: restored %s", ", ".join(v.op.name for v in restored))
    logger.info("pretrain: not restored (fresh) %s", ", ".join(missing + filtered) or "none")
    if filtered:
        logger.info("pretrain: left out by --restore-include/--restore-exclude: %s", ", ".join(filtered))
    if missing:
        logger.info("pretrain: not in the checkpoint, or of another shape: %s", ", ".join(missing))

    def init_fn(session):
        saver.restore(session, path)

    return init_fn



# ---------------------------------------------------------------- a task's session


class SizeBalanced:
    """replica_device_setter's ps_strategy: each variable goes to the parameter server that holds the fewest bytes
    so far. TensorFlow's default deals variables out in turn, whatever their size (its greedy byte balancer was in
    tf.contrib, which is gone). Every worker builds the same graph in the same order, so all place alike."""

    def __init__(self, num_ps):
        self.loads = [0] * num_ps

    def __call__(self, op):
        shape = tf.TensorShape(op.get_attr("shape"))
        size = (shape.num_elements() or 1) * tf.as_dtype(op.get_attr("dtype")).size
        index = self.loads.index(min(self.loads))
        self.loads[index] += size
        return index


def ps_device_setter(num_ps, worker_device):
    """Global variables on the parameter servers (spread by size over several), everything else on this worker."""
    return tf1.train.replica_device_setter(num_ps, worker_device=worker_device,
                                           ps_strategy=SizeBalanced(num_ps) if num_ps > 1 else None)


def check_checkpoint(tf1, train_dir, variables):
    """Refuse to start on a checkpoint that cannot be restored, rather than silently starting over."""
    from constants import UsageError

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
    shapes = logdir.checkpoint_shapes(tf1, latest, f"delete it or move {train_dir} away to start over")
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


def managed_supervisor(tf1, chief, train_dir, variables, global_step, summary_writer, checkpoint_secs, init_fn=None,
                       local_variables=(), save_summaries=True):
    """(tf.train.Supervisor, Saver) of a task: the chief initialises `variables` (or restores them from the latest
    checkpoint in `train_dir`, or runs `init_fn`) and saves them every `checkpoint_secs`; another task waits until
    they are ready. `local_variables` are the task's own, initialised in each of its sessions."""
    saver = tf1.train.Saver(variables, max_to_keep=CHECKPOINTS_KEPT, save_relative_paths=True)  # movable
    ready_op = tf1.report_uninitialized_variables(variables)
    supervisor = tf1.train.Supervisor(
        is_chief=chief, logdir=train_dir, saver=saver, summary_op=None, init_op=tf1.variables_initializer(variables),
        init_fn=init_fn, ready_op=ready_op, local_init_op=tf1.variables_initializer(list(local_variables)),
        global_step=global_step, summary_writer=summary_writer, save_model_secs=checkpoint_secs,
        save_summaries_secs=checkpoint_secs if save_summaries else 0,
        session_manager=joining_session_manager(tf1, ready_op))
    return supervisor, saver


def task_session_config(tf1, devices):
    """A task's session: it sees only `devices` (the variables' and its own), and gives up on a run that takes
    OPERATION_TIMEOUT_SECS (the task holding the variables is gone)."""
    return tf1.ConfigProto(device_filters=list(devices), operation_timeout_in_ms=OPERATION_TIMEOUT_SECS * 1000)


TASK_THREADS = (1, 2)  # a playing task's TensorFlow threads (intra-op, inter-op): few, as the original's


def task_server(tf1, spec, job, task, threads=TASK_THREADS):
    """This task's tf.train.Server in the cluster `spec`, with `threads` (intra-op, inter-op)."""
    return tf1.train.Server(tf1.train.ClusterSpec(spec), job_name=job, task_index=task,
                            config=local_session_config(*threads))


def learner_threads(spec, requested=0, cores=None):
    """The TensorFlow threads (intra-op and inter-op alike) of the learner of the cluster `spec` (Ape-X, IMPALA,
    PlaNet): `requested` where given (--threads), else the cores of its machine that the actors there leave, one
    each, and never fewer than a playing task's. It trains on every actor's steps and runs their sends, where an
    actor only acts."""
    if requested:
        return requested, requested
    learner_host = spec[cluster.LEARNER.job][0].rsplit(":", 1)[0]
    actors_here = sum(address.rsplit(":", 1)[0] == learner_host for address in spec.get(cluster.ACTOR.job, []))
    threads = max(TASK_THREADS[0], (os.cpu_count() if cores is None else cores) - actors_here)
    return threads, max(TASK_THREADS[1], threads)


def local_session_config(threads, inter_threads=None):
    """A one-process run's session: `threads` TensorFlow threads in the intra-op pool and `inter_threads` (by default
    as many) in the inter-op pool (0: TensorFlow's default)."""
    inter_threads = threads if inter_threads is None else inter_threads
    return tf1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=inter_threads)


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


def seed_task(tf1, seed):
    """The graph's and numpy's seeds of a task (model.py draws some initial weights with numpy)."""
    tf1.set_random_seed(seed)
    np.random.seed(seed)


def restored_session(tf1, graph, variables, checkpoint, what):
    """A one-thread session of `graph` with `variables` restored from `checkpoint` (playback); UsageError, in one
    line, for a checkpoint that lacks one of them or holds it in another shape."""
    from constants import UsageError

    shapes = logdir.checkpoint_shapes(tf1, checkpoint, "pick another --checkpoint")
    missing = [v.op.name for v in variables if list(shapes.get(v.op.name, [None])) != v.shape.as_list()]
    if missing:
        raise UsageError(f"checkpoint {checkpoint} does not fit this run's {what} (missing or reshaped: "
                         f"{', '.join(missing[:3])}...); is it from another run?")
    session = tf1.Session(graph=graph, config=tf1.ConfigProto(intra_op_parallelism_threads=1,
                                                              inter_op_parallelism_threads=1))
    tf1.train.Saver(variables).restore(session, checkpoint)
    return session
