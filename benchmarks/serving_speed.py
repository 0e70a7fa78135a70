"""Serving speed: every serving artifact and engine of ours against the CPU runtimes people
would pick instead (issue 21), in one run, on the same weights.

The weights: an albert-base-v2-shaped Hugging Face `AlbertModel` with random weights (seeded),
saved locally; ours is converted from that directory by the export code (`export_encoder`, what
`python -m albert_tf.export_tfhub --checkpoint=<HF dir>` runs), the peers read an ONNX graph
exported from the same HF model by `torch.onnx.export` on eager attention. Nothing downloads.

Ours (albert_tf.serving.load_serving unless noted):
  * SavedModel fp32 / bf16, TensorFlow, TF-Hub `serving_default` (variables, every layer's
    outputs) — the export as it was before the serving graph;
  * serving/ fp32 / bf16 (frozen serving graph), TensorFlow, plain graph and XLA;
  * OpenVINO IR of the serving graph, f32 (and bf16 for the bf16 export);
  * albert_encoder.tflite fp32 and dynamic int8, TFLite interpreter;
  * our ONNX graph (export_tfhub --onnx: onnx_graph.py) fp32 on ONNX Runtime and OpenVINO, and
    its int8 file (ORT-fused, dynamic int8 with 7-bit weights) on ONNX Runtime.
Peers: PyTorch fp32 and bf16 autocast (transformers, eager attention); ONNX Runtime fp32, the
transformer-optimized graph (onnxruntime.transformers optimizer, model_type "bert") and its
dynamic int8 quantization; OpenVINO f32 and bf16 on the ONNX graph.

Every engine gets `--threads` threads (TensorFlow: intra-op pool, set before it starts).
Each candidate runs batch 1 and batch 8 at `--seq` tokens: `--warmup` calls, then `--repeats`
timed calls; the figure is the median. Printed: the CPU's bf16/int8 features, TF's fp32 and bf16
matmul peaks, each candidate's sequences/s with its pooled-output difference from PyTorch fp32
(same weights: the differences show it), and the issue's target ratios. bf16 on a CPU without
bf16 units is still run and flagged "emulated" (OpenVINO then runs f32, which it reports).

`--int8` runs only the int8 comparison of issue 42 (benchmarks/int8_serving.py): our calibrated
int8 export against OpenVINO + NNCF int8 on HF's graph, interleaved rounds over batches 1, 8, 32
and sequence lengths 128, 384, best of each, with the pooled-output error of each.

Usage (artifacts are cached in --workdir between runs):
    TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/serving_speed.py --workdir /tmp/serving_bench
    .venv/bin/python benchmarks/serving_speed.py --layers 2 --repeats 1   # a quick smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

Feed = dict[str, np.ndarray]
INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
HF_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="/tmp/albert_serving_bench")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated name prefixes to run")
    parser.add_argument("--clients", default="1,2,4",
                        help="client threads calling one loaded model at once (the auto choice "
                             "of each precision, batch 1)")
    parser.add_argument("--int8", action="store_true",
                        help="run only the int8 comparison (benchmarks/int8_serving.py): our "
                             "calibrated int8 export vs OpenVINO+NNCF int8 on HF's graph")
    parser.add_argument("--int8_configs", default="1x128,8x128,32x128,1x384,8x384",
                        help="batch x seq configs of --int8")
    parser.add_argument("--int8_rounds", type=int, default=3)
    parser.add_argument("--int8_calibration", type=int, default=131,
                        help="calibration sequences, the same for both sides")
    return parser.parse_args()


ARGS = parse_args()

import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(ARGS.threads)
tf.config.threading.set_inter_op_parallelism_threads(1)

from albert_tf.runtime import hardware  # noqa: E402
from albert_tf.serving import installed, load_serving  # noqa: E402


# --- set-up ------------------------------------------------------------------------------------

def hf_directory(workdir: str, layers: int):
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
    model = transformers.AlbertModel.from_pretrained(path, attn_implementation="eager").eval()
    return path, model


def our_exports(workdir: str, hf_dir: str, seq: int) -> dict[str, str]:
    """fp32 export (serving/, TFLite fp32, OpenVINO IR), bf16 export (serving/, OpenVINO IR) and
    a dynamic-int8 TFLite file, converted from the HF directory by the export code."""
    from albert_tf.export.tfhub import export_encoder
    from albert_tf.model_source import task_config

    config = task_config(None, None, hf_dir)
    base = os.path.basename(hf_dir)
    paths = {"fp32": os.path.join(workdir, f"{base}_ours_fp32"),
             "bf16": os.path.join(workdir, f"{base}_ours_bf16"),
             "int8": os.path.join(workdir, f"{base}_ours_int8")}
    if not os.path.isdir(paths["fp32"]):
        export_encoder(config, hf_dir, paths["fp32"], None, True, False, "float32", "none", seq,
                       installed("openvino"))
    if not os.path.isdir(paths["bf16"]):
        export_encoder(config, hf_dir, paths["bf16"], None, True, False, "bfloat16", None, seq,
                       installed("openvino"))
    if not os.path.isdir(paths["int8"]):  # serving/ + the int8 TFLite file only
        export_encoder(config, hf_dir, paths["int8"], None, True, False, "float32",
                       "dynamic_int8", seq, False)
    return paths


def our_onnx(workdir: str, hf_dir: str) -> str | None:
    """Our ONNX files (what `export_tfhub --onnx` writes into an export) from the HF weights."""
    if not installed("onnxruntime"):
        return None
    from albert_tf import checkpoints
    from albert_tf.export.onnx_artifacts import write_onnx_artifacts
    from albert_tf.model_source import task_config
    from albert_tf.models import AlbertPretrainer

    path = os.path.join(workdir, f"{os.path.basename(hf_dir)}_ours_onnx")
    if not os.path.isdir(path):
        pretrainer = AlbertPretrainer(task_config(None, None, hf_dir))
        checkpoints.warm_start(pretrainer, hf_dir, ("mlm_head", "sop_head"))
        staging = path + ".partial"
        os.makedirs(staging, exist_ok=True)
        write_onnx_artifacts(pretrainer.encoder, staging, "dynamic_int8")
        os.rename(staging, path)
    return path


def onnx_files(workdir: str, hf_dir: str, model, seq: int, layers: int) -> dict[str, str]:
    """The HF model as ONNX (torch.onnx.export, eager attention), ORT-optimized, and int8."""
    import torch

    base = os.path.join(workdir, os.path.basename(hf_dir))
    files = {"fp32": base + ".onnx", "opt": base + "_opt.onnx", "int8": base + "_opt_int8.onnx"}
    if not os.path.isfile(files["fp32"]):
        ids = torch.ones(1, seq, dtype=torch.long)
        torch.onnx.export(model, (ids, ids, ids * 0), files["fp32"], input_names=list(HF_INPUTS),
                          output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes={n: {0: "batch", 1: "seq"} for n in HF_INPUTS},
                          opset_version=17, dynamo=False)
    if installed("onnxruntime") and not os.path.isfile(files["opt"]):
        from onnxruntime.transformers import optimizer

        optimizer.optimize_model(files["fp32"], model_type="bert", num_heads=12,
                                 hidden_size=768).save_model_to_file(files["opt"])
    if installed("onnxruntime") and not os.path.isfile(files["int8"]):
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # The optimizer's fused ops (com.microsoft domain) defeat shape inference: say float.
        quantize_dynamic(files["opt"], files["int8"], weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return files


# --- candidates --------------------------------------------------------------------------------

class Candidate:
    """One artifact on one engine: `make()` loads it, returning a Feed → pooled output call."""

    def __init__(self, name: str, precision: str, ours: bool, make: Callable[[], Callable],
                 note: str = ""):
        self.name, self.precision, self.ours = name, precision, ours
        self.make, self.note = make, note
        self.rates: dict[int, float] = {}
        self.diff: float | None = None
        self.skipped: str | None = None


def _ours(name, kind, path, backend, note="", **kwargs) -> Candidate:
    def make():
        model = load_serving(path, backend, num_threads=ARGS.threads, **kwargs)
        if model.runs:
            candidate.note = f"runs {model.runs}"
        return lambda feed: model(feed)["pooled_output"]
    candidate = Candidate(name, kind, True, make, note)
    return candidate


def _tf_hub_signature(name, precision, path) -> Candidate:
    def make():
        loaded = tf.saved_model.load(path)
        fn = loaded.signatures["serving_default"]
        return lambda feed: fn(**{k: tf.constant(v) for k, v in feed.items()})[
            "pooled_output"].numpy()
    return Candidate(name, precision, True, make, "TF-Hub signature: variables, all layers out")


def _tf_xla(name, precision, path) -> Candidate:
    def make():
        loaded = tf.saved_model.load(os.path.join(path, "serving"))
        signature = loaded.signatures["serving_default"]
        jit = tf.function(lambda **feed: signature(**feed)["pooled_output"], jit_compile=True)
        return lambda feed: jit(**{k: tf.constant(v) for k, v in feed.items()}).numpy()
    return Candidate(name, precision, True, make, "frozen serving graph under XLA")


def _torch(model, bf16: bool) -> Candidate:
    import torch

    torch.set_num_threads(ARGS.threads)

    def make():
        def run(feed):
            args = {hf: torch.from_numpy(feed[k].astype(np.int64))
                    for hf, k in zip(HF_INPUTS, INPUTS)}
            with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=bf16):
                return model(**args).pooler_output.float().numpy()
        return run
    return Candidate(f"PyTorch {'bf16 autocast' if bf16 else 'fp32'}", "bf16" if bf16 else "fp32",
                     False, make)


def _ort(name, precision, path) -> Candidate:
    def make():
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = ARGS.threads, 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]

        def run(feed):
            hf = {h: feed[k].astype(np.int64) for h, k in zip(HF_INPUTS, INPUTS)}
            return session.run(["pooler_output"], {n: hf[n] for n in names})[0]
        return run
    return Candidate(name, precision, False, make)


def _openvino_onnx(precision: str, path: str) -> Candidate:
    def make():
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(core.read_model(path), "CPU", {
            "INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": ARGS.threads,
            "PERFORMANCE_HINT": "LATENCY"})
        candidate.note = f"runs {compiled.get_property('INFERENCE_PRECISION_HINT').to_string()}"
        request = compiled.create_infer_request()

        def run(feed):
            hf = {h: feed[k].astype(np.int64) for h, k in zip(HF_INPUTS, INPUTS)}
            return np.array(request.infer(hf)["pooler_output"])
        return run
    candidate = Candidate(f"OpenVINO {precision} (ONNX)", "bf16" if precision == "bf16" else "fp32",
                          False, make)
    return candidate


def candidates(exports, onnx, model, ours_onnx=None) -> list[Candidate]:
    have_ov, have_ort = installed("openvino"), installed("onnxruntime")
    out = [
        _tf_hub_signature("ours SavedModel fp32, TF (hub signature)", "fp32", exports["fp32"]),
        _ours("ours serving/ fp32, TF", "fp32", exports["fp32"], "tensorflow"),
        _tf_xla("ours serving/ fp32, TF XLA", "fp32", exports["fp32"]),
        _ours("ours TFLite fp32", "fp32", exports["fp32"], "tflite"),
        _tf_hub_signature("ours SavedModel bf16, TF (hub signature)", "bf16", exports["bf16"]),
        _ours("ours serving/ bf16, TF", "bf16", exports["bf16"], "tensorflow"),
        _tf_xla("ours serving/ bf16, TF XLA", "bf16", exports["bf16"]),
        _ours("ours TFLite dynamic int8", "int8", exports["int8"], "tflite"),
    ]
    if have_ov:
        out.insert(3, _ours("ours OpenVINO IR f32", "fp32", exports["fp32"], "openvino"))
        out.insert(8, _ours("ours OpenVINO IR bf16", "bf16", exports["bf16"], "openvino"))
    if ours_onnx:
        out += [_ours("ours ONNX fp32, ORT", "fp32", ours_onnx, "onnxruntime"),
                _ours("ours ONNX dynamic int8, ORT", "int8", ours_onnx, "onnxruntime",
                      precision="int8")]
        vnni = os.path.join(ours_onnx, "onnx", "albert_encoder_int8_vnni.onnx")
        if os.path.isfile(vnni):
            out.append(_ours("ours ONNX int8 full-range (VNNI file), ORT", "int8", vnni,
                             "onnxruntime", note="exact only with VNNI/AMX-INT8"))
        if have_ov:
            out.append(_ours("ours ONNX fp32, OpenVINO", "fp32", ours_onnx, "openvino"))
    out += [_torch(model, False), _torch(model, True)]
    if have_ort:
        out += [_ort("ONNX Runtime fp32", "fp32", onnx["fp32"]),
                _ort("ONNX Runtime optimized fp32", "fp32", onnx["opt"]),
                _ort("ONNX Runtime dynamic int8", "int8", onnx["int8"])]
    if have_ov:
        out += [_openvino_onnx("f32", onnx["fp32"]), _openvino_onnx("bf16", onnx["fp32"])]
    return out


# --- measuring ---------------------------------------------------------------------------------

def feed(batch: int, seq: int, vocab: int = 30000) -> Feed:
    rng = np.random.default_rng(batch)
    ids = rng.integers(5, vocab, (batch, seq)).astype(np.int32)
    types = np.zeros_like(ids)
    types[:, seq // 2:] = 1
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": types}


def matmul_peak(dtype: tf.DType, size: int = 1024, repeats: int = 5) -> float:
    """Best GFLOP/s of a size×size matmul in a tf.function."""
    a = tf.random.normal([size, size], dtype=tf.float32)
    a = tf.cast(a, dtype)
    fn = tf.function(lambda x: tf.matmul(x, x))
    fn(a).numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(a).numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


def load(candidate: Candidate) -> Callable | None:
    """The candidate's call, or None with `skipped` set when its engine cannot load it."""
    try:
        return candidate.make()
    except Exception as error:  # an engine that cannot load this graph: report, go on
        candidate.skipped = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:120]}"
        print(f"  {candidate.name}: skipped ({candidate.skipped})", flush=True)
        return None


def measure(loaded: list[tuple[Candidate, Callable]], batches: list[int],
            reference: np.ndarray | None) -> None:
    """Per batch: each candidate's warm-up calls, then `--repeats` rounds in which every
    candidate runs once in turn (load from other processes then hits all of them alike)."""
    for batch in batches:
        inputs = feed(batch, ARGS.seq)
        times: dict[str, list[float]] = {c.name: [] for c, _ in loaded}
        for candidate, run in loaded:
            for _ in range(ARGS.warmup):
                out = run(inputs)
            if batch == 1 and reference is not None:
                candidate.diff = float(np.abs(np.asarray(out, np.float32) - reference).max())
        for _ in range(ARGS.repeats):
            for candidate, run in loaded:
                start = time.perf_counter()
                run(inputs)
                times[candidate.name].append(time.perf_counter() - start)
        for candidate, _ in loaded:
            median = statistics.median(times[candidate.name])
            candidate.rates[batch] = batch / median
            print(f"  {candidate.name:45s} batch {batch}: {candidate.rates[batch]:7.2f} seq/s "
                  f"(median of {ARGS.repeats}: {1000 * median:.0f} ms)", flush=True)


def report(found: list[Candidate], batches: list[int], peaks: dict[str, float],
           emulated: bool, flops_per_seq: float) -> None:
    print("\n| candidate | precision | " + " | ".join(f"batch {b} seq/s" for b in batches)
          + " | max abs pooled diff vs PyTorch fp32 (batch 1) | note |")
    print("|---|---|" + "---|" * len(batches) + "---|---|")
    for c in found:
        if c.skipped:
            print(f"| {c.name} | {c.precision} | " + " | ".join("—" for _ in batches)
                  + f" | — | skipped: {c.skipped} |")
            continue
        note = c.note + (" (bf16 emulated: no bf16 units)" if emulated and c.precision == "bf16"
                         else "")
        diff = "—" if c.diff is None else f"{c.diff:.2g}"
        print(f"| {c.name} | {c.precision} | "
              + " | ".join(f"{c.rates.get(b, float('nan')):.2f}" for b in batches)
              + f" | {diff} | {note} |")
    print("\nRatios (ours' best / peers' best of the same precision; target ≥ 1.0):")
    for precision in ("fp32", "bf16", "int8"):
        for batch in batches:
            ours = [c for c in found if c.ours and c.precision == precision and batch in c.rates]
            peers = [c for c in found if not c.ours and c.precision == precision
                     and batch in c.rates]
            if ours and peers:
                best = max(ours, key=lambda c: c.rates[batch])
                peer = max(peers, key=lambda c: c.rates[batch])
                print(f"  {precision} batch {batch}: {best.rates[batch] / peer.rates[batch]:.2f}x"
                      f"  ({best.name} {best.rates[batch]:.2f} vs {peer.name} "
                      f"{peer.rates[batch]:.2f})")
    for batch in batches:
        ours = [c for c in found if c.ours and batch in c.rates]
        peers = [c for c in found if not c.ours and batch in c.rates]
        if ours and peers:
            best = max(ours, key=lambda c: c.rates[batch])
            peer = max(peers, key=lambda c: c.rates[batch])
            print(f"  overall batch {batch}: {best.rates[batch] / peer.rates[batch]:.2f}x  "
                  f"({best.name} vs {peer.name})")
    int8 = [c for c in found if c.precision == "int8" and c.diff is not None]
    if int8:
        print("  int8 pooled-output error vs PyTorch fp32 (batch 1): " + ", ".join(
            f"{c.name} {c.diff:.3g}" for c in sorted(int8, key=lambda c: c.diff)))
    bf16 = [c for c in found if c.ours and c.precision == "bf16" and 8 in c.rates]
    if bf16:
        best = max(bf16, key=lambda c: c.rates[8])
        share = best.rates[8] * flops_per_seq / 1e9 / peaks["bf16"]
        print(f"  bf16 batch 8: {100 * share:.0f}% of the bf16 matmul peak ({best.name}; target "
              f"≥ 60%{'; not meaningful: bf16 is emulated on this CPU' if emulated else ''})")


def clients(exports: dict[str, str], ours_onnx: str | None) -> None:
    """Throughput of one loaded model called by N client threads at once (a thread-pool server),
    batch 1: `backend="auto"` of each precision, each thread `--repeats` × 2 calls."""
    import threading

    counts = [int(n) for n in ARGS.clients.split(",")]
    paths = {"fp32": exports["fp32"], "bf16": exports["bf16"], "int8": ours_onnx}
    inputs = feed(1, ARGS.seq)
    print(f"\nClient threads calling one load_serving model (batch 1, {ARGS.threads} engine "
          "threads), seq/s:")
    for precision, path in paths.items():
        if path is None:
            continue
        model = load_serving(path, precision=precision, num_threads=ARGS.threads, batch_size=1)
        model(inputs)
        rates = []
        for count in counts:
            calls = ARGS.repeats * 2

            def client() -> None:
                for _ in range(calls):
                    model(inputs)

            threads = [threading.Thread(target=client) for _ in range(count)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            rates.append(count * calls / (time.perf_counter() - start))
        print(f"  {precision} ({model.backend}): " + ", ".join(
            f"{n} client(s) {r:.2f} ({r / rates[0]:.2f}x)" for n, r in zip(counts, rates)))


def main() -> None:
    os.makedirs(ARGS.workdir, exist_ok=True)
    batches = [int(b) for b in ARGS.batches.split(",")]
    emulated = not hardware.has_bf16_units()
    print(hardware.describe_cpu())
    print(f"threads {ARGS.threads}, seq {ARGS.seq}, layers {ARGS.layers}, warmup {ARGS.warmup}, "
          f"repeats {ARGS.repeats}")
    peaks = {"fp32": matmul_peak(tf.float32), "bf16": matmul_peak(tf.bfloat16)}
    print(f"matmul peak (TF, 1024², {ARGS.threads} threads): fp32 {peaks['fp32']:.0f} GFLOP/s, "
          f"bf16 {peaks['bf16']:.0f} GFLOP/s{' (emulated)' if emulated else ''}")
    hidden, inter, seq = 768, 3072, ARGS.seq
    flops_per_seq = ARGS.layers * 2 * seq * (4 * hidden * hidden + 2 * hidden * inter
                                             + 2 * seq * hidden) + 2 * seq * 128 * hidden
    start = time.perf_counter()
    hf_dir, model = hf_directory(ARGS.workdir, ARGS.layers)
    if ARGS.int8:
        from benchmarks.int8_serving import compare

        configs = [tuple(int(v) for v in c.split("x")) for c in ARGS.int8_configs.split(",")]
        compare(ARGS.workdir, hf_dir, model, ARGS.threads, ARGS.int8_rounds, configs,
                ARGS.int8_calibration)
        return
    exports = our_exports(ARGS.workdir, hf_dir, seq)
    onnx = onnx_files(ARGS.workdir, hf_dir, model, seq, ARGS.layers)
    ours_onnx = our_onnx(ARGS.workdir, hf_dir)
    print(f"artifacts ready in {time.perf_counter() - start:.0f} s ({ARGS.workdir})", flush=True)
    import torch

    with torch.inference_mode():
        one = feed(1, seq)
        reference = model(**{h: torch.from_numpy(one[k].astype(np.int64))
                             for h, k in zip(HF_INPUTS, INPUTS)}).pooler_output.numpy()
    found = candidates(exports, onnx, model, ours_onnx)
    if ARGS.only:
        prefixes = tuple(p.strip() for p in ARGS.only.split(","))
        found = [c for c in found if c.name.startswith(prefixes)]
    loaded = [(c, run) for c in found if (run := load(c)) is not None]
    measure(loaded, batches, reference)
    report(found, batches, peaks, emulated, flops_per_seq)
    if ARGS.clients:
        clients(exports, ours_onnx)


if __name__ == "__main__":
    main()
