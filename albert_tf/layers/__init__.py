"""Keras layers of ALBERT, each usable in your own functional model.

Each takes `dtype=` (a Keras `DTypePolicy`) and passes it to its sublayers; the LayerNorms,
the attention softmax and the heads' logits stay float32 under a mixed policy.
"""

from albert_tf.layers.activations import gelu_exact, gelu_tanh, get_activation
from albert_tf.layers.attention import AttentionSublayer, attention_mask_bias
from albert_tf.layers.embedding import AlbertEmbedding
from albert_tf.layers.feed_forward import FeedForwardSublayer
from albert_tf.layers.gather import gather_positions
from albert_tf.layers.heads import ClassificationHead, MaskedLMHead, Pooler
from albert_tf.layers.normalization import LAYER_NORM_EPSILON, layer_norm
from albert_tf.layers.transformer import SharedTransformerStack, TransformerBlock

__all__ = [
    "AlbertEmbedding", "AttentionSublayer", "ClassificationHead", "FeedForwardSublayer",
    "LAYER_NORM_EPSILON", "MaskedLMHead", "Pooler", "SharedTransformerStack", "TransformerBlock",
    "attention_mask_bias", "gather_positions", "gelu_exact", "gelu_tanh", "get_activation",
    "layer_norm",
]
