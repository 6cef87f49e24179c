"""Networks: the design heads, the LSTM, and the actor-critic policy built on them.

Written with `tf.compat.v1.get_variable` because Keras 3 removed `tf.compat.v1.layers` and
`tf.compat.v1.nn.rnn_cell`. Inputs are batches of sequences, `[B, T, *observation_shape]`: acting feeds
B environments one step each (T = 1), training feeds the rollouts of an update (B = rollouts, one per
environment of the worker unless an episode ended; T = the longest, the others padded), so one `session.run`
acts for, or trains on, several environments. The curiosity bonuses are in curiosity.py.
"""
import collections

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

IMAGE_HEADS = ("universe", "nips", "nature", "doom", "minigrid")
UNIVERSE_CONVS = 4
MLP_UNITS = 64  # each of the mlp head's two layers (config.mlp_units; the curiosity predictors' encoder keeps it)
VALUE_INIT_STD = 1.0
LOGITS_INIT_STD = 0.01


def normalized_columns_initializer(std=1.0):
    """Columns of unit norm times `std` (the universe-starter-agent initialisation of output layers)."""

    def _initializer(shape, dtype=None, partition_info=None):
        out = np.random.randn(*shape).astype(np.float32)
        out *= std / np.sqrt(np.square(out).sum(axis=0, keepdims=True))
        return tf.constant(out)

    return _initializer


def flatten(x):
    return tf.reshape(x, [-1, int(np.prod(x.get_shape().as_list()[1:]))])


def glorot_uniform_weights(shape, fan_in, fan_out):
    """Filter weights `W`, uniform in +-sqrt(6 / (fan_in + fan_out)) (the original's initialisation)."""
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return tf1.get_variable("W", shape, tf.float32, tf1.random_uniform_initializer(-bound, bound))


def conv2d(x, num_filters, name, filter_size=(3, 3), stride=(1, 1), pad="SAME"):
    """2-D convolution with the Glorot-style uniform initialisation of the original."""
    with tf1.variable_scope(name):
        stride_shape = [1, stride[0], stride[1], 1]
        filter_shape = [filter_size[0], filter_size[1], int(x.get_shape()[3]), num_filters]
        w = glorot_uniform_weights(filter_shape, fan_in=np.prod(filter_shape[:3]),
                                   fan_out=np.prod(filter_shape[:2]) * num_filters)
        b = tf1.get_variable("b", [1, 1, 1, num_filters], initializer=tf1.zeros_initializer())
        return tf.nn.conv2d(x, w, stride_shape, pad) + b


def deconv2d(x, output_shape, name, filter_size=(4, 4), stride=(2, 2)):
    """Transposed convolution to `output_shape` [N, H, W, C], initialised like `conv2d`."""
    with tf1.variable_scope(name):
        num_filters = output_shape[-1]
        filter_shape = [filter_size[0], filter_size[1], num_filters, int(x.get_shape()[3])]
        w = glorot_uniform_weights(filter_shape, fan_in=np.prod(filter_shape[:2]) * filter_shape[3],
                                   fan_out=np.prod(filter_shape[:3]))
        b = tf1.get_variable("b", [1, 1, 1, num_filters], initializer=tf1.zeros_initializer())
        return tf.nn.conv2d_transpose(x, w, tf.stack(output_shape), [1, stride[0], stride[1], 1], "SAME") + b


def linear(x, size, name, initializer=None):
    with tf1.variable_scope(name):
        w = tf1.get_variable("w", [int(x.get_shape()[1]), size], initializer=initializer)
        b = tf1.get_variable("b", [size], initializer=tf1.zeros_initializer())
        return tf.matmul(x, w) + b


def universe_head(x):
    """universe-starter-agent: 4 x (conv 32 3x3 stride 2, ELU); 42x42 -> 3x3x32 = 288 features."""
    for i in range(UNIVERSE_CONVS):
        x = tf.nn.elu(conv2d(x, 32, f"l{i + 1}", (3, 3), (2, 2)))
    return flatten(x)


def inverse_universe_head(x, image_shape):
    """288 features -> an image of `image_shape` (H, W, C): the universe trunk mirrored by transposed
    convolutions (4x4, stride 2), ELU between them, as noreward-rl's inverseUniverseHead."""
    batch = tf.shape(x)[0]
    heights, widths = [image_shape[0]], [image_shape[1]]
    for _ in range(UNIVERSE_CONVS):  # the sizes the universe trunk passes through: 42, 21, 11, 6, 3
        heights.append((heights[-1] - 1) // 2 + 1)
        widths.append((widths[-1] - 1) // 2 + 1)
    x = tf.reshape(x, [-1, heights[-1], widths[-1], 32])
    for i in range(1, UNIVERSE_CONVS):
        x = tf.nn.elu(deconv2d(x, [batch, heights[-1 - i], widths[-1 - i], 32], f"dl{i}"))
    return deconv2d(x, [batch, *image_shape], f"dl{UNIVERSE_CONVS}")


def nips_head(x):
    """DQN NIPS 2013 trunk, as in noreward-rl."""
    x = tf.nn.relu(conv2d(x, 16, "l1", (8, 8), (4, 4), pad="VALID"))
    x = tf.nn.relu(conv2d(x, 32, "l2", (4, 4), (2, 2), pad="VALID"))
    return tf.nn.relu(linear(flatten(x), 256, "fc", normalized_columns_initializer(0.01)))


def nature_head(x):
    """DQN Nature 2015 trunk, as in noreward-rl."""
    x = tf.nn.relu(conv2d(x, 32, "l1", (8, 8), (4, 4), pad="VALID"))
    x = tf.nn.relu(conv2d(x, 64, "l2", (4, 4), (2, 2), pad="VALID"))
    x = tf.nn.relu(conv2d(x, 64, "l3", (3, 3), (1, 1), pad="VALID"))
    return tf.nn.relu(linear(flatten(x), 512, "fc", normalized_columns_initializer(0.01)))


def doom_head(x):
    """'Learning to act by predicting the future' trunk, as in noreward-rl's doomHead."""
    x = tf.nn.elu(conv2d(x, 8, "l1", (5, 5), (4, 4)))
    x = tf.nn.elu(conv2d(x, 16, "l2", (3, 3), (2, 2)))
    x = tf.nn.elu(conv2d(x, 32, "l3", (3, 3), (2, 2)))
    x = tf.nn.elu(conv2d(x, 64, "l4", (3, 3), (2, 2)))
    return tf.nn.elu(linear(flatten(x), 256, "fc", normalized_columns_initializer(0.01)))


MINIGRID_CODES = (11, 6, 3)  # how many values each of a MiniGrid cell's codes takes: object, colour, state
CODE_HEADS = ("minigrid",)  # heads whose observations are discrete codes: a state there can be counted exactly
MINIGRID_CONVS = 3
# the 3x3 convolutions' channels (stride 2, ELU: 7x7 -> 1x1) in RIDE's networks (Raileanu and Rocktaschel 2020): its
# MinigridPolicyNet's trunk, and its MinigridStateEmbeddingNet, the state embedding its bonus's models share
MINIGRID_CHANNELS = (32,) * MINIGRID_CONVS
MINIGRID_EMBEDDING_CHANNELS = (32, 32, 128)


def minigrid_trunk(x, channels=MINIGRID_CHANNELS):
    """MiniGrid's compact view [N, 7, 7, 3 x frames]: each cell's codes one-hot (the first convolution then embeds
    them: a code is a category, not a magnitude), then RIDE's three 3x3 convolutions with stride 2 (ELU), 7x7 ->
    1x1 x the last's channels."""
    codes = tf.cast(x, tf.int32)
    x = tf.concat([tf.one_hot(codes[..., channel], MINIGRID_CODES[channel % len(MINIGRID_CODES)])
                   for channel in range(x.get_shape()[-1])], axis=-1)  # [N, 7, 7, 20 x frames]
    for i, width in enumerate(channels):
        x = tf.nn.elu(conv2d(x, width, f"l{i + 1}", (3, 3), (2, 2)))
    return flatten(x)  # [N, channels[-1]]


def minigrid_embedding(x):
    """RIDE's state embedding of a view (its MinigridStateEmbeddingNet): 128 features, no layer on top."""
    return minigrid_trunk(x, MINIGRID_EMBEDDING_CHANNELS)


def minigrid_head(x):
    """The policy's trunk on MiniGrid: RIDE's convolutions and a layer of 256 (its policy network's), initialised
    at unit scale: features of 0.01's scale, as the original's Doom head has, left a curiosity encoder's embeddings
    all but equal."""
    return tf.nn.elu(linear(minigrid_trunk(x), 256, "fc", normalized_columns_initializer(1.0)))


def mlp_head(x, units=MLP_UNITS):
    """Two ELU layers of `units` for vector observations (classic control)."""
    for i in range(2):
        x = tf.nn.elu(linear(x, units, f"fc{i + 1}", normalized_columns_initializer(1.0)))
    return x


HEADS = {"universe": universe_head, "nips": nips_head, "nature": nature_head, "doom": doom_head,
         "minigrid": minigrid_head, "mlp": mlp_head}
# A curiosity encoder's embedding for each head: the head's own, but on MiniGrid RIDE's state embedding
ENCODERS = {**HEADS, "minigrid": minigrid_embedding}


def head_features(head, x, mlp_units=MLP_UNITS):
    """The features of the design head `head` on a batch of observations; the mlp's layers have `mlp_units`."""
    return mlp_head(x, mlp_units) if head == "mlp" else HEADS[head](x)


def choose_head(observation_shape, design_head=None):
    """The head for these observations: `mlp` for vectors, `universe` for images unless one is named."""
    if len(observation_shape) == 1:
        if design_head not in (None, "mlp"):
            raise ValueError(f"--designHead {design_head} needs image observations; this environment "
                             f"gives vectors of shape {tuple(observation_shape)} (use mlp)")
        return "mlp"
    if design_head is None:
        return "universe"
    if design_head not in IMAGE_HEADS:
        raise ValueError(f"--designHead {design_head} does not take images; choose one of {IMAGE_HEADS}")
    if design_head == "minigrid" and observation_shape[-1] % len(MINIGRID_CODES):
        raise ValueError(f"--designHead minigrid reads MiniGrid's codes, {len(MINIGRID_CODES)} channels a frame; "
                         f"these observations have shape {tuple(observation_shape)}")
    return design_head


def trainable_variables():
    return list(tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES))


def variables_since(before):
    """The trainable variables created after `before` was taken: a network's own, whatever the scopes."""
    known = {id(v) for v in before}
    return [v for v in trainable_variables() if id(v) not in known]


LSTMState = collections.namedtuple("LSTMState", ("c", "h"))


def lstm_variables(input_size, num_units):
    """An LSTM's kernel [input + units, 4 units] (the rows of the input over those of h) and bias [4 units], named
    as they were when the cell took the concatenated [x, h] (lstm_cell/gates/w and b): checkpoints still restore."""
    with tf1.variable_scope("lstm_cell"), tf1.variable_scope("gates"):
        kernel = tf1.get_variable("w", [input_size + num_units, 4 * num_units])
        bias = tf1.get_variable("b", [4 * num_units], initializer=tf1.zeros_initializer())
    return kernel, bias


def input_gates(inputs, kernel, bias):
    """The inputs' share of the gates, x W_x + b, for inputs [N, input]: computed for every step of a batch of
    sequences in one matmul before the recurrence, which is left only h W_h a step (about 20% less of the LSTM's
    CPU time than the concatenated [x, h] each step, on IMPALA's batches of 32 x 100 steps)."""
    return tf.matmul(inputs, kernel[:int(inputs.get_shape()[-1])]) + bias  # [N, 4 units]


class LSTMCell:
    """A basic LSTM cell (forget-gate bias 1) that `tf.compat.v1.nn.dynamic_rnn` can drive: its inputs are the
    inputs' share of the gates (input_gates), it adds h W_h with `kernel`'s last rows. Given inputs (gates, resets
    [B, 1]), a step whose reset is 1 starts from the zero state (a new episode inside a sequence: IMPALA's unrolls)."""

    def __init__(self, num_units, kernel, forget_bias=1.0):
        self.num_units = num_units
        self.recurrent_kernel = kernel[-num_units:]  # [units, 4 units]
        self.forget_bias = forget_bias

    @property
    def state_size(self):
        return LSTMState(self.num_units, self.num_units)

    @property
    def output_size(self):
        return self.num_units

    def zero_state(self, batch_size, dtype):
        return LSTMState(tf.zeros([batch_size, self.num_units], dtype), tf.zeros([batch_size, self.num_units], dtype))

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return self.zero_state(batch_size, dtype)

    def __call__(self, inputs, state):
        gates_of_inputs = inputs
        if isinstance(inputs, tuple):
            gates_of_inputs, resets = inputs
            state = LSTMState(state.c * (1.0 - resets), state.h * (1.0 - resets))
        gates = gates_of_inputs + tf.matmul(state.h, self.recurrent_kernel)
        i, j, f, o = tf.split(gates, 4, axis=1)  # input, candidate, forget, output
        c = state.c * tf.sigmoid(f + self.forget_bias) + tf.sigmoid(i) * tf.tanh(j)
        h = tf.tanh(c) * tf.sigmoid(o)
        return h, LSTMState(c, h)


class LSTMPolicy:
    """Actor-critic: design head -> LSTM -> policy logits and value, on inputs `[B, T, *obs_shape]`.

    With `two_streams` a second value head, `value_int`, predicts the return of the curiosity bonus alone
    (Burda et al. 2018, RND: the extrinsic and intrinsic returns have a value head each); else it is None.
    """

    def __init__(self, observation_shape, num_actions, design_head=None, lstm_size=256, two_streams=False,
                 mlp_units=MLP_UNITS):
        variables_before = trainable_variables()
        self.head = choose_head(observation_shape, design_head)
        self.num_actions = num_actions
        self.lstm_size = lstm_size
        self.x = x = tf1.placeholder(tf.float32, [None, None, *observation_shape], name="observations")
        batch, time = tf.shape(x)[0], tf.shape(x)[1]
        frames = tf.reshape(x, [-1, *observation_shape])  # [B*T, *obs]
        features = head_features(self.head, frames, mlp_units)
        self.features = features = tf.reshape(features, [batch, time, int(features.get_shape()[1])])  # [B, T, F]

        self.state_in = LSTMState(tf1.placeholder(tf.float32, [None, lstm_size], name="c_in"),
                                  tf1.placeholder(tf.float32, [None, lstm_size], name="h_in"))
        # Sequences of a batch may be shorter than T (an episode ended): fed lengths, padded with zeros.
        self.lengths = tf1.placeholder_with_default(tf.fill([batch], time), [None], name="lengths")  # [B]
        # 1 where a sequence's LSTM state is zeroed before the frame: a new episode inside the sequence
        self.resets = tf1.placeholder_with_default(tf.zeros([batch, time]), [None, None], name="resets")  # [B, T]
        feature_size = int(features.get_shape()[2])
        with tf1.variable_scope("lstm"):
            kernel, bias = lstm_variables(feature_size, lstm_size)
        gates = tf.reshape(input_gates(tf.reshape(features, [-1, feature_size]), kernel, bias),
                           [batch, time, 4 * lstm_size])  # [B, T, 4 lstm]
        lstm_out, state_out = tf1.nn.dynamic_rnn(LSTMCell(lstm_size, kernel), (gates, self.resets[:, :, None]),
                                                 initial_state=self.state_in,
                                                 sequence_length=self.lengths, time_major=False, scope="lstm")
        self.state_out = state_out
        flat = tf.reshape(lstm_out, [-1, lstm_size])  # [B*T, lstm]
        self.logits = linear(flat, num_actions, "action", normalized_columns_initializer(LOGITS_INIT_STD))  # [B*T, A]
        self.value = tf.reshape(linear(flat, 1, "value", normalized_columns_initializer(VALUE_INIT_STD)), [-1])
        steps = tf.reshape(tf.sequence_mask(self.lengths, time), [-1])  # [B*T]: the real steps, not padding
        self.step_logits = tf.boolean_mask(self.logits, steps)  # [N, A], N = sum(lengths)
        self.step_values = tf.boolean_mask(self.value, steps)  # [N]
        self.value_int = self.step_values_int = None
        if two_streams:
            self.value_int = tf.reshape(linear(flat, 1, "value_int", normalized_columns_initializer(VALUE_INIT_STD)),
                                        [-1])  # [B*T]
            self.step_values_int = tf.boolean_mask(self.value_int, steps)  # [N]
        # Acting feeds one step (T = 1): the cell once on that step's gates, where dynamic_rnn would run a loop of
        # one iteration; the same numbers in 89 operations an act call instead of 226 on Doom's head, about 0.3 ms
        # less a call (docs/history/2026-12-04-speed.md). Steps are never reset while acting: the runner zeroes an
        # environment's state when its episode ends.
        act_out, self.act_state_out = LSTMCell(lstm_size, kernel)(gates[:, 0], self.state_in)  # [B, lstm]
        with tf1.variable_scope(tf1.get_variable_scope(), reuse=True):
            self.act_logits = linear(act_out, num_actions, "action")  # [B, A]
            self.act_value = tf.reshape(linear(act_out, 1, "value"), [-1])  # [B]
            self.act_value_int = tf.reshape(linear(act_out, 1, "value_int"), [-1]) if two_streams else None  # [B]
        self.act_log_probs = tf.nn.log_softmax(self.act_logits)  # [B, A]: what a behaviour policy records (IMPALA)
        self.act_sample = tf.squeeze(tf.random.categorical(self.act_logits, 1), axis=1)  # [B]
        self.act_greedy = tf.argmax(self.act_logits, axis=1)  # [B]
        self.var_list = variables_since(variables_before)

    def feed(self, observations, state):
        """Feed for one step of B environments: observations [B, *obs] and their LSTM state."""
        observations = np.asarray(observations, np.float32)[:, None]  # [B, 1, *obs]
        return {self.x: observations, self.state_in.c: state.c, self.state_in.h: state.h}

    def initial_state(self, batch_size=1):
        zeros = np.zeros((batch_size, self.lstm_size), np.float32)
        return LSTMState(zeros, zeros.copy())

    def act(self, session, observations, state, greedy=False):
        """One step for B environments: (actions [B], values [B], next LSTM state), in one session.run."""
        return self.act_and_fetch(session, observations, state, greedy=greedy)[:3]

    def act_and_fetch(self, session, observations, state, fetches=(), feed=None, greedy=False):
        """`act`, plus `fetches` (fed by `feed`) computed in the same session.run: (actions, values, state,
        [fetched])."""
        all_feed = self.feed(observations, state)
        all_feed.update(feed or {})
        action_op = self.act_greedy if greedy else self.act_sample
        actions, values, (c, h), *fetched = session.run([action_op, self.act_value, self.act_state_out, *fetches],
                                                        all_feed)
        return actions, values, LSTMState(c, h), fetched

    def value_of(self, session, observations, state):
        """V(s) for B environments given their LSTM state, e.g. to bootstrap a cut-off rollout: (values [B],
        the intrinsic head's values [B] or None)."""
        if self.act_value_int is None:
            return session.run(self.act_value, self.feed(observations, state)), None
        return tuple(session.run([self.act_value, self.act_value_int], self.feed(observations, state)))


def observation_placeholder(observation_shape, observation_dtype, name):
    """[B, *shape] observations as a replay stores them: uint8 images, float32 vectors."""
    return tf1.placeholder(tf.uint8 if observation_dtype == np.uint8 else tf.float32, [None, *observation_shape], name)
