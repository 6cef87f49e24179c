"""Runs of the project's commands forked from one process that has imported TensorFlow and the project's modules
already, so that a test's one-process runs and playbacks do not each spend seconds of CPU importing them (on 2
cores that import was most of the suite's time).

A test calls `start(script, *argv)` (a Popen-like handle) or `run(script, *argv)` (subprocess.run's result), as it
would start `python script argv...`: the script runs as __main__ (runpy) in a child forked from the preloaded
process, its standard output and error in files the handle reads, its standard input empty, in the test's working
directory. A run that needs another environment or working directory than the test's, or that checks what a fresh
process imports, is started as a real process by its test; the commands a script itself starts (a cluster's
workers, an evaluation beside a run) are ordinary processes.

Run as a program, this module is the preloaded process: it reads requests as lines of JSON on its standard input
and answers on its standard output, a line for each child started and one for each child ended.
"""
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what the children would import first, after TensorFlow (with the environment the project sets for it): every
# module of the project's
PRELOAD = sorted(name[:-3] for name in os.listdir(ROOT) if name.endswith(".py") and name != "setup.py")


def serve():
    """The preloaded process: import, then fork a child for each request until standard input closes."""
    sys.path[0] = ROOT  # as a script of the project's would have it (not this folder of tests)
    import logdir

    logdir.tf_environment()
    import importlib

    import tensorflow  # noqa: F401  (the point: imported once, here)
    for name in PRELOAD:
        importlib.import_module(name)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    children = {}  # pid -> request id
    requests = sys.stdin.buffer.raw
    pending = b""
    while True:
        readable, _, _ = select.select([requests], [], [], 0.05)
        if readable:
            data = os.read(requests.fileno(), 65536)
            if not data:
                break
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    child(request)  # never returns
                children[pid] = request["id"]
                print(json.dumps({"id": request["id"], "pid": pid}), flush=True)
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print(json.dumps({"id": children.pop(pid), "returncode": os.waitstatus_to_exitcode(status)}),
                      flush=True)
    for pid in children:
        os.kill(pid, signal.SIGKILL)


def child(request):
    """In the forked child: the script as __main__ with the request's arguments and files; exits with its code."""
    import runpy
    import traceback

    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_APPEND), fd)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sys.argv = [request["script"], *request["argv"]]
        sys.path[0] = os.path.dirname(request["script"])
        try:
            runpy.run_path(request["script"], run_name="__main__")
            code = 0
        except SystemExit as stop:  # as the interpreter ends on it: an int its status, None 0, else printed and 1
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            code = 128 + signal.SIGINT
            traceback.print_exc()
        except BaseException:
            traceback.print_exc()
        import atexit

        atexit._run_exitfuncs()  # what a process's normal end runs (logging's flush, the script's own handlers)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


class Preloaded:
    """The client's side: one preloaded process for the test session's process (started at the first request)."""

    def __init__(self):
        self.process = None
        self.lock = threading.Lock()
        self.waiting = {}  # request id -> its Forked handle, until its end is reported
        self.count = 0

    def _start(self):
        log = tempfile.NamedTemporaryFile("w+", prefix="preloaded-", suffix=".log", delete=False)
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT)
        ready = json.loads(self.process.stdout.readline() or "{}")
        if "ready" not in ready:
            log.seek(0)
            raise RuntimeError(f"the preloaded process did not start: {log.read()[-3000:]}")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            message = json.loads(line)
            with self.lock:
                entry = self.waiting.get(message["id"]) if "pid" in message else self.waiting.pop(message["id"], None)
            if entry is not None:
                entry.deliver(message)

    def start(self, script, argv, output=None):
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self._start()
            self.count += 1
            handle = Forked(self.count, [sys.executable, script, *argv], output)
            self.waiting[handle.id] = handle
            self.process.stdin.write(json.dumps({
                "id": handle.id, "script": script, "argv": list(argv), "cwd": os.getcwd(),
                "stdout": handle.stdout_path, "stderr": handle.stderr_path}) + "\n")
            self.process.stdin.flush()
        handle.started.wait(60)
        if handle.pid is None:
            raise RuntimeError(f"the preloaded process did not fork {script}")
        return handle


class Forked:
    """A child of the preloaded process, as much of subprocess.Popen as the tests use."""

    def __init__(self, request_id, args, output=None):
        self.id, self.args = request_id, args
        self.pid = self.returncode = None
        self.started, self.ended = threading.Event(), threading.Event()
        if output is None:
            directory = tempfile.mkdtemp(prefix="forked-")
            self.stdout_path, self.stderr_path = os.path.join(directory, "stdout"), os.path.join(directory, "stderr")
        else:  # both into the test's file, as stdout=file, stderr=STDOUT would
            self.stdout_path = self.stderr_path = str(output)
        for path in {self.stdout_path, self.stderr_path}:
            open(path, "a").close()

    def deliver(self, message):
        if "pid" in message:
            self.pid = message["pid"]
            self.started.set()
        else:
            self.returncode = message["returncode"]
            self.ended.set()

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        if not self.ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def outputs(self):
        return tuple(open(path, errors="replace").read() for path in (self.stdout_path, self.stderr_path))

    def communicate(self, timeout=None):
        self.wait(timeout)
        return self.outputs()

    def send_signal(self, number):
        if self.returncode is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:  # ended, its end not yet reported
                pass

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


PRELOADED = Preloaded()


def start(script, *argv, output=None):
    """`python script argv...` forked from the preloaded process; with `output`, its standard output and error both
    appended to that file."""
    return PRELOADED.start(os.path.join(ROOT, script), [str(value) for value in argv], output)


def run(script, *argv, timeout=300):
    """subprocess.run's result of `python script argv...`, forked from the preloaded process."""
    handle = start(script, *argv)
    try:
        return finish(handle, timeout)
    finally:
        handle.kill()  # nothing where it ended; a child past its timeout stopped


def finish(handle, timeout):
    """subprocess.run's result of a started child once it has ended (subprocess.TimeoutExpired after `timeout`)."""
    stdout, stderr = handle.communicate(timeout)
    return subprocess.CompletedProcess(handle.args, handle.returncode, stdout, stderr)


if __name__ == "__main__":
    serve()
