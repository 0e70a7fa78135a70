"""`load_serving`: one loader for every serving artifact of an encoder export and every engine.

    >>> encoder = load_serving("/tmp/albert_encoder")           # backend="auto"
    >>> out = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    >>> out["sequence_output"].shape, out["pooled_output"].dtype
    ((8, 128, 768), dtype('float32'))

`path` is an encoder export directory (`export_tfhub --export_path`; serving_artifacts.py lists
what it may hold), a SavedModel directory (the frozen `serving/` one, or an older export's
TF-Hub `serving_default`), a `.tflite` file, an OpenVINO `.xml` or an ONNX file (ours,
onnx_graph.py). Engines: "tensorflow" (SavedModel), "tflite" (the TFLite interpreter),
"openvino" (the IR, the SavedModel converted at load, or an ONNX file; optional package),
"onnxruntime" (the ONNX files; optional package). `precision="int8"` picks an export's dynamic
int8 ONNX file (ONNX Runtime only: it holds ORT's fused ops). Inputs: int32 or int64
`[batch, seq]`, any batch, any seq up to the artifact's maximum; outputs float32 numpy arrays.

`backend="auto"` chooses by AUTO_RULE (below), measured with benchmarks/serving_speed.py
(benchmarks/RESULTS.md), and logs one line naming its choice.

A task export (`run_classifier.py`/`run_squad.py --export_dir`) loads the same way and returns
the task's outputs (serving.json's `outputs`: logits, probabilities, predictions; start_logits,
end_logits); its TFLite file `albert_model.tflite` has batch 1 and the original's input names,
which the TFLite engine maps and runs row by row.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

import numpy as np
from absl import logging

from albert_tf.export.serving_artifacts import read_manifest
from albert_tf.export.serving_graph import ORIGINAL_INPUT_NAMES, SERVING_DIR, SERVING_OUTPUTS
from albert_tf.models.encoder import INPUT_NAMES

BACKENDS = ("auto", "tensorflow", "tflite", "openvino", "onnxruntime")
# /proc/cpuinfo flags the engines' bf16/int8 kernels need.
CPU_FEATURES = ("avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni")
EXPECTED = ("an encoder or task export directory (serving/, serving.json), a SavedModel "
            "directory (saved_model.pb), a .tflite file, an OpenVINO .xml with its .bin or an "
            ".onnx file")

Arrays = dict[str, np.ndarray]
# Outputs with one value per token: a TFLite file's padding positions are cut off them.
PER_TOKEN_OUTPUTS = ("sequence_output", "start_logits", "end_logits")


class ServingLoadError(ValueError):
    """The path is not a serving artifact, or the engine asked for cannot run it (one line)."""


def cpu_features(cpuinfo: str | None = None) -> dict[str, bool]:
    """Which of CPU_FEATURES this CPU has (all False where /proc/cpuinfo is missing)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            cpuinfo = ""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.split(":")[0].strip() in ("flags", "Features"):
            flags.update(line.split(":", 1)[1].split())
    return {name: name in flags for name in CPU_FEATURES}


def has_bf16_units(features: Mapping[str, bool] | None = None) -> bool:
    features = cpu_features() if features is None else features
    return bool(features.get("avx512_bf16") or features.get("amx_bf16"))


def installed(package: str) -> bool:
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec(package) is not None


# --- artifacts ---------------------------------------------------------------------------------

class Artifact:
    """What `path` holds: the files each engine would read, the dtype and length limits."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.saved_model: str | None = None
        self.tflite: str | None = None
        self.openvino: str | None = None
        self.compute_dtype = "float32"
        self.max_seq_length: int | None = None
        self.tflite_seq_length: int | None = None
        self.tflite_quantization: str | None = None
        self.onnx: str | None = None  # float32 ONNX (or the file given)
        self.onnx_int8: str | None = None
        self.outputs: tuple[str, ...] = SERVING_OUTPUTS  # a task export's manifest lists its own
        self.has_manifest = False
        self._resolve()

    def _resolve(self) -> None:
        path = self.path
        if os.path.isdir(path):
            manifest = read_manifest(path)
            if manifest is not None:
                self._from_manifest(path, manifest)
            elif os.path.isfile(os.path.join(path, "saved_model.pb")):
                self.saved_model = path
                self._read_config(path)
            if self.saved_model is None and self.onnx is None:
                raise ServingLoadError(f"{path}: not a serving artifact; expected {EXPECTED}")
        elif os.path.isfile(path) and path.endswith(".tflite"):
            self.tflite = path
        elif os.path.isfile(path) and path.endswith(".xml"):
            if not os.path.isfile(path[:-4] + ".bin"):
                raise ServingLoadError(f"{path}: the OpenVINO IR's weights {path[:-4]}.bin are "
                                       "missing")
            self.openvino = path
        elif os.path.isfile(path) and path.endswith(".onnx"):
            self.onnx = path
        else:
            what = "does not exist" if not os.path.exists(path) else "is not a serving artifact"
            raise ServingLoadError(f"{path}: {what}; expected {EXPECTED}")

    def _from_manifest(self, path: str, manifest: dict[str, Any]) -> None:
        self.compute_dtype = manifest.get("compute_dtype", "float32")
        self.max_seq_length = manifest.get("max_seq_length")
        if "saved_model" in manifest or "onnx" not in manifest:  # a directory of ONNX files only
            self.saved_model = os.path.join(path, manifest.get("saved_model", SERVING_DIR))
        self.outputs = tuple(manifest.get("outputs", SERVING_OUTPUTS))
        self.has_manifest = True
        if "tflite" in manifest:
            self.tflite = os.path.join(path, manifest["tflite"]["file"])
            self.tflite_seq_length = int(manifest["tflite"]["seq_length"])
            self.tflite_quantization = manifest["tflite"].get("quantization")
        if "openvino" in manifest:
            self.openvino = os.path.join(path, manifest["openvino"]["file"])
        if "onnx" in manifest:
            self.onnx = os.path.join(path, manifest["onnx"]["file"])
            if "int8_file" in manifest["onnx"]:
                self.onnx_int8 = os.path.join(path, manifest["onnx"]["int8_file"])
        for name in ("saved_model", "tflite", "openvino", "onnx", "onnx_int8"):
            target = getattr(self, name)
            if target is not None and not os.path.exists(target):
                raise ServingLoadError(f"{path}: serving.json lists {target}, which is missing")

    def _read_config(self, saved_model: str) -> None:
        from albert_tf.config import AlbertConfig  # noqa: PLC0415
        from albert_tf.export.serving_graph import config_asset_path  # noqa: PLC0415

        config = config_asset_path(saved_model)
        if os.path.isfile(config):
            self.max_seq_length = AlbertConfig.from_json_file(config).max_position_embeddings

    def engines(self) -> list[str]:
        """The engines that can run this artifact (installed or not)."""
        found = []
        if self.saved_model:
            found += ["tensorflow", "openvino"]
        if self.tflite:
            found.append("tflite")
        if self.openvino and "openvino" not in found:
            found.append("openvino")
        if self.onnx:
            found.append("onnxruntime")
            if "openvino" not in found:
                found.append("openvino")
        return found


# AUTO_RULE, from benchmarks/serving_speed.py (benchmarks/RESULTS.md, "Serving"):
# * a .tflite file has one engine; an OpenVINO .xml alone, OpenVINO;
# * a float32 SavedModel/export: TensorFlow on the frozen serving graph — on the AMD EPYC
#   (AVX2, 2 threads, ALBERT-base, seq 128) 1.81 / 1.27 seq/s at batch 1 / 8 against OpenVINO
#   on our IR 0.79 / 1.08 (on HF's ONNX 0.71 / 1.06); on the Xeon, OpenVINO on our
#   (unfrozen) SavedModel was no faster than TensorFlow in fp32 (13.7 vs 14.0 at batch 8);
# * a bfloat16 export on a CPU with bf16 units (avx512_bf16/amx_bf16), OpenVINO when installed:
#   the Xeon measured it 1.9x (batch 8) to 3.3x (batch 1) TensorFlow's bf16 on the same
#   SavedModel; without bf16 units OpenVINO silently runs f32, so TensorFlow keeps the bf16 the
#   export was asked for;
# * precision="int8" on an export with the int8 ONNX file: ONNX Runtime (the file holds its
#   fused ops; on the EPYC the fastest int8 of ours, ahead of TFLite's int8 file);
# * an ONNX file given by path: ONNX Runtime when installed, else OpenVINO (our float32 graph
#   is plain ONNX; OpenVINO ran it slower than ORT on the EPYC).
def auto_backend(artifact: Artifact, features: Mapping[str, bool] | None = None,
                 have: Callable[[str], bool] = installed, precision: str | None = None) -> str:
    """The engine `backend="auto"` picks for `artifact` (see AUTO_RULE)."""
    onnx_only = artifact.saved_model is None and artifact.openvino is None and artifact.onnx
    if precision == "int8" or onnx_only:
        engines = (("onnxruntime", "onnxruntime"),) + (
            (("openvino", "openvino"),) if precision != "int8" else ())
        for engine, package in engines:
            if have(package):
                return engine
        raise ServingLoadError(f"{artifact.path}: an ONNX file needs onnxruntime"
                               f"{' or openvino' if precision != 'int8' else ''} "
                               "(pip install 'albert-tf[onnx]')")
    if artifact.saved_model is None and artifact.openvino is None:
        return "tflite"
    if artifact.saved_model is None:
        if not have("openvino"):
            raise ServingLoadError(f"{artifact.path}: an OpenVINO IR needs the openvino package "
                                   "(pip install 'albert-tf[openvino]')")
        return "openvino"
    if artifact.compute_dtype == "bfloat16" and has_bf16_units(features) and have("openvino"):
        return "openvino"
    return "tensorflow"


# --- engines -----------------------------------------------------------------------------------

def _tensorflow_engine(artifact: Artifact, num_threads: int | None) -> Callable[[Arrays], Arrays]:
    import tensorflow as tf  # noqa: PLC0415

    del num_threads  # TensorFlow's thread pools are fixed at its start (tf.config.threading)
    loaded = tf.saved_model.load(artifact.saved_model)
    if "serving_default" not in loaded.signatures:
        raise ServingLoadError(f"{artifact.saved_model}: no serving_default signature")
    signature = loaded.signatures["serving_default"]

    def run(inputs: Arrays) -> Arrays:
        out = signature(**{name: tf.constant(inputs[name]) for name in INPUT_NAMES})
        return {name: out[name].numpy() for name in artifact.outputs}

    run.keep_alive = loaded  # the signature needs its object alive
    return run


def _tflite_engine(artifact: Artifact, num_threads: int | None) -> Callable[[Arrays], Arrays]:
    from albert_tf.export.tflite import signature_runner  # noqa: PLC0415

    with open(artifact.tflite, "rb") as f:
        runner = signature_runner(f.read(), num_threads)
    details = runner.get_input_details()
    # The file's input name for each of ours: the encoder's own, or a task file's original ones.
    names = {name: name for name in INPUT_NAMES}
    if sorted(details) == sorted(ORIGINAL_INPUT_NAMES):
        names = {ours: theirs for theirs, ours in ORIGINAL_INPUT_NAMES.items()}
    elif sorted(details) != sorted(INPUT_NAMES):
        raise ServingLoadError(f"{artifact.tflite}: not an ALBERT TFLite file (inputs "
                               f"{sorted(details)}, expected {list(INPUT_NAMES)} or "
                               f"{list(ORIGINAL_INPUT_NAMES)})")
    shape = details[names["input_word_ids"]]["shape_signature"]
    length, fixed_batch = int(shape[1]), int(shape[0]) == 1
    artifact.tflite_seq_length = artifact.tflite_seq_length or length
    if not artifact.has_manifest:  # a bare .tflite file: whatever it returns
        artifact.outputs = tuple(runner.get_output_details())

    def run(inputs: Arrays) -> Arrays:
        seq = inputs["input_word_ids"].shape[1]
        # Masked padding up to the file's fixed length: real tokens' outputs are unchanged.
        padded = {names[name]: np.pad(inputs[name], ((0, 0), (0, length - seq)))
                  for name in INPUT_NAMES}
        if fixed_batch:  # a task file (batch 1): row by row
            rows = [runner(**{k: v[i:i + 1] for k, v in padded.items()})
                    for i in range(len(inputs["input_word_ids"]))]
            out = {k: np.concatenate([row[k] for row in rows]) for k in artifact.outputs}
        else:
            out = runner(**padded)
        return {k: out[k][:, :seq] if k in PER_TOKEN_OUTPUTS else out[k] for k in artifact.outputs}

    return run


def _openvino_engine(artifact: Artifact, num_threads: int | None, precision: str | None
                     ) -> Callable[[Arrays], Arrays]:
    try:
        import openvino as ov  # noqa: PLC0415  (optional dependency)
    except ImportError:
        raise ServingLoadError(f"{artifact.path}: backend 'openvino' needs the openvino package "
                               "(pip install 'albert-tf[openvino]')") from None
    core = ov.Core()
    if artifact.saved_model is None and artifact.openvino is None:
        model = core.read_model(artifact.onnx)
    elif artifact.openvino:
        model = core.read_model(artifact.openvino)
    else:
        model = ov.convert_model(artifact.saved_model)
    if precision is None:  # a bf16 export asks for bf16; OpenVINO runs f32 without bf16 units
        precision = "bf16" if artifact.compute_dtype == "bfloat16" else "f32"
    config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": precision,
                              "PERFORMANCE_HINT": "LATENCY"}
    if num_threads:
        config["INFERENCE_NUM_THREADS"] = int(num_threads)
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    names = [port.get_any_name() for port in compiled.inputs]
    missing = sorted(set(INPUT_NAMES) - {n for p in compiled.inputs for n in p.get_names()})
    if missing:
        raise ServingLoadError(f"{artifact.path}: OpenVINO model lacks inputs {missing}")
    outputs = {name: next(p for p in compiled.outputs if name in p.get_names())
               for name in artifact.outputs}

    def run(inputs: Arrays) -> Arrays:
        result = request.infer({name: inputs[name] for name in names})
        # float outputs float32, a task's predictions int32, as the other engines give them
        return {name: np.array(result[port], copy=True).astype(
                    np.float32 if np.issubdtype(result[port].dtype, np.floating) else np.int32)
                for name, port in outputs.items()}

    # What OpenVINO really runs: it falls back to f32 on CPUs without bf16 units.
    run.runs = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    return run


def _onnxruntime_engine(artifact: Artifact, num_threads: int | None, precision: str | None
                        ) -> Callable[[Arrays], Arrays]:
    try:
        from albert_tf.export.onnx_artifacts import session  # noqa: PLC0415

        onnx_session = session(artifact.onnx_int8 if precision == "int8" else artifact.onnx,
                               num_threads)
    except ImportError:
        raise ServingLoadError(f"{artifact.path}: backend 'onnxruntime' needs the onnxruntime "
                               "package (pip install 'albert-tf[onnx]')") from None
    names = {i.name: i.type for i in onnx_session.get_inputs()}
    outputs = [o.name for o in onnx_session.get_outputs()]
    if sorted(names) != sorted(INPUT_NAMES) or not set(SERVING_OUTPUTS) <= set(outputs):
        raise ServingLoadError(f"{artifact.path}: not an encoder ONNX file (inputs {sorted(names)}"
                               f", outputs {outputs}; expected {list(INPUT_NAMES)} → "
                               f"{list(SERVING_OUTPUTS)})")
    as_int64 = names["input_word_ids"] == "tensor(int64)"
    if artifact.max_seq_length is None:  # a bare .onnx file: our builder records it
        limit = onnx_session.get_modelmeta().custom_metadata_map.get("max_seq_length")
        artifact.max_seq_length = int(limit) if limit else None

    def run(inputs: Arrays) -> Arrays:
        feed = {name: inputs[name].astype(np.int64) if as_int64 else inputs[name]
                for name in INPUT_NAMES}
        return dict(zip(SERVING_OUTPUTS, onnx_session.run(list(SERVING_OUTPUTS), feed)))

    return run


# --- the loader --------------------------------------------------------------------------------

class ServingModel:
    """A loaded serving artifact: call it with the three inputs; `backend` names the engine."""

    def __init__(self, artifact: Artifact, backend: str, run: Callable[[Arrays], Arrays]):
        self.artifact = artifact
        self.backend = backend
        self._run = run
        self.runs = getattr(run, "runs", None)  # the engine's own precision, where it says
        if backend == "tflite":
            self.max_seq_length = artifact.tflite_seq_length
        else:
            self.max_seq_length = artifact.max_seq_length

    def __call__(self, inputs: Mapping[str, Any]) -> Arrays:
        missing = [name for name in INPUT_NAMES if name not in inputs]
        if missing:
            raise ValueError(f"missing inputs {missing}; expected {list(INPUT_NAMES)}")
        arrays = {name: np.asarray(inputs[name]) for name in INPUT_NAMES}
        shape = arrays["input_word_ids"].shape
        for name, value in arrays.items():
            if value.ndim != 2 or value.shape != shape:
                raise ValueError(f"{name}: expected [batch, seq] like input_word_ids {shape}, "
                                 f"got {value.shape}")
            if value.dtype not in (np.int32, np.int64):
                raise ValueError(f"{name}: expected int32 or int64, got {value.dtype}")
        if self.max_seq_length is not None and shape[1] > self.max_seq_length:
            raise ValueError(f"sequence length {shape[1]} exceeds this artifact's maximum "
                             f"{self.max_seq_length} ({self.artifact.path})")
        return self._run({name: value.astype(np.int32, copy=False)
                          for name, value in arrays.items()})


def load_serving(path: str, backend: str = "auto", num_threads: int | None = None,
                 precision: str | None = None) -> ServingModel:
    """Loads `path` (see the module docstring) on `backend`. `num_threads`: the TFLite and
    OpenVINO engines' threads (TensorFlow's are set at its start). `precision`: OpenVINO's
    inference precision ("f32" or "bf16"; default: bf16 for a bfloat16 export), or "int8":
    the export's dynamic-int8 ONNX file (onnxruntime)."""
    if backend not in BACKENDS:
        raise ServingLoadError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    artifact = Artifact(path)
    if precision == "int8" and artifact.onnx_int8 is None:
        raise ServingLoadError(f"{artifact.path}: precision 'int8' needs the export's int8 ONNX "
                               "file (export_tfhub --onnx), which it lacks")
    chosen = (auto_backend(artifact, precision=precision) if backend == "auto" else backend)
    if precision == "int8" and chosen != "onnxruntime":
        raise ServingLoadError(f"precision 'int8' (the int8 ONNX file, with ONNX Runtime's fused "
                               f"ops) runs on onnxruntime only, not {chosen!r}")
    if chosen not in artifact.engines():
        raise ServingLoadError(f"{artifact.path}: backend {chosen!r} cannot run this artifact "
                               f"(it can: {', '.join(artifact.engines())})")
    if chosen == "tensorflow":
        run = _tensorflow_engine(artifact, num_threads)
    elif chosen == "tflite":
        run = _tflite_engine(artifact, num_threads)
    elif chosen == "onnxruntime":
        run = _onnxruntime_engine(artifact, num_threads, precision)
    else:
        run = _openvino_engine(artifact, num_threads, precision)
    model = ServingModel(artifact, chosen, run)
    onnx_file = artifact.onnx_int8 if precision == "int8" else artifact.onnx
    source = {"tensorflow": artifact.saved_model, "tflite": artifact.tflite,
              "onnxruntime": onnx_file,
              "openvino": artifact.openvino or artifact.saved_model or artifact.onnx}[chosen]
    what = (artifact.tflite_quantization if chosen == "tflite" else
            "int8" if precision == "int8" else artifact.compute_dtype)
    logging.info("load_serving: %s on %s%s (%s)", source, chosen,
                 " (chosen by backend='auto')" if backend == "auto" else "", what)
    return model


__all__ = ["BACKENDS", "ServingLoadError", "ServingModel", "cpu_features", "load_serving"]
