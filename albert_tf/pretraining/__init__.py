"""ALBERT pretraining (masked LM + sentence order), a task beside glue/, squad/ and race/.

The same module names as the other task packages: `records` (the original's TFRecord features
→ the pretrainer's inputs and labels), `modeling` (MLM + SOP losses, the objective),
`metrics` (the original's eval metric names and the side-car's selection metric) and `runner`
(`run(PretrainingRunOptions(...))`, behind run_pretraining.py). The machinery they run on
(loop, optimizers, checkpoints, side-car evaluation) is `albert_tf.training`. Nothing is
imported eagerly: `runner`'s options and checks load without TensorFlow.

Example:
    >>> from albert_tf.pretraining.runner import PretrainingRunOptions, run
    >>> run(PretrainingRunOptions(albert_config_file="albert_config.json",
    ...                           input_file="data/*.tfrecord", output_dir="out"))
"""
