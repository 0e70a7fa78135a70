"""AlbertClassifier: pooled output → dropout → class logits, the original's GLUE head (faithfulness §8.4)."""

from __future__ import annotations

from typing import Any

import keras

from albert_tf.config import AlbertConfig
from albert_tf.layers.heads import ClassificationHead
from albert_tf.models.encoder import AlbertEncoder, encoder_inputs, task_encoder
from albert_tf.models.precision import model_config

# The original hard-codes both: dropout 0.1 whatever the config says (faithfulness Q20, kept) and
# stddev 0.02 for `output_weights` (faithfulness §2.7).
CLASSIFIER_DROPOUT = 0.1
CLASSIFIER_INITIALIZER_RANGE = 0.02


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(keras.Model):
    """Sequence (pair) classifier or regressor: encoder inputs → {"logits": [B, num_classes]}.

    `num_classes=1` gives STS-B's regression output. Head variables are the original's
    root-scope `output_weights [C, H]` / `output_bias [C]`. `dtype`: the `DTypePolicy` of the
    model (see `AlbertEncoder`); default `encoder`'s, or the global policy.

    Example:
        >>> model = AlbertClassifier(config, num_classes=3)
        >>> model(inputs, training=True)["logits"].shape  # [batch, 3]
    """

    def __init__(self, config: AlbertConfig, num_classes: int,
                 dropout_rate: float = CLASSIFIER_DROPOUT, encoder: AlbertEncoder | None = None,
                 dtype: Any = None, **kwargs: Any):
        encoder, policy = task_encoder(config, encoder, dtype)
        head = ClassificationHead(num_classes, config.hidden_size, CLASSIFIER_INITIALIZER_RANGE,
                                  dropout_rate, dropout_dtype=policy, name="classifier_head")
        inputs = encoder_inputs()
        logits = head(encoder(inputs)["pooled_output"])
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        self.dtype_policy, self.config = policy, config  # Functional drops dtype=
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.encoder = encoder
        self.classifier_head = head

    def call(self, inputs, training=None, mask=None):
        """The encoder's last block runs at the first token alone, the one row the head reads
        (`AlbertEncoder.pooled_output_only`): the same logits within float round-off for less
        work, in training, evaluation, prediction and the exports traced from this call."""
        # Another encoder (an export's HubEncoder) is called whole, through the graph.
        if not isinstance(self.encoder, AlbertEncoder):
            return super().call(inputs, training=training, mask=mask)
        pooled = self.encoder.pooled_output_only(inputs, training=training)
        return {"logits": self.classifier_head(pooled, training=training)}

    def get_config(self) -> dict[str, Any]:
        return model_config(self, num_classes=self.num_classes, dropout_rate=self.dropout_rate)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AlbertClassifier":
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)
