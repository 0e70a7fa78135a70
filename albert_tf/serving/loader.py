"""`load_serving`: one loader for every serving artifact of an export and every engine.

    >>> encoder = load_serving("/tmp/albert_encoder")           # backend="auto"
    load_serving: /tmp/albert_encoder/serving on tensorflow (fp32; chosen by backend='auto' …)
    >>> encoder.backend, encoder.precision
    ('tensorflow', 'fp32')
    >>> out = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    >>> out["sequence_output"].shape, out["pooled_output"].dtype
    ((8, 128, 768), dtype('float32'))

`path` is an export directory (`export_tfhub --export_path`, or a task's `--export_dir`; its
serving.json lists what it holds, manifest.py), a SavedModel directory (the frozen `serving/`
one, or an older export's TF-Hub `serving_default`), a `.tflite` file, an OpenVINO `.xml` or an
ONNX file (ours). Engines (engines.py): "tensorflow", "tflite" (LiteRT, else tf.lite),
"openvino" and "onnxruntime" (optional packages). Precisions: "fp32", "bf16", "int8", "fp16"
(a float16 TFLite file), also spelled "f32"/"float32", "bfloat16", "float16"; None means the
export's own (its --dtype; a TFLite file's quantization). Which engine reads which file at which
precision is the ENGINES table; a combination the export cannot give is refused in one line
naming the export flag that gives it. `backend="auto"` picks by AUTO_RULE (auto_rule.py),
keyed by the CPU profile, the precision and `batch_size` (the batch you will mostly send).

The returned callable takes int32 or int64 `[batch, seq]` inputs (any batch, any seq up to the
artifact's maximum; ids are checked against the vocabulary first) and returns float32 numpy
arrays (a task's predictions int32); any number of threads may call it at once. A task export
returns the task's outputs (serving.json's `outputs`); its TFLite file (batch 1, the original's
input names) runs row by row.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

import numpy as np
from absl import flags, logging

from albert_tf.runtime import hardware, paths
from albert_tf.serving.auto_rule import preferences
from albert_tf.serving.artifact import (PRECISION_ALIASES, PRECISIONS, Artifact,
                                       ServingLoadError)
from albert_tf.serving.engines import ENGINES, Arrays, engine_suffixes, fallback_order, installed
from albert_tf.models.encoder import INPUT_NAMES

# The table's at import, kept for callers; the loader reads ENGINES (and fallback_order()) live.
BACKENDS = ("auto",) + tuple(ENGINES)
FALLBACK_ORDER = fallback_order()


def normalize_precision(precision: str | None) -> str | None:
    """The canonical name of `precision` (PRECISIONS), None kept; anything else is refused."""
    if precision is None:
        return None
    canonical = PRECISION_ALIASES.get(precision, precision)
    if canonical not in PRECISIONS:
        raise ServingLoadError(f"precision must be one of {', '.join(PRECISIONS)} (or "
                               f"{', '.join(PRECISION_ALIASES)}) or None, got {precision!r}")
    return canonical


def _refusal(artifact: Artifact, backend: str, precision: str) -> str | None:
    """Why `backend` cannot run `artifact` at `precision` (one line), None when it can."""
    engine = ENGINES[backend]
    if precision not in engine.precisions:
        others = [name for name, e in ENGINES.items() if precision in e.precisions]
        return (f"backend {backend!r} runs {', '.join(engine.precisions)}, not {precision!r}; "
                f"{precision} runs on {', '.join(others)}")
    if engine.file_for(artifact, precision) is None:
        return (f"{artifact.path}: backend {backend!r} at {precision} needs "
                f"{engine.needs[precision]}, which this artifact lacks")
    if not engine.available():
        return (f"{artifact.path}: backend {backend!r} needs the {engine.package} package "
                f"(pip install 'albert-tf[{engine.extra}]')")
    return None


def auto_backend(artifact: Artifact, precision: str | None = None, batch_size: int | None = None,
                 profile: str | None = None, seq_length: int | None = None) -> tuple[str, str]:
    """(engine, precision) that `backend="auto"` picks for `artifact` on this CPU (or on the
    CPU of `artifact.cpu_flags`, or `profile`): AUTO_RULE's first engine that qualifies.
    `seq_length`: the longest input that will be sent (None: the export's maximum); a file of
    fixed length (TFLite) qualifies only where it covers it."""
    precision = normalize_precision(precision) or artifact.default_precision()
    profile = profile or hardware.cpu_profile(artifact.cpu_flags)
    ordered = preferences(profile, precision, batch_size,
                          hardware.cpu_flags() if artifact.cpu_flags is None else artifact.cpu_flags)
    ordered += tuple(name for name in fallback_order() if name not in ordered)
    reasons = []
    for name in ordered:
        reason = _refusal(artifact, name, precision)
        if reason is None and name == "tflite" and not artifact.tflite_covers(seq_length):
            reason = (f"the TFLite file's fixed length {artifact.tflite_seq_length} is below "
                      + (f"seq_length {seq_length}" if seq_length else
                         f"the export's maximum {artifact.max_seq_length} (pass seq_length=)"))
        if reason is None:
            return name, precision
        reasons.append(reason)
    # The most useful reason: an engine that has its file but not its package (the install
    # line), else one that lacks its file (the export flag), else the first of all.
    useful = ([r for r in reasons if "pip install" in r] or [r for r in reasons if "lacks" in r]
              or reasons)
    raise ServingLoadError(f"no engine can run it at {precision} here; {useful[0]}")


class ServingModel:
    """A loaded serving artifact: call it with the three inputs. `backend` and `precision`
    say what runs (`runs`: the engine's own word on its precision, where it gives one)."""

    def __init__(self, artifact: Artifact, backend: str, precision: str, file: str, run: Any):
        self.artifact = artifact
        self.backend = backend
        self.precision = precision
        self.file = file
        self._run = run
        self.runs = getattr(run, "runs", None)
        self.max_seq_length = getattr(run, "seq_length", None) or artifact.max_seq_length
        self._limits = {"input_word_ids": artifact.vocab_size,
                        "input_type_ids": artifact.type_vocab_size, "input_mask": 2}

    def __repr__(self) -> str:
        return (f"ServingModel({self.file!r}, backend={self.backend!r}, "
                f"precision={self.precision!r})")

    def _check(self, inputs: Mapping[str, Any]) -> Arrays:
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
        if arrays["input_word_ids"].size:
            for name, limit in self._limits.items():  # one vectorized min/max per input
                low, high = int(arrays[name].min()), int(arrays[name].max())
                bad = low if low < 0 else high if limit is not None and high >= limit else None
                if bad is not None:
                    allowed = f"[0, {limit})" if limit is not None else "≥ 0"
                    raise ValueError(f"{name}: value {bad} is outside the allowed range "
                                     f"{allowed} ({self.artifact.path})")
        return {name: value.astype(np.int32, copy=False) for name, value in arrays.items()}

    def __call__(self, inputs: Mapping[str, Any]) -> Arrays:
        return self._run(self._check(inputs))


def _announce(message: str) -> None:
    """load_serving's one line: in absl's log inside our tools, on stderr in a plain script."""
    if flags.FLAGS.is_parsed():
        logging.info("%s", message)
    else:
        print(message, file=sys.stderr, flush=True)


def load_serving(path: str, backend: str = "auto", num_threads: int | None = None,
                 precision: str | None = None, batch_size: int | None = None,
                 seq_length: int | None = None) -> ServingModel:
    """Loads `path` (see the module docstring) on `backend` at `precision`. `num_threads`: the
    TFLite, OpenVINO and ONNX Runtime engines' threads (TensorFlow's are set at its start).
    `batch_size`: the batch you will mostly send (auto's choice; None: a server's, 8).
    `seq_length`: the longest input you will send (None: the export's maximum); with it `auto`
    may pick a file of fixed length that covers it (the TFLite file, which refuses longer
    inputs in one line)."""
    if backend != "auto" and backend not in ENGINES:
        raise ServingLoadError(f"backend must be one of {', '.join(('auto',) + tuple(ENGINES))}, "
                               f"got {backend!r}")
    precision = normalize_precision(precision)
    # An export on a bucket is read from a local copy: the engines open local files only.
    artifact = Artifact(paths.staged_copy(path, companions=(".bin",)), suffixes=engine_suffixes())
    if backend == "auto":
        chosen, precision = auto_backend(artifact, precision, batch_size, seq_length=seq_length)
    else:
        chosen = backend
        if precision is None:  # the export's own where the engine runs it, else its first
            engine = ENGINES[backend]
            precision = next((p for p in (artifact.default_precision(),) + engine.precisions
                              if p in engine.precisions and engine.file_for(artifact, p)),
                             artifact.default_precision())
        reason = _refusal(artifact, chosen, precision)
        if reason is not None:
            raise ServingLoadError(reason)
    engine = ENGINES[chosen]
    file = engine.file_for(artifact, precision)
    try:
        run = engine.load(artifact, file, precision, num_threads)
    except ServingLoadError:
        raise
    except Exception as error:  # an engine's own failure: one line, the file named
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ServingLoadError(f"{file}: {chosen} could not load it ({first})") from error
    model = ServingModel(artifact, chosen, precision, file, run)
    runs = f", runs {model.runs}" if model.runs and model.runs != precision else ""
    how = (f"; chosen by backend='auto' for CPU profile {hardware.cpu_profile()}"
           if backend == "auto" else "")
    _announce(f"load_serving: {file} on {chosen} ({precision}{runs}{how})")
    return model


__all__ = ["Artifact", "BACKENDS", "ServingLoadError", "ServingModel", "auto_backend", "installed",
           "load_serving", "normalize_precision"]
