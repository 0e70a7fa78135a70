"""RACE fine-tuning (faithfulness §10): reading both layouts, features, metrics, predictions file.

The TensorFlow-free parts (examples, questions, features, metrics, predictions, corpus
task) import eagerly; the runner (`albert_tf.race.runner.run`, behind run_race.py), the
record cache (`records`) and the model (`modeling`) import TensorFlow. The module names are
those of every task package (`examples`, `features`, `records`, `modeling`, `metrics`,
`runner`); RACE has no export.

Example:
    >>> from albert_tf.race import read_race_split, convert_examples_to_features
    >>> dev = read_race_split("data", "dev")            # data/RACE/dev/{middle,high}/
    >>> features = convert_examples_to_features(dev.examples, tokenizer, 512, 128)
"""

from albert_tf.race.examples import (ANSWER_LETTERS, LEVELS, SPLITS, RaceDataError, RaceExample,
                                     RaceSplit, levels_to_read, read_race_split, validate_article)
from albert_tf.race.features import (RaceFeatures, check_lengths, choice_tokens,
                                     convert_examples_to_features)
from albert_tf.race.metrics import race_metrics
from albert_tf.race.predictions import PREDICTIONS_FILE, read_predictions, write_predictions
from albert_tf.race.questions import qa_text, qa_texts

__all__ = [
    "ANSWER_LETTERS", "LEVELS", "PREDICTIONS_FILE", "SPLITS", "RaceDataError", "RaceExample",
    "RaceFeatures", "RaceSplit", "check_lengths", "choice_tokens", "convert_examples_to_features",
    "levels_to_read", "qa_text", "qa_texts", "race_metrics", "read_predictions",
    "read_race_split", "validate_article", "write_predictions",
]
