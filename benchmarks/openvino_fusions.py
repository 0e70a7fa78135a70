"""What OpenVINO's CPU plugin makes of our graphs and of Hugging Face's ALBERT ONNX graph (issue 27).

Three graphs of the same seeded albert-base-shaped weights (as benchmarks/serving_speed.py
builds them; nothing downloads):
  * "HF ONNX": torch.onnx.export of transformers' AlbertModel (eager attention), opset 17;
  * "ours IR": our OpenVINO IR, converted from the frozen TF serving graph
    (export_encoder(..., openvino_ir=True));
  * "ours ONNX": our hand-built ONNX graph (albert_tf/export/onnx_graph.py).
Each is compiled for "CPU" with INFERENCE_PRECISION_HINT = --precision (f32, bf16 or both);
the runtime model (`compiled.get_runtime_model()`) tells what the plugin really runs: per node
rt_info "layerType", "runtimePrecision", "outputPrecisions", "originalLayersNames". Printed per
graph: the executed runtime layer types, total and per encoder layer (nodes between the embedding
projection and the pooler FullyConnected, over --layers; nodes computed once at load from
constants, e.g. weight Transposes, are counted apart), the runtime precisions, the Convert and
Reorder nodes, and layer 0's attention and feed-forward sublayers node by node (an MVN, or the
Reduce/Eltwise chain of a LayerNorm the plugin did not match, ends each). On a CPU without bf16
units the bf16 hint runs f32 (printed: "runs float32").

Usage (graphs are cached in --workdir):
    .venv/bin/python benchmarks/openvino_fusions.py --layers 2 --precision f32,bf16
    .venv/bin/python benchmarks/openvino_fusions.py --layers 2 --extra "candidate=/tmp/c.xml"
    .venv/bin/python benchmarks/openvino_fusions.py --graphs "a=/tmp/a.onnx,b=/tmp/b.xml" --nodes
    .venv/bin/python benchmarks/openvino_fusions.py --layers 12 --precision bf16 --profile 5
With --profile N each graph also runs N batch-8 calls with PERF_COUNT: the time per runtime
layer type (each node's best call) shows what the fusions are worth on the CPU at hand.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HF_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
SHOWN_TYPES = ("FullyConnected", "MatMul", "ScaledDotProductAttention", "MHA", "Subgraph",
               "MVN", "RMS", "Reduce", "Eltwise", "Softmax", "Math", "Convert", "Reorder",
               "Reshape", "Transpose", "StridedSlice", "Gather", "Concatenation", "ShapeOf")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="/tmp/albert_openvino_fusions")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--precision", default="f32,bf16", help="comma-separated hints")
    parser.add_argument("--graphs", default="", help="name=path,... instead of building")
    parser.add_argument("--extra", default="", help="name=path,... besides the three")
    parser.add_argument("--nodes", action="store_true", help="list every runtime node")
    parser.add_argument("--profile", type=int, default=0,
                        help="N: also time N batch-8 calls per graph (PERF_COUNT) by layer type")
    return parser.parse_args()


# --- the three graphs (as serving_speed.py's hf_directory / our_exports / onnx_files) ----------

def hf_model(workdir: str, layers: int) -> tuple[str, Any]:
    """An albert-base-v2-shaped AlbertModel with seeded random weights, saved (once)."""
    import torch
    import transformers

    path = os.path.join(workdir, f"hf_albert_base_l{layers}")
    config = transformers.AlbertConfig(
        vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=layers,
        num_attention_heads=12, intermediate_size=3072, hidden_act="gelu_new",
        max_position_embeddings=512, type_vocab_size=2, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, attn_implementation="eager")
    if not os.path.isfile(os.path.join(path, "config.json")):
        torch.manual_seed(0)
        transformers.AlbertModel(config).save_pretrained(path)
    return path, transformers.AlbertModel.from_pretrained(path, attn_implementation="eager").eval()


def build_graphs(workdir: str, layers: int, seq: int) -> dict[str, str]:
    """{name: path} of the HF ONNX file, our OpenVINO IR and our ONNX file (built once)."""
    import torch

    os.makedirs(workdir, exist_ok=True)
    hf_dir, model = hf_model(workdir, layers)
    hf_onnx = hf_dir + ".onnx"
    if not os.path.isfile(hf_onnx):
        ids = torch.ones(1, seq, dtype=torch.long)
        torch.onnx.export(model, (ids, ids, ids * 0), hf_onnx, input_names=list(HF_INPUTS),
                          output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes={n: {0: "batch", 1: "seq"} for n in HF_INPUTS},
                          opset_version=17, dynamo=False)
    ours = hf_dir + "_ours_fp32"
    if not os.path.isdir(ours):
        from albert_tf.export.tfhub import export_encoder
        from albert_tf.model_source import task_config

        export_encoder(task_config(None, None, hf_dir), hf_dir, ours, None, True, False,
                       "float32", None, seq, True, "none")
    return {"HF ONNX": hf_onnx, "ours IR": os.path.join(ours, "openvino", "albert_encoder.xml"),
            "ours ONNX": os.path.join(ours, "onnx", "albert_encoder.onnx")}


# --- the runtime model -----------------------------------------------------------------------

Node = dict[str, Any]


def rt(node: Any, key: str) -> str:
    info = node.get_rt_info()
    return str(info[key].astype(str)) if key in info else ""


def runtime_nodes(path: str, precision: str) -> tuple[list[Node], str]:
    """Every runtime node, in execution order, as {name, type, precision, out, originals,
    constant} (constant: computed once at load from constants only, e.g. weight Transposes),
    and the precision the plugin says it runs."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU",
                                  {"INFERENCE_PRECISION_HINT": precision,
                                   "INFERENCE_NUM_THREADS": 2})
    runs = str(compiled.get_property("INFERENCE_PRECISION_HINT")).replace("<Type: '", "")
    nodes: list[Node] = []
    constant: dict[str, bool] = {}
    for n in compiled.get_runtime_model().get_ordered_ops():
        kind = rt(n, "layerType")
        sources = [n.input_value(i).get_node().get_friendly_name()
                   for i in range(n.get_input_size())]
        constant[n.get_friendly_name()] = kind == "Const" or (
            bool(sources) and all(constant.get(s, False) for s in sources))
        nodes.append({"name": n.get_friendly_name(), "type": kind,
                      "precision": rt(n, "runtimePrecision"), "out": rt(n, "outputPrecisions"),
                      "originals": rt(n, "originalLayersNames"),
                      "constant": constant[n.get_friendly_name()]})
    return nodes, runs.rstrip("'>")


def executed(nodes: list[Node]) -> list[Node]:
    return [n for n in nodes if not n["constant"] and n["type"] not in ("Input", "Output")]


def per_layer(nodes: list[Node], layers: int) -> dict[str, float]:
    """Executed nodes per encoder layer: those after the embedding projection (the first
    FullyConnected) and before the pooler (the last), over the layers; ops done once for all
    layers (the mask bias) are spread over them."""
    run = executed(nodes)
    fcs = [i for i, n in enumerate(run) if n["type"] == "FullyConnected"]
    if len(fcs) < 2:
        return {}
    counts = collections.Counter(n["type"] for n in run[fcs[0] + 1:fcs[-1]])
    return {t: c / layers for t, c in counts.items()}


def is_norm_end(node: Node) -> bool:
    """The node that ends a LayerNorm: an MVN, or the last op of a decomposed one."""
    return node["type"] == "MVN" or bool(re.search(r"(?i)layer_?norm[^,]*/(add_2|add_1)\b",
                                                   node["originals"]))


def sublayers(nodes: list[Node]) -> tuple[list[Node], list[Node]]:
    """Layer 0's attention sublayer (after the embedding projection, through its LayerNorm)
    and its feed-forward sublayer (through the next LayerNorm), executed nodes only."""
    run = executed(nodes)
    fcs = [i for i, n in enumerate(run) if n["type"] == "FullyConnected"]
    ends = [i for i, n in enumerate(run) if is_norm_end(n) and fcs and i > fcs[0]]
    if len(ends) < 2:
        return run[:40], []
    return run[fcs[0] + 1:ends[0] + 1], run[ends[0] + 1:ends[1] + 1]


def strip_scopes(text: str) -> str:
    """Original names without the long per-layer scopes (HF's and ours)."""
    return re.sub(r"/encoder/albert_layer_groups\.0/albert_layers\.0(_\d+)?/|encoder_1/"
                  r"transformer_1/group_0_inner_group_0_", "", text)


def show(name: str, path: str, precision: str, layers: int, every: bool) -> dict[str, Any]:
    nodes, runs = runtime_nodes(path, precision)
    run = executed(nodes)
    counts = collections.Counter(n["type"] for n in run)
    layer = per_layer(nodes, layers)
    folded = collections.Counter(n["type"] for n in nodes if n["constant"] and n["type"] != "Const")
    print(f"\n### {name}, hint {precision} (runs {runs}): {len(run)} executed runtime nodes"
          f" (+ folded at load: {dict(folded) or 'none'})")
    print("| layerType | total | per encoder layer |\n|---|---|---|")
    for kind, total in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {kind} | {total} | {layer.get(kind, 0):.3g} |")
    precisions = collections.Counter(f"{n['type']} {n['precision']}" for n in run)
    print("runtime precisions: " + ", ".join(f"{k} ×{v}" for k, v in sorted(precisions.items())))
    print(f"Convert {counts.get('Convert', 0)}, Reorder {counts.get('Reorder', 0)}: "
          + "; ".join(f"{n['type']} {n['out']} {strip_scopes(n['originals'])[:60] or n['name']}"
                      for n in run if n["type"] in ("Convert", "Reorder")))
    attention, ffn = sublayers(nodes)
    for title, block in (("layer 0 attention sublayer (after the embedding projection)",
                          attention), ("layer 0 feed-forward sublayer", ffn),
                         ("every executed node", run if every else [])):
        if block:
            print(f"  {title}:")
        for n in block:
            print(f"    {n['type']:15s} {n['precision']:5s} "
                  f"{(strip_scopes(n['originals']) or n['name'])[:150]}")
    return {"counts": counts, "per_layer": layer, "runs": runs}


def profile(path: str, precision: str, seq: int, calls: int, batch: int = 8) -> str:
    """ms per runtime layer type (each node's best of `calls` batch-`batch` calls, 2 threads)."""
    import numpy as np
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", {
        "INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": 2,
        "PERFORMANCE_HINT": "LATENCY", "PERF_COUNT": True})
    ids = np.random.default_rng(batch).integers(5, 30000, (batch, seq))
    values = {"ids": ids, "mask": np.ones_like(ids), "type": (np.arange(seq) >= seq // 2
                                                              ) * np.ones_like(ids)}
    feed = {}
    for port in compiled.inputs:
        name = port.get_any_name()
        key = "mask" if "mask" in name else "type" if "type" in name else "ids"
        feed[name] = values[key].astype(port.get_element_type().to_dtype())
    request, best = compiled.create_infer_request(), {}
    for _ in range(calls + 1):  # the first call warms up
        request.infer(feed)
        for info in request.profiling_info:
            ms = info.real_time.total_seconds() * 1e3
            best[info.node_name] = (info.node_type, min(ms, best.get(info.node_name, ("", 1e9))[1]))
    by_type = collections.Counter()
    for kind, ms in best.values():
        by_type[kind] += ms
    return (f"{sum(by_type.values()):.1f} ms per call: "
            + ", ".join(f"{k} {v:.1f}" for k, v in by_type.most_common() if v >= 0.05))


def main() -> None:
    args = parse_args()
    if args.graphs:
        graphs = dict(item.split("=", 1) for item in args.graphs.split(","))
    else:
        graphs = build_graphs(args.workdir, args.layers, args.seq)
    if args.extra:
        graphs.update(item.split("=", 1) for item in args.extra.split(","))
    import openvino as ov

    print(f"OpenVINO {ov.get_version()}; layers {args.layers}, seq {args.seq}")
    summary: dict[tuple[str, str], dict[str, Any]] = {}
    for precision in args.precision.split(","):
        for name, path in graphs.items():
            summary[name, precision] = show(name, path, precision, args.layers, args.nodes)
            if args.profile:
                print(f"profile (batch 8, seq {args.seq}, sum of per-node best of "
                      f"{args.profile}): " + profile(path, precision, args.seq, args.profile))
    kinds = [k for k in SHOWN_TYPES if any(k in s["per_layer"] for s in summary.values())]
    print("\n## per encoder layer\n| graph | hint (runs) | " + " | ".join(kinds) + " |")
    print("|---|---|" + "---|" * len(kinds))
    for (name, precision), s in summary.items():
        print(f"| {name} | {precision} ({s['runs']}) | "
              + " | ".join(f"{s['per_layer'].get(k, 0):.3g}" for k in kinds) + " |")


if __name__ == "__main__":
    main()
