"""run_squad's work as a library call: read, build or reuse features, train, predict, evaluate.

`run(SquadRunOptions(...))` is what `run_squad.py` calls after parsing its flags (spec
§9.1); tests call it directly. Order of work: read and check the input files (bad input
fails before anything is written), build or reuse the feature caches, train, then
predict + evaluate every checkpoint not evaluated yet, keeping the best by F1 as
`model.ckpt-best` (the original's predict loop, spec §9.8). The files of the best
checkpoint are the ones left in output_dir.

Q23 fixed: prediction alone reads neither `train_file` nor a step count.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import tensorflow as tf
from absl import logging

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.finetuning.checkpoint_eval import CheckpointEvaluator
from albert_tf.finetuning.model_source import task_config, task_tokenizer
from albert_tf.models.span_labeler import AlbertSpanLabeler
from albert_tf.squad import feature_cache, inputs
from albert_tf.squad.evaluate import evaluate_v1, evaluate_v2
from albert_tf.squad.examples import (SkipReport, SquadExample, read_squad_examples,
                                      read_squad_file, shuffle_training_examples)
from albert_tf.squad.features import FeatureBuilder, SquadFeature
from albert_tf.squad.objective import squad_objective
from albert_tf.squad.postprocess import (NULL_THRESHOLD_RULES, SquadPredictions, postprocess,
                                         write_prediction_files)
from albert_tf.squad.predict import predict_raw_results
from albert_tf.export.loading import HubEncoder
from albert_tf.training import LoopConfig, Trainer, create_optimizer
from albert_tf.training.summaries import write_scalars

NA_PROB_THRESH = 1.0  # the official default, applied to logits by the original (Q25, kept)


class SquadRunError(ValueError):
    """Inconsistent options (one line, shown without a traceback by run_squad)."""


@dataclasses.dataclass
class SquadRunOptions:
    """run_squad_v1/v2's flags (spec §9.1 names and defaults) plus ours and the loop's."""

    albert_config_file: str | None
    spm_model_file: str | None
    output_dir: str
    vocab_file: str | None = None
    train_file: str | None = None
    predict_file: str | None = None
    train_feature_file: str | None = None
    predict_feature_file: str | None = None
    predict_feature_left_file: str | None = None
    init_checkpoint: str | None = None
    albert_hub_module_handle: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    start_n_top: int = 5
    end_n_top: int = 5
    dropout_prob: float = 0.1
    # Ours.
    null_threshold_rule: str = "original"
    null_score_diff_threshold: float | None = None
    # The training loop's shared flags.
    log_steps: int = 100
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    dtype: str = "float32"
    seed: int | None = None
    clip_norm_mode: str = "original"
    recompute_grad: bool = False


@dataclasses.dataclass
class SquadRunResult:
    """What a run did: training steps and logs, every evaluation, the best, skips, files."""

    num_train_steps: int = 0
    train_logs: dict[str, float] = dataclasses.field(default_factory=dict)
    eval_results: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    best_step: int | None = None
    best_results: dict[str, Any] | None = None
    prediction_files: dict[str, str] = dataclasses.field(default_factory=dict)
    skips: SkipReport = dataclasses.field(default_factory=SkipReport)
    restored_variables: int = 0  # by --init_checkpoint


def _validate_sources(opts: SquadRunOptions) -> None:
    """A model and a tokenizer must come from flags or from an encoder export."""
    if opts.albert_hub_module_handle:
        return
    if not opts.albert_config_file:
        raise SquadRunError("albert_config_file is required unless albert_hub_module_handle is set")
    if not (opts.spm_model_file or opts.vocab_file):
        raise SquadRunError("spm_model_file (or vocab_file) is required unless "
                            "albert_hub_module_handle is set")


def _validate(opts: SquadRunOptions, config: AlbertConfig) -> None:
    if not (opts.do_train or opts.do_predict):
        raise SquadRunError("at least one of do_train and do_predict must be true")
    if opts.do_train and not opts.train_file:
        raise SquadRunError("do_train needs train_file")
    if opts.do_predict and not opts.predict_file:
        raise SquadRunError("do_predict needs predict_file")
    if opts.max_seq_length > config.max_position_embeddings:
        raise SquadRunError(f"max_seq_length {opts.max_seq_length} exceeds the model's "
                            f"max_position_embeddings {config.max_position_embeddings}")
    if opts.max_seq_length <= opts.max_query_length + 3:
        raise SquadRunError(f"max_seq_length ({opts.max_seq_length}) must exceed "
                            f"max_query_length + 3 ({opts.max_query_length + 3})")
    if opts.null_threshold_rule not in NULL_THRESHOLD_RULES:
        raise SquadRunError(f"null_threshold_rule must be one of {NULL_THRESHOLD_RULES}")
    if opts.version_2_with_negative and max(opts.start_n_top, opts.end_n_top) > opts.max_seq_length:
        raise SquadRunError("start_n_top and end_n_top must not exceed max_seq_length")


class SquadRun:
    """One invocation's state: examples, features, trainer, evaluator."""

    def __init__(self, opts: SquadRunOptions, strategy: tf.distribute.Strategy | None = None):
        self.opts = opts
        _validate_sources(opts)
        # With --albert_hub_module_handle the export carries its config and tokenizer.
        self.config = task_config(opts.albert_config_file, opts.albert_hub_module_handle)
        _validate(opts, self.config)
        self.result = SquadRunResult()
        self.tokenizer = task_tokenizer(opts.vocab_file, opts.spm_model_file, opts.do_lower_case,
                                        opts.albert_hub_module_handle)
        self.builder = FeatureBuilder(self.tokenizer, opts.max_seq_length, opts.doc_stride,
                                      opts.max_query_length, opts.do_lower_case)
        v2 = opts.version_2_with_negative
        # Read every input first: bad input stops the run before anything is written.
        self.train_examples: list[SquadExample] = []
        if opts.do_train:
            self.train_examples, _ = read_squad_examples(opts.train_file, True, v2, self.result.skips)
        self.predict_examples: list[SquadExample] = []
        self.predict_data: list[dict[str, Any]] = []
        if opts.do_predict:
            self.predict_examples, _ = read_squad_examples(opts.predict_file, False, v2,
                                                           self.result.skips)
            self.predict_data = read_squad_file(opts.predict_file)["data"]
        self.has_gold = any(qa.get("answers") for article in self.predict_data
                            for paragraph in article["paragraphs"] for qa in paragraph["qas"])
        self.strategy = strategy or tf.distribute.get_strategy()
        self.train_records = self._train_records() if opts.do_train else None
        self.predict_records, self.predict_features = (
            self._predict_records() if opts.do_predict else (None, []))
        self.trainer = self._trainer()
        self.evaluator = CheckpointEvaluator(opts.output_dir, "f1", self._evaluate_current,
                                             self.trainer.restore_model)

    # ----- features -----
    def _settings(self, source: str) -> dict[str, Any]:
        opts = self.opts
        return {"source_file": os.path.basename(source),
                "spm_model_file": os.path.basename(opts.spm_model_file or opts.vocab_file or ""),
                "max_seq_length": opts.max_seq_length, "doc_stride": opts.doc_stride,
                "max_query_length": opts.max_query_length, "do_lower_case": opts.do_lower_case}

    def _train_records(self) -> str:
        opts = self.opts
        path = opts.train_feature_file or os.path.join(opts.output_dir, "train.tf_record")
        settings = self._settings(opts.train_file)
        if os.path.exists(path):
            feature_cache.check_train_features(path, settings)
            logging.info("Reusing training features %s", path)
            return path
        examples = shuffle_training_examples(self.train_examples)
        features = self.builder.build(examples, with_labels=True, skips=self.result.skips)
        if not features:
            raise SquadRunError(f"{opts.train_file}: no usable training question")
        feature_cache.write_train_features(path, features, settings)
        return path

    def _predict_records(self) -> tuple[str, list[SquadFeature]]:
        opts = self.opts
        record_path = opts.predict_feature_file or os.path.join(opts.output_dir, "eval.tf_record")
        left_path = opts.predict_feature_left_file or os.path.join(opts.output_dir,
                                                                   "eval_features.pkl")
        settings = self._settings(opts.predict_file)
        if os.path.exists(record_path) and os.path.exists(left_path):
            features = feature_cache.load_predict_features(left_path, settings)
            feature_cache.check_examples_match(
                left_path, features, [e.qas_id for e in self.predict_examples])
            logging.info("Reusing prediction features %s and %s", record_path, left_path)
            return record_path, features
        features = self.builder.build(self.predict_examples, with_labels=False,
                                      skips=self.result.skips)
        if not features:
            raise SquadRunError(f"{opts.predict_file}: no usable question to predict")
        feature_cache.write_predict_features(record_path, left_path, features, settings)
        return record_path, features

    # ----- model -----
    def _model(self) -> AlbertSpanLabeler:
        opts = self.opts
        encoder = HubEncoder(opts.albert_hub_module_handle) if opts.albert_hub_module_handle else None
        return AlbertSpanLabeler(self.config, opts.version_2_with_negative, opts.start_n_top,
                                 opts.end_n_top, opts.dropout_prob, encoder=encoder)

    @property
    def head_part(self) -> str:
        return "squad_v2_head" if self.opts.version_2_with_negative else "squad_v1_head"

    def _trainer(self) -> Trainer:
        opts = self.opts
        steps = 0
        optimizer_fn = None
        if opts.do_train:
            # As the original: steps from the number of examples, not of windows (§9.1).
            steps = int(len(self.train_examples) / opts.train_batch_size * opts.num_train_epochs)
            if steps < 1:
                raise SquadRunError(
                    f"{opts.train_file}: {len(self.train_examples)} examples give 0 training "
                    f"steps at train_batch_size {opts.train_batch_size} × num_train_epochs "
                    f"{opts.num_train_epochs}")
            warmup = int(steps * opts.warmup_proportion)

            def optimizer_fn():  # the original always uses AdamW here
                return create_optimizer("adamw", opts.learning_rate, steps, warmup)
        self.result.num_train_steps = steps
        loop_config = LoopConfig(
            output_dir=opts.output_dir, num_train_steps=steps,
            train_batch_size=opts.train_batch_size,
            iterations_per_loop=min(opts.iterations_per_loop, opts.save_checkpoints_steps),
            save_checkpoints_steps=opts.save_checkpoints_steps, log_steps=opts.log_steps,
            gradient_accumulation_steps=opts.gradient_accumulation_steps,
            jit_compile=opts.jit_compile, dtype=opts.dtype, clip_norm_mode=opts.clip_norm_mode,
            recompute_grad=opts.recompute_grad)
        init_fn = self._warm_start if opts.init_checkpoint else None
        return Trainer(self._model, squad_objective(opts.version_2_with_negative), loop_config,
                       optimizer_fn, self.strategy, init_fn=init_fn)

    def _warm_start(self, model: AlbertSpanLabeler) -> None:
        """--init_checkpoint: every encoder variable must be there; the head may not."""
        count = checkpoints.restore_model_weights(model, self.opts.init_checkpoint,
                                                  allow_missing=[self.head_part])
        self.result.restored_variables = count
        logging.info("Warm start: %d variables restored from %s", count, self.opts.init_checkpoint)

    # ----- prediction and evaluation -----
    def predictions(self) -> SquadPredictions:
        """n-best lists (and null scores) of the model's current weights."""
        opts = self.opts
        dataset = inputs.predict_dataset(self.predict_records, opts.predict_batch_size,
                                         opts.max_seq_length)
        raw = predict_raw_results(self.trainer.model, dataset, opts.version_2_with_negative)
        return postprocess(self.predict_examples, self.predict_features, raw,
                           opts.version_2_with_negative, opts.n_best_size, opts.max_answer_length)

    def _evaluate_current(self, step: int) -> dict[str, Any]:
        """Predicts, writes the three files and scores them (§9.7–9.8)."""
        opts = self.opts
        squad = self.predictions()
        out = opts.output_dir
        if not opts.version_2_with_negative:
            final = squad.best_texts()
            self.result.prediction_files = write_prediction_files(out, final, squad)
            results = evaluate_v1(self.predict_data, final) if self.has_gold else {}
        else:
            results = self._evaluate_v2(squad)
        logging.info("***** Eval results at step %d *****", step)
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if results and self.trainer.is_chief:
            writer = tf.summary.create_file_writer(os.path.join(out, "eval"))
            write_scalars(writer, step, {k: v for k, v in results.items()
                                         if isinstance(v, (int, float))})
        return results

    def _evaluate_v2(self, squad: SquadPredictions) -> dict[str, Any]:
        """Two passes as the original: search the threshold on un-thresholded predictions,
        then write and score the thresholded ones (§9.8)."""
        opts = self.opts
        threshold = opts.null_score_diff_threshold
        if threshold is None and self.has_gold:
            first = evaluate_v2(self.predict_data, squad.best_texts(), squad.null_odds,
                                NA_PROB_THRESH)
            threshold = first["best_f1_thresh"]
            logging.info("Before the threshold: exact %.4f, f1 %.4f; best_f1_thresh = %s",
                         first["exact"], first["f1"], threshold)
        if threshold is None:
            logging.warning("%s has no gold answers and --null_score_diff_threshold is unset: "
                            "every question gets its best non-null answer", opts.predict_file)
        final = squad.predictions(threshold, opts.null_threshold_rule)
        self.result.prediction_files = write_prediction_files(opts.output_dir, final, squad)
        if not self.has_gold:
            return {}
        results = evaluate_v2(self.predict_data, final, squad.null_odds, NA_PROB_THRESH)
        results["null_score_diff_threshold"] = threshold
        return results

    # ----- phases -----
    def train(self) -> None:
        opts = self.opts
        if not opts.init_checkpoint:
            logging.warning("No --init_checkpoint: the encoder starts from random initialisation")
        self.result.train_logs = self.trainer.train(inputs.train_dataset_fn(
            self.train_records, opts.train_batch_size, opts.max_seq_length,
            opts.version_2_with_negative, opts.seed))

    def predict(self) -> None:
        """Evaluates pending checkpoints (or the initial weights), leaving the best's files."""
        evaluator = self.evaluator
        pending = evaluator.pending()
        if not self.has_gold and pending:
            step, prefix = pending[-1]  # no gold answers: nothing to select by; the newest
            self.trainer.restore_model(prefix)
            self.result.eval_results.append(self._evaluate_current(step))
            return
        if pending:
            self.result.eval_results += evaluator.evaluate_pending()
        elif evaluator.best_step is not None:
            logging.info("Every checkpoint in %s was already evaluated; predicting with %s",
                         self.opts.output_dir, evaluator.best_path)
            self.trainer.restore_model(evaluator.best_path)
            self.result.eval_results.append(evaluator.evaluate(evaluator.best_step, None, False))
        else:
            if not self.opts.init_checkpoint:
                raise SquadRunError(f"nothing to predict with: no model.ckpt-<step> in "
                                    f"{self.opts.output_dir} and no --init_checkpoint")
            count = checkpoints.restore_model_weights(self.trainer.model, self.opts.init_checkpoint)
            logging.info("Predicting with %s (%d variables)", self.opts.init_checkpoint, count)
            self.result.eval_results.append(evaluator.evaluate(0, None, restore=False))
        last_step = self.result.eval_results[-1].get("global_step") if self.result.eval_results else None
        if evaluator.best_step is not None and last_step != evaluator.best_step:
            logging.info("Best f1 %s at step %d: re-writing its predictions",
                         evaluator.best_value, evaluator.best_step)
            self.trainer.restore_model(evaluator.best_path)
            self.result.eval_results.append(evaluator.evaluate(evaluator.best_step, None, False))
        self.result.best_step = evaluator.best_step
        self.result.best_results = evaluator.best_results
        if evaluator.best_step is not None:
            logging.info("best perf happened at step: %d (f1 = %s)", evaluator.best_step,
                         evaluator.best_value)

    def log_skips(self) -> None:
        for line in self.result.skips.summary_lines():
            logging.warning("%s", line)


def run(opts: SquadRunOptions, strategy: tf.distribute.Strategy | None = None) -> SquadRunResult:
    """Does what the options ask (train, then predict + evaluate); returns what happened.

    Questions skipped on the way (bad answers, empty contexts, failed alignment) are
    listed at the end of the log and returned in `result.skips`.
    """
    squad = SquadRun(opts, strategy)
    if opts.do_train:
        squad.train()
    if opts.do_predict:
        squad.predict()
    squad.log_skips()
    return squad.result
