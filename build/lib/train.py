#!/usr/bin/env python
"""Launcher: one parameter server, N workers and TensorBoard, in tmux (default), under nohup, or as children.

    python train.py --num-workers 2 --unsup action               # the paper: Doom MyWayHome, tmux session 'a3c'
    python train.py --num-workers 2 --env-id CartPole-v1          # classic control, seconds to learn
    python train.py --num-workers 8 --dry-run                     # print the commands, run nothing
    python train.py --cluster cluster.json                        # one run across machines: the same on each
    bash <log-dir>/kill.sh                                        # stop exactly this run

`create_commands` is pure: it builds the commands; `main` checks the machine and runs them.
This module does not import TensorFlow.
"""
import argparse
import collections
import concurrent.futures
import contextlib
import fcntl
import logging
import os
import re
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
import evaluation
import logdir
import supervise
import algorithms
import cluster as cluster_roles
from cluster import (JOBS, PS, ROLES, WORKER, LaunchError, addresses, all_tasks, describe, digest, is_chief,
                     jobs_of, local, machines, parse_task_name, parse_tasks, read_cluster, split_address, task_name)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_SCRIPT = os.path.join(HERE, "worker.py")
DEMO_SCRIPT = os.path.join(HERE, "demo.py")  # --eval-every runs its --watch mode beside the workers
STATUS_SCRIPT = os.path.join(HERE, "status.py")  # the tmux window 'status'
PS_BASE_PORT = 12222  # the original's ports: ps 12222, workers 12223...
TB_BASE_PORT = 6006  # TensorBoard's own default
PORT_STRIDE = 100  # --expId k shifts every port by k * PORT_STRIDE (TensorBoard by k)
MAX_TASKS = PORT_STRIDE  # parameter servers and workers of one run on one machine
MAX_WORKERS = PORT_STRIDE - 1
REACH_TIMEOUT_SECS = 5.0  # train.py --cluster waits this long for each other machine to answer
MAX_EXP_ID = 500  # keeps every port below 65536
DEFAULT_NUM_WORKERS = os.cpu_count() or 1  # one worker per core: workers are CPU-bound, the PS is nearly idle
STOP_GRACE_SECS = 30  # kill.sh waits this long for workers to save and exit before the PS goes
FINAL_EVALUATION_SECS = 300  # a run over by itself waits this long for the evaluation of its last checkpoint
MODES = ("tmux", "nohup", "child")
NETWORKS = ("isolated", "host")
HOLDER_FLAG = "--hold-network"  # train.py's own hidden mode: the process that keeps a run's network namespace
SUPERVISE_FLAG = "--supervise"  # and the one that keeps the parameter server and workers running
HOLDER_START_SECS = 10.0
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # linux/sockios.h, linux/if.h

Process = collections.namedtuple("Process", ["name", "argv"])
Plan = collections.namedtuple("Plan", ["session", "log_dir", "mode", "processes", "cluster", "tasks", "tb_port"])


# ---------------------------------------------------------------- the cluster (its roles: cluster.py)

def local_cluster(exp_id, num_workers, num_ps=1, algo=algorithms.DEFAULT):
    """The cluster of a run on this machine alone (cluster.local), on 127.0.0.1."""
    return local(PS_BASE_PORT + PORT_STRIDE * exp_id, num_workers, num_ps, algo)


def ports_for(exp_id, num_workers, num_ps=1):
    """(parameter-server ports, worker ports, TensorBoard port) of a run on this machine alone."""
    cluster = local_cluster(exp_id, num_workers, num_ps)
    return ([split_address(a)[1] for a in cluster[PS.job]], [split_address(a)[1] for a in cluster[WORKER.job]],
            TB_BASE_PORT + exp_id)


def is_this_machine(host):
    """Whether `host` names this machine: it resolves to an address a socket here can bind."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except OSError:
        return False
    for address in addresses:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((address, 0))
                return True
            except OSError:
                continue
    return False


def is_loopback(host):
    return host in ("localhost", "::1") or host.startswith("127.")


def local_tasks(cluster, tasks_flag=None, is_local=is_this_machine):
    """This machine's share of the cluster: --tasks, or every task whose host is this machine. The cluster may
    be of any size; one machine starts at most MAX_TASKS of its tasks."""
    if tasks_flag:
        mine = parse_tasks(tasks_flag, cluster)
    else:
        mine = [task for host, tasks in machines(cluster).items() if is_local(host) for task in tasks]
    if not mine:
        raise LaunchError("no host of the cluster is this machine (" + ", ".join(machines(cluster)) + "): run "
                          "the command on the cluster's machines, or name this machine's share with --tasks")
    return check_share(mine)


def check_share(tasks, host="this machine"):
    if len(tasks) > MAX_TASKS:
        raise LaunchError(f"{host}'s share of the cluster has {len(tasks)} tasks; one machine starts at most "
                          f"{MAX_TASKS}: spread them over more machines, or name a share with --tasks")
    return tasks


def check_reachable(cluster, tasks, timeout=REACH_TIMEOUT_SECS):
    """Every other machine's tasks can be reached: a TCP connect is answered, accepted or refused (a task not
    started yet); a host that cannot be resolved, or one that does not answer, is named in a LaunchError."""
    others = [(task, address) for task, address in addresses(cluster, all_tasks(cluster))
              if task not in tasks]

    def answers(address):
        host, port = split_address(address)
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return None
        except ConnectionRefusedError:
            return None
        except socket.gaierror:
            return "the name does not resolve"
        except socket.timeout:
            return f"no answer in {timeout:.0f} s"
        except OSError as error:
            return error.strerror or str(error)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(len(others), 1)) as pool:
        problems = list(pool.map(lambda item: answers(item[1]), others))
    for (task, address), problem in zip(others, problems):
        if problem:
            raise LaunchError(f"cannot reach {split_address(address)[0]} ({task_name(*task)} at {address}: "
                              f"{problem}); check the address, the network and its firewall")


def create_commands(session, num_workers, env_id, log_dir, mode="tmux", exp_id=0, tensorboard=True, eval_every=None,
                    eval_episodes=5, python=sys.executable, cluster=None, tasks=None, num_ps=1, eval_frames=None,
                    **run_flags):
    """This machine's processes of one run, as argv lists: its parameter servers and workers (`tasks` of
    `cluster`; by default every task of a cluster of `num_ps` parameter servers and `num_workers` workers on
    127.0.0.1), the supervisor, eval (with `eval_every`, where worker 0, the chief, runs), tb (optional) and,
    in tmux, status and htop. `run_flags` are the run's flags of constants.RUN_FLAGS (unsup="action", ...)."""
    log_dir = os.path.abspath(log_dir)
    cluster = cluster or local_cluster(exp_id, num_workers, num_ps, run_flags.get("algo", algorithms.DEFAULT))
    tasks = tasks or all_tasks(cluster)
    tb_port = TB_BASE_PORT + exp_id
    if run_flags.get("pretrain"):
        run_flags["pretrain"] = os.path.abspath(run_flags["pretrain"])
    hosts = [flag for job in jobs_of(cluster) for flag in (f"--{job}-hosts", ",".join(cluster[job]))]
    base = [python, WORKER_SCRIPT, *hosts, "--log-dir", log_dir]
    flags = constants.run_flag_argv(dict(run_flags, env_id=env_id))
    processes = [Process(task_name(job, index), base + ["--job-name", job, "--task", str(index)] + flags)
                 for job, index in sorted(tasks, key=lambda task: (JOBS.index(task[0]), task[1]))]
    processes.append(Process("supervisor", [python, os.path.abspath(__file__), SUPERVISE_FLAG, "--log-dir", log_dir]))
    if eval_every and any(is_chief(*task) for task in tasks):  # it reads the checkpoints, which the chief writes
        processes.append(Process("eval", evaluation_argv(python, log_dir, eval_every, eval_episodes, eval_frames)))
    if tensorboard:
        processes.append(Process("tb", [python, "-m", "tensorboard.main", "--logdir", log_dir,
                                        "--host", "127.0.0.1", "--port", str(tb_port)]))
    if mode == "tmux":
        status = [python, STATUS_SCRIPT, "--log-dir", log_dir, "--watch"]
        processes.append(Process("status", status + (["--tensorboard-port", str(tb_port)] if tensorboard else [])))
        processes.append(Process("htop", ["htop"] if shutil.which("htop") else ["top"]))
    return Plan(session, log_dir, mode, processes, cluster, sorted(tasks), tb_port if tensorboard else None)


def evaluation_argv(python, log_dir, eval_every, eval_episodes, eval_frames=None):
    """The evaluation process beside a run (--eval-every): demo.py --watch on the checkpoints the chief writes,
    with --eval-frames recording each evaluation's episodes in eval_NNN/."""
    frames = ["--record", "--video-format", eval_frames] if eval_frames else []
    return [python, DEMO_SCRIPT, "--watch", "--log-dir", log_dir, "--every", str(eval_every), "--episodes",
            str(eval_episodes), "--greedy", "--random-start", "auto", *frames]


def cluster_ports(plan):
    """The ports this machine's share of the cluster listens on."""
    return [split_address(address)[1] for _, address in addresses(plan.cluster, plan.tasks)]


def supervised(process):
    """Whether the supervisor starts (and restarts) `process`, rather than the launcher: the cluster's."""
    return parse_task_name(process.name) is not None


def shell_line(process, plan):
    """The process as one shell command line; nohup and child modes send its output to <log-dir>/<name>.out.
    In tmux the supervised processes' windows follow the output the supervisor gives them."""
    line = shlex.join(process.argv)
    if plan.mode == "tmux":
        if supervised(process):
            return shlex.join(["tail", "-n", "+1", "-F", logdir.output(plan.log_dir, process.name)])
        return line
    return f"nohup {line} > {shlex.quote(logdir.output(plan.log_dir, process.name))} 2>&1 &"


def kill_command(plan):
    """`train.py --stop` for this run; it names the tmux session only when the run has one."""
    argv = [sys.executable, os.path.abspath(__file__), "--stop", "--log-dir", plan.log_dir]
    return argv + (["--expName", plan.session] if plan.mode == "tmux" else [])


def script_texts(plan):
    """cmd.sh (the commands, to read or re-run by hand) and kill.sh (stops exactly this run)."""
    cmd = ["#!/usr/bin/env bash", f"# curiosity-agent run '{plan.session}' in {plan.mode} mode",
           f"# The supervisor starts, and restarts, these ({logdir.SUPERVISED}):"]
    cmd += [f"#   {process.name}: {shlex.join(process.argv)}" for process in plan.processes if supervised(process)]
    if plan.mode == "tmux":
        cmd.append(f"tmux new-session -d -s {shlex.quote(plan.session)} -n {plan.processes[0].name}")
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

def build_parser():
    """The launcher's flags (docs/configuration.md's flag reference is generated from them)."""
    parser = argparse.ArgumentParser(description="Launch a distributed A3C (+ICM) run.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add = parser.add_argument
    add("-w", "--num-workers", type=int, default=None,
        help=f"worker processes (default: one per CPU core of this machine, {DEFAULT_NUM_WORKERS} here)")
    add("--num-ps", type=int, default=1, metavar="P", help="parameter servers; the global variables are spread "
        "over them, balanced by size")
    add("--cluster", metavar="FILE", help="a run across machines: the cluster as TensorFlow's ClusterSpec in JSON, "
        '{"ps": ["host:port", ...], "worker": ["host:port", ...]}; the same command on each machine starts the '
        "tasks whose host is that machine (or --tasks)")
    add("--ps-hosts", metavar="HOST:PORT,...", help="the cluster's parameter servers, instead of --cluster")
    add("--worker-hosts", metavar="HOST:PORT,...", help="the cluster's workers (worker 0, the chief, first), "
        "instead of --cluster")
    add("--tasks", metavar="JOB:INDEX,...", help="this machine's share of the cluster, e.g. ps:0,worker:0 "
        "(default: the tasks whose host is this machine)")
    add("-l", "--log-dir", default=None, help="checkpoints, events, CSVs and logs (default: tmp/<env-id>)")
    add("-n", "--dry-run", action="store_true", help="print the commands, run nothing")
    add("-m", "--mode", choices=MODES, default="tmux",
        help="tmux: a session to attach to; nohup: detached, logs in <log-dir>/*.out; child: wait for the run")
    constants.add_run_flags(parser, {"env_id": "; supported: " + envs.SUPPORTED})
    add("--expName", "--exp-name", dest="exp_name", default=None,
        help="tmux session name (default: the --algo, a3c); with --stop, the session to end too")
    add("--expId", "--exp-id", dest="exp_id", type=int, default=0,
        help=f"shifts every port by {PORT_STRIDE} x this (TensorBoard by this) so runs can share a machine")
    add("--default", action="store_true", help="the paper's settings: --envWrap --designHead universe "
        "--unsup action --noLifeReward")
    add("--envs-per-worker", type=int, default=None, metavar="K", help="environments each worker plays at once "
        "(the same as --set envs_per_worker=K; default: the preset's)")
    add("--network", choices=NETWORKS, default=None, help="isolated (the default on one machine): the parameter "
        "server and workers run in a network namespace of their own, reachable from no other host (and from no "
        "other process of this one); host (the default and the only choice across machines): on this "
        "machine's network, where their ports answer on every interface, without authentication")
    add(HOLDER_FLAG, action="store_true", help=argparse.SUPPRESS)
    add(SUPERVISE_FLAG, action="store_true", help=argparse.SUPPRESS)
    add("--allow-config-change", action="store_true", help="let a relaunch resume a run with hyper-parameters "
        "other than those in its config.json (recorded there under \"changes\"); without it the saved values are "
        "kept, and the launcher says which")
    add("--help-config", action="store_true", help="list the hyper-parameters with their defaults and exit")
    add("--no-tensorboard", dest="tensorboard", action="store_false", help="do not start TensorBoard")
    add("--eval-every", type=int, default=None, metavar="STEPS", help="evaluate every STEPS global steps: "
        "--eval-episodes greedy episodes with the latest checkpoint (an evaluation process beside the workers; a "
        "replay learner's one-process run in its own loop, every 10000 steps by default), a row each in "
        "<log-dir>/eval.csv (and rewards.txt, its view); the best checkpoint kept in <log-dir>/best")
    add("--eval-episodes", type=int, default=5, help="episodes per evaluation (with --eval-every)")
    add("--eval-frames", choices=evaluation.FRAME_FORMATS, default=None, help="with --eval-every: keep each "
        "evaluation's episodes in <log-dir>/eval_NNN/, a video each (mp4, gif) or their frames as PNG images")
    add("--stop", action="store_true", help="stop the run in --log-dir (what kill.sh does) and exit")
    return parser


def parse_args(argv=None):
    args = build_parser().parse_args(argv)
    if args.default:
        args.env_wrap, args.design_head, args.unsup, args.no_life_reward = True, "universe", "action", True
    if args.log_dir is None:
        args.log_dir = os.path.join("tmp", args.env_id.replace("/", "_"))
    if args.envs_per_worker is not None:
        args.overrides.append(f"envs_per_worker={args.envs_per_worker}")
    return args


def check_args(args):
    """Checks that touch nothing: flag values, environment id, hyper-parameters."""
    if args.cluster and (args.ps_hosts or args.worker_hosts):
        raise LaunchError("give the cluster once: --cluster FILE, or --ps-hosts and --worker-hosts")
    if bool(args.ps_hosts) != bool(args.worker_hosts):
        raise LaunchError("--ps-hosts and --worker-hosts go together (or use --cluster FILE)")
    if has_cluster(args) and (args.num_workers is not None or args.num_ps != 1):
        raise LaunchError("the cluster names its workers and parameter servers: leave out --num-workers and "
                          "--num-ps with --cluster or --ps-hosts/--worker-hosts")
    if args.prefill_random < 0 or (args.prefill_random and not algorithms.get(args.algo).replay):
        raise LaunchError(f"--prefill-random takes a number of episodes >= 0, for a replay learner (--algo "
                          f"{' or '.join(algorithms.with_replay())}); got {args.prefill_random} with --algo {args.algo}")
    for name in ("restore_include", "restore_exclude"):
        pattern = getattr(args, name)
        if pattern is not None and not args.pretrain:
            raise LaunchError(f"--{name.replace('_', '-')} filters what --pretrain restores: give --pretrain too")
        try:
            re.compile(pattern or "")
        except re.error as error:
            raise LaunchError(f"--{name.replace('_', '-')} {pattern!r} is not a regular expression ({error})") from None
    if args.tasks and not has_cluster(args):
        raise LaunchError("--tasks picks this machine's share of a cluster: give --cluster too")
    if not resolve_workers(args):  # a cluster: its size
        if not 1 <= args.num_workers <= MAX_WORKERS:
            raise LaunchError(f"--num-workers must be between 1 and {MAX_WORKERS}, got {args.num_workers}")
        if not 1 <= args.num_ps <= MAX_TASKS - args.num_workers:
            raise LaunchError(f"--num-ps must be between 1 and {MAX_TASKS - args.num_workers} with "
                              f"{args.num_workers} workers, got {args.num_ps}")
    if args.eval_every is not None and args.eval_every < 1:
        raise LaunchError(f"--eval-every must be at least 1 global step, got {args.eval_every}")
    if args.threads < 0 or (args.threads and args.num_workers != 0 and not algorithms.get(args.algo).serving.chief):
        raise LaunchError(f"--threads takes a number >= 0 of TensorFlow threads for a one-process run (--num-workers "
                          f"0) or a learner; got {args.threads} with --algo {args.algo} --num-workers "
                          f"{args.num_workers}")
    if args.eval_episodes < 1:
        raise LaunchError(f"--eval-episodes must be at least 1, got {args.eval_episodes}")
    if not 0 <= args.exp_id <= MAX_EXP_ID:
        raise LaunchError(f"--expId must be between 0 and {MAX_EXP_ID}, got {args.exp_id}")
    if args.unsup != "none" and not algorithms.get(args.algo).bonuses:
        raise LaunchError(f"--algo {args.algo} takes no curiosity bonus yet: --unsup none")
    if args.pretrain and not (os.path.isdir(args.pretrain) or os.path.exists(args.pretrain + ".index")):
        raise LaunchError(f"--pretrain {args.pretrain}: no such run directory or checkpoint")
    if args.visualise and not os.environ.get("DISPLAY"):
        raise LaunchError("--visualise needs a display (DISPLAY is not set); run without it on a headless machine")
    try:
        check_overrides(args, envs.check_env_id(args.env_id))
    except (envs.EnvError, constants.ConfigError) as error:
        raise LaunchError(str(error)) from None
    args.design_head = envs.default_design_head(args.env_id, args.design_head)
    if args.unsup in constants.PIXEL_CURIOSITY and args.design_head not in (None, "universe"):
        raise LaunchError(f"--unsup {args.unsup} predicts images with the universe head; it cannot be combined "
                          f"with --designHead {args.design_head}")


def check_overrides(args, family):
    """ConfigError where a --set value is another algorithm's own hyper-parameter (it would be ignored), or the
    values fit none of the presets the run may get: `auto` picks one by the observations too, which only the
    environment tells (the worker checks again against the one picked)."""
    for name in map(constants.override_name, args.overrides or []):
        if not algorithms.reads(args.algo, name):
            raise constants.ConfigError(f"--set {name}: {algorithms.owner(name)}'s own hyper-parameter, which --algo "
                                        f"{args.algo} does not read; leave it out")
        if name == "prediction_beta" and args.unsup in constants.INT_COEF_BONUSES:
            raise constants.ConfigError(f"--set prediction_beta: --unsup {args.unsup} does not read it (its bonus is "
                                        "weighed by int_coef against ext_coef); set int_coef instead")
    presets = sorted({constants.resolve_preset(args.preset, kind, family, args.unsup, args.algo)
                      for kind in ("vector", "image")})
    errors = []
    for preset in presets:
        try:
            constants.config_from_overrides(args.overrides, preset)
            return
        except constants.ConfigError as error:
            errors.append(error)
    raise errors[0]


def resolve_workers(args):
    """--num-workers for the algorithm (its row's default: 0, one process, unless a cluster is given; else one per
    core), or a one-line refusal of a mode it does not have; whether the run is one process."""
    row = algorithms.get(args.algo)
    if args.num_workers is None:
        args.num_workers = 0 if row.default_workers == 0 and not has_cluster(args) else DEFAULT_NUM_WORKERS
    if (args.ps_hosts or args.worker_hosts) and set(row.jobs) != {PS.job, WORKER.job}:
        raise LaunchError(f"--ps-hosts and --worker-hosts name A3C's jobs: give --algo {row.name}'s cluster as "
                          f"--cluster FILE, {cluster_roles.cluster_forms()}")
    if args.num_workers == 0 and not has_cluster(args):
        return True
    if not row.clusters:
        raise LaunchError(f"--algo {row.name} runs in one process for now: --num-workers 0, and no cluster")
    if args.prefill_random:
        raise LaunchError("--prefill-random is the one-process run's (--num-workers 0) for now; Ape-X's actors "
                          "explore from their first step (SAC's with random actions until learning_starts)")
    return False


def has_cluster(args):
    return bool(args.cluster or args.ps_hosts or args.worker_hosts)


def resolve_network(args, cluster):
    """isolated or host: a cluster with another machine in it must be reachable, so runs on host."""
    across = cluster is not None and not all(is_loopback(host) for host in machines(cluster))
    if across and args.network == "isolated":
        raise LaunchError("a cluster across machines needs its ports reachable from the others: --network host "
                          "(the default with such a cluster); keep them on a private network")
    return args.network or ("host" if across else "isolated")


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
        print(f"resuming with the saved hyper-parameters of {os.path.join(log_dir, logdir.CONFIG)}: "
              + ", ".join(f"{name} {before!r} (asked {after!r})" for name, (before, after) in kept.items())
              + "; add --allow-config-change to apply what was asked")
        args.overrides = [item for item in args.overrides if constants.override_name(item) not in kept]
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
            probe.bind(("", port))  # every interface: what TensorFlow's servers bind
        except OSError:
            return True
    return False


def check_ports(plan, cluster=True):
    """The ports the run will open on this machine are free: TensorBoard's, and the cluster's unless isolated."""
    ports = (cluster_ports(plan) if cluster else []) + ([plan.tb_port] if plan.tb_port else [])
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
    """Processes of ours (worker.py or TensorBoard) whose command line names `log_dir` (as the launcher writes it:
    absolute): {pid: argv}."""
    log_dir = os.path.abspath(log_dir)
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
    """The run's TensorFlow processes running now, by their task's name (cluster.task_name): {name: pid}."""
    found = {}
    for pid, argv in run_processes(log_dir).items():
        if "--job-name" in argv:
            role = argv[argv.index("--job-name") + 1]
            found[task_name(role, int(argv[argv.index("--task") + 1]))] = pid
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
    holder = logdir.run_lock_holder(log_dir) if os.path.isdir(log_dir) else None
    if holder is not None:
        raise LaunchError(f"a one-process run is already using {log_dir} (pid {holder}): stop it first (Ctrl-C where "
                          f"it runs, or kill -INT {holder}: it saves a checkpoint)")


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
    logdir.write_json_atomically(os.path.join(plan.log_dir, logdir.SUPERVISED),
                                    {p.name: p.argv for p in plan.processes if supervised(p)})


def launch_detached(plan):
    """Start every process in its own session with output in <log-dir>/<name>.out. The cluster's are the
    supervisor's to start; in child mode the launcher itself supervises."""
    for process in plan.processes:
        if supervised(process) or (process.name == "supervisor" and plan.mode == "child"):
            continue
        out = open(logdir.output(plan.log_dir, process.name), "ab")
        subprocess.Popen(process.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
        out.close()


def _interrupt(signum, frame):
    """SIGTERM to a supervisor ends the run as Ctrl-C does; by default it would die and leave the run's
    processes training on as orphans."""
    raise KeyboardInterrupt


def run_supervisor(log_dir):
    """Supervise the run in `log_dir` until it is over, then stop what is left of it: (exit status, reason).
    What `train.py --supervise` runs, and child mode in the launcher itself."""
    processes = logdir.read_json(os.path.join(log_dir, logdir.SUPERVISED))
    if not processes:
        return 2, f"no {logdir.SUPERVISED} in {log_dir}: start the run with train.py"
    supervisor = supervise.Supervisor(log_dir, processes)
    signal.signal(signal.SIGTERM, _interrupt)  # timeout(1), a scheduler or systemd: stop as Ctrl-C does
    try:
        code, reason = supervisor.run()
    except KeyboardInterrupt:
        code, reason = 0, "interrupted"
    except Exception as error:  # noqa: BLE001 -- whatever broke the supervisor, the run must not go on unwatched
        code, reason = 1, f"the supervisor failed ({type(error).__name__}: {error}); the run is stopped"
        supervise.logger.exception("supervisor failed")
    # a second SIGTERM or Ctrl-C must not cut the stopping short: it left the parameter server running, an orphan
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    if not supervisor.stop_requested():  # interrupted, or over by itself: stop the rest (TensorBoard, evaluation)
        if reason == "interrupted":
            print(f"stopping the run: the workers save their final checkpoints (up to {STOP_GRACE_SECS} s); "
                  "a second Ctrl-C is ignored", flush=True)
        elif code == 0:
            finish_evaluation(log_dir)
        stop_run(log_dir, None, quiet=True)
    if supervisor.disk_stop:
        code, reason = supervisor.note_resume_point()
    return code, reason


def finish_evaluation(log_dir):
    """A cluster's run over by itself: its evaluation process (demo.py --watch) is told so, evaluates the last
    checkpoint and leaves; wait for that, FINAL_EVALUATION_SECS at most."""
    evaluators = [pid for pid, argv in run_processes(log_dir).items() if DEMO_SCRIPT in argv and "--watch" in argv]
    for pid in evaluators:
        try:
            os.kill(pid, evaluation.FINISH_SIGNAL)
        except ProcessLookupError:
            pass
    wait_for_final_evaluation(lambda: not all(supervise.is_zombie(pid) for pid in evaluators))


def wait_for_final_evaluation(running, seconds=FINAL_EVALUATION_SECS):
    """Wait while `running()` says the evaluation of the last checkpoint goes on, `seconds` at most."""
    deadline = time.time() + seconds
    while running() and time.time() < deadline:
        time.sleep(0.25)


def run_in_this_process(args):
    """The one-process mode (`--num-workers 0`; SAC's default): checks, then the run in the foreground, by the
    algorithm's row's entry point."""
    log_dir = os.path.abspath(args.log_dir)
    check_log_dir(log_dir)
    check_not_running(log_dir)
    if args.dry_run:
        print(f"one process: {algorithms.get(args.algo).local} ({args.algo}) on {args.env_id}, logs in {log_dir}")
        return 0
    try:
        os.makedirs(log_dir, exist_ok=True)
        lock = logdir.lock_run(log_dir)  # held until this process ends: a second run here is refused
        if lock is None:
            check_not_running(log_dir)  # says who holds it
            raise LaunchError(f"{log_dir} was in use a moment ago; run the command again")
        constants.check_same_run(log_dir, dict(constants.recorded_run_flags(args), num_workers=0))
        args.log_dir = log_dir
        row = algorithms.get(args.algo)
        with evaluation_beside(args, row):
            return row.entry("local")(args)  # TensorFlow: only now, the flags known to be good
    except (constants.ConfigError, constants.UsageError, envs.EnvError, logdir.UnreadableCheckpoint) as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("train.py: stopped, with a checkpoint at the step reached: run the same command to go on"
              + (" (the replay refills from the stored episodes)" if algorithms.get(args.algo).replay else ""),
              file=sys.stderr)
        return 130


@contextlib.contextmanager
def evaluation_beside(args, row):
    """With --eval-every, a one-process run whose learner does not evaluate in its own loop (A3C's; the replay
    learners' do) has the cluster's evaluation process beside it, for as long as it runs (output in eval.out), and
    at its end until it has evaluated the last checkpoint."""
    if not args.eval_every or row.evaluates_inline:
        yield
        return
    with open(logdir.output(args.log_dir, "eval"), "ab") as out:
        process = subprocess.Popen(evaluation_argv(sys.executable, args.log_dir, args.eval_every, args.eval_episodes,
                                                   args.eval_frames), stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        yield
        process.send_signal(evaluation.FINISH_SIGNAL)  # the run is over: its last checkpoint, then it leaves
        wait_for_final_evaluation(lambda: process.poll() is None)
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_GRACE_SECS)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_for_children(plan):
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
        alive = {pid for pid in alive if not supervise.is_zombie(pid)}
        time.sleep(0.2)
    return alive


def descendants(pids):
    """Every process below `pids` (game engines such as ViZDoom's run as children of the worker)."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        fields = supervise.stat_fields(entry)
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
            with open(os.path.join(log_dir, logdir.STOP_MARKER), "w") as marker:
                marker.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
        except OSError as error:  # a full or read-only disk: stop the supervisor first, then the rest
            print(f"cannot leave the stop marker in {log_dir} ({error.strerror}); stopping its supervisor first",
                  file=sys.stderr)
            supervisors = [pid for pid, argv in run_processes(log_dir).items() if SUPERVISE_FLAG in argv]
            _signal_and_wait(supervisors, signal.SIGTERM, 5.0)
    running = run_processes(log_dir)
    first = {role.job for role in ROLES.values() if role.stops_first}
    workers = [pid for pid, argv in running.items() if "--job-name" in argv[:-1]
               and argv[argv.index("--job-name") + 1] in first]
    others = [pid for pid in running if pid not in workers]
    below = descendants(running)  # found now: once a worker is gone its engine is re-parented
    left = _signal_and_wait(workers, signal.SIGTERM, STOP_GRACE_SECS)
    left |= _signal_and_wait(others, signal.SIGTERM, 5.0)
    _signal_and_wait(sorted(left), signal.SIGKILL, 5.0)
    _signal_and_wait(sorted(pid for pid in below if not supervise.is_zombie(pid)), signal.SIGKILL, 5.0)  # orphans
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
    jobs = jobs_of(plan.cluster)
    counts = {job: sum(task[0] == job for task in plan.tasks) for job in jobs}
    whole = len(plan.tasks) == len(all_tasks(plan.cluster))
    share = "" if whole else (f", this machine's share ({', '.join(task_name(*task) for task in plan.tasks)}) of "
                              f"a cluster of {' + '.join(str(len(plan.cluster[job])) for job in jobs)}")
    held = ", ".join(f"{counts[job]} {ROLES[job].title}{'s' * (counts[job] != 1)}" for job in jobs)
    print(f"Run '{plan.session}': {held}{share}; logs, checkpoints and CSVs in {plan.log_dir}")
    print(f"  cluster:      {digest(plan.cluster)} (the same on every machine of the run)")
    if isolated:
        print("  network:      the cluster runs in a network namespace of its own: no port of it is open here")
    else:
        print(f"  network:      ports {', '.join(map(str, cluster_ports(plan)))} answer on every interface of this "
              f"machine, without authentication: keep them on a private network or behind a firewall that lets "
              f"in only the cluster's machines")
    if plan.mode == "tmux":
        print(f"  attach:       tmux attach -t {plan.session}   (windows: "
              f"{', '.join(p.name for p in plan.processes)})")
    elif plan.mode == "nohup":
        print(f"  output:       {os.path.join(plan.log_dir, '*.out')}")
    if plan.tb_port:
        print(f"  TensorBoard:  http://127.0.0.1:{plan.tb_port}")
    print(f"  stop:         bash {os.path.join(plan.log_dir, 'kill.sh')}")


def dry_run_text(plan_for, cluster, network):
    """What --dry-run prints: the commands of this machine or, for a cluster, of every machine in it."""
    lines = []
    if network == "isolated":
        lines.append("# the cluster's tasks would run inside the run's own network namespace: nsenter --target=<pid of "
                     "`unshare --user --map-root-user --net -- train.py --hold-network`> ... <command>")
    if cluster is None:
        return "\n".join(lines + [script_texts(plan_for(None))[0]])
    lines.append(f"# cluster {digest(cluster)}: {describe(cluster, ', ')}")
    for host, tasks in machines(cluster).items():
        check_share(tasks, host)
        lines.append(f"# ---- machine {host}: {', '.join(task_name(*task) for task in tasks)} (run the same "
                     f"train.py command there: it starts the tasks whose host is that machine; or add --tasks "
                     f"{','.join(f'{job}:{index}' for job, index in tasks)})")
        lines.append(script_texts(plan_for(tasks))[0])
    return "\n".join(lines)


def plan_of(args, cluster=None, tasks=None):
    """The plan of the run the checked arguments ask for: this machine's `tasks` of `cluster` (None: a cluster on
    this machine alone)."""
    run_flags = constants.run_flag_values(args)
    env_id = run_flags.pop("env_id")
    return create_commands(args.exp_name, args.num_workers, env_id, args.log_dir, args.mode, args.exp_id,
                           args.tensorboard, args.eval_every, args.eval_episodes, cluster=cluster, tasks=tasks,
                           num_ps=args.num_ps, eval_frames=args.eval_frames, **run_flags)


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
    args.exp_name = args.exp_name or args.algo
    try:
        check_args(args)
        if args.num_workers == 0:
            return run_in_this_process(args)
        cluster = read_cluster(args.cluster, args.ps_hosts, args.worker_hosts) if has_cluster(args) else None
        cluster_algos = algorithms.of_cluster(cluster) if cluster else (args.algo,)
        if args.algo not in cluster_algos:
            raise LaunchError(f"the cluster's jobs ({' and '.join(jobs_of(cluster))}) are those of --algo "
                              f"{' or '.join(cluster_algos)}; this run is --algo {args.algo}")
        network = resolve_network(args, cluster)
        config_change = check_relaunch(os.path.abspath(args.log_dir), args)

        def plan_for(tasks):
            return plan_of(args, cluster, tasks)

        if args.dry_run:
            print(dry_run_text(plan_for, cluster, network), end="")
            return 0
        plan = plan_for(local_tasks(cluster, args.tasks) if cluster else None)
        check_log_dir(plan.log_dir)
        check_not_running(plan.log_dir)
        if cluster:
            check_reachable(plan.cluster, plan.tasks)
        check_ports(plan, cluster=network == "host")
        if args.mode == "tmux":
            check_tmux(plan.session)
    except LaunchError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    isolated = network == "isolated"
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
    for stale in (logdir.STOP_MARKER, logdir.SUPERVISOR):  # left by the run's previous launch
        if os.path.exists(os.path.join(plan.log_dir, stale)):
            os.remove(os.path.join(plan.log_dir, stale))
    if args.mode == "tmux":
        launch_tmux(plan)
        announce(plan, isolated)
        return 0
    launch_detached(plan)
    announce(plan, isolated)
    if args.mode == "child":
        return wait_for_children(plan)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `train.py ... | head`: the run is started; only the announcement was cut short
        sys.stderr.close()
        sys.exit(0)
