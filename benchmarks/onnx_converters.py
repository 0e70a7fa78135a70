"""ONNX for every export (issue 28): our hand-built ONNX graph (`export/onnx_graph.py`, encoder
only) against tf2onnx's conversion of the frozen serving graph every export already writes
(`serving/`), on the same weights.

For each graph: its pooled/sequence outputs against TensorFlow's serving graph (max abs diff),
ONNX Runtime speed at batch 1 and 8 (sequences/s, median of `--repeats`), the ops ORT's
transformer optimizer fuses (Attention, SkipLayerNormalization, LayerNormalization, BiasGelu…,
counted in the optimized graph), and the int8 file (`onnx_artifacts.quantize_int8`, the
export's settings) against TensorFlow fp32: error and speed.

Usage (an encoder export with `--onnx`, and the same weights' fp32 export, e.g. those of
benchmarks/serving_speed.py's --workdir):
    .venv/bin/python benchmarks/onnx_converters.py \
        --export /tmp/bench/srv/hf_albert_base_l12_ours_fp32 \
        --ours /tmp/bench/srv/hf_albert_base_l12_ours_onnx/onnx/albert_encoder.onnx
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
OUTPUTS = ("pooled_output", "sequence_output")


def feeds(batch: int, seq: int, vocab: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch)
    ids = rng.integers(5, vocab, size=(batch, seq), dtype=np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[:, seq * 3 // 4:] = 0
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


def convert_with_tf2onnx(serving_dir: str, path: str) -> float:
    """tf2onnx (opset 17) of the frozen serving SavedModel's signature; returns seconds."""
    import tensorflow as tf
    import tf2onnx

    function = tf.saved_model.load(serving_dir).signatures["serving_default"]
    specs = [tf.TensorSpec([None, None], tf.int32, name) for name in INPUTS]
    start = time.perf_counter()
    tf2onnx.convert.from_function(
        tf.function(lambda w, m, t: function(input_word_ids=w, input_mask=m, input_type_ids=t)),
        input_signature=specs, opset=17, output_path=path)
    return time.perf_counter() - start


def op_counts(path: str, threads: int) -> collections.Counter:
    """Op types of ORT's optimized graph (level "all") of `path`."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        graph = onnx.load(options.optimized_model_filepath).graph
        return collections.Counter(node.op_type for node in graph.node)


def run_session(path: str, threads: int, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from albert_tf.export.onnx_artifacts import session

    sess = session(path, threads)
    names = [o.name for o in sess.get_outputs()]
    inputs = {i.name: feed[next(n for n in INPUTS if n in i.name)] for i in sess.get_inputs()}
    values = sess.run(None, inputs)
    by_name = dict(zip(names, values))
    return {out: next(v for n, v in by_name.items() if out in n) for out in OUTPUTS}


def speed(path: str, threads: int, feed: dict[str, np.ndarray], repeats: int) -> float:
    from albert_tf.export.onnx_artifacts import session

    sess = session(path, threads)
    inputs = {i.name: feed[next(n for n in INPUTS if n in i.name)] for i in sess.get_inputs()}
    sess.run(None, inputs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sess.run(None, inputs)
        times.append(time.perf_counter() - start)
    return len(feed["input_word_ids"]) / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", required=True, help="an fp32 encoder export directory")
    parser.add_argument("--ours", required=True, help="our albert_encoder.onnx of the same weights")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    args = parser.parse_args()

    import tensorflow as tf

    from albert_tf.export.onnx_artifacts import quantize_int8

    workdir = tempfile.mkdtemp(prefix="onnx_converters_")
    converted = os.path.join(workdir, "tf2onnx.onnx")
    seconds = convert_with_tf2onnx(os.path.join(args.export, "serving"), converted)
    print(f"tf2onnx conversion: {seconds:.1f} s, {os.path.getsize(converted) / 2**20:.0f} MiB; "
          f"ours {os.path.getsize(args.ours) / 2**20:.0f} MiB")
    serving = tf.saved_model.load(os.path.join(args.export, "serving")).signatures[
        "serving_default"]
    graphs = {"ours (onnx_graph.py)": args.ours, "tf2onnx (serving/)": converted}
    for name, path in list(graphs.items()):
        int8 = os.path.join(workdir, f"{len(graphs)}_int8.onnx")
        quantize_int8(path, int8, args.heads, args.hidden)
        graphs[f"{name} int8"] = int8
    reference = {b: {k: v.numpy() for k, v in serving(**{n: tf.constant(x) for n, x in
                                                        feeds(b, args.seq, 30000).items()}).items()}
                 for b in (1, 8)}
    print(f"{'graph':28s} {'pooled diff':>11s} {'seq diff':>9s} {'b1 seq/s':>9s} "
          f"{'b8 seq/s':>9s}  fused ops (ORT 'all')")
    for name, path in graphs.items():
        got = run_session(path, args.threads, feeds(8, args.seq, 30000))
        diffs = [float(np.max(np.abs(got[o] - reference[8][o]))) for o in OUTPUTS]
        rates = [speed(path, args.threads, feeds(b, args.seq, 30000), args.repeats) for b in (1, 8)]
        ops = op_counts(path, args.threads)
        fused = {op: n for op, n in sorted(ops.items()) if op in (
            "Attention", "SkipLayerNormalization", "LayerNormalization", "BiasGelu", "FastGelu",
            "Gelu", "FusedMatMul", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
            "EmbedLayerNormalization", "QAttention", "MultiHeadAttention")}
        print(f"{name:28s} {diffs[0]:11.2e} {diffs[1]:9.2e} {rates[0]:9.1f} {rates[1]:9.1f}  "
              f"{fused} of {sum(ops.values())} nodes")


if __name__ == "__main__":
    main()
