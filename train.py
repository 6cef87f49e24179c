#!/usr/bin/env python
"""Launcher: one parameter server, N workers and TensorBoard, in tmux (default), under nohup, or as children.

    python train.py --num-workers 2 --unsup action               # the paper: Doom MyWayHome, tmux session 'a3c'
    python train.py --num-workers 2 --env-id CartPole-v1          # classic control, seconds to learn
    python train.py --num-workers 8 --dry-run                     # print the commands, run nothing
    bash <log-dir>/kill.sh                                        # stop exactly this run

`create_commands` is pure: it builds the commands; `main` checks the machine and runs them.
This module does not import TensorFlow.
"""
import argparse
import collections
import fcntl
import logging
import os
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

import constants
import envs
import supervise

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_SCRIPT = os.path.join(HERE, "worker.py")
DEMO_SCRIPT = os.path.join(HERE, "demo.py")  # --eval-every runs its --watch mode beside the workers
STATUS_SCRIPT = os.path.join(HERE, "status.py")  # the tmux window 'status'
PS_BASE_PORT = 12222  # the original's ports: ps 12222, workers 12223...
TB_BASE_PORT = 6006  # TensorBoard's own default
PORT_STRIDE = 100  # --expId k shifts every port by k * PORT_STRIDE (TensorBoard by k)
MAX_WORKERS = PORT_STRIDE - 1
MAX_EXP_ID = 500  # keeps every port below 65536
DEFAULT_NUM_WORKERS = os.cpu_count() or 1  # one worker per core: workers are CPU-bound, the PS is nearly idle
STOP_GRACE_SECS = 30  # kill.sh waits this long for workers to save and exit before the PS goes
MODES = ("tmux", "nohup", "child")
NETWORKS = ("isolated", "host")
HOLDER_FLAG = "--hold-network"  # train.py's own hidden mode: the process that keeps a run's network namespace
SUPERVISE_FLAG = "--supervise"  # and the one that keeps the parameter server and workers running
SUPERVISED_FILE = "supervised.json"  # {name: argv} of the supervised processes, written by the launcher
HOLDER_START_SECS = 10.0
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # linux/sockios.h, linux/if.h
DEFAULT_SESSION = "a3c"

Process = collections.namedtuple("Process", ["name", "argv"])
Plan = collections.namedtuple("Plan", ["session", "log_dir", "mode", "processes", "ps_port", "worker_ports",
                                       "tb_port"])


class LaunchError(Exception):
    """Something the user can fix before anything starts; printed as one line."""


def ports_for(exp_id, num_workers):
    ps_port = PS_BASE_PORT + PORT_STRIDE * exp_id
    return ps_port, [ps_port + 1 + i for i in range(num_workers)], TB_BASE_PORT + exp_id


def create_commands(session, num_workers, env_id, log_dir, mode="tmux", exp_id=0, tensorboard=True, eval_every=None,
                    eval_episodes=5, python=sys.executable, **run_flags):
    """The processes of one run, as argv lists: ps, w-0..w-N-1, eval (with `eval_every`), tb (optional) and,
    in tmux, status and htop. `run_flags` are the run's flags of constants.RUN_FLAGS (unsup="action", ...)."""
    log_dir = os.path.abspath(log_dir)
    ps_port, worker_ports, tb_port = ports_for(exp_id, num_workers)
    if run_flags.get("pretrain"):
        run_flags["pretrain"] = os.path.abspath(run_flags["pretrain"])
    base = [python, WORKER_SCRIPT,
            "--ps-hosts", f"127.0.0.1:{ps_port}",
            "--worker-hosts", ",".join(f"127.0.0.1:{port}" for port in worker_ports),
            "--log-dir", log_dir]
    flags = constants.run_flag_argv(dict(run_flags, env_id=env_id))
    processes = [Process("ps", base + ["--job-name", "ps", "--task", "0"] + flags)]
    processes += [Process(f"w-{i}", base + ["--job-name", "worker", "--task", str(i)] + flags)
                  for i in range(num_workers)]
    processes.append(Process("supervisor", [python, os.path.abspath(__file__), SUPERVISE_FLAG, "--log-dir", log_dir]))
    if eval_every:
        processes.append(Process("eval", [python, DEMO_SCRIPT, "--watch", "--log-dir", log_dir, "--every",
                                          str(eval_every), "--episodes", str(eval_episodes), "--greedy"]))
    if tensorboard:
        processes.append(Process("tb", [python, "-m", "tensorboard.main", "--logdir", log_dir,
                                        "--host", "127.0.0.1", "--port", str(tb_port)]))
    if mode == "tmux":
        status = [python, STATUS_SCRIPT, "--log-dir", log_dir, "--watch"]
        processes.append(Process("status", status + (["--tensorboard-port", str(tb_port)] if tensorboard else [])))
        processes.append(Process("htop", ["htop"] if shutil.which("htop") else ["top"]))
    return Plan(session, log_dir, mode, processes, ps_port, worker_ports, tb_port if tensorboard else None)


def supervised(process):
    """Whether the supervisor starts (and restarts) `process`, rather than the launcher: the cluster's."""
    return process.name == "ps" or process.name.startswith("w-")


def shell_line(process, plan):
    """The process as one shell command line; nohup and child modes send its output to <log-dir>/<name>.out.
    In tmux the supervised processes' windows follow the output the supervisor gives them."""
    line = shlex.join(process.argv)
    if plan.mode == "tmux":
        if supervised(process):
            return shlex.join(["tail", "-n", "+1", "-F", os.path.join(plan.log_dir, process.name + ".out")])
        return line
    return f"nohup {line} > {shlex.quote(os.path.join(plan.log_dir, process.name + '.out'))} 2>&1 &"


def kill_command(plan):
    """`train.py --stop` for this run; it names the tmux session only when the run has one."""
    argv = [sys.executable, os.path.abspath(__file__), "--stop", "--log-dir", plan.log_dir]
    return argv + (["--expName", plan.session] if plan.mode == "tmux" else [])


def script_texts(plan):
    """cmd.sh (the commands, to read or re-run by hand) and kill.sh (stops exactly this run)."""
    cmd = ["#!/usr/bin/env bash", f"# curiosity-agent run '{plan.session}' in {plan.mode} mode",
           f"# The supervisor starts, and restarts, these ({SUPERVISED_FILE}):"]
    cmd += [f"#   {process.name}: {shlex.join(process.argv)}" for process in plan.processes if supervised(process)]
    if plan.mode == "tmux":
        cmd.append(f"tmux new-session -d -s {shlex.quote(plan.session)} -n ps")
        for process in plan.processes[1:]:
            cmd.append(f"tmux new-window -t {shlex.quote(plan.session)} -n {process.name}")
        for process in plan.processes:
            target = shlex.quote(f"{plan.session}:{process.name}")
            cmd.append(f"tmux send-keys -t {target} {shlex.quote(shell_line(process, plan))} Enter")
    else:
        cmd += [shell_line(process, plan) for process in plan.processes if not supervised(process)]
    kill = ["#!/usr/bin/env bash", f"# Stops run '{plan.session}' (log dir {plan.log_dir}): workers first, so that",
            "# the chief can write a last checkpoint, then the parameter server and TensorBoard.",
            "exec " + shlex.join(kill_command(plan))]
    return "\n".join(cmd) + "\n", "\n".join(kill) + "\n"


# ---------------------------------------------------------------- the run's own network

class IsolationUnavailable(Exception):
    """This machine cannot give the run a network namespace; the message says why."""


def isolate(plan, holder_pid):
    """The plan with the parameter server and workers run inside the network namespace of `holder_pid`, where
    only their own loopback exists: TensorFlow's gRPC servers bind every interface and have no authentication,
    and there nothing but the run's own processes can reach them. TensorBoard, status and evaluation only read
    files and stay on the host."""
    enter = ["nsenter", f"--target={holder_pid}", "--user", "--net", "--preserve-credentials", "--"]
    processes = [Process(p.name, enter + p.argv) if supervised(p) else p for p in plan.processes]
    return plan._replace(processes=processes)


def start_network_holder(log_dir):
    """Start the process that owns the run's network namespace (`unshare --user --map-root-user --net`, which
    needs no privileges where user namespaces are allowed) and return its pid once its loopback is up."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        raise IsolationUnavailable("unshare/nsenter (util-linux) not found")
    argv = ["unshare", "--user", "--map-root-user", "--net", "--", sys.executable, os.path.abspath(__file__),
            HOLDER_FLAG, "--log-dir", log_dir]
    holder = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True, text=True)
    answered = select.select([holder.stdout], [], [], HOLDER_START_SECS)[0]
    if answered and holder.stdout.readline().strip() == "ready":
        holder.stdout.close()
        holder.stderr.close()
        return holder.pid
    holder.kill()
    error = holder.communicate(timeout=5)[1].strip().splitlines()
    raise IsolationUnavailable(error[-1] if error else f"no answer in {HOLDER_START_SECS:.0f} s")


def loopback_up():
    """`ip link set lo up`, without needing iproute2: a new network namespace starts with its loopback down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sh22x", fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack("16sh22x", b"lo", 0)))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | IFF_UP))


def hold_network():
    """The holder's life, inside its new namespace: loopback up, "ready" to the launcher, then wait for the
    run's stop (kill.sh finds it by its command line, which names the log directory)."""
    loopback_up()
    print("ready", flush=True)
    devnull = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(devnull, stream)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal stops the run through its launcher
    while True:
        signal.pause()


# ---------------------------------------------------------------- checks before launching

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Launch a distributed A3C (+ICM) run.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add = parser.add_argument
    add("-w", "--num-workers", type=int, default=DEFAULT_NUM_WORKERS,
        help="worker processes (default: one per CPU core of this machine)")
    add("-l", "--log-dir", default=None, help="checkpoints, events, CSVs and logs (default: tmp/<env-id>)")
    add("-n", "--dry-run", action="store_true", help="print the commands, run nothing")
    add("-m", "--mode", choices=MODES, default="tmux",
        help="tmux: a session to attach to; nohup: detached, logs in <log-dir>/*.out; child: wait for the run")
    constants.add_run_flags(parser, {"env_id": "; supported: " + envs.SUPPORTED})
    add("--expName", "--exp-name", dest="exp_name", default=None,
        help=f"tmux session name (default: {DEFAULT_SESSION}); with --stop, the session to end too")
    add("--expId", "--exp-id", dest="exp_id", type=int, default=0,
        help=f"shifts every port by {PORT_STRIDE} x this (TensorBoard by this) so runs can share a machine")
    add("--default", action="store_true", help="the paper's settings: --envWrap --designHead universe "
        "--unsup action --noLifeReward")
    add("--envs-per-worker", type=int, default=None, metavar="K", help="environments each worker plays at once "
        "(the same as --set envs_per_worker=K; default: the preset's)")
    add("--network", choices=NETWORKS, default="isolated", help="isolated: the parameter server and workers "
        "run in a network namespace of their own, reachable from no other host (and from no other process of "
        "this one); host: on this machine's network, where their ports answer on every interface")
    add(HOLDER_FLAG, action="store_true", help=argparse.SUPPRESS)
    add(SUPERVISE_FLAG, action="store_true", help=argparse.SUPPRESS)
    add("--allow-config-change", action="store_true", help="let a relaunch resume a run with hyper-parameters "
        "other than those in its config.json (recorded there under \"changes\"); without it the saved values are "
        "kept, and the launcher says which")
    add("--help-config", action="store_true", help="list the hyper-parameters with their defaults and exit")
    add("--no-tensorboard", dest="tensorboard", action="store_false", help="do not start TensorBoard")
    add("--eval-every", type=int, default=None, metavar="STEPS", help="run an evaluation process beside the "
        "workers: every STEPS global steps it plays --eval-episodes greedy episodes with the latest checkpoint, "
        "appends to <log-dir>/eval.csv and keeps the best checkpoint in <log-dir>/best")
    add("--eval-episodes", type=int, default=5, help="episodes per evaluation (with --eval-every)")
    add("--stop", action="store_true", help="stop the run in --log-dir (what kill.sh does) and exit")
    args = parser.parse_args(argv)
    if args.default:
        args.env_wrap, args.design_head, args.unsup, args.no_life_reward = True, "universe", "action", True
    if args.log_dir is None:
        args.log_dir = os.path.join("tmp", args.env_id.replace("/", "_"))
    if args.envs_per_worker is not None:
        args.overrides.append(f"envs_per_worker={args.envs_per_worker}")
    return args


def check_args(args):
    """Checks that touch nothing: flag values, environment id, hyper-parameters."""
    if not 1 <= args.num_workers <= MAX_WORKERS:
        raise LaunchError(f"--num-workers must be between 1 and {MAX_WORKERS}, got {args.num_workers}")
    if args.eval_every is not None and args.eval_every < 1:
        raise LaunchError(f"--eval-every must be at least 1 global step, got {args.eval_every}")
    if args.eval_episodes < 1:
        raise LaunchError(f"--eval-episodes must be at least 1, got {args.eval_episodes}")
    if not 0 <= args.exp_id <= MAX_EXP_ID:
        raise LaunchError(f"--expId must be between 0 and {MAX_EXP_ID}, got {args.exp_id}")
    if args.unsup in constants.PIXEL_CURIOSITY and args.design_head not in (None, "universe"):
        raise LaunchError(f"--unsup {args.unsup} predicts images with the universe head; it cannot be combined "
                          f"with --designHead {args.design_head}")
    if args.pretrain and not (os.path.isdir(args.pretrain) or os.path.exists(args.pretrain + ".index")):
        raise LaunchError(f"--pretrain {args.pretrain}: no such run directory or checkpoint")
    if args.visualise and not os.environ.get("DISPLAY"):
        raise LaunchError("--visualise needs a display (DISPLAY is not set); run without it on a headless machine")
    try:
        envs.check_env_id(args.env_id)
        constants.config_from_overrides(args.overrides, "paper" if args.preset == "auto" else args.preset)
    except (envs.EnvError, constants.ConfigError) as error:
        raise LaunchError(str(error)) from None


def check_relaunch(log_dir, args):
    """(Config, applied changes) of a relaunch (constants.check_relaunch). Changes it may not make are left out
    of `args`, so that the workers resume with the saved values, and reported."""
    try:
        constants.check_same_run(log_dir, {key: getattr(args, key) for key in constants.RUN_IDENTITY_KEYS})
        config, applied, kept = constants.check_relaunch(log_dir, args.overrides, args.preset,
                                                         args.allow_config_change)
    except constants.ConfigError as error:
        raise LaunchError(str(error)) from None
    if kept:
        print(f"resuming with the saved hyper-parameters of {os.path.join(log_dir, constants.CONFIG_FILE)}: "
              + ", ".join(f"{name} {before!r} (asked {after!r})" for name, (before, after) in kept.items())
              + "; add --allow-config-change to apply what was asked")
        args.overrides = [item for item in args.overrides if item.partition("=")[0].strip() not in kept]
        args.preset = "auto"  # the saved run's own
    return config, applied


def check_log_dir(log_dir):
    """The log directory can be written to (whether it holds a run of another identity is check_relaunch's)."""
    try:
        os.makedirs(log_dir, exist_ok=True)
        probe = os.path.join(log_dir, f".write-test-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as error:
        raise LaunchError(f"cannot write to log directory {log_dir} ({error.strerror}); "
                          f"choose another --log-dir") from None
    problem = supervise.disk_problem(log_dir)
    if problem is not None:
        raise LaunchError(f"{problem}; free some space or choose another --log-dir")


def port_in_use(port):
    """True when something listens on (or holds) `port`; connections of a finished run in TIME_WAIT don't count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def check_ports(plan, cluster=True):
    """The ports the run will open on this machine are free: TensorBoard's, and the cluster's unless isolated."""
    ports = ([plan.ps_port] + plan.worker_ports if cluster else []) + ([plan.tb_port] if plan.tb_port else [])
    busy = [port for port in ports if port_in_use(port)]
    if busy:
        raise LaunchError(f"port(s) {', '.join(map(str, busy))} already in use: stop the run using them "
                          f"(its kill.sh) or pick another --expId")


def check_tmux(session):
    if shutil.which("tmux") is None:
        raise LaunchError("tmux is not installed: install it (apt-get install tmux) or use --mode nohup or "
                          "--mode child")
    import libtmux

    if libtmux.Server().has_session(session):
        raise LaunchError(f"tmux session '{session}' already exists (a run, or the windows of a stopped one): "
                          f"look with `tmux attach -t {session}`, end it with its kill.sh or "
                          f"`tmux kill-session -t {session}`, or choose another --expName")


def run_processes(log_dir):
    """Processes of ours (worker.py or TensorBoard) whose command line names `log_dir`: {pid: argv}."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
        except OSError:
            continue
        pairs = set(zip(argv, argv[1:]))
        ours = (any(script in argv for script in (WORKER_SCRIPT, DEMO_SCRIPT, STATUS_SCRIPT, "tensorboard.main"))
                or HOLDER_FLAG in argv or SUPERVISE_FLAG in argv)
        if ours and (("--log-dir", log_dir) in pairs or ("--logdir", log_dir) in pairs):
            found[int(entry)] = argv
    return found


def run_roles(log_dir):
    """The run's TensorFlow processes running now, by the name the status view uses: {"ps": pid, "w-0": pid}."""
    found = {}
    for pid, argv in run_processes(log_dir).items():
        if "--job-name" in argv:
            role = argv[argv.index("--job-name") + 1]
            found["ps" if role == "ps" else f"w-{argv[argv.index('--task') + 1]}"] = pid
    return found


def run_memory_mb(log_dir):
    """Resident MB of the run's processes (benchmarks): the parameter server, each worker, the game engines
    they started; for the TensorFlow processes also their anonymous (own, not file-backed) part."""
    found = {}
    for name, pid in run_roles(log_dir).items():
        found[name] = supervise.resident_mb(pid)
        found[f"{name} anon"] = supervise.resident_mb(pid, "RssAnon")
        engines = [supervise.resident_mb(child) for child in descendants([pid])]
        if any(engines):
            found[f"{name} engines"] = sum(mb for mb in engines if mb)
    return {name: round(mb) for name, mb in sorted(found.items()) if mb}


def check_not_running(log_dir):
    running = run_processes(log_dir)
    if running:
        raise LaunchError(f"a run is already using {log_dir} (pids {', '.join(map(str, sorted(running)))}): "
                          f"stop it with {os.path.join(log_dir, 'kill.sh')} first")


# ---------------------------------------------------------------- running

def write_scripts(plan):
    cmd_text, kill_text = script_texts(plan)
    for name, text in (("cmd.sh", cmd_text), ("kill.sh", kill_text)):
        path = os.path.join(plan.log_dir, name)
        with open(path, "w") as handle:
            handle.write(text)
        os.chmod(path, 0o755)


def launch_tmux(plan):
    import libtmux

    server = libtmux.Server()
    session = server.new_session(session_name=plan.session, window_name=plan.processes[0].name,
                                 start_directory=os.getcwd(), attach=False)
    windows = [session.windows[0]]
    for process in plan.processes[1:]:
        windows.append(session.new_window(window_name=process.name, start_directory=os.getcwd(), attach=False))
    for window, process in zip(windows, plan.processes):
        window.active_pane.send_keys(shell_line(process, plan), enter=True)


def write_supervised(plan):
    """<log-dir>/supervised.json: the commands the supervisor runs."""
    constants.write_json_atomically(os.path.join(plan.log_dir, SUPERVISED_FILE),
                                    {p.name: p.argv for p in plan.processes if supervised(p)})


def launch_detached(plan):
    """Start every process in its own session with output in <log-dir>/<name>.out; returns {name: Popen}. The
    cluster's are the supervisor's to start; in child mode the launcher itself supervises."""
    children = {}
    for process in plan.processes:
        if supervised(process) or (process.name == "supervisor" and plan.mode == "child"):
            continue
        out = open(os.path.join(plan.log_dir, process.name + ".out"), "ab")
        children[process.name] = subprocess.Popen(process.argv, stdout=out, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()
    return children


def _interrupt(signum, frame):
    """SIGTERM to a supervisor ends the run as Ctrl-C does; by default it would die and leave the run's
    processes training on as orphans."""
    raise KeyboardInterrupt


def run_supervisor(log_dir):
    """Supervise the run in `log_dir` until it is over, then stop what is left of it: (exit status, reason).
    What `train.py --supervise` runs, and child mode in the launcher itself."""
    processes = constants.read_json(os.path.join(log_dir, SUPERVISED_FILE))
    if not processes:
        return 2, f"no {SUPERVISED_FILE} in {log_dir}: start the run with train.py"
    supervisor = supervise.Supervisor(log_dir, processes)
    signal.signal(signal.SIGTERM, _interrupt)  # timeout(1), a scheduler or systemd: stop as Ctrl-C does
    try:
        code, reason = supervisor.run()
    except KeyboardInterrupt:
        code, reason = 0, "interrupted"
    except Exception as error:  # noqa: BLE001 -- whatever broke the supervisor, the run must not go on unwatched
        code, reason = 1, f"the supervisor failed ({type(error).__name__}: {error}); the run is stopped"
        supervise.logger.exception("supervisor failed")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the stopping short: orphans
    if not supervisor.stop_requested():  # over by itself: stop the rest (TensorBoard, the evaluation)
        stop_run(log_dir, None, quiet=True)
    if supervisor.disk_stop:
        code, reason = supervisor.note_resume_point()
    return code, reason


def wait_for_children(plan, children):
    """Child mode: supervise the run until its workers finish, Ctrl-C, or a process that keeps failing; then
    stop it. Exit status 0 when the workers finished."""
    code, reason = run_supervisor(plan.log_dir)
    print(f"run over: {reason}", flush=True)
    return 0 if code == 0 else 1


def _signal_and_wait(pids, sig, timeout):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.time() + timeout
    alive = set(pids)
    while alive and time.time() < deadline:
        alive = {pid for pid in alive if os.path.exists(f"/proc/{pid}") and not _is_zombie(pid)}
        time.sleep(0.2)
    return alive


def _stat_fields(pid):
    """/proc/<pid>/stat after the command name: [state, ppid, ...], or None for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _is_zombie(pid):
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def descendants(pids):
    """Every process below `pids` (game engines such as ViZDoom's run as children of the worker)."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        fields = _stat_fields(entry)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, frontier = set(), list(pids)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def stop_run(log_dir, session, quiet=False):
    """Stop the processes of the run in `log_dir`: workers first (the chief saves), then PS and TensorBoard."""
    log_dir = os.path.abspath(log_dir)
    if os.path.isdir(log_dir):  # no supervisor starts again what is stopped here
        try:
            with open(os.path.join(log_dir, supervise.STOP_MARKER), "w") as marker:
                marker.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
        except OSError as error:  # a full or read-only disk: stop the supervisor first, then the rest
            print(f"cannot leave the stop marker in {log_dir} ({error.strerror}); stopping its supervisor first",
                  file=sys.stderr)
            supervisors = [pid for pid, argv in run_processes(log_dir).items() if SUPERVISE_FLAG in argv]
            _signal_and_wait(supervisors, signal.SIGTERM, 5.0)
    running = run_processes(log_dir)
    workers = [pid for pid, argv in running.items() if ("--job-name", "worker") in set(zip(argv, argv[1:]))]
    others = [pid for pid in running if pid not in workers]
    below = descendants(running)  # found now: once a worker is gone its engine is re-parented
    left = _signal_and_wait(workers, signal.SIGTERM, STOP_GRACE_SECS)
    left |= _signal_and_wait(others, signal.SIGTERM, 5.0)
    _signal_and_wait(sorted(left), signal.SIGKILL, 5.0)
    _signal_and_wait(sorted(pid for pid in below if not _is_zombie(pid)), signal.SIGKILL, 5.0)  # orphans
    killed_session = False
    if session and shutil.which("tmux"):
        import libtmux

        server = libtmux.Server()
        if server.has_session(session):
            server.kill_session(session)
            killed_session = True
    if not quiet:
        print(f"stopped {len(running)} process(es) of the run in {log_dir}"
              + (f" and tmux session '{session}'" if killed_session else ""))


def announce(plan, isolated):
    print(f"Run '{plan.session}': 1 parameter server, {sum(p.name.startswith('w-') for p in plan.processes)} "
          f"workers; logs, checkpoints and CSVs in {plan.log_dir}")
    if isolated:
        print("  network:      the cluster runs in a network namespace of its own: no port of it is open here")
    else:
        print(f"  network:      the cluster's ports {plan.ps_port}-{plan.worker_ports[-1]} answer on every interface "
              f"of this machine, without authentication: keep them behind a firewall")
    if plan.mode == "tmux":
        print(f"  attach:       tmux attach -t {plan.session}   (windows: "
              f"{', '.join(p.name for p in plan.processes)})")
    elif plan.mode == "nohup":
        print(f"  output:       {os.path.join(plan.log_dir, '*.out')}")
    if plan.tb_port:
        print(f"  TensorBoard:  http://127.0.0.1:{plan.tb_port}")
    print(f"  stop:         bash {os.path.join(plan.log_dir, 'kill.sh')}")


def main(argv=None):
    args = parse_args(argv)
    if args.hold_network:
        return hold_network()
    if args.supervise:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor %(levelname)s %(message)s")
        code, reason = run_supervisor(os.path.abspath(args.log_dir))
        logging.info("run over: %s", reason)
        return code
    if args.help_config:
        for name, value in constants.Config().to_dict().items():
            print(f"{name} = {value!r}\n    {constants.HELP[name]}")
        for name, values in constants.PRESETS.items():
            print(f"preset {name}: {values or 'the defaults above (the original noreward-rl constants)'}")
        return 0
    if args.stop:
        stop_run(args.log_dir, args.exp_name)
        return 0
    args.exp_name = args.exp_name or DEFAULT_SESSION
    try:
        check_args(args)
        config_change = check_relaunch(os.path.abspath(args.log_dir), args)
        run_flags = constants.run_flag_values(args)
        plan = create_commands(args.exp_name, args.num_workers, run_flags.pop("env_id"), args.log_dir, args.mode,
                               args.exp_id, args.tensorboard, args.eval_every, args.eval_episodes, **run_flags)
        if args.dry_run:
            if args.network == "isolated":
                print("# ps and w-* would run inside the run's own network namespace: nsenter --target=<pid of "
                      "`unshare --user --map-root-user --net -- train.py --hold-network`> ... <command>")
            print(script_texts(plan)[0], end="")
            return 0
        check_log_dir(plan.log_dir)
        check_not_running(plan.log_dir)
        check_ports(plan, cluster=args.network == "host")
        if args.mode == "tmux":
            check_tmux(plan.session)
    except LaunchError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    isolated = args.network == "isolated"
    if isolated:
        try:
            plan = isolate(plan, start_network_holder(plan.log_dir))
        except IsolationUnavailable as why:
            isolated = False
            print(f"train.py: warning: cannot give the run a network namespace ({why}); it uses this machine's "
                  f"network (--network host)", file=sys.stderr)
            try:
                check_ports(plan)
            except LaunchError as error:
                print(f"train.py: error: {error}", file=sys.stderr)
                return 2
    if config_change[1]:
        constants.record_config_change(plan.log_dir, *config_change)
        print("resuming with changed hyper-parameters: " + ", ".join(
            f"{name} {before!r} -> {after!r}" for name, (before, after) in config_change[1].items()))
    write_scripts(plan)
    write_supervised(plan)
    for stale in (supervise.STOP_MARKER, supervise.STATE_FILE):  # left by the run's previous launch
        if os.path.exists(os.path.join(plan.log_dir, stale)):
            os.remove(os.path.join(plan.log_dir, stale))
    if args.mode == "tmux":
        launch_tmux(plan)
        announce(plan, isolated)
        return 0
    children = launch_detached(plan)
    announce(plan, isolated)
    if args.mode == "child":
        return wait_for_children(plan, children)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `train.py ... | head`: the run is started; only the announcement was cut short
        sys.stderr.close()
        sys.exit(0)
