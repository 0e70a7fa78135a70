"""Calibrated (static) int8 exports (issue 42): `--int8_calibration_file` reads text lines or
TFRecords, NNCF quantizes the OpenVINO IR, the accuracy gate keeps or drops it, load_serving
picks it at precision="int8", and bad calibration files end in one line, exit 1, nothing
written. The references are TensorFlow's float32 outputs of the same weights and the
fine-tuned classifier's own labels."""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.runtime import hardware
from albert_tf.export import int8_calibration
from albert_tf.serving.artifact import Artifact
from albert_tf.serving.auto_rule import AUTO_RULE
from albert_tf.export.calibration_data import (CalibrationError, read_calibration,
                                               split_held_out, task_calibration)
from albert_tf.serving.loader import auto_backend, load_serving
from albert_tf.export.serving_artifacts import write_serving_artifacts
from tests import cpuinfo_texts
from tests.export.finetuned import SEQ, bag_of_words_task, fine_tuned_classifier
from tests.export.tiny_exports import export_tiny_encoder
from tests.in_process_tools import run_tool
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

VOCAB = 1000  # export_tiny_encoder's


def _pairs_file(path, corpus: str, count: int = 96, start: int = 0) -> str:
    """`count` lines of consecutive corpus sentences from `start`, tab-separated (pairs)."""
    with open(corpus, encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(start, start + count):
            f.write(f"{sentences[i]}\t{sentences[i + 1]}\n")
    return str(path)


def _records_file(path, ids: np.ndarray, features=("input_ids", "input_mask",
                                                   "segment_ids")) -> str:
    """A TFRecord file of tf.train.Examples, each row of `ids` one record (mask 1, types 0)."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for row in ids:
            values = {"input_ids": row, "input_mask": np.ones_like(row),
                      "segment_ids": np.zeros_like(row)}
            feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(
                value=values[name].tolist())) for name in features}
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=feature)).SerializeToString())
    return str(path)


@pytest.fixture(scope="module")
def int8_export(tmp_path_factory, text_assets):  # noqa: F811
    root = tmp_path_factory.mktemp("int8")
    # The same random weights every run (seed 0's miss the gate: pooled error 0.30 > 0.25)
    keras.utils.set_random_seed(1)
    calibration = _pairs_file(root / "calibration.txt", text_assets.corpus)
    path, encoder = export_tiny_encoder(root, spm_model_file=text_assets.spm_model,
                                        int8_calibration_file=calibration)
    return path, encoder, calibration, text_assets.spm_model


def test_text_calibration_writes_an_int8_ir_that_load_serving_picks(int8_export, tmp_path,
                                                                    text_assets):  # noqa: F811
    path, encoder, _, spm_model = int8_export
    with open(os.path.join(path, "serving.json"), encoding="utf-8") as f:
        entry = json.load(f)["openvino_int8"]
    assert entry["file"] == "openvino/albert_encoder_int8.xml"
    assert entry["calibration_sequences"] == 84  # 96 lines, every eighth held out
    assert int8_calibration.ir_is_int8(os.path.join(path, entry["file"]))
    model = load_serving(path, backend="openvino", precision="int8")
    assert model.file.endswith("albert_encoder_int8.xml")
    # Text like the calibration's, not in it: the pooled output near TensorFlow's float32.
    unseen = read_calibration(_pairs_file(tmp_path / "unseen.txt", text_assets.corpus, 12, 200),
                              VOCAB, 2, spm_model, True, 64)
    relative = []
    for inputs in unseen:
        got = model(inputs)["pooled_output"]
        want = encoder(inputs, training=False)["pooled_output"].numpy()
        relative.append(np.linalg.norm(got - want) / np.linalg.norm(want))
    assert 0 < np.mean(relative) <= int8_calibration.INT8_RELATIVE_BOUND  # int8, and close


def test_a_bare_ir_file_tells_its_precision_by_its_own_ops(int8_export):
    path = int8_export[0]
    xml = os.path.join(path, "openvino", "albert_encoder_int8.xml")
    model = load_serving(xml)  # no precision given: the file's own
    assert (model.backend, model.precision) == ("openvino", "int8")
    assert Artifact(xml).openvino is None  # not mistaken for a float IR


def test_text_lines_are_tokenized_as_pairs(int8_export, tmp_path):
    _, _, _, spm_model = int8_export
    from albert_tf.tokenization import FullTokenizer

    file = tmp_path / "one.txt"
    file.write_text("hello world\tsecond text here\n", encoding="utf-8")
    [sample] = read_calibration(str(file), VOCAB, 2, spm_model, True, 64)
    tokenizer = FullTokenizer(spm_model_file=spm_model)
    first, second = tokenizer.tokenize("hello world"), tokenizer.tokenize("second text here")
    want = tokenizer.convert_tokens_to_ids(["[CLS]"] + first + ["[SEP]"] + second + ["[SEP]"])
    np.testing.assert_array_equal(sample["input_word_ids"][0], want)
    np.testing.assert_array_equal(sample["input_type_ids"][0],
                                  [0] * (len(first) + 2) + [1] * (len(second) + 1))


def test_records_are_read_as_written(tmp_path):
    ids = np.random.default_rng(0).integers(0, VOCAB, (10, 12))
    samples = read_calibration(_records_file(tmp_path / "train.tf_record", ids), VOCAB)
    np.testing.assert_array_equal(np.concatenate([s["input_word_ids"] for s in samples]), ids)
    calibration, held_out = split_held_out(samples)
    assert (len(calibration), len(held_out)) == (9, 1)


def test_task_exports_calibrate_on_their_training_records_by_default(tmp_path):
    import types

    ids = np.random.default_rng(1).integers(0, VOCAB, (12, 8))
    train = _records_file(tmp_path / "train.tf_record", ids)
    other = _records_file(tmp_path / "given.tf_record", ids[:4])

    def options(file=None, steps=300):
        return types.SimpleNamespace(int8_calibration_file=file, int8_calibration_steps=steps,
                                     spm_model_file=None, do_lower_case=True)

    assert len(task_calibration(options(), train, VOCAB, 2, 8)) == 12  # its own records
    assert len(task_calibration(options(steps=5), train, VOCAB, 2, 8)) == 5  # a few of them
    assert len(task_calibration(options(other), train, VOCAB, 2, 8)) == 4  # the flag wins
    assert task_calibration(options(steps=0), train, VOCAB, 2, 8) is None  # turned off
    assert task_calibration(options(), str(tmp_path / "none"), VOCAB, 2, 8) is None  # no records


def test_the_accuracy_gate_keeps_fp32_served(int8_export, tmp_path, monkeypatch, caplog):
    _, encoder, calibration, spm_model = int8_export
    samples = read_calibration(calibration, VOCAB, 2, spm_model, True, 64, limit=24)
    monkeypatch.setattr(int8_calibration, "INT8_RELATIVE_BOUND", 1e-6)  # no int8 graph meets it
    export_dir = tmp_path / "gated"
    export_dir.mkdir()
    manifest = write_serving_artifacts(encoder, str(export_dir), int8_calibration=samples)
    assert manifest.openvino_int8 is None
    assert not os.path.exists(export_dir / "openvino" / "albert_encoder_int8.xml")
    assert any("not written" in r.getMessage() and "served" in r.getMessage()
               for r in caplog.records)
    assert load_serving(str(export_dir)).precision == "fp32"


@pytest.mark.parametrize("kind", ["missing", "empty", "binary", "other_vocabulary",
                                  "records_without_features"])
def test_bad_calibration_files_end_in_one_line(kind, tmp_path):
    file = tmp_path / "calibration"
    if kind == "empty":
        file.write_bytes(b"")
    elif kind == "binary":
        file.write_bytes(bytes(range(256)) * 4)
    elif kind == "other_vocabulary":  # ids of a 30000-piece vocabulary
        _records_file(file, np.full((4, 8), 29000))
    elif kind == "records_without_features":
        _records_file(file, np.ones((4, 8), np.int64), features=("input_ids",))
    export = tmp_path / "encoder"
    config = tmp_path / "albert_config.json"
    from tests.conftest import tiny_config

    tiny_config(vocab_size=VOCAB).to_json_file(str(config))
    run = run_tool("albert_tf.export_tfhub", f"--albert_config_file={config}",
                   f"--export_path={export}", f"--int8_calibration_file={file}")
    assert run.status == 1
    lines = [line for line in run.stderr.splitlines() if "int8_calibration_file" in line]
    assert len(lines) == 1 and str(file) in lines[0], run.stderr
    assert not any(name.startswith("encoder") for name in os.listdir(tmp_path))  # no partial
    with pytest.raises(CalibrationError):
        read_calibration(str(file), VOCAB)


def test_real_task_accuracy_and_argmax_kept(tmp_path, tmp_path_factory):
    """A fine-tuned classifier exported fp32 and calibrated int8: dev accuracy within 1 point,
    argmax agreement ≥ 99 % (the int8 pooled output through the classifier's own head)."""
    classifier, dev = fine_tuned_classifier(tmp_path_factory)
    _, labels = bag_of_words_task(400, SEQ, classifier.config.vocab_size, seed=1)
    train, _ = bag_of_words_task(160, SEQ, classifier.config.vocab_size, seed=2)
    samples = [{k: v[i:i + 1] for k, v in train.items()} for i in range(160)]
    export_dir = tmp_path / "task"
    export_dir.mkdir()
    manifest = write_serving_artifacts(classifier.encoder, str(export_dir),
                                       tflite_quantization="dynamic_int8", tflite_seq_length=SEQ,
                                       int8_calibration=samples)
    assert manifest.openvino_int8 is not None
    # A bare TFLite file: its own int8 tensors tell its precision (no serving.json read).
    lite = load_serving(str(export_dir / "albert_encoder.tflite"), precision="int8")
    assert (lite.backend, lite.precision, lite.artifact.has_manifest) == ("tflite", "int8", False)
    int8 = load_serving(str(export_dir), backend="openvino", precision="int8")(dev)
    fp32 = load_serving(str(export_dir), backend="tensorflow", precision="fp32")(dev)
    head = classifier.classifier_head
    predicted = {name: head(tf.constant(out["pooled_output"]), training=False).numpy().argmax(-1)
                 for name, out in (("int8", int8), ("fp32", fp32))}
    accuracy = {name: float(np.mean(p == labels)) for name, p in predicted.items()}
    assert accuracy["fp32"] > 0.85  # the task was learned
    assert abs(accuracy["int8"] - accuracy["fp32"]) <= 0.01
    assert float(np.mean(predicted["int8"] == predicted["fp32"])) >= 0.99


@pytest.mark.parametrize("cpuinfo,profile", [
    (cpuinfo_texts.XEON_SPR, hardware.PROFILE_AMX),
    (cpuinfo_texts.AVX512_VNNI, hardware.PROFILE_AVX512),
    (cpuinfo_texts.AMD_AVX2, hardware.PROFILE_AVX2),
    (cpuinfo_texts.GRAVITON3, hardware.PROFILE_ARM)])
@pytest.mark.parametrize("batch", [1, 8])
def test_auto_int8_choice_per_cpu_profile(int8_export, cpuinfo, profile, batch):
    """auto at int8 follows AUTO_RULE's cell for the mocked CPU: the first engine whose int8
    artifact the export holds (here the static int8 IR and the dynamic int8 TFLite file)."""
    path = int8_export[0]
    flags = hardware.cpu_flags(cpuinfo)
    artifact = Artifact(path, cpu_flags=flags)
    # As if the export also held a dynamic int8 TFLite file covering every length (auto only
    # reads the manifest's facts; nothing is loaded).
    artifact.tflite, artifact.tflite_quantization = "albert_encoder.tflite", "dynamic_int8"
    artifact.tflite_seq_length = artifact.max_seq_length
    profile_found = hardware.cpu_profile(flags, "aarch64" if profile == hardware.PROFILE_ARM
                                         else "x86_64")
    assert profile_found == profile
    chosen, precision = auto_backend(artifact, "int8", batch, profile)
    held = {"openvino", "tflite"}
    want = next(name for name in AUTO_RULE[profile]["int8"][batch] if name in held)
    assert (chosen, precision) == (want, "int8")


def test_auto_takes_a_fixed_length_file_only_where_seq_length_fits(int8_export):
    """A TFLite file shorter than the export's maximum: auto passes over it unless the caller
    says its inputs fit (`seq_length`), as an encoder export's 128-token file against its
    512-token maximum (issue 42: auto never took our fastest int8 file)."""
    artifact = Artifact(int8_export[0], cpu_flags=hardware.cpu_flags(cpuinfo_texts.AMD_AVX2))
    artifact.tflite, artifact.tflite_quantization = "albert_encoder.tflite", "dynamic_int8"
    artifact.tflite_seq_length = artifact.max_seq_length // 2
    cell = AUTO_RULE[hardware.PROFILE_AVX2]["int8"][1]  # (this export holds no ONNX int8 file)
    assert cell.index("tflite") < cell.index("openvino")
    assert auto_backend(artifact, "int8", 1, hardware.PROFILE_AVX2)[0] == "openvino"
    fits = artifact.tflite_seq_length
    assert auto_backend(artifact, "int8", 1, hardware.PROFILE_AVX2, seq_length=fits)[0] == "tflite"
    assert auto_backend(artifact, "int8", 1, hardware.PROFILE_AVX2,
                        seq_length=fits + 1)[0] == "openvino"
