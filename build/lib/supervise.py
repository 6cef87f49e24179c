"""Supervision of a run's parameter server and workers: each that dies (a crash, SIGKILL, the OOM killer) or
hangs (its heartbeat stops while it lives) is started again after a back-off; one that keeps failing stops
the whole run with a one-line reason. A worker that finishes (exit status 0) is done; one that stops with a
usage error (exit status 2: a corrupt checkpoint, a bad value) stops the run, since starting it again cannot
help. A restarted worker rejoins the running cluster; after the parameter server's death the workers lose it,
exit, and are started again too, and the chief restores the global variables from the last checkpoint.

train.py runs a Supervisor in the launcher itself (child mode) or as `train.py --supervise` (tmux and nohup
modes). Its record, `<log-dir>/supervisor.json`, is what status.py shows. `kill.sh` first leaves the
`<log-dir>/stopping` marker, so that no supervisor restarts what it stops. This module does not import
TensorFlow.
"""
import collections
import faulthandler
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import cluster
import logdir
from logdir import latest_checkpoint, read_json, write_json_atomically

RESTART_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)  # seconds before the 1st, 2nd, ... restart in a row
FAILURE_LIMIT = 5  # this many failures of one process ...
FAILURE_WINDOW_SECS = 600.0  # ... within this window stop the run
HANG_SECS = 30.0  # a live worker whose heartbeat is older than this is hung (it beats every 2 s)
HEALTHY_SECS = 300.0  # a process up this long has recovered: its next failure waits the shortest delay again
POLL_SECS = 1.0
USAGE_ERROR = 2  # worker.py's exit status for what the user must fix
STACK_SIGNAL = signal.SIGUSR1  # asks a worker for its threads' stacks (enable_stack_dumps)
STACK_WAIT_SECS = 2.0  # how long a hung worker is given to write them
PY_SPY_SECS = 30.0  # the native stacks of a hung worker, where py-spy is installed, are taken within this
WORKERS_MEMORY_SHARE = 0.5  # the workers together may hold this share of the machine's memory before ...
RECYCLE_SIGNAL = signal.SIGTERM  # ... the biggest over its part is stopped this way (it saves, exits) and restarted
SPARE_CHECKPOINTS = 2  # the run stops while its filesystem still has room for this many more checkpoints
MIN_FREE_BYTES = 10 * 2**20  # ... and never runs on with less than this free (events, CSVs, the first checkpoint)

logger = logging.getLogger("supervise")


def last_line(path):
    """The last non-empty line of a process's output, for a one-line reason."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(handle.tell() - 4096, 0))
            lines = [line.strip() for line in handle.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def disk_problem(log_dir):
    """Why the log directory cannot take the run's next writes, or None: it is read-only, or too full to hold
    SPARE_CHECKPOINTS more checkpoints. A run that stopped here loses nothing written; one that ran on would
    fail in the middle of a checkpoint, a CSV row or an events file."""
    try:
        stats = os.statvfs(log_dir)
    except OSError as error:
        return f"the log directory {log_dir} cannot be read ({error.strerror})"
    if stats.f_flag & os.ST_RDONLY:
        return f"the log directory {log_dir} is on a filesystem that is read-only now"
    if not os.access(log_dir, os.W_OK):
        return f"the log directory {log_dir} is not writable now"
    free = stats.f_bavail * stats.f_frsize
    needed = max(SPARE_CHECKPOINTS * latest_checkpoint(log_dir)[1], MIN_FREE_BYTES)
    if free < needed:
        return (f"the log directory's filesystem has {free / 2**20:.1f} MB free, less than the {needed / 2**20:.1f} MB "
                f"that {SPARE_CHECKPOINTS} more checkpoints need")
    return None


def resume_note(log_dir):
    """What a relaunch would resume from, for the message that stops a run."""
    prefix, _ = latest_checkpoint(log_dir)
    if prefix is None:
        return "no checkpoint was written yet"
    return f"the last checkpoint, {os.path.basename(prefix)}, is intact; a relaunch resumes from it"


def worker_memory_limit_mb(workers):
    """Each worker's part of WORKERS_MEMORY_SHARE of this machine's memory: the workers' memory grows with
    updates (about 10 kB each on Doom, cause not found; docs/history/2026-11-24-benchmarks.md), and a run of days must
    not meet the OOM killer, which would take the parameter server or a game engine as well."""
    with open("/proc/meminfo") as handle:
        total_mb = next(int(line.split()[1]) for line in handle if line.startswith("MemTotal:")) / 1024
    return WORKERS_MEMORY_SHARE * total_mb / max(workers, 1)


def kill_group(pid):
    """SIGKILL the process group a supervised process leads (it was started in a session of its own)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def resident_mb(pid="self", field="VmRSS"):
    """Resident memory of a process in MB, or None if it is gone: all of it (VmRSS), or only its own, not
    file-backed (RssAnon; TensorFlow's shared libraries alone are about 330 MB of the RSS)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(int(line.split()[1]) / 1024 for line in handle if line.startswith(field + ":"))
    except (OSError, StopIteration):
        return None


def stat_fields(pid):
    """/proc/<pid>/stat after the command name: [state, ppid, ...], or None for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def is_zombie(pid):
    """Whether a process is gone or only waits to be reaped."""
    fields = stat_fields(pid)
    return fields is None or fields[0] == "Z"


def cpu_seconds(pid):
    """CPU seconds (user + system) a process has used so far, or None if it is gone."""
    fields = stat_fields(pid)
    if fields is None:  # after the command name: state is field 3, utime and stime fields 14 and 15
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def enable_stack_dumps():
    """Make this process write every thread's Python stack to stderr (its .out log) on STACK_SIGNAL. The
    supervisor asks for them before it kills a hung worker, so its log says where it hung; faulthandler's
    handler runs even while every thread is inside TensorFlow's C++ (a session.run that never returns)."""
    faulthandler.register(STACK_SIGNAL, all_threads=True)


def py_spy():
    """py-spy's executable (beside this Python's or on PATH), or None: it adds the C++ frames to the stacks."""
    return shutil.which("py-spy", path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))


def dump_stacks(pid, out_path):
    """Append a hung process's thread stacks to its log: Python's own, asked for with STACK_SIGNAL, then, with
    py-spy, the native ones. Bounded: a process that does not answer is killed all the same."""
    with open(out_path, "ab") as out:
        out.write(f"\n--- supervisor: stacks of hung process {pid} ---\n".encode())
    size = os.path.getsize(out_path)
    try:
        os.kill(pid, STACK_SIGNAL)
    except ProcessLookupError:
        return
    deadline = time.time() + STACK_WAIT_SECS
    while time.time() < deadline and os.path.getsize(out_path) == size:
        time.sleep(0.05)
    spy = py_spy()
    if spy:
        with open(out_path, "ab") as out:
            try:
                subprocess.run([spy, "dump", "--native", "--pid", str(pid)], stdout=out, stderr=subprocess.STDOUT,
                               timeout=PY_SPY_SECS, check=False)
            except subprocess.TimeoutExpired:
                out.write(b"py-spy dump timed out\n")


class Member:
    """One supervised process: its command, its current incarnation and its history of failures."""

    def __init__(self, name, argv, log_dir):
        task = cluster.parse_task_name(name)
        if task is None:
            raise ValueError(f"{name!r} is not the name of a task of the cluster (cluster.task_name)")
        self.name, self.argv, self.log_dir = name, argv, log_dir
        self.role, self.index = cluster.ROLES[task[0]], task[1]
        self.process = None
        self.started = None
        self.due = 0.0  # when to start it next
        self.failures = collections.deque()  # times of failures, for the limit
        self.in_a_row = 0  # failures since it last ran HEALTHY_SECS
        self.restarts = 0
        self.last_reason = None
        self.done = False
        self.recycling = False  # asked to stop for its memory: its exit is a planned restart, not a failure

    def start(self, now):
        with open(logdir.output(self.log_dir, self.name), "ab") as out:
            self.process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.started = now

    def heartbeat_age(self, now):
        """Seconds since this incarnation's last heartbeat, or None before its first (or for a role without)."""
        if not self.role.heartbeat:
            return None
        beat = read_json(logdir.heartbeat_json(self.log_dir, cluster.heartbeat_key(self.role.job, self.index)))
        if not beat or beat.get("pid") != self.process.pid or beat.get("state") != "training":
            return None
        return now - beat.get("time", now)


class Supervisor:
    """Starts `processes` ({task name: argv}, cluster.task_name) and keeps them running, by the rules of each
    one's role (cluster.ROLES); `step()` is one round."""

    def __init__(self, log_dir, processes, hang_secs=HANG_SECS, delays=RESTART_DELAYS, limit=FAILURE_LIMIT,
                 window=FAILURE_WINDOW_SECS, clock=time.time, memory_limit_mb=None):
        self.log_dir = log_dir
        self.members = [Member(name, argv, log_dir) for name, argv in processes.items()]
        learners = sum(member.role.learner for member in self.members)
        self.memory_limit_mb = memory_limit_mb or worker_memory_limit_mb(learners)
        self.hang_secs, self.delays, self.limit, self.window, self.clock = hang_secs, delays, limit, window, clock
        self.outcome = None  # (exit status, reason) once the run is over
        self.disk_stop = False  # stopped because the log directory cannot take more writes

    def stop_requested(self):
        return os.path.exists(os.path.join(self.log_dir, logdir.STOP_MARKER))

    def step(self):
        """Start what is due, notice what died or hung; returns the outcome once the run is over."""
        now = self.clock()
        problem = disk_problem(self.log_dir)
        if problem is not None:
            self.disk_stop = True
            return self._finish(USAGE_ERROR, f"{problem}: the run is stopped")
        for member in self.members:
            if member.done:
                continue
            if member.process is None:
                if now >= member.due and not self.stop_requested():
                    member.start(now)
                continue
            code = member.process.poll()
            if code is None:
                self._recycle_if_too_big(member)
                age = member.heartbeat_age(now)
                if age is not None and age > self.hang_secs:
                    logger.warning("%s: no heartbeat for %.0f s: hung; its stacks go to %s, then it is killed",
                                   member.name, age, self._out(member))
                    member.last_reason = f"hung (no heartbeat for {age:.0f} s)"
                    dump_stacks(member.process.pid, self._out(member))
                    kill_group(member.process.pid)
                    member.process.wait()
                    self._failed(member, now, member.last_reason)
                continue
            kill_group(member.process.pid)  # what it started (game engines) dies with it, not as orphans
            member.process = None
            if self.stop_requested():
                member.done = True
            elif member.recycling:
                member.recycling = False
                member.restarts += 1
                member.due = now
            elif code == 0 and member.role.finishes:
                member.done = True  # reached max_global_steps, or was told to stop
                logger.info("%s finished", member.name)
            elif code == USAGE_ERROR and member.role.finishes:
                return self._finish(USAGE_ERROR, f"{member.name} stopped: {last_line(self._out(member))}")
            else:
                self._failed(member, now, f"exit status {code}")
                if member.role.restarts:
                    self._restart_with(now, member)
        # the learners say when the run is over; on a machine of a cluster that has none of them (Ape-X's actors
        # on another machine), the tasks that finish say it for their share
        deciding = [member for member in self.members if member.role.learner] or [
            member for member in self.members if member.role.finishes]
        if self.outcome is None and all(member.done for member in deciding):
            titles = sorted({member.role.title for member in deciding})
            reason = "stopped" if self.stop_requested() else f"every {' and '.join(titles)} finished"
            return self._finish(0, reason)
        self._write_state(now)
        return self.outcome

    def _recycle_if_too_big(self, member):
        """A worker over its memory limit is asked to stop (the chief saves first) and is started again."""
        if not member.role.learner or member.recycling:
            return
        size = resident_mb(member.process.pid)
        if size is None or size <= self.memory_limit_mb:
            return
        member.recycling = True
        member.last_reason = f"restarted for its memory ({size:,.0f} MB, over {self.memory_limit_mb:,.0f} MB)"
        logger.warning("%s uses %.0f MB, more than its %.0f MB: stopping it to start it again (its memory grows "
                       "with time; docs/history/2026-11-24-benchmarks.md)", member.name, size, self.memory_limit_mb)
        try:
            member.process.send_signal(RECYCLE_SIGNAL)
        except ProcessLookupError:
            pass

    def _restart_with(self, now, server):
        """A parameter server (or Ape-X learner) that died comes back empty: every session on it is lost, and each
        would find out only at its next call (measured: 7-10 s later on Doom, then its own teardown). The tasks of
        the jobs it serves (Role.restarts) are started again with it at once, as a planned restart, not a failure;
        the chief restores the last checkpoint. Those that had finished start again too: the run's global step
        goes back to that checkpoint, below the budget they had reached (an Ape-X learner resumed with no actor
        would wait for transitions forever)."""
        for member in self.members:
            if member.role.job not in server.role.restarts or (member.process is None and not member.done):
                continue
            if member.process is not None:
                kill_group(member.process.pid)
                member.process.wait()
            member.process, member.recycling, member.due, member.done = None, False, now, False
            member.restarts += 1
            member.last_reason = f"restarted with {server.name}"
            logger.warning("%s: started again with %s, whose variables it had lost", member.name, server.name)

    def _out(self, member):
        return logdir.output(self.log_dir, member.name)

    def _failed(self, member, now, reason):
        member.process = None
        member.recycling = False
        member.last_reason = reason
        if member.started is not None and now - member.started >= HEALTHY_SECS:
            member.in_a_row = 0
        member.failures.append(now)
        while member.failures and now - member.failures[0] > self.window:
            member.failures.popleft()
        if len(member.failures) >= self.limit:
            self._finish(1, f"{member.name} failed {len(member.failures)} times in {self.window / 60:g} min "
                            f"(last: {reason}; {last_line(self._out(member))}); see {self._out(member)}")
            return
        delay = self.delays[min(member.in_a_row, len(self.delays) - 1)]
        member.in_a_row += 1
        member.restarts += 1
        member.due = now + delay
        logger.warning("%s %s: starting it again in %.0f s (restart %d)", member.name, reason, delay, member.restarts)

    def _finish(self, code, reason):
        self.outcome = (code, reason)
        self._write_state(self.clock())
        return self.outcome

    def _write_state(self, now):
        record = {"time": now, "pid": os.getpid(), "outcome": self.outcome, "processes": {
            member.name: {"pid": member.process.pid if member.process else None, "restarts": member.restarts,
                          "last_reason": member.last_reason, "done": member.done} for member in self.members}}
        try:
            write_json_atomically(os.path.join(self.log_dir, logdir.SUPERVISOR), record)
        except OSError as error:  # the disk check stops the run at the next step; the record waits till then
            logger.warning("cannot write %s (%s)", logdir.SUPERVISOR, error.strerror)

    def note_resume_point(self):
        """Once the run is stopped (the chief's last checkpoint written, or not): say what a relaunch gets."""
        code, reason = self.outcome
        return self._finish(code, f"{reason}; {resume_note(self.log_dir)}")

    def run(self, poll=POLL_SECS):
        """Supervise until the run is over; (exit status, reason)."""
        while True:
            outcome = self.step()
            if outcome is not None:
                return outcome
            time.sleep(poll)
