"""GLUE fine-tuning (faithfulness §8): tasks and TSV reading, features, metrics, submission files.

The modules have the roles of every task package: `examples` (the task table and reading its
TSV files, with `tsv`), `features`, `records`, `modeling`, `metrics`, `runner`, `export`, plus
`submission`. The TensorFlow-free parts (examples, TSV, features, metrics, submission) import
eagerly. Imported
on demand: `runner` (`run(GlueRunOptions(...))`, behind run_classifier.py), `records` (feature
TFRecords and their cache), `modeling` (classifier and loss) and `export`. The learnable
MRPC-format demo task lives beside the built-in corpus (`albert_tf.corpus.glue_task`; CLI:
`python -m albert_tf.corpus.make_glue_task`). The task-independent plumbing (checkpoint evaluation,
inference, warm start, the run phases) is `albert_tf.finetuning`.

Example:
    >>> from albert_tf.glue import get_task, GlueProcessor, glue_metrics
    >>> task = get_task("sts-b")
    >>> examples = GlueProcessor(task).get_dev_examples("glue_data")
"""

from albert_tf.glue.features import (InputFeatures, convert_examples_to_features,
                                     convert_single_example, pack_tokens, truncate_seq_pair)
from albert_tf.glue.metrics import (accuracy, f1_score, glue_metrics, matthews_corrcoef, pearson,
                                    spearman)
from albert_tf.glue.submission import (SUBMISSION_FILES, read_submission, write_prediction_files,
                                       write_submission)
from albert_tf.glue.examples import (SPLITS, TASK_NAMES, TASKS, GlueProcessor, GlueTask, InputExample,
                                  get_task)
from albert_tf.glue.tsv import GlueDataError, read_tsv

__all__ = [
    "GlueDataError", "GlueProcessor", "GlueTask", "InputExample", "InputFeatures", "SPLITS",
    "SUBMISSION_FILES", "TASKS", "TASK_NAMES", "accuracy", "convert_examples_to_features",
    "convert_single_example", "f1_score", "get_task", "glue_metrics", "matthews_corrcoef",
    "pack_tokens", "pearson", "read_submission", "read_tsv", "spearman", "truncate_seq_pair",
    "write_prediction_files", "write_submission",
]
