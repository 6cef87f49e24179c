"""A run's cluster: how its tasks are named, and the ways a cluster is described and read.

Which jobs a cluster of each algorithm has, which task is the chief and what a role's death restarts are the
algorithms' table's (algorithms.py); this module names the tasks and reads clusters by it, whatever the algorithm.
A cluster is TensorFlow's ClusterSpec as a dict, {"ps": ["host:port", ...], "worker": ["host:port", ...]} (A3C) or
{"learner": [...], "actor": [...]} (Ape-X); a task is (job, index). It is read from a JSON file or flags
(train.py), TF_CONFIG or a Slurm step (worker.py). This module does not import TensorFlow.
"""
import contextlib
import hashlib
import json
import re
import socket

import algorithms
from algorithms import ACTOR, JOBS, LEARNER, LOCAL, PS, ROLES, WORKER  # noqa: F401 -- the roles, for readers


def free_ports(count):
    """`count` distinct localhost ports that are free right now (tests' and benchmarks' clusters)."""
    probes = [socket.socket() for _ in range(count)]
    for probe in probes:
        probe.bind(("127.0.0.1", 0))
    ports = [probe.getsockname()[1] for probe in probes]
    for probe in probes:
        probe.close()
    return ports


def is_chief(job, index):
    """Whether task `index` of `job` is the run's chief (the algorithms' table: task 0 of the role that has it)."""
    return ROLES[job].chief and index == 0


def jobs_of(cluster):
    return [job for job in JOBS if job in cluster]


def task_name(job, index):
    """ps task 0 is "ps" (the original's window name), then "ps-1", ...; worker i is "w-i"; the learner is
    "learner", actor i "a-i"; a one-process run "local"."""
    role = ROLES[job]
    if role.named_alone and index == 0:
        return role.prefix
    return f"{role.prefix}-{index}"


def heartbeat_key(job, index):
    """What names a task's heartbeat file (status_<key>.json): the index of a worker or actor (status_0.json, as
    before there were roles), the name of the others."""
    return task_name(job, index) if ROLES[job].named_alone else index


def parse_task_name(name):
    """'w-3' -> ("worker", 3), 'ps' -> ("ps", 0); None for a name that is not a task's (supervisor, tb)."""
    for role in ROLES.values():
        if role.named_alone and name == role.prefix:
            return role.job, 0
    prefix, dash, index = name.rpartition("-")
    for role in ROLES.values():
        if dash and prefix == role.prefix and index.isdigit():
            return role.job, int(index)
    return None


def role_of(name):
    """The Role of the process named `name`, or None."""
    task = parse_task_name(name)
    return ROLES[task[0]] if task else None


class LaunchError(Exception):
    """Something the user can fix before anything starts; printed as one line."""


class ClusterError(Exception):
    """The task holding the variables went away or stopped answering; reported as one line, exit status 1."""


@contextlib.contextmanager
def learner_lost(tf1, hosts):
    """A learner's player (an Ape-X or PlaNet actor, or the learner itself) whose session with the learner at
    `hosts` breaks: one line, ClusterError, for the supervisor to start it again."""
    try:
        yield
    except (tf1.errors.UnavailableError, tf1.errors.DeadlineExceededError, tf1.errors.AbortedError) as error:
        why = next(iter(error_lines(error.message)), "")
        raise ClusterError(f"lost the learner at {hosts} ({type(error).__name__}: {why[:200]}); "
                           f"relaunch the run to resume") from None


def error_lines(message):
    """The lines of a TensorFlow error's message that say something: its first, "Graph execution error:", and the
    rules of "=" it draws around a remote task's errors say nothing."""
    return [line.strip() for line in (message or "").splitlines()
            if line.strip() and not line.strip().startswith("Graph execution error") and line.strip().strip("=")]


def local(first_port, num_workers, num_ps=1, algo=algorithms.DEFAULT):
    """The cluster of a run of `algo` on this machine alone, on 127.0.0.1 from `first_port` on: the serving tasks
    (`num_ps` parameter servers, or the one learner), then `num_workers` playing ones (workers, actors)."""
    row = algorithms.get(algo)
    serving, playing = row.serving, row.playing
    count = 1 if serving.single else num_ps
    return {serving.job: [f"127.0.0.1:{first_port + j}" for j in range(count)],
            playing.job: [f"127.0.0.1:{first_port + count + i}" for i in range(num_workers)]}


def describe(cluster, separator=","):
    """'ps HOST:PORT; worker HOST:PORT,...': the hosts of each job, as the logs show them."""
    return "; ".join(f"{job} {separator.join(cluster[job])}" for job in jobs_of(cluster))


def hosts_flag(job):
    """The flag that gives a job's addresses: --ps-hosts, --worker-hosts, --learner-hosts, --actor-hosts."""
    return f"--{job}-hosts"


def hosts_attribute(job):
    """The argparse dest of hosts_flag(job)."""
    return f"{job}_hosts"


def from_hosts(hosts, algo=algorithms.DEFAULT):
    """The cluster of `algo` from {job: "host:port,..."} (worker.py's --ps-hosts ... --actor-hosts)."""
    return {job: hosts[job].split(",") for job in algorithms.get(algo).jobs}


def split_address(address):
    """'host:port' -> (host, port) ('[::1]:2222' for IPv6); LaunchError naming the address otherwise."""
    host, colon, port = str(address).strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or " " in host:
        raise LaunchError(f"{address!r} is not host:port (a host name or IP address, a colon, a port 1-65535)")
    return host, int(port)


def cluster_forms():
    """The forms a cluster file can take, one per distinct set of jobs, for messages."""
    forms = {}
    for name, row in algorithms.ALGORITHMS.items():
        forms.setdefault(row.jobs, []).append(name)
    return " or ".join("{" + ", ".join(f'"{job}": ["host:port", ...]' for job in jobs) + "} (--algo "
                       + " or ".join(names) + ")" for jobs, names in forms.items())


def read_cluster(path=None, ps_hosts=None, worker_hosts=None):
    """The cluster of --cluster FILE (TensorFlow's ClusterSpec form: the jobs of one algorithm's cluster; a
    "chief" list counts as the first tasks of the chief's job, as in TF_CONFIG) or of --ps-hosts/--worker-hosts; every address
    checked, none twice."""
    if path:
        try:
            with open(path) as handle:
                spec = json.load(handle)
        except OSError as error:
            raise LaunchError(f"cannot read --cluster {path} ({error.strerror})") from None
        except ValueError as error:
            raise LaunchError(f"--cluster {path} is not JSON ({error})") from None
        if not isinstance(spec, dict) or not all(isinstance(hosts, list) for hosts in spec.values()):
            raise LaunchError(f"--cluster {path}: expected {cluster_forms()}")
        spec = with_chiefs(spec)
        unknown = sorted(set(spec) - set(JOBS))
        if unknown:
            raise LaunchError(f"--cluster {path}: unknown job(s) {', '.join(unknown)}; expected {cluster_forms()}")
        if not algorithms.of_cluster(spec):
            raise LaunchError(f"--cluster {path}: expected {cluster_forms()}")
        cluster = spec
    else:
        cluster = {PS.job: (ps_hosts or "").split(","), WORKER.job: (worker_hosts or "").split(",")}
    cluster = {job: [str(address).strip() for address in addresses if str(address).strip()]
               for job, addresses in cluster.items()}
    for job in jobs_of(cluster):
        role = ROLES[job]
        if not cluster[job]:
            raise LaunchError(f"the cluster has no {role.title}: give at least one {job} address")
        if role.single and len(cluster[job]) > 1:
            raise LaunchError(f"the cluster has {len(cluster[job])} {role.title}s: give one {job} address")
    seen = {}
    for job in jobs_of(cluster):
        for index, address in enumerate(cluster[job]):
            host, port = split_address(address)
            if (host, port) in seen:
                raise LaunchError(f"{address} is given twice in the cluster ({seen[host, port]} and "
                                  f"{task_name(job, index)})")
            seen[host, port] = task_name(job, index)
    return {job: cluster[job] for job in jobs_of(cluster)}


def parse_tasks(text, cluster):
    """--tasks 'ps:0,worker:0' -> [("ps", 0), ("worker", 0)], each a task of the cluster."""
    tasks = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        job, colon, index = item.partition(":")
        if job not in cluster or not colon or not index.isdigit() or int(index) >= len(cluster[job]):
            has = ", ".join(f"{job} 0-{len(cluster[job]) - 1}" for job in jobs_of(cluster))
            raise LaunchError(f"--tasks {item!r}: expected job:index with a job and an index the cluster has ({has})")
        tasks.append((job, int(index)))
    if not tasks:
        example = ",".join(f"{job}:0" for job in jobs_of(cluster))
        raise LaunchError(f"--tasks names no task: give e.g. --tasks {example}")
    return tasks


def machines(cluster):
    """{host: [task, ...]} in the order of the cluster: what each machine of the run starts."""
    found = {}
    for job in jobs_of(cluster):
        for index, address in enumerate(cluster[job]):
            found.setdefault(split_address(address)[0], []).append((job, index))
    return found


def all_tasks(cluster):
    return [(job, index) for job in jobs_of(cluster) for index in range(len(cluster[job]))]


def addresses(cluster, tasks):
    return [(task, cluster[task[0]][task[1]]) for task in tasks]


def digest(cluster):
    """A short hash of the cluster {"ps": [...], "worker": [...]}: the launcher on each machine and every worker
    log it, so that a run started from different cluster files shows in the logs."""
    canonical = json.dumps({job: list(cluster[job]) for job in jobs_of(cluster)}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


SLURM_BASE_PORT = 12222  # under srun, the k-th task on a node listens on this port + k (SLURM_PORT_BASE to change)


def expand_hostlist(text):
    """Slurm's compressed host list, 'node[01-03,07],login1' -> ['node01', 'node02', 'node03', 'node07', 'login1']."""
    hosts = []
    for name, ranges in re.findall(r"([^,\[]+)(?:\[([^\]]*)\])?,?", text):
        if not ranges:
            hosts.append(name)
            continue
        for part in ranges.split(","):
            first, _, last = part.partition("-")
            for number in range(int(first), int(last or first) + 1):
                hosts.append(f"{name}{number:0{len(first)}d}")
    return hosts


def expand_tasks_per_node(text):
    """SLURM_STEP_TASKS_PER_NODE, '2(x3),1' -> [2, 2, 2, 1]."""
    counts = []
    for count, times in re.findall(r"(\d+)(?:\(x(\d+)\))?", text):
        counts += [int(count)] * int(times or 1)
    return counts


CHIEF_REPLICA = "chief"  # TF_CONFIG's (and a cluster file's) name for the chief's replica


def chief_job_of(spec):
    """The job a "chief" replica belongs to: that of the chief of the algorithm whose other jobs `spec` has (A3C's
    worker 0, Ape-X's learner)."""
    others = set(spec) - {CHIEF_REPLICA}
    for row in algorithms.ALGORITHMS.values():
        chief = row.chief[0]
        if others <= set(row.jobs) and set(row.jobs) <= others | {chief}:
            return chief
    return WORKER.job


def with_chiefs(spec, job=None):
    """A ClusterSpec dict with its "chief" list, if any, put first in the chief's job (`job`, or the one that
    chief_job_of finds)."""
    if CHIEF_REPLICA not in spec:
        return spec
    job = job or chief_job_of(spec)
    return {name: hosts for name, hosts in spec.items() if name != CHIEF_REPLICA} | {
        job: list(spec[CHIEF_REPLICA]) + list(spec.get(job, []))}


def role_fields(row, job, task, cluster):
    """What TF_CONFIG or a Slurm step tells worker.py: {job_name, task, <job>_hosts of each job of the cluster}."""
    return {"job_name": job, "task": task, **{hosts_attribute(name): ",".join(cluster[name]) for name in row.jobs}}


def article(title):
    return f"{'an' if title[0] in 'aeiou' else 'a'} {title}"


def role_from_slurm(environ, algo=algorithms.DEFAULT):
    """{job_name, task, <job>_hosts...} of this task of an `srun` step, or {} outside one: task 0 is the serving task
    (A3C's parameter server, Ape-X's learner), the others the playing ones in order (A3C's chief is task 1); tasks
    fill the nodes in order, as srun's default block distribution places them, and the k-th task on a node listens
    on SLURM_PORT_BASE + k."""
    if "SLURM_PROCID" not in environ or "SLURM_STEP_NODELIST" not in environ:
        return {}
    row = algorithms.get(algo)
    try:
        rank = int(environ["SLURM_PROCID"])
        nodes = expand_hostlist(environ["SLURM_STEP_NODELIST"])
        counts = expand_tasks_per_node(environ["SLURM_STEP_TASKS_PER_NODE"])
        base = int(environ.get("SLURM_PORT_BASE", SLURM_BASE_PORT))
    except (KeyError, ValueError) as error:
        raise ValueError(f"cannot read the step's tasks and nodes ({error})") from None
    if len(nodes) != len(counts) or sum(counts) < 2 or not 0 <= rank < sum(counts):
        raise ValueError(f"{sum(counts)} tasks on {len(nodes)} nodes: a run needs {article(row.serving.title)} and "
                         f"{article(row.playing.title)}, one task each (srun --ntasks N+1)")
    hosts = [f"{node}:{base + k}" for node, count in zip(nodes, counts) for k in range(count)]
    cluster = {row.serving.job: hosts[:1], row.playing.job: hosts[1:]}
    job = row.serving.job if rank == 0 else row.playing.job
    return role_fields(row, job, max(rank - 1, 0), cluster)


def role_from_tf_config(text, algo=algorithms.DEFAULT):
    """{job_name, task, <job>_hosts...} from TF_CONFIG (the Kubeflow TFJob / tf.distribute convention:
    {"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker", "index": 0}}, or the "learner" and
    "actor" jobs of Ape-X), or {} when unset. A "chief" replica is the chief of this design (A3C's worker 0, Ape-X's
    learner), and the replicas of its job follow it."""
    if not text:
        return {}
    row = algorithms.get(algo)
    try:
        config = json.loads(text)
        spec, task = dict(config["cluster"]), config["task"]
        kind, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"not a cluster and a task with type and index ({error})") from None
    chiefs = list(spec.get(CHIEF_REPLICA, []))
    chief_job = row.chief[0]
    if kind == CHIEF_REPLICA:
        kind = chief_job
    elif kind == chief_job:
        index += len(chiefs)
    elif kind not in row.jobs:
        raise ValueError(f"task type {kind!r}: --algo {row.name} runs {', '.join((CHIEF_REPLICA,) + row.jobs)} "
                         f"tasks only")
    spec = with_chiefs(spec, chief_job)
    missing = [job for job in row.jobs if not spec.get(job)]
    if missing or set(spec) - set(row.jobs):
        raise ValueError(f"the cluster needs the jobs {' and '.join(row.jobs)} of --algo {row.name}, each with an "
                         f"address (a chief counts as {chief_job}); it has {', '.join(sorted(spec)) or 'none'}")
    return role_fields(row, kind, index, {job: list(spec[job]) for job in row.jobs})
