"""The serving engines: one table row each, saying which artifact file it reads at which precision
and how it loads it into a callable that any number of threads may call at once.

A runner takes `{name: int32 [batch, seq]}` for the three inputs and returns float32 (a task's
predictions int32) numpy arrays by output name. TensorFlow's signatures and ONNX Runtime's
sessions are safe to call from several threads; a TFLite interpreter and an OpenVINO infer
request are not (wrong outputs, "Infer Request is busy"), so those engines keep a pool: each
call takes an idle interpreter or request, or makes one, and gives it back.

Adding an engine is one `Engine` row in ENGINES (with its `files` rule and `load` function) and
its tests: `load_serving`'s backends, `auto`'s fallback order and the refusals are read from the
rows, and an engine without a built-in artifact field reads the file serving.json lists under its
name or a bare file of its `suffixes` (`listed_file`; tests/export/test_engine_table.py).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import queue
from typing import Any, Callable, Iterator

import numpy as np

from albert_tf.runtime import paths
from albert_tf.runtime import hardware
from albert_tf.serving.artifact import TFLITE_PRECISION, Artifact, ServingLoadError
from albert_tf.models.encoder import FEATURE_TO_INPUT, INPUT_NAMES
from albert_tf.serving.runtimes import session, signature_runner


Arrays = dict[str, np.ndarray]
Runner = Callable[[Arrays], Arrays]
# Outputs with one value per token: a TFLite file's padding positions are cut off them.
PER_TOKEN_OUTPUTS = ("sequence_output", "start_logits", "end_logits")
class _Pool:
    """Objects that one thread at a time may use (TFLite interpreters, OpenVINO infer
    requests): `with pool.take() as item` lends an idle one or makes a new one."""

    def __init__(self, make: Callable[[], Any], first: Any = None):
        self._make = make
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        if first is not None:
            self._idle.put(first)

    def take(self) -> "_Lease":
        return _Lease(self)

    def _get(self) -> Any:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return self._make()


class _Lease:
    def __init__(self, pool: _Pool):
        self._pool = pool

    def __enter__(self) -> Any:
        self._item = self._pool._get()
        return self._item

    def __exit__(self, *exc: Any) -> None:
        self._pool._idle.put(self._item)


def installed(package: str) -> bool:
    """Whether `package` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


# --- TensorFlow --------------------------------------------------------------------------------

def _tensorflow(artifact: Artifact, file: str, precision: str, num_threads: int | None) -> Runner:
    import tensorflow as tf

    del precision, num_threads  # the graph's own dtype; TF's thread pools are fixed at start
    loaded = tf.saved_model.load(file)
    if "serving_default" not in loaded.signatures:
        raise ServingLoadError(f"{file}: no serving_default signature")
    signature = loaded.signatures["serving_default"]
    outputs = artifact.outputs

    def run(inputs: Arrays) -> Arrays:
        out = signature(**{name: tf.constant(inputs[name]) for name in INPUT_NAMES})
        return {name: out[name].numpy() for name in outputs}

    run.keep_alive = loaded  # the signature needs its object alive
    return run


# --- TFLite (LiteRT) ---------------------------------------------------------------------------

def _tflite(artifact: Artifact, file: str, precision: str, num_threads: int | None) -> Runner:
    del precision  # the file's own quantization
    content = paths.read_bytes(file)
    first = signature_runner(content, num_threads)
    pool = _Pool(lambda: signature_runner(content, num_threads), first)
    details = first.get_input_details()
    # The file's input name for each of ours: the encoder's own, or a task file's original ones.
    names = {name: name for name in INPUT_NAMES}
    if sorted(details) == sorted(FEATURE_TO_INPUT):
        names = {ours: theirs for theirs, ours in FEATURE_TO_INPUT.items()}
    elif sorted(details) != sorted(INPUT_NAMES):
        raise ServingLoadError(f"{file}: not an ALBERT TFLite file (inputs {sorted(details)}, "
                               f"expected {list(INPUT_NAMES)} or {list(FEATURE_TO_INPUT)})")
    shape = details[names["input_word_ids"]]["shape_signature"]
    length, fixed_batch = int(shape[1]), int(shape[0]) == 1
    if not artifact.has_manifest:  # a bare .tflite file: whatever it returns
        artifact.outputs = tuple(first.get_output_details())
    outputs = artifact.outputs

    def run(inputs: Arrays) -> Arrays:
        seq = inputs["input_word_ids"].shape[1]
        # Masked padding up to the file's fixed length: real tokens' outputs are unchanged.
        padded = {names[name]: np.pad(inputs[name], ((0, 0), (0, length - seq)))
                  for name in INPUT_NAMES}
        with pool.take() as runner:
            if fixed_batch:  # a task file (batch 1): row by row
                rows = [runner(**{k: v[i:i + 1] for k, v in padded.items()})
                        for i in range(len(inputs["input_word_ids"]))]
                out = {k: np.concatenate([row[k] for row in rows]) for k in outputs}
            else:
                out = {k: np.array(v, copy=True) for k, v in runner(**padded).items()}
        return {k: out[k][:, :seq] if k in PER_TOKEN_OUTPUTS else out[k] for k in outputs}

    run.seq_length = length
    return run


# --- OpenVINO ----------------------------------------------------------------------------------

def _openvino_model(ov: Any, artifact: Artifact, file: str) -> Any:
    """The OpenVINO model of `file`: an IR or ONNX file read as it is; a SavedModel converted
    from its float32 form (float32_graph.py: OpenVINO picks bf16 itself when asked)."""
    if file.endswith((".xml", ".onnx")):
        return ov.Core().read_model(file)
    if artifact.compute_dtype == "bfloat16":
        from albert_tf.serving.float32_graph import float32_serving_function

        return ov.convert_model(float32_serving_function(file))
    return ov.convert_model(file)


def _openvino(artifact: Artifact, file: str, precision: str, num_threads: int | None) -> Runner:
    import openvino as ov

    model = _openvino_model(ov, artifact, file)
    config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
                              "PERFORMANCE_HINT": "LATENCY"}
    if precision == "int8":  # a static int8 IR: its float ops in OpenVINO's own choice
        del config["INFERENCE_PRECISION_HINT"]  # (as the export's accuracy gate ran it)
    if num_threads:
        config["INFERENCE_NUM_THREADS"] = int(num_threads)
    compiled = ov.Core().compile_model(model, "CPU", config)
    missing = sorted(set(INPUT_NAMES) - {n for p in compiled.inputs for n in p.get_names()})
    if missing:
        raise ServingLoadError(f"{file}: OpenVINO model lacks inputs {missing}")
    names = [next(n for n in INPUT_NAMES if n in port.get_names()) for port in compiled.inputs]
    outputs = {name: next(p for p in compiled.outputs if name in p.get_names())
               for name in artifact.outputs}
    pool = _Pool(compiled.create_infer_request)

    def run(inputs: Arrays) -> Arrays:
        with pool.take() as request:
            result = request.infer({port: inputs[name]
                                    for port, name in zip(compiled.inputs, names)})
            # float outputs float32, a task's predictions int32, as the other engines give them
            return {name: np.array(result[port], copy=True).astype(
                        np.float32 if np.issubdtype(result[port].dtype, np.floating)
                        else np.int32)
                    for name, port in outputs.items()}

    # What OpenVINO really runs: f32 on CPUs without bf16 units, whatever was asked.
    runs = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
    run.runs = {"f32": "fp32", "bf16": "bf16", "f16": "fp16"}.get(runs, runs)
    if precision == "int8":
        run.runs = None  # int8 matmuls; the hint covers only the ops left in float
    return run


# --- ONNX Runtime ------------------------------------------------------------------------------

def _onnxruntime(artifact: Artifact, file: str, precision: str, num_threads: int | None
                 ) -> Runner:
    del precision  # the file is the precision
    onnx_session = session(file, num_threads)
    names = {i.name: i.type for i in onnx_session.get_inputs()}
    outputs = [o.name for o in onnx_session.get_outputs()]
    if sorted(names) != sorted(INPUT_NAMES) or not set(artifact.outputs) <= set(outputs):
        raise ServingLoadError(f"{file}: not an ALBERT ONNX file (inputs {sorted(names)}, "
                               f"outputs {outputs}; expected {list(INPUT_NAMES)} → "
                               f"{list(artifact.outputs)})")
    as_int64 = names["input_word_ids"] == "tensor(int64)"
    metadata = onnx_session.get_modelmeta().custom_metadata_map
    for key in ("max_seq_length", "vocab_size", "type_vocab_size"):  # a bare file: our builder's
        if getattr(artifact, key) is None and metadata.get(key):
            setattr(artifact, key, int(metadata[key]))
    wanted = list(artifact.outputs)

    def run(inputs: Arrays) -> Arrays:
        feed = {name: inputs[name].astype(np.int64) if as_int64 else inputs[name]
                for name in INPUT_NAMES}
        return dict(zip(wanted, onnx_session.run(wanted, feed)))

    return run


# --- the table ---------------------------------------------------------------------------------

def _saved_model_files(artifact: Artifact, precision: str) -> Iterator[str]:
    if artifact.saved_model and precision == artifact.precision:
        yield artifact.saved_model


def _tflite_files(artifact: Artifact, precision: str) -> Iterator[str]:
    if artifact.tflite and TFLITE_PRECISION.get(artifact.tflite_quantization or "none") == precision:
        yield artifact.tflite


def _openvino_files(artifact: Artifact, precision: str) -> Iterator[str]:
    # Called for the row's precisions only: int8 is NNCF's static int8 IR, any other (a float
    # one) any float graph, OpenVINO picking the precision.
    if precision == "int8":
        yield from (f for f in (artifact.openvino_int8,) if f)
    else:
        yield from (f for f in (artifact.openvino, artifact.onnx, artifact.saved_model) if f)


def _onnxruntime_files(artifact: Artifact, precision: str) -> Iterator[str]:
    if precision == "fp32" and artifact.onnx:
        yield artifact.onnx
    elif precision == "int8":
        # Full-range weights where the CPU has int8 dot products, else the 7-bit file.
        vnni = artifact.onnx_int8_vnni if hardware.has_int8_dot(artifact.cpu_flags) else None
        yield from (f for f in (vnni, artifact.onnx_int8) if f)


@dataclasses.dataclass(frozen=True)
class Engine:
    """One serving engine: the package it needs, the precisions it runs, the artifact files it
    reads for a precision (best first), how it loads one, and the export flags that give it
    each precision (for the one-line refusal)."""

    name: str
    package: str | None
    extra: str
    precisions: tuple[str, ...]
    files: Callable[[Artifact, str], Iterator[str]]
    load: Callable[[Artifact, str, str, int | None], Runner]
    needs: dict[str, str]
    # Where `backend="auto"` tries it after AUTO_RULE's cell (lower first; fallback_order()).
    fallback: int = 100
    # Bare files it reads by their name's ending (e.g. ".npz"), beside the built-in kinds
    # Artifact knows; an export lists its file in serving.json under the row's name.
    suffixes: tuple[str, ...] = ()

    def file_for(self, artifact: Artifact, precision: str) -> str | None:
        return next(iter(self.files(artifact, precision)), None)

    def available(self) -> bool:
        return self.package is None or installed(self.package)


ENGINES: dict[str, Engine] = {engine.name: engine for engine in (
    Engine("tensorflow", None, "", ("fp32", "bf16"), _saved_model_files, _tensorflow,
           {"fp32": "an export written with export_tfhub --dtype=float32",
            "bf16": "an export written with export_tfhub --dtype=bfloat16 (or run_classifier "
                    "--dtype=bfloat16 --export_dir)"}, fallback=0),
    Engine("tflite", "ai_edge_litert" if installed("ai_edge_litert") else None, "tflite",
           ("fp32", "int8", "fp16"), _tflite_files, _tflite,
           {p: f"a TFLite file written with --tflite_quantization={q}"
            for q, p in TFLITE_PRECISION.items()}, fallback=3),
    Engine("openvino", "openvino", "openvino", ("fp32", "bf16", "int8"), _openvino_files,
           _openvino,
           {"fp32": "a float graph (serving/, --openvino_ir or --onnx)",
            "bf16": "a float graph (serving/, --openvino_ir or --onnx)",
            "int8": "the static int8 IR of --int8_calibration_file (export_tfhub, "
                    "run_classifier, run_squad --export_dir)"}, fallback=2),
    Engine("onnxruntime", "onnxruntime", "onnx", ("fp32", "int8"), _onnxruntime_files,
           _onnxruntime,
           {"fp32": "the ONNX file of --onnx (export_tfhub, run_classifier, run_squad)",
            "int8": "the int8 ONNX files of export_tfhub --onnx (--onnx_quantization="
                    "dynamic_int8)"}, fallback=1),
)}


def fallback_order() -> tuple[str, ...]:
    """Every engine of the table, in the order `auto` tries those its AUTO_RULE cell leaves out
    (a bare file, a CPU profile or an engine the rule does not list)."""
    return tuple(sorted(ENGINES, key=lambda name: ENGINES[name].fallback))


def engine_suffixes() -> dict[str, str]:
    """File-name ending → engine, for the bare files the rows declare (`Engine.suffixes`)."""
    return {suffix: engine.name for engine in ENGINES.values() for suffix in engine.suffixes}


def listed_file(name: str) -> Callable[[Artifact, str], Iterator[str]]:
    """A `files` rule for an engine without a built-in Artifact field: the file serving.json
    lists under its name, or the bare file of one of its suffixes, at every precision of its row."""

    def files(artifact: Artifact, precision: str) -> Iterator[str]:
        del precision  # called for the row's precisions only
        yield from (f for f in (artifact.engine_files.get(name),) if f)

    return files
