"""Gradient clipping by global norm, with the norm the original computes (Q35).

The original clips `tf.gradients(loss, tvars)` with `tf.clip_by_global_norm(grads, 1.0)`
(faithfulness §6.3). TF1 hands a variable's gradient as `IndexedSlices` — one row per token
occurrence, duplicates unsummed — when the variable is read only by `tf.nn.embedding_lookup`,
and `clip_by_global_norm` then counts Σ‖row‖² over the occurrences, not ‖Σ rows‖² of the
summed gradient. Without `--use_tpu` (`use_one_hot_embeddings=False`) the original's
`embedding_postprocessor` looks both the word and the token-type table up that way
(faithfulness §2.1), so:

* `token_type_embeddings`: per occurrence in every task (pretraining and fine-tuning) —
  nothing else reads the table;
* `word_embeddings` in fine-tuning (GLUE, SQuAD, RACE): per occurrence;
* `word_embeddings` in pretraining: dense — the MLM decoder reads the same table with a
  matmul, and TF1 adds the IndexedSlices and the dense gradient into one dense tensor;
* under `--use_tpu` both tables are read by one-hot matmul: dense;
* `position_embeddings` (a slice): always dense.

Mode "original" reproduces that: a gradient counts per occurrence when our tape returns it
as IndexedSlices (our lookups are gathers, like `tf.nn.embedding_lookup`, and a tied reader
densifies the word gradient as TF1's aggregation does), the variable is one of the two
tables the original gathers, and the lookups are not one-hot (TPU). Mode "dense" uses ‖g‖²
of every summed gradient. Across micro-batches and replicas every occurrence counts (the
training loop sums the per-occurrence squares); the update itself stays dense.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import tensorflow as tf

from albert_tf.training.choices import CLIP_NORM_MODES
from albert_tf.training.optimizers import variable_name

# The tables the original looks up with tf.nn.embedding_lookup off TPU (faithfulness §2.1).
GATHERED_TABLE_PATTERN = r"(^|/)(word_embeddings|token_type_embeddings)$"


class OccurrenceNormRule:
    """Decides which gradients count per token occurrence in the global norm.

    Args:
        mode: "original" or "dense" (CLIP_NORM_MODES).
        one_hot_lookups: True where the original looks words and token types up by
            one-hot matmul (`--use_tpu`): every gradient is then dense.
    """

    def __init__(self, mode: str = "original", one_hot_lookups: bool = False):
        if mode not in CLIP_NORM_MODES:
            raise ValueError(f"clip_norm_mode must be one of {', '.join(CLIP_NORM_MODES)}, "
                             f"got {mode!r}")
        self.mode = mode
        self.one_hot_lookups = one_hot_lookups

    def counts_per_occurrence(self, gradient: Any, variable: Any) -> bool:
        """True when TF1 would hand `clip_by_global_norm` this gradient as IndexedSlices."""
        return (self.mode == "original" and not self.one_hot_lookups
                and isinstance(gradient, tf.IndexedSlices)
                and re.search(GATHERED_TABLE_PATTERN, variable_name(variable)) is not None)

    def split(self, gradients: Sequence[Any], variables: Sequence[Any]
              ) -> tuple[list[tf.Tensor | None], tf.Tensor, list[bool]]:
        """(dense gradients, Σ‖row‖² over the per-occurrence ones, which ones they are)."""
        per_occurrence = [g is not None and self.counts_per_occurrence(g, v)
                          for g, v in zip(gradients, variables)]
        occurrence_sq = tf.constant(0.0, tf.float32)
        for gradient, flagged in zip(gradients, per_occurrence):
            if flagged:
                occurrence_sq += tf.reduce_sum(tf.square(tf.cast(gradient.values, tf.float32)))
        dense = [None if g is None else tf.convert_to_tensor(g) for g in gradients]
        return dense, occurrence_sq, per_occurrence


def global_norm(gradients: Sequence[tf.Tensor], per_occurrence: Sequence[bool],
                occurrence_sq: tf.Tensor) -> tf.Tensor:
    """sqrt(Σ‖g‖² over the dense-counted gradients + the per-occurrence square sum)."""
    total = occurrence_sq
    for gradient, flagged in zip(gradients, per_occurrence):
        if gradient is not None and not flagged:
            total += tf.reduce_sum(tf.square(tf.cast(gradient, tf.float32)))
    return tf.sqrt(total)


def clip_by_norm(gradients: Sequence[tf.Tensor], norm: tf.Tensor, clip_norm: float
                 ) -> list[tf.Tensor]:
    """g · clip_norm / max(norm, clip_norm), as `tf.clip_by_global_norm` (NaN when norm is
    not finite, which the loss-scale optimizer then skips)."""
    clipped, _ = tf.clip_by_global_norm(list(gradients), clip_norm, use_norm=norm)
    return clipped
