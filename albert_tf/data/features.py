"""Names, dtypes and lengths of the pre-training record features (faithfulness §5.8, §6.2).

Two record kinds share these names:

* "static" records are the original's: a masked instance per `tf.train.Example`, with
  `masked_lm_*` features (§5.8). Files written by the original tool read here unchanged and
  ours read in the original trainer.
* "dynamic" records are ours: the same Example without the `masked_lm_*` features and with
  unmasked `input_ids`; `token_boundary` carries the word-start flags (§5.6 step 1) so the
  n-gram masking can run inside tf.data each epoch (albert_tf.data.masking_tf).

This module only describes the layout; it imports neither TensorFlow nor numpy heavy paths.
"""

from __future__ import annotations

STATIC = "static"
DYNAMIC = "dynamic"
RECORD_KINDS = (STATIC, DYNAMIC)

# (name, "int64" | "float", length symbol): "S" = max_seq_length, "M" = prediction slots, "1".
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "token_boundary")
MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
LABEL_FEATURE = "next_sentence_labels"

# Features the original trainer parses (§6.2); token_boundary is written but not read there.
TRAINER_FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                    "masked_lm_ids", "masked_lm_weights", LABEL_FEATURE)


def feature_layout(kind: str, max_seq_length: int, num_predictions: int) -> dict[str, tuple[str, int]]:
    """Feature name → (dtype, length) of a record of `kind`, in the original's write order.

    Args:
      kind: STATIC or DYNAMIC.
      max_seq_length: S.
      num_predictions: prediction slots of a static record, M·(1 + do_permutation) (§5.8, Q13).
    """
    if kind not in RECORD_KINDS:
        raise ValueError(f"record kind must be one of {RECORD_KINDS}, got {kind!r}")
    layout = {name: ("int64", max_seq_length) for name in SEQUENCE_FEATURES}
    if kind == STATIC:
        layout["masked_lm_positions"] = ("int64", num_predictions)
        layout["masked_lm_ids"] = ("int64", num_predictions)
        layout["masked_lm_weights"] = ("float", num_predictions)
    layout[LABEL_FEATURE] = ("int64", 1)
    return layout
