"""TFLite export of a fine-tuned model: int32 token tensors in, float32 logits out.

The original's SQuAD v1 export (faithfulness §9.8) converts a graph whose inputs are int32
`[1, max_seq_length]` placeholders `input_ids`, `input_mask`, `segment_ids`; every TFLite
model written here takes the same three tensors. The weights are frozen into the graph and
only builtin TFLite ops are allowed (TF 2.21's interpreter has no Flex ops, so no
`tf.Example` parsing). Before the file is written the converted model runs one sample
input and its outputs must be finite; the file is written under a temporary name and renamed.

Example:
    >>> fn = token_function(model, 128, lambda out: {"logits": out["logits"]})
    >>> write_tflite(fn, "export/albert_model.tflite", "dynamic_int8", vocab_size=30000)
"""

from __future__ import annotations

from typing import Callable, Mapping

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.export.choices import TFLITE_QUANTIZATIONS
from albert_tf.export.layout import TFLITE_FILE  # noqa: F401  (its public name here)
from albert_tf.models.encoder import FEATURE_TO_INPUT
from albert_tf.models.frozen_weights import frozen_function
from albert_tf.serving.runtimes import signature_runner

# The original's export input names (its records' names), in order: int32 [1, S].
TFLITE_INPUTS = tuple(FEATURE_TO_INPUT)

OutputsFn = Callable[[Mapping[str, tf.Tensor]], dict[str, tf.Tensor]]


class TFLiteExportError(RuntimeError):
    """Conversion failed or the converted model gives non-finite outputs (one line)."""


def token_function(model: keras.Model, max_seq_length: int, outputs_fn: OutputsFn
                   ) -> tf.types.experimental.GenericFunction:
    """A tf.function of int32 [1, S] `input_ids`, `input_mask`, `segment_ids` → outputs_fn of the
    model's inference outputs (float32). Also the SQuAD SavedModel's serving signature."""
    specs = [tf.TensorSpec([1, max_seq_length], tf.int32, name=name) for name in TFLITE_INPUTS]

    @tf.function(input_signature=specs)
    def serve(input_ids, input_mask, segment_ids):
        features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        inputs = {FEATURE_TO_INPUT[name]: value for name, value in features.items()}
        return outputs_fn(model(inputs, training=False))

    return serve


def sample_inputs(max_seq_length: int, vocab_size: int) -> dict[str, np.ndarray]:
    """One deterministic [1, S] example: ids spread over the vocabulary, the last quarter
    padding, two segments — exercises masking and both token-type embeddings."""
    length = max(1, max_seq_length - max_seq_length // 4)
    ids = (np.arange(max_seq_length, dtype=np.int64) * 7919 + 2) % vocab_size
    mask = (np.arange(max_seq_length) < length).astype(np.int32)
    segments = ((np.arange(max_seq_length) >= length // 2) & (mask == 1)).astype(np.int32)
    return {"input_ids": (ids * mask)[None].astype(np.int32), "input_mask": mask[None],
            "segment_ids": segments[None]}


def check_quantization(quantization: str) -> None:
    """Raises TFLiteExportError unless `quantization` is one of TFLITE_QUANTIZATIONS: the one
    check of --tflite_quantization (the task runners call it before any work)."""
    if quantization not in TFLITE_QUANTIZATIONS:
        raise TFLiteExportError(f"tflite_quantization must be one of "
                                f"{', '.join(TFLITE_QUANTIZATIONS)}, got {quantization!r}")


def convert(fn: tf.types.experimental.GenericFunction, quantization: str) -> bytes:
    """The flatbuffer of `fn` (builtin ops only, weights frozen), quantized as asked:
    `dynamic_int8` int8 weights with dynamic-range int8 matmuls, `float16` float16 weights."""
    check_quantization(quantization)
    # Frozen here: given the model's variables, TF 2.21's converter keeps them as
    # uninitialised TFLite resource variables (NaN outputs); its variable-free path would
    # drop the signature.
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [frozen_function(fn).get_concrete_function()], tf.Module())
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantization != "none":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "float16":
        converter.target_spec.supported_types = [tf.float16]
    try:
        return converter.convert()
    except Exception as error:  # the converter raises several types, with long messages
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TFLiteExportError(f"TFLite conversion ({quantization}) failed: {first}") from error


def run_tflite(model_content: bytes, inputs: Mapping[str, np.ndarray],
               num_threads: int | None = None) -> dict[str, np.ndarray]:
    """Runs the flatbuffer's serving signature once on `inputs` (name → int32 array)."""
    runner = signature_runner(model_content, num_threads)
    return runner(**{name: np.asarray(value, np.int32) for name, value in inputs.items()})


def check_finite(model_content: bytes, inputs: Mapping[str, np.ndarray], what: str
                 ) -> dict[str, np.ndarray]:
    """Runs the converted model on `inputs`; raises TFLiteExportError naming the first
    non-finite float output."""
    outputs = run_tflite(model_content, inputs)
    for name, value in sorted(outputs.items()):
        if np.issubdtype(value.dtype, np.floating) and not np.all(np.isfinite(value)):
            raise TFLiteExportError(f"{what}: the converted model's output {name!r} is not finite "
                                    "on a sample input; nothing written")
    return outputs


def write_tflite(fn: tf.types.experimental.GenericFunction, path: str, quantization: str,
                 vocab_size: int) -> str:
    """Converts `fn` (a `token_function`), checks it on a sample input and writes `path`
    atomically; returns the path."""
    content = convert(fn, quantization)
    max_seq_length = fn.input_signature[0].shape[1]
    sample = sample_inputs(max_seq_length, vocab_size)
    outputs = check_finite(content, sample, path)
    expected = fn(**{k: tf.constant(v) for k, v in sample.items()})
    for name, value in sorted(outputs.items()):
        if np.issubdtype(value.dtype, np.floating):
            logging.info("TFLite %s output %s: max |TFLite − TF| on a sample = %.3g", quantization,
                         name, float(np.max(np.abs(value - expected[name].numpy()))))
    with atomic_file(path, "wb", what="TFLite export") as f:
        f.write(content)
    logging.info("Wrote %s (%s, %.1f MB)", path, quantization, len(content) / 2**20)
    return path
