"""The ONNX serving files of an encoder export: float32 and dynamic int8, run by ONNX Runtime.

Inside an encoder export directory (`export_tfhub --onnx`):

    onnx/albert_encoder.onnx        float32, our graph (onnx_graph.py), opset 17
    onnx/albert_encoder_int8.onnx   --onnx_quantization=dynamic_int8 (the default with --onnx):
                                    the same graph fused by ONNX Runtime's transformer optimizer
                                    (Attention, SkipLayerNormalization, FastGelu), then its
                                    dynamic int8 quantization (QAttention, MatMulInteger),
                                    7-bit weights; ONNX Runtime only (com.microsoft ops)
    onnx/albert_encoder_int8_vnni.onnx  the same with full-range int8 weights, for CPUs with
                                    VNNI or AMX-INT8 (`load_serving` picks it there)

and an "onnx" entry in serving.json (`load_serving(..., backend="onnxruntime")` reads it).
Both files have dynamic batch and sequence length (up to max_position_embeddings). The float32
file is checked against the Keras model (ONNX Runtime, within parity.py's bound) before it is
written; the int8 one for finite outputs, with its difference logged. Needs the optional
packages `onnx` and `onnxruntime` (`pip install 'albert-tf[onnx]'`), imported only here.

INT8_OPTIONS: int8 weights per tensor with `reduce_range` (7-bit weights): ONNX Runtime's u8×s8
kernels on x86 CPUs without VNNI (AVX2, AVX-512 without VNNI) add pairs of u8·s8 products in
saturating int16 (vpmaddubsw), and full-range weights overflow it: on the AVX2 EPYC the default
settings (what the HF → ORT peer uses) leave 25–60 % relative error in the tiny test model's
outputs, 7-bit weights 2–4 % (tests/export/test_onnx.py), at the same speed
(benchmarks/RESULTS.md, "Serving"). The embedding Gathers stay float32. The fusion before
quantizing made the int8 file faster at batch 1 and 8 on that CPU (QAttention: one int8 Q/K/V
matmul per layer); it stores each layer's fused Q/K/V weights apart (12 copies for ALBERT-base:
30 MB instead of 11).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any

import numpy as np
from absl import logging

from albert_tf.runtime import hardware

from albert_tf.export.layout import (ONNX_DIR, ONNX_FILE, ONNX_FUSED_TEMP_FILE,
                                     ONNX_INT8_FILE, ONNX_INT8_VNNI_FILE, TASK_ONNX_FILE)
from albert_tf.serving.manifest import Manifest, read_manifest, write_manifest
from albert_tf.export.onnx_graph import OUTPUT_NAMES, OnnxBuildError, build_onnx_encoder
from albert_tf.export.parity import FLOAT32_TOLERANCE, max_difference, model_tolerance
from albert_tf.export.serving_graph import check_inputs
from albert_tf.models.encoder import INPUT_NAMES, AlbertEncoder
from albert_tf.serving.runtimes import session

ONNX_QUANTIZATIONS = ("none", "dynamic_int8")
FLOAT_TOLERANCE = FLOAT32_TOLERANCE  # max |ONNX Runtime − Keras|, float32 (parity.py)
# weight_type "uint8" (U8U8 kernels, no int16 saturation) is accurate without VNNI too, but
# measured 0.88x ORT's own int8 at batch 8 on the AVX2 EPYC (benchmarks/RESULTS.md).
INT8_OPTIONS: dict[str, Any] = {"per_channel": False, "reduce_range": True, "fuse": True,
                                "weight_type": "int8"}
# The int8 files an export writes: serving.json key, file, options over INT8_OPTIONS. The
# 7-bit file is exact on every x86 CPU; the full-range one only with int8 dot-product units
# (VNNI, AMX-INT8), where it is the more accurate: `load_serving` picks by the CPU it runs on.
INT8_VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("int8_file", ONNX_INT8_FILE, {}),
    ("int8_vnni_file", ONNX_INT8_VNNI_FILE, {"reduce_range": False}),
)


class OnnxExportError(RuntimeError):
    """The ONNX file could not be written or failed its check (one line)."""


def _require_packages(what: str) -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise OnnxExportError(f"{what} needs the onnx and onnxruntime packages "
                              "(pip install 'albert-tf[onnx]')") from None


def quantize_int8(source: str, destination: str, num_heads: int, hidden_size: int,
                  **options: Any) -> None:
    """The int8 file of `source` (our float32 graph) at `destination`: fused by ONNX Runtime's
    transformer optimizer (unless fuse=False), then dynamically quantized (INT8_OPTIONS unless
    overridden)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    settings = {**INT8_OPTIONS, **options}
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(destination))) as tmp:
        if settings["fuse"]:
            fused = os.path.join(tmp, ONNX_FUSED_TEMP_FILE)
            optimizer.optimize_model(source, model_type="bert", num_heads=num_heads,
                                     hidden_size=hidden_size).save_model_to_file(fused)
            source = fused
        # The fused com.microsoft ops defeat ONNX shape inference: tensors default to float.
        weight_type = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}[settings["weight_type"]]
        quantize_dynamic(source, destination, weight_type=weight_type,
                         per_channel=settings["per_channel"],
                         reduce_range=settings["reduce_range"],
                         op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def _run(onnx_session: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return dict(zip(OUTPUT_NAMES, onnx_session.run(list(OUTPUT_NAMES), inputs)))


def _keras_outputs(encoder: AlbertEncoder, inputs: dict[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    out = encoder(inputs)
    return {name: np.asarray(out[name], dtype=np.float32) for name in OUTPUT_NAMES}


def write_onnx_artifacts(encoder: AlbertEncoder, export_dir: str,
                         quantization: str = "dynamic_int8") -> dict[str, Any]:
    """Writes onnx/ (float32, and int8 unless `quantization` is "none") into `export_dir` (an
    existing, staged directory), adds the "onnx" entry to its serving.json and returns it."""
    if quantization not in ONNX_QUANTIZATIONS:
        raise OnnxExportError(f"onnx quantization must be one of {', '.join(ONNX_QUANTIZATIONS)}"
                              f", got {quantization!r}")
    _require_packages("--onnx")
    import onnx

    try:
        model = build_onnx_encoder(encoder)
    except OnnxBuildError as error:
        raise OnnxExportError(f"--onnx: {error}") from None
    directory = os.path.join(export_dir, ONNX_DIR)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, ONNX_FILE)
    onnx.save(model, path)
    sample = check_inputs(encoder.config.vocab_size, 3, 16)
    want = _keras_outputs(encoder, sample)
    relative = encoder.compute_dtype != "float32"  # a bf16 model: our file computes float32
    difference = max_difference(_run(session(path), sample), want, relative, OUTPUT_NAMES)
    tolerance = model_tolerance(relative)
    if not difference <= tolerance:
        raise OnnxExportError(f"{path}: ONNX Runtime's outputs differ from the model by "
                              f"{difference:.3g} (expected ≤ {tolerance})")
    logging.info("Wrote %s (float32; max difference to Keras %.2g)",
                 os.path.join(ONNX_DIR, ONNX_FILE), difference)
    entry: dict[str, Any] = {"file": os.path.join(ONNX_DIR, ONNX_FILE)}
    if quantization == "dynamic_int8":
        for key, file_name, options in INT8_VARIANTS:
            entry[key] = _write_int8(path, os.path.join(directory, file_name), encoder, sample,
                                     want, **options)
    manifest = read_manifest(export_dir) or Manifest()
    manifest.onnx = entry
    if manifest.max_seq_length is None:
        manifest.max_seq_length = encoder.config.max_position_embeddings
    write_manifest(export_dir, manifest)  # inside the staging directory
    return entry


def _write_int8(source: str, destination: str, encoder: AlbertEncoder,
                sample: dict[str, np.ndarray], want: dict[str, np.ndarray], **options: Any) -> str:
    """Quantizes `source` into `destination` (staged, then renamed), checks its outputs are
    finite on `sample` and logs their difference to the Keras model; returns the relative path."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(destination)) as scratch:
        staged = os.path.join(scratch, os.path.basename(destination))  # ORT writes side files
        quantize_int8(source, staged, encoder.config.num_attention_heads,
                      encoder.config.hidden_size, **options)
        got = _run(session(staged), sample)
        if not all(np.all(np.isfinite(got[name])) for name in OUTPUT_NAMES):
            raise OnnxExportError(f"{destination}: the quantized model's outputs are not "
                                  "finite on a sample input")
        os.replace(staged, destination)
    relative_path = os.path.join(ONNX_DIR, os.path.basename(destination))
    full_range = not options.get("reduce_range", INT8_OPTIONS["reduce_range"])
    note = ("; full-range weights need VNNI/AMX, this CPU has none: not its accuracy"
            if full_range and not hardware.has_int8_dot() else "")
    logging.info("Wrote %s (dynamic int8, %s weights; max difference to Keras %.2g of the "
                 "outputs' magnitude%s)", relative_path, "8-bit" if full_range else "7-bit",
                 max_difference(got, want, relative=True, keys=OUTPUT_NAMES), note)
    return relative_path


__all__ = ["INPUT_NAMES", "ONNX_FILE", "ONNX_INT8_FILE", "ONNX_QUANTIZATIONS", "OnnxExportError",
           "quantize_int8", "session", "write_onnx_artifacts"]


def write_task_onnx(model: Any, export_dir: str, outputs_fn: Any) -> dict[str, Any]:
    """onnx/albert_model.onnx of a float32 task model: tf2onnx's conversion (opset 17) of its
    frozen serving graph (`serving_graph.frozen_serving_function`, what serving/ holds), with
    our input and output names, checked on ONNX Runtime against that graph within
    FLOAT_TOLERANCE (absolute) before it is kept; returns serving.json's "onnx" entry.

    Converted rather than built (onnx_graph.py builds the encoder only): the task heads come
    with the graph, and one model definition stays (benchmarks/RESULTS.md, "ONNX for every
    export"). Needs `pip install 'albert-tf[onnx]'` (onnx, onnxruntime, tf2onnx)."""
    import tensorflow as tf

    from albert_tf.export.serving_graph import float32_copy, frozen_serving_function

    _require_packages("--onnx")
    try:
        import tf2onnx
    except ImportError:
        raise OnnxExportError("--onnx needs the tf2onnx package "
                              "(pip install 'albert-tf[onnx]')") from None
    function = frozen_serving_function(float32_copy(model), outputs_fn=outputs_fn)
    concrete = function.get_concrete_function()
    structured = concrete.structured_outputs
    directory = os.path.join(export_dir, ONNX_DIR)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, TASK_ONNX_FILE)
    with tempfile.TemporaryDirectory(dir=directory) as scratch, _quiet_tf2onnx():
        staged = os.path.join(scratch, TASK_ONNX_FILE)
        converted, _ = tf2onnx.convert.from_function(function, input_signature=list(
            concrete.structured_input_signature[0]), opset=17)
        # The graph's outputs are the function's, flattened as tf.nest does (sorted keys).
        _name_ports(converted, tf.nest.flatten({name: name for name in structured}))
        converted.producer_name, converted.producer_version = "albert_tf", "tf2onnx"
        import onnx

        onnx.save(converted, staged)
        sample = check_inputs(model.config.vocab_size, 2, 16)
        want = {k: v.numpy() for k, v in function(**{k: tf.constant(v) for k, v in
                                                     sample.items()}).items()}
        onnx_session = session(staged)
        got = dict(zip(structured, onnx_session.run(list(structured), sample)))
        floats = [k for k in want if np.issubdtype(want[k].dtype, np.floating)]
        difference = max_difference(got, want, keys=floats)
        if not difference <= FLOAT_TOLERANCE:
            raise OnnxExportError(f"{path}: ONNX Runtime's outputs differ from the serving graph "
                                  f"by {difference:.3g} (expected ≤ {FLOAT_TOLERANCE})")
        os.replace(staged, path)
    logging.info("Wrote %s (float32, converted from the serving graph; max difference to it "
                 "%.2g)", os.path.join(ONNX_DIR, TASK_ONNX_FILE), difference)
    return {"file": os.path.join(ONNX_DIR, TASK_ONNX_FILE)}


def _name_ports(model: Any, outputs: list[str]) -> None:
    """Renames tf2onnx's graph inputs (`input_word_ids:0`, …) and outputs to our names."""
    graph = model.graph
    renames = {}
    for port in graph.input:
        name = next((n for n in INPUT_NAMES if port.name.split(":")[0] == n), None)
        if name and port.name != name:
            renames[port.name] = name
    for port, name in zip(graph.output, outputs):
        if port.name != name:
            renames[port.name] = name
    for port in list(graph.input) + list(graph.output):
        port.name = renames.get(port.name, port.name)
    for node in graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]


@contextlib.contextmanager
def _quiet_tf2onnx():
    """tf2onnx logs every conversion step at INFO through Python logging: keep it to errors."""
    import logging as python_logging

    logger = python_logging.getLogger("tf2onnx")
    previous = logger.level
    logger.setLevel(python_logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)
