"""Soft Actor-Critic (Haarnoja et al. 2018) for continuous actions, and its form for discrete actions (Christodoulou
2019, as cleanrl's sac_atari), on the replay of replay.py.

    continuous  a = tanh(u), u ~ N(mu(s), sigma(s)), scaled to the action space's bounds when the actor plays;
                twin Q(s, a), each with a target copy that follows it by Polyak averaging (tau)
    discrete    pi(.|s) a softmax; twin Q(s, .) over the actions; every expectation over actions taken exactly
    target      y = R + d (min_i Q_target_i(s', a') - alpha log pi(a'|s'))   (R, d: the n-step return and
                discount of dqn.py; a' ~ pi(s'), or summed over a' when discrete)
    actor       minimises E[alpha log pi(a|s) - min_i Q_i(s, a)]
    temperature alpha = exp(log_alpha), trained so that the policy's entropy stays near target_entropy: -dim(A)
                when continuous, target_entropy_scale x log |A| when discrete

The formulas are module functions, each tested against a hand computation (tests/test_sac.py).
"""
import numpy as np
import tensorflow as tf

import logdir
import model
from model import observation_placeholder
from replay import env_action, stored_dtype, to_stored
from sessions import global_step_variable, restored_session

tf1 = tf.compat.v1

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # the policy's log standard deviation is squashed into this range (cleanrl's)
HIDDEN_UNITS = (256, 256)  # the actor's and each critic's layers on vector observations (Haarnoja et al. 2018)
IMAGE_HIDDEN_UNITS = (512,)  # after the convolutional head on images (cleanrl's sac_atari)


def tanh_gaussian_log_prob(pre_tanh, mean, log_std):
    """log pi(a|s) [B] of a = tanh(u), u ~ N(mean, exp(log_std)) [B, D]: the Gaussian's log density less
    log |da/du| = log(1 - tanh(u)^2), summed over the action's dimensions (Haarnoja et al. 2018, appendix C,
    eq. 21), with log(1 - tanh(u)^2) written as 2 (log 2 - u - softplus(-2u)), which stays finite where tanh(u) = 1
    in float32."""
    gaussian = -0.5 * (tf.square((pre_tanh - mean) / tf.exp(log_std)) + 2.0 * log_std + np.log(2.0 * np.pi))
    log_det = 2.0 * (np.log(2.0) - pre_tanh - tf.nn.softplus(-2.0 * pre_tanh))
    return tf.reduce_sum(gaussian - log_det, axis=-1)


def soft_q_targets(returns, discounts, next_value):
    """y = R + d V(s'), with the soft value V(s') = E_a'[min_i Q_target_i(s', a') - alpha log pi(a'|s')]
    (Haarnoja et al. 2018, eqs. 3 and 6; n-step R and d). No gradient flows into it."""
    return tf.stop_gradient(returns + discounts * next_value)


def soft_value(next_q1, next_q2, next_log_prob, alpha):
    """V(s') [B] = min_i Q_target_i(s', a') - alpha log pi(a'|s') of one sampled a' (continuous actions)."""
    return tf.minimum(next_q1, next_q2) - alpha * next_log_prob


def discrete_soft_value(next_q1, next_q2, next_probabilities, next_log_probs, alpha):
    """V(s') [B] = sum_a' pi(a'|s') (min_i Q_target_i(s', a') - alpha log pi(a'|s')): the expectation over the
    actions taken exactly (Christodoulou 2019, eq. 10); every input [B, A]."""
    return tf.reduce_sum(next_probabilities * (tf.minimum(next_q1, next_q2) - alpha * next_log_probs), axis=1)


def temperature_loss(log_alpha, log_probs, target_entropy, probabilities=None):
    """J(alpha) = E[-alpha (log pi(a|s) + target_entropy)] (Haarnoja et al. 2018b, eq. 18), in log alpha as the
    implementations train it: its gradient is E[-(log pi + target)], negative (alpha rises) while the policy's
    entropy -E[log pi] is below the target. Discrete: the expectation over actions taken exactly with
    `probabilities` [B, A] beside `log_probs` [B, A]."""
    gap = tf.stop_gradient(log_probs + target_entropy)
    if probabilities is not None:
        gap = tf.reduce_sum(tf.stop_gradient(probabilities) * gap, axis=-1)
    return -tf.reduce_mean(log_alpha * gap)


def scaled_actions(actions, low, high):
    """Actions in [-1, 1] (the tanh's) to the space's [low, high]."""
    return low + (np.asarray(actions, np.float32) + 1.0) * 0.5 * (high - low)


def trunk(observations, head, units, extra=None):
    """Features of observations: the convolutional head for images, then `extra` (a critic's action) joined, then
    ReLU layers of `units`."""
    if observations.dtype == tf.uint8:
        observations = tf.cast(observations, tf.float32) / 255.0
    x = observations if head == "mlp" else model.flatten(model.HEADS[head](observations))
    if extra is not None:
        x = tf.concat([x, extra], axis=1)
    for index, size in enumerate(units):
        x = tf.nn.relu(model.linear(x, size, f"fc{index + 1}"))
    return x


def hidden_units(head):
    return HIDDEN_UNITS if head == "mlp" else IMAGE_HIDDEN_UNITS


class SAC:
    """The actor, the twin critics and their targets, the temperature, their losses and one train op, in the
    default graph. `action_space`: gymnasium's Discrete or Box (one dimension of actions)."""

    def __init__(self, observation_shape, action_space, config, head, observation_dtype=np.float32):
        self.config, self.head = config, head
        self.discrete = not hasattr(action_space, "low")
        units = hidden_units(head)
        self.observations = observation_placeholder(observation_shape, observation_dtype, "observations")
        self.next_observations = observation_placeholder(observation_shape, observation_dtype, "next_observations")
        self.returns = tf1.placeholder(tf.float32, [None], "returns")  # n-step, discounted
        self.discounts = tf1.placeholder(tf.float32, [None], "discounts")
        self.weights = tf1.placeholder(tf.float32, [None], "weights")  # importance sampling (1 when uniform)
        self.log_alpha = tf1.get_variable("log_alpha", [], tf.float32, tf1.zeros_initializer())
        alpha = tf.exp(self.log_alpha)
        if self.discrete:
            self.num_actions = action_space.n
            self.actions = tf1.placeholder(tf.int32, [None], "actions")
            self.target_entropy = config.target_entropy_scale * float(np.log(self.num_actions))
            self.action_shape, self.action_dtype = (), np.int64  # how the replay keeps the actions
        else:
            self.action_size = int(np.prod(action_space.shape))
            self.action_shape, self.action_dtype = (self.action_size,), np.float32
            self.low = action_space.low.astype(np.float32).ravel()
            self.high = action_space.high.astype(np.float32).ravel()
            self.actions = tf1.placeholder(tf.float32, [None, self.action_size], "actions")  # in [-1, 1]
            self.target_entropy = -float(self.action_size)

        policy = self._policy(self.observations, units)
        next_policy = self._policy(self.next_observations, units, reuse=True)
        if self.discrete:
            self.logits, probabilities, log_probs = policy
            q_all = self._critics(self.observations, None, "critic", units)  # 2 x [B, A]
            q_taken = [tf.gather(q, self.actions, axis=1, batch_dims=1) for q in q_all]  # 2 x [B]
            q_policy = tf.minimum(*q_all)  # [B, A]
            next_value = discrete_soft_value(*self._critics(self.next_observations, None, "target", units),
                                             *next_policy[1:], alpha)
            actor_loss = tf.reduce_mean(tf.reduce_sum(
                probabilities * (tf.stop_gradient(alpha) * log_probs - tf.stop_gradient(q_policy)), axis=1))
            alpha_loss = temperature_loss(self.log_alpha, log_probs, self.target_entropy, probabilities)
            self.entropy = -tf.reduce_mean(tf.reduce_sum(probabilities * log_probs, axis=1))
        else:
            self.sampled, log_prob, self.mean_action = policy
            next_sampled, next_log_prob, _ = next_policy
            q_taken = self._critics(self.observations, self.actions, "critic", units)  # 2 x [B]
            q_policy = tf.minimum(*self._critics(self.observations, self.sampled, "critic", units, reuse=True))
            next_value = soft_value(*self._critics(self.next_observations, next_sampled, "target", units),
                                    next_log_prob, alpha)
            actor_loss = tf.reduce_mean(tf.stop_gradient(alpha) * log_prob - q_policy)
            alpha_loss = temperature_loss(self.log_alpha, log_prob, self.target_entropy)
            self.entropy = -tf.reduce_mean(log_prob)
        self.targets = soft_q_targets(self.returns, self.discounts, next_value)
        self.td_errors = 0.5 * (tf.abs(self.targets - q_taken[0]) + tf.abs(self.targets - q_taken[1]))  # [B]
        critic_loss = tf.add_n([tf.reduce_mean(self.weights * 0.5 * tf.square(self.targets - q)) for q in q_taken])
        self.losses = {"sac/critic_loss": critic_loss, "sac/actor_loss": actor_loss, "sac/alpha_loss": alpha_loss}
        self.alpha = alpha

        outer = tf1.get_variable_scope().name  # built inside another scope (PlaNet's latent SAC): its variables' too
        variables = {scope: tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, f"{outer}/{scope}/" if outer
                                               else f"{scope}/") for scope in ("actor", "critic", "target")}
        self.actor_variables, self.critic_variables = variables["actor"], variables["critic"]
        self.target_variables = variables["target"]
        self.global_step = global_step_variable()  # environment steps
        self.updates = tf1.get_variable("updates", [], tf.int64, tf1.zeros_initializer(), trainable=False)
        train_ops = [self._minimise(loss, var_list, name) for loss, var_list, name in (
            (critic_loss, self.critic_variables, "critic_adam"), (actor_loss, self.actor_variables, "actor_adam"),
            (alpha_loss, [self.log_alpha], "alpha_adam"))]
        with tf.control_dependencies(train_ops):
            polyak = [target.assign((1.0 - config.tau) * target + config.tau * online)
                      for online, target in zip(self.critic_variables, self.target_variables)]
            self.train_op = tf.group(*polyak, tf1.assign_add(self.updates, 1))
        self.copy_to_target = tf.group(*[target.assign(online) for online, target in
                                         zip(self.critic_variables, self.target_variables)])

    def _minimise(self, loss, var_list, name):
        return tf1.train.AdamOptimizer(self.config.learning_rate, epsilon=self.config.adam_epsilon,
                                       name=name).minimize(loss, var_list=var_list)

    def _policy(self, observations, units, reuse=False):
        """Discrete: (logits, probabilities, log-probabilities) [B, A]. Continuous: (a sample in [-1, 1] [B, D], its log
        pi [B], the mean action tanh(mu) [B, D]); the sample is reparameterised, so gradients reach mu and sigma."""
        with tf1.variable_scope("actor", reuse=reuse):
            x = trunk(observations, self.head, units)
            if self.discrete:
                logits = model.linear(x, self.num_actions, "logits", model.normalized_columns_initializer(0.01))
                return logits, tf.nn.softmax(logits), tf.nn.log_softmax(logits)
            mean = model.linear(x, self.action_size, "mean")
            squashed = tf.tanh(model.linear(x, self.action_size, "log_std"))
            log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (squashed + 1.0)
            pre_tanh = mean + tf.exp(log_std) * tf.random.normal(tf.shape(mean))
            return tf.tanh(pre_tanh), tanh_gaussian_log_prob(pre_tanh, mean, log_std), tf.tanh(mean)

    def _critics(self, observations, actions, scope, units, reuse=False):
        """The twin Q: [B] each of (s, a) when continuous, [B, A] each of s when discrete."""
        outputs = []
        for index in (1, 2):
            with tf1.variable_scope(f"{scope}/q{index}", reuse=reuse):
                if self.discrete:
                    outputs.append(model.linear(trunk(observations, self.head, units), self.num_actions, "q"))
                else:  # the action joins the observation's features before the first layer
                    x = trunk(observations, self.head, units, extra=actions)
                    outputs.append(tf.squeeze(model.linear(x, 1, "q"), axis=1))
        return outputs

    def act(self, session, observations, rng, greedy=False):
        """Actions for a batch of observations: a sample of the policy (the mean when `greedy`), as the
        environment takes them (ints, or vectors scaled to the bounds), and as the replay keeps them."""
        return self.chosen_actions(session.run(self.acting_outputs(greedy), {self.observations: observations}),
                                   rng, greedy)

    def acting_outputs(self, greedy=False):
        """What the policy's actions are drawn from: the logits, or the sampled (or mean) action in [-1, 1]."""
        return self.logits if self.discrete else (self.mean_action if greedy else self.sampled)

    def chosen_actions(self, outputs, rng, greedy=False):
        """(as the environment takes them, as the replay keeps them) from the acting outputs' values."""
        if self.discrete:
            if greedy:
                actions = np.argmax(outputs, axis=1)
            else:
                gumbel = -np.log(-np.log(rng.random(outputs.shape)))  # a sample of the softmax, by the Gumbel-max
                actions = np.argmax(outputs + gumbel, axis=1)
            return actions, actions
        return scaled_actions(outputs, self.low, self.high), outputs

    # what apex.Actor asks of a learner: a network in `scope` that acts as this one (its variables, name for name
    # after the scope, those of `acting_variables`), and the actions of an actor from its outputs

    def acting_network(self, observations, scope):
        """The policy in `scope`: its sampled actions (the logits when discrete)."""
        with tf1.variable_scope(scope):
            policy = self._policy(observations, hidden_units(self.head))
        return policy[0]

    @property
    def acting_variables(self):
        return self.actor_variables

    def actor_actions(self, outputs, rng, step, epsilons):
        """A sample of the policy, or uniformly random actions while the run's replay fills (the one-process run's
        `explore`); an Ape-X actor's `epsilons` are the value learners' exploration, not a policy's."""
        if step < self.config.learning_starts:
            return self.random_actions(len(outputs), rng)
        return self.chosen_actions(outputs, rng)

    actor_priorities = False  # an actor has no critic: new transitions get the largest priority seen so far

    def actor_status(self, step, epsilons):
        """An actor's exploration in the status view: random actions while the replay fills, then the policy's."""
        return {"exploration": "random" if step < self.config.learning_starts else "policy"}

    # what offpolicy.LocalRun asks of a learner (offpolicy.py's docstring)

    def initialise(self, session):
        session.run(self.copy_to_target)

    def explore(self, session, observations, step, rng):
        """A sample of the policy; uniformly random actions while the replay fills (learning_starts steps), as
        stable-baselines3 and cleanrl begin."""
        if step >= self.config.learning_starts:
            return self.act(session, observations, rng)
        return self.random_actions(len(observations), rng)

    def random_actions(self, count, rng):
        if self.discrete:
            actions = rng.integers(0, self.num_actions, count)
            return actions, actions
        actions = rng.uniform(-1.0, 1.0, (count, self.action_size)).astype(np.float32)
        return scaled_actions(actions, self.low, self.high), actions

    def evaluation_actions(self, session, observations, rng):
        return self.act(session, observations, rng, greedy=True)

    def stored_actions(self, actions):
        """Actions as the environment took them, as the replay keeps them: in [-1, 1] (scaled_actions undone)."""
        if self.discrete:
            return np.asarray(actions)
        return (2.0 * (np.asarray(actions, np.float32) - self.low) / (self.high - self.low) - 1.0).astype(np.float32)

    def after_update(self, session, updates):
        """Nothing: the targets' Polyak step is part of the train op."""

    def exploration(self, step):
        return {}

    def train(self, session, batch, weights):
        """One update of the critics, the actor and the temperature, then the targets' Polyak step; ({tag: value}
        of the losses, alpha and the entropy; |TD errors| [B], the twins' mean)."""
        feed = {self.observations: batch["observations"], self.next_observations: batch["next_observations"],
                self.actions: batch["actions"], self.returns: batch["returns"], self.discounts: batch["discounts"],
                self.weights: weights}
        _, losses, td_errors, alpha, entropy = session.run(
            [self.train_op, self.losses, self.td_errors, self.alpha, self.entropy], feed)
        return dict(losses, **{"sac/alpha": float(alpha), "sac/entropy": float(entropy)}), td_errors


class Agent:
    """A SAC run's actor in a graph of its own, restored from a checkpoint, for playback: the policy's mean action
    when greedy (its most likely one when discrete), else a sample of the policy."""

    def __init__(self, env, run, config, checkpoint, epsilon=None, seed=0):
        logdir.import_tf()  # graph mode, as the run trained
        self.graph = tf.Graph()
        self.rng = np.random.default_rng(seed)
        space = env.observation_space
        self.dtype = stored_dtype(space)
        with self.graph.as_default():
            head = model.choose_head(space.shape, run.get("design_head"))
            self.network = SAC(space.shape, env.action_space, config, head, self.dtype)
            self.session = restored_session(tf1, self.graph, self.network.actor_variables, checkpoint, "actor")

    def reset(self):
        pass

    def act(self, observation, greedy):
        actions, _ = self.network.act(self.session, to_stored([observation], self.dtype), self.rng, greedy=greedy)
        return env_action(actions[0])

    def bonus(self, observation, next_observation, action):
        return 0.0

    def close(self):
        self.session.close()
