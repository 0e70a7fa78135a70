"""The ALBERT block and the shared encoder stack (cross-layer parameter sharing).

Layer i uses parameter group int(i/L·G) (`config.layer_group`); each group holds
`inner_group_num` blocks applied in order, and every block application is one entry of
`encoder_outputs` (faithfulness §2.3, §2.6). Sharing is literal: a shared sublayer is the
same Keras layer object called again. With `recompute_grad` set, each block application keeps
only its input for the backward pass and recomputes the rest (same dropout masks).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from albert_tf.config import SHARING_MODES, layer_group
from albert_tf.layers.attention import AttentionSublayer
from albert_tf.layers.dropout import draw_seeds
from albert_tf.layers.feed_forward import FeedForwardSublayer


def apply_block(attention: AttentionSublayer, feed_forward: FeedForwardSublayer, x,
                input_mask=None, training=None, recompute: bool = False, query_positions=None):
    """feed_forward(attention(x)): one block application.

    With `query_positions` ([B, P], or a slice of rows) the block computes only those rows of
    its output ([B, P, H]); every row of `x` is still attended to (`AttentionSublayer`).

    With `recompute` (and training), the block runs under `tf.recompute_grad`: its inner
    activations are dropped after the forward pass and recomputed for the gradients. The
    dropout seeds are drawn once, outside, so both runs use the masks the plain call would.
    """
    if not (recompute and training):
        hidden = attention(x, input_mask, training=training, query_positions=query_positions)
        return feed_forward(hidden, training=training)
    attention_seeds = draw_seeds(attention.dropout_layers)
    feed_forward_seeds = draw_seeds(feed_forward.dropout_layers)

    def block(inputs):
        hidden = attention(inputs, input_mask, training=True, dropout_seeds=attention_seeds,
                           query_positions=query_positions)
        return feed_forward(hidden, training=True, dropout_seeds=feed_forward_seeds)

    return tf.recompute_grad(block)(x)


@keras.saving.register_keras_serializable(package="albert_tf")
class TransformerBlock(keras.layers.Layer):
    """One post-LN ALBERT block: attention sublayer, then feed-forward sublayer.

    Call with `x` [B, S, H] and the 0/1 `input_mask` [B, S]. Equal to a one-layer
    `SharedTransformerStack`; the stack calls the two sublayers itself, because sharing
    modes "attention" and "ffn" share one without the other.
    """

    recompute_grad = False  # runtime switch (not saved): see `SharedTransformerStack`

    def __init__(self, hidden_size: int, num_attention_heads: int, intermediate_size: int,
                 hidden_act: str = "gelu", initializer_range: float = 0.02,
                 hidden_dropout_prob: float = 0.0, attention_probs_dropout_prob: float = 0.0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self._block_config = dict(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_size, hidden_act=hidden_act,
            initializer_range=initializer_range, hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob)
        self.attention = AttentionSublayer(
            hidden_size, num_attention_heads, initializer_range, hidden_dropout_prob,
            attention_probs_dropout_prob, dtype=self.dtype_policy, name="attention")
        self.feed_forward = FeedForwardSublayer(
            hidden_size, intermediate_size, hidden_act, initializer_range, hidden_dropout_prob,
            dtype=self.dtype_policy, name="feed_forward")

    def build(self, input_shape):
        self.attention.build(input_shape)
        self.feed_forward.build(input_shape)
        self.built = True

    def call(self, x, input_mask=None, training=None):
        return apply_block(self.attention, self.feed_forward, x, input_mask, training,
                           self.recompute_grad)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(self._block_config)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class SharedTransformerStack(keras.layers.Layer):
    """L layer applications over G groups × K inner blocks, with the paper's sharing modes.

    `cross_layer_sharing`: "all" (the original: attention and FFN shared within a group),
    "attention" or "ffn" (only that sublayer shared; the other is per layer), "none".
    Shared sublayers live under the original's scope `group_{g}/inner_group_{k}`; per-layer
    ones under `layer_{i}/inner_group_{k}` (our extension; see `checkpoints`).

    Returns the list of all L·K block outputs; the last is the sequence output. Called with
    `last_positions` [B, P] (or a slice of rows, e.g. `gather.FIRST_TOKEN`), the last block
    computes only those rows (its output is [B, P, H]): what a head that reads a few positions
    needs (`AlbertPretrainer`, the pooled output of the task models).

    `recompute_grad` (a runtime switch, not part of the config or the weights; the training
    loop sets it from --recompute_grad) recomputes each block's activations in the backward
    pass: memory for L·K block inputs instead of all their activations.
    """

    recompute_grad = False

    def __init__(self, hidden_size: int, num_hidden_layers: int, num_attention_heads: int,
                 intermediate_size: int, num_hidden_groups: int = 1, inner_group_num: int = 1,
                 cross_layer_sharing: str = "all", hidden_act: str = "gelu",
                 initializer_range: float = 0.02, hidden_dropout_prob: float = 0.0,
                 attention_probs_dropout_prob: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        if cross_layer_sharing not in SHARING_MODES:
            raise ValueError(f"cross_layer_sharing must be one of {SHARING_MODES}, got {cross_layer_sharing!r}")
        if num_hidden_groups > num_hidden_layers:
            raise ValueError(f"num_hidden_groups ({num_hidden_groups}) > num_hidden_layers ({num_hidden_layers})")
        self._stack_config = dict(
            hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
            num_hidden_groups=num_hidden_groups, inner_group_num=inner_group_num,
            cross_layer_sharing=cross_layer_sharing, hidden_act=hidden_act,
            initializer_range=initializer_range, hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob)
        self.hidden_size = hidden_size

        share_attention = cross_layer_sharing in ("all", "attention")
        share_ffn = cross_layer_sharing in ("all", "ffn")
        self.attention_layers: list[AttentionSublayer] = []
        self.feed_forward_layers: list[FeedForwardSublayer] = []
        self.attention_scopes: list[str] = []
        self.feed_forward_scopes: list[str] = []
        # schedule[j] = (attention index, ffn index) of the j-th block application.
        self.schedule: list[tuple[int, int]] = []

        def sublayer(scope: str, scopes: list, layers: list, make) -> int:
            if scope not in scopes:  # first use creates it; later uses reuse the object
                scopes.append(scope)
                layers.append(make(scope.replace("/", "_")))
            return scopes.index(scope)

        for i in range(num_hidden_layers):
            group = layer_group(i, num_hidden_layers, num_hidden_groups)
            for k in range(inner_group_num):
                shared, own = f"group_{group}/inner_group_{k}", f"layer_{i}/inner_group_{k}"
                a = sublayer(shared if share_attention else own, self.attention_scopes,
                             self.attention_layers,
                             lambda name: AttentionSublayer(
                                 hidden_size, num_attention_heads, initializer_range,
                                 hidden_dropout_prob, attention_probs_dropout_prob,
                                 dtype=self.dtype_policy, name=f"{name}_attention"))
                f = sublayer(shared if share_ffn else own, self.feed_forward_scopes,
                             self.feed_forward_layers,
                             lambda name: FeedForwardSublayer(
                                 hidden_size, intermediate_size, hidden_act, initializer_range,
                                 hidden_dropout_prob, dtype=self.dtype_policy,
                                 name=f"{name}_ffn"))
                self.schedule.append((a, f))
        # Named attributes as well as the lists: tf.train.Checkpoint follows attributes that
        # are layers, not Keras' tracked lists, and would otherwise skip every block.
        for scope, layer in zip(self.attention_scopes, self.attention_layers):
            setattr(self, f"{scope.replace('/', '_')}_attention", layer)
        for scope, layer in zip(self.feed_forward_scopes, self.feed_forward_layers):
            setattr(self, f"{scope.replace('/', '_')}_ffn", layer)

    def build(self, input_shape):
        for layer in self.attention_layers + self.feed_forward_layers:
            layer.build((None, None, self.hidden_size))
        self.built = True

    def call(self, x, input_mask=None, training=None, last_positions=None):
        outputs = []
        for j, (a, f) in enumerate(self.schedule):
            positions = last_positions if j == len(self.schedule) - 1 else None
            x = apply_block(self.attention_layers[a], self.feed_forward_layers[f], x, input_mask,
                            training, self.recompute_grad, positions)
            outputs.append(x)
        return outputs

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(self._stack_config)
        return config
