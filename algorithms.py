"""The algorithms, one row each, and the roles of their clusters: what every command needs to know of a learner.

A row says which jobs the algorithm's cluster has (the roles below: which task is the chief, how a task is named,
whether it beats a heartbeat, what its death restarts), whether it learns from a replay, the action spaces it
takes, its default number of workers, the preset `--preset auto` picks for it, and its entry points: the function
that runs one task of its cluster or a run in one process, and its agent for playback and evaluation. The launcher
(train.py), the worker, the supervisor, the status view, playback (demo.py), the cluster readers (cluster.py) and
the presets (constants.py) read this table; no other file compares an algorithm's name.

The entry points are "module:name" strings, imported only by the process that runs them (`entry`), so that the
launcher never imports TensorFlow. This module imports nothing of the project.

Adding a learner: its module (the learning, its `run_task` or its agent), its row here, its presets in
constants.PRESETS, its tests.
"""
import dataclasses
import importlib


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
    chief: bool = False  # its task 0 is the run's chief: it initialises or restores the variables and checkpoints
    serves: bool = False  # it only holds variables for the others (TensorFlow's server.join()): it plays no game
    named_alone: bool = False  # its task 0 is named by the prefix alone ("ps", "learner", "local")


PS = Role("ps", "parameter server", "ps", heartbeat=False, learner=False, finishes=False, restarts=("worker",),
          stops_first=False, serves=True, named_alone=True)
WORKER = Role("worker", "worker", "w", heartbeat=True, learner=True, finishes=True, restarts=(), stops_first=True,
              chief=True)
# Ape-X (apex.py): the learner holds the variables and the transitions' queue, owns the replay and trains; the
# actors play and send it transitions. One learner: the replay is in its memory, and the actors address task 0.
LEARNER = Role("learner", "learner", "learner", heartbeat=True, learner=True, finishes=True, restarts=("actor",),
               stops_first=True, single=True, chief=True, named_alone=True)
ACTOR = Role("actor", "actor", "a", heartbeat=True, learner=False, finishes=True, restarts=(), stops_first=False)
# The one-process mode (--num-workers 0): no cluster; its one task plays and learns, and beats a heartbeat for the
# status view like a cluster's tasks.
LOCAL = Role("local", "one-process run", "local", heartbeat=True, learner=True, finishes=True, restarts=(),
             stops_first=False, single=True, chief=True, named_alone=True)

CORES = "cores"  # a default number of workers: one per CPU core of the launching machine


@dataclasses.dataclass(frozen=True)
class Algorithm:
    name: str  # --algo
    title: str  # in --help
    roles: tuple  # the jobs of its cluster, in the order they start: the role that serves first, then the players
    replay: bool  # learns from a replay of stored transitions (uint8 frames, the learner's frame stack)
    actions: tuple  # the action spaces it takes: "discrete", "continuous" (a bounded Box)
    default_workers: object  # --num-workers when not given: CORES, or 0 (one process) when no cluster is given
    presets: dict  # --preset auto: the first of "<family>", "<kind>_bonus" (with a bonus), "<kind>" it has
    task: str  # "module:function(args)": one task of its cluster, in a worker.py process
    local: str  # "module:function(args)": the whole run in this process (--num-workers 0)
    agent: str  # "module:Class(env, run, config, checkpoint, epsilon, seed)": its policy, for playback
    evaluates_inline: bool = False  # its one-process run evaluates in its own loop (rewards.txt); else --eval-every
    # runs the evaluation process beside it, as on the cluster (eval.csv)
    learner: str = None  # "module:callable(observation_shape, action_space, config, head, dtype)": a replay
    # learner's networks and train op in the default graph, as its one-process run and Ape-X build them

    @property
    def jobs(self):
        return tuple(role.job for role in self.roles)

    @property
    def chief(self):
        """The chief task, (job, 0) of the role that has it."""
        return next((role.job, 0) for role in self.roles if role.chief)

    @property
    def serving(self):
        """The role that holds the variables (A3C's parameter servers, Ape-X's learner)."""
        return self.roles[0]

    @property
    def playing(self):
        """The role of which a run has --num-workers tasks (A3C's workers, Ape-X's actors)."""
        return self.roles[-1]

    @property
    def continuous(self):
        return "continuous" in self.actions

    def preset(self, observation_kind, family, bonus):
        """The preset `--preset auto` means for observations of `observation_kind` ("vector" or "image") of a game
        of `family` (envs.env_family), with a curiosity bonus or not."""
        for key in (family, f"{observation_kind}_bonus" if bonus else None, observation_kind):
            if key in self.presets:
                return self.presets[key]
        raise KeyError(f"{self.name} has no preset for {observation_kind} observations")

    def entry(self, name):
        """The entry point `name` ("task", "local", "agent" or "learner"), imported now."""
        module, _, attribute = getattr(self, name).partition(":")
        return getattr(importlib.import_module(module), attribute)


A3C = Algorithm(
    "a3c", "A3C (the paper's): a parameter server and workers that apply their gradients asynchronously",
    roles=(PS, WORKER), replay=False, actions=("discrete",), default_workers=CORES,
    presets={"mario": "mario", "doom": "doom", "vector_bonus": "classic_curiosity", "vector": "classic",
             "image": "paper"},
    task="a3c:run_task", local="a3c:run_local", agent="a3c:Agent")
DQN = Algorithm(
    "dqn", "Double DQN with n-step returns and prioritized replay; Ape-X's learner and actors on a cluster",
    roles=(LEARNER, ACTOR), replay=True, actions=("discrete",), default_workers=CORES,
    presets={"vector_bonus": "dqn_classic_curiosity", "vector": "dqn_classic", "image": "dqn"},
    task="apex:run_task", local="offpolicy:run_local", agent="dqn:Agent", evaluates_inline=True,
    learner="dqn:build_learner")
SAC = Algorithm(
    "sac", "Soft Actor-Critic, continuous or discrete actions; one process by default, Ape-X on a cluster",
    roles=(LEARNER, ACTOR), replay=True, actions=("discrete", "continuous"), default_workers=0,
    presets={"vector": "sac_classic", "image": "sac"},
    task="apex:run_task", local="offpolicy:run_local", agent="sac:Agent", evaluates_inline=True,
    learner="sac:SAC")

ALGORITHMS = {row.name: row for row in (A3C, DQN, SAC)}
DEFAULT = A3C.name
NAMES = tuple(ALGORITHMS)
ROLES = {role.job: role for row in ALGORITHMS.values() for role in row.roles}
JOBS = tuple(ROLES)  # a cluster's
ROLES[LOCAL.job] = LOCAL


def get(name):
    """The row of --algo `name` (the default one for a run recorded before there were others)."""
    return ALGORITHMS[name or DEFAULT]


def of_run(run):
    """The row of a run, from the "run" part of its config.json."""
    return get(run.get("algo"))


def of_cluster(cluster):
    """The algorithms whose clusters have exactly the jobs of `cluster` (a ClusterSpec dict); () if none."""
    return tuple(name for name, row in ALGORITHMS.items() if set(cluster) == set(row.jobs))


def with_replay():
    return tuple(name for name, row in ALGORITHMS.items() if row.replay)


def one_process_by_default():
    return tuple(name for name, row in ALGORITHMS.items() if row.default_workers == 0)
