"""run_pretraining's work as a library call: build the pretrainer, train, evaluate.

`run(PretrainingRunOptions(...), strategy)` is what `run_pretraining.py` calls after parsing
its flags (faithfulness §6.1 names and defaults); in-process users (albert_tf.experiments, tests)
call it directly, so both go through the same code. Importing this module does not import
TensorFlow: `check` reports config and option errors in a fraction of a second.
"""

from __future__ import annotations

import dataclasses
import glob
import json
from typing import TYPE_CHECKING, Sequence

from albert_tf.data.instances import SENTENCE_TASKS
from albert_tf.data.masking import SIDECAR_SUFFIX

if TYPE_CHECKING:
    import tensorflow as tf

    from albert_tf.config import AlbertConfig


@dataclasses.dataclass(kw_only=True)
class PretrainingRunOptions:
    """run_pretraining's flags: the original's (faithfulness §6.1) plus ours."""

    albert_config_file: str
    input_file: str
    output_dir: str
    init_checkpoint: str | None = None
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    do_train: bool = True
    do_eval: bool = False
    train_batch_size: int = 4096
    eval_batch_size: int = 64
    optimizer: str = "lamb"
    learning_rate: float = 0.00176
    poly_power: float = 1.0
    num_train_steps: int = 125000
    num_warmup_steps: int = 3125
    start_warmup_step: int = 0
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    iterations_per_loop: int = 1000
    max_eval_steps: int = 100
    init_from_group0: bool = False
    # ----- ours -----
    dynamic_masking: bool = False
    # None: train the 2-way head on the records' labels (SOP or NSP); "none": masked LM only.
    sentence_prediction: str | None = None
    log_steps: int = 100
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    dtype: str = "float32"
    seed: int | None = None

    def check(self) -> "AlbertConfig":
        """The model config, after the checks that need no TensorFlow (ValueError otherwise)."""
        from albert_tf import AlbertConfig  # pylint: disable=import-outside-toplevel

        config = AlbertConfig.from_json_file(self.albert_config_file)
        if self.max_seq_length > config.max_position_embeddings:
            raise ValueError(f"--max_seq_length={self.max_seq_length} exceeds the model's "
                             f"max_position_embeddings ({config.max_position_embeddings})")
        if self.sentence_prediction not in (None, *SENTENCE_TASKS):
            raise ValueError(f"--sentence_prediction={self.sentence_prediction}: expected one of "
                             f"{', '.join(SENTENCE_TASKS)}")
        check_sentence_task(self.input_file, self.sentence_prediction)
        return config


def records_sentence_task(path: str) -> str | None:
    """The pair task create_pretraining_data wrote into `<path>.json`, if it says."""
    try:
        with open(path + SIDECAR_SUFFIX, encoding="utf-8") as f:
            return json.load(f).get("sentence_prediction")
    except (OSError, ValueError, AttributeError):
        return None


def check_sentence_task(input_file: str, sentence_prediction: str | None) -> None:
    """Refuses a sentence task the (local) records were not made for, e.g. NSP training on
    SOP records, or a sentence loss on "none" records whose labels are all "in order"."""
    for pattern in (p.strip() for p in input_file.split(",") if p.strip()):
        for path in sorted(glob.glob(pattern)):
            made_for = records_sentence_task(path)
            if made_for is None or sentence_prediction == "none" or made_for == sentence_prediction:
                continue
            if made_for == "none" or sentence_prediction is not None:
                raise ValueError(
                    f"--sentence_prediction={sentence_prediction or '(unset: sop or nsp)'} but "
                    f"{path}{SIDECAR_SUFFIX} says its records were made for "
                    f"--sentence_prediction={made_for}")


def run(opts: PretrainingRunOptions, strategy: "tf.distribute.Strategy | None" = None,
        callbacks: Sequence = ()) -> dict:
    """Trains and/or evaluates as `opts` say; returns the eval results (empty without
    do_eval), also written to output_dir/eval_results.txt (faithfulness §4.4, §6.4)."""
    if not (opts.do_train or opts.do_eval):
        raise ValueError("at least one of --do_train and --do_eval must be true")
    config = opts.check()
    # pylint: disable=import-outside-toplevel
    from albert_tf.models import AlbertPretrainer
    from albert_tf.training import LoopConfig, Trainer, create_optimizer, warm_start
    from albert_tf.training.pretraining import PretrainingObjective, pretraining_dataset_fn

    loop_config = LoopConfig(
        output_dir=opts.output_dir, num_train_steps=opts.num_train_steps,
        train_batch_size=opts.train_batch_size, iterations_per_loop=opts.iterations_per_loop,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max, log_steps=opts.log_steps,
        gradient_accumulation_steps=opts.gradient_accumulation_steps,
        jit_compile=opts.jit_compile, dtype=opts.dtype)
    init_fn = None
    if opts.init_checkpoint:
        def init_fn(model):
            warm_start(model, opts.init_checkpoint, init_from_group0=opts.init_from_group0)
    trainer = Trainer(
        model_fn=lambda: AlbertPretrainer(config),
        objective=PretrainingObjective(sentence_prediction=opts.sentence_prediction != "none"),
        config=loop_config, strategy=strategy, init_fn=init_fn, callbacks=callbacks,
        optimizer_fn=lambda: create_optimizer(
            opts.optimizer, opts.learning_rate, opts.num_train_steps, opts.num_warmup_steps,
            opts.start_warmup_step, opts.poly_power))

    def dataset_fn(batch_size: int, is_training: bool):
        return pretraining_dataset_fn(
            opts.input_file, batch_size, opts.max_seq_length, opts.max_predictions_per_seq,
            is_training=is_training, dynamic_masking=opts.dynamic_masking, seed=opts.seed)

    results: dict = {}
    if opts.do_train:
        trainer.train(dataset_fn(opts.train_batch_size, is_training=True))
    if opts.do_eval:
        if not opts.do_train:
            trainer.restore_model()
        results = trainer.evaluate(dataset_fn(opts.eval_batch_size, is_training=False),
                                   steps=opts.max_eval_steps)
    return results
