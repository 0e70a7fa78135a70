"""The engines' own runtimes, opened the same way by the loader (engines.py) and by the writers'
checks of what they wrote: a TFLite file's signature runner (LiteRT, else tf.lite) and an ONNX
Runtime CPU session. Each package is imported on the first call."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import warnings
from typing import Any, Callable, Iterator

import numpy as np
from absl import logging

_FIRST_INTERPRETER = threading.Lock()
_made_one = False


@contextlib.contextmanager
def _without_native_info_lines() -> Iterator[None]:
    """Drops the `INFO: …` lines TFLite's C++ logger writes to fd 2 (`Created TensorFlow Lite
    XNNPACK delegate for CPU.`, once per process; no API turns it off) and passes every other
    byte written meanwhile on to the real stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().splitlines(keepends=True)
                    if not line.startswith(b"INFO: ")]
            if kept:
                os.write(2, b"".join(kept))


def interpreter_class() -> Any:
    """LiteRT's interpreter (`ai-edge-litert`), else TensorFlow's deprecated tf.lite one."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        import tensorflow as tf

        return tf.lite.Interpreter
    return Interpreter


def signature_runner(model_content: bytes, num_threads: int | None = None
                     ) -> Callable[..., dict[str, np.ndarray]]:
    """The flatbuffer's serving signature as a callable: input_ids=…, input_mask=…,
    segment_ids=… (int32 [1, S]) → output name → array. One interpreter: one thread at a
    time (the serving loader pools them)."""
    global _made_one
    interpreter = interpreter_class()
    with _FIRST_INTERPRETER:
        quiet = (_without_native_info_lines() if not _made_one
                 and logging.get_verbosity() < logging.DEBUG else contextlib.nullcontext())
        with quiet, warnings.catch_warnings():  # tf.lite.Interpreter's deprecation notice
            warnings.simplefilter("ignore", UserWarning)
            made = interpreter(model_content=model_content, num_threads=num_threads)
            made.allocate_tensors()  # where TFLite applies its XNNPACK delegate
            runner = made.get_signature_runner()
            _made_one = True
    return runner


def session(path_or_bytes: str | bytes, num_threads: int | None = None, optimization: str = "all"
            ) -> Any:
    """An ONNX Runtime CPU session; `optimization` "all" (ORT's full graph rewrites) or
    "basic"."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC}[optimization]
    if num_threads:
        options.intra_op_num_threads = int(num_threads)
        options.inter_op_num_threads = 1
    return ort.InferenceSession(path_or_bytes, options, providers=["CPUExecutionProvider"])
