"""The algorithms, one row each, and the roles of their clusters: what every command needs to know of a learner.

A row says which jobs the algorithm's cluster has (the roles below: which task is the chief, how a task is named,
whether it beats a heartbeat, what its death restarts), whether it learns from a replay, the action spaces it
takes, its default number of workers, the preset `--preset auto` picks for it, and its entry points: the function
that runs one task of its cluster or a run in one process, and its agent for playback and evaluation. The launcher
(train.py), the worker, the supervisor, the status view, playback (demo.py), the cluster readers (cluster.py) and
the presets (constants.py) read this table; no other file compares an algorithm's name.

The entry points are "module:name" strings, imported only by the process that runs them (`entry`), so that the
launcher never imports TensorFlow. This module imports nothing of the project.

Adding a learner: its module (the learning, its `run_task` or its agent), its row here with its presets and its
own hyper-parameters (Hyperparameter: constants.Config gets them as fields), its tests.
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
class Hyperparameter:
    """A hyper-parameter of one algorithm's own: a field of constants.Config as the shared ones are (set with
    --set, logged, in config.json), declared in its row. Its default gives its type; a value must lie within
    [low, high] (above low, not at it, where `above`)."""
    name: str
    default: object
    doc: str  # its meaning, as train.py --help-config prints it
    low: float = None
    high: float = None
    above: bool = False
    choices: tuple = None  # the values a word may take

    def problem(self, value):
        """Why `value` cannot work, or None."""
        if self.choices is not None:
            return None if value in self.choices else f"must be one of {', '.join(self.choices)}"
        low = self.low is not None and (value <= self.low if self.above else value < self.low)
        if low or (self.high is not None and value > self.high):
            opening = "(" if self.above else "["
            if self.high is None:
                return f"must be {'>' if self.above else '>='} {self.low:g}"
            if self.low is None:
                return f"must be <= {self.high:g}"
            return f"must lie in {opening}{self.low:g}, {self.high:g}]"
        return None


@dataclasses.dataclass(frozen=True)
class Algorithm:
    name: str  # --algo
    title: str  # in --help
    roles: tuple  # the jobs of its cluster, in the order they start: the role that serves first, then the players
    replay: bool  # learns from a replay of stored transitions (uint8 frames, the learner's frame stack)
    actions: tuple  # the action spaces it takes: "discrete", "continuous" (a bounded Box)
    default_workers: object  # --num-workers when not given: CORES, or 0 (one process) when no cluster is given
    presets: dict  # --preset auto: the first of "<family>/<bonus>", "<family>", "<kind>_bonus" (with a bonus),
    # "<kind>" it has
    hyperparameters: dict  # its named presets: {name: {hyper-parameter: value as --set takes it}}
    task: str  # "module:function(args)": one task of its cluster, in a worker.py process; None: one process only
    local: str  # "module:function(args)": the whole run in this process (--num-workers 0)
    agent: str  # "module:Class(env, run, config, checkpoint, epsilon, seed)": its policy, for playback
    evaluates_inline: bool = False  # its one-process run evaluates in its own loop; else --eval-every runs the
    # evaluation process beside it, as on the cluster (both write evaluation.py's eval.csv)
    learner: str = None  # "module:callable(observation_shape, action_space, config, head, dtype)": a replay
    # learner's networks and train op in the default graph, as its one-process run and Ape-X build them
    own_hyperparameters: tuple = ()  # Hyperparameter: those only it reads, fields of constants.Config all the same
    reads_of: tuple = ()  # the rows whose own hyper-parameters it reads too (a learner it builds on)
    bonuses: bool = True  # composes with the curiosity bonuses (--unsup); else --unsup none only

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
    def clusters(self):
        """Whether it runs on a cluster as well as in one process."""
        return self.task is not None

    @property
    def continuous(self):
        return "continuous" in self.actions

    def preset(self, observation_kind, family, unsup="none"):
        """The preset `--preset auto` means for observations of `observation_kind` ("vector" or "image") of a game
        of `family` (envs.env_family), with the curiosity bonus `unsup` (--unsup; "none": without)."""
        bonus = unsup != "none"
        for key in (f"{family}/{unsup}" if bonus else None, family, f"{observation_kind}_bonus" if bonus else None,
                    observation_kind):
            if key in self.presets:
                return self.presets[key]
        raise KeyError(f"{self.name} has no preset for {observation_kind} observations")

    def entry(self, name):
        """The entry point `name` ("task", "local", "agent" or "learner"), imported now."""
        module, _, attribute = getattr(self, name).partition(":")
        return getattr(importlib.import_module(module), attribute)


# Each algorithm's named presets: overrides of constants.Config's defaults (as --set takes them), with the
# measurements that chose them. `--preset auto` picks one by the row's `presets`; `--set` applies on top.
# RIDE's settings on MultiRoom-N7-S4 and KeyCorridorS3R3 (Raileanu and Rocktaschel 2020, its README): entropy 0.0005
# and an intrinsic reward coefficient of 0.1, given to every bonus that prediction_beta weighs but counts and RIDE; 16
# environments a worker, for MiniGrid's Python steps are cheap beside an update.
_MINIGRID = {"entropy_beta": "0.0005", "prediction_beta": "0.1", "envs_per_worker": "16"}
# The bonuses with settings of their own in a family of games, on top of a row's preset for the family:
# `<preset>_<bonus>`, which `--preset auto` picks with that --unsup. A bonus that pays more over an episode than the
# goal (at most 1, and it ends the episode's bonus) teaches wandering (docs/history/2026-12-04-ride-on-minigrid.md,
# IMPALA on N7-S4). Each family's table is measured with one learner and given to every row with a preset for the
# family.
MINIGRID_BONUS_SETTINGS = {
    # Counts pay about 1 / sqrt(n) for every state, and nearly every state of a new layout is new: at 0.1 an episode
    # of wandering earned more than the goal (24.8 cells an episode, success 1% at 10M); at 0.005, the coefficient
    # count baselines run with in code built on RIDE's (C-BET's README), the policy went to the goal there, but on
    # KeyCorridorS3R3, whose episodes run twice as long, it paid 1.26 an episode and never went to the ball in 15M
    # steps; at 0.002 it went to the goal on both (seed 0: N7-S4 solved for good at 5.22M, KeyCorridorS3R3 a success
    # of 0.83 at 15M, rising).
    "counts": {"prediction_beta": "0.002"},
    # RIDE's impact grows as its embedding spreads: at 0.1 its bonus reached 2 an episode; at 0.03, with a time limit
    # that ends the return as RIDE's code's `done` does, it went to the goal.
    "ride": {"prediction_beta": "0.03", "bootstrap_time_limit": "false"},
    # The others at the coefficient that pays about what counts at 0.005 (their preset then) pay over the first 250k
    # steps of IMPALA on MultiRoom-N7-S4 (0.35 an episode against a goal weighed 1, a near-random policy): at 0.1 the
    # ICM paid 4.1 an episode, E3B 24 (70 by 300k) and NGU's episodic novelty 47; RND, whose weight is int_coef
    # against ext_coef's 2 (prediction_beta does not apply to it), paid 1.3 before int_coef
    # (docs/history/2026-12-04-ride-on-minigrid.md).
    "action": {"prediction_beta": "0.01"},
    "rnd": {"int_coef": "0.5"},
    "e3b": {"prediction_beta": "0.001"},
    "ngu": {"prediction_beta": "0.001"},
}
# ViZDoom: the memory bonuses at the coefficient that pays what the ICM pays at the paper's 0.01 over the first 250k
# steps of A3C's `doom` preset on doomSparse (0.70 an episode, seeds 0-2 of docs/results/doom-k4; the ICM solves the
# task for good in 3 of 3 seeds), to one figure: at 0.01, seed 0, NGU's episodic novelty paid 45.4 an episode, counts
# 3.20, E3B 5.27 and RIDE 3.03 (docs/results/doom-calibration; docs/history/2026-11-24-doom-study.md). RND is not in
# the table: its weight on Doom is int_coef, which its runs there choose.
DOOM_BONUS_SETTINGS = {
    # RIDE's embedding trained in the ICM's proportion (forward 0.2, inverse 0.8): in RIDE's own (10 to 0.1) its
    # inverse model stayed at chance (a loss of ln 4) and its forward loss fell a hundredfold in 250k steps, the
    # embedding collapsing and the impact with it (0.67 an episode to 0.10).
    "ride": {"prediction_beta": "0.002", "ride_forward_share": "0.2"},
    "ngu": {"prediction_beta": "0.0002"},
    "counts": {"prediction_beta": "0.002"},
    "e3b": {"prediction_beta": "0.001"},
}
# Super Mario Bros by the same rule, per step: its episodes' lengths differ with the policy (RIDE's 215 steps on average
# over its first 250k, the ICM's 588-774), where on Doom nearly every early episode runs to its time limit and per
# episode is per step. The yardstick, the ICM at the `mario` preset's 0.2 without reward, paid 0.57, 0.72 and 0.99 a
# thousand steps over the first 250k steps of seeds 0-2 (docs/results/mario-study), 0.76; RIDE with its embedding in
# the ICM's proportion, as on Doom, 5.84 at 0.2 (seed 0, docs/results/mario-calibration-ride). Only RIDE, the bonus
# RLeXplore's Mario table ranks first, is measured here; the others keep the preset's 0.2.
MARIO_BONUS_SETTINGS = {
    "ride": {"prediction_beta": "0.03", "ride_forward_share": "0.2"},
}
BONUS_SETTINGS = {"minigrid": MINIGRID_BONUS_SETTINGS, "doom": DOOM_BONUS_SETTINGS,  # by envs.env_family
                  "mario": MARIO_BONUS_SETTINGS}


PRESET_BONUS_NAMES = {"action": "icm"}  # a preset names the ICM as the docs do, not by its --unsup spelling


def with_bonus_presets(row_presets, hyperparameters):
    """A row's `presets` with `<family>/<--unsup value>` added for each bonus of BONUS_SETTINGS[family], for each
    family it names a preset for; each such preset, `<family preset>_<bonus>` (the ICM's `_icm`), is added to the
    row's `hyperparameters` as the family's preset with the bonus's settings on top."""
    presets = dict(row_presets)
    for family, table in BONUS_SETTINGS.items():
        family_preset = row_presets.get(family)
        for bonus, settings in table.items() if family_preset else ():
            presets[f"{family}/{bonus}"] = name = f"{family_preset}_{PRESET_BONUS_NAMES.get(bonus, bonus)}"
            hyperparameters[name] = {**hyperparameters[family_preset], **settings}
    return presets


A3C_PRESETS = {
    "paper": {},
    # Measured on CartPole (docs/history/2026-11-24-hyperparameters.md): Adam's epsilon of 0.1 against weights that
    # drift with noise-sized gradients, lr 5e-4 against the step that saturated the policy after a sudden drop in
    # returns, 8 environments per worker for the speed: 2 workers solved seeds 0-4 in 65-100 s.
    "classic": {"learning_rate": "5e-4", "reward_scale": "0.1", "entropy_beta": "1e-3", "adam_epsilon": "0.1",
                "envs_per_worker": "8"},
    # With curiosity the policy must follow a small bonus, which Adam's epsilon of 0.1 damps to nothing
    # (CorridorLong-v0, ICM: 1 of 3 seeds found the goal with 0.1, 3 of 3 with 1e-8;
    # docs/history/2026-11-24-hyperparameters.md).
    "classic_curiosity": {"learning_rate": "1e-3", "reward_scale": "0.1", "entropy_beta": "1e-3"},
    "mario": {"prediction_beta": "0.2", "entropy_beta": "0.0005"},  # the original's Mario settings
    # The original's constants with 4 environments per worker: an update per 80 steps of a worker, where the
    # paper's made one per 20. With 16 (an update per 320 steps, 1.9x the steps per second) the ICM had 0.17 on
    # MyWayHome dense at 3M steps and a tenfold learning rate did not help; with 4 it had 0.82 and 0.76 in two
    # seeds (docs/history/2026-11-24-doom-study.md, "Why the dense task lags").
    "doom": {"envs_per_worker": "4"},
    "minigrid": _MINIGRID,
    # The original's constants with A2C's batch on Atari: 16 emulators a worker stepped side by side, rollouts of
    # 5 steps (an update per 80 steps of a worker, as 4 x 20). 2 workers on Pong trained 3.4x the steps a second of
    # one emulator each and rollouts of 20 (4 x 20: 2.5x). At 3M steps, 3 seeds each, 4 x 20's mean return was
    # higher by 4.3 +- 3.2 (Welch's p 0.30, not told apart); in equal training time 16 x 5 was ahead by 3.3 +- 0.7
    # (p 0.04) (docs/speed.md, "Figures").
    "atari": {"envs_per_worker": "16", "rollout_maxlen": "5"},
}
# `dqn_classic` below, and `dqn_classic_curiosity` with three changes.
_DQN_CLASSIC = {"learning_rate": "1e-3", "adam_epsilon": "1e-8", "envs_per_worker": "1", "replay_capacity": "200000",
                "batch_size": "256", "learning_starts": "1000", "replay_ratio": "64", "target_update_period": "200",
                "dueling": "true", "epsilon_decay_steps": "10000", "max_global_steps": "400000", "acting_copy": "true"}
DQN_PRESETS = {
    # DQN on images: Rainbow's and Dopamine's Adam (lr 6.25e-5, epsilon 1.5e-4) and Nature DQN's schedule.
    "dqn": {"learning_rate": "6.25e-5", "adam_epsilon": "1.5e-4", "envs_per_worker": "1", "acting_copy": "true"},
    # DQN on classic control: a short warm-up and exploration, a dueling head, the target every 200 updates, and a
    # batch of 256 every 4 steps (replay ratio 64). CartPole-v1 (docs/history/2026-11-25-dqn.md): lr 1e-3 beat 5e-4
    # and 2.5e-4; a batch of 64 every step solved 2 of 3 seeds in one process and 1 of 3 with 2 actors in 5 minutes,
    # where a batch of 256 with a replay of 200,000 (which keeps failures once the agent plays well) solved 3 of 3 in
    # both.
    "dqn_classic": _DQN_CLASSIC,
    # DQN with a curiosity bonus on classic control: the batch of 64 every step and the replay of 50,000 of before.
    # On CorridorLong-v0 within 30,000 steps they found the far end with the ICM in 2 of 3 seeds and with RND in 3
    # of 3; with the batch of 256 every 4 steps (a quarter of the updates) none of 2 seeds did, with either bonus
    # (docs/history/2026-11-25-dqn.md).
    "dqn_classic_curiosity": {**_DQN_CLASSIC, "replay_capacity": "50000", "batch_size": "64",
                              "max_global_steps": "200000"},
}
SAC_PRESETS = {
    # SAC on classic control: stable-baselines3's tuned Pendulum settings (rl-baselines3-zoo: lr 1e-3, batch 256,
    # an update per step, uniform replay, one-step returns, tau 0.005), random actions for the first 1,000 steps.
    # Discrete actions aim at 0.1 log |A| of entropy: at cleanrl's 0.89 on CartPole the temperature grew without
    # bound (alpha 64,000, the critics' loss 6e8 at 30k steps); at 0.1 the greedy policy solved CartPole in seeds
    # 0-2 (docs/history/2026-11-25-sac.md). A curiosity bonus is relabelled at 0.1 of its running RMS: on
    # MountainCarContinuous SAC+RND found the flag in 3 of 3 seeds within 20k steps, SAC+ICM in 2, SAC alone in none;
    # with the bonus stored at acting time, none (docs/history/2026-11-25-sac.md).
    "sac_classic": {"learning_rate": "1e-3", "adam_epsilon": "1e-8", "envs_per_worker": "1",
                    "replay_capacity": "100000", "batch_size": "256", "learning_starts": "1000", "replay_ratio": "256",
                    "n_step": "1", "prioritized": "false", "gamma": "0.99", "max_global_steps": "20000",
                    "target_entropy_scale": "0.1", "relabel_bonus": "true", "int_coef": "0.1"},
    # SAC on images (discrete actions): cleanrl's sac_atari (lr 3e-4, batch 64, an update every 4 steps, 20k random
    # steps, target entropy 0.89 log |A|; its targets are copied every 8,000 steps where these follow by Polyak).
    "sac": {"learning_rate": "3e-4", "adam_epsilon": "1e-4", "envs_per_worker": "1", "replay_capacity": "1000000",
            "batch_size": "64", "learning_starts": "20000", "replay_ratio": "16", "n_step": "1", "prioritized": "false",
            "max_global_steps": "5000000"},
}


A3C = Algorithm(
    "a3c", "A3C (the paper's): a parameter server and workers that apply their gradients asynchronously",
    roles=(PS, WORKER), replay=False, actions=("discrete",), default_workers=CORES,
    presets=with_bonus_presets({"mario": "mario", "doom": "doom", "atari": "atari", "minigrid": "minigrid",
                                "vector_bonus": "classic_curiosity", "vector": "classic", "image": "paper"},
                               A3C_PRESETS), hyperparameters=A3C_PRESETS,
    task="a3c:run_task", local="a3c:run_local", agent="a3c:Agent")
DQN = Algorithm(
    "dqn", "Double DQN with n-step returns and prioritized replay; Ape-X's learner and actors on a cluster",
    roles=(LEARNER, ACTOR), replay=True, actions=("discrete",), default_workers=CORES,
    presets={"vector_bonus": "dqn_classic_curiosity", "vector": "dqn_classic", "image": "dqn"},
    hyperparameters=DQN_PRESETS,
    task="apex:run_task", local="offpolicy:run_local", agent="dqn:Agent", evaluates_inline=True,
    learner="dqn:build_learner")
SAC = Algorithm(
    "sac", "Soft Actor-Critic, continuous or discrete actions; one process by default, Ape-X on a cluster",
    roles=(LEARNER, ACTOR), replay=True, actions=("discrete", "continuous"), default_workers=0,
    presets={"vector": "sac_classic", "image": "sac"}, hyperparameters=SAC_PRESETS,
    task="apex:run_task", local="offpolicy:run_local", agent="sac:Agent", evaluates_inline=True,
    learner="sac:SAC", own_hyperparameters=(
        Hyperparameter("tau", 0.005, "each update moves the target critics this fraction of the way to the critics "
                       "(Polyak averaging)", low=0.0, high=1.0, above=True),
        Hyperparameter("target_entropy_scale", 0.89, "with discrete actions, the temperature keeps the policy's "
                       "entropy near this fraction of log |A|, the uniform policy's (cleanrl's sac_atari); "
                       "continuous actions aim at -dim(A)", low=0.0, high=1.0)))

# PlaNet (Hafner et al. 2019): its configuration, and a cheaper planner for these machines' CPUs (its cost per
# decision: benchmarks/planning_speed.py)
_PLANET = {"learning_rate": "1e-3", "adam_epsilon": "1e-4", "batch_size": "50", "envs_per_worker": "1",
           "max_global_steps": "1000000"}
PLANET_PRESETS = {
    "planet": _PLANET,
    # observation_stddev 0.1: on Pendulum's stored episodes the model's open-loop error 4 steps ahead was a tenth of
    # unit variance's after 800 updates (docs/history/2026-12-04-planet-pendulum.md)
    "planet_cpu": {**_PLANET, "cem_candidates": "300", "cem_iterations": "5", "cem_top": "30",
                   "observation_stddev": "0.1"},
    # From pixels on a CPU: PlaNet's convolutions at depth 32 took 65 s an update of 50 x 50 frames on one core here
    # (13.6 s for 16 x 32); at depth 8, 16 x 32 frames took 1.1 s (one core each, two runs beside).
    "planet_cpu_pixels": {**_PLANET, "cem_candidates": "300", "cem_iterations": "5", "cem_top": "30",
                          "cnn_depth": "8", "batch_size": "16", "sequence_length": "32"},
}
PLANET = Algorithm(
    "planet", "PlaNet: a recurrent state-space world model learned from stored episodes, planning by the "
    "cross-entropy method in its latent space; one process by default, a learner and actors on a cluster",
    roles=(LEARNER, ACTOR), replay=False, actions=("continuous",), default_workers=0,
    presets={"vector": "planet_cpu", "image": "planet_cpu_pixels"}, hyperparameters=PLANET_PRESETS,
    task="planet:run_task", local="planet:run_local", agent="planet:Agent", evaluates_inline=True, bonuses=False,
    reads_of=("sac",),  # its latent actor (behaviour=sac) is sac.SAC
    own_hyperparameters=(
        Hyperparameter("state_size", 30, "the RSSM's stochastic state: a diagonal Gaussian of this many dimensions",
                       low=1),
        Hyperparameter("belief_size", 200, "the RSSM's deterministic state: a GRU of this many units", low=1),
        Hyperparameter("hidden_size", 200, "the units of the world model's hidden layers and of the embedding",
                       low=1),
        Hyperparameter("cnn_depth", 32, "image observations: the filters of the world model's convolutions in "
                       "multiples of this (PlaNet's 32: 32, 64, 128, 256 in the encoder); its cost per frame grows "
                       "with its square", low=1),
        Hyperparameter("free_nats", 3.0, "the KL between posterior and prior below this many nats a step costs "
                       "nothing", low=0.0),
        Hyperparameter("observation_stddev", 1.0, "the standard deviation of the observations' Gaussian density in "
                       "the world model's loss (PlaNet's unit variance, made for frames of 12,288 values: a vector of "
                       "a few values is then reconstructed loosely, and its KL stays under the free nats, leaving the "
                       "prior untrained)", low=0.0, above=True),
        Hyperparameter("model_reward_scale", 10.0, "the reward's log-likelihood weighs this much beside the "
                       "observations' in the world model's loss", low=0.0),
        Hyperparameter("model_grad_clip", 1000.0, "the world model's gradient is clipped at this global norm",
                       low=0.0, above=True),
        Hyperparameter("sequence_length", 50, "steps of each sequence of a training batch (batch_size of them)",
                       low=2),
        Hyperparameter("random_episodes", 5, "episodes of uniformly random actions before the planner acts",
                       low=1),
        Hyperparameter("collect_every", 100, "updates of the world model for each episode collected", low=1),
        Hyperparameter("exploration_noise", 0.3, "Gaussian noise added to the planner's action while collecting",
                       low=0.0),
        Hyperparameter("action_repeat", 1, "environment steps each action is held for: the model's step is that "
                       "many of the game's, its reward their sum (PlaNet's per task)", low=1),
        Hyperparameter("behaviour", "planner", "what acts: planner (the cross-entropy method in the model's latent "
                       "space) or sac (an actor and twin critics on the model's latent features, trained from the "
                       "posterior states of the replayed sequences; no planning)", choices=("planner", "sac")),
        Hyperparameter("plan2explore", False, "Plan2Explore (Sekar et al. 2020): an ensemble of one-step predictors "
                       "of the next embedding learns beside the model, and the collecting planner maximises their "
                       "disagreement instead of the reward; evaluations plan with the learned reward (zero-shot)"),
        Hyperparameter("ensemble_size", 10, "Plan2Explore's one-step predictors (its 10)", low=2),
        Hyperparameter("cem_horizon", 12, "steps the planner imagines ahead", low=1),
        Hyperparameter("cem_iterations", 10, "the cross-entropy method's refits of its belief a decision", low=1),
        Hyperparameter("cem_candidates", 1000, "action sequences the planner scores in each refit", low=1),
        Hyperparameter("cem_top", 100, "the best candidates each refit fits", low=1)))

# IMPALA (Espeholt et al. 2018): RMSProp as its paper and torchbeast, the loss summed over a batch's steps.
_IMPALA = {"envs_per_worker": "8", "batch_size": "8", "rollout_maxlen": "20", "rmsprop_epsilon": "0.01",
           "acting_copy": "true"}
IMPALA_PRESETS = {
    # Atari in IMPALA's paper (its Table G.1, the shallow network): lr 6e-4, entropy 0.01, batch 32 of 20 steps
    "impala": {**_IMPALA, "learning_rate": "6e-4", "entropy_beta": "0.01", "batch_size": "32"},
    # Doom (docs/history/2026-12-06-impala-doom.md): with the `impala` preset the ICM's rewards of about 0.001 a step
    # gave gradients whose squares sat far below RMSProp's epsilon of 0.01 under its root, and the policy hardly moved
    # in 5M steps; epsilon 1e-8 makes each step about the rate whatever the rewards' scale (as A3C's Adam), at A3C's
    # rate and updates a step (batches of 4 x 20 steps = a worker's 80). The policy trains by A3C's Adam: its 3 seeds'
    # mean step to solved for good was the earliest (3.88M; RMSProp 4.48M, A3C 4.08M; not a measured difference,
    # docs/impala.md), and the two learners' rows then differ in the learner only; the epsilon of 1e-8 is for
    # `--set policy_optimizer=rmsprop`
    "impala_doom": {**_IMPALA, "learning_rate": "1e-4", "rmsprop_epsilon": "1e-8", "entropy_beta": "0.01",
                    "batch_size": "4", "policy_optimizer": "adam"},
    # Measured on CartPole-v1 (tests/test_impala.py's run)
    "impala_classic": {**_IMPALA, "learning_rate": "1e-3", "entropy_beta": "1e-3", "reward_scale": "0.1"},
    # RIDE's MiniGrid settings (Raileanu and Rocktaschel 2020, its code's arguments and README): lr 1e-4 falling
    # linearly to 0 at 30M steps (its total_frames on MultiRoom-N7-S4 and KeyCorridorS3R3), PyTorch's RMSProp with
    # epsilon 1e-5, entropy 0.0005, intrinsic coefficient 0.1, batches of 32 unrolls of 100, an RMSProp for each of
    # the bonus's models
    "impala_minigrid": {**_IMPALA, "learning_rate": "1e-4", "rmsprop_epsilon": "1e-5", "entropy_beta": "0.0005",
                        "prediction_beta": "0.1", "batch_size": "32", "rollout_maxlen": "100", "anneal_lr": "true",
                        "anneal_steps": "30000000", "envs_per_worker": "16", "predictor_optimizer": "rmsprop",
                        "rmsprop_form": "pytorch"},
}
IMPALA = Algorithm(
    "impala", "IMPALA: actors that only act and one learner that trains on their trajectories with V-trace",
    roles=(LEARNER, ACTOR), replay=False, actions=("discrete",), default_workers=CORES,
    presets=with_bonus_presets({"minigrid": "impala_minigrid", "doom": "impala_doom", "vector": "impala_classic",
                                "image": "impala"}, IMPALA_PRESETS),
    hyperparameters=IMPALA_PRESETS, task="impala:run_task", local="impala:run_local", agent="a3c:Agent",
    own_hyperparameters=(
        Hyperparameter("vtrace_clip_rho", 1.0, "V-trace's rho-bar: the importance weight of each step's temporal "
                       "difference is clipped at this (IMPALA's 1)", low=0.0, above=True),
        Hyperparameter("vtrace_clip_pg_rho", 1.0, "the importance weight of the policy gradient's advantage is "
                       "clipped at this (IMPALA's 1)", low=0.0, above=True),
        Hyperparameter("vtrace_clip_c", 1.0, "V-trace's c-bar: the traces' importance weights are clipped at this "
                       "(IMPALA's 1)", low=0.0, above=True),
        Hyperparameter("policy_optimizer", "rmsprop", "what trains the policy and value heads: rmsprop (IMPALA's, "
                       "the rmsprop_* settings) or adam (A3C's: adam_epsilon, the same rate and annealing)",
                       choices=("rmsprop", "adam")),
        Hyperparameter("rmsprop_decay", 0.99, "RMSProp's moving average of squared gradients keeps this much a "
                       "step", low=0.0, high=1.0),
        Hyperparameter("rmsprop_epsilon", 0.01, "RMSProp's epsilon (IMPALA's 0.01; RIDE's 1e-5)", low=0.0,
                       above=True),
        Hyperparameter("rmsprop_form", "tensorflow", "whose RMSProp: tensorflow (IMPALA's code, scalable_agent: the "
                       "mean square starts at 1, epsilon under its root) or pytorch (torchbeast's and RIDE's code: "
                       "it starts at 0, epsilon added to its root; with gradients well below 1 its first few hundred "
                       "steps are many times TensorFlow's)", choices=("tensorflow", "pytorch")),
        Hyperparameter("unrolls", "cut", "what a trajectory of rollout_maxlen + 1 frames holds: cut (one "
                       "rollout, cut where its episode ends and padded) or through (one environment's rollouts one "
                       "after another through episodes' ends, IMPALA's fixed unrolls: no padding, so more steps an "
                       "update and fewer updates a step where episodes are short)", choices=("cut", "through")),
        Hyperparameter("predictor_optimizer", "adam", "how the bonus's models train: adam (A3C's: one Adam for "
                       "them all, their gradient clipped as one) or rmsprop (RIDE's code: an RMSProp with the "
                       "policy's settings for each model, the embedding, the forward and the inverse model, each "
                       "clipped on its own, its rate not annealed)", choices=("adam", "rmsprop"))))

ALGORITHMS = {row.name: row for row in (A3C, DQN, SAC, PLANET, IMPALA)}
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
    return tuple(name for name, row in ALGORITHMS.items() if row.clusters and set(cluster) == set(row.jobs))


def with_replay():
    return tuple(name for name, row in ALGORITHMS.items() if row.replay)


def named_presets():
    """Every row's named presets, {name: overrides}; a name is one row's only."""
    presets = {}
    for row in ALGORITHMS.values():
        shared = set(presets) & set(row.hyperparameters)
        if shared:
            raise ValueError(f"{row.name}'s presets {', '.join(sorted(shared))} are another algorithm's")
        presets.update(row.hyperparameters)
    return presets


def owner(name):
    """The row whose own hyper-parameter `name` is, or None for a field that every row reads."""
    return next((row.name for row in ALGORITHMS.values() for parameter in row.own_hyperparameters
                 if parameter.name == name), None)


def reads(algo, name):
    """Whether --algo `algo` reads the hyper-parameter `name`: every row reads constants.Config's fields but the
    other rows' own, unless it builds on that row."""
    return owner(name) in (None, algo, *ALGORITHMS[algo].reads_of)


def own_hyperparameters():
    """Every row's own hyper-parameters, in the rows' order; a name is one row's only."""
    found = [parameter for row in ALGORITHMS.values() for parameter in row.own_hyperparameters]
    names = [parameter.name for parameter in found]
    if len(set(names)) != len(names):
        raise ValueError(f"a hyper-parameter is declared by two rows: {sorted(names)}")
    return found


def one_process_by_default():
    return tuple(name for name, row in ALGORITHMS.items() if row.default_workers == 0)
