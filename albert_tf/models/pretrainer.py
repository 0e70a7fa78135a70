"""AlbertPretrainer: the encoder with the masked-LM and sentence-order heads (faithfulness §4)."""

from __future__ import annotations

from typing import Any

import keras

from albert_tf.config import AlbertConfig
from albert_tf.layers.heads import ClassificationHead, MaskedLMHead
from albert_tf.models.encoder import AlbertEncoder, encoder_inputs, task_encoder
from albert_tf.models.precision import model_config


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(keras.Model):
    """MLM + SOP model: encoder inputs plus "masked_lm_positions" [B, P] →
    {"mlm_logits" [B, P, V], "sop_logits" [B, 2]} (float32). `.encoder` is the AlbertEncoder.
    `dtype`: the `DTypePolicy` of the model (see `AlbertEncoder`); default `encoder`'s, or the
    global policy.

    Example:
        >>> pretrainer = AlbertPretrainer(config)
        >>> out = pretrainer({**encoder_inputs, "masked_lm_positions": positions})
        >>> out["mlm_logits"].shape  # [batch, P, vocab_size]
    """

    def __init__(self, config: AlbertConfig, encoder: AlbertEncoder | None = None,
                 dtype: Any = None, **kwargs: Any):
        encoder, policy = task_encoder(config, encoder, dtype)
        mlm_head = MaskedLMHead(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            embedding_size=config.embedding_size, hidden_act=config.hidden_act,
            initializer_range=config.initializer_range, embedding=encoder.embedding_layer,
            dense_dtype=policy, name="mlm_head")
        sop_head = ClassificationHead(2, config.hidden_size, config.initializer_range,
                                      dropout_dtype=policy, name="sop_head")

        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        encoded = encoder({name: inputs[name] for name in encoder.input})
        outputs = {
            "mlm_logits": mlm_head(encoded["sequence_output"], inputs["masked_lm_positions"]),
            "sop_logits": sop_head(encoded["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy, self.config = policy, config  # Functional drops dtype=
        self.encoder = encoder
        self.mlm_head = mlm_head
        self.sop_head = sop_head

    def call(self, inputs, training=None, mask=None):
        """The functional graph's outputs, with the encoder's last block computing only the
        rows the heads read (`AlbertEncoder.outputs_at`): the masked positions and the first
        token. Same values within float round-off; for ALBERT-base at 20 of 128 positions
        ≈ 6 % less work per step. (Symbolic calls and saving still use the functional graph.)"""
        encoded = self.encoder.outputs_at(inputs, inputs["masked_lm_positions"],
                                          training=training)
        return {"mlm_logits": self.mlm_head(encoded["sequence_output"]),
                "sop_logits": self.sop_head(encoded["pooled_output"], training=training)}

    def get_config(self) -> dict[str, Any]:
        return model_config(self)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AlbertPretrainer":
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)
