"""Pretraining's input: the original's TFRecord features (faithfulness §6.2) as the
pretrainer's inputs and the objective's labels, over `albert_tf.data.pretraining_dataset`.

The same role as `glue/records.py`, `squad/records.py`, `race/records.py`: the task's records
→ a loop dataset function yielding `(features, labels)`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import tensorflow as tf

from albert_tf.models.encoder import FEATURE_TO_INPUT as ENCODER_FEATURE_TO_INPUT

# Original feature name → the pretrainer's input name (the encoder's, plus the MLM positions).
FEATURE_TO_INPUT = {**ENCODER_FEATURE_TO_INPUT, "masked_lm_positions": "masked_lm_positions"}
LABEL_FEATURES = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def to_model_inputs(batch: Mapping[str, tf.Tensor]) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
    """Original feature dict (faithfulness §6.2) → (AlbertPretrainer inputs, labels)."""
    features = {name: batch[key] for key, name in FEATURE_TO_INPUT.items()}
    labels = {key: batch[key] for key in LABEL_FEATURES}
    return features, labels


def pretraining_dataset_fn(input_patterns: str | Sequence[str], batch_size: int,
                           max_seq_length: int, max_predictions_per_seq: int,
                           is_training: bool = True, dynamic_masking: bool = False,
                           masking_options: Any = None, seed: int | None = None,
                           id_limits: Any = None
                           ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """A loop dataset function over `albert_tf.data.pretraining_dataset`.

    `batch_size` is global; each input pipeline batches its per-replica share. Evaluation
    repeats the files indefinitely, as the original (faithfulness §6.2; the loop stops after
    max_eval_steps). `id_limits` (`albert_tf.data.value_checks.IdLimits`) checks every batch's
    ids against the model on the host.
    """
    from albert_tf.data import pretraining_dataset

    def dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset = pretraining_dataset(
            input_patterns, batch_size, max_seq_length, max_predictions_per_seq,
            is_training=is_training, input_context=input_context,
            dynamic_masking=dynamic_masking, masking_options=masking_options, seed=seed,
            drop_remainder=True, id_limits=id_limits)
        if not is_training:
            dataset = dataset.repeat()
        return dataset.map(to_model_inputs)

    return dataset_fn
