"""AUTO_RULE: the engine `load_serving(backend="auto")` picks, by CPU profile, precision and batch.

Each cell lists engines fastest first, as measured by benchmarks/serving_speed.py (ALBERT-base,
seq 128, 2 threads; benchmarks/RESULTS.md, "Serving engine per CPU profile" has the figures
and the CPUs). The loader takes the first engine whose package is installed and whose artifact
the export holds at that precision and can run every input the export accepts (a TFLite file
has a fixed length: it is picked only where that length covers the export's maximum). So
`auto` never picks a combination that can fail; where no engine qualifies, the refusal names
the export flag that adds one.

Profiles (albert_tf.runtime.hardware.cpu_profile):
* x86-avx2 — measured on an AMD EPYC (Zen 3, AVX2, no VNNI, no bf16), two runs: fp32 at
  batch 1 TFLite's XNNPACK, then our ONNX file on ONNX Runtime, then OpenVINO, then TensorFlow;
  at batch 8 our ONNX file on ONNX Runtime (1.5x TensorFlow), then TensorFlow; bf16 is emulated
  there (TensorFlow keeps the bf16 numbers; OpenVINO would run f32); int8: our 7-bit ONNX file
  on ONNX Runtime, then TFLite, at batch 1 and 8 (issue 42's interleaved int8 runs: 1.26x and
  1.48x TFLite at batch 1, 1.41–1.44x at batch 8; pooled error 0.12 against TFLite's 0.045,
  both under the NNCF-on-HF peer's 0.265).
* x86-avx512-bf16 — measured on an Intel Xeon with AVX-512, AMX-BF16/INT8 and VNNI (issue 27's
  figures): OpenVINO first for fp32 (15.2 seq/s vs ONNX Runtime 13.9, TensorFlow 13.3 at batch
  8) and bf16 (58.1 vs TensorFlow 26.7); int8: TFLite (56.2) before ONNX Runtime (43.6). Its
  int8 cells measured again on an AMD EPYC Zen 4 (AVX-512 VNNI and BF16, no AMX): the NNCF IR
  0.92–0.96x / 1.06–1.07x the NNCF-on-HF peer at batch 1 / 8, TFLite 0.99–1.01x / 1.02–1.05x,
  ONNX Runtime's files 0.75–0.80x — the same order within this machine's noise.
* x86-avx512 (no bf16 units) — not measured on such a CPU: fp32 and int8 as the AVX-512 Xeon
  (the same AVX-512/VNNI kernel families in each engine), bf16 as AVX2 (emulated).
* arm64 — not measured (no Arm machine here): TensorFlow (oneDNN + ACL) for fp32/bf16, TFLite's
  XNNPACK for int8, its home ground.

int8's static IR ("openvino" at int8: NNCF's, `--int8_calibration_file`; issue 42, RESULTS.md
"Calibrated int8"): last on AVX2 without VNNI, where it measured at or below OpenVINO f32 (0.86x /
1.16x the NNCF-on-HF peer at batch 1 / 8, the TFLite int8 file 1.92x / 1.45x); on AMX-INT8 first
at batch 1 and after the TFLite file at batch 8, as issue 42's Xeon run measured NNCF's int8 IR
against our TFLite int8 file (52.4 vs 42.3 seq/s at batch 1, 35.8 vs 42.6 at batch 8); first on
AVX-512 VNNI and AVX-VNNI (INT8_AVX_VNNI) CPUs, whose int8 dot products it is made for (on the
Zen 4 EPYC: 1.7x OpenVINO bf16, 3.3x f32; AVX-VNNI without AVX-512 not measured); last on Arm
(OpenVINO's Arm int8 path unmeasured, XNNPACK's home).
The TFLite file has a fixed length: `load_serving(..., seq_length=N)` lets auto take it for
inputs up to N tokens (an encoder export's maximum is 512, its TFLite file's 128).
"""

from __future__ import annotations

from albert_tf.runtime import hardware

# A CPU profile AUTO_RULE has no row for (a new one of hardware.cpu_profile, or a mocked one)
# takes this row; an engine a cell leaves out is tried after it (engines.fallback_order()).
DEFAULT_PROFILE = hardware.PROFILE_AVX2

BATCH_CLASSES = (1, 8)  # the measured batch sizes; a call's batch picks the nearer one

AUTO_RULE: dict[str, dict[str, dict[int, tuple[str, ...]]]] = {
    hardware.PROFILE_AVX2: {
        "fp32": {1: ("tflite", "onnxruntime", "openvino", "tensorflow"),
                 8: ("onnxruntime", "tensorflow", "tflite", "openvino")},
        "bf16": {1: ("tensorflow", "openvino"), 8: ("tensorflow", "openvino")},
        "int8": {1: ("onnxruntime", "tflite", "openvino"), 8: ("onnxruntime", "tflite", "openvino")},
        "fp16": {1: ("tflite",), 8: ("tflite",)},
    },
    hardware.PROFILE_AVX512: {
        "fp32": {1: ("openvino", "onnxruntime", "tensorflow", "tflite"),
                 8: ("openvino", "onnxruntime", "tensorflow", "tflite")},
        "bf16": {1: ("tensorflow", "openvino"), 8: ("tensorflow", "openvino")},
        "int8": {1: ("openvino", "tflite", "onnxruntime"), 8: ("openvino", "tflite", "onnxruntime")},
        "fp16": {1: ("tflite",), 8: ("tflite",)},
    },
    hardware.PROFILE_AMX: {
        "fp32": {1: ("openvino", "onnxruntime", "tensorflow", "tflite"),
                 8: ("openvino", "onnxruntime", "tensorflow", "tflite")},
        "bf16": {1: ("openvino", "tensorflow"), 8: ("openvino", "tensorflow")},
        "int8": {1: ("openvino", "tflite", "onnxruntime"), 8: ("tflite", "openvino", "onnxruntime")},
        "fp16": {1: ("tflite",), 8: ("tflite",)},
    },
    hardware.PROFILE_ARM: {
        "fp32": {1: ("tensorflow", "onnxruntime", "openvino", "tflite"),
                 8: ("tensorflow", "onnxruntime", "openvino", "tflite")},
        "bf16": {1: ("tensorflow", "openvino"), 8: ("tensorflow", "openvino")},
        "int8": {1: ("tflite", "onnxruntime", "openvino"), 8: ("tflite", "onnxruntime", "openvino")},
        "fp16": {1: ("tflite",), 8: ("tflite",)},
    },
}


# int8 on an x86 CPU with AVX-VNNI but no AVX-512 (Alder Lake and later client cores, Zen 5
# desktop parts with AVX-512 off): profile x86-avx2 for every other precision, but int8 dot
# products as on the VNNI Xeons, so int8 follows their order (not measured on such a CPU).
INT8_AVX_VNNI: dict[int, tuple[str, ...]] = {1: ("openvino", "tflite", "onnxruntime"),
                                             8: ("openvino", "tflite", "onnxruntime")}


def batch_class(batch_size: int | None) -> int:
    """The measured batch size nearest `batch_size` (None: a server's batches, 8)."""
    if batch_size is None:
        return BATCH_CLASSES[-1]
    return min(BATCH_CLASSES, key=lambda measured: (abs(measured - batch_size), measured))


def preferences(profile: str, precision: str, batch_size: int | None = None,
                flags: frozenset[str] | None = None) -> tuple[str, ...]:
    """The engines AUTO_RULE lists for this CPU profile, precision and batch, fastest first
    (int8 on an AVX2 CPU with AVX-VNNI, from its `flags`: INT8_AVX_VNNI's). A profile without a
    row takes DEFAULT_PROFILE's; a precision without a cell lists none (the fallback order)."""
    if (precision == "int8" and profile == hardware.PROFILE_AVX2 and flags is not None
            and "avx_vnni" in flags):
        return INT8_AVX_VNNI[batch_class(batch_size)]
    row = AUTO_RULE.get(profile, AUTO_RULE[DEFAULT_PROFILE])
    return row.get(precision, {}).get(batch_class(batch_size), ())
