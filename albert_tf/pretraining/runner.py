"""run_pretraining's work as a library call: check the inputs, build the pretrainer, train,
evaluate.

`run(PretrainingRunOptions(...), strategy)` is what `run_pretraining.py` calls after parsing
its flags (faithfulness §6.1 names and defaults); in-process users (albert_tf.experiments, tests)
call it directly, so both go through the same code and the same checks: float options, the
config, every input file's records and summary (albert_tf.data.record_checks, sentence task
included) before anything is built, and each batch's ids in the input pipeline
(albert_tf.data.value_checks). `run` then checks --init_checkpoint against the model
(`check_init_checkpoint`) before the strategy or output_dir exist. Importing this module does
not import TensorFlow; `check` builds and writes nothing. The side-car evaluation (--do_eval
without --do_train) is `albert_tf.training.checkpoint_eval.follow_training`, as fine-tuning's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Sequence, Union

from albert_tf.checkpoints.kinds import is_hf_checkpoint as is_hf_directory
from albert_tf.checkpoints.tf1_hub_files import is_tf1_hub_module
from albert_tf.data.instances import SENTENCE_TASKS
from albert_tf.runtime.options import LEARNING_RATE, POSITIVE, option, option_problems, reworded
from albert_tf.training.choices import OPTIMIZER_NAMES
from albert_tf.training.loop_options import CheckpointSettings, EvalPollOptions, LoopOptions

if TYPE_CHECKING:
    import tensorflow as tf

    from albert_tf.config import AlbertConfig

    StrategyOrFactory = Union[tf.distribute.Strategy, Callable[[], tf.distribute.Strategy], None]

MASKED_LM_BUDGET_UNSUPPORTED = ("--masked_lm_budget is not supported (faithfulness Q12); "
                                "use --dynamic_masking")


@dataclasses.dataclass(kw_only=True)
class PretrainingRunOptions(LoopOptions, EvalPollOptions):
    """run_pretraining's flags, each declared once here (`options.option`): the original's
    (faithfulness §6.1 names and defaults) plus ours; the loop's and side-car evaluation's are
    inherited."""

    albert_config_file: str | None = option(
        help="albert_config.json of the model to train (default with a Hugging Face "
             "--init_checkpoint directory: its config.json).")
    input_file: str = option(
        help="Comma-separated globs of TFRecord files (used for training and evaluation).",
        required=True)
    output_dir: str = option(help="Checkpoints, TensorBoard summaries and eval_results.txt.",
                             required=True)
    init_checkpoint: str | None = option(
        None, "Warm start: an original TF1 checkpoint, a Hugging Face directory or one of ours "
              "(model weights only).")
    max_seq_length: int = option(512, "Sequence length S; must match the data.", lower_bound=1)
    max_predictions_per_seq: int = option(
        20, "Masked positions per sequence; must match the data.", lower_bound=0)
    do_train: bool = option(True, "Train.")
    do_eval: bool = option(
        False, "Evaluate and write eval_results.txt: after training with --do_train; without "
               "it, follow a trainer's checkpoints in --output_dir until --num_train_steps, "
               "each once, the best as model.ckpt-best.")
    train_batch_size: int = option(4096, "Global batch per optimizer step.", lower_bound=1)
    eval_batch_size: int = option(64, "Global eval batch.", lower_bound=1)
    optimizer: str = option("lamb", "lamb or adamw.", choices=OPTIMIZER_NAMES)
    learning_rate: float = option(0.00176, "Peak learning rate.", float_range=LEARNING_RATE)
    poly_power: float = option(1.0, "Power of the polynomial decay.", float_range=POSITIVE)
    num_train_steps: int = option(125000, "Optimizer steps.", lower_bound=1)
    num_warmup_steps: int = option(3125, "Linear warmup steps.", lower_bound=0)
    start_warmup_step: int = option(0, "Step at which warmup starts.")
    save_checkpoints_steps: int = option(5000, "Checkpoint every this many steps.",
                                         lower_bound=1)
    keep_checkpoint_max: int = reworded(CheckpointSettings, "keep_checkpoint_max",
                                        "Checkpoints kept.")
    iterations_per_loop: int = option(1000, "Steps per call of the compiled loop.",
                                      lower_bound=1)
    max_eval_steps: int = option(100, "Eval batches per evaluation.", lower_bound=1)
    init_from_group0: bool = option(
        False, "Groups missing from --init_checkpoint start from group 0's weights.")
    masked_lm_budget: int = option(
        0, "Original 'online masking' switch, never functional there (Q12): any value > 0 is "
           "rejected; use --dynamic_masking.", lower_bound=0)
    # ----- ours -----
    dynamic_masking: bool = option(
        False, "Read unmasked records and draw n-gram masks in the input pipeline each epoch.")
    # None: train the 2-way head on the records' labels (SOP or NSP); "none": masked LM only.
    sentence_prediction: str | None = option(
        None, "Sentence task (the paper's Table 5). Default: the records' labels (SOP or NSP, "
              "as create_pretraining_data made them); sop/nsp also check the records' .json "
              "summary agrees; none: masked LM only, no sentence loss or metrics.",
        choices=SENTENCE_TASKS)

    def check(self) -> "AlbertConfig":
        """The model config, after every check that needs no model: options, config, input
        records (ValueError subclasses or FileNotFoundError, one line each)."""
        from albert_tf import AlbertConfig

        if not (self.do_train or self.do_eval):
            raise ValueError("at least one of --do_train and --do_eval must be true")
        if self.masked_lm_budget:
            raise ValueError(MASKED_LM_BUDGET_UNSUPPORTED)
        problems = option_problems(self)
        if problems:
            raise ValueError(problems[0])
        # An HF directory's config.json or a TF1 Hub module's config asset, checked against
        # the file if given.
        if is_hf_directory(self.init_checkpoint) or is_tf1_hub_module(self.init_checkpoint):
            from albert_tf.model_source import task_config

            config = task_config(self.albert_config_file, None, self.init_checkpoint)
        elif not self.albert_config_file:
            raise ValueError("--albert_config_file is required unless --init_checkpoint is a "
                             "Hugging Face directory or a TF1 Hub module")
        else:
            config = AlbertConfig.from_json_file(self.albert_config_file)
        if self.max_seq_length > config.max_position_embeddings:
            raise ValueError(f"--max_seq_length={self.max_seq_length} exceeds the model's "
                             f"max_position_embeddings ({config.max_position_embeddings})")
        self.check_input_files(config)
        return config

    def check_input_files(self, config: "AlbertConfig") -> list[str]:
        """--input_file's files, each checked against the options and the config before
        anything is built (albert_tf.data.record_checks)."""
        from albert_tf.data import features as F
        from albert_tf.data.masking import SIDECAR_SUFFIX, read_sidecar
        from albert_tf.checkpoints.source_plan import plan_sources
        from albert_tf.data.record_checks import (RecordExpectations, RecordMismatchError,
                                                  check_record_files, resolve_files)

        try:
            files = resolve_files(self.input_file)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"--input_file: {e}") from None
        if self.dynamic_masking and read_sidecar(files[0]) is None:
            raise RecordMismatchError(
                f"{files[0]}{SIDECAR_SUFFIX}: missing; --dynamic_masking reads the masking "
                f"options from the summary create_pretraining_data --dynamic_masking_records "
                f"writes")
        check_record_files(files, RecordExpectations(
            max_seq_length=self.max_seq_length,
            max_predictions_per_seq=self.max_predictions_per_seq,
            kind=F.DYNAMIC if self.dynamic_masking else F.STATIC, vocab_size=config.vocab_size,
            vocab_source=plan_sources(self).config_source,
            sentence_prediction=self.sentence_prediction))
        return files


def run(opts: PretrainingRunOptions, strategy: "StrategyOrFactory" = None,
        callbacks: Sequence = ()) -> dict:
    """Checks, then trains and/or evaluates as `opts` say; returns the eval results (empty
    without do_eval), also written to output_dir/eval_results.txt (faithfulness §4.4, §6.4).

    `strategy`: a tf.distribute.Strategy, None (the default strategy), or a function making
    one, called only after the checks passed (so a script reports bad input before it sets
    up devices). A record value the model cannot look up stops the run with a
    RecordMismatchError naming the file and record.
    """
    config = opts.check()
    check_init_checkpoint(config, opts)  # before output_dir exists
    # The strategy, the model, the trainer and the input pipeline only now: nothing is
    # written above.
    import tensorflow as tf

    from albert_tf.data.record_checks import RecordMismatchError
    from albert_tf.data.value_checks import IdLimits, bad_record_message
    from albert_tf.checkpoints.source_plan import plan_sources
    from albert_tf.models import AlbertPretrainer
    from albert_tf.checkpoints import warm_start
    from albert_tf.pretraining.modeling import PretrainingObjective
    from albert_tf.pretraining.records import pretraining_dataset_fn
    from albert_tf.training import Trainer, create_optimizer
    from albert_tf.training.loop import LoopConfig

    if callable(strategy) and not isinstance(strategy, tf.distribute.Strategy):
        strategy = strategy()
    loop_config = LoopConfig.from_options(
        opts, output_dir=opts.output_dir, num_train_steps=opts.num_train_steps,
        train_batch_size=opts.train_batch_size, iterations_per_loop=opts.iterations_per_loop,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max)
    init_fn = None
    if opts.init_checkpoint:
        def init_fn(model):
            warm_start(model, opts.init_checkpoint, init_from_group0=opts.init_from_group0)
    trainer = Trainer(
        model_fn=lambda dtype: AlbertPretrainer(config, dtype=dtype),
        objective=PretrainingObjective(sentence_prediction=opts.sentence_prediction != "none"),
        config=loop_config, strategy=strategy, init_fn=init_fn, callbacks=callbacks,
        optimizer_fn=lambda: create_optimizer(
            opts.optimizer, opts.learning_rate, opts.num_train_steps, opts.num_warmup_steps,
            opts.start_warmup_step, opts.poly_power))
    id_limits = IdLimits(config.vocab_size, config.type_vocab_size,
                         source=plan_sources(opts).config_source)

    def dataset_fn(batch_size: int, is_training: bool):
        return pretraining_dataset_fn(
            opts.input_file, batch_size, opts.max_seq_length, opts.max_predictions_per_seq,
            is_training=is_training, dynamic_masking=opts.dynamic_masking, seed=opts.seed,
            id_limits=id_limits)

    results: dict = {}
    try:
        if opts.do_train:
            trainer.train(dataset_fn(opts.train_batch_size, is_training=True))
        if opts.do_eval and not opts.do_train:
            results = follow_training(trainer, opts, dataset_fn(opts.eval_batch_size,
                                                                is_training=False))
        elif opts.do_eval:
            results = trainer.evaluate(dataset_fn(opts.eval_batch_size, is_training=False),
                                       steps=opts.max_eval_steps)
    except tf.errors.OpError as e:  # the input's value checks stop a step with their message
        message = bad_record_message(e)
        if message is None:
            raise
        raise RecordMismatchError(message) from None
    return results


def follow_training(trainer, opts: PretrainingRunOptions, eval_dataset_fn: Callable) -> dict:
    """Side-car evaluation, as the original's --do_eval beside a trainer (faithfulness §6.4):
    each new checkpoint of output_dir is evaluated once (`max_eval_steps` batches) until
    `num_train_steps`, its metrics appended to eval_results.txt, the best by
    masked_lm_accuracy copied to model.ckpt-best; progress in best_trial.txt, so a restart
    resumes. Returns the last evaluated checkpoint's results ({} if none was new)."""
    from albert_tf.pretraining.metrics import BEST_METRIC
    from albert_tf.training import checkpoint_eval

    def evaluate_fn(step: int) -> dict:
        return trainer.evaluate(eval_dataset_fn, steps=opts.max_eval_steps, results_file=None)

    evaluator = checkpoint_eval.CheckpointEvaluator(
        opts.output_dir, BEST_METRIC, evaluate_fn, trainer.restore_model, prune=False,
        best_lines=False)
    results = checkpoint_eval.follow_training(
        evaluator, opts.num_train_steps,
        checkpoint_eval.PollSettings(opts.eval_poll_secs, opts.eval_timeout_secs),
        final_step_flag="--num_train_steps")
    return results[-1] if results else {}


def check_init_checkpoint(config: "AlbertConfig", opts: PretrainingRunOptions) -> None:
    """`finetuning.preflight.check_init_checkpoint` for run_pretraining: the pretrainer (MLM
    + SOP heads required, as its warm start) with `opts.init_from_group0`."""
    from albert_tf.checkpoints import warm_start
    from albert_tf.finetuning.preflight import check_init_checkpoint as check_fits
    from albert_tf.models import AlbertPretrainer

    check_fits(lambda: AlbertPretrainer(config), opts,
               check=lambda model, path: warm_start(
                   model, path, init_from_group0=opts.init_from_group0, dry_run=True))
