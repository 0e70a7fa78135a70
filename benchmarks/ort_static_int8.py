"""ONNX Runtime static (calibrated) int8 of our ONNX encoder graph, QDQ format: a candidate of
benchmarks/int8_serving.py (issue 42), not an export artifact.

    qdq_int8(encoder, "/tmp/x/albert_encoder_qdq.onnx", calibration)   # our float32 graph
    run = ort_runner("/tmp/x/albert_encoder_qdq.onnx", threads=2)        # feed → pooled_output

The float32 file is `onnx_graph.build_onnx_encoder(encoder)` (what `export_tfhub --onnx` writes);
`onnxruntime.quantization.quantize_static` inserts QuantizeLinear/DequantizeLinear pairs around
its MatMuls with ranges calibrated (MinMax) on the caller's sequences (int8_serving.py: the same
ones as NNCF's), and ONNX Runtime's CPU session fuses them into int8 kernels at load.

QDQ_OPTIONS, chosen by measurement on the AVX2 EPYC (no VNNI), ALBERT-base shape, random
weights, 16 calibration sequences, 2 threads, one interleaved run (speed: x ORT float32 of the
same graph at batch 1 / 8, seq 128; error: mean max |pooled − Keras float32| on 4 sequences):
  * weights s8 per channel with `reduce_range` (7-bit), activations u8 asymmetric: 1.93x / 1.49x,
    error 0.095. ORT's u8×s8 kernels there add pairs of products in saturating int16
    (vpmaddubsw), so full-range weights lose accuracy: 0.27 (1.41x / 1.12x); s8 activations too
    (ORT shifts them to u8: on the tiny test model the same 30 % error as full-range u8s8).
    U8U8 weights (no saturation): error 0.065 but 1.55x / 1.02x.
  * MatMuls with constant weights only (attention's Q·Kᵀ and P·V stay float32; QDQ ignores
    ORT's `MatMulConstBOnly`, so they are excluded by name): all MatMuls gave 1.73x / 1.21x,
    error 0.096.
  * MatMul outputs quantized too (QLinearMatMul): float outputs (MatMulIntegerToFloat,
    `quantize_outputs=False`) gave 1.74x / 1.40x, error 0.094.
  * the plain graph, not ORT's transformer fusion first (`fuse="all"`: float Attention,
    SkipLayerNormalization, QDQ MatMuls elsewhere): 0.64x / 0.75x, error 0.065.
  * MinMax calibration. Percentile / Entropy fail on sequences of different lengths in
    ORT 1.32 (their histogram collector stacks the batches), and MinMax's error is already a
    third of the NNCF peer's.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

Feed = dict[str, np.ndarray]

QDQ_OPTIONS: dict[str, Any] = {"per_channel": True, "reduce_range": True,
                               "activation_type": "uint8", "weight_type": "int8",
                               "calibrate_method": "minmax", "const_weights_only": True,
                               "quantize_outputs": True, "fuse": "none",
                               "op_types": ("MatMul", "Gemm")}


def _build_onnx_encoder(encoder: Any) -> Any:
    # albert_tf's export modules are being regrouped (export/ → serving/): either place.
    try:
        from albert_tf.export.onnx_graph import build_onnx_encoder
    except ImportError:
        from albert_tf.serving.onnx_graph import build_onnx_encoder
    return build_onnx_encoder(encoder)


def _session(path: str, threads: int | None) -> Any:
    try:
        from albert_tf.serving.runtimes import session
    except ImportError:
        from albert_tf.export.onnx_artifacts import session
    return session(path, threads)


def quantize_qdq(source: str, destination: str, calibration: list[Feed],
                 **options: Any) -> None:
    """`quantize_static` of the float32 ONNX file `source` into `destination` (QDQ), its ranges
    from `calibration` (feeds of our graph's int32 inputs); QDQ_OPTIONS unless overridden."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)

    import onnx

    settings = {**QDQ_OPTIONS, **options}
    if settings["fuse"] != "none":  # ORT's transformer optimizer first (onnx_artifacts does too)
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        fusion = FusionOptions("bert")
        fusion.enable_attention = settings["fuse"] == "all"
        fused = destination + ".fused.onnx"
        optimize_model(source, model_type="bert", num_heads=0, hidden_size=0,
                       optimization_options=fusion).save_model_to_file(fused)
        source = fused
    exclude = []
    if settings["const_weights_only"]:  # attention's Q·Kᵀ and P·V stay float32
        model = onnx.load(source)
        weights = {tensor.name for tensor in model.graph.initializer}
        exclude = [node.name for node in model.graph.node
                   if node.op_type == "MatMul" and node.input[1] not in weights]
    types = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
    methods = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
               "entropy": CalibrationMethod.Entropy}

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._feeds = iter(calibration)

        def get_next(self) -> Feed | None:
            return next(self._feeds, None)

    quantize_static(source, destination, Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=settings["per_channel"], reduce_range=settings["reduce_range"],
                    activation_type=types[settings["activation_type"]],
                    weight_type=types[settings["weight_type"]],
                    op_types_to_quantize=list(settings["op_types"]),
                    calibrate_method=methods[settings["calibrate_method"]],
                    nodes_to_exclude=exclude,
                    extra_options={
                        # float outputs: DQ → MatMul fuses to MatMulIntegerToFloat, not QLinear
                        "OpTypesToExcludeOutputQuantization":
                            [] if settings["quantize_outputs"] else list(settings["op_types"]),
                        # fused com.microsoft ops defeat ONNX shape inference (as onnx_artifacts)
                        "DefaultTensorType": onnx.TensorProto.FLOAT})
    # (MinMax's augmented model outputs per-tensor ReduceMin/ReduceMax: little memory. Its
    # CalibMaxIntermediateOutputs drops the ranges collected so far in ORT 1.32: not used.)


def qdq_int8(encoder: Any, destination: str, calibration: list[Feed], **options: Any) -> str:
    """Our float32 graph of `encoder` (beside `destination`, `.f32.onnx`), then its QDQ int8
    file at `destination`; returns `destination`."""
    import onnx

    source = destination + ".f32.onnx"
    onnx.save(_build_onnx_encoder(encoder), source)
    quantize_qdq(source, destination, calibration, **options)
    return destination


def count_qdq(path: str) -> tuple[int, int]:
    """(QuantizeLinear, DequantizeLinear) node counts of the ONNX file at `path`."""
    import onnx

    ops = [node.op_type for node in onnx.load(path).graph.node]
    return ops.count("QuantizeLinear"), ops.count("DequantizeLinear")


def ort_runner(path: str, threads: int | None) -> Callable[[Feed], np.ndarray]:
    """Runs the file on an ONNX Runtime CPU session (`threads` intra-op threads, all graph
    optimizations: the QDQ fusions happen there); returns feed → pooled_output."""
    onnx_session = _session(path, threads)
    names = [i.name for i in onnx_session.get_inputs()]

    def run(feed: Feed) -> np.ndarray:
        return onnx_session.run(["pooled_output"],
                                {n: feed[n].astype(np.int32) for n in names})[0]
    return run


def qdq_from_hf(workdir: str, hf_dir: str, calibration: list[Feed], **options: Any) -> str:
    """The QDQ int8 file of the HF checkpoint `hf_dir` (our encoder warm-started from it), cached
    in `workdir` (the name carries non-default options)."""
    from albert_tf import checkpoints
    from albert_tf.model_source import task_config
    from albert_tf.models import AlbertPretrainer

    suffix = "".join(f"_{k}-{v}" for k, v in sorted(options.items()))
    path = os.path.join(workdir, f"{os.path.basename(hf_dir)}_ours_qdq{suffix}.onnx")
    if not os.path.isfile(path):
        pretrainer = AlbertPretrainer(task_config(None, None, hf_dir))
        checkpoints.warm_start(pretrainer, hf_dir, ("mlm_head", "sop_head"))
        qdq_int8(pretrainer.encoder, path + ".partial", calibration, **options)
        os.replace(path + ".partial", path)
    return path
