"""One model of a table: pretrain, evaluate on held-out pairs, fine-tune on the corpus task.

Pretraining is `run_pretraining.py`'s own code path (`albert_tf.pretraining.runner.run`
with the script's options), fine-tuning is `run_classifier.py`'s (`albert_tf.glue.runner.run`),
both in this process: starting TensorFlow once per model would dominate a small run. Each
stage writes its JSON when done and a finished stage is never redone, so an interrupted
paper run resumes where it stopped (pretraining itself resumes from its last checkpoint).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import time
from typing import Any, Callable, Mapping

from albert_tf.runtime import paths
from albert_tf.experiments.budget import Budget
from albert_tf.experiments.data import ExperimentData
from albert_tf.experiments.files import read_json, write_json_atomically
from albert_tf.experiments.specs import RunSpec
from albert_tf.training.loop import Callback

RESULT_FILE = "result.json"
CURVE_FILE = "curve.jsonl"
CURVE_TAGS = ("loss", "masked_lm_accuracy", "sentence_order_accuracy")


class CurveRecorder(Callback):
    """Appends each training log window (step, loss, accuracies) to a JSON-lines file."""

    def __init__(self, path: str):
        self.path = path

    def on_log(self, step: int, logs: Mapping[str, float]) -> None:
        point = {"step": step, **{k: float(logs[k]) for k in CURVE_TAGS if k in logs}}
        with paths.open_file(self.path, "a") as f:
            f.write(json.dumps(point) + "\n")


def read_curve(path: str) -> list[dict[str, float]]:
    """The recorded points by step (a window logged again after a resume counts once)."""
    points: dict[int, dict[str, float]] = {}
    if paths.exists(path):
        with paths.open_file(path) as f:
            for line in f:
                if line.strip():
                    point = json.loads(line)
                    points[int(point["step"])] = point
    return [points[step] for step in sorted(points)]


def fresh_session(seed: int) -> None:
    """Forgets the previous model's graph state and seeds everything as `--seed` would."""
    import keras

    from albert_tf.training.flags import setup_runtime

    keras.backend.clear_session()
    gc.collect()
    setup_runtime(seed, deterministic=False)


def encoder_parameters(config) -> int:
    """Parameters of the encoder (the paper's "Parameters" column: no pretraining heads)."""
    from albert_tf.models import AlbertEncoder

    return int(AlbertEncoder(config).count_params())


def _stage(run_dir: str, name: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`work()`'s result with its duration, cached in `run_dir/<name>.json`."""
    path = os.path.join(run_dir, f"{name}.json")
    cached = read_json(path)
    if cached is not None:
        return cached
    start, cpu_start = time.time(), time.process_time()
    load = os.getloadavg()[0]
    result = dict(work())
    result["seconds"] = round(time.time() - start, 1)
    result["cpu_seconds"] = round(time.process_time() - cpu_start, 1)
    result["load_average"] = round((load + os.getloadavg()[0]) / 2, 2)
    write_json_atomically(path, result)
    return result


def pretrain(spec: RunSpec, config_path: str, output_dir: str, budget: Budget,
             data: ExperimentData) -> dict[str, Any]:
    from albert_tf.pretraining.runner import PretrainingRunOptions
    from albert_tf.pretraining.runner import run as run_pretraining

    fresh_session(spec.seed)
    paths.makedirs(output_dir)
    run_pretraining(PretrainingRunOptions(
        albert_config_file=config_path, input_file=data.train_records[spec.task],
        output_dir=output_dir, max_seq_length=budget.max_seq_length,
        max_predictions_per_seq=budget.max_predictions_per_seq, do_train=True,
        train_batch_size=budget.pretrain_batch, learning_rate=budget.pretrain_learning_rate,
        num_train_steps=budget.pretrain_steps, num_warmup_steps=budget.pretrain_warmup,
        save_checkpoints_steps=budget.checkpoint_every, keep_checkpoint_max=2,
        iterations_per_loop=budget.log_steps, log_steps=budget.log_steps,
        sentence_prediction=spec.task, seed=spec.seed),
        callbacks=[CurveRecorder(os.path.join(output_dir, CURVE_FILE))])
    curve = read_curve(os.path.join(output_dir, CURVE_FILE))
    return {"final_train_window": curve[-1] if curve else {}}


def evaluate(spec: RunSpec, config, pretrain_dir: str, budget: Budget,
             data: ExperimentData) -> dict[str, Any]:
    from albert_tf.experiments.evaluation import evaluate_pretrained

    fresh_session(spec.seed)
    return evaluate_pretrained(
        config, pretrain_dir, data.train_records, data.heldout_records, spec.task,
        budget.max_seq_length, budget.max_predictions_per_seq, budget.eval_batch,
        budget.probe_train)


def finetune(spec: RunSpec, config_path: str, init_checkpoint: str | None, output_dir: str,
             budget: Budget, data: ExperimentData) -> dict[str, Any]:
    from albert_tf.glue.runner import GlueRunOptions, run as run_glue

    fresh_session(spec.seed)
    result = run_glue(GlueRunOptions(
        data_dir=data.glue_dir, task_name="mrpc", output_dir=output_dir,
        cached_dir=data.glue_cache, albert_config_file=config_path,
        spm_model_file=data.spm_model, init_checkpoint=init_checkpoint,
        max_seq_length=budget.max_seq_length, do_train=True, do_eval=True,
        train_batch_size=budget.finetune_batch, eval_batch_size=budget.eval_batch,
        learning_rate=budget.finetune_learning_rate, train_step=budget.finetune_steps,
        warmup_step=budget.finetune_warmup, save_checkpoints_steps=budget.finetune_steps,
        iterations_per_loop=budget.log_steps, log_steps=budget.log_steps, seed=spec.seed))
    final = result.eval_results[-1]
    return {"dev_accuracy": 100 * float(final["eval_accuracy"]),
            "dev_loss": float(final["eval_loss"])}


def execute(spec: RunSpec, budget: Budget, data: ExperimentData, runs_dir: str) -> dict[str, Any]:
    """Runs (or resumes, or just reads) one model; returns its result.json content."""
    import tensorflow as tf

    run_dir = os.path.join(runs_dir, spec.name)
    cached = read_json(os.path.join(run_dir, RESULT_FILE))
    if cached is not None:
        return cached
    paths.makedirs(run_dir)
    config = budget.model.config(embedding_size=spec.embedding_size,
                                 cross_layer_sharing=spec.sharing)
    config_path = os.path.join(run_dir, "albert_config.json")
    config.to_json_file(config_path)
    pretrain_dir = os.path.join(run_dir, "pretrain")
    result: dict[str, Any] = {"name": spec.name, "spec": dataclasses.asdict(spec),
                              "parameters": encoder_parameters(config)}
    init_checkpoint = None
    if spec.pretrain:
        result["pretrain"] = _stage(run_dir, "pretrain", lambda: pretrain(
            spec, config_path, pretrain_dir, budget, data))
        result["heldout"] = _stage(run_dir, "heldout", lambda: evaluate(
            spec, config, pretrain_dir, budget, data))
        init_checkpoint = tf.train.latest_checkpoint(pretrain_dir)
    result["finetune"] = _stage(run_dir, "finetune", lambda: finetune(
        spec, config_path, init_checkpoint, os.path.join(run_dir, "finetune"), budget, data))
    stages = [result[k] for k in ("pretrain", "heldout", "finetune") if k in result]
    result["seconds"] = round(sum(stage["seconds"] for stage in stages), 1)
    result["cpu_seconds"] = round(sum(stage["cpu_seconds"] for stage in stages), 1)
    write_json_atomically(os.path.join(run_dir, RESULT_FILE), result)
    return result
