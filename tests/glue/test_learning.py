"""Learning on a GLUE-format task built from the built-in corpus (albert_tf.corpus.glue_task):
fine-tuned from a tiny checkpoint pretrained by run_pretraining (every encoder variable
restored, count logged) it reaches ≥ 0.8 dev accuracy in 400 steps and beats random init at
equal steps; evaluated again under --dtype=bfloat16 its dev accuracy stays within 0.5 point,
and its dynamic_int8 TFLite export predicts the float class on ≥ 95% of the dev pairs.

Fine-tuning from an encoder export of the pretrained checkpoint to the checkpoint's accuracy
(within 2 points) was a test here until the 20-minute `make test-all`: a fourth 400-step run.
What it guarded — the export's weights are the start and they train — is covered by
tests/squad/test_run_squad.py::test_v1_fine_tunes_an_encoder_export (the script's export path:
every encoder variable from the export, no random start), tests/export/test_encoder_export.py
(the export equals the Keras model) and tests/export/test_keras_fine_tuning.py (the export's
encoder trains).

The tiny model uses initializer_range 0.1 instead of the released 0.02: at H=32 the 0.02 init
leaves the pooled [CLS] output almost input-independent (relative spread across inputs ~0.3%,
vs ~8% at 0.1), so sentence-level signals — SOP in pretraining, the pair label here — barely
move in a short run.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import keras
import pytest

from albert_tf.corpus.glue_task import build_corpus_task
from albert_tf.export.layout import task_saved_model
from albert_tf.glue.runner import GlueRunOptions, run
from tests.conftest import tiny_config
from tests.in_process_tools import run_tool
from tests.training import processes

# Slow tier (make test-all): real learning on the corpus task (≈3 min);
# tests/glue/test_run_classifier.py covers the script fast.
pytestmark = pytest.mark.slow

SEQ = 64
PRETRAIN_STEPS = 1500
FINETUNE_STEPS = 400
RESULTS: dict = {}  # the pretrained fine-tune's dev results, shared with the tests after it


@pytest.fixture(scope="module")
def learning_run(tmp_path_factory, text_assets):
    root = tmp_path_factory.mktemp("glue_learning")
    config = str(root / "albert_config.json")
    tiny_config(vocab_size=1000, max_position_embeddings=SEQ, initializer_range=0.1).to_json_file(config)
    data = str(root / "glue")
    build_corpus_task(data, corpus_path=text_assets.corpus, num_train=8000, num_dev=400, num_test=20)
    records = str(root / "pretrain.tfrecord")
    created = run_tool("albert_tf.create_pretraining_data",  # in process: no second TF start-up
                       f"--input_file={text_assets.corpus}", f"--output_file={records}",
                       f"--spm_model_file={text_assets.spm_model}", f"--max_seq_length={SEQ}",
                       "--max_predictions_per_seq=10", "--dupe_factor=2", "--num_workers=1")
    assert created.status == 0, created.stderr[-2000:]
    # Pretraining runs in the background while the random-init fine-tune trains here.
    pretrain_dir = root / "pretrain"
    log = open(root / "pretrain.log", "w")  # a file, not a pipe: the child never blocks on it
    pretraining = subprocess.Popen(
        [sys.executable, "run_pretraining.py", f"--albert_config_file={config}", f"--input_file={records}",
         f"--output_dir={pretrain_dir}", f"--max_seq_length={SEQ}", "--max_predictions_per_seq=10",
         "--train_batch_size=64", f"--num_train_steps={PRETRAIN_STEPS}", "--num_warmup_steps=150",
         "--learning_rate=2e-3", f"--save_checkpoints_steps={PRETRAIN_STEPS}", "--log_steps=500",
         "--seed=1"], cwd=processes.REPO, env=processes.python_env(), stdout=log,
        stderr=subprocess.STDOUT)
    yield root, config, data, text_assets.spm_model, pretraining
    if pretraining.poll() is None:
        pretraining.kill()
    pretraining.wait()
    log.close()


def pretrained_checkpoint(learning_run) -> str:
    """Waits for the background run_pretraining; the path of its final checkpoint."""
    root, pretraining = learning_run[0], learning_run[-1]
    returncode = pretraining.wait(timeout=900)
    assert returncode == 0, (root / "pretrain.log").read_text()[-3000:]
    checkpoint = str(root / "pretrain" / f"model.ckpt-{PRETRAIN_STEPS}")
    assert os.path.exists(checkpoint + ".index")
    return checkpoint


def finetune(learning_run, name, init_checkpoint=None):
    root, config, data, spm_model, _ = learning_run
    keras.utils.set_random_seed(1)
    result = run(GlueRunOptions(
        data_dir=data, task_name="mrpc", output_dir=str(root / name), cached_dir=str(root / "cache"),
        albert_config_file=config, spm_model_file=spm_model, init_checkpoint=init_checkpoint,
        max_seq_length=SEQ, do_train=True, do_eval=True, train_batch_size=32, eval_batch_size=100,
        learning_rate=3e-4, warmup_step=FINETUNE_STEPS // 10, train_step=FINETUNE_STEPS,
        save_checkpoints_steps=FINETUNE_STEPS, log_steps=FINETUNE_STEPS, seed=1))
    return result.restore_report, result.eval_results[-1]


def test_pretrained_init_learns_the_corpus_task_and_beats_random_init(learning_run, caplog):
    _, scratch = finetune(learning_run, "from_scratch")
    checkpoint = pretrained_checkpoint(learning_run)
    with caplog.at_level(logging.INFO, logger="absl"):
        report, pretrained = finetune(learning_run, "from_pretrained", init_checkpoint=checkpoint)
    assert (report.encoder_restored, report.encoder_total) == (25, 25)
    assert "restored 25/25 encoder variables and 0/2 classifier-head variables" in caplog.text
    print(f"\ncorpus task after {FINETUNE_STEPS} steps: pretrained init accuracy "
          f"{pretrained['eval_accuracy']:.4f} loss {pretrained['eval_loss']:.4f}; random init "
          f"accuracy {scratch['eval_accuracy']:.4f} loss {scratch['eval_loss']:.4f}")
    assert pretrained["eval_accuracy"] >= 0.8
    assert pretrained["eval_accuracy"] > scratch["eval_accuracy"]
    assert pretrained["eval_loss"] < scratch["eval_loss"]
    RESULTS["pretrained"] = pretrained


def test_dynamic_int8_tflite_keeps_the_dev_predictions(learning_run):
    """Issue 15 §3: the fine-tuned corpus-task classifier exported with
    --tflite_quantization=dynamic_int8 predicts the float SavedModel's class on ≥ 95% of the
    400 dev examples."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.export.tflite import TFLITE_FILE, signature_runner
    from albert_tf.glue.records import cache_path

    root, config, data, spm_model, _ = learning_run
    if "pretrained" not in RESULTS:
        RESULTS["pretrained"] = finetune(learning_run, "from_pretrained",
                                         init_checkpoint=pretrained_checkpoint(learning_run))[1]
    export = str(root / "int8_export")
    run(GlueRunOptions(data_dir=data, task_name="mrpc", output_dir=str(root / "from_pretrained"),
                       cached_dir=str(root / "cache"), albert_config_file=config,
                       spm_model_file=spm_model, max_seq_length=SEQ, export_dir=export,
                       tflite_quantization="dynamic_int8",
                       # NNCF's static int8 IR is not this test's (tests/export/test_int8_calibration.py)
                       int8_calibration_steps=0))
    serialized = [r.numpy() for r in tf.data.TFRecordDataset(
        cache_path(str(root / "cache"), "mrpc", "dev"))]
    assert len(serialized) == 400
    serve = tf.saved_model.load(task_saved_model(export)).signatures["serving_default"]
    expected = serve(examples=tf.constant(serialized))["predictions"].numpy()
    spec = {name: tf.io.FixedLenFeature([SEQ], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    spec["label_ids"] = tf.io.FixedLenFeature([1], tf.int64)
    with open(os.path.join(export, TFLITE_FILE), "rb") as f:
        runner = signature_runner(f.read())
    features = {k: v.numpy() for k, v in tf.io.parse_example(serialized, spec).items()}
    labels = list(features.pop("label_ids")[:, 0])
    got = [runner(**{k: v[row].astype(np.int32)[None] for k, v in features.items()})
           ["predictions"][0] for row in range(len(serialized))]
    agreement = float(np.mean(np.array(got) == expected))
    print(f"\ndynamic_int8 TFLite: same class as the float model on {agreement:.2%} of dev; "
          f"accuracy {np.mean(np.array(got) == labels):.4f} vs float "
          f"{np.mean(expected == np.array(labels)):.4f}")
    assert agreement >= 0.95


def test_bfloat16_eval_of_the_fine_tuned_classifier_keeps_its_dev_accuracy(learning_run):
    """Issue 15 §2: the fine-tuned classifier's best checkpoint, evaluated once more under
    --dtype=bfloat16 (no training), is within 0.5 point of its float32 dev accuracy."""
    root, config, data, spm_model, _ = learning_run
    if "pretrained" not in RESULTS:
        RESULTS["pretrained"] = finetune(learning_run, "from_pretrained",
                                         init_checkpoint=pretrained_checkpoint(learning_run))[1]
    result = run(GlueRunOptions(
        data_dir=data, task_name="mrpc", output_dir=str(root / "bf16_eval"),
        cached_dir=str(root / "cache"), albert_config_file=config, spm_model_file=spm_model,
        init_checkpoint=str(root / "from_pretrained" / "model.ckpt-best"), max_seq_length=SEQ,
        do_eval=True, eval_batch_size=100, train_step=0, dtype="bfloat16"))
    bf16, fp32 = result.eval_results[-1], RESULTS["pretrained"]
    print(f"\ndev accuracy of the fine-tuned classifier: float32 {fp32['eval_accuracy']:.4f}, "
          f"bfloat16 {bf16['eval_accuracy']:.4f} (loss {fp32['eval_loss']:.4f} → "
          f"{bf16['eval_loss']:.4f})")
    assert abs(bf16["eval_accuracy"] - fp32["eval_accuracy"]) <= 0.005
    assert bf16["eval_loss"] != fp32["eval_loss"]  # bfloat16 really ran
