"""Task-independent fine-tuning plumbing shared by the GLUE, SQuAD and RACE runners.

* `records` — the original's feature TFRecords (any fixed shape): the one writer (atomic,
  without TensorFlow), read back as model inputs (faithfulness §8.3, §9.4, §10.3).
* `feature_cache` — the one cache policy: a feature file is reused only when its key
  (tokenizer contents, data contents, every feature setting) matches; ours are rebuilt when
  stale, user-named ones refused.
* `objective` — softmax cross-entropy objective with accuracy, and its numpy twins.
* `inference` — `Predictor`: chosen model outputs and passthrough keys over a whole dataset,
  in order, under the strategy, traced once for any batch size and sequence length.
* `options` — `FineTuningOptions` (the flags all scripts share), `FixedStepOptions` (GLUE,
  RACE), `ExportOptions` (GLUE, SQuAD v1), `FineTuningResult` (what every run reports).
* `run` — `FineTuningRun`, the one run template every task (GLUE, SQuAD, RACE) fills in:
  the set-up sequence (config → tokenizer → model → checks → examples → features → length
  buckets → trainer) and the phases (`run()`: train → evaluate each checkpoint keeping the
  best → predict → export) written once; a task supplies its examples, features, model,
  metrics and outputs, in modules of the same names in each task package (`examples`,
  `features`, `records`, `modeling`, `metrics`, `runner`, `export`).

Modules import TensorFlow on use; import them directly (`from albert_tf.finetuning import
records`).
"""
