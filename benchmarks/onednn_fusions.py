"""Which ops TensorFlow's Grappler + oneDNN make of an ALBERT train step and serving graph (issue 30).

With TF_ENABLE_ONEDNN_OPTS=1 Grappler's remapper fuses MatMul + BiasAdd (+ activation) into
`_FusedMatMul`, BatchMatMul + Mul + Add into `_FusedBatchMatMulV2`, the LayerNorm subgraph
into `_MklLayerNorm`, and the oneDNN layout pass renames what it takes (`_MklNativeFusedMatMul`,
`_MklSoftmax`, ...). Which fusions happen depends on how a layer writes its math, so this
counts, after one call, what the optimized graphs hold: every op kind (fused ones keyed with
their `fused_ops`, e.g. `_MklNativeFusedMatMul[BiasAdd,GeluApproximate]`), over the whole graph
and per encoder layer (the ops under the `transformer` scope / num_hidden_layers: ALBERT calls
one shared block L times). Graphs: (a) a train step, AlbertPretrainer forward + backward of
sum(mlm_logits²) + sum(sop_logits²) under tf.GradientTape (no optimizer: its ops are not the
question); (b) the frozen serving graph (export.serving_graph.frozen_serving_function).

The weights are drawn at random first: freezing turns them into constants, and Grappler folds
`x + 0` and `x · 1` away, so a fresh model's zero biases and unit LayerNorm scales would hide
exactly the BiasAdds a fusion needs.

Reading the graphs: `context.enable_graph_collection()` *before the first call* (the graphs are
collected when the function is instantiated, not on later calls), then
`context.context().export_run_metadata().partition_graphs`: the GraphDefs as they run, after
Grappler and the oneDNN layout pass.

TF_ENABLE_ONEDNN_OPTS must be set before TensorFlow is imported: the script re-executes itself
with it when it is not "1". Works on any x86 CPU (AMD too). bfloat16 ops are oneDNN's only on
CPUs with AVX512F or AVX-NE-CONVERT (TensorFlow's `IsDataTypeSupportedByOneDNNOnThisCPU`);
elsewhere the bf16 matmuls stay Eigen ops and nothing bf16 fuses.

Usage:
    .venv/bin/python benchmarks/onednn_fusions.py --layers 2 --what both --dtype float32
    .venv/bin/python benchmarks/onednn_fusions.py --layers 12 --hidden 768 --dtype bfloat16 --json
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import sys
from typing import Any, Callable, Iterable

ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WHATS = ("train", "serving")
# --dtype → the Keras dtype policy the models are built with: export_tfhub --dtype's table.
from albert_tf.export.choices import EXPORT_DTYPE_POLICIES as POLICIES  # noqa: E402  (no TF)
# Node-name component of the shared encoder block (SharedTransformerStack, name="transformer";
# Keras adds "_<n>" suffixes). Gradient nodes keep the forward op's scope under gradient_tape/.
LAYER_SCOPE = re.compile(r"(^|/)transformer(_\d+)?/")
# Graph plumbing, not computation: left out of the counts.
PLUMBING = frozenset({"Const", "_Arg", "_Retval", "NoOp", "Identity", "_HostConst"})

CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
XLA_FUNCTION = re.compile(r"^__inference_(.+)_\d+$")  # a traced tf.function's name

# Shown first, in this order, when present (the rest follow by count).
FUSED_PREFIXES = ("_MklNativeFused", "_MklFused", "_Fused", "_MklLayerNorm", "_MklFusedMish",
                  "XLA[")
ELEMENTWISE = ("AddV2", "Add", "Mul", "Sub", "RealDiv", "Neg", "Square", "SquaredDifference",
               "Tanh", "Pow", "Rsqrt", "Sqrt", "Erf", "Mean", "Sum", "Softmax", "_MklSoftmax",
               "BiasAdd", "BiasAddGrad", "MatMul", "_MklMatMul", "BatchMatMulV2",
               "_MklBatchMatMulV2", "TanhGrad", "SoftmaxGrad", "RsqrtGrad", "Cast")


@dataclasses.dataclass
class FusionCounts:
    """Op counts of one optimized graph: `total` over it, `layer` per encoder layer."""

    total: dict[str, int]
    layer: dict[str, float]
    num_layers: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def op_key(node) -> str:
    """The op type, with its fused_ops when it has them: `_MklNativeFusedMatMul[BiasAdd,Relu]`;
    a call of an XLA-compiled function as `XLA[<function>]` (the fused LayerNorm and GELU
    gradients of albert_tf.layers.fused_gradients)."""
    if node.op in CALLS and "_XlaMustCompile" in node.attr and node.attr["_XlaMustCompile"].b:
        function = XLA_FUNCTION.sub(r"\1", node.attr["f"].func.name)
        return f"XLA[{function}]"
    if "fused_ops" in node.attr and node.attr["fused_ops"].list.s:
        fused = ",".join(s.decode() for s in node.attr["fused_ops"].list.s)
        return f"{node.op}[{fused}]"
    return node.op


def count_graphs(graph_defs: Iterable[Any], num_layers: int) -> FusionCounts:
    """Counts the ops of `graph_defs` (their function libraries too) by `op_key`."""
    total: collections.Counter[str] = collections.Counter()
    layer: collections.Counter[str] = collections.Counter()

    def visit(nodes) -> None:
        for node in nodes:
            if node.op in PLUMBING:
                continue
            key = op_key(node)
            total[key] += 1
            if LAYER_SCOPE.search(node.name):
                layer[key] += 1

    for graph_def in graph_defs:
        visit(graph_def.node)
        for function in graph_def.library.function:
            visit(function.node_def)
    per_layer = {k: (v // num_layers if v % num_layers == 0 else v / num_layers)
                 for k, v in layer.items()}
    return FusionCounts(dict(total), per_layer, num_layers)


def optimized_graphs(fn: Callable, *args, **kwargs) -> list[Any]:
    """The partition GraphDefs (after Grappler and the oneDNN layout pass) of `fn`'s first call."""
    from tensorflow.python.eager import context  # no public equivalent

    context.enable_graph_collection()
    try:
        fn(*args, **kwargs)
        graphs = list(context.context().export_run_metadata().partition_graphs)
    finally:
        context.disable_graph_collection()
    if not graphs:
        raise RuntimeError("no graphs collected: was the function already called once?")
    return graphs


def example_inputs(config, batch: int, seq: int, num_masked: int) -> dict[str, Any]:
    """Pretrainer inputs, the last quarter of each row but the first padded."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(5, config.vocab_size, (batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1:, seq - seq // 4:] = 0
    types = np.zeros((batch, seq), np.int32)
    types[:, seq // 2:] = 1
    positions = np.stack([rng.choice(seq - seq // 4, num_masked, replace=False)
                          for _ in range(batch)]).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types,
            "masked_lm_positions": positions}


def train_step_graphs(config, inputs: dict[str, Any], dtype: str = "float32") -> list[Any]:
    """Optimized graphs of one AlbertPretrainer forward + backward (no optimizer), the model
    built with the Keras dtype policy `dtype`."""
    import tensorflow as tf

    from albert_peers import randomize_weights
    from albert_tf.models import AlbertPretrainer

    pretrainer = AlbertPretrainer(config, dtype=dtype)
    randomize_weights(pretrainer)

    @tf.function
    def train_step(features):
        with tf.GradientTape() as tape:
            out = pretrainer(features, training=True)
            loss = (tf.reduce_sum(tf.square(out["mlm_logits"]))
                    + tf.reduce_sum(tf.square(out["sop_logits"])))
        return tape.gradient(loss, pretrainer.trainable_variables)

    return optimized_graphs(train_step, {k: tf.constant(v) for k, v in inputs.items()})


def serving_graphs(config, inputs: dict[str, Any], dtype: str = "float32") -> list[Any]:
    """Optimized graphs of the frozen serving function of an AlbertEncoder built with the
    Keras dtype policy `dtype`."""
    import tensorflow as tf

    from albert_peers import randomize_weights
    from albert_tf.export.serving_graph import frozen_serving_function
    from albert_tf.models import AlbertEncoder
    from albert_tf.models.encoder import INPUT_NAMES

    encoder = AlbertEncoder(config, dtype=dtype)
    randomize_weights(encoder)
    serve = frozen_serving_function(encoder)
    return optimized_graphs(serve, **{k: tf.constant(inputs[k]) for k in INPUT_NAMES})


GRAPHS = {"train": train_step_graphs, "serving": serving_graphs}


def measure(config, whats: Iterable[str] = WHATS, dtypes: Iterable[str] = ("float32",),
            batch: int = 2, seq: int = 16, num_masked: int = 4) -> dict[str, FusionCounts]:
    """{"<what>/<dtype>": FusionCounts} for each graph and dtype. Needs TF_ENABLE_ONEDNN_OPTS=1
    in the environment before TensorFlow is imported."""
    if os.environ.get(ONEDNN_ENV) != "1":
        raise RuntimeError(f"set {ONEDNN_ENV}=1 before TensorFlow is imported")
    inputs = example_inputs(config, batch, seq, num_masked)
    results = {}
    for dtype in dtypes:
        for what in whats:
            graphs = GRAPHS[what](config, inputs, POLICIES[dtype])
            results[f"{what}/{dtype}"] = count_graphs(graphs, config.num_hidden_layers)
    return results


def onednn_bf16_on_this_cpu() -> bool:
    """Whether TensorFlow gives bfloat16 ops to oneDNN here (else they stay Eigen ops)."""
    from albert_tf.runtime.hardware import onednn_runs_bf16

    return onednn_runs_bf16()


# --- printing -------------------------------------------------------------------------------

def _order(key: str) -> tuple[int, str]:
    op = key.split("[")[0]
    if op.startswith(FUSED_PREFIXES):
        return (0, key)
    if op in ELEMENTWISE:
        return (1, f"{ELEMENTWISE.index(op):03d}{key}")
    return (2, key)


def format_table(results: dict[str, FusionCounts]) -> str:
    """One row per op kind, per graph two columns: whole graph and per encoder layer."""
    names = list(results)
    keys = sorted({k for r in results.values() for k in r.total}, key=_order)
    width = max([len(k) for k in keys] + [10])
    head = f"{'op':<{width}}" + "".join(f"  {n:>22}" for n in names)
    sub = f"{'':<{width}}" + "".join(f"  {'graph':>10} {'per layer':>11}" for _ in names)
    lines = [head, sub]
    section = None
    for key in keys:
        group = _order(key)[0]
        if group != section:
            section = group
            lines.append(("-- fused", "-- element-wise, matmuls, casts", "-- other")[group])
        cells = []
        for name in names:
            total = results[name].total.get(key, 0)
            per_layer = results[name].layer.get(key, 0)
            per_layer_text = f"{per_layer:.3g}" if per_layer else "."
            cells.append(f"  {total or '.':>10} {per_layer_text:>11}")
        lines.append(f"{key:<{width}}" + "".join(cells))
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=2, help="num_hidden_layers (one shared block)")
    parser.add_argument("--hidden", type=int, default=768, help="hidden size (heads = H/64, I = 4H)")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--dtype", default="float32", help="float32, bfloat16 (mixed_bfloat16 "
                        "Keras policy) or both, comma-separated")
    parser.add_argument("--what", choices=(*WHATS, "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    args.dtypes = tuple(d for d in args.dtype.split(",") if d)
    for dtype in args.dtypes:
        if dtype not in POLICIES:
            parser.error(f"--dtype {dtype!r}: expected {' or '.join(POLICIES)}")
    return args


def main(argv=None) -> None:
    if os.environ.get(ONEDNN_ENV) != "1":  # must be set before TensorFlow is imported
        env = dict(os.environ, **{ONEDNN_ENV: "1"})
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)
    args = parse_args(argv)
    from albert_tf import AlbertConfig

    values = AlbertConfig.from_preset("albert_base_v2").to_dict()
    values.update(hidden_size=args.hidden, num_hidden_layers=args.layers,
                  num_attention_heads=max(1, args.hidden // 64), intermediate_size=4 * args.hidden)
    config = AlbertConfig.from_dict(values)
    whats = WHATS if args.what == "both" else (args.what,)
    results = measure(config, whats, args.dtypes, args.batch, args.seq,
                      num_masked=max(1, args.seq * 20 // 128))
    if args.json:
        print(json.dumps({k: v.to_dict() for k, v in results.items()}, indent=1, sort_keys=True))
        return
    print(f"{ONEDNN_ENV}=1, L={args.layers} (one shared block) H={args.hidden} seq={args.seq} "
          f"batch={args.batch}; bfloat16 ops on oneDNN here: {onednn_bf16_on_this_cpu()}")
    print(format_table(results))


if __name__ == "__main__":
    main()
