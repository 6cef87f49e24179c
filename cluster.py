"""The roles of a run's cluster, in one table, and the ways a cluster is described.

Which jobs a cluster of each algorithm has, which task is the chief, how a task is named, whether it beats a
heartbeat, what its death restarts and when the run is done: the launcher (train.py), the worker, the
supervisor and the status view read `ROLES` and the functions below; no other file spells a job's name.
A cluster is TensorFlow's ClusterSpec as a dict, {"ps": ["host:port", ...], "worker": ["host:port", ...]}; a
task is (job, index). It is read from a JSON file or flags (train.py), TF_CONFIG or a Slurm step (worker.py).
This module does not import TensorFlow.
"""
import dataclasses
import hashlib
import json
import re


@dataclasses.dataclass(frozen=True)
class Role:
    job: str  # TensorFlow's job name
    title: str  # in messages
    prefix: str  # of its processes' names (tmux windows, <name>.out, the supervisor's and status view's keys)
    heartbeat: bool  # beats <log-dir>/status_<key>.json while it runs: a live one whose beat stops is hung
    learner: bool  # trains: the run is done when every learner has finished (exit 0); its usage error stops it
    finishes: bool  # exits 0 when the run has reached max_global_steps: it is then done, not started again
    restarts: tuple  # the jobs whose sessions its death loses (it holds their variables): started again with it
    stops_first: bool  # stopped first, given time to save its last checkpoint, before the others
    single: bool = False  # a cluster has exactly one task of it


PS = Role("ps", "parameter server", "ps", heartbeat=False, learner=False, finishes=False, restarts=("worker",),
          stops_first=False)
WORKER = Role("worker", "worker", "w", heartbeat=True, learner=True, finishes=True, restarts=(), stops_first=True)
# Ape-X (apex.py): the learner holds the variables and the transitions' queue, owns the replay and trains; the
# actors play and send it transitions. One learner: the replay is in its memory, and the actors address task 0.
LEARNER = Role("learner", "learner", "learner", heartbeat=True, learner=True, finishes=True, restarts=("actor",),
               stops_first=True, single=True)
ACTOR = Role("actor", "actor", "a", heartbeat=True, learner=False, finishes=True, restarts=(), stops_first=False)
# The one-process mode (offpolicy.run_local, --num-workers 0): no cluster; its one task plays and learns, and
# beats a heartbeat for the status view like a cluster's tasks.
LOCAL = Role("local", "one-process run", "local", heartbeat=True, learner=True, finishes=True, restarts=(),
             stops_first=False, single=True)
# The jobs of each algorithm's cluster, in the order they start; an algorithm with other roles adds its row here.
CLUSTERS = {"a3c": (PS, WORKER), "dqn": (LEARNER, ACTOR), "sac": (LEARNER, ACTOR)}
ROLES = {role.job: role for roles in CLUSTERS.values() for role in roles}
JOBS = tuple(ROLES)  # a cluster's
ROLES[LOCAL.job] = LOCAL
# The chief initialises or restores the global variables, checkpoints them, and saves at the end.
CHIEFS = {"a3c": (WORKER.job, 0), "dqn": (LEARNER.job, 0), "sac": (LEARNER.job, 0)}
NAMED_ALONE = (PS, LEARNER, LOCAL)  # task 0 of these is named by the prefix alone


def is_chief(job, index):
    return (job, index) in CHIEFS.values()


def algos_of(cluster):
    """The algorithms whose clusters have exactly the jobs of `cluster` (a ClusterSpec dict); () if none."""
    return tuple(algo for algo, roles in CLUSTERS.items() if set(cluster) == {role.job for role in roles})


def jobs_of(cluster):
    return [job for job in JOBS if job in cluster]


def task_name(job, index):
    """ps task 0 is "ps" (the original's window name), then "ps-1", ...; worker i is "w-i"; the learner is
    "learner", actor i "a-i"; a one-process run "local"."""
    role = ROLES[job]
    if role in NAMED_ALONE and index == 0:
        return role.prefix
    return f"{role.prefix}-{index}"


def heartbeat_key(job, index):
    """What names a task's heartbeat file (status_<key>.json): the index of a worker or actor (status_0.json, as
    before there were roles), the name of the others."""
    return task_name(job, index) if ROLES[job] in NAMED_ALONE else index


def parse_task_name(name):
    """'w-3' -> ("worker", 3), 'ps' -> ("ps", 0); None for a name that is not a task's (supervisor, tb)."""
    for role in NAMED_ALONE:
        if name == role.prefix:
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


def local(first_port, num_workers, num_ps=1, algo="a3c"):
    """The cluster of a run on this machine alone, on 127.0.0.1 from `first_port` on: the parameter servers, then
    the workers; or (dqn, sac) the learner, then the actors."""
    serving, playing = CLUSTERS[algo]
    count = num_ps if serving is PS else 1
    return {serving.job: [f"127.0.0.1:{first_port + j}" for j in range(count)],
            playing.job: [f"127.0.0.1:{first_port + count + i}" for i in range(num_workers)]}


def describe(cluster, separator=","):
    """'ps HOST:PORT; worker HOST:PORT,...': the hosts of each job, as the logs show them."""
    return "; ".join(f"{job} {separator.join(cluster[job])}" for job in jobs_of(cluster))


def from_hosts(ps_hosts, worker_hosts):
    """The cluster of worker.py's --ps-hosts and --worker-hosts."""
    return {PS.job: ps_hosts.split(","), WORKER.job: worker_hosts.split(",")}


def split_address(address):
    """'host:port' -> (host, port) ('[::1]:2222' for IPv6); LaunchError naming the address otherwise."""
    host, colon, port = str(address).strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or " " in host:
        raise LaunchError(f"{address!r} is not host:port (a host name or IP address, a colon, a port 1-65535)")
    return host, int(port)


CLUSTER_FORMS = ('{"ps": ["host:port", ...], "worker": ["host:port", ...]} (A3C) or {"learner": ["host:port"], '
                 '"actor": ["host:port", ...]} (--algo dqn or sac)')


def read_cluster(path=None, ps_hosts=None, worker_hosts=None):
    """The cluster of --cluster FILE (TensorFlow's ClusterSpec form: the jobs of one algorithm of CLUSTERS; a
    "chief" list counts as the first workers, as in TF_CONFIG) or of --ps-hosts/--worker-hosts; every address
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
            raise LaunchError(f"--cluster {path}: expected {CLUSTER_FORMS}")
        if "chief" in spec:
            spec = {job: hosts for job, hosts in spec.items() if job != "chief"} | {
                WORKER.job: spec["chief"] + spec.get(WORKER.job, [])}
        unknown = sorted(set(spec) - set(JOBS))
        if unknown:
            raise LaunchError(f"--cluster {path}: unknown job(s) {', '.join(unknown)}; a run has ps and worker, or "
                              f"learner and actor (--algo dqn or sac)")
        if not algos_of(spec):
            raise LaunchError(f"--cluster {path}: expected {CLUSTER_FORMS}")
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


def role_from_slurm(environ):
    """{job_name, task, ps_hosts, worker_hosts} of this task of an `srun` step, or {} outside one: task 0 is the
    parameter server, the others the workers in order (the chief is task 1); tasks fill the nodes in order, as
    srun's default block distribution places them, and the k-th task on a node listens on SLURM_PORT_BASE + k."""
    if "SLURM_PROCID" not in environ or "SLURM_STEP_NODELIST" not in environ:
        return {}
    try:
        rank = int(environ["SLURM_PROCID"])
        nodes = expand_hostlist(environ["SLURM_STEP_NODELIST"])
        counts = expand_tasks_per_node(environ["SLURM_STEP_TASKS_PER_NODE"])
        base = int(environ.get("SLURM_PORT_BASE", SLURM_BASE_PORT))
    except (KeyError, ValueError) as error:
        raise ValueError(f"cannot read the step's tasks and nodes ({error})") from None
    if len(nodes) != len(counts) or sum(counts) < 2 or not 0 <= rank < sum(counts):
        raise ValueError(f"{sum(counts)} tasks on {len(nodes)} nodes: a run needs a parameter server and a worker, "
                         f"one task each (srun --ntasks N+1)")
    hosts = [f"{node}:{base + k}" for node, count in zip(nodes, counts) for k in range(count)]
    return {"job_name": PS.job if rank == 0 else WORKER.job, "task": max(rank - 1, 0), "ps_hosts": hosts[0],
            "worker_hosts": ",".join(hosts[1:])}


def role_from_tf_config(text):
    """{job_name, task, ps_hosts, worker_hosts} from TF_CONFIG (the Kubeflow TFJob / tf.distribute convention:
    {"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker", "index": 0}}), or {} when unset. A
    "chief" replica is worker 0, the chief of this design, and the "worker" replicas follow it."""
    if not text:
        return {}
    try:
        config = json.loads(text)
        cluster, task = config["cluster"], config["task"]
        chiefs, workers, ps = list(cluster.get("chief", [])), list(cluster.get("worker", [])), list(cluster["ps"])
        kind, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"not a cluster with ps and a task with type and index ({error})") from None
    if kind == "chief":
        kind = "worker"
    elif kind == "worker":
        index += len(chiefs)
    elif kind != "ps":
        raise ValueError(f"task type {kind!r}: this program runs ps, chief and worker tasks only")
    if not ps or not chiefs + workers:
        raise ValueError("the cluster needs a ps and at least one chief or worker")
    return {"job_name": kind, "task": index, "ps_hosts": ",".join(ps), "worker_hosts": ",".join(chiefs + workers)}
