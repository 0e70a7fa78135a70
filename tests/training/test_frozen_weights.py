"""frozen_function: the variables' values when it is made, as constants; the same signature
(argument names, nests) and outputs as the live function."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from albert_tf.models.frozen_weights import frozen_function


def test_frozen_function_keeps_the_values_names_and_structure():
    kernel = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    bias = tf.Variable([0.5, -0.5])

    @tf.function(input_signature=[{"x": tf.TensorSpec([None, 2], tf.float32)},
                                  tf.TensorSpec([], tf.float32)])
    def live(features, scale):
        y = tf.matmul(features["x"], kernel) + bias
        return {"y": y * scale, "parts": [y, tf.reduce_sum(y, axis=-1)]}

    frozen = frozen_function(live)
    kernel.assign([[0.0, 0.0], [0.0, 0.0]])  # later changes do not reach the frozen graph
    x = np.array([[1.0, 1.0], [2.0, -1.0]], np.float32)
    expected = x @ np.array([[1.0, 2.0], [3.0, 4.0]]) + np.array([0.5, -0.5])  # hand values
    for out in (frozen({"x": x}, 2.0), frozen(features={"x": x}, scale=2.0)):
        np.testing.assert_allclose(out["y"], 2.0 * expected)
        np.testing.assert_allclose(out["parts"][0], expected)
        np.testing.assert_allclose(out["parts"][1], expected.sum(-1))
    np.testing.assert_allclose(live({"x": x}, 2.0)["y"], 2.0 * np.array([0.5, -0.5]) + 0 * x)
    graph = frozen.get_concrete_function().graph.as_graph_def()
    ops = {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}
    assert "ReadVariableOp" not in ops
