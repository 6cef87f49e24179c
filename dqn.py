"""Deep Q-learning: Double DQN with n-step returns and prioritized replay (`--algo dqn`), and its one-process mode.

    act:    epsilon-greedy on Q(s, .) -> replay.NStepBuffer -> replay.PrioritizedReplay (new: the largest priority)
    learn:  sample (prioritized) -> y = R + d Q_target(s', argmax_a Q(s', a)) -> Huber(y - Q(s, a)) x weights
            -> gradients clamped to [-q_grad_clip, q_grad_clip] -> Adam; new priorities |y - Q(s, a)|;
            every target_update_period updates the target network copies the online one

`python train.py --algo dqn --num-workers 0 --env-id CartPole-v1` runs both in one process (`LocalRun`), with a
progress bar, an evaluation every --eval-every steps appended to <log-dir>/rewards.txt, a checkpoint per
evaluation, the episodes in episodes_0.csv and TensorBoard events in the log directory. The replay is not in
the checkpoint: a resumed run refills it (learning_starts transitions) before it trains again.
"""
import logging
import os
import time
import types

import numpy as np
import tensorflow as tf

import curiosity
import envs
import logdir
import model
import replay
from acting import EpisodeLogger, EpisodeTally
from sessions import DeferredInterrupt, global_step_variable

tf1 = tf.compat.v1
logger = logging.getLogger("dqn")

REWARDS_FILE = "rewards.txt"  # one line per evaluation: "{eval:3d} {step:8d} {mean return:.1f}"
DEFAULT_EVAL_EVERY = 10_000  # environment steps between the one-process mode's evaluations
STATS_WINDOW = 100  # episodes in the progress bar's mean return


def double_q_targets(returns, discounts, next_q_online, next_q_target):
    """y = R + d * Q_target(s', argmax_a Q_online(s', a)): van Hasselt et al. (2016), eq. 4, with the n-step
    return R and d = gamma^n, or 0 where the episode terminated within the n steps. No gradient flows into it."""
    best = tf.argmax(next_q_online, axis=1, output_type=tf.int32)  # [B]
    chosen = tf.gather(next_q_target, best, axis=1, batch_dims=1)  # [B]
    return tf.stop_gradient(returns + discounts * chosen)


def q_head(features, num_actions, dueling):
    """Q(s, .) from a trunk's features; dueling: V(s) + A(s, .) - mean_a A(s, a) (Wang et al. 2016, eq. 9)."""
    if not dueling:
        return model.linear(features, num_actions, "q", model.normalized_columns_initializer(0.01))
    value = model.linear(features, 1, "value", model.normalized_columns_initializer(1.0))
    advantages = model.linear(features, num_actions, "advantages", model.normalized_columns_initializer(0.01))
    return value + advantages - tf.reduce_mean(advantages, axis=1, keepdims=True)


def stored_dtype(observation_space):
    """Images go into the replay as uint8 (a quarter of float32's memory) and are scaled back in the graph."""
    return np.uint8 if envs.observation_kind(observation_space) == "image" else np.float32


def to_stored(observations, dtype):
    observations = np.asarray(observations, np.float32)
    return np.round(observations * 255.0).astype(np.uint8) if dtype == np.uint8 else observations


def from_stored(observations, dtype):
    """Stored observations as the float32 the environment gave (to 1/255 for images)."""
    observations = np.asarray(observations)
    return observations.astype(np.float32) / 255.0 if dtype == np.uint8 else observations.astype(np.float32)


def observation_placeholder(observation_shape, observation_dtype, name):
    return tf1.placeholder(tf.uint8 if observation_dtype == np.uint8 else tf.float32, [None, *observation_shape], name)


def q_network(observations, scope, num_actions, config, head, reuse=False):
    """Q(s, .) [B, A] of the variables in `scope`; uint8 observations are scaled to [0, 1] here."""
    if observations.dtype == tf.uint8:
        observations = tf.cast(observations, tf.float32) / 255.0
    with tf1.variable_scope(scope, reuse=reuse):
        return q_head(model.flatten(model.HEADS[head](observations)), num_actions, config.dueling)


def epsilon_greedy(q_values, epsilon, rng):
    """argmax_a Q(s, a) per row, each replaced by a random action with probability epsilon (a scalar, or one per
    row)."""
    actions = np.argmax(q_values, axis=1)
    explore = rng.random(len(actions)) < epsilon
    actions[explore] = rng.integers(0, q_values.shape[1], int(explore.sum()))
    return actions


class DQN:
    """The online and target Q networks, the Double DQN loss and its train op, in the default graph."""

    def __init__(self, observation_shape, num_actions, config, head, observation_dtype=np.float32):
        self.config, self.num_actions = config, num_actions
        self.observations = observation_placeholder(observation_shape, observation_dtype, "observations")
        self.next_observations = observation_placeholder(observation_shape, observation_dtype, "next_observations")
        self.actions = tf1.placeholder(tf.int32, [None], "actions")
        self.returns = tf1.placeholder(tf.float32, [None], "returns")  # n-step, discounted
        self.discounts = tf1.placeholder(tf.float32, [None], "discounts")
        self.weights = tf1.placeholder(tf.float32, [None], "weights")  # importance sampling

        self.q_values = q_network(self.observations, "online", num_actions, config, head)  # [B, A]
        next_q_online = q_network(self.next_observations, "online", num_actions, config, head, reuse=True)
        next_q_target = q_network(self.next_observations, "target", num_actions, config, head)
        self.online_variables = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, "online")
        self.target_variables = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, "target")
        self.targets = double_q_targets(self.returns, self.discounts, next_q_online, next_q_target)
        chosen = tf.gather(self.q_values, self.actions, axis=1, batch_dims=1)  # [B]
        self.td_errors = self.targets - chosen
        huber = tf1.losses.huber_loss(self.targets, chosen, reduction=tf1.losses.Reduction.NONE)
        self.loss = tf.reduce_mean(self.weights * huber)
        self.global_step = global_step_variable()  # environment steps
        self.updates = tf1.get_variable("updates", [], tf.int64, tf1.zeros_initializer(), trainable=False)
        optimizer = tf1.train.AdamOptimizer(config.learning_rate, epsilon=config.adam_epsilon)
        gradients = optimizer.compute_gradients(self.loss, self.online_variables)
        clipped = [(tf.clip_by_value(g, -config.q_grad_clip, config.q_grad_clip), v) for g, v in gradients]
        self.train_op = optimizer.apply_gradients(clipped, global_step=self.updates)
        self.update_target = tf.group(*[target.assign(online) for online, target in
                                        zip(self.online_variables, self.target_variables)])

    def act(self, session, observations, epsilon, rng):
        """Epsilon-greedy actions for a batch of observations, and their Q values."""
        q_values = session.run(self.q_values, {self.observations: observations})
        return epsilon_greedy(q_values, epsilon, rng), q_values

    def train(self, session, batch, weights):
        """One update on a sampled batch; (loss, |TD errors|, mean Q of the actions taken)."""
        feed = {self.observations: batch["observations"], self.next_observations: batch["next_observations"],
                self.actions: batch["actions"], self.returns: batch["returns"], self.discounts: batch["discounts"],
                self.weights: weights}
        _, loss, td_errors, targets = session.run([self.train_op, self.loss, self.td_errors, self.targets], feed)
        return float(loss), np.abs(td_errors), float(np.mean(targets))


def epsilon_at(step, config):
    """The one-process mode's exploration: linear from epsilon_start to epsilon_final over epsilon_decay_steps."""
    fraction = min(step / config.epsilon_decay_steps, 1.0)
    return config.epsilon_start + fraction * (config.epsilon_final - config.epsilon_start)


def updates_due(inserted, done, config):
    """Learner updates owed after `inserted` transitions, `done` of them made: the replay ratio (transitions
    sampled per transition inserted) holds on average, counted from the warm-up's end."""
    if inserted < config.learning_starts:
        return 0
    owed = int((inserted - config.learning_starts) * config.replay_ratio / config.batch_size) + 1
    return max(owed - done, 0)


def append_rewards_line(log_dir, index, step, mean_return):
    """rewards.txt, as the DQN this project grew from wrote it: evaluation number, step, mean return."""
    with open(os.path.join(log_dir, REWARDS_FILE), "a") as handle:
        handle.write(f"{index:3d} {step:8d} {mean_return:.1f}\n")


def evaluation_count(log_dir):
    path = os.path.join(log_dir, REWARDS_FILE)
    return sum(1 for line in open(path) if line.strip()) if os.path.exists(path) else 0


class Acting:
    """K environments in lockstep, each feeding its n-step buffer: the acting of the one-process mode and of each
    Ape-X actor. Rewards are scaled by reward_scale into the transitions, the episodes' own sums are kept too."""

    def __init__(self, envs, config, dtype, seed):
        self.envs, self.config, self.dtype = envs, config, dtype
        for index, env in enumerate(envs):
            env.action_space.seed(seed + index)
        # each environment's observation as the replay stores it, converted once: the actor acts on these too
        self.stored = list(to_stored([env.reset(seed=seed + index)[0] for index, env in enumerate(envs)], dtype))
        self.tallies = [EpisodeTally() for _ in envs]
        self.n_steps = [replay.NStepBuffer(config.n_step, config.gamma) for _ in envs]

    def stored_observations(self):
        return np.asarray(self.stored)

    def step(self, actions, bonus=None):
        """Every environment steps once; (the transitions completed, as a replay.Transition of arrays, or None; the
        finished episodes' EpisodeStats). `bonus(observations, next_observations, actions)`: each step's curiosity
        reward (stored observations in, [K] out), added to the stored reward."""
        stored, transitions, finished = self.stored_observations(), [], []
        results = [env.step(int(action)) for env, action in zip(self.envs, actions)]
        following = to_stored([result[0] for result in results], self.dtype)
        bonuses = np.zeros(len(self.envs)) if bonus is None else bonus(stored, following, actions)
        for k, (env, (_, reward, terminated, truncated, info)) in enumerate(zip(self.envs, results)):
            tally = self.tallies[k]
            tally.reward += reward
            tally.env_reward += info.get("env_reward", reward)
            tally.bonus += float(bonuses[k])
            tally.length += 1
            tally.observe(info)
            transitions += self.n_steps[k].add(stored[k], int(actions[k]),
                                               reward * self.config.reward_scale + bonuses[k], following[k],
                                               terminated, truncated)
            self.stored[k] = following[k]
            if terminated or truncated:
                finished.append(tally.stats(truncated=not terminated))
                self.stored[k] = to_stored([env.reset()[0]], self.dtype)[0]
                self.tallies[k] = EpisodeTally()
        columns = replay.Transition(*(np.array(list(column)) for column in zip(*transitions))) if transitions else None
        return columns, finished

    def close(self):
        for env in self.envs:
            env.close()


class Curious:
    """A curiosity bonus of curiosity.py for DQN, in one stream: each step's reward is the bonus of the predictor at
    acting time, scaled as the bonus's runner side scales it (ICM and the pixel baselines: prediction_beta x the raw
    bonus; RND: the raw bonus over the running standard deviation of its discounted return, x int_coef), added to
    the stored reward. The predictor trains on every replayed batch's (s_t, a_t, s_t+1), by an Adam of its own; a
    bonus with running statistics (RND) merges the acted steps into them (ActingBonus)."""

    def __init__(self, unsup, observation_shape, num_actions, config, head, dtype):
        with tf1.variable_scope("curiosity"):
            self.module = curiosity.build(unsup, observation_shape, num_actions, head)
        self.config, self.dtype = config, dtype
        # the one-stream weight of a bonus scaled by its statistics; BetaScaler applies prediction_beta itself
        self.weight = config.int_coef if unsup == "rnd" else 1.0
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
        """One step of the predictor on a replayed batch; its summaries' values."""
        _, values = session.run([self.train_op, self.summaries],
                                self.feed(batch["observations"], batch["following"], batch["actions"]))
        return values


class ActingBonus:
    """Each step's curiosity rewards for an Acting (Acting.step's `bonus`): the scaler keeps the bonus's state per
    environment (RND's running return); the steps' s_t+1 and that return are merged into the statistics every
    STATISTICS_EVERY steps, in one session.run."""

    STATISTICS_EVERY = 32

    def __init__(self, curious, session, module, count):
        self.curious, self.session, self.module = curious, session, module
        self.scaler = module.scaler(curious.config, count)
        self.merge = curious.merges.get(module)
        self.pending = []  # (stored s_t+1 [K, ...], bonus returns [K]) of steps not merged yet

    def __call__(self, observations, following, actions):
        """[K] the rewards of one step of the K environments, given as stored observations."""
        raw, *extra = self.session.run([self.module.bonus_per_step, *self.scaler.fetches],
                                       self.curious.feed(observations, following, actions, self.module))
        rewards, data = self.scaler.step(raw, extra)
        if self.merge is not None:
            self.pending.append((following, data))
            if len(self.pending) >= self.STATISTICS_EVERY:
                self.flush()
        return self.curious.weight * rewards

    def flush(self):
        if self.merge is None or not self.pending:
            return
        frames = from_stored(np.concatenate([frames for frames, _ in self.pending]), self.curious.dtype)
        # update_feed reads the bonus returns as a rollout's bonus_data
        steps = types.SimpleNamespace(bonus_data=np.concatenate([data for _, data in self.pending]))
        self.session.run(self.merge, {self.module.frames: frames, self.module.second: np.arange(len(frames)),
                                      **self.module.update_feed([steps])})
        self.pending = []


def learn_step(network, memory, session, step, writer, updates, epsilon=None, curious=None):
    """One update (the run's `updates`-th): sample, train, new priorities; the curiosity's predictor on the same
    batch; the target copy when due; summaries (with the exploration's `epsilon` where one schedule explores).
    `memory`: the replay, or a replay.PrefetchingSampler of it, as the learners use."""
    config = network.config
    beta = replay.beta_at(step, config.max_global_steps, config.priority_beta)
    slots, batch, weights = memory.sample(config.batch_size, beta)
    loss, td_errors, mean_target = network.train(session, batch, weights)
    memory.update_priorities(slots, td_errors)
    curiosity_values = curious.train(session, batch) if curious is not None else {}
    if updates % config.target_update_period == 0:
        session.run(network.update_target)
    if updates % config.summary_every_updates == 0:
        summary = tf1.Summary()
        for tag, value in (("dqn/loss", loss), ("dqn/target_mean", mean_target),
                           ("dqn/td_error_mean", float(np.mean(td_errors))), ("dqn/beta", beta),
                           ("replay/size", len(memory))) + tuple(curiosity_values.items()) + (
                              (("dqn/epsilon", epsilon),) if epsilon is not None else ()):
            summary.value.add(tag=tag, simple_value=value)
        writer.add_summary(summary, step)


class LocalRun:
    """Actor and learner in one process: K environments in lockstep feed the replay; the learner keeps the
    replay ratio; evaluations, checkpoints, episode CSV, TensorBoard and a progress bar."""

    def __init__(self, log_dir, env_id, config, make_env, head=None, eval_every=DEFAULT_EVAL_EVERY,
                 eval_episodes=5, progress=True, unsup="none"):
        self.log_dir, self.env_id, self.config, self.make_env = log_dir, env_id, config, make_env
        self.eval_every, self.eval_episodes, self.progress = eval_every, eval_episodes, progress
        self.envs = [make_env() for _ in range(config.envs_per_worker)]
        space = self.envs[0].observation_space
        self.head = model.choose_head(space.shape, head)
        self.dtype = stored_dtype(space)
        tf1.set_random_seed(config.seed)
        np.random.seed(config.seed)  # model.py draws some initial weights with numpy
        self.network = DQN(space.shape, self.envs[0].action_space.n, config, self.head, self.dtype)
        self.curious = None if unsup == "none" else Curious(unsup, space.shape, self.envs[0].action_space.n, config,
                                                            self.head, self.dtype)
        if self.curious is not None:
            self.curious.track(self.curious.module)
        self.memory = replay.PrioritizedReplay(config.replay_capacity, space.shape, self.dtype,
                                               config.priority_alpha, uniform=not config.prioritized,
                                               seed=config.seed, one_step=self.curious is not None)
        self.rng = np.random.default_rng(config.seed)
        self.saver = tf1.train.Saver(max_to_keep=3)
        self.train_dir = logdir.checkpoints_dir(log_dir)

    def restore_or_initialise(self, session, check_checkpoint):
        latest = check_checkpoint(tf1, self.train_dir, tf1.global_variables())
        if latest:
            self.saver.restore(session, latest)
            logger.info("resumed from %s at step %d; the replay refills first (%d transitions)", latest,
                        session.run(self.network.global_step), self.config.learning_starts)
        else:
            session.run(tf1.global_variables_initializer())
            session.run(self.network.update_target)

    def evaluate(self, session, interrupt):
        """Mean return of eval_episodes episodes at eval_epsilon, on an environment of its own; None when Ctrl-C
        cut it short."""
        env = self.make_env()
        returns = []
        try:
            for episode in range(self.eval_episodes):
                observation, _ = env.reset(seed=self.config.seed + 10_000 + episode)
                total, done = 0.0, False
                while not done:
                    if interrupt.requested:
                        return None
                    stored = to_stored([observation], self.dtype)
                    action, _ = self.network.act(session, stored, self.config.eval_epsilon, self.rng)
                    observation, reward, terminated, truncated, info = env.step(int(action[0]))
                    total += info.get("env_reward", reward)
                    done = terminated or truncated
                returns.append(total)
        finally:
            env.close()
        return float(np.mean(returns))

    def run(self, session, check_checkpoint):
        """Train to max_global_steps; the mean return of the last evaluation. Ctrl-C writes a checkpoint at the
        step reached, then raises KeyboardInterrupt."""
        with DeferredInterrupt() as interrupt:
            return self.play_and_learn(session, check_checkpoint, interrupt)

    def play_and_learn(self, session, check_checkpoint, interrupt):
        from tqdm import tqdm

        config, network = self.config, self.network
        self.restore_or_initialise(session, check_checkpoint)
        writer = tf1.summary.FileWriter(logdir.events_dir(self.log_dir, 0), session.graph)
        step = int(session.run(network.global_step))
        episodes = EpisodeLogger(self.log_dir, 0, writer, lambda: step)
        if self.curious is not None:
            self.curious.warm_up(session, self.envs)  # before Acting resets the environments
        acting = Acting(self.envs, config, self.dtype, config.seed)
        bonus = None if self.curious is None else self.curious.acting_bonus(session, len(self.envs))
        recent, done_updates, last_eval = [], 0, None
        updates_before = int(session.run(network.updates))  # the checkpoint's; train ops count on from it
        evaluations = evaluation_count(self.log_dir)
        next_eval = (step // self.eval_every + 1) * self.eval_every
        started, inserted_at_start = time.time(), self.memory.inserted
        sampler = replay.PrefetchingSampler(self.memory)
        bar = tqdm(total=config.max_global_steps, initial=step, unit="step", disable=not self.progress,
                   dynamic_ncols=True)
        try:
            while step < config.max_global_steps:
                if interrupt.requested:  # Ctrl-C: what was learned since the last evaluation is kept
                    self.save(session, step)
                    raise KeyboardInterrupt
                epsilon = epsilon_at(step, config)
                actions, _ = network.act(session, acting.stored_observations(), epsilon, self.rng)
                transitions, finished = acting.step(actions, bonus)
                for stats in finished:
                    episodes(stats)
                    recent = (recent + [stats.env_reward])[-STATS_WINDOW:]
                if transitions:
                    self.memory.add(*transitions[:5], following=transitions.following)
                step += len(self.envs)
                for _ in range(updates_due(self.memory.inserted - inserted_at_start, done_updates, config)):
                    done_updates += 1
                    learn_step(network, sampler, session, step, writer, updates_before + done_updates, epsilon,
                               self.curious)
                if step >= next_eval or step >= config.max_global_steps:
                    score = self.evaluate(session, interrupt)
                    if score is None:
                        continue  # interrupted: the loop's first line saves and stops
                    evaluations, last_eval = evaluations + 1, score
                    append_rewards_line(self.log_dir, evaluations, step, last_eval)
                    self.save(session, step)
                    next_eval += self.eval_every
                elapsed = max(time.time() - started, 1e-9)
                bar.update(len(self.envs))
                if bar.n % 200 < len(self.envs) or step >= config.max_global_steps:
                    bar.set_postfix(episodes=episodes.episodes, mean_return=f"{np.mean(recent):.1f}" if recent else "-",
                                    eval="-" if last_eval is None else f"{last_eval:.1f}", eps=f"{epsilon:.3f}",
                                    updates_per_s=f"{done_updates / elapsed:.0f}", refresh=False)
        finally:
            sampler.close()
            bar.close()
            episodes.close()
            writer.close()
            acting.close()
        return last_eval

    def save(self, session, step):
        self.network.global_step.load(step, session)  # counted in Python, not with a session.run per step
        self.saver.save(session, os.path.join(self.train_dir, "model.ckpt"), global_step=step)


def run_local(args):
    """`train.py --algo dqn --num-workers 0`: the whole run in this process, in the foreground; exit status."""
    import worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s dqn %(levelname)s %(message)s")

    def make_env():
        return envs.create_env(args.env_id, env_wrap=args.env_wrap, no_reward=args.no_reward,
                               no_life_reward=args.no_life_reward)

    logdir.import_tf()  # graph mode, TensorFlow's settings as the workers have them
    probe = make_env()
    try:
        config = worker.effective_config(args, probe)
    finally:
        probe.close()
    run = LocalRun(args.log_dir, args.env_id, config, make_env, args.design_head,
                   args.eval_every or DEFAULT_EVAL_EVERY, args.eval_episodes, unsup=args.unsup)
    with tf1.Session() as session:
        last = run.run(session, worker.check_checkpoint)
    print(f"run over: step {config.max_global_steps:,}; last evaluation {last:.1f} "
          f"({os.path.join(args.log_dir, REWARDS_FILE)})" if last is not None else "run over", flush=True)
    return 0
