"""Latency per example of the TFLite exports against their SavedModels (issue 15, acceptance 3).

Builds, at ALBERT-base size with random weights (`--preset`), the two exports the scripts
write with `--export_dir`:

  * SQuAD v1 (`run_squad.py`, seq `--squad_seq`, default 384): the SavedModel's
    int32 [1, S] signature → start/end logits, and `albert_model.tflite`;
  * the classifier (`run_classifier.py`, seq `--classifier_seq`, default 128, 2 classes): the
    SavedModel's serving signature (one serialized tf.Example) and `albert_model.tflite`;

each TFLite file in every `--quantizations` (none / dynamic_int8 / float16), through the
same code the scripts use (albert_tf/squad/export.py, albert_tf/glue/export.py). Every
candidate runs one example (batch 1, the original's TFLite shape) `--warmup` times, then
`--iters` timed rounds in rotation (so load from other processes hits all alike); the
figure is the median, with the minimum beside it. The interpreter uses `--threads`
threads (default 2, this machine's cores); TensorFlow its default pools. Also printed:
each TFLite file's size and the outputs' max difference from the SavedModel on the example.

Usage:
    TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/tflite_latency.py
    .venv/bin/python benchmarks/tflite_latency.py --iters 10 --quantizations none,dynamic_int8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import tensorflow as tf
import keras

from albert_tf import AlbertConfig
from albert_tf.data.example_codec import encode_examples
from albert_tf.export.tflite import (TFLITE_FILE, sample_inputs, signature_runner,
                                     token_function, write_tflite)
from albert_tf.glue.export import classifier_outputs, export_classifier
from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.span_labeler import AlbertSpanLabeler
from albert_tf.squad.export import SAVED_MODEL_DIR, export_squad_v1  # GLUE's too (layout.py)
from albert_tf.export.choices import TFLITE_QUANTIZATIONS


def _serialized_example(inputs: dict[str, np.ndarray]) -> bytes:
    columns = {name: ("int64", value.astype(np.int64)) for name, value in inputs.items()}
    return encode_examples(columns)[0]


def _candidates(task: str, model: keras.Model, seq: int, vocab_size: int, quantizations,
                threads: int, root: str) -> tuple[dict[str, Callable[[], dict]], dict[str, int]]:
    """name → a call running one example; TFLite file sizes."""
    sample = sample_inputs(seq, vocab_size)
    directory = os.path.join(root, task)
    if task == "squad_v1":
        export_squad_v1(model, directory, seq, vocab_size, quantizations[0])
        serve = tf.saved_model.load(os.path.join(directory, SAVED_MODEL_DIR)).signatures[
            "serving_default"]
        tensors = {k: tf.constant(v) for k, v in sample.items()}
        candidates = {"SavedModel": lambda: serve(**tensors)}
        fn = token_function(model, seq, lambda out: {k: out[k] for k in ("start_logits",
                                                                         "end_logits")})
    else:
        export_classifier(model, directory, seq, False, tflite_quantization=quantizations[0],
                          vocab_size=vocab_size)
        serve = tf.saved_model.load(os.path.join(directory, SAVED_MODEL_DIR)).signatures[
            "serving_default"]
        examples = tf.constant([_serialized_example(sample)])
        candidates = {"SavedModel (tf.Example)": lambda: serve(examples=examples)}
        fn = token_function(model, seq, lambda out: classifier_outputs(out, False))
    sizes = {}
    for quantization in quantizations:
        path = os.path.join(directory, TFLITE_FILE)
        if quantization != quantizations[0]:
            path = os.path.join(directory, f"{quantization}.tflite")
            write_tflite(fn, path, quantization, vocab_size)
        sizes[quantization] = os.path.getsize(path)
        with open(path, "rb") as f:
            runner = signature_runner(f.read(), num_threads=threads)
        candidates[f"TFLite {quantization}"] = (lambda r=runner: r(**sample))
    return candidates, sizes


def _time(candidates: dict[str, Callable[[], dict]], warmup: int, iters: int
          ) -> dict[str, list[float]]:
    for call in candidates.values():
        for _ in range(warmup):
            call()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for round_ in range(iters):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            start = time.perf_counter()
            candidates[name]()
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--squad_seq", type=int, default=384)
    parser.add_argument("--classifier_seq", type=int, default=128)
    parser.add_argument("--quantizations", default=",".join(TFLITE_QUANTIZATIONS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--tasks", default="squad_v1,classifier")
    args = parser.parse_args()
    quantizations = args.quantizations.split(",")
    config = AlbertConfig.from_preset(args.preset)
    keras.utils.set_random_seed(0)
    print(f"{args.preset}, random weights; batch 1; TFLite threads {args.threads}; "
          f"{args.iters} rounds after {args.warmup} warm-up calls; ms per example "
          "(median / min)")
    with tempfile.TemporaryDirectory() as root:
        for task in args.tasks.split(","):
            if task == "squad_v1":
                seq, model = args.squad_seq, AlbertSpanLabeler(config)
            else:
                seq, model = args.classifier_seq, AlbertClassifier(config, 2)
            start = time.perf_counter()
            candidates, sizes = _candidates(task, model, seq, config.vocab_size, quantizations,
                                            args.threads, root)
            print(f"\n{task} (seq {seq}): exports written in {time.perf_counter() - start:.0f} s")
            reference = {k: np.asarray(v) for k, v in next(iter(candidates.values()))().items()}
            times = _time(candidates, args.warmup, args.iters)
            base = statistics.median(next(iter(times.values())))
            print("| export | ms / example (median) | min | vs SavedModel | file MB | "
                  "max abs diff vs SavedModel |")
            print("|---|---|---|---|---|---|")
            for name, values in times.items():
                median = statistics.median(values)
                quantization = name.split(" ", 1)[1] if name.startswith("TFLite") else None
                size = f"{sizes[quantization] / 2**20:.1f}" if quantization else "—"
                diff = "—"
                if quantization:
                    outputs = candidates[name]()
                    diff = max(float(np.max(np.abs(outputs[k] - reference[k])))
                               for k in reference if reference[k].dtype.kind == "f")
                    diff = f"{diff:.2g}"
                print(f"| {name} | {median * 1e3:.1f} | {min(values) * 1e3:.1f} | "
                      f"{base / median:.2f}× | {size} | {diff} |")


if __name__ == "__main__":
    main()
