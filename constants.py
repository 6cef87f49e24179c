"""Hyper-parameters of curiosity-agent: one frozen dataclass, overridable from the command line.

Defaults follow the original noreward-rl `constants.py`. Any field can be changed at launch with
`--set name=value` (repeatable); the worker validates the result, logs it and writes it to
`<log-dir>/config.json` so that a run can be reproduced and resumed.

This module must not import TensorFlow: the launcher uses it to validate flags before starting anything.
"""
import dataclasses
import json
import os
import time

import algorithms
import logdir
from dataclasses import dataclass, field, fields


class ConfigError(ValueError):
    """A hyper-parameter override or value that cannot be used; the message says which and why."""


class UsageError(Exception):
    """A problem the user can fix (a corrupt or mismatched checkpoint, a missing run); one line, exit status 2."""


def _param(default, doc):
    """A Config field whose docstring travels with it (printed by `train.py --help-config`)."""
    return field(default=default, metadata={"help": " ".join(doc.split())})


@dataclass(frozen=True)
class SharedConfig:
    """The hyper-parameters more than one learner reads; Config adds each algorithm's own (algorithms.py)."""

    gamma: float = _param(0.99, """
    discount factor for rewards""")
    gae_lambda: float = _param(1.0, """
    lambda of Generalized Advantage Estimation (Schulman et al. 2016); 1.0 gives plain returns""")
    entropy_beta: float = _param(0.01, """
    weight of the policy-entropy bonus in the A3C loss""")
    center_advantages: bool = _param(False, """
    subtract each update's mean advantage from its advantages. When the returns drop suddenly (CartPole's first
    falls after a long run of full episodes) the value still predicts the old returns, and every step of the
    batch gets a large advantage of one sign, which says nothing about which action was better but multiplies
    the noise of the policy gradient, and the policy saturated to one action (CartPole, lr 1e-3, one process:
    0 of 5 seeds ended collapsed with it, 2 of 5 without; at lr 5e-4 none did either way). Off is the
    original algorithm; with one environment per worker a batch is one rollout, and centering would also remove
    what a rollout that found a sparse reward teaches""")
    value_loss_wt: float = _param(0.5, """
    weight of the value loss in the A3C loss""")
    rollout_maxlen: int = _param(20, """
    environment steps per rollout; the losses are scaled by it so that other hyper-parameters do not
    depend on it (as in the original)""")
    grad_norm_clip: float = _param(40.0, """
    global-norm clipping of the policy gradient""")
    reward_scale: float = _param(1.0, """
    extrinsic rewards are multiplied by this before returns are computed (logs show the game's reward);
    classic-control tasks pay 1 per step, and returns near 100 would swamp the value loss""")
    reward_clip: float = _param(1.0, """
    A3C's and IMPALA's rewards are clipped to [-x, x], the extrinsic and then its sum with a bonus, with --envWrap,
    on Doom and Mario (the paper's preprocessing) and on MiniGrid (RIDE's code); envs.clips_rewards""")
    bootstrap_time_limit: bool = _param(True, """
    A3C and IMPALA bootstrap an episode cut by its time limit from V of its last state (Pardo et al. 2018: the cut
    is not the state's end); false: the cut ends the return as a termination does, as gym's `done` did in the
    original's code and in RIDE's""")
    learning_rate: float = _param(1e-4, """
    Adam learning rate""")
    adam_epsilon: float = _param(1e-8, """
    epsilon of Adam's update lr x m / (sqrt(v) + epsilon). With the default (TensorFlow's and the original's) a
    step has the full size however small the gradient: near-deterministic policies then keep moving toward
    determinism. 0.1 keeps small gradients' steps small: CartPole runs that collapsed to one action with 1e-8
    solved with 0.1, which the classic preset therefore uses (docs/history/2026-11-24-hyperparameters.md). The
    policy's only: the curiosity predictor has predictor_adam_epsilon""")
    predictor_adam_epsilon: float = _param(1e-8, """
    epsilon of Adam for the curiosity predictor's variables (the original's 1e-8). Apart from adam_epsilon
    because the predictor's gradients are small: with 0.1 it barely learned, its bonus stopped telling new
    states from visited ones, and ICM on CorridorLong-v0 found the goal in 1 of 3 seeds (2 minutes each)
    instead of 3 of 3 (docs/history/2026-11-24-hyperparameters.md)""")
    prediction_beta: float = _param(0.01, """
    curiosity bonus = prediction_beta x the forward model's loss at that step (0.5 is the original's hint
    for --unsup state); every bonus's weight but RND's, which int_coef weighs""")
    prediction_lr_scale: float = _param(10.0, """
    the curiosity predictor's loss is multiplied by this, so it learns faster than the policy (30-50 is the
    original's hint for --unsup state)""")
    forward_loss_wt: float = _param(0.2, """
    predictor loss = prediction_lr_scale x ((1 - forward_loss_wt) x inverse loss + forward_loss_wt x
    forward loss)""")
    ride_forward_share: float = _param(10.0 / (10.0 + 0.1), """
    --unsup ride: the forward loss's share in what trains the embedding, as forward_loss_wt is the ICM's; RIDE's
    code weighs its forward loss 10 and its inverse loss 0.1""")
    count_full_state: bool = _param(True, """
    --unsup ride and counts: count a state under the environment's key of its whole state where it reports one
    (MiniGrid's fully observed grid: the agent's cell and heading, a digest of the whole grid's codes), as RIDE's code
    counts under minigrid's FullyObsWrapper; off: under the observation the agent sees. The key enters the count
    only, never the policy's input""")
    normalise_bonus: bool = _param(False, """
    --unsup e3b, ride, ngu, ngu_rnd and counts: divide each step's bonus by the running standard deviation of every
    bonus its process has made, before prediction_beta (E3B's code's reward_norm int, Henaff et al. 2022): a bonus
    whose scale grows as its embedding spreads has that growth divided out, as far as a lifelong deviation keeps up""")
    two_streams: bool = _param(False, """
    the curiosity bonus is a stream of its own: a second value head learns its return, with gamma_int, and the
    policy follows ext_coef x the extrinsic advantage + int_coef x the bonus's (Burda et al. 2018); the
    extrinsic reward alone is clipped. Off (the original) adds the bonus to the reward. Bonuses that need it
    (rnd) have it whatever this says""")
    gamma_int: float = _param(0.99, """
    discount of the bonus's return on the two-stream path""")
    ext_coef: float = _param(2.0, """
    weight of the extrinsic advantage on the two-stream path (RND's 2)""")
    int_coef: float = _param(1.0, """
    weight of the bonus's advantage on the two-stream path (RND's 1); with --algo dqn, the weight of RND's scaled
    bonus in the stored reward""")
    rnd_update_proportion: float = _param(1.0, """
    --unsup rnd: the share of each batch's steps the predictor trains on, each step kept with this probability
    and the networks run on the kept ones alone (RND's code's proportion_of_exp_used_for_predictor_update, 1 by
    default there too)""")
    rnd_warm_up_steps: int = _param(5000, """
    random steps each worker of a new run plays before training to seed RND's observation statistics (a resumed
    run has them in its checkpoint)""")
    policy_no_backprop_steps: int = _param(0, """
    the policy is not updated until the global step passes this (the predictor learns from the start)""")
    lstm_size: int = _param(256, """
    units of the policy LSTM""")
    mlp_units: int = _param(64, """
    units of each of the two layers of the mlp head, A3C's and the DQN's trunk on vector observations (SAC's
    layers are its own, 256 x 256)""")
    max_global_steps: int = _param(100_000_000, """
    training stops when the global step (environment steps over all workers) reaches this""")
    checkpoint_secs: float = _param(30.0, """
    seconds between checkpoints of the global variables, written by the chief (worker 0)""")
    summary_every_updates: int = _param(11, """
    a worker writes model/* TensorBoard summaries every this many updates""")
    envs_per_worker: int = _param(1, """
    environments each worker plays at once, in lockstep: one session.run acts for all of them and one update
    trains on their [K, rollout_maxlen] batch; 1 is the original algorithm""")
    queue_size: int = _param(5, """
    rollouts the runner thread may queue ahead of the trainer (IMPALA: learner batches its queue holds)""")
    acting_copy: bool = _param(False, """
    on the cluster, A3C's runner thread and Ape-X's actors act on a copy of their network in a plain in-process
    session, loaded with the weights each sync brings, instead of through the cluster's runtime, whose every
    session.run costs more (docs/history/2026-11-24-speed.md). On in the DQN presets. Off for A3C: its runner then
    outran the trainer and queued queue_size batches acted with older weights, and CartPole collapsed to one action in
    3 of 3 seeds""")
    # ---- value-based learners (--algo dqn): Double DQN, n-step returns, prioritized replay
    replay_capacity: int = _param(100_000, """
    transitions the replay holds; the oldest make room (FIFO)""")
    batch_size: int = _param(32, """
    transitions per learner update (IMPALA: unrolls of rollout_maxlen + 1 frames)""")
    n_step: int = _param(3, """
    steps of reward in a transition's return before it bootstraps from the target network (Ape-X's 3)""")
    relabel_bonus: bool = _param(False, """
    with a curiosity bonus and a replay learner, each replayed batch's bonus comes from the predictor of now,
    not the one that acted: a stored bonus keeps the size it had when its state was new, so the first
    episodes' (before the predictor learned anything) outweigh every later one and pull the learner back to
    where it began. The bonus is then int_coef x the raw bonus over its root mean square in recent batches (for
    every bonus: ICM's prediction_beta is not used). Needs n_step=1 (an n-step return holds bonuses that cannot be
    recomputed)""")
    target_update_period: int = _param(2500, """
    learner updates between copies of the online network into the target network (a hard update)""")
    learning_starts: int = _param(50_000, """
    transitions in the replay before the learner's first update""")
    replay_ratio: float = _param(8.0, """
    transitions sampled per transition inserted: one update of batch_size every batch_size / replay_ratio
    environment steps (Nature DQN: a batch of 32 every 4 steps, 8)""")
    prioritized: bool = _param(True, """
    sample in proportion to |TD error|^priority_alpha (Schaul et al. 2016, proportional); off: uniformly""")
    priority_alpha: float = _param(0.6, """
    how much the priorities count: 0 is uniform""")
    priority_beta: float = _param(0.4, """
    the importance-sampling exponent at the start, annealed to 1 at max_global_steps""")
    dueling: bool = _param(False, """
    the Q head as a state value plus advantages less their mean (Wang et al. 2016)""")
    anneal_lr: bool = _param(False, """
    the DQN's and IMPALA's learning rate falls linearly from learning_rate at step 0 to 0 at anneal_steps
    (cleanrl's anneal_lr, torchbeast's schedule), so that the late steps cannot undo a policy already found""")
    anneal_steps: int = _param(0, """
    with anneal_lr, the step at which the rate reaches 0 (0: max_global_steps). torchbeast's schedule runs over its
    total_frames whatever a run's length (RIDE's MiniGrid runs: 30M), so a shorter run ends at a higher rate""")
    q_grad_clip: float = _param(1.0, """
    every element of the DQN's gradient is clamped to [-x, x] (on top of the Huber loss)""")
    epsilon_start: float = _param(1.0, """
    exploration of the one-process DQN: epsilon-greedy from this ...""")
    epsilon_final: float = _param(0.01, """
    ... down to this ...""")
    epsilon_decay_steps: int = _param(250_000, """
    ... linearly over this many environment steps""")
    eval_epsilon: float = _param(0.001, """
    epsilon of the DQN's evaluations (greedy but for a rare random action, as Mnih et al. 2015's 0.05 and
    Ape-X's 0.001, so a policy cannot loop forever)""")
    seed: int = _param(0, """
    base random seed: worker i seeds its graph and numpy with seed + i, and its k-th of K environments with
    seed + i x K + k, so that no two environments of a run share a seed""")

    def validate(self):
        """Raise ConfigError naming the first field whose value cannot work."""
        checks = [
            ("gamma", 0.0 <= self.gamma <= 1.0, "must lie in [0, 1]"),
            ("gae_lambda", 0.0 <= self.gae_lambda <= 1.0, "must lie in [0, 1]"),
            ("entropy_beta", self.entropy_beta >= 0.0, "must be >= 0"),
            ("value_loss_wt", self.value_loss_wt >= 0.0, "must be >= 0"),
            ("rollout_maxlen", self.rollout_maxlen >= 1, "must be >= 1"),
            ("grad_norm_clip", self.grad_norm_clip > 0.0, "must be > 0"),
            ("reward_scale", self.reward_scale > 0.0, "must be > 0"),
            ("reward_clip", self.reward_clip > 0.0, "must be > 0"),
            ("learning_rate", self.learning_rate > 0.0, "must be > 0"),
            ("adam_epsilon", self.adam_epsilon > 0.0, "must be > 0"),
            ("predictor_adam_epsilon", self.predictor_adam_epsilon > 0.0, "must be > 0"),
            ("prediction_beta", self.prediction_beta >= 0.0, "must be >= 0"),
            ("prediction_lr_scale", self.prediction_lr_scale > 0.0, "must be > 0"),
            ("forward_loss_wt", 0.0 <= self.forward_loss_wt <= 1.0, "must lie in [0, 1]"),
            ("ride_forward_share", 0.0 <= self.ride_forward_share <= 1.0, "must lie in [0, 1]"),
            ("gamma_int", 0.0 <= self.gamma_int <= 1.0, "must lie in [0, 1]"),
            ("ext_coef", self.ext_coef >= 0.0, "must be >= 0"),
            ("int_coef", self.int_coef >= 0.0, "must be >= 0"),
            ("rnd_update_proportion", 0.0 < self.rnd_update_proportion <= 1.0, "must lie in (0, 1]"),
            ("rnd_warm_up_steps", self.rnd_warm_up_steps >= 0, "must be >= 0"),
            ("policy_no_backprop_steps", self.policy_no_backprop_steps >= 0, "must be >= 0"),
            ("lstm_size", self.lstm_size >= 1, "must be >= 1"),
            ("mlp_units", self.mlp_units >= 1, "must be >= 1"),
            ("max_global_steps", self.max_global_steps >= 1, "must be >= 1"),
            ("anneal_steps", self.anneal_steps >= 0, "must be >= 0"),
            ("checkpoint_secs", self.checkpoint_secs > 0.0, "must be > 0"),
            ("summary_every_updates", self.summary_every_updates >= 1, "must be >= 1"),
            ("envs_per_worker", self.envs_per_worker >= 1, "must be >= 1"),
            ("queue_size", self.queue_size >= 1, "must be >= 1"),
            ("replay_capacity", self.replay_capacity >= 1, "must be >= 1"),
            ("batch_size", 1 <= self.batch_size <= self.replay_capacity, "must lie in [1, replay_capacity]"),
            ("n_step", self.n_step >= 1, "must be >= 1"),
            ("target_update_period", self.target_update_period >= 1, "must be >= 1"),
            ("learning_starts", self.learning_starts >= self.batch_size, "must be >= batch_size"),
            ("replay_ratio", self.replay_ratio > 0.0, "must be > 0"),
            ("priority_alpha", self.priority_alpha >= 0.0, "must be >= 0"),
            ("priority_beta", 0.0 <= self.priority_beta <= 1.0, "must lie in [0, 1]"),
            ("q_grad_clip", self.q_grad_clip > 0.0, "must be > 0"),
            ("epsilon_start", 0.0 <= self.epsilon_start <= 1.0, "must lie in [0, 1]"),
            ("epsilon_final", 0.0 <= self.epsilon_final <= 1.0, "must lie in [0, 1]"),
            ("epsilon_decay_steps", self.epsilon_decay_steps >= 1, "must be >= 1"),
            ("eval_epsilon", 0.0 <= self.eval_epsilon <= 1.0, "must lie in [0, 1]"),
            ("seed", self.seed >= 0, "must be >= 0"),
        ]
        checks += [(parameter.name, parameter.problem(getattr(self, parameter.name)) is None,
                    parameter.problem(getattr(self, parameter.name))) for parameter in algorithms.own_hyperparameters()]
        for name, ok, why in checks:
            if not ok:
                raise ConfigError(f"hyper-parameter {name}={getattr(self, name)!r} {why}")
        if self.relabel_bonus and self.n_step != 1:
            raise ConfigError(f"hyper-parameter relabel_bonus=True needs n_step=1 (it is {self.n_step})")
        return self

    def to_dict(self):
        return dataclasses.asdict(self)


# Every number the learners use: the shared fields, then each algorithm's own (its row's Hyperparameter).
Config = dataclasses.make_dataclass(
    "Config", [(parameter.name, type(parameter.default), _param(parameter.default, f"--algo {row.name}: {parameter.doc}"))
               for row in algorithms.ALGORITHMS.values() for parameter in row.own_hyperparameters],
    bases=(SharedConfig,), frozen=True)
Config.__module__ = __name__  # make_dataclass's own argument for it is Python 3.12's
Config.__doc__ = "Every number the learners use: the shared hyper-parameters and each algorithm's own."


HELP = {f.name: f.metadata["help"] for f in fields(Config)}


def _parse_value(name, text, current):
    """Convert `text` to the type of the field's default; bools accept true/false/1/0."""
    kind = type(current)
    try:
        if kind is bool:
            lowered = text.strip().lower()
            if lowered not in {"true", "false", "1", "0"}:
                raise ValueError(text)
            return lowered in {"true", "1"}
        if kind is int:
            number = float(text)  # accepts 1e6 as well as 1000000
            if not number.is_integer():
                raise ValueError(text)
            return int(number)
        return kind(text)
    except ValueError:
        raise ConfigError(f"--set {name}={text}: expected a {kind.__name__}") from None


def override_name(item):
    """The hyper-parameter that a `--set name=value` item names."""
    return item.partition("=")[0].strip()


def apply_overrides(config, overrides):
    """Return `config` with `["name=value", ...]` applied and validated; unknown names raise ConfigError."""
    known = {f.name: f for f in fields(Config)}
    changes = {}
    for item in overrides or []:
        _, sep, text = item.partition("=")
        name = override_name(item)
        if not sep or not name:
            raise ConfigError(f"--set expects name=value, got {item!r}")
        if name not in known:
            raise ConfigError(f"--set {name}: unknown hyper-parameter; known: {', '.join(sorted(known))}")
        changes[name] = _parse_value(name, text, getattr(config, name))
    return dataclasses.replace(config, **changes).validate()


# Named sets of overrides, each of its algorithm's row (algorithms.py, beside the measurements that chose them). `auto`
# picks one from the environment's observations; `--set` applies on top.
PRESETS = algorithms.named_presets()
PRESET_CHOICES = ("auto",) + tuple(PRESETS)


def resolve_preset(preset, observation_kind, family="gymnasium", unsup="none", algo=algorithms.DEFAULT):
    """`auto` means the preset the algorithm's row names for these observations (algorithms.Algorithm.preset): for
    A3C, `mario` for Mario, `doom` for ViZDoom, `atari` for Atari, `classic` for vector observations (`classic_curiosity` with a
    curiosity bonus) and `paper` (the original's constants) for other images; for DQN, `dqn_classic` for vectors
    (`dqn_classic_curiosity` with a bonus) and `dqn` for images; for SAC, `sac_classic` and `sac`."""
    if preset != "auto":
        return preset
    return algorithms.get(algo).preset(observation_kind, family, unsup)


def config_from_overrides(overrides, preset="paper"):
    """The Config of a preset with `--set` overrides applied on top."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESET_CHOICES)}")
    preset_items = [f"{name}={value}" for name, value in PRESETS[preset].items()]
    return apply_overrides(Config(), preset_items + list(overrides or []))


# --unsup: A3C alone, the ICM, the pixel baselines, RND, an ensemble's disagreement, the memory bonuses
CURIOSITY_CHOICES = ("none", "action", "state", "stateAenc", "rnd", "disagreement", "e3b", "ride", "ngu", "ngu_rnd",
                     "counts")
PIXEL_CURIOSITY = ("state", "stateAenc")  # these predict images with the universe head
# bonuses weighed by int_coef, whose scaler never reads prediction_beta (curiosity.ReturnScaler): RND's
INT_COEF_BONUSES = ("rnd",)
# the memory bonuses, whose scaler reads normalise_bonus (curiosity.MemoryScaler); the others ignore it
NORMALISED_BONUSES = ("e3b", "ride", "ngu", "ngu_rnd", "counts")
HEADS = ("universe", "nips", "nature", "doom", "minigrid", "mlp")
# Evaluations (train.py --eval-every, the Doom study's report) begin each episode with 0 to 30 uniformly random
# actions, as Mnih et al. (2015) began theirs with up to 30 no-ops (not every game here has a no-op): a greedy policy
# in a deterministic engine from a fixed start (Doom's sparse tasks, Mario, Atari's v4 ids) plays one episode over
# and over, so N greedy episodes would count one trajectory N times.
EVAL_RANDOM_START = 30


# ---------------------------------------------------------------- the run's flags
# The flags that the launcher takes and hands on to every process of the run are written once, here: train.py and
# worker.py build their parsers from this table, the launcher builds the workers' command lines from it, and the
# worker records it in config.json.

@dataclass(frozen=True)
class RunFlag:
    name: str  # the argparse dest, and the key in config.json's "run"
    spellings: tuple  # the first is the one handed on; the others are the original's (camelCase) and short ones
    help: str
    default: object = None
    choices: tuple = None
    kind: str = "value"  # "value", "switch" (on when given) or "list" (repeatable)
    always: bool = False  # handed on even when it is the default, so that every command line says it
    recorded: bool = False  # written into config.json's "run"
    identity: bool = False  # what makes the checkpoint meaningful: a relaunch must agree on it
    type: object = None  # argparse's type of a value flag (str when None)



RUN_FLAGS = (
    RunFlag("algo", ("--algo",), "the learner: " + "; ".join(f"{row.name}, {row.title}"
                                                             for row in algorithms.ALGORITHMS.values()),
            default=algorithms.DEFAULT, choices=algorithms.NAMES, recorded=True, identity=True),
    RunFlag("env_id", ("--env-id", "-e"), "environment id, doom being the paper's MyWayHome", default="doom",
            always=True, recorded=True, identity=True),
    RunFlag("env_wrap", ("--env-wrap", "--envWrap"), "the paper's preprocessing and reward clipping", kind="switch",
            recorded=True, identity=True),
    RunFlag("design_head", ("--design-head", "--designHead"), "network trunk (default: mlp for vector "
            "observations, minigrid for MiniGrid's, universe for other images)", choices=HEADS, recorded=True,
            identity=True),
    RunFlag("unsup", ("--unsup",), "curiosity: none (A3C), action (ICM), state or stateAenc (pixel-prediction "
            "baselines), rnd (random network distillation), disagreement (an ensemble of forward models), e3b "
            "(elliptical episodic bonus), ride (impact over the episode's count), ngu (episodic nearest neighbours), "
            "ngu_rnd (ngu modulated by RND's lifelong novelty), "
            "counts (SimHash pseudo-counts)", default="none", choices=CURIOSITY_CHOICES, recorded=True,
            identity=True),
    RunFlag("no_reward", ("--no-reward", "--noReward"), "extrinsic reward forced to 0", kind="switch",
            recorded=True),
    RunFlag("no_life_reward", ("--no-life-reward", "--noLifeReward"), "negative extrinsic rewards clipped to 0",
            kind="switch", recorded=True),
    RunFlag("visualise", ("--visualise",), "render the environment (needs a display)", kind="switch"),
    RunFlag("preset", ("--preset",), "named hyper-parameter set of constants.py; auto: mario for Mario "
            "(mario_ride with RIDE), doom for ViZDoom (doom_<bonus> for a bonus with its own), atari for Atari, "
            "minigrid for MiniGrid (minigrid_<bonus>), classic for vector observations (classic_curiosity with a "
            "bonus), paper otherwise; "
            "with --algo dqn or sac: dqn_classic (dqn_classic_curiosity with a bonus) or sac_classic for vectors, dqn "
            "or sac for images; with --algo impala: impala_doom (impala_doom_<bonus>) for ViZDoom, impala_minigrid "
            "(impala_minigrid_<bonus>) for MiniGrid, impala_classic for vectors, impala for images",
            default="auto", choices=PRESET_CHOICES),
    RunFlag("pretrain", ("--pretrain",), "start a new run from another run's trainable weights (its log dir or a "
            "checkpoint); the global step restarts at 0"),
    RunFlag("prefill_random", ("--prefill-random",), "--algo dqn or sac: a new run first plays this many episodes of "
            "uniformly random actions into its replay and train_episodes/", default=0, type=int),
    RunFlag("threads", ("--threads",), "one process (--num-workers 0), or a cluster's learner: TensorFlow's threads (intra- and inter-op); 0: "
            "its default, one per core (A3C: a cluster worker's, 1 and 2; a learner: the cores its actors leave, one each). Runs that share the cores run faster with a share each (2 runs on 2 cores: "
            "--threads 1, docs/history/2026-11-25-dqn.md)", default=0, type=int),
    RunFlag("restore_include", ("--restore-include",), "with --pretrain: restore only the variables whose names "
            "match this regular expression (e.g. '^actor/')"),
    RunFlag("restore_exclude", ("--restore-exclude",), "with --pretrain: leave the variables whose names match this "
            "regular expression fresh (e.g. 'critic|target')"),
    RunFlag("overrides", ("--set",), "override a hyper-parameter of constants.py (repeatable); see "
            "train.py --help-config", kind="list"),
)
RUN_FLAG_NAMES = tuple(flag.name for flag in RUN_FLAGS)
# What a log directory's run is: a relaunch must agree on these, or the checkpoint cannot be restored.
RUN_IDENTITY_KEYS = tuple(flag.name for flag in RUN_FLAGS if flag.identity)


def add_run_flags(parser, more_help=None):
    """The run's flags on an argparse parser; `more_help` {name: text} adds to a flag's help."""
    for flag in RUN_FLAGS:
        options = {"dest": flag.name, "help": flag.help + (more_help or {}).get(flag.name, "")}
        if flag.kind == "switch":
            options["action"] = "store_true"
        elif flag.kind == "list":
            options.update(action="append", default=[], metavar="NAME=VALUE")
        else:
            options.update(default=flag.default, choices=flag.choices)
            if flag.type is not None:
                options["type"] = flag.type
        parser.add_argument(*flag.spellings, **options)


def run_flag_values(args):
    """{name: value} of the run's flags in parsed arguments."""
    return {name: getattr(args, name) for name in RUN_FLAG_NAMES}


def run_flag_argv(values):
    """The command-line flags that hand `values` ({name: value}, any of the run's flags) on to a process; a
    flag at its default is left out unless it is always said."""
    unknown = set(values) - set(RUN_FLAG_NAMES)
    if unknown:
        raise TypeError(f"not a run flag: {', '.join(sorted(unknown))}")
    argv = []
    for flag in RUN_FLAGS:
        value = values.get(flag.name, [] if flag.kind == "list" else flag.default)
        if flag.kind == "switch":
            argv += [flag.spellings[0]] if value else []
        elif flag.kind == "list":
            argv += [part for item in value for part in (flag.spellings[0], item)]
        elif value is not None and (flag.always or value != flag.default):
            argv += [flag.spellings[0], str(value)]
    return argv


def recorded_run_flags(args):
    """The run's flags that config.json records as what the run is."""
    return {flag.name: getattr(args, flag.name) for flag in RUN_FLAGS if flag.recorded}

def read_run_config(log_dir):
    """The `config.json` of an earlier run in `log_dir`, or None if there is none."""
    path = os.path.join(log_dir, logdir.CONFIG)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path} is unreadable ({error}); move it away or use another --log-dir") from None


def relaunch_config(saved, overrides, preset="auto"):
    """The Config of a relaunch into a log directory whose `config.json` is `saved`: the saved hyper-parameters
    (the run's truth, whatever the defaults have become since), with a newly named preset and this launch's
    `--set` on top; and what that changes, {name: (before, after)}. Fields newer than the saved run take their
    defaults and are not changes."""
    known = {f.name for f in fields(Config)}
    base = dataclasses.replace(Config(), **{name: value for name, value in saved["hyperparameters"].items()
                                            if name in known})
    items = [] if preset in ("auto", saved.get("preset")) else [f"{n}={v}" for n, v in PRESETS[preset].items()]
    config = apply_overrides(base, items + list(overrides or []))
    before = base.to_dict()
    return config, {name: (before[name], value) for name, value in config.to_dict().items() if value != before[name]}


# Fields that steer the run, not what it learns: a relaunch may change them without being asked (a longer step
# budget is the usual reason to relaunch), and the change is recorded like any other.
RUN_CONTROLS = ("max_global_steps", "checkpoint_secs", "summary_every_updates", "acting_copy")


def guarded(changes):
    """The changes that need --allow-config-change: all but those of RUN_CONTROLS."""
    return {name: change for name, change in changes.items() if name not in RUN_CONTROLS}


# Fields that change the network's shapes: the checkpoint cannot be resumed with another value.
SHAPE_FIELDS = ("lstm_size", "mlp_units")


def check_relaunch(log_dir, overrides, preset, allow_change):
    """What a relaunch into `log_dir` resumes with: (Config, applied, kept), the changes applied and those not
    applied ({name: (saved, asked)}); (None, {}, {}) for a new run. Changes to RUN_CONTROLS are applied; others
    only with `allow_change` (`--allow-config-change`), else the saved value is kept. ConfigError for a change
    of SHAPE_FIELDS, which the checkpoint cannot survive."""
    saved = read_run_config(log_dir)
    if not saved or "hyperparameters" not in saved:
        return None, {}, {}
    config, changes = relaunch_config(saved, overrides, preset)
    for name in SHAPE_FIELDS:
        if name in changes:
            raise ConfigError(f"{name} {changes[name][0]!r} -> {changes[name][1]!r} changes the network's shapes: "
                              f"the checkpoint in {log_dir} cannot be resumed with it; use another --log-dir")
    kept = {} if allow_change else guarded(changes)
    if kept:
        config = dataclasses.replace(config, **{name: before for name, (before, _) in kept.items()})
    return config, {name: change for name, change in changes.items() if name not in kept}, kept


def record_config_change(log_dir, config, changes):
    """Apply a relaunch's allowed `changes` to `<log-dir>/config.json`, keeping their history under "changes"."""
    record = read_run_config(log_dir)
    record["hyperparameters"] = config.to_dict()
    record.setdefault("changes", []).append({
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "values": {name: [before, after] for name, (before, after) in changes.items()}})
    logdir.write_json_atomically(os.path.join(log_dir, logdir.CONFIG), record)


def check_same_run(log_dir, run_flags):
    """Raise ConfigError when `log_dir` holds a run whose identity (env, head, curiosity) differs."""
    previous = read_run_config(log_dir)
    if previous is None:
        return
    before = previous.get("run", {})
    for key in RUN_IDENTITY_KEYS:
        if key in before and before[key] != run_flags.get(key):
            raise ConfigError(
                f"{log_dir} holds a run with {key}={before[key]!r}, not {run_flags.get(key)!r}: "
                f"its checkpoint cannot be resumed with these flags; use another --log-dir")
