"""Task-independent fine-tuning plumbing shared by the GLUE, SQuAD and RACE runners.

* `records` — the original's feature TFRecords (any fixed shape): the one writer (atomic,
  without TensorFlow), read back as model inputs (faithfulness §8.3, §9.4, §10.3).
* `feature_cache` — the one cache policy: a feature file is reused only when its key
  (tokenizer contents, data contents, every feature setting) matches; ours are rebuilt when
  stale, user-named ones refused.
* `objective` — softmax cross-entropy objective with accuracy, and its numpy twins.
* `inference` — `Predictor`: chosen model outputs and passthrough keys over a whole dataset,
  in order, under the strategy, traced once for any batch size and sequence length.
* `run` — `FineTuningRun`, the path every task (GLUE, SQuAD, RACE) takes: build the model →
  warm start → train → evaluate each checkpoint keeping the best → predict → the task's
  post-processing and scoring; `FineTuningOptions` are the flags all scripts share.

Modules import TensorFlow on use; import them directly (`from albert_tf.finetuning import
records`).
"""
