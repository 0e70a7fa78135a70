"""SQuAD v1.1 / v2.0: reading, alignment, windows, feature cache, post-processing, metrics.

Faithfulness §9. The modules have the roles of every task package: `examples` (reading the
JSON), `features` (windows; with `alignment`), `records` (feature caches and tf.data),
`modeling` (the losses), `metrics` (the official scores), `runner` (what run_squad.py calls),
`export` (v1's SavedModel + TFLite), plus `postprocess` (n-best answers). The TensorFlow-free
parts (examples, alignment, features, postprocess, metrics) import without TensorFlow;
`runner`, `records` and `modeling` need it and are imported on first use.

Example:
    >>> from albert_tf.squad import read_squad_examples, FeatureBuilder, evaluate_v2
    >>> examples, skips = read_squad_examples("dev-v2.0.json", is_training=False,
    ...                                       version_2_with_negative=True)
    >>> features = FeatureBuilder(tokenizer, max_seq_length=384).build(examples, with_labels=False)
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names
from albert_tf.squad.alignment import ContextTokens, align_pieces, tokenize_context
from albert_tf.squad.examples import (Answer, SkipReport, SquadDataError, SquadExample,
                                      read_squad_examples, read_squad_file,
                                      shuffle_training_examples)
from albert_tf.squad.features import FeatureBuilder, SquadFeature, doc_windows
from albert_tf.squad.metrics import evaluate_v1, evaluate_v2, normalize_answer
from albert_tf.squad.postprocess import (NbestEntry, SquadPredictions, postprocess,
                                         write_prediction_files)

_LAZY = {"SquadRunOptions": "runner", "SquadRunResult": "runner", "run": "runner",
         "squad_objective": "modeling",
         "train_dataset_fn": "records", "predict_dataset": "records"}

__all__ = ["Answer", "ContextTokens", "FeatureBuilder", "NbestEntry", "SkipReport",
           "SquadDataError", "SquadExample", "SquadFeature", "SquadPredictions",
           "align_pieces", "doc_windows", "evaluate_v1", "evaluate_v2", "normalize_answer",
           "postprocess", "read_squad_examples", "read_squad_file", "shuffle_training_examples",
           "tokenize_context", "write_prediction_files", *sorted(_LAZY)]


__getattr__ = lazy_names(__name__, _LAZY)
