"""The static int8 OpenVINO IR of an export: NNCF post-training quantization, calibrated on the
export's `--int8_calibration_file`, kept only when it passes the accuracy gate.

    openvino/albert_encoder_int8.xml (+ .bin)   encoder export (export_tfhub)
    openvino/albert_model_int8.xml (+ .bin)     task export (run_classifier/run_squad)

The float32 serving graph is converted to OpenVINO (as `--openvino_ir` does) and quantized by
`nncf.quantize(model, dataset, model_type=TRANSFORMER)` — what optimum-intel's OVQuantizer runs
on Hugging Face's graph: int8 weights and activations (FakeQuantize before each MatMul), from
statistics of the calibration samples, with SmoothQuant and the sensitive ops (softmax,
LayerNorm, GELU) left in float. Every eighth calibration sample is held out of the statistics
and both graphs run on it (OpenVINO, as `load_serving` compiles them):

  * an export's float outputs: mean over rows of ‖int8 − fp32‖ / ‖fp32‖ ≤ INT8_RELATIVE_BOUND;
  * a task's logits: argmax agreement ≥ INT8_MIN_AGREEMENT (every held-out row, under 100).

An int8 graph that misses either bound is not written: one warning line says so, and the export
keeps its fp32/bf16 artifacts as the served ones (`load_serving(precision="int8")` then picks
the dynamic-range int8 files, if any). Needs `nncf` and `openvino` (pip install
'albert-tf[openvino]'), imported only here.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
from absl import logging

from albert_tf.export.calibration_data import Sample, split_held_out
from albert_tf.export.layout import OPENVINO_DIR, OPENVINO_INT8_FILE, OPENVINO_TASK_INT8_FILE  # noqa: F401
from albert_tf.models.encoder import INPUT_NAMES
from albert_tf.serving.file_precision import INT8_IR_MARKERS, ir_is_int8  # noqa: F401  (public here)

# A random-weight tiny model (no trained margins: the hardest case) lands at 0.12–0.17 on text
# it was not calibrated on; a fine-tuned classifier well under it (tests/export/
# test_int8_calibration.py), where the argmax bound is the one that matters.
INT8_RELATIVE_BOUND = 0.25
INT8_MIN_AGREEMENT = 0.99
# Outputs whose argmax is the task's answer (a classifier's class, SQuAD's start/end token).
ARGMAX_OUTPUTS = ("logits", "start_logits", "end_logits")


class Int8ExportError(RuntimeError):
    """The int8 artifact could not be made (a missing package; one line)."""


def _feed(model: Any, sample: Sample) -> dict[str, np.ndarray]:
    """A sample keyed by the model's input tensor names (ours: input_word_ids, ...)."""
    return {port.get_any_name(): sample[next(n for n in INPUT_NAMES if n in port.get_names())]
            for port in model.inputs}


def quantize(model: Any, samples: Sequence[Sample]) -> Any:
    """NNCF's static int8 quantization of an OpenVINO model (TRANSFORMER preset), its
    statistics from every sample."""
    import nncf

    dataset = nncf.Dataset(list(samples), lambda sample: _feed(model, sample))
    return nncf.quantize(model, dataset, model_type=nncf.ModelType.TRANSFORMER,
                         subset_size=len(samples))


def _outputs(compiled: Any, samples: Sequence[Sample]) -> dict[str, list[np.ndarray]]:
    request = compiled.create_infer_request()
    out: dict[str, list[np.ndarray]] = {}
    for sample in samples:
        result = request.infer(_feed(compiled, sample))
        for port in compiled.outputs:
            out.setdefault(port.get_any_name(), []).append(np.array(result[port], copy=True))
    return out


def held_out_error(float_model: Any, int8_model: Any, samples: Sequence[Sample]
                   ) -> tuple[float, float | None]:
    """(worst mean relative error over the float outputs, worst argmax agreement over the
    logits outputs — None when there are none) of `int8_model` vs `float_model` on `samples`,
    each compiled as load_serving compiles it."""
    import openvino as ov

    core = ov.Core()
    want = _outputs(core.compile_model(float_model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}),
                    samples)
    got = _outputs(core.compile_model(int8_model, "CPU"), samples)
    error, agreement = 0.0, None
    for name, values in want.items():
        if name not in got or not np.issubdtype(values[0].dtype, np.floating):
            continue
        rows = [(np.linalg.norm((g - w).reshape(len(w), -1), axis=1)
                 / np.maximum(np.linalg.norm(w.reshape(len(w), -1), axis=1), 1e-12))
                for g, w in zip(got[name], values)]
        error = max(error, float(np.mean(np.concatenate(rows))))
        if name in ARGMAX_OUTPUTS:
            same = np.concatenate([(g.argmax(-1) == w.argmax(-1)).ravel()
                                   for g, w in zip(got[name], values)])
            share = float(np.mean(same))
            agreement = share if agreement is None else min(agreement, share)
    return error, agreement


def write_openvino_int8(float32_model: Any, export_dir: str, samples: Sequence[Sample],
                        outputs_fn: Any = None, file_name: str = OPENVINO_INT8_FILE
                        ) -> dict[str, Any] | None:
    """Quantizes the float32 serving graph of `float32_model` (an encoder, or a float32 task
    model with its `outputs_fn`) on `samples`, gates it on the held-out ones and writes
    `export_dir/openvino/file_name`; returns its serving.json entry, None when it missed the
    accuracy bound (nothing written, one warning line)."""
    try:
        import nncf  # noqa: F401
        import openvino as ov
    except ImportError:
        raise Int8ExportError("--int8_calibration_file needs the nncf and openvino packages "
                              "(pip install 'albert-tf[openvino]')") from None
    from albert_tf.export.serving_graph import encoder_outputs, float32_copy, \
        frozen_serving_function

    fn = frozen_serving_function(float32_copy(float32_model),
                                 outputs_fn=outputs_fn or encoder_outputs)
    float_model = ov.convert_model(fn)
    for port, name in zip(float_model.inputs, INPUT_NAMES):  # our input names, as the float IR
        if name not in port.get_names():
            port.get_tensor().set_names({name} | set(port.get_names()))
    calibration, held_out = split_held_out(samples)
    int8_model = quantize(float_model, calibration)
    error, agreement = held_out_error(float_model, int8_model, held_out)
    relative = os.path.join(OPENVINO_DIR, file_name)
    if error > INT8_RELATIVE_BOUND or (agreement is not None and agreement < INT8_MIN_AGREEMENT):
        logging.warning("int8: %s not written — on %d held-out calibration sequences its "
                        "relative error %.3g (bound %.3g)%s; the fp32/bf16 artifacts stay the "
                        "served ones", relative, len(held_out), error, INT8_RELATIVE_BOUND,
                        "" if agreement is None else
                        f", argmax agreement {agreement:.1%} (bound {INT8_MIN_AGREEMENT:.0%})")
        return None
    os.makedirs(os.path.join(export_dir, OPENVINO_DIR), exist_ok=True)
    ov.save_model(int8_model, os.path.join(export_dir, relative), compress_to_fp16=False)
    logging.info("Wrote %s (NNCF static int8, %d calibration sequences; held-out relative "
                 "error %.3g%s)", relative, len(calibration), error,
                 "" if agreement is None else f", argmax agreement {agreement:.1%}")
    entry: dict[str, Any] = {"file": relative, "calibration_sequences": len(calibration),
                             "held_out_relative_error": round(error, 5)}
    if agreement is not None:
        entry["held_out_argmax_agreement"] = round(agreement, 5)
    return entry
