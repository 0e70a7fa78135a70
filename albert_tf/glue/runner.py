"""run_classifier's work as a library call: train, evaluate checkpoints, predict, export.

`run(GlueRunOptions(...))` is what `run_classifier.py` calls after parsing its flags (faithfulness
§8.1); tests call it directly. Order of work, as the original: read and check every split
requested (bad input fails here, before any cache file or training), build or reuse the
cached features, train (evaluating each checkpoint as it is saved when --do_eval is also
given), evaluate the checkpoints not evaluated yet (without do_train: follow a trainer's
checkpoints until train_step, as the original's side-car evaluator), predict with the best
one, export it.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.model_source import task_config, task_tokenizer
from albert_tf.checkpoints.warm_starting import RestoreReport
from albert_tf.finetuning.metrics import mean_of_batch_means
from albert_tf.finetuning.preflight import check_init_checkpoint, check_vocab_fits
from albert_tf.finetuning.run import FineTuningError, FineTuningRun, FixedStepOptions
from albert_tf.glue import records
from albert_tf.glue.export import export_classifier
from albert_tf.glue.features import convert_examples_to_features
from albert_tf.glue.metrics import glue_metrics, per_example_loss
from albert_tf.glue.modeling import classifier_model_fn, glue_objective
from albert_tf.glue.submission import write_prediction_files
from albert_tf.glue.tasks import GlueProcessor, GlueTask, InputExample, get_task
from albert_tf.training.choices import OPTIMIZER_NAMES, TFLITE_QUANTIZATIONS

# The original ignores keep_checkpoint_max and lets the eval loop prune (Q19, kept).
KEEP_ALL_CHECKPOINTS = 2**31 - 1


class GlueRunError(FineTuningError):
    """Inconsistent options (one line, shown without a traceback by run_classifier)."""


@dataclasses.dataclass(kw_only=True)
class GlueRunOptions(FixedStepOptions):
    """run_classifier's flags (faithfulness §8.1 names and defaults); the shared fine-tuning and loop
    flags (output_dir, init_checkpoint, do_*, batch sizes, steps, …) are inherited."""

    data_dir: str
    task_name: str
    albert_config_file: str | None = None
    vocab_file: str | None = None
    spm_model_file: str | None = None
    cached_dir: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    keep_checkpoint_max: int = 5  # accepted, unused (Q19)
    optimizer: str = "adamw"
    export_dir: str | None = None
    threshold_to_export: float = float("nan")
    tflite_quantization: str = "none"  # ours: the TFLite file beside the export
    openvino_ir: bool = False  # ours: the OpenVINO IR beside the export


@dataclasses.dataclass
class GlueRunResult:
    """What a run did: last training logs, every eval, the best, files written."""

    train_logs: dict[str, float] = dataclasses.field(default_factory=dict)
    eval_results: list[dict[str, float]] = dataclasses.field(default_factory=list)
    best_step: int | None = None
    best_results: dict[str, float] | None = None
    prediction_files: list[str] = dataclasses.field(default_factory=list)
    export_dir: str | None = None
    restore_report: RestoreReport | None = None


def _validate(opts: GlueRunOptions, task: GlueTask) -> None:
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
        raise GlueRunError("at least one of do_train, do_eval, do_predict or export_dir is "
                           "required")
    if opts.optimizer not in OPTIMIZER_NAMES:
        raise GlueRunError(f"optimizer must be one of {', '.join(OPTIMIZER_NAMES)}, "
                           f"got {opts.optimizer!r}")
    if opts.tflite_quantization not in TFLITE_QUANTIZATIONS:
        raise GlueRunError(f"tflite_quantization must be one of {', '.join(TFLITE_QUANTIZATIONS)}, "
                           f"got {opts.tflite_quantization!r}")
    if opts.do_train and opts.train_step < 1:
        raise GlueRunError(f"train_step must be >= 1 with do_train, got {opts.train_step}")
    if opts.max_seq_length < 3:
        raise GlueRunError(f"max_seq_length must be >= 3, got {opts.max_seq_length}")
    for split, wanted in (("train", opts.do_train), ("dev", opts.do_eval)):
        if wanted and split not in task.splits:
            hint = ""
            if task.name == "ax":
                hint = ("; predict it with an MNLI model: --do_predict "
                        "--init_checkpoint=<mnli output_dir>/model.ckpt-best")
            raise GlueRunError(f"task {task.name} has no {split} split (only "
                               f"{', '.join(task.splits)}){hint}")


class GlueRun(FineTuningRun):
    """One invocation's state: task, tokenizer, cached records, trainer, predictor."""

    opts: GlueRunOptions

    def __init__(self, opts: GlueRunOptions, strategy: tf.distribute.Strategy | None = None):
        super().__init__(opts, strategy)
        self.task = get_task(opts.task_name)
        _validate(opts, self.task)
        # With --albert_hub_module_handle: the export's config and SentencePiece model (Q21).
        self.config = task_config(opts.albert_config_file, opts.albert_hub_module_handle,
                                  opts.init_checkpoint)
        if opts.max_seq_length > self.config.max_position_embeddings:
            raise GlueRunError(f"max_seq_length {opts.max_seq_length} exceeds the model's "
                               f"max_position_embeddings {self.config.max_position_embeddings}")
        self.tokenizer = task_tokenizer(opts.vocab_file, opts.spm_model_file, opts.do_lower_case,
                                        opts.albert_hub_module_handle, opts.init_checkpoint)
        check_vocab_fits(self.config, self.tokenizer, opts)
        model_fn = classifier_model_fn(self.config, self.task.num_labels,
                                       opts.albert_hub_module_handle)
        check_init_checkpoint(model_fn, opts)
        self.processor = GlueProcessor(self.task, self.tokenizer.uses_sentencepiece,
                                       opts.do_lower_case)
        self.result = GlueRunResult(eval_results=self.eval_results)
        # Read every requested split first: bad input stops the run before anything is written.
        wanted = [s for s, on in (("train", opts.do_train), ("dev", opts.do_eval),
                                  ("test", opts.do_predict)) if on]
        self.examples: dict[str, list[InputExample]] = {
            split: self.processor.get_examples(opts.data_dir, split) for split in wanted}
        for split, examples in self.examples.items():
            logging.info("%s %s: %d examples", self.task.name, split, len(examples))
        self.records = {split: self._records(split) for split in wanted}
        self.buckets = self.length_buckets(opts.max_seq_length)
        self.setup(model_fn, glue_objective(self.task), self.task.metric_key,
                   num_train_steps=opts.train_step, num_warmup_steps=opts.warmup_step,
                   optimizer_name=opts.optimizer, keep_checkpoint_max=KEEP_ALL_CHECKPOINTS)

    # ----- inputs -----
    def _records(self, split: str) -> str:
        """The split's cached features: in --cached_dir (the user's: refused when stale)
        or output_dir (ours: rebuilt when stale)."""
        opts = self.opts
        examples = self.examples[split]
        settings = records.cache_settings(self.task.name, split, opts.max_seq_length,
                                          opts.do_lower_case, self.tokenizer,
                                          self.task.path(opts.data_dir, split), len(examples))
        return records.cached_records(
            records.cache_path(opts.cached_dir or opts.output_dir, self.task.name, split),
            settings, lambda: convert_examples_to_features(
                examples, self.processor.get_labels(), opts.max_seq_length, self.tokenizer),
            self.task.is_regression, owned=not opts.cached_dir)

    def _dataset(self, split: str, batch_size: int) -> tf.data.Dataset:
        return records.eval_dataset(self.records[split], batch_size, self.opts.max_seq_length,
                                    self.task.is_regression, self.buckets)

    # ----- evaluation -----
    def evaluate_current(self, step: int) -> dict[str, float]:
        """Metrics of the model's current weights on the dev set (faithfulness §8.5)."""
        outputs = self.predictor.run(self._dataset("dev", self.opts.eval_batch_size),
                                     len(self.examples["dev"]), f"Evaluating {self.task.name} dev")
        logits, labels = outputs["logits"], outputs["label_ids"]
        weights = outputs["is_real_example"]
        results = glue_metrics(self.task, logits, labels, weights)
        # The Estimator's "loss": the mean over eval batches of each batch's mean loss.
        results["loss"] = mean_of_batch_means(per_example_loss(self.task, logits, labels),
                                              self.opts.eval_batch_size)
        self.report(f"Eval results ({len(labels)} examples)", step, results)
        return results

    # ----- the phases -----
    def train(self) -> None:  # pylint: disable=arguments-differ
        opts = self.opts
        self.result.train_logs = super().train(
            records.train_dataset_fn(self.records["train"], opts.train_batch_size,
                                     opts.max_seq_length, self.task.is_regression, opts.seed,
                                     self.buckets),
            evaluate_on_save=opts.do_eval)

    def evaluate(self) -> None:
        super().evaluate()
        self.result.best_step = self.evaluator.best_step
        self.result.best_results = self.evaluator.best_results

    def predict(self) -> None:
        source = self.load_best_weights()
        logging.info("Predicting %s test with %s", self.task.name, source)
        outputs = self.predictor.run(self._dataset("test", self.opts.predict_batch_size),
                                     len(self.examples["test"]), f"Predicting {self.task.name} test")
        examples = self.examples["test"]
        if len(outputs["logits"]) != len(examples):
            raise RuntimeError(f"{len(outputs['logits'])} predictions for {len(examples)} examples")
        tf.io.gfile.makedirs(self.opts.output_dir)
        self.result.prediction_files = write_prediction_files(
            self.opts.output_dir, self.task, [e.guid for e in examples], outputs["logits"])
        logging.info("Wrote %s", ", ".join(self.result.prediction_files))

    def export(self) -> None:
        source = self.load_best_weights()
        logging.info("Exporting %s", source)
        self.result.export_dir = export_classifier(
            self.trainer.model, self.opts.export_dir, self.opts.max_seq_length,
            self.task.is_regression, self.opts.threshold_to_export,
            self.opts.tflite_quantization, self.config.vocab_size, self.float32_model(),
            openvino_ir=self.opts.openvino_ir)


def run(opts: GlueRunOptions, strategy: tf.distribute.Strategy | None = None) -> GlueRunResult:
    """Does what the options ask, in the original's order; returns what happened."""
    glue = GlueRun(opts, strategy)
    if opts.do_train:
        glue.train()
    if opts.do_eval:
        glue.evaluate()
    if opts.do_predict:
        glue.predict()
    if opts.export_dir:
        glue.export()
    return glue.result
