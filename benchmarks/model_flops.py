#!/usr/bin/env python
"""Floating-point operations per environment step of the Doom model, counted by TensorFlow's profiler.

The profiler needs static shapes and does not look inside `dynamic_rnn`'s while loop, so this builds the same
layers as `model.LSTMPolicy` and `curiosity.StateActionPredictor` (the universe head, `model.LSTMCell` called once
per step, the inverse and forward models) on fixed batches: acting for K environments, one update on K x T
steps, the ICM bonus over the rollouts' T + 1 frames each, and the ICM update. Updates count the forward pass
and the gradients.

    python benchmarks/model_flops.py                 # Doom: 42x42x4, 4 actions, K = 16, T = 20
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import logdir  # noqa: E402

logdir.tf_environment()

import constants  # noqa: E402


def count(build):
    """Float operations of the graph `build()` makes."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    with tf.Graph().as_default() as graph:
        build()
        options = tf1.profiler.ProfileOptionBuilder.float_operation()
        options["output"] = "none"
        return tf1.profiler.profile(graph, options=options).total_float_ops


def per_step(shape, actions, k, t, lstm_size):
    """{phase: MFLOP per environment step}."""
    import tensorflow as tf

    import curiosity
    import model

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    steps = k * t

    def policy(batch):
        frames = tf1.placeholder(tf.float32, [batch, *shape])
        features = model.universe_head(frames)
        state = model.LSTMState(tf.zeros([batch, lstm_size]), tf.zeros([batch, lstm_size]))
        kernel, bias = model.lstm_variables(int(features.get_shape()[1]), lstm_size)
        gates = model.input_gates(features, kernel, bias)
        out, _ = model.LSTMCell(lstm_size, kernel)(gates, state)  # one step of the cell per frame
        return model.linear(out, actions, "action"), model.linear(out, 1, "value")

    def icm(batch):
        frames = tf1.placeholder(tf.float32, [batch + k, *shape])  # T + 1 frames per rollout, each encoded once
        phi = model.universe_head(frames)
        phi1, phi2 = phi[:batch], phi[k:]
        action = tf1.placeholder(tf.float32, [batch, actions])
        hidden = tf.nn.relu(model.linear(tf.concat([phi1, phi2], 1), curiosity.PREDICTOR_HIDDEN, "g1"))
        inverse = model.linear(hidden, actions, "glast")
        hidden = tf.nn.relu(model.linear(tf.concat([phi1, action], 1), curiosity.PREDICTOR_HIDDEN, "f1"))
        forward = model.linear(hidden, int(phi.shape[1]), "flast")
        return inverse, forward

    def update(build, batch):
        outputs = build(batch)
        tf.gradients(sum(tf.reduce_sum(output) for output in outputs), tf1.trainable_variables())

    flops = {"act": count(lambda: policy(k)) / k,
             "policy update": count(lambda: update(policy, steps)) / steps,
             "bonus": count(lambda: icm(steps)) / steps,
             "ICM update": count(lambda: update(icm, steps)) / steps}
    return {phase: value / 1e6 for phase, value in flops.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs-per-worker", type=int, default=16, metavar="K")
    args = parser.parse_args()
    config = constants.Config()
    flops = per_step((42, 42, 4), 4, args.envs_per_worker, config.rollout_maxlen, config.lstm_size)
    for phase, value in flops.items():
        print(f"{phase:>14}: {value:6.2f} MFLOP per environment step")
    a3c = flops["act"] + flops["policy update"]
    print(f"A3C: {a3c:.1f} MFLOP per step; A3C + ICM: {sum(flops.values()):.1f}")


if __name__ == "__main__":
    main()
