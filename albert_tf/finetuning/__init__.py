"""Task-independent fine-tuning plumbing shared by the GLUE, SQuAD and RACE runners.

* `records` — the original's feature TFRecords (any fixed shape), written atomically
  without TensorFlow, read back as model inputs (spec §8.3, §10.3).
* `feature_cache` — reuse a feature file only when the settings that made it match.
* `objective` — softmax cross-entropy objective with accuracy, and its numpy twins.
* `model_source` — config, tokenizer and model from `--albert_config_file`, an encoder
  export (`--albert_hub_module_handle`) or a Hugging Face `--init_checkpoint` directory.
* `checkpoint_eval` — evaluate each saved checkpoint once, keep the best as
  `model.ckpt-best` (spec §8.6).
* `inference` — `Predictor`: a model's outputs over a whole dataset, in order, on any strategy.
* `warm_start` — `--init_checkpoint` into a task model, every encoder variable required.
* `run` — the phases every fine-tuning script shares: train (evaluating each checkpoint as
  it is saved), evaluate pending checkpoints keeping the best, load the best to predict.

Modules import TensorFlow on use; import them directly (`from albert_tf.finetuning import
records`).
"""
