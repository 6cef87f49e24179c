"""Deep Q-learning: Double DQN with n-step returns and prioritized replay (`--algo dqn`).

    act:    epsilon-greedy on Q(s, .) -> replay.NStepBuffer -> replay.PrioritizedReplay (new: the largest priority)
    learn:  sample (prioritized) -> y = R + d Q_target(s', argmax_a Q(s', a)) -> Huber(y - Q(s, a)) x weights
            -> gradients clamped to [-q_grad_clip, q_grad_clip] -> Adam; new priorities |y - Q(s, a)|;
            every target_update_period updates the target network copies the online one

The learning only: the one-process run and the acting around it are offpolicy.py's, the Ape-X cluster apex.py's.
"""
import numpy as np
import tensorflow as tf

import logdir
import model
from model import observation_placeholder
from replay import stored_dtype, to_stored
from sessions import annealed_rate, global_step_variable, restored_session

tf1 = tf.compat.v1



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


def q_network(observations, scope, num_actions, config, head, reuse=False):
    """Q(s, .) [B, A] of the variables in `scope`; uint8 observations are scaled to [0, 1] here."""
    if observations.dtype == tf.uint8:
        observations = tf.cast(observations, tf.float32) / 255.0
    with tf1.variable_scope(scope, reuse=reuse):
        features = model.head_features(head, observations, config.mlp_units)
        return q_head(model.flatten(features), num_actions, config.dueling)


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
        self.config, self.num_actions, self.head = config, num_actions, head
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
        rate = annealed_rate(config, self.global_step) if config.anneal_lr else config.learning_rate
        optimizer = tf1.train.AdamOptimizer(rate, epsilon=config.adam_epsilon)
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
        """One update on a sampled batch: ({tag: value} of the loss, the mean target and TD error; |TD errors|)."""
        feed = {self.observations: batch["observations"], self.next_observations: batch["next_observations"],
                self.actions: batch["actions"], self.returns: batch["returns"], self.discounts: batch["discounts"],
                self.weights: weights}
        _, loss, td_errors, targets = session.run([self.train_op, self.loss, self.td_errors, self.targets], feed)
        td_errors = np.abs(td_errors)
        return {"dqn/loss": float(loss), "dqn/target_mean": float(np.mean(targets)),
                "dqn/td_error_mean": float(np.mean(td_errors))}, td_errors

    # what offpolicy.LocalRun asks of a learner (offpolicy.py's docstring)
    action_shape, action_dtype = (), np.int64

    def initialise(self, session):
        session.run(self.update_target)

    def explore(self, session, observations, step, rng):
        actions, _ = self.act(session, observations, epsilon_at(step, self.config), rng)
        return actions, actions

    def random_actions(self, count, rng):
        actions = rng.integers(0, self.num_actions, count)
        return actions, actions

    def evaluation_actions(self, session, observations, rng):
        actions = self.act(session, observations, self.config.eval_epsilon, rng)[0]
        return actions, actions

    def stored_actions(self, actions):
        """Actions as the environment took them, as the replay keeps them: the same."""
        return np.asarray(actions)

    def after_update(self, session, updates):
        if updates % self.config.target_update_period == 0:
            session.run(self.update_target)

    def exploration(self, step):
        return {"dqn/epsilon": epsilon_at(step, self.config)}

    # what apex.Actor asks of a learner (sac.SAC's methods of these names say what each is)

    def acting_network(self, observations, scope):
        """Q(s, .) [B, A] in `scope`."""
        return q_network(observations, scope, self.num_actions, self.config, self.head)

    @property
    def acting_variables(self):
        return self.online_variables

    def actor_actions(self, outputs, rng, step, epsilons):
        """Epsilon-greedy with each environment's own epsilon (Ape-X's), from the first step."""
        actions = epsilon_greedy(outputs, epsilons, rng)
        return actions, actions

    actor_priorities = True  # an actor computes its transitions' first priorities from its Q (apex.py)

    def actor_status(self, step, epsilons):
        """An actor's exploration in the status view: its environments' epsilons."""
        return {"epsilons": [round(float(epsilon), 6) for epsilon in epsilons]}


def epsilon_at(step, config):
    """The one-process mode's exploration: linear from epsilon_start to epsilon_final over epsilon_decay_steps."""
    fraction = min(step / config.epsilon_decay_steps, 1.0)
    return config.epsilon_start + fraction * (config.epsilon_final - config.epsilon_start)




def build_learner(observation_shape, action_space, config, head, dtype):
    """The DQN of a discrete `action_space` (the algorithms' table's entry point)."""
    return DQN(observation_shape, action_space.n, config, head, dtype)


class Agent:
    """A DQN run's online Q network in a graph of its own, restored from a checkpoint, for playback: argmax Q when
    greedy, else epsilon-greedy (`epsilon`, by default the run's eval_epsilon)."""

    def __init__(self, env, run, config, checkpoint, epsilon=None, seed=0):
        logdir.import_tf()  # graph mode, as the run trained
        self.graph = tf.Graph()
        self.epsilon = config.eval_epsilon if epsilon is None else epsilon
        self.rng = np.random.default_rng(seed)
        space = env.observation_space
        self.dtype = stored_dtype(space)
        with self.graph.as_default():
            head = model.choose_head(space.shape, run.get("design_head"))
            self.network = DQN(space.shape, env.action_space.n, config, head, self.dtype)
            self.session = restored_session(tf1, self.graph, self.network.online_variables, checkpoint,
                                            "Q network")

    def reset(self):
        pass

    def act(self, observation, greedy):
        actions, _ = self.network.act(self.session, to_stored([observation], self.dtype),
                                      0.0 if greedy else self.epsilon, self.rng)
        return int(actions[0])

    def bonus(self, observation, next_observation, action):
        return 0.0

    def close(self):
        self.session.close()
