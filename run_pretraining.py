r"""ALBERT pretraining (MLM + SOP) on TFRecords, on the shared training loop.

The original's run_pretraining flags and defaults (spec §6.1), plus our additions:
--distribution_strategy, --num_gpus, --dtype, --jit_compile, --gradient_accumulation_steps,
--dynamic_masking, --seed, --deterministic, --log_steps, --clip_norm_mode, --recompute_grad.

    python run_pretraining.py --albert_config_file=albert_config.json \
        --input_file='data/*.tfrecord' --output_dir=out --do_train --do_eval \
        --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 \
        --optimizer=lamb --learning_rate=0.00176 --num_train_steps=125000 \
        --num_warmup_steps=3125 --save_checkpoints_steps=5000

Training resumes from the latest checkpoint in --output_dir; evaluation writes
output_dir/eval_results.txt (spec §4.4, §6.4). Before anything is built, every input file
is checked against the flags and the config (lengths, record kind, vocabulary; its JSON
summary when present); during training each batch's ids are checked on the host. Bad input
is one line `run_pretraining: error: …` and exit status 1.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os
from typing import Sequence

from absl import app, flags

from albert_tf import cli
from albert_tf.finetuning import preflight
from albert_tf.training import flags as training_flags
from albert_tf.training.choices import OPTIMIZER_NAMES

FLAGS = flags.FLAGS

# ----- the original's flags (spec §6.1) -----
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json of the model to train (default with a Hugging Face "
                    "--init_checkpoint directory: its config.json).")
flags.DEFINE_string("input_file", None,
                    "Comma-separated globs of TFRecord files (used for training and evaluation).")
flags.DEFINE_string("output_dir", None, "Checkpoints, TensorBoard summaries and eval_results.txt.")
flags.DEFINE_string("init_checkpoint", None,
                    "Warm start: an original TF1 checkpoint, a Hugging Face directory or one of "
                    "ours (model weights only).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length S; must match the data.", lower_bound=1)
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Masked positions per sequence; must match the data.", lower_bound=0)
flags.DEFINE_bool("do_train", True, "Train.")
flags.DEFINE_bool("do_eval", False, "Evaluate the latest checkpoint and write eval_results.txt.")
flags.DEFINE_integer("train_batch_size", 4096, "Global batch per optimizer step.", lower_bound=1)
flags.DEFINE_integer("eval_batch_size", 64, "Global eval batch.", lower_bound=1)
flags.DEFINE_enum("optimizer", "lamb", list(OPTIMIZER_NAMES), "lamb or adamw.")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Optimizer steps.", lower_bound=1)
flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps.", lower_bound=0)
flags.DEFINE_integer("start_warmup_step", 0, "Step at which warmup starts.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "Checkpoint every this many steps.", lower_bound=1)
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.", lower_bound=1)
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per call of the compiled loop.", lower_bound=1)
flags.DEFINE_integer("max_eval_steps", 100, "Eval batches per evaluation.", lower_bound=1)
flags.DEFINE_bool("init_from_group0", False,
                  "Groups missing from --init_checkpoint start from group 0's weights.")
flags.DEFINE_integer("masked_lm_budget", 0,
                     "Original 'online masking' switch, never functional there (Q12): any value "
                     "> 0 is rejected; use --dynamic_masking.", lower_bound=0)
# ----- ours -----
flags.DEFINE_bool("dynamic_masking", False,
                  "Read unmasked records and draw n-gram masks in the input pipeline each epoch.")
training_flags.define_training_flags()
training_flags.define_tpu_flags()
flags.mark_flags_as_required(["output_dir", "input_file"])


def _is_hf_directory(path: str | None) -> bool:
    return bool(path) and os.path.isfile(os.path.join(path, "config.json"))


flags.register_multi_flags_validator(
    ["albert_config_file", "init_checkpoint"],
    lambda f: bool(f["albert_config_file"]) or _is_hf_directory(f["init_checkpoint"]),
    "--albert_config_file is required unless --init_checkpoint is a Hugging Face directory")
flags.register_validator("masked_lm_budget", lambda v: v == 0,
                         "--masked_lm_budget is not supported (spec Q12); use --dynamic_masking")
flags.register_multi_flags_validator(["do_train", "do_eval"], lambda f: f["do_train"] or f["do_eval"],
                                     "at least one of --do_train and --do_eval must be true")
training_flags.register_float_validators({
    "learning_rate": training_flags.FloatRange(low=0.0, low_open=True, when="do_train"),
    "poly_power": training_flags.POSITIVE})


def check_input_files(config) -> list[str]:
    """--input_file's files, each checked against the flags and the config before anything
    is built (albert_tf.data.record_checks)."""
    from albert_tf.data import features as F
    from albert_tf.data.masking import SIDECAR_SUFFIX, read_sidecar
    from albert_tf.data.record_checks import (RecordExpectations, RecordMismatchError,
                                              check_record_files, resolve_files)

    try:
        files = resolve_files(FLAGS.input_file)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"--input_file: {e}") from None
    if FLAGS.dynamic_masking and read_sidecar(files[0]) is None:
        raise RecordMismatchError(
            f"{files[0]}{SIDECAR_SUFFIX}: missing; --dynamic_masking reads the masking options "
            f"from the summary create_pretraining_data --dynamic_masking_records writes")
    check_record_files(files, RecordExpectations(
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        kind=F.DYNAMIC if FLAGS.dynamic_masking else F.STATIC, vocab_size=config.vocab_size,
        vocab_source=preflight.config_source(FLAGS)))
    return files


def run(callbacks: Sequence = ()) -> dict:
    """Builds everything from FLAGS, trains and/or evaluates; returns the eval results."""
    from albert_tf import AlbertConfig

    if _is_hf_directory(FLAGS.init_checkpoint):  # config.json, checked against the file if given
        from albert_tf.finetuning.model_source import task_config

        config = task_config(FLAGS.albert_config_file, None, FLAGS.init_checkpoint)
    else:
        config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the model's "
                         f"max_position_embeddings ({config.max_position_embeddings})")
    check_input_files(config)
    preflight.check_pretraining_init_checkpoint(config, FLAGS)  # before output_dir exists
    # The model, the trainer and the input pipeline only now: nothing is written above.
    import tensorflow as tf

    from albert_tf.data.record_checks import RecordMismatchError
    from albert_tf.data.value_checks import IdLimits, bad_record_message
    from albert_tf.models import AlbertPretrainer
    from albert_tf.training import LoopConfig, Trainer, create_optimizer, warm_start
    from albert_tf.training.pretraining import PretrainingObjective, pretraining_dataset_fn

    strategy = training_flags.setup_from_flags(FLAGS)
    loop_config = LoopConfig(
        output_dir=FLAGS.output_dir, num_train_steps=FLAGS.num_train_steps,
        train_batch_size=FLAGS.train_batch_size, iterations_per_loop=FLAGS.iterations_per_loop,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max, log_steps=FLAGS.log_steps,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        jit_compile=FLAGS.jit_compile, dtype=FLAGS.dtype, clip_norm_mode=FLAGS.clip_norm_mode,
        recompute_grad=FLAGS.recompute_grad)
    init_fn = None
    if FLAGS.init_checkpoint:
        def init_fn(model):
            warm_start(model, FLAGS.init_checkpoint, init_from_group0=FLAGS.init_from_group0)
    trainer = Trainer(
        model_fn=lambda: AlbertPretrainer(config), objective=PretrainingObjective(),
        config=loop_config, strategy=strategy, init_fn=init_fn, callbacks=callbacks,
        optimizer_fn=lambda: create_optimizer(
            FLAGS.optimizer, FLAGS.learning_rate, FLAGS.num_train_steps, FLAGS.num_warmup_steps,
            FLAGS.start_warmup_step, FLAGS.poly_power))

    id_limits = IdLimits(config.vocab_size, config.type_vocab_size,
                         source=preflight.config_source(FLAGS))

    def dataset_fn(batch_size: int, is_training: bool):
        return pretraining_dataset_fn(
            FLAGS.input_file, batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
            is_training=is_training, dynamic_masking=FLAGS.dynamic_masking, seed=FLAGS.seed,
            id_limits=id_limits)

    results: dict = {}
    try:
        if FLAGS.do_train:
            trainer.train(dataset_fn(FLAGS.train_batch_size, is_training=True))
        if FLAGS.do_eval:
            if not FLAGS.do_train:
                trainer.restore_model()
            results = trainer.evaluate(dataset_fn(FLAGS.eval_batch_size, is_training=False),
                                       steps=FLAGS.max_eval_steps)
    except tf.errors.OpError as e:  # the input's value checks stop a step with their message
        message = bad_record_message(e)
        if message is None:
            raise
        raise RecordMismatchError(message) from None
    return results


def main(argv: Sequence[str], callbacks: Sequence = ()) -> None:
    # Bad input (config, checkpoint, records) or a diverged run: one line and exit status 1,
    # not a traceback (--verbosity=1 logs it).
    cli.run_script("run_pretraining", argv, lambda: run(callbacks))


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("run_pretraining"))
