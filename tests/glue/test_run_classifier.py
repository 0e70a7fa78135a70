"""End to end on a tiny model (H=32, 2 layers): train → eval → predict on MRPC-, STS-B-, MNLI-
and CoLA-format fixtures; the prediction files parse as the GLUE server expects (faithfulness §8.5–8.6)."""

from __future__ import annotations

import logging
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.checkpoints import save_original_checkpoint
from albert_tf.glue import GlueProcessor, get_task, read_submission
from albert_tf.corpus.glue_task import build_corpus_task
from albert_tf.export.layout import TASK_SAVED_MODEL_DIR
from albert_tf.glue.runner import GlueRunOptions, run
from albert_tf.models import AlbertPretrainer

E2E_TASKS = ("mrpc", "sts-b", "mnli", "cola")
METRIC_KEYS = {"mrpc": {"eval_accuracy", "eval_loss", "f1"},
               "sts-b": {"pearson", "spearman", "MSE", "eval_loss"},
               "mnli": {"eval_accuracy", "eval_loss"},
               "cola": {"eval_accuracy", "eval_loss", "matthew_corr"}}


def make_options(glue_dir, config_file, spm_model, output_dir, task, **overrides) -> GlueRunOptions:
    values = dict(data_dir=glue_dir, task_name=task, output_dir=str(output_dir),
                  albert_config_file=config_file, spm_model_file=spm_model, max_seq_length=32,
                  train_batch_size=4, eval_batch_size=3, predict_batch_size=2, learning_rate=1e-3,
                  train_step=4, save_checkpoints_steps=2, log_steps=2, seed=1,
                  int8_calibration_steps=0)  # NNCF's calibration: tests/export/test_int8_calibration.py
    values.update(overrides)
    return GlueRunOptions(**values)


class TaskRuns(dict):
    """task → (options, result): each task trained 4 steps (checkpoints at 2 and 4), evaluated
    and predicted when a test first asks for it (a slow-tier run wants MRPC's alone)."""

    def __init__(self, root, glue_dir, config_file, spm_model):
        super().__init__()
        self.root, self.glue_dir, self.config_file, self.spm_model = root, glue_dir, config_file, spm_model

    def __missing__(self, task):
        extra = {"export_dir": str(self.root / "mrpc_export"), "threshold_to_export": 0.5} \
            if task == "mrpc" else {}
        options = make_options(self.glue_dir, self.config_file, self.spm_model, self.root / task,
                               task, do_train=True, do_eval=True, do_predict=True, **extra)
        self[task] = (options, run(options))
        return self[task]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, glue_dir, tiny_config_file, text_assets):
    return TaskRuns(tmp_path_factory.mktemp("glue_e2e"), glue_dir, tiny_config_file,
                    text_assets.spm_model)


def parse_eval_results(path):
    blocks = []
    with open(path) as f:
        for block in f.read().split("-" * 40 + "\n"):
            if block.strip():
                blocks.append(dict(line.split(" = ", 1) for line in block.strip().split("\n")))
    return blocks


@pytest.mark.parametrize("task", E2E_TASKS)
def test_train_eval_predict(runs, glue_dir, task):
    options, result = runs[task]
    out = options.output_dir
    spec = get_task(task)
    # Each checkpoint evaluated once, written as the original's key = value blocks.
    assert [r["global_step"] for r in result.eval_results] == [2, 4]
    blocks = parse_eval_results(os.path.join(out, "eval_results.txt"))
    assert [b["global_step"] for b in blocks] == ["2", "4"]
    for block in blocks:
        assert set(block) == METRIC_KEYS[task] | {"loss", "global_step", "best"}
    assert blocks[0]["best"] == "None"
    best_value = result.eval_results[[2, 4].index(result.best_step)][spec.metric_key]
    assert blocks[1]["best"] == str(result.eval_results[0][spec.metric_key])
    with open(os.path.join(out, "best_trial.txt")) as f:
        assert f.read().strip() == f"4:{result.best_step}:{best_value}"
    # The best is kept as model.ckpt-best; evaluated checkpoints but the newest are pruned.
    names = set(os.listdir(out))
    assert "model.ckpt-best.index" in names
    assert sorted(n for n in names if n.startswith("model.ckpt-") and n.endswith(".index")) == [
        "model.ckpt-4.index", "model.ckpt-best.index"]
    assert tf.io.gfile.glob(os.path.join(out, "train", "events.*"))
    assert tf.io.gfile.glob(os.path.join(out, "eval", "events.*"))
    # Predictions: one line per test example, in the server's format.
    guids = [e.guid for e in GlueProcessor(spec).get_test_examples(glue_dir)]
    rows = read_submission(os.path.join(out, f"{spec.submission_name}.tsv"), spec)
    assert [index for index, _ in rows] == guids
    assert read_submission(os.path.join(out, "submit_results.tsv"), spec) == rows
    probabilities = np.loadtxt(os.path.join(out, "test_results.tsv"), delimiter="\t", ndmin=2)
    assert probabilities.shape == (len(guids), spec.num_labels)
    if not spec.is_regression:
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-9)
        assert [spec.labels[i] for i in probabilities.argmax(-1)] == [label for _, label in rows]


def test_export_serves_the_best_checkpoint(runs):
    options, result = runs["mrpc"]
    loaded = tf.saved_model.load(os.path.join(result.export_dir, TASK_SAVED_MODEL_DIR))
    serve = loaded.signatures["serving_default"]
    test_records = [os.path.join(options.output_dir, "mrpc_predict.tf_record")]
    serialized = tf.constant([r.numpy() for r in tf.data.TFRecordDataset(test_records)])
    outputs = serve(examples=serialized)
    expected = np.loadtxt(os.path.join(options.output_dir, "test_results.tsv"), delimiter="\t")
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5)
    np.testing.assert_array_equal(outputs["predictions"].numpy(), expected.argmax(-1))
    assert float(outputs["threshold"]) == 0.5
    # albert_model.tflite beside it: int32 [1, S] token tensors, the same probabilities.
    from albert_tf.export.tflite import TFLITE_FILE, signature_runner

    with open(os.path.join(result.export_dir, TFLITE_FILE), "rb") as f:
        runner = signature_runner(f.read())
    spec = {name: tf.io.FixedLenFeature([options.max_seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    for row, record in enumerate(serialized):
        features = tf.io.parse_single_example(record, spec)
        lite = runner(**{k: v.numpy().astype(np.int32)[None] for k, v in features.items()})
        np.testing.assert_allclose(lite["probabilities"][0], expected[row], atol=1e-5)
    # And the frozen serving graph (issue 21) through load_serving, on the whole batch.
    from albert_tf.serving import load_serving
    from albert_tf.finetuning.records import FEATURE_TO_INPUT

    parsed = tf.io.parse_example(serialized, spec)
    served = load_serving(result.export_dir)({FEATURE_TO_INPUT[k]: v.numpy()
                                              for k, v in parsed.items()})
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    np.testing.assert_array_equal(served["predictions"], expected.argmax(-1))


def test_evaluation_resumes_without_repeating(runs):
    options, _ = runs["cola"]
    path = os.path.join(options.output_dir, "eval_results.txt")
    with open(path) as f:
        before = f.read()
    again = run(GlueRunOptions(**{**vars(options), "do_train": False, "do_predict": False}))
    assert again.eval_results == [] and again.best_step == runs["cola"][1].best_step
    with open(path) as f:
        assert f.read() == before


def test_an_export_only_run_claims_no_evaluation(runs, tmp_path, caplog):
    """Issue 28: --export_dir alone (no --do_train/--do_eval) in an output_dir with
    best_trial.txt evaluates nothing, so it says nothing of resuming an evaluation; it
    exports the best checkpoint."""
    from absl import flags
    from absl import logging as absl_logging

    options, result = runs["mrpc"]
    export_only = GlueRunOptions(**{**vars(options), "do_train": False, "do_eval": False,
                                    "do_predict": False, "export_dir": str(tmp_path / "export")})
    # A tool's verbosity (INFO): TensorFlow's SavedModel writer resets absl's level to it.
    flags.FLAGS.mark_as_parsed()
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        with caplog.at_level(logging.INFO, logger="absl"):
            again = run(export_only)
    finally:
        absl_logging.set_verbosity(verbosity)
        flags.FLAGS.unparse_flags()
    assert again.eval_results == [] and os.path.isdir(again.export_dir)
    assert "Resuming evaluation" not in caplog.text
    assert "Evaluating" not in caplog.text
    # The files written inside the export's staging directory are named where they end up.
    assert f"Wrote {tmp_path / 'export'}/" in caplog.text and ".tmp" not in caplog.text


def test_ax_and_mnli_mismatched_from_the_mnli_model(runs, glue_dir, tiny_config_file, text_assets,
                                                    tmp_path):
    """AX is registered (Q19): predicted with the MNLI model, as is MNLI-mm's dev/test."""
    best = os.path.join(runs["mnli"][0].output_dir, "model.ckpt-best")
    ax = run(make_options(glue_dir, tiny_config_file, text_assets.spm_model, tmp_path / "ax", "ax",
                          do_predict=True, init_checkpoint=best))
    report = ax.restore_report
    assert (report.encoder_restored, report.encoder_total) == (25, 25)
    assert (report.head_restored, report.head_total) == (2, 2)
    rows = read_submission(str(tmp_path / "ax" / "AX.tsv"), get_task("ax"))
    assert [index for index, _ in rows] == ["0", "1", "2"]
    mm = run(make_options(glue_dir, tiny_config_file, text_assets.spm_model, tmp_path / "mm",
                          "MisMNLI", do_eval=True, do_predict=True, init_checkpoint=best,
                          train_step=0))  # 0: no training run to follow
    assert set(mm.eval_results[0]) == {"eval_accuracy", "eval_loss", "loss", "global_step"}
    assert len(read_submission(str(tmp_path / "mm" / "MNLI-mm.tsv"), get_task("mismnli"))) == 2
    with pytest.raises(ValueError, match="task ax has no train split"):
        run(make_options(glue_dir, tiny_config_file, text_assets.spm_model, tmp_path / "x", "ax",
                         do_train=True))


def _results_lines(path):
    with open(path) as f:
        return [line.split(" = ", 1) for line in f.read().splitlines() if " = " in line]


def test_length_bucketed_eval_and_predict_equal_padded(tmp_path, tiny_config_file, text_assets,
                                                       caplog):
    """--bucket_by_length: the eval_results.txt and prediction files of batches padded to
    max_seq_length, within float round-off, on a corpus task of mixed lengths."""
    data_dir = str(tmp_path / "data")
    build_corpus_task(data_dir, text_assets.corpus, num_train=2, num_dev=40, num_test=30,
                      min_words=2, max_words=24)
    keras.utils.set_random_seed(11)
    pretrainer = AlbertPretrainer(AlbertConfig.from_json_file(tiny_config_file))
    init = save_original_checkpoint(pretrainer, str(tmp_path / "init" / "model.ckpt"))
    outputs = {}
    for bucketed in (False, True):
        keras.utils.set_random_seed(3)  # the same classifier head in both runs
        outputs[bucketed] = out = tmp_path / f"bucketed_{bucketed}"
        with caplog.at_level(logging.INFO, logger="absl"):
            run(GlueRunOptions(data_dir=data_dir, task_name="mrpc", output_dir=str(out),
                               albert_config_file=tiny_config_file,
                               spm_model_file=text_assets.spm_model, max_seq_length=64,
                               eval_batch_size=8, predict_batch_size=4, do_eval=True,
                               do_predict=True, init_checkpoint=init, bucket_by_length=bucketed,
                               train_step=0))  # 0: evaluate the initial weights, follow nothing
    for phase in ("Evaluating mrpc dev", "Predicting mrpc test"):  # 3 or more lengths used
        assert re.search(phase + r": batches per padded length: \d+: \d+, \d+: \d+, \d+: ",
                         caplog.text), phase
    padded, bucketed = (_results_lines(outputs[b] / "eval_results.txt") for b in (False, True))
    assert [key for key, _ in bucketed] == [key for key, _ in padded]
    for (key, want), (_, got) in zip(padded, bucketed):
        if want == "None":  # "best" of the first evaluation
            assert got == want
        else:
            assert float(got) == pytest.approx(float(want), abs=1e-5), key
    probabilities = [np.loadtxt(outputs[b] / "test_results.tsv", delimiter="\t") for b in (False, True)]
    np.testing.assert_allclose(probabilities[1], probabilities[0], atol=1e-5)
    assert np.abs(probabilities[0][:, 1] - 0.5).min() > 1e-5  # no near-tie could flip a label
    for name in ("MRPC.tsv", "submit_results.tsv"):
        assert (outputs[True] / name).read_text() == (outputs[False] / name).read_text()
