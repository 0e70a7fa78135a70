"""Our ONNX serving files (onnx_graph.py, onnx_artifacts.py) and the "onnxruntime" engine of
`load_serving` (issue 21), against the Keras model whose weights they were built from.

Bounds: the float32 file equals the Keras model within 1e-5 (ONNX Runtime's kernels change only
the summation order), for every sharing layout the stack has; the dynamic-int8 file within
INT8_RELATIVE_BOUND of the outputs' largest magnitude — per-tensor 7-bit weights and 8-bit
activations (scales max|w|/63 and (max−min)/255) cost about one percent per matmul, and two
blocks of four matmuls land well inside 10 % on these weights (measured 2–4 % on the AVX2 EPYC;
full-range 8-bit weights measured 25–60 % there, see onnx_artifacts.INT8_OPTIONS); and, as for
the TFLite int8 file, it keeps a fine-tuned classifier's argmax on ≥ 99 % of a held-out set
(tests/export/finetuned.py), its pooled-output difference printed.
"""

import os
import sys

import numpy as np
import pytest

from albert_tf.serving import load_serving
from albert_tf.export.onnx_artifacts import (ONNX_FILE, ONNX_INT8_FILE, OnnxExportError,
                                             write_onnx_artifacts)
from albert_tf.export.onnx_graph import OnnxBuildError, build_onnx_encoder
from albert_tf.runtime import hardware
from albert_tf.serving import engines
from albert_tf.serving.loader import Artifact, ServingLoadError, auto_backend
from albert_tf.models.encoder import AlbertEncoder
from tests.conftest import random_inputs, tiny_config
from tests.export.finetuned import MIN_AGREEMENT, argmax_agreement, fine_tuned_classifier
from tests.export.tiny_exports import shared_export

pytest.importorskip("onnxruntime", reason="the ONNX files need albert-tf[onnx]")
onnx = pytest.importorskip("onnx", reason="the ONNX files need albert-tf[onnx]")

KEYS = ("input_word_ids", "input_mask", "input_type_ids")
TOLERANCE = 1e-5
INT8_RELATIVE_BOUND = 0.1
SHAPES = ((1, 5), (3, 16), (8, 33))  # (batch, seq): short, padded rows, odd length


def _inputs(config, batch, seq, seed=0):
    inputs = random_inputs(config, batch=batch, seq=seq, seed=seed)
    return {k: inputs[k] for k in KEYS}


def _assert_equal_to_keras(model, encoder, tolerance=TOLERANCE, relative=False):
    for (batch, seq), dtype in zip(SHAPES, (np.int32, np.int64, np.int32)):
        inputs = _inputs(encoder.config, batch, seq, seed=batch)
        want = encoder(inputs, training=False)
        got = model({k: v.astype(dtype) for k, v in inputs.items()})
        for name in ("sequence_output", "pooled_output"):
            assert got[name].dtype == np.float32
            assert got[name].shape == tuple(want[name].shape)
            scale = float(np.abs(want[name]).max()) if relative else 1.0
            difference = float(np.abs(got[name] - want[name].numpy()).max()) / scale
            assert difference <= tolerance, (name, batch, seq, difference)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny encoder exported by `export_tfhub --onnx` (its flags, in process; with the other
    artifact flags: the serving matrix's fp32_full export, shared) and the Keras model of those
    weights (random, initializer_range 0.1 so the layers do not idle)."""
    path, pretrainer = shared_export(tmp_path_factory, "fp32_full")
    return path, pretrainer.encoder


def test_float32_onnx_equals_the_keras_model(exported):
    path, encoder = exported
    model = load_serving(path, backend="onnxruntime", num_threads=1)
    assert model.backend == "onnxruntime" and model.max_seq_length == 64
    _assert_equal_to_keras(model, encoder)
    # The bare file too: its length limit comes from the file's metadata.
    bare = load_serving(os.path.join(path, "onnx", ONNX_FILE), backend="onnxruntime")
    assert bare.max_seq_length == 64
    _assert_equal_to_keras(bare, encoder)
    with pytest.raises(ValueError, match="sequence length 65 exceeds this artifact's maximum 64"):
        bare(_inputs(encoder.config, 1, 65))


def test_dynamic_int8_onnx_within_its_bound(exported):
    path, encoder = exported
    model = load_serving(path, backend="onnxruntime", precision="int8")
    _assert_equal_to_keras(model, encoder, INT8_RELATIVE_BOUND, relative=True)
    graph = onnx.load(os.path.join(path, "onnx", ONNX_INT8_FILE)).graph
    # Fused by ORT's transformer optimizer, then every weight matmul quantized.
    assert {"QAttention", "MatMulInteger", "DynamicQuantizeLinear"} <= {n.op_type
                                                                        for n in graph.node}
    assert not any(n.op_type in ("MatMul", "Attention") for n in graph.node
                   if any(i.endswith("/kernel") for i in n.input))


def test_dynamic_int8_onnx_keeps_a_fine_tuned_classifiers_argmax(tmp_path, tmp_path_factory,
                                                                  capsys):
    classifier, dev = fine_tuned_classifier(tmp_path_factory)
    write_onnx_artifacts(classifier.encoder, str(tmp_path))
    int8 = load_serving(str(tmp_path), backend="onnxruntime", precision="int8")
    agreement, difference, scale = argmax_agreement(classifier, dev, int8(dev)["pooled_output"])
    with capsys.disabled():
        print(f"\nint8 encoder ONNX: argmax agreement {agreement:.4f} on {len(dev['input_mask'])}"
              f" dev rows, max |pooled int8 − fp32| = {difference:.3g} (pooled max |x| "
              f"{scale:.3g})")
    assert agreement >= MIN_AGREEMENT
    assert 0 < difference < 0.1 * scale  # quantized, not broken


def test_auto_picks_onnxruntime_for_onnx_files_and_int8_and_says_so(exported, capfd,
                                                                    monkeypatch):
    path, _ = exported
    # An AVX2 CPU without VNNI (mocked): its profile and its int8 file both follow the flags.
    avx2 = hardware.cpu_flags("flags : fpu sse2 avx avx2 fma")
    monkeypatch.setattr(hardware, "cpu_flags", lambda *a, **k: avx2)
    capfd.readouterr()
    model = load_serving(path, precision="int8", batch_size=8)
    assert model.backend == "onnxruntime"
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and ONNX_INT8_FILE in lines[0] and "auto" in lines[0], lines
    assert load_serving(os.path.join(path, "onnx", ONNX_FILE)).backend == "onnxruntime"
    # A float32 export with its ONNX file: AVX2's fp32 cells put ONNX Runtime before TensorFlow.
    assert load_serving(path, batch_size=1).backend == "onnxruntime"
    assert load_serving(path, batch_size=8).backend == "onnxruntime"
    # Without onnxruntime, OpenVINO reads the ONNX file; with neither, one clear line.
    onnx_file = Artifact(os.path.join(path, "onnx", ONNX_FILE))
    monkeypatch.setattr(engines, "installed", lambda name: name == "openvino")
    assert auto_backend(onnx_file)[0] == "openvino"
    monkeypatch.setattr(engines, "installed", lambda name: False)
    with pytest.raises(ServingLoadError, match="needs the onnxruntime package"):
        auto_backend(onnx_file)
    with pytest.raises(ServingLoadError, match="no engine can run it at int8 here; .*needs the "
                                               "onnxruntime package"):
        auto_backend(Artifact(path), precision="int8")
    with pytest.raises(ServingLoadError, match="'tensorflow' runs fp32, bf16, not 'int8'; int8 "
                                               "runs on tflite, openvino, onnxruntime"):
        load_serving(path, backend="tensorflow", precision="int8")


@pytest.mark.parametrize("overrides", [
    dict(num_hidden_layers=4, num_hidden_groups=2),
    dict(num_hidden_layers=3, inner_group_num=2, hidden_act="gelu_exact"),
    dict(cross_layer_sharing="attention", hidden_act="relu"),
    dict(cross_layer_sharing="ffn", embedding_size=32, hidden_size=32),
    dict(cross_layer_sharing="none"),
], ids=["groups", "inner_groups_gelu_exact", "share_attention", "share_ffn_no_projection",
        "no_sharing"])
def test_every_sharing_layout_equals_keras_with_one_initializer_per_shared_weight(
        tmp_path, overrides):
    encoder = AlbertEncoder(tiny_config(initializer_range=0.1, **overrides))
    entry = write_onnx_artifacts(encoder, str(tmp_path), quantization="none")
    assert entry == {"file": os.path.join("onnx", ONNX_FILE)}
    _assert_equal_to_keras(load_serving(str(tmp_path / "onnx" / ONNX_FILE)), encoder)
    graph = onnx.load(str(tmp_path / "onnx" / ONNX_FILE)).graph
    kernels = [i.name for i in graph.initializer if i.name.endswith("query/kernel")]
    stack = encoder.transformer
    assert len(kernels) == len(stack.attention_layers)  # one initializer per distinct sublayer
    readers = [n for n in graph.node if n.input and n.input[-1] in kernels]
    assert len(readers) == len(stack.schedule)  # read once per block application
    projection = [i for i in graph.initializer if i.name.startswith("embedding_projection")]
    assert bool(projection) == (encoder.embedding_projection is not None)


def test_what_the_builder_cannot_write_fails_with_one_clear_line(tmp_path, monkeypatch):
    encoder = AlbertEncoder(tiny_config())
    monkeypatch.setattr(encoder.config, "hidden_act", "swish")
    with pytest.raises(OnnxBuildError, match="hidden_act 'swish': the ONNX builder writes only"):
        build_onnx_encoder(encoder)
    with pytest.raises(OnnxExportError, match="--onnx: hidden_act 'swish'"):
        write_onnx_artifacts(encoder, str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if albert-tf[onnx] were absent
    with pytest.raises(OnnxExportError, match=r"needs the onnx and onnxruntime packages "
                                              r"\(pip install 'albert-tf\[onnx\]'\)"):
        write_onnx_artifacts(AlbertEncoder(tiny_config()), str(tmp_path / "other"))
    with pytest.raises(OnnxExportError, match="quantization must be one of none, dynamic_int8"):
        write_onnx_artifacts(encoder, str(tmp_path), quantization="int4")


def test_export_tfhub_onnx_shows_only_its_own_lines_in_absl_format(tmp_path):
    """Issue 28: `export_tfhub --onnx` (with --openvino_ir where OpenVINO is installed, as the
    README's command: its import took absl's handler off the root logger) let ONNX Runtime's
    optimizer and quantizer lines through — one naming a --model_type flag we do not have,
    one a temporary path — and switched the rest of the log to `INFO:absl:…`. At the default
    verbosity every line is ours, in absl's format."""
    import glob
    import importlib.util
    import re
    import subprocess

    from tests.training import processes

    config = str(tmp_path / "albert_config.json")
    tiny_config().to_json_file(config)
    flags = [f"--albert_config_file={config}", f"--export_path={tmp_path / 'export'}", "--onnx"]
    if importlib.util.find_spec("openvino") is not None:
        flags.append("--openvino_ir")
    env = processes.python_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")  # as a user runs it
    result = subprocess.run([sys.executable, "-m", "albert_tf.export_tfhub", *flags],
                            cwd=processes.REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    ours = {os.path.basename(path) for path in glob.glob(
        os.path.join(processes.REPO, "albert_tf", "**", "*.py"), recursive=True)}
    lines = result.stderr.splitlines()
    assert any("onnx/albert_encoder_int8.onnx" in line for line in lines), result.stderr
    for line in lines:
        match = re.match(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ (\S+):\d+\] ", line)
        assert match and match.group(1) in ours, line
        assert ".tmp" not in line and "model_type" not in line, line
