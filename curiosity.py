"""Curiosity bonuses behind one small protocol: the ICM, the pixel-prediction baselines, RND, disagreement, and the
bonuses read from a memory of the states' embeddings (E3B, RIDE, NGU's episodic novelty, SimHash counts).

A bonus is built twice by the trainer, like the policy: in `global/` (on the parameter server) and in `local/`
(the worker's copy, which acts and computes the gradients). What a learner relies on, and nothing else:

- `feed_sequences(sequences, actions)`: the feed for the transitions along rollouts (each rollout's frames
  s_0 .. s_T, the actions concatenated); `feed(observations, next_observations, actions)` for loose ones.
- `bonus_per_step`: [N] the raw bonus of each fed transition, or, for a bonus that `reads_memory`, [N, ...] what
  its memory reads of each step (an embedding); `scaler(config, count)` makes the runner's numpy side that turns
  it into the reward of each step (and may keep running state, or a memory, per environment);
  `one_stream_weight(config)` is what a learner adding those rewards to its one reward stream weighs them by.
- `training_loss(config)`: what the bonus's own optimiser minimises; `var_list`: its trainable variables.
- `state_variables`: non-trainable variables that are synced global -> local with the trainable ones and
  checkpointed (running statistics); `update_statistics(local)`, run on the global copy, gives the op that
  updates them from what the local copy is fed (`update_feed(rollouts)` adds to that feed), applied with the
  gradients; `warm_up(session, local, envs, config)` seeds them before training.
- `episodic`: whether the bonus's return ends with the episode (on the two-stream path, `Config.two_streams`);
  `requires_two_streams`: the bonus always has a value head of its own.
- `summaries()`: {TensorBoard tag: scalar tensor}.

A new bonus is one class here, named in `BONUSES` and in `constants.CURIOSITY_CHOICES`.
"""
import logging

import numpy as np
import tensorflow as tf

from model import (CODE_HEADS, ENCODERS, MINIGRID_CODES, MINIGRID_CONVS, choose_head, conv2d, flatten,
                   inverse_universe_head, linear, mlp_head, normalized_columns_initializer, trainable_variables,
                   universe_head, variables_since)

tf1 = tf.compat.v1
logger = logging.getLogger(__name__)

PREDICTOR_HIDDEN = 256  # hidden units of the inverse and forward models, as in the original
PREDICTOR_INIT_STD = 0.01
# heads whose bonus's inverse and forward models start as RIDE's (its Minigrid*DynamicsNet: orthogonal weights, the
# gain of a ReLU before one, 1 at the output), not as the original's Doom models (columns of norm 0.01)
ORTHOGONAL_HEADS = ("minigrid",)
RELU_GAIN = np.sqrt(2.0)


def predictor_initializer(head, hidden):
    """The initialiser of a layer of the inverse or forward model (`hidden`: one a ReLU follows) on `head`."""
    if head in ORTHOGONAL_HEADS:
        return tf1.orthogonal_initializer(RELU_GAIN if hidden else 1.0)
    return normalized_columns_initializer(PREDICTOR_INIT_STD)


def inverse_loss(logits, actions):
    """Cross-entropy of the inverse model's action prediction, averaged over steps (ICM eq. 3)."""
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=logits))


def inverse_regression_loss(predicted, actions):
    """Continuous actions: 0.5 x the squared error of the inverse model's action [N, D], summed over the action's
    dimensions and averaged over steps (ICM eq. 3 with a Gaussian's log-likelihood in place of the softmax's)."""
    return 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(predicted - actions), axis=1))


class ContinuousActions:
    """What a bonus is built with, in place of a number of actions, when actions are vectors of `size` in [-1, 1]
    (SAC's, before they are scaled to the environment's bounds)."""

    def __init__(self, size):
        self.size = size


def action_spec(action_space):
    """A bonus's `num_actions` for a gymnasium action space: the number of a Discrete one, ContinuousActions of a
    Box."""
    if hasattr(action_space, "n"):
        return int(action_space.n)
    return ContinuousActions(int(np.prod(action_space.shape)))


def forward_loss_per_step(predicted, target):
    """0.5 * ||f(phi(s_t), a_t) - phi(s_t+1)||^2 for each step (ICM eq. 5).

    The original takes the mean over features and multiplies it by 288, its feature count, so that the
    hyper-parameters do not depend on the feature size; that is this sum.
    """
    return 0.5 * tf.reduce_sum(tf.square(predicted - target), axis=1)  # [N]


def pixel_loss_per_step(predicted, target):
    """0.5 x the mean squared error over the pixels of each step: normalised over the image, not the batch."""
    return 0.5 * tf.reduce_mean(tf.square(predicted - target), axis=list(range(1, len(target.shape))))  # [N]


class Scaler:
    """The acting side of a bonus: turns raw bonuses into each step's reward, per environment, and is told where
    each environment's episodes begin and end, in the order of the steps it is given: `episode_begins(index)` before
    the first step of an episode of environment `index` reaches `assign` or `step`, `episode_ends(index)` after its
    last. An episodic bonus (a count per episode, an episodic memory) keeps its state here; these keep none. A
    bonus that counts states may count them under the environment's key of each s_t+1's whole state
    (`rollout.state_keys` to `assign`, `keys` to `step`: None where the environment reports none)."""

    fetches = ()  # tensors fetched with the raw bonus, handed to `assign` and `step` as `extra`

    def episode_begins(self, index):
        """Environment `index` begins an episode: its next step is the episode's first."""

    def episode_ends(self, index):
        """Environment `index`'s episode ended with the step last given."""


def assign_in_order(scaler, raw, extra, finished):
    """Hand the raw bonuses of the rollouts `finished` [(rollout, environment index)] to `scaler.assign` one rollout at a
    time, telling it where episodes begin (`rollout.episode_start`) and end (`rollout.episode_end`): what every
    rollout-based learner (A3C's runner) calls."""
    offset = 0
    for rollout, index in finished:
        if rollout.episode_start:
            scaler.episode_begins(index)
        scaler.assign(raw[offset:offset + len(rollout)], extra, [(rollout, index)])
        offset += len(rollout)
        if rollout.episode_end:
            scaler.episode_ends(index)


class BetaScaler(Scaler):
    """The runner's side of a bonus whose reward is `prediction_beta` x its raw value: no state."""

    def __init__(self, beta):
        self.beta = beta

    def assign(self, raw, extra, finished):
        """Set `rollout.bonuses` of the (rollout, environment index) pairs of `finished`, in order, from `raw`,
        the raw bonus of all their steps."""
        bonuses = [self.beta * float(value) for value in raw]
        for rollout, _ in finished:
            rollout.bonuses, bonuses = bonuses[:len(rollout)], bonuses[len(rollout):]

    def step(self, raw, extra, keys=None):
        """One step of every environment (a value learner's acting): ([K] rewards, None: no statistics' data)."""
        return self.beta * np.asarray(raw, np.float64), None


class Curiosity:
    """What a bonus shares: the transitions it is fed, (s_t, a_t, s_t+1), and the protocol's defaults for a
    bonus without running statistics.

    The frames come once each, with the index of s_t and of s_t+1 among them per transition: along a rollout
    s_t+1 is the next step's s_t, so a rollout of T steps feeds, and encodes, T + 1 frames instead of 2T.
    """

    episodic = True
    requires_two_streams = False
    reads_memory = False  # its scaler turns each step's row of bonus_per_step into the bonus with a memory
    state_variables = ()

    def _inputs(self, observation_shape, num_actions):
        self.frames = tf1.placeholder(tf.float32, [None, *observation_shape], name="frames")  # [M, *obs]
        self.first = tf1.placeholder(tf.int32, [None], name="first")  # [N]: index of s_t in frames
        self.second = tf1.placeholder(tf.int32, [None], name="second")  # [N]: index of s_t+1 in frames
        self.s1 = tf.gather(self.frames, self.first)  # [N, *obs]
        self.s2 = tf.gather(self.frames, self.second)  # [N, *obs]
        self.continuous = isinstance(num_actions, ContinuousActions)
        if self.continuous:
            self.actions = tf1.placeholder(tf.float32, [None, num_actions.size], name="actions")  # [N, D]
            self.action_input = self.actions
        else:
            self.actions = tf1.placeholder(tf.int32, [None], name="actions")  # [N]
            self.action_input = tf.one_hot(self.actions, num_actions)  # [N, A]

    def _forward_input(self, phi1):
        """[phi(s_t), a_t]. The action is an input, not something to learn through: no forward-loss gradient
        flows into it."""
        return tf.concat([phi1, tf.stop_gradient(self.action_input)], 1)

    def feed(self, observations, next_observations, actions):
        """Feed for N transitions given as their s_t and s_t+1."""
        count = len(actions)
        return {self.frames: np.concatenate([np.asarray(observations, np.float32),
                                             np.asarray(next_observations, np.float32)]),
                self.first: np.arange(count), self.second: np.arange(count, 2 * count),
                self.actions: self._action_feed(actions)}

    def feed_sequences(self, sequences, actions):
        """Feed for the transitions along `sequences`, each the frames s_0 .. s_T of one rollout, with the
        rollouts' `actions` concatenated."""
        starts = np.cumsum([0] + [len(frames) for frames in sequences[:-1]])
        first = np.concatenate([start + np.arange(len(frames) - 1) for start, frames in zip(starts, sequences)])
        return {self.frames: np.concatenate([np.asarray(frames, np.float32) for frames in sequences]),
                self.first: first, self.second: first + 1, self.actions: self._action_feed(actions)}

    def _action_feed(self, actions):
        return np.asarray(actions, np.float32 if self.continuous else np.int32)

    def parts(self):
        """Its trainable variables by the model they belong to, {name: [variables]}: what a learner that gives
        each model an optimiser of its own (IMPALA's predictor_optimizer rmsprop, RIDE's) steps apart."""
        return {"bonus": list(self.var_list)}

    def scaler(self, config, count):
        """The runner's side for `count` environments."""
        return BetaScaler(config.prediction_beta)

    def one_stream_weight(self, config):
        """What a learner that adds the bonus to its one reward stream (a replay learner's) multiplies the scaler's
        rewards by: 1 where the scaler has applied prediction_beta already."""
        return 1.0

    def playback_bonus(self, session, observation, next_observation, action, config):
        """The reward of one transition for playback, where no runner keeps running state."""
        raw = session.run(self.bonus_per_step, self.feed([observation], [next_observation], [action]))
        return config.prediction_beta * float(raw[0])

    def update_statistics(self, local):
        """On the global copy: the op that updates `state_variables` from `local`'s feed; None without any."""
        return None

    def update_feed(self, rollouts):
        """What `update_statistics` needs fed beyond `feed_sequences`, from the rollouts of an update."""
        return {}

    def warm_up(self, session, local, envs, config):
        """Seed the running statistics before the first update; nothing to do without any."""


class StateActionPredictor(Curiosity):
    """The Intrinsic Curiosity Module: an encoder phi, an inverse model g(phi(s), phi(s')) -> a, and a forward
    model f(phi(s), a) -> phi(s'). Its forward error is the curiosity bonus; no gradient reaches the policy."""

    def __init__(self, observation_shape, num_actions, design_head=None, unsup="action"):
        variables_before = trainable_variables()
        phi1, phi2 = self._encoder_and_inverse(observation_shape, num_actions, design_head)
        forward_hidden = tf.nn.relu(linear(self._forward_input(phi1), PREDICTOR_HIDDEN, "f1",
                                           predictor_initializer(self.head, hidden=True)))
        self.predicted_phi2 = linear(forward_hidden, self.feature_size, "flast",
                                     predictor_initializer(self.head, hidden=False))  # [N, F]
        self.forward_loss_per_step = forward_loss_per_step(self.predicted_phi2, phi2)  # [N]
        self.forward_loss = tf.reduce_mean(self.forward_loss_per_step)
        self.bonus_per_step = self.forward_loss_per_step  # [N], times prediction_beta
        self.var_list = variables_since(variables_before)

    def _encoder_and_inverse(self, observation_shape, num_actions, design_head):
        """The encoder phi and the inverse model g(phi(s), phi(s')) -> a with its loss; (phi(s_t), phi(s_t+1)),
        [N, F] each."""
        self.head = choose_head(observation_shape, design_head)
        self._inputs(observation_shape, num_actions)
        with tf1.variable_scope("encoder"):
            phi = ENCODERS[self.head](self.frames)  # [M, F]
        phi1, phi2 = tf.gather(phi, self.first), tf.gather(phi, self.second)  # [N, F] each
        self.feature_size = int(phi1.get_shape()[1])

        inverse_hidden = tf.nn.relu(linear(tf.concat([phi1, phi2], 1), PREDICTOR_HIDDEN, "g1",
                                           predictor_initializer(self.head, hidden=True)))
        if self.continuous:  # the action regressed, through the tanh that bounds it as the policy's
            self.inverse_logits = tf.tanh(linear(inverse_hidden, num_actions.size, "glast",
                                                 predictor_initializer(self.head, hidden=False)))  # [N, D]
            self.inverse_loss = inverse_regression_loss(self.inverse_logits, self.actions)
        else:
            self.inverse_logits = linear(inverse_hidden, num_actions, "glast",
                                         predictor_initializer(self.head, hidden=False))  # [N, A]
            self.inverse_loss = inverse_loss(self.inverse_logits, self.actions)
        return phi1, phi2

    # the scopes of each model's layers (the encoder's, the inverse model's g*, the forward model's f* or ensemble)
    PARTS = (("embedding", ("encoder",)), ("inverse", ("g1", "glast")), ("forward", ("f1", "flast")))

    def parts(self):
        """The embedding phi, the inverse model and the forward model (or ensemble), each a list of variables."""
        parts = {}
        for variable in self.var_list:
            scopes = variable.op.name.split("/")
            name = next((part for part, names in self.PARTS if any(scope in names for scope in scopes)), "other")
            parts.setdefault(name, []).append(variable)
        return parts

    def training_loss(self, config):
        """prediction_lr_scale x ((1 - w) x inverse + w x forward), w the forward share (forward_loss_wt)."""
        share = self.forward_share(config)
        return config.prediction_lr_scale * ((1.0 - share) * self.inverse_loss + share * self.forward_loss)

    def forward_share(self, config):
        """The forward loss's share of what trains the encoder."""
        return config.forward_loss_wt

    def summaries(self):
        return {"model/inv_loss": self.inverse_loss, "model/forward_loss": self.forward_loss}


class StatePredictor(Curiosity):
    """The paper's pixel-prediction baselines. `state`: predict the next frame from phi(s_t) and the action;
    the bonus is the pixel error. `stateAenc`: the same model, but the bonus is the distance between the
    features of s_t and s_t+1 under the encoder that this prediction trains. No inverse model."""

    def __init__(self, observation_shape, num_actions, design_head=None, unsup="state"):
        if len(observation_shape) != 3 or design_head not in (None, "universe"):
            raise ValueError(f"--unsup {unsup} predicts images with the universe head: it needs image "
                             f"observations (got shape {tuple(observation_shape)}) and --designHead universe")
        variables_before = trainable_variables()
        self.head = "universe"
        self._inputs(observation_shape, num_actions)
        with tf1.variable_scope("encoder"):
            phi = universe_head(self.frames)  # [M, F]
        phi1 = tf.gather(phi, self.first)  # [N, F]
        self.feature_size = int(phi1.get_shape()[1])
        hidden = tf.nn.relu(linear(self._forward_input(phi1), self.feature_size, "f1",
                                   normalized_columns_initializer(PREDICTOR_INIT_STD)))
        self.predicted_s2 = inverse_universe_head(hidden, list(observation_shape))  # [N, H, W, C]
        self.forward_loss_per_step = pixel_loss_per_step(self.predicted_s2, self.s2)  # [N]
        self.forward_loss = tf.reduce_mean(self.forward_loss_per_step)
        self.bonus_per_step = self.forward_loss_per_step
        if unsup == "stateAenc":
            phi2 = tf.gather(phi, self.second)
            self.bonus_per_step = 0.5 * tf.reduce_mean(tf.square(phi1 - phi2), axis=1)  # [N]
        self.var_list = variables_since(variables_before)

    def training_loss(self, config):
        """prediction_lr_scale x the pixel prediction loss (the original's loss for these baselines)."""
        return config.prediction_lr_scale * self.forward_loss

    def summaries(self):
        return {"model/forward_loss": self.forward_loss}


ENSEMBLE_SIZE = 5  # forward models of the disagreement bonus (Pathak et al. 2019)
ENSEMBLE_INIT_STD = 1.0  # their weights' scale: each model its own draw, so that they disagree where untrained


def ensemble_variance_per_step(predictions):
    """The disagreement of an ensemble's predictions [K, N, F]: the variance across the K models, summed over the
    features, for each of the N steps (Pathak et al. 2019, eq. 2: E_k ||f_k - E_k f_k||^2)."""
    _, variance = tf.nn.moments(predictions, axes=[0])  # [N, F]
    return tf.reduce_sum(variance, axis=1)  # [N]


class Disagreement(StateActionPredictor):
    """Self-supervised exploration via disagreement (Pathak et al. 2019): the ICM's encoder phi, trained by its
    inverse model alone (the paper's inverse-dynamics features), and ENSEMBLE_SIZE forward models f_k(phi(s_t),
    a_t) -> phi(s_t+1), each from its own initialisation, trained on the same transitions with phi held fixed.
    The bonus is their disagreement (ensemble_variance_per_step), which falls where they have seen enough to
    agree and, unlike a forward error, does not stay high where the next state is noise."""

    def __init__(self, observation_shape, num_actions, design_head=None, unsup="disagreement"):
        variables_before = trainable_variables()
        phi1, phi2 = self._encoder_and_inverse(observation_shape, num_actions, design_head)
        inputs, target = self._forward_input(tf.stop_gradient(phi1)), tf.stop_gradient(phi2)
        predictions = []
        for index in range(ENSEMBLE_SIZE):
            with tf1.variable_scope(f"ensemble_{index}"):
                hidden = tf.nn.relu(linear(inputs, PREDICTOR_HIDDEN, "f1",
                                           normalized_columns_initializer(ENSEMBLE_INIT_STD)))
                predictions.append(linear(hidden, self.feature_size, "flast",
                                          normalized_columns_initializer(ENSEMBLE_INIT_STD)))  # [N, F]
        self.predictions = tf.stack(predictions)  # [K, N, F]
        self.forward_loss_per_step = tf.reduce_mean(
            tf.stack([forward_loss_per_step(prediction, target) for prediction in predictions]), axis=0)  # [N]
        self.forward_loss = tf.reduce_mean(self.forward_loss_per_step)  # the models' mean: each learns its own
        self.bonus_per_step = ensemble_variance_per_step(self.predictions)  # [N], times prediction_beta
        self.var_list = variables_since(variables_before)

    def summaries(self):
        return {**super().summaries(), "model/disagreement": tf.reduce_mean(self.bonus_per_step)}


RND_FEATURES = 512  # outputs of the target and the predictor (Burda et al. 2018)
RND_EPSILON = 1e-8  # added to the variances before their square root
RND_COUNT_START = 1e-4  # the running statistics start as one tiny sample of mean 0, variance 1 (as cleanrl's)
RND_OBSERVATION_CLIP = 5.0  # normalised observations are clipped to [-5, 5] (Burda et al. 2018)
RND_WARM_UP_BATCH = 256  # random steps merged into the observation statistics per session.run


class RunningMoments:
    """Mean and variance of everything merged so far, as non-trainable variables: a copy in global/ that every
    worker updates (asynchronously, as the weights), and the local copies synced from it."""

    def __init__(self, name, shape):
        self.mean = tf1.get_variable(f"{name}_mean", shape, tf.float32, tf1.zeros_initializer(), trainable=False)
        self.var = tf1.get_variable(f"{name}_var", shape, tf.float32, tf1.ones_initializer(), trainable=False)
        self.count = tf1.get_variable(f"{name}_count", [], tf.float32,
                                      tf1.constant_initializer(RND_COUNT_START), trainable=False)
        self.variables = [self.mean, self.var, self.count]

    def merge(self, samples):
        """The op that merges `samples` [n, *shape] in: the parallel update of Chan et al. (1979)."""
        batch_mean, batch_var = tf.nn.moments(samples, axes=[0])
        batch_count = tf.cast(tf.shape(samples)[0], tf.float32)
        count = self.count + batch_count
        delta = batch_mean - self.mean
        mean = self.mean + delta * batch_count / count
        squares = self.var * self.count + batch_var * batch_count + tf.square(delta) * self.count * batch_count / count
        with tf.control_dependencies([mean, squares]):  # all three read before any is written
            return tf.group(self.mean.assign(mean), self.var.assign(squares / count), self.count.assign(count))

    def normalize(self, x):
        return (x - self.mean) / tf.sqrt(self.var + RND_EPSILON)


def frozen(getter, *args, **kwargs):
    """A variable getter that makes every variable non-trainable: RND's target network is never trained."""
    kwargs["trainable"] = False
    return getter(*args, **kwargs)


def rnd_trunk(x, head):
    """The network of the target and of the predictor's first layers: for images, RND's convolutions
    (32 8x8 /4, 64 4x4 /2, 64 3x3 /1, leaky ReLU); for MiniGrid's 7x7 views, which these would not fit, the
    minigrid head's three 3x3 convolutions of 32 with stride 2 (leaky ReLU, on the normalised codes); for vectors, two
    ELU layers."""
    if len(x.get_shape()) == 2:
        return mlp_head(x)
    if head == "minigrid":
        for i in range(MINIGRID_CONVS):
            x = tf.nn.leaky_relu(conv2d(x, 32, f"c{i + 1}", (3, 3), (2, 2)))
        return flatten(x)
    x = tf.nn.leaky_relu(conv2d(x, 32, "c1", (8, 8), (4, 4), pad="VALID"))
    x = tf.nn.leaky_relu(conv2d(x, 64, "c2", (4, 4), (2, 2), pad="VALID"))
    return flatten(tf.nn.leaky_relu(conv2d(x, 64, "c3", (3, 3), (1, 1), pad="VALID")))


class RandomNetworks:
    """RND's networks (Burda et al. 2018), which NGU's lifelong novelty reuses: running statistics of the next
    observations (the last frame of s_t+1), a fixed random target network and a predictor trained to match it, both
    fed those observations normalised and clipped. `error` [N]: half the squared error summed over the 512 features;
    `loss`: its mean over features and steps. The target and the statistics are `state_variables`."""

    def __init__(self, next_observations, head):
        global_before = set(tf1.global_variables())
        frame = len(MINIGRID_CODES) if head == "minigrid" else 1  # the channels of one frame (the last)
        shape = next_observations.get_shape().as_list()[1:]
        self.next_frames = next_observations[..., -frame:] if len(shape) == 3 else next_observations  # [N, ...]
        self.observation_moments = RunningMoments("observation", self.next_frames.get_shape().as_list()[1:])
        self.inputs = inputs = tf.clip_by_value(self.observation_moments.normalize(self.next_frames),
                                                -RND_OBSERVATION_CLIP, RND_OBSERVATION_CLIP)
        self.head, self.scope = head, tf1.get_variable_scope()
        error = self.squared_errors(inputs)  # [N, 512]
        self.error = 0.5 * tf.reduce_sum(error, axis=1)  # [N]
        self.loss = tf.reduce_mean(error)
        self.target_variables = [v for v in tf1.global_variables() if v not in global_before and "/target/" in v.name]
        self.state_variables = self.target_variables + self.observation_moments.variables
        self._observe = None  # the global copy's op merging a local copy's observations in (observe)

    def squared_errors(self, inputs):
        """The predictor's squared errors at the target's features [N, 512] for normalised `inputs`; the networks
        are made by the first call and shared by the later ones."""
        with tf1.variable_scope(self.scope, reuse=tf1.AUTO_REUSE):
            with tf1.variable_scope("target", custom_getter=frozen):
                target = linear(rnd_trunk(inputs, self.head), RND_FEATURES, "out")  # [N, 512]
            with tf1.variable_scope("predictor"):
                hidden = rnd_trunk(inputs, self.head)
                for i in range(2):
                    hidden = tf.nn.relu(linear(hidden, RND_FEATURES, f"hidden{i + 1}"))
                predicted = linear(hidden, RND_FEATURES, "out")  # [N, 512]
        return tf.square(predicted - tf.stop_gradient(target))

    def share_loss(self, proportion):
        """The loss on a random share of the steps, each kept with probability `proportion`, the networks run on
        the kept steps alone (the loss of all of them at 1); `self.kept` [M] then names the rows kept."""
        if proportion >= 1.0:
            return self.loss
        self.kept = tf.where(tf.random.uniform([tf.shape(self.inputs)[0]]) < proportion)[:, 0]  # [M]
        error = self.squared_errors(tf.gather(self.inputs, self.kept))  # [M, 512]
        return tf.reduce_sum(error) / tf.maximum(tf.cast(tf.size(error), tf.float32), 1.0)

    def observe(self, local):
        """On the global copy: the op merging the next observations `local` (a copy's RandomNetworks) is fed."""
        self._observe = self.observation_moments.merge(local.next_frames)
        return self._observe

    def warm_up(self, session, bonus, envs, steps):
        """Seed the observation statistics with `steps` random steps, fed to `bonus` (the copy observe() took),
        unless the run's (global) statistics have seen that many already (a resumed run, or another worker was
        first)."""
        if session.run(self.observation_moments.count) >= steps:
            return
        logger.info("RND: seeding the observation statistics with %d random steps", steps)
        for env in envs:
            env.reset()
        following = []  # the observations the random steps led to
        for step in range(steps):
            env = envs[step % len(envs)]
            next_observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
            following.append(next_observation)
            if terminated or truncated:
                env.reset()
            if len(following) == RND_WARM_UP_BATCH or step == steps - 1:
                session.run(self._observe, {bonus.frames: np.asarray(following, np.float32),
                                            bonus.second: np.arange(len(following))})
                following = []


class ReturnScaler(Scaler):
    """The runner's side of RND: each step's raw bonus divided by the running standard deviation of the
    discounted bonus return (Burda et al. 2018), and that return kept per environment, across episodes, for the
    statistics' update (`rollout.bonus_data`)."""

    def __init__(self, return_var, gamma, count):
        self.fetches = (return_var,)
        self.gamma = gamma
        self.running = np.zeros(count)  # per environment: sum_k gamma^k bonus[t-k], never reset

    def assign(self, raw, extra, finished):
        raw = np.asarray(raw, np.float64)
        for rollout, index in finished:
            steps, raw = raw[:len(rollout)], raw[len(rollout):]
            returns = []
            for value in steps:
                self.running[index] = self.gamma * self.running[index] + value
                returns.append(self.running[index])
            rollout.bonus_data = returns
            rollout.bonuses = list(self.scale(steps, extra))

    def step(self, raw, extra, keys=None):
        """One step of every environment (a value learner's acting): ([K] rewards, [K] bonus returns for the
        statistics' update)."""
        raw = np.asarray(raw, np.float64)
        self.running = self.gamma * self.running + raw
        return self.scale(raw, extra), self.running.copy()

    def scale(self, raw, extra):
        """Raw bonuses as rewards: over the running standard deviation of the bonus's return (`extra`: its
        variance)."""
        return np.asarray(raw, np.float64) / np.sqrt(float(extra[0]) + RND_EPSILON)


class RandomNetworkDistillation(Curiosity):
    """RND (Burda et al. 2018): the bonus is the error of a trained predictor at a fixed random target network's
    output for the next observation (its last frame), both fed it normalised by running statistics and clipped;
    the bonus is then divided by a running standard deviation of its discounted return. Non-episodic, with a
    value head of its own. The target's weights and the statistics are state_variables: synced, checkpointed,
    never trained."""

    episodic = False
    requires_two_streams = True

    def __init__(self, observation_shape, num_actions, design_head=None, unsup="rnd"):
        variables_before = trainable_variables()
        self._inputs(observation_shape, num_actions)
        self.networks = RandomNetworks(self.s2, choose_head(observation_shape, design_head))
        self.observation_moments = self.networks.observation_moments
        self.return_moments = RunningMoments("return", [])
        self.returns_in = tf1.placeholder(tf.float32, [None], name="bonus_returns")  # [N]: ReturnScaler's returns
        self.bonus_per_step = self.networks.error  # [N]
        self.forward_loss = self.networks.loss
        self.var_list = variables_since(variables_before)
        self.inputs, self.target_variables = self.networks.inputs, self.networks.target_variables
        self.state_variables = self.networks.state_variables + self.return_moments.variables

    def training_loss(self, config):
        """prediction_lr_scale x the predictor's mean squared error, on rnd_update_proportion of the steps."""
        return config.prediction_lr_scale * self.networks.share_loss(config.rnd_update_proportion)

    def summaries(self):
        return {"model/forward_loss": self.forward_loss,
                "rnd/observation_mean": tf.reduce_mean(self.observation_moments.mean),
                "rnd/observation_std": tf.reduce_mean(tf.sqrt(self.observation_moments.var)),
                "rnd/observations_seen": self.observation_moments.count,
                "rnd/return_std": tf.sqrt(self.return_moments.var)}

    def scaler(self, config, count):
        return ReturnScaler(self.return_moments.var, config.gamma_int, count)

    def one_stream_weight(self, config):
        """int_coef: the scaler's rewards are normalised by the return's deviation, and weighted as the two-stream
        path weighs the bonus's advantage."""
        return config.int_coef

    def playback_bonus(self, session, observation, next_observation, action, config):
        raw, return_var = session.run([self.bonus_per_step, self.return_moments.var],
                                      self.feed([observation], [next_observation], [action]))
        return float(raw[0] / np.sqrt(return_var + RND_EPSILON))  # a Python float: summary.json takes it

    def update_statistics(self, local):
        return tf.group(self.networks.observe(local.networks), self.return_moments.merge(local.returns_in))

    def update_feed(self, rollouts):
        return {self.returns_in: np.concatenate([np.asarray(rollout.bonus_data, np.float32)
                                                 for rollout in rollouts])}

    def warm_up(self, session, local, envs, config):
        self.networks.warm_up(session, local, envs, config.rnd_warm_up_steps)


# ---------------------------------------------------------------- episodic and count bonuses: numpy memories

E3B_RIDGE = 0.1  # E3B's lambda: each episode's covariance starts as lambda I (Henaff et al. 2022's default)
SIMHASH_BITS = 32  # SimHash's k: the bits of a state's code (Tang et al. 2017 used 64 to 256 on Atari)


class EllipticalMemory:
    """E3B's episodic memory (Henaff et al. 2022): the inverse of C_t = lambda I + sum_{i<t} phi_i phi_i^T over the
    episode's embeddings so far; the bonus of phi is phi^T C_t^-1 phi, after which phi joins C, its inverse updated
    by Sherman-Morrison: C^-1 - (C^-1 phi)(C^-1 phi)^T / (1 + phi^T C^-1 phi)."""

    def __init__(self, size, ridge=E3B_RIDGE):
        self.inverse = np.eye(size) / ridge

    def visit(self, embedding):
        """The bonus of `embedding` [F], which then joins the memory."""
        phi = np.asarray(embedding, np.float64)
        projected = self.inverse @ phi
        bonus = float(phi @ projected)
        self.inverse -= np.outer(projected, projected) / (1.0 + bonus)
        return bonus


def observation_size(observations):
    """The number of values in one of `observations` [N, ...]."""
    return int(np.prod(observations.get_shape().as_list()[1:]))


class SimHash:
    """Tang et al. (2017)'s locality-sensitive code of a state: the signs of a fixed Gaussian projection of its
    features, sgn(A g(s)) with A [k, D] ~ N(0, 1), as a hashable key."""

    def __init__(self, size, bits=SIMHASH_BITS, seed=0):
        self.projection = np.random.default_rng(seed).normal(size=(bits, size))

    def __call__(self, features):
        return np.packbits(self.projection @ np.asarray(features, np.float64).ravel() > 0).tobytes()


def observation_key(head, size):
    """The key a state's observation (flattened, `size` values) is counted under where the environment's key of the
    whole state is not used: its exact values where the head reads discrete codes (MiniGrid's view), else its
    SimHash code (Tang et al.'s pixel variant: on pixels nearly every frame is new, and near ones should share a
    count)."""
    return exact_key if head in CODE_HEADS else SimHash(size)


def exact_key(features):
    return np.asarray(features, np.float32).tobytes()


class CountMemory:
    """Counts of states under a key (`hasher`: SimHash's codes for Tang et al. 2017's pseudo-counts): the bonus of a
    state is 1 / sqrt(n(key)) once it is counted. Lifelong in each process when kept for its life, as theirs."""

    def __init__(self, hasher):
        self.hasher, self.counts = hasher, {}

    def visit(self, features, key=None):
        """The bonus of a state, counted under `key` where given (the environment's key of its whole state), else
        under its features' hash."""
        code = self.hasher(features) if key is None else key
        self.counts[code] = self.counts.get(code, 0) + 1
        return 1.0 / np.sqrt(self.counts[code])


NGU_NEIGHBOURS = 10  # k (Badia et al. 2020, Table 5)
NGU_KERNEL_EPSILON = 1e-3  # the kernel's epsilon
NGU_CLUSTER_DISTANCE = 8e-3  # xi: normalised distances below it count as the same state
NGU_PSEUDO_COUNT = 1e-3  # c, added to the similarity's square root
NGU_MAX_SIMILARITY = 8.0  # s_max: a state more similar than this to the memory earns nothing
NGU_MAX_MODULATION = 5.0  # L: the most RND's lifelong novelty multiplies the episodic novelty by


class NearestNeighbourMemory:
    """NGU's episodic memory (Badia et al. 2020, Algorithm 1): the episode's embeddings; the bonus of f is
    1 / (sqrt(sum_{k neighbours} K(f, f_k)) + c), 0 when that similarity exceeds s_max, with the kernel
    K = epsilon / (d^2 / d_m^2 - xi)_+ + epsilon), d_m^2 the running mean of the squared distances to the k-th
    nearest neighbours; then f joins the memory. `mean` is [sum, count] of those distances, kept across episodes
    (the memory is new each episode)."""

    def __init__(self, neighbours=NGU_NEIGHBOURS, mean=None):
        self.neighbours, self.embeddings = neighbours, []
        self.mean = [0.0, 0] if mean is None else mean

    def visit(self, embedding):
        f = np.asarray(embedding, np.float64)
        # the episode's first state has no neighbour: it earns what one visit of a state earns, K(f, f) = 1
        bonus = 1.0 / (1.0 + NGU_PSEUDO_COUNT) if not self.embeddings else self._bonus(f)
        self.embeddings.append(f)
        return bonus

    def _bonus(self, f):
        squared = np.sort(np.sum(np.square(np.asarray(self.embeddings) - f), axis=1))[:self.neighbours]
        self.mean[0] += float(np.sum(squared))
        self.mean[1] += len(squared)
        normalised = squared / max(self.mean[0] / self.mean[1], 1e-12)
        kernel = NGU_KERNEL_EPSILON / (np.maximum(normalised - NGU_CLUSTER_DISTANCE, 0.0) + NGU_KERNEL_EPSILON)
        similarity = np.sqrt(np.sum(kernel)) + NGU_PSEUDO_COUNT
        return 0.0 if similarity > NGU_MAX_SIMILARITY else 1.0 / similarity


class ImpactMemory(CountMemory):
    """RIDE's episodic count: a step's row [impact, observation...] earns impact / sqrt(n), n the episode's visits
    so far of the state's key (the environment's, where given) or else of the observation's, this one included."""

    def visit(self, row, key=None):
        return float(row[0]) * super().visit(row[1:], key)


class ErrorStatistics:
    """Running mean and standard deviation of a stream of values (Welford's algorithm): RND's errors for NGU's
    modulation, a memory bonus's values for normalise_bonus; over the process's life."""

    def __init__(self):
        self.count, self.mean, self.squares = 0, 0.0, 0.0

    def add(self, value):
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.squares += delta * (value - self.mean)

    @property
    def std(self):
        return float(np.sqrt(self.squares / self.count)) if self.count else 0.0


class MemoryScaler(Scaler):
    """The acting side of a bonus whose reward needs a memory beyond the graph, made by `new_memory()`: one per
    environment, new at each of its episodes, when `episodic`; else one for all the environments, kept for the
    process's life. The memory turns what the graph gives of each step (`bonus_per_step`'s row) into its bonus,
    times `beta`; with `keyed` a counting memory is also given the environment's key of s_t+1's whole state. With
    `normalise`, each bonus is divided by the standard deviation of every bonus the scaler has made, this one
    included (`moments`: normalise_bonus)."""

    def __init__(self, new_memory, beta, count, episodic, keyed=False, normalise=False):
        self.new_memory, self.beta, self.episodic, self.keyed = new_memory, beta, episodic, keyed
        self.moments = ErrorStatistics() if normalise else None
        shared = None if episodic else new_memory()
        self.memories = [new_memory() if episodic else shared for _ in range(count)]

    def episode_begins(self, index):
        if self.episodic:
            self.memories[index] = self.new_memory()

    def assign(self, raw, extra, finished):
        raw = np.asarray(raw)
        for rollout, index in finished:
            steps, raw = raw[:len(rollout)], raw[len(rollout):]
            keys = rollout.state_keys or [None] * len(steps)
            rollout.bonuses = [self.beta * self.visit(self.memories[index], row, key) for row, key in zip(steps, keys)]

    def step(self, raw, extra, keys=None):
        """One step of every environment: ([K] rewards, None)."""
        keys = [None] * len(self.memories) if keys is None else keys
        return self.beta * np.array([self.visit(memory, row, key)
                                     for memory, row, key in zip(self.memories, np.asarray(raw), keys)]), None

    def visit(self, memory, row, key):
        bonus = memory.visit(row, key) if self.keyed else memory.visit(row)
        if self.moments is None:
            return bonus
        self.moments.add(bonus)
        std = self.moments.std
        return bonus / std if std > 0 else bonus


class EmbeddingMemoryBonus(StateActionPredictor):
    """A bonus read from a memory of embeddings of the states: the ICM's encoder phi trained by its inverse model
    (and, with `forward`, its forward model too), whose embedding of s_t+1 the graph gives for each step
    (`bonus_per_step`, [N, F]); the scaler's memory (`memory`) makes the bonus of it. No value head of its own is
    needed; an episodic one is reset with each episode. A replay learner stores it as the actor computed it, over
    the episode so far (relabel_bonus does not apply: a loose transition has no episode)."""

    reads_memory = True
    forward = False  # whether the ICM's forward model trains phi too (RIDE), beside the inverse model
    memory_of_episode = True  # the memory is reset with each episode (not: lifelong in each process)
    counts_states = False  # the memory counts states (under count_full_state, by the environment's key)

    def __init__(self, observation_shape, num_actions, design_head=None, unsup=None):
        variables_before = trainable_variables()
        phi1, phi2 = self._encoder_and_inverse(observation_shape, num_actions, design_head)
        self.phi1, self.phi2 = phi1, phi2
        self.forward_loss = tf.constant(0.0)
        if self.forward:
            hidden = tf.nn.relu(linear(self._forward_input(phi1), PREDICTOR_HIDDEN, "f1",
                                       predictor_initializer(self.head, hidden=True)))
            predicted = linear(hidden, self.feature_size, "flast", predictor_initializer(self.head, hidden=False))
            self.forward_loss = tf.reduce_mean(forward_loss_per_step(predicted, phi2))
        self.bonus_per_step = tf.stop_gradient(self.step_rows())  # [N, ...]: what the memory reads of each step
        self.var_list = variables_since(variables_before)

    def step_rows(self):
        return self.phi2

    def memory(self):
        raise NotImplementedError

    def training_loss(self, config):
        """The ICM's mix of inverse and forward losses (at forward_share) with a forward model, prediction_lr_scale x
        inverse without."""
        if not self.forward:
            return config.prediction_lr_scale * self.inverse_loss
        return super().training_loss(config)

    def summaries(self):
        return {"model/inv_loss": self.inverse_loss, **({"model/forward_loss": self.forward_loss}
                                                         if self.forward else {})}

    def scaler(self, config, count):
        return MemoryScaler(self.memory, config.prediction_beta, count, self.memory_of_episode,
                            keyed=self.counts_states and config.count_full_state, normalise=config.normalise_bonus)

    def playback_bonus(self, session, observation, next_observation, action, config):
        """Playback keeps no memory: the bonus of s_t+1 as the first state of an episode."""
        rows = session.run(self.bonus_per_step, self.feed([observation], [next_observation], [action]))
        return config.prediction_beta * float(self.memory().visit(rows[0]))


class EllipticalBonus(EmbeddingMemoryBonus):
    """E3B (Henaff et al. 2022): phi^T C^-1 phi of the embedding of s_t+1 under the episode's inverse covariance
    (EllipticalMemory)."""

    def memory(self):
        return EllipticalMemory(self.feature_size)


class ImpactBonus(EmbeddingMemoryBonus):
    """RIDE (Raileanu and Rocktaschel 2020): the impact ||phi(s_t+1) - phi(s_t)||_2 of each step, phi trained by
    the ICM's inverse and forward losses in RIDE's proportion (ride_forward_share), divided by sqrt(N_episode(s_t+1)),
    the count of s_t+1 in the episode so far: under the environment's key of its whole state with count_full_state
    (MiniGrid's fully observed grid, as RIDE's code counts), else of its observation (observation_key)."""

    forward = True
    counts_states = True

    def step_rows(self):
        impact = tf.norm(self.phi2 - self.phi1, axis=1, keepdims=True)  # [N, 1]
        return tf.concat([impact, flatten(self.s2)], 1)  # [N, 1 + size of an observation]

    def memory(self):
        return ImpactMemory(observation_key(self.head, observation_size(self.s2)))

    def forward_share(self, config):
        """RIDE's: its embedding is shaped mostly by the forward model, the inverse model keeping it from
        collapsing."""
        return config.ride_forward_share


class NearestNeighbourBonus(EmbeddingMemoryBonus):
    """NGU's episodic novelty (Badia et al. 2020): the k nearest neighbours of the embedding of s_t+1 among the
    episode's (NearestNeighbourMemory), the running mean of their distances kept across the process's episodes;
    without RND's lifelong modulation (`ngu_rnd` has it)."""

    def __init__(self, observation_shape, num_actions, design_head=None, unsup=None):
        super().__init__(observation_shape, num_actions, design_head, unsup)
        self.distances = [0.0, 0]  # [sum, count] of the k-th neighbours' squared distances, over every episode

    def memory(self):
        return NearestNeighbourMemory(mean=self.distances)


class ModulatedMemory:
    """NGU's intrinsic reward (Badia et al. 2020, eq. 1): the episodic novelty of a step's embedding (the row's
    rest) times min(max(alpha, 1), L), alpha = 1 + (e - mean(e)) / std(e) of its RND error e (the row's first
    value) against every error the process has seen, this one included; L = NGU_MAX_MODULATION."""

    def __init__(self, episodic, errors):
        self.episodic, self.errors = episodic, errors

    def visit(self, row):
        error = float(row[0])
        self.errors.add(error)
        std = self.errors.std
        alpha = 1.0 + (error - self.errors.mean) / std if std > 0 else 1.0
        return self.episodic.visit(row[1:]) * min(max(alpha, 1.0), NGU_MAX_MODULATION)


class ModulatedNearestNeighbourBonus(NearestNeighbourBonus):
    """NGU's intrinsic reward whole: the episodic novelty of NearestNeighbourBonus times the lifelong novelty of
    RND's error on s_t+1 (ModulatedMemory); RND's predictor trains beside the inverse model, its target and
    observation statistics are state, as `rnd`'s are. Each step's row: [RND error, embedding...]."""

    def __init__(self, observation_shape, num_actions, design_head=None, unsup=None):
        super().__init__(observation_shape, num_actions, design_head, unsup)  # builds self.networks (step_rows)
        self.state_variables = self.networks.state_variables
        self.errors = ErrorStatistics()

    def step_rows(self):
        """Called by EmbeddingMemoryBonus.__init__ once s_t+1 and phi exist: RND's networks are built here, on s_t+1,
        so that its predictor's variables are among the bonus's var_list."""
        self.networks = RandomNetworks(self.s2, self.head)
        return tf.concat([self.networks.error[:, None], self.phi2], 1)  # [N, 1 + F]

    def memory(self):
        return ModulatedMemory(super().memory(), self.errors)

    def training_loss(self, config):
        """The inverse model's, and prediction_lr_scale x RND's predictor's mean squared error."""
        return super().training_loss(config) + config.prediction_lr_scale * self.networks.loss

    def summaries(self):
        return {**super().summaries(), "model/forward_loss": self.networks.loss,
                "rnd/observations_seen": self.networks.observation_moments.count}

    def update_statistics(self, local):
        return self.networks.observe(local.networks)

    def warm_up(self, session, local, envs, config):
        self.networks.warm_up(session, local, envs, config.rnd_warm_up_steps)


class CountBonus(EmbeddingMemoryBonus):
    """Counts of the states (Tang et al. 2017): 1 / sqrt(n(s_t+1)), counted over each process's life under the
    environment's key of the whole state with count_full_state where it reports one (MiniGrid's fully observed
    grid, as RIDE's count baseline), else under observation_key (exact on MiniGrid's codes; SimHash codes of the
    pixels elsewhere). The encoder and inverse model it inherits train but do not enter the bonus."""

    memory_of_episode = False
    counts_states = True

    def step_rows(self):
        return flatten(self.s2)  # [N, size of an observation]

    def memory(self):
        return CountMemory(observation_key(self.head, observation_size(self.s2)))


BONUSES = {"action": StateActionPredictor, "state": StatePredictor, "stateAenc": StatePredictor,
           "rnd": RandomNetworkDistillation, "disagreement": Disagreement, "e3b": EllipticalBonus, "ride": ImpactBonus,
           "ngu": NearestNeighbourBonus, "ngu_rnd": ModulatedNearestNeighbourBonus, "counts": CountBonus}


def two_streams(unsup, config):
    """Whether the bonus has a value head and a return of its own (see Config.two_streams)."""
    return unsup != "none" and (config.two_streams or BONUSES[unsup].requires_two_streams)


def build(unsup, observation_shape, num_actions, design_head=None):
    """The bonus `unsup` (constants.CURIOSITY_CHOICES, not none) in the current variable scope."""
    return BONUSES[unsup](observation_shape, num_actions, design_head, unsup)
