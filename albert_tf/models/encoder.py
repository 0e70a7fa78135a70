"""AlbertEncoder: token ids → sequence, pooled and all-layer outputs (faithfulness §2)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.layers.embedding import AlbertEmbedding
from albert_tf.layers.gather import FIRST_TOKEN
from albert_tf.layers.heads import Pooler
from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.transformer import SharedTransformerStack
from albert_tf.models.precision import model_config, policy_of

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# The original's feature names (its TFRecords, its TFLite export's inputs) → the model's input
# names, in the same order (faithfulness §8.3, §9.8).
FEATURE_TO_INPUT = dict(zip(("input_ids", "input_mask", "segment_ids"), INPUT_NAMES))


def encoder_inputs() -> dict[str, keras.KerasTensor]:
    """Symbolic int32 [batch, seq] inputs, keyed as the TF-Hub encoder convention."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


def task_encoder(config: AlbertConfig, encoder: keras.layers.Layer | None = None,
                 dtype: Any = None) -> tuple[keras.layers.Layer, keras.DTypePolicy]:
    """The encoder a task model is built over (a fresh `AlbertEncoder` when None) and the task
    model's policy: `dtype`, else the given encoder's, else the global one."""
    policy = policy_of(dtype, encoder)
    return (encoder if encoder is not None else AlbertEncoder(config, policy, name="encoder"),
            policy)


def embed(embedding: AlbertEmbedding, projection: keras.layers.Dense | None, inputs: dict,
          training=None):
    """The blocks' input: the embeddings, projected E → H where the model has the projection."""
    x = embedding(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
    return x if projection is None else projection(x)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEncoder(keras.Model):
    """The ALBERT encoder as a functional Keras model.

    Called with {"input_word_ids", "input_mask", "input_type_ids"} (int32 [B, S]) →
    {"sequence_output" [B,S,H], "pooled_output" [B,H], "encoder_outputs": L·K × [B,S,H]}.
    `training=True` enables dropout. `dtype`: the Keras `DTypePolicy` (or its name) of the
    model and every layer, e.g. "mixed_bfloat16" (bfloat16 compute, float32 variables; the
    LayerNorms and the softmax stay float32); default the global policy.

    Example:
        >>> config = AlbertConfig(vocab_size=100, hidden_size=32, num_attention_heads=4,
        ...                       intermediate_size=64, num_hidden_layers=2)
        >>> encoder = AlbertEncoder(config)
        >>> ids = np.ones((2, 8), "int32")
        >>> encoder({"input_word_ids": ids, "input_mask": ids,
        ...          "input_type_ids": 0 * ids})["pooled_output"].shape
        TensorShape([2, 32])
    """

    def __init__(self, config: AlbertConfig, dtype: Any = None, **kwargs: Any):
        policy = policy_of(dtype)
        embedding = AlbertEmbedding(
            vocab_size=config.vocab_size,
            embedding_size=config.embedding_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            dropout_rate=config.hidden_dropout_prob,
            dtype=policy,
            name="embeddings",
        )
        # E→H projection exists only when the widths differ (faithfulness §2.2), or when a model
        # converted from Hugging Face (which always has it) keeps it at E = H.
        projection = None
        if config.has_embedding_projection:
            projection = keras.layers.Dense(
                config.hidden_size, kernel_initializer=truncated_normal(config.initializer_range),
                dtype=policy, name="embedding_projection")
        transformer = SharedTransformerStack(
            hidden_size=config.hidden_size,
            num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            num_hidden_groups=config.num_hidden_groups,
            inner_group_num=config.inner_group_num,
            cross_layer_sharing=config.cross_layer_sharing,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            hidden_dropout_prob=config.hidden_dropout_prob,
            attention_probs_dropout_prob=config.attention_probs_dropout_prob,
            dtype=policy,
            name="transformer",
        )
        pooler = Pooler(config.hidden_size, config.initializer_range, dtype=policy, name="pooler")

        inputs = encoder_inputs()
        encoder_outputs = transformer(embed(embedding, projection, inputs), inputs["input_mask"])
        sequence_output = encoder_outputs[-1]
        outputs = {
            "sequence_output": sequence_output,
            "pooled_output": pooler(sequence_output),
            "encoder_outputs": encoder_outputs,
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # A functional Model drops `dtype=`: set after, as keras-hub's backbones do.
        self.dtype_policy, self.config = policy, config
        self.embedding_layer = embedding
        self.embedding_projection = projection
        self.transformer = transformer
        self.pooler = pooler

    def outputs_at(self, inputs: dict, positions, training=None) -> dict[str, tf.Tensor]:
        """{"sequence_output" [B, P, H] at `positions` [B, P], "pooled_output" [B, H]}, with
        the last block computing only those rows and the first (the pooler's): the full
        outputs' values (within float round-off) for less work when P ≪ S. No
        "encoder_outputs": the earlier blocks' outputs are full, the last one is not."""
        positions = tf.cast(positions, tf.int32)
        first = tf.zeros([tf.shape(positions)[0], 1], tf.int32)
        rows = tf.concat([first, positions], axis=1)  # the first token, then the P positions
        last = self._last_block_at(inputs, rows, training)
        return {"sequence_output": last[:, 1:], "pooled_output": self.pooler(last)}

    def pooled_output_only(self, inputs: dict, training=None) -> tf.Tensor:
        """pooled_output [B, H] with the last block computed at the first token alone (a
        static slice: no gather in the graph, for the engines the task exports go to)."""
        return self.pooler(self._last_block_at(inputs, FIRST_TOKEN, training))

    def _last_block_at(self, inputs: dict, rows, training) -> tf.Tensor:
        """The last block's output at `rows` (positions [B, P] or a slice), the earlier blocks
        computed in full: the encoder's own layers, as its functional graph wires them."""
        x = embed(self.embedding_layer, self.embedding_projection, inputs, training)
        return self.transformer(x, inputs["input_mask"], training=training,
                                last_positions=rows)[-1]

    def get_config(self) -> dict[str, Any]:
        return model_config(self)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AlbertEncoder":
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)
