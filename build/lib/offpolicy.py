"""What the replay learners (`--algo dqn`, `--algo sac`) share: observations as the replay stores them, acting into
n-step transitions, a curiosity bonus added to the stored reward, the learn step, the loop's two halves and the
one-process run.

    play (Player):    K environments in lockstep (Acting) -> the actions chosen -> env.step -> replay.NStepBuffer
                      (+ the bonus) -> the transitions
    learn (Learning): the transitions -> replay.PrioritizedReplay; at the replay ratio (updates_due):
                      replay.PrefetchingSampler -> agent.train -> new priorities -> the bonus's predictor on the
                      same batch -> agent.after_update

The two halves are the same code in both placements: an Ape-X actor (apex.Actor) plays with a Player and sends its
transitions over TensorFlow's queue to the learner (apex.Learner), whose Learning takes them in; the one-process
run (LocalRun) hands each step's transitions from its Player to its Learning by a direct call.

A learner (dqn.DQN, sac.SAC) gives LocalRun and learn_step: `config`; the variables `global_step` and `updates`;
`action_shape`, `action_dtype` (how the replay keeps its actions); `initialise(session)` (a new run's targets);
`explore(session, observations, step, rng)` -> (actions for the environments, actions for the replay);
`random_actions(count, rng)` and `evaluation_actions(session, observations, rng)` -> the same, of uniformly random
actions and of the agent's evaluation; `stored_actions(actions)`: actions as the environment took them, as the
replay keeps them; `train(session, batch, weights)` -> ({tag: value}, |TD errors|);
`after_update(session, updates)`; `exploration(step)` -> {tag: value} of its exploration schedule.

`python train.py --algo dqn --num-workers 0 --env-id CartPole-v1` runs it all in one process (`LocalRun`), with a
progress bar, an evaluation every --eval-every steps (evaluation.py's: a row of <log-dir>/eval.csv, rewards.txt its
view, the best checkpoint in best/), a checkpoint per evaluation, the episodes in episodes_0.csv and
train_episodes/ and TensorBoard events in the log directory. The replay is not in the checkpoint: a resumed run
refills it from train_episodes/ (LocalRun.refill).
"""
import logging
import os
import time
import types

import numpy as np
import tensorflow as tf

import cluster as roles
import curiosity
import envs
import evaluation
import logdir
import model
import replay
import algorithms
from replay import env_action, from_stored, stored_dtype, to_stored
from acting import EpisodeLogger, EpisodeTally
from constants import UsageError
import runs
import sessions
from sessions import DeferredInterrupt, Heartbeat, Timings, check_checkpoint, local_session_config, pretrain_init

tf1 = tf.compat.v1
logger = logging.getLogger("offpolicy")

DEFAULT_EVAL_EVERY = 10_000  # environment steps between the one-process mode's evaluations
STATS_WINDOW = 100  # episodes in the progress bar's mean return
EVAL_MAX_STEPS = 100_000  # an evaluation episode's end, where the game's time limit has not come first
BONUS_RMS_DECAY = 0.99  # relabel_bonus: the running mean square of the bonus remembers about 100 batches


def build_learner(algo, observation_shape, action_space, config, head, dtype):
    """The replay learner of `algo` (its row's entry point) in the default graph."""
    return algorithms.get(algo).entry("learner")(observation_shape, action_space, config, head, dtype)


def replay_status(memory, updates, started, inserted_before=0):
    """The status view's replay figures (status.REPLAY_FIELDS): size, transitions inserted (but the first
    `inserted_before`: a resumed one-process run's refill) and sampled, inserts/s and samples/s since `started`
    (this process's start), the sample:insert ratio, the learner's updates/s."""
    elapsed = max(time.time() - started, 1e-6)
    inserted, sampled = memory.inserted - inserted_before, memory.sampled
    return {"replay_size": len(memory), "inserted": inserted, "sampled": sampled,
            "inserts_per_sec": inserted / elapsed, "samples_per_sec": sampled / elapsed,
            "sample_insert_ratio": sampled / max(inserted, 1), "updates_per_sec": updates / elapsed}


def updates_due(inserted, done, config):
    """Learner updates owed after `inserted` transitions, `done` of them made: the replay ratio (transitions
    sampled per transition inserted) holds on average, counted from the warm-up's end."""
    if inserted < config.learning_starts:
        return 0
    owed = int((inserted - config.learning_starts) * config.replay_ratio / config.batch_size) + 1
    return max(owed - done, 0)


class Acting:
    """K environments in lockstep, each feeding its n-step buffer: the acting of the one-process mode and of each
    Ape-X actor. Rewards are scaled by reward_scale into the transitions, the episodes' own sums are kept too."""

    def __init__(self, envs, config, dtype, seed, episodes_dir=None):
        """`episodes_dir`: each finished episode is written there too (logdir.write_episode)."""
        self.envs, self.config, self.dtype, self.episodes_dir = envs, config, dtype, episodes_dir
        for index, env in enumerate(envs):
            env.action_space.seed(seed + index)
        # each environment's observation as the replay stores it, converted once: the actor acts on these too
        self.stored = list(to_stored([env.reset(seed=seed + index)[0] for index, env in enumerate(envs)], dtype))
        self.tallies = [EpisodeTally() for _ in envs]
        self.n_steps = [replay.NStepBuffer(config.n_step, config.gamma) for _ in envs]
        self.records = [new_record(observation) for observation in self.stored]  # each environment's episode
        self.beginning = [True] * len(envs)  # the next step is its episode's first: the bonus is told before it

    def stored_observations(self):
        return np.asarray(self.stored)

    def step(self, actions, bonus=None, stored_actions=None):
        """Every environment steps once with its action of `actions` (ints, or vectors for a continuous space), kept
        in the transitions as `stored_actions` (by default the same); (the transitions completed, as a
        replay.Transition of arrays, or None; the finished episodes' EpisodeStats). `bonus`: a StepBonus, or None."""
        stored, transitions, finished = self.stored_observations(), [], []
        stored_actions = actions if stored_actions is None else stored_actions
        results = [env.step(env_action(action)) for env, action in zip(self.envs, actions)]
        following = to_stored([result[0] for result in results], self.dtype)
        ended = [terminated or truncated for _, _, terminated, truncated, _ in results]
        if bonus is None:
            bonuses = stored_bonuses = np.zeros(len(self.envs))
        else:  # told where each environment's episodes begin and end, in step order
            for k in np.flatnonzero(self.beginning):
                bonus.episode_begins(int(k))
            bonuses = bonus(stored, following, stored_actions, [result[4].get("state_key") for result in results])
            for k in np.flatnonzero(ended):
                bonus.episode_ends(int(k))
            stored_bonuses = bonuses if bonus.stored else np.zeros(len(self.envs))
        self.beginning = ended
        for k, (env, (_, reward, terminated, truncated, info)) in enumerate(zip(self.envs, results)):
            tally = self.tallies[k]
            tally.reward += reward
            tally.env_reward += info.get("env_reward", reward)
            tally.bonus += float(bonuses[k])
            tally.length += 1
            tally.observe(info)
            transitions += self.n_steps[k].add(stored[k], stored_actions[k],
                                               reward * self.config.reward_scale + stored_bonuses[k], following[k],
                                               terminated, truncated)
            self.stored[k] = following[k]
            if self.episodes_dir:  # kept only to be written
                record_step(self.records[k], following[k], stored_actions[k], reward, terminated)
            if terminated or truncated:
                finished.append(tally.stats(truncated=not terminated))
                if self.episodes_dir:
                    logdir.write_episode(self.episodes_dir, episode_arrays(self.records[k]))
                self.stored[k] = to_stored([env.reset()[0]], self.dtype)[0]
                self.tallies[k] = EpisodeTally()
                self.records[k] = new_record(self.stored[k])
        return as_columns(transitions), finished

    def close(self):
        for env in self.envs:
            env.close()


def new_record(observation):
    """An episode's record as its reset leaves it: the observation, no action yet (`episode_arrays` adds its zero)."""
    return {"observation": [observation], "action": [], "reward": [0.0], "discount": [1.0]}


def record_step(record, observation, action, reward, terminated):
    """One step into an episode's record: the observation it led to, the action as the replay keeps it, the reward,
    the discount (0 where it terminated the episode)."""
    for key, value in zip(logdir.EPISODE_KEYS, (observation, action, reward, 0.0 if terminated else 1.0)):
        record[key].append(value)


def as_columns(transitions):
    """A list of replay.Transition as one replay.Transition of arrays, or None for none."""
    return replay.Transition(*(np.array(list(column)) for column in zip(*transitions))) if transitions else None


def episode_arrays(record):
    """A record's arrays as logdir.write_episode takes them: the first row's action zero, as PlaNet's."""
    actions = np.asarray(record["action"])
    return {"observation": np.asarray(record["observation"]),
            "action": np.concatenate([np.zeros_like(actions[:1]), actions]),
            "reward": np.asarray(record["reward"], np.float32), "discount": np.asarray(record["discount"], np.float32)}


def transitions_of(episodes, config):
    """The n-step transitions of stored episodes (logdir.read_episodes), as Acting makes them while it plays, the
    rewards scaled by reward_scale (no curiosity bonus: it is not stored); a replay.Transition of arrays, or None."""
    transitions = []
    for episode in episodes:
        buffer, steps = replay.NStepBuffer(config.n_step, config.gamma), len(episode["reward"]) - 1
        for t in range(1, steps + 1):
            last = t == steps
            transitions += buffer.add(episode["observation"][t - 1], episode["action"][t],
                                      float(episode["reward"][t]) * config.reward_scale, episode["observation"][t],
                                      terminated=last and episode["discount"][t] == 0.0,
                                      truncated=last and episode["discount"][t] != 0.0)
    return as_columns(transitions)


class Curious:
    """A curiosity bonus of curiosity.py for DQN, in one stream: each step's reward is the bonus of the predictor at
    acting time, scaled as the bonus's runner side scales it (ICM and the pixel baselines: prediction_beta x the raw
    bonus; RND: the raw bonus over the running standard deviation of its discounted return, x int_coef), added to
    the stored reward; or, with relabel_bonus, to each replayed batch's returns by the predictor of the moment (the
    stored reward then holds none), int_coef x the raw bonus over its running root mean square. The predictor
    trains on every replayed batch's (s_t, a_t, s_t+1), by an Adam of its own; a bonus with running statistics
    (RND) merges the acted steps into them (ActingBonus)."""

    def __init__(self, unsup, observation_shape, num_actions, config, head, dtype):
        with tf1.variable_scope("curiosity"):
            self.module = curiosity.build(unsup, observation_shape, num_actions, head)
        self.config, self.dtype = config, dtype
        # a bonus read from a memory of the episode is the actor's, over the episode so far: a replayed transition
        # has no episode to relabel it from
        self.relabel = config.relabel_bonus and not self.module.reads_memory
        if config.relabel_bonus and not self.relabel:
            logger.info("--unsup %s: relabel_bonus does not apply; the bonus is stored as the actor computed it", unsup)
        self.weight = self.module.one_stream_weight(config)  # the bonus's own scaling, beyond its scaler's
        self.bonus_mean_square = None  # relabel: the replayed raw bonuses' squares, averaged over recent batches
        optimizer = tf1.train.AdamOptimizer(config.learning_rate, epsilon=config.adam_epsilon)
        self.train_op = optimizer.minimize(self.module.training_loss(config), var_list=self.module.var_list)
        self.summaries = self.module.summaries()
        self.merges = {}  # a module that acts -> the op merging what it is fed into the running statistics

    def track(self, module):
        """Build the op that merges the steps `module` (this bonus, or an actor's copy of it) is fed into this
        bonus's running statistics; call while building the graph."""
        self.merges[module] = self.module.update_statistics(module)

    def feed(self, observations, following, actions, module=None):
        module = module or self.module
        return module.feed(from_stored(observations, self.dtype), from_stored(following, self.dtype), actions)

    def acting_bonus(self, session, count, module=None):
        """The bonus function of an Acting of `count` environments, by this bonus or `module`, a copy of it."""
        return ActingBonus(self, session, module or self.module, count)

    def warm_up(self, session, envs, module=None):
        """Seed the running statistics from random steps, where the bonus has any and a new run has not yet."""
        self.module.warm_up(session, module or self.module, envs, self.config)

    def train(self, session, batch):
        """One step of the predictor on a replayed batch; (the batch, with relabel its returns plus each step's bonus
        by the predictor before this step; the summaries' values)."""
        relabel = self.relabel
        bonus_fetches = [self.module.bonus_per_step] if relabel else []
        # the bonus is the forward pass the train op's gradients are computed from: the values before the update
        _, values, *bonus = session.run([self.train_op, self.summaries, *bonus_fetches],
                                        self.feed(batch["observations"], batch["following"], batch["actions"]))
        if not relabel:
            return batch, values
        raw = np.asarray(bonus[0], np.float64)
        self.track_scale(raw)
        rewards = self.as_replayed(raw)
        values = {**values, "curiosity/replayed_bonus": float(np.mean(rewards))}
        return {**batch, "returns": batch["returns"] + rewards.astype(np.float32)}, values

    def track_scale(self, raw):
        """Fold a replayed batch's raw bonuses into their mean square, averaged over recent batches
        (BONUS_RMS_DECAY): a scale that forgets. RND's running deviation of its return keeps its first steps
        forever, when the untrained predictor's error is thousands of times what it is a few episodes later; over a
        run of tens of thousands of steps that start then weighs down every later bonus to nothing
        (MountainCarContinuous: docs/history/2026-11-25-sac.md)."""
        square = float(np.mean(raw ** 2))
        self.bonus_mean_square = square if self.bonus_mean_square is None else (
            BONUS_RMS_DECAY * self.bonus_mean_square + (1.0 - BONUS_RMS_DECAY) * square)

    def as_replayed(self, raw):
        """int_coef x raw bonuses over their running root mean square (raw before the first update): the relabelled
        bonus of a replayed batch, and what the episode log counts of each acted step."""
        scale = 1.0 if self.bonus_mean_square is None else np.sqrt(self.bonus_mean_square + curiosity.RND_EPSILON)
        return self.config.int_coef * np.asarray(raw, np.float64) / scale


class StepBonus:
    """What Acting.step asks of a bonus: `bonus(observations, next_observations, actions, keys)` -> [K] each step's
    curiosity reward (stored observations in; `keys`: the environments' keys of each s_t+1's whole state, info's
    state_key, or None); `episode_begins(k)` before the first step of environment k's episode
    and `episode_ends(k)` after its last; `stored`: the reward goes into the stored transition (else the learner adds
    it to each replayed batch). This one wraps a function of a step, with no use for episodes."""

    stored = True

    def __init__(self, function=None):
        self.function = function

    def __call__(self, observations, following, actions, keys=None):
        return self.function(observations, following, actions)

    def episode_begins(self, index):
        pass

    def episode_ends(self, index):
        pass


class ActingBonus(StepBonus):
    """Each step's curiosity rewards for an Acting (Acting.step's `bonus`): the scaler keeps the bonus's state per
    environment (RND's running return); the steps' s_t+1 and that return are merged into the statistics every
    STATISTICS_EVERY steps, in one session.run."""

    STATISTICS_EVERY = 32

    def __init__(self, curious, session, module, count):
        self.curious, self.session, self.module = curious, session, module
        self.scaler = module.scaler(curious.config, count)
        self.merge = curious.merges.get(module)
        self.pending = []  # (stored s_t+1 [K, ...], bonus returns [K]) of steps not merged yet

    def __call__(self, observations, following, actions, keys=None):
        """[K] the rewards of one step of the K environments, given as stored observations (with relabel_bonus,
        counted in the episode log only, as the learner would replay them now); `keys`: the environments' keys of
        each s_t+1's whole state (None where they report none)."""
        raw, *extra = self.session.run([self.module.bonus_per_step, *self.scaler.fetches],
                                       self.curious.feed(observations, following, actions, self.module))
        rewards, data = self.scaler.step(raw, extra, keys)
        if self.merge is not None:
            self.pending.append((following, data))
            if len(self.pending) >= self.STATISTICS_EVERY:
                self.flush()
        return self.curious.as_replayed(raw) if self.curious.relabel else self.curious.weight * rewards

    def episode_begins(self, index):
        self.scaler.episode_begins(index)

    def episode_ends(self, index):
        self.scaler.episode_ends(index)

    @property
    def stored(self):
        """Whether the bonus goes into the stored reward (else the learner adds it to each replayed batch)."""
        return not self.curious.relabel

    def flush(self):
        if self.merge is None or not self.pending:
            return
        frames = from_stored(np.concatenate([frames for frames, _ in self.pending]), self.curious.dtype)
        # update_feed reads the bonus returns as a rollout's bonus_data
        data = [data for _, data in self.pending if data is not None]  # none where the scaler keeps no return
        steps = types.SimpleNamespace(bonus_data=np.concatenate(data) if data else None)
        self.session.run(self.merge, {self.module.frames: frames, self.module.second: np.arange(len(frames)),
                                      **self.module.update_feed([steps])})
        self.pending = []


def learn_step(agent, memory, session, step, writer, updates, exploration=None, curious=None):
    """One update (the run's `updates`-th) of `agent`: sample, train, new priorities; the curiosity's predictor on
    the same batch; what the agent does after an update (DQN's target copy when due); summaries, with the
    `exploration` figures ({tag: value}) where one schedule explores. `memory`: the replay, or a
    replay.PrefetchingSampler of it, as the learners use."""
    config = agent.config
    beta = replay.beta_at(step, config.max_global_steps, config.priority_beta)
    slots, batch, weights = memory.sample(config.batch_size, beta)
    curiosity_values = {}
    if curious is not None:
        batch, curiosity_values = curious.train(session, batch)
    stats, td_errors = agent.train(session, batch, weights)
    memory.update_priorities(slots, td_errors)
    agent.after_update(session, updates)
    if updates % config.summary_every_updates == 0:
        summary = tf1.Summary()
        for tag, value in {**stats, "replay/beta": beta, "replay/size": len(memory), **curiosity_values,
                           **(exploration or {})}.items():
            summary.value.add(tag=tag, simple_value=value)
        writer.add_summary(summary, step)


class Player:
    """The actor's half of every replay learner's loop, as an Ape-X actor (apex.Actor) and in one process (LocalRun):
    one step of K environments in lockstep (Acting) with the actions of `choose(observations as stored, step)` ->
    (actions for the environments, actions for the replay), each step's bonus, the finished episodes handed to
    `on_episode`."""

    def __init__(self, acting, choose, on_episode, bonus=None, timings=None):
        self.acting, self.choose, self.on_episode, self.bonus = acting, choose, on_episode, bonus
        self.timings = timings or Timings()

    def step(self, step):
        """One step of every environment at global step `step`: (the transitions completed, as a replay.Transition
        of arrays, or None; the number of environments)."""
        with self.timings.phase("act"):
            actions, stored = self.choose(self.acting.stored_observations(), step)
        with self.timings.phase("env"):
            transitions, finished = self.acting.step(actions, self.bonus, stored)
        for stats in finished:
            self.on_episode(stats)
        return transitions, len(actions)


class Learning:
    """The learner's half of every replay learner's loop, fed by the cluster's queue (apex.Learner) or by direct
    calls (LocalRun): transitions into the replay, and the updates the replay ratio owes for them (learn_step).
    Counts this incarnation's `updates`; the run's count goes on from the checkpoint's (start)."""

    def __init__(self, agent, memory, writer, curious=None, timings=None):
        self.agent, self.memory, self.writer, self.curious = agent, memory, writer, curious
        self.sampler = replay.PrefetchingSampler(memory)  # the batches, drawn while the learner trains
        self.timings = timings or Timings()
        self.updates = 0  # this incarnation's
        self.updates_before = 0  # the run's before it: the `updates` variable as restored
        self.counted_from = 0  # transitions inserted before the replay ratio's count begins

    def start(self, session, counted_from=0):
        """Count on from the restored `updates`; the replay ratio counts the transitions inserted after the first
        `counted_from` (a resumed one-process run's refill but learning_starts of it: it trains on at once)."""
        self.updates_before, self.counted_from = int(session.run(self.agent.updates)), counted_from

    def add(self, transitions, priorities=None, following=None):
        """Transitions (replay.Transition's first five columns) into the replay, at `priorities` or the largest
        seen; `following`: their s_t+1, for the curiosity."""
        self.sampler.add(*transitions[:5], priorities=priorities, following=following)

    def owed(self):
        return updates_due(self.memory.inserted - self.counted_from, self.updates, self.agent.config)

    def train_due(self, session, step, stop=lambda: False, exploration=None, beat=None):
        """The updates owed, each at global step `step` (until `stop()`), with the `exploration(step)` figures in
        the summaries where one schedule explores; `beat()` after each; how many were made."""
        made = 0
        while not stop() and self.owed():
            with self.timings.phase("train"):
                self.updates += 1
                learn_step(self.agent, self.sampler, session, step, self.writer, self.updates_before + self.updates,
                           exploration(step) if exploration else None, self.curious)
            made += 1
            if beat is not None:
                beat()
        return made

    def close(self):
        self.sampler.close()


class EvaluationAgent:
    """A one-process run's learner as evaluation.play_episode's agent: its evaluation actions on the observation as
    the replay stores it; each episode recorded as the replay keeps it (`record`, for test_episodes/)."""

    def __init__(self, agent, session, dtype, rng):
        self.agent, self.session, self.dtype, self.rng = agent, session, dtype, rng
        self.record = None

    def reset(self):
        self.record = None  # begun at the episode's first observation, which act sees first

    def act(self, observation, greedy):
        stored = to_stored([observation], self.dtype)
        if self.record is None:
            self.record = new_record(stored[0])
        return env_action(self.agent.evaluation_actions(self.session, stored, self.rng)[0][0])

    def on_step(self, observation, action, reward, terminated):
        stored_action = self.agent.stored_actions(np.asarray([action]))[0]
        record_step(self.record, to_stored([observation], self.dtype)[0], stored_action, reward, terminated)

    def bonus(self, observation, next_observation, action):
        return 0.0  # the evaluation's figures are the game's

    def close(self):
        pass


class LocalProgress:
    """What the heartbeat (sessions.Heartbeat, status_local.json) shows of a one-process run: its step, updates,
    the time in each phase and the replay's figures."""

    def __init__(self, memory, step, inserted_before):
        self.memory, self.last_global_step, self.inserted_before = memory, step, inserted_before
        self.steps_trained = self.updates = self.skipped_updates = 0
        self.timings = Timings()
        self.started = time.time()

    def status(self):
        return replay_status(self.memory, self.updates, self.started, self.inserted_before)


class LocalRun:
    """Actor and learner of `algo` in one process: K environments in lockstep feed the replay; the learner keeps
    the replay ratio; evaluations, checkpoints, episode CSV, TensorBoard and a progress bar."""

    def __init__(self, log_dir, env_id, config, make_env, head=None, eval_every=DEFAULT_EVAL_EVERY,
                 eval_episodes=5, progress=True, unsup="none", algo="dqn", prefill_random=0, eval_frames=None):
        """`make_env(render_mode=None)` builds the run's environment; `eval_frames`: each evaluation's frames kept
        in eval_NNN/ (evaluation.FRAME_FORMATS), or None."""
        self.log_dir, self.env_id, self.config, self.make_env = log_dir, env_id, config, make_env
        self.eval_frames, self.eval_path = eval_frames, os.path.join(log_dir, logdir.EVAL)
        self.prefill_random = prefill_random
        self.episodes_dir = os.path.join(log_dir, logdir.TRAIN_EPISODES)
        self.eval_every, self.eval_episodes, self.progress = eval_every, eval_episodes, progress
        self.envs = [make_env() for _ in range(config.envs_per_worker)]
        space = self.envs[0].observation_space
        self.head = model.choose_head(space.shape, head)
        self.dtype = stored_dtype(space)
        sessions.seed_task(tf1, config.seed)
        action_space = self.envs[0].action_space
        self.agent = build_learner(algo, space.shape, action_space, config, self.head, self.dtype)
        self.curious = None if unsup == "none" else Curious(unsup, space.shape, curiosity.action_spec(action_space),
                                                            config, self.head, self.dtype)
        if self.curious is not None:
            self.curious.track(self.curious.module)
        self.memory = replay.PrioritizedReplay(config.replay_capacity, space.shape, self.dtype,
                                               config.priority_alpha, uniform=not config.prioritized,
                                               seed=config.seed, one_step=self.curious is not None,
                                               action_shape=self.agent.action_shape,
                                               action_dtype=self.agent.action_dtype)
        self.rng = np.random.default_rng(config.seed)
        self.saver = tf1.train.Saver(max_to_keep=3)
        self.train_dir = logdir.checkpoints_dir(log_dir)

    def restore_or_initialise(self, session, check_checkpoint, pretrain=None):
        """The run's checkpoint; else fresh variables, with `pretrain` (sessions.pretrain_init's arguments: source,
        include, exclude) restoring some of the trainable ones from another run first."""
        latest = check_checkpoint(tf1, self.train_dir, tf1.global_variables())
        if latest:
            self.saver.restore(session, latest)
            logger.info("resumed from %s at step %d%s", latest, session.run(self.agent.global_step),
                        " (--pretrain ignored: this run has its own checkpoint)" if pretrain else "")
            return
        session.run(tf1.global_variables_initializer())
        if pretrain:
            source, include, exclude = pretrain
            pretrain_init(tf1, source, tf1.trainable_variables(), include, exclude)(session)
        self.agent.initialise(session)  # the targets copy the online networks, restored or fresh

    def evaluate(self, session, interrupt, step):
        """An evaluation (evaluation.py's, as demo.py --watch makes a cluster's): eval_episodes episodes played as
        the agent evaluates (DQN: at eval_epsilon; SAC: the policy's mean) on an environment of its own, each
        begun with up to envs.evaluation_random_start random actions (on images but MiniGrid's) and written into
        test_episodes/, their frames into eval_NNN/ with --eval-frames; its summary (evaluation.summarise), or None
        when Ctrl-C cut it short."""
        env = self.make_env("rgb_array" if self.eval_frames else None)
        rng = np.random.default_rng([self.config.seed, step])  # its own: the training's draws stay as they were
        player = EvaluationAgent(self.agent, session, self.dtype, rng)
        random_start = envs.evaluation_random_start(self.env_id, env.observation_space)
        frames_dir = evaluation.frames_dir(self.log_dir, len(logdir.read_rows(self.eval_path)) + 1)
        episodes = []
        try:
            for index in range(1, self.eval_episodes + 1):
                episode, frames, _ = evaluation.play_episode(
                    env, player, True, rng, EVAL_MAX_STEPS, bool(self.eval_frames), False,
                    seed=self.config.seed + 10_000 + index - 1, random_start=random_start,
                    check_interrupt=interrupt.check, on_step=player.on_step)
                episodes.append(episode)
                logdir.write_episode(os.path.join(self.log_dir, logdir.TEST_EPISODES), episode_arrays(player.record))
                if self.eval_frames:
                    evaluation.write_frames(frames_dir, index, frames, self.eval_frames)
        except KeyboardInterrupt:
            return None
        finally:
            env.close()
        return evaluation.summarise(episodes)

    def run(self, session, check_checkpoint, pretrain=None):
        """Train to max_global_steps; the mean return of the last evaluation. Ctrl-C writes a checkpoint at the
        step reached, then raises KeyboardInterrupt."""
        with DeferredInterrupt() as interrupt:
            return self.play_and_learn(session, check_checkpoint, interrupt, pretrain)

    def play_and_learn(self, session, check_checkpoint, interrupt, pretrain=None):
        """The Ape-X actor's and learner's halves (Player, Learning) over direct calls: each step played goes into
        the replay, then the updates it owes are made; an evaluation every eval_every steps."""
        from tqdm import tqdm

        config, agent, count = self.config, self.agent, len(self.envs)
        self.restore_or_initialise(session, check_checkpoint, pretrain)
        writer = tf1.summary.FileWriter(logdir.events_dir(self.log_dir, 0), session.graph)
        evaluation_writer = tf1.summary.FileWriter(os.path.join(self.log_dir, logdir.EVAL_EVENTS))
        step = int(session.run(agent.global_step))
        episodes = EpisodeLogger(self.log_dir, 0, writer, lambda: step)
        episodes.resume_from(step)
        if self.curious is not None:
            self.curious.warm_up(session, self.envs)  # before Acting resets the environments
        loaded = self.refill(step)
        bonus = None if self.curious is None else self.curious.acting_bonus(session, count)
        recent, last_eval = [], None
        next_eval = (step // self.eval_every + 1) * self.eval_every
        prefill = self.prefill_random if step == 0 else 0  # a new run's random episodes
        if prefill:
            logger.info("prefill: the first %d episodes play uniformly random actions", prefill)

        def choose(observations, at_step):
            if episodes.episodes < prefill:
                return agent.random_actions(count, self.rng)
            return agent.explore(session, observations, at_step, self.rng)

        def on_episode(stats):
            episodes(stats)
            recent.append(stats.env_reward)
            del recent[:-STATS_WINDOW]

        # the replay's figures count what this process plays, not a resumed run's refill (the ratio counts on from
        # learning_starts of the refill: an update is due at once, then replay_ratio / batch_size per step played)
        progress = LocalProgress(self.memory, step, self.memory.inserted)
        acting = Acting(self.envs, config, self.dtype, config.seed, self.episodes_dir)
        player = Player(acting, choose, on_episode, bonus, progress.timings)
        learning = Learning(agent, self.memory, writer, self.curious, progress.timings)
        learning.start(session, counted_from=self.memory.inserted - min(loaded, config.learning_starts))
        heartbeat = Heartbeat(self.log_dir, 0, config.max_global_steps, job=roles.LOCAL.job)
        bar = tqdm(total=config.max_global_steps, initial=step, unit="step", disable=not self.progress,
                   dynamic_ncols=True)
        started = time.time()
        try:
            while step < config.max_global_steps:
                if interrupt.requested:  # Ctrl-C: what was learned since the last evaluation is kept
                    self.save(session, step, bonus)
                    raise KeyboardInterrupt
                transitions, played = player.step(step)
                if transitions:
                    learning.add(transitions, following=transitions.following)
                step += played
                learning.train_due(session, step, exploration=agent.exploration)
                progress.last_global_step, progress.updates = step, learning.updates
                progress.steps_trained += played
                heartbeat.beat(progress, episodes.episodes)
                if step >= next_eval or step >= config.max_global_steps:
                    summary = self.evaluate(session, interrupt, step)
                    if summary is None:
                        continue  # interrupted: the loop's first line saves and stops
                    last_eval = summary["mean_reward"]
                    checkpoint = self.save(session, step, bonus)
                    evaluation.keep(tf1, evaluation_writer, self.log_dir, step, summary, checkpoint)
                    next_eval += self.eval_every
                bar.update(played)
                if bar.n % 200 < played or step >= config.max_global_steps:
                    explored = {tag.split("/")[-1]: f"{value:.3f}" for tag, value in agent.exploration(step).items()}
                    updates_per_s = learning.updates / max(time.time() - started, 1e-9)
                    bar.set_postfix(episodes=episodes.episodes, mean_return=f"{np.mean(recent):.1f}" if recent else "-",
                                    eval="-" if last_eval is None else f"{last_eval:.1f}", **explored,
                                    updates_per_s=f"{updates_per_s:.0f}", refresh=False)
        finally:
            heartbeat.beat(progress, episodes.episodes, state="stopped", force=True)
            learning.close()
            bar.close()
            episodes.close()
            writer.close()
            evaluation_writer.close()
            acting.close()
        return last_eval

    def refill(self, step):
        """A resumed run's replay, from its stored episodes (the newest, up to the replay's capacity): it trains on
        at once; the number of transitions. A new run's replay starts empty."""
        if step == 0:
            return 0
        episodes = logdir.read_episodes(self.episodes_dir, self.config.replay_capacity)
        transitions = transitions_of(episodes, self.config)
        if transitions is None:
            logger.info("no stored episodes in %s: the replay refills by playing (%d transitions) before training",
                        self.episodes_dir, self.config.learning_starts)
            return 0
        self.memory.add(*transitions[:5], following=transitions.following)
        logger.info("refilled the replay with %d transitions of the %d newest episodes in %s", len(transitions.action),
                    len(episodes), self.episodes_dir)
        return len(transitions.action)

    def save(self, session, step, bonus=None):
        if bonus is not None:
            bonus.flush()  # the steps acted since the bonus's last merge: their statistics go into the checkpoint
        self.agent.global_step.load(step, session)  # counted in Python, not with a session.run per step
        return self.saver.save(session, os.path.join(self.train_dir, "model.ckpt"), global_step=step)


def run_local(args):
    """`train.py --algo dqn|sac --num-workers 0`: the whole run in this process, in the foreground; exit status."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.algo} %(levelname)s %(message)s")

    def make_env(render_mode=None):
        return runs.make_env(args, render_mode)

    logdir.import_tf()  # graph mode, TensorFlow's settings as the workers have them
    probe = make_env()
    try:
        config = runs.effective_config(args, probe)
    finally:
        probe.close()
    try:
        run = LocalRun(args.log_dir, args.env_id, config, make_env, args.design_head,
                       args.eval_every or DEFAULT_EVAL_EVERY, args.eval_episodes, unsup=args.unsup, algo=args.algo,
                       prefill_random=args.prefill_random, eval_frames=args.eval_frames)
    except ValueError as error:  # an impossible head/observation/bonus combination
        raise UsageError(str(error)) from None
    with tf1.Session(config=local_session_config(args.threads)) as session:
        pretrain = (args.pretrain, args.restore_include, args.restore_exclude) if args.pretrain else None
        last = run.run(session, check_checkpoint, pretrain)
    print(f"run over: step {config.max_global_steps:,}; last evaluation {last:.1f} "
          f"({os.path.join(args.log_dir, logdir.REWARDS_FILE)})" if last is not None else "run over", flush=True)
    return 0
