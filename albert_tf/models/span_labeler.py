"""AlbertSpanLabeler: the original's SQuAD heads on the encoder's sequence output (faithfulness §9.5–9.6).

* v1 (`version_2_with_negative=False`): one `cls/squad/output_weights [2, H]` matrix gives
  start and end logits per position; nothing is masked (Q22, kept).
* v2: the XLNet-style head. Start logits masked by `p_mask`; end logits from
  [h_t ; h_start] (dense tanh → LayerNorm → dense), conditioned on the gold start in
  training and on each of the `start_n_top` best starts at inference, keeping the
  `end_n_top` best ends; an answerability logit from [start-weighted feature ; h_[CLS]].
  Masked positions get −1e30, so the head always computes in float32.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.layers.gather import gather_positions
from albert_tf.layers.heads import ClassificationHead
from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.normalization import layer_norm
from albert_tf.models.encoder import AlbertEncoder, encoder_inputs, task_encoder
from albert_tf.models.precision import model_config

MASKED_LOGIT = 1e30  # masked logits are s·(1 − p) − 1e30·p, as the original
SQUAD_V1_INITIALIZER_RANGE = 0.02  # the original hard-codes stddev 0.02 for cls/squad


@keras.saving.register_keras_serializable(package="albert_tf")
class SquadV2Head(keras.layers.Layer):
    """The SQuAD 2.0 head of the original (XLNet's): start, conditioned end, answerability.

    Called with sequence_output [B,S,H], p_mask [B,S] (1 = not an answer position) and
    start_positions [B] (training: the gold starts) or None (inference). Returns float32:
      start_log_probs [B,S]; cls_logits [B];
      start_top_log_probs / start_top_index [B, start_n_top];
      end_log_probs [B,S]: the end distribution given `start_positions`, or given the best
        start when None;
      end_top_log_probs / end_top_index [B, start_n_top·end_n_top] (start-major): with
        None, the best ends for each of the best starts (the original's beam); with gold
        starts, the best ends given those starts, repeated — the beam's start_n_top extra
        end passes ([B, k1, S, 2H] activations) are spent only when predicting.
    One output structure for both modes keeps the model a single functional graph.
    """

    def __init__(self, hidden_size: int, start_n_top: int = 5, end_n_top: int = 5,
                 dropout_prob: float = 0.1, initializer_range: float = 0.02, **kwargs: Any):
        kwargs.setdefault("dtype", "float32")  # logits, masking and losses in float32
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_prob = dropout_prob
        self.initializer_range = initializer_range
        init = truncated_normal(initializer_range)
        f32 = "float32"  # every sublayer too, whatever the global mixed-precision policy
        # Names follow the original scopes start_logits/dense, end_logits/dense_0 ... (§3.3).
        self.start_dense = keras.layers.Dense(1, kernel_initializer=init, dtype=f32,
                                              name="start_dense")
        self.end_dense_0 = keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init,
                                              dtype=f32, name="end_dense_0")
        self.end_layer_norm = layer_norm("end_layer_norm")  # ε 1e-12, float32
        self.end_dense_1 = keras.layers.Dense(1, kernel_initializer=init, dtype=f32,
                                              name="end_dense_1")
        self.answer_dense_0 = keras.layers.Dense(hidden_size, activation="tanh",
                                                 kernel_initializer=init, dtype=f32,
                                                 name="answer_dense_0")
        self.answer_dropout = keras.layers.Dropout(dropout_prob, dtype=f32, name="answer_dropout")
        self.answer_dense_1 = keras.layers.Dense(1, use_bias=False, kernel_initializer=init,
                                                 dtype=f32, name="answer_dense_1")

    def build(self, input_shape=None):
        h = self.hidden_size
        self.start_dense.build((None, None, h))
        self.end_dense_0.build((None, None, 2 * h))
        self.end_layer_norm.build((None, None, h))
        self.end_dense_1.build((None, None, h))
        self.answer_dense_0.build((None, 2 * h))
        self.answer_dense_1.build((None, h))
        self.built = True

    @staticmethod
    def _mask(logits: tf.Tensor, p_mask: tf.Tensor) -> tf.Tensor:
        return logits * (1.0 - p_mask) - MASKED_LOGIT * p_mask

    def end_logits(self, hidden: tf.Tensor, start_features: tf.Tensor) -> tf.Tensor:
        """Unmasked end logits [..., S] from hidden [..., S, H] and the start's [..., H]."""
        tiled = tf.broadcast_to(start_features[..., None, :], tf.shape(hidden))
        x = self.end_dense_0(tf.concat([hidden, tiled], axis=-1))
        x = self.end_layer_norm(x)
        return tf.squeeze(self.end_dense_1(x), -1)

    def _beam_ends(self, h: tf.Tensor, p: tf.Tensor, start_index: tf.Tensor) -> tf.Tensor:
        """End log-probs [B, k1, S] for each of the k1 starts in `start_index` [B, k1]."""
        shape = tf.shape(h)
        starts = gather_positions(h, start_index)  # [B, k1, H]
        hidden = tf.broadcast_to(h[:, None], [shape[0], self.start_n_top, shape[1], self.hidden_size])
        return tf.nn.log_softmax(self._mask(self.end_logits(hidden, starts), p[:, None, :]), -1)

    def call(self, sequence_output, p_mask, start_positions=None, training=None):
        h = tf.cast(sequence_output, tf.float32)
        p = tf.cast(p_mask, tf.float32)
        batch = tf.shape(h)[0]
        start_logits = self._mask(tf.squeeze(self.start_dense(h), -1), p)
        start_log_probs = tf.nn.log_softmax(start_logits, axis=-1)
        start_top_log_probs, start_top_index = tf.math.top_k(start_log_probs, k=self.start_n_top)

        if start_positions is None:
            # Inference (§9.6 step 3): end distributions for each of the best starts.
            beam_log_probs = self._beam_ends(h, p, start_top_index)  # [B, k1, S]
            end_log_probs = beam_log_probs[:, 0]
        else:
            # Training (§9.6 step 2): the end distribution given the gold start.
            start_positions = tf.reshape(tf.cast(start_positions, tf.int32), [-1])
            start_features = tf.gather(h, start_positions, batch_dims=1)  # [B, H]
            end_log_probs = tf.nn.log_softmax(
                self._mask(self.end_logits(h, start_features), p), -1)
            beam_log_probs = tf.tile(end_log_probs[:, None], [1, self.start_n_top, 1])
        end_top_log_probs, end_top_index = tf.math.top_k(beam_log_probs, k=self.end_n_top)
        end_top_log_probs = tf.reshape(end_top_log_probs, [batch, self.start_n_top * self.end_n_top])
        end_top_index = tf.reshape(end_top_index, [batch, self.start_n_top * self.end_n_top])

        # Answerability from the [CLS] vector and the start-probability-weighted vector.
        start_probs = tf.nn.softmax(start_logits, axis=-1)
        weighted = tf.einsum("bs,bsh->bh", start_probs, h)
        x = self.answer_dense_0(tf.concat([weighted, h[:, 0]], axis=-1))
        x = self.answer_dropout(x, training=training)
        cls_logits = tf.squeeze(self.answer_dense_1(x), -1)
        return {
            "start_log_probs": start_log_probs, "end_log_probs": end_log_probs,
            "cls_logits": cls_logits,
            "start_top_log_probs": start_top_log_probs, "start_top_index": start_top_index,
            "end_top_log_probs": end_top_log_probs, "end_top_index": end_top_index,
        }

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, start_n_top=self.start_n_top,
                      end_n_top=self.end_n_top, dropout_prob=self.dropout_prob,
                      initializer_range=self.initializer_range)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class SplitStartEnd(keras.layers.Layer):
    """[B, S, 2] logits → {"start_logits": [B, S], "end_logits": [B, S]} (v1), in float32."""

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)

    def call(self, logits):
        start, end = tf.unstack(logits, axis=-1)
        return {"start_logits": start, "end_logits": end}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanLabeler(keras.Model):
    """Extractive QA on SQuAD: encoder inputs (+ v2's p_mask, start_positions) → span scores.

    v1 outputs {"start_logits", "end_logits"} [B,S] (raw, unmasked: Q22). v2 takes also
    "p_mask" [B,S] and the optional "start_positions" [B] (gold starts in training; pass
    None to predict) and outputs the `SquadV2Head` dict. `.encoder` is the AlbertEncoder;
    the head is `.squad_v1_head` or `.squad_v2_head` (original names in `checkpoints`).
    `dtype`: the `DTypePolicy` of the model (see `AlbertEncoder`); default `encoder`'s, or the
    global policy. The heads compute in float32 under any policy.

    Example:
        >>> model = AlbertSpanLabeler(config, version_2_with_negative=True)
        >>> out = model({**encoder_feed, "p_mask": p_mask, "start_positions": None})
        >>> out["end_top_index"].shape  # [batch, 25]
    """

    def __init__(self, config: AlbertConfig, version_2_with_negative: bool = False,
                 start_n_top: int = 5, end_n_top: int = 5, dropout_prob: float = 0.1,
                 encoder: AlbertEncoder | None = None, dtype: Any = None, **kwargs: Any):
        encoder, policy = task_encoder(config, encoder, dtype)
        inputs = encoder_inputs()
        sequence_output = encoder(inputs)["sequence_output"]
        if version_2_with_negative:
            head = SquadV2Head(config.hidden_size, start_n_top, end_n_top, dropout_prob,
                               config.initializer_range, name="squad_v2_head")
            inputs["p_mask"] = keras.Input(shape=(None,), dtype="int32", name="p_mask")
            inputs["start_positions"] = keras.Input(shape=(), dtype="int32",
                                                    name="start_positions", optional=True)
            outputs = head(sequence_output, inputs["p_mask"], inputs["start_positions"])
        else:
            head = ClassificationHead(2, config.hidden_size, SQUAD_V1_INITIALIZER_RANGE,
                                      dropout_dtype=policy, name="squad_v1_head")
            outputs = SplitStartEnd(name="split_start_end")(head(sequence_output))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy, self.config = policy, config  # Functional drops dtype=
        self.version_2_with_negative = version_2_with_negative
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_prob = dropout_prob
        self.encoder = encoder
        if version_2_with_negative:
            self.squad_v2_head = head
        else:
            self.squad_v1_head = head

    def get_config(self) -> dict[str, Any]:
        return model_config(self, version_2_with_negative=self.version_2_with_negative,
                            start_n_top=self.start_n_top, end_n_top=self.end_n_top,
                            dropout_prob=self.dropout_prob)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AlbertSpanLabeler":
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)
