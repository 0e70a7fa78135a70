"""The int8 part of benchmarks/serving_speed.py (`--int8`, issue 42): our calibrated int8 export
against OpenVINO + NNCF int8 on Hugging Face's graph, calibrated on the same sequences.

The peer is what optimum-intel's OVQuantizer runs: `openvino.convert_model(AlbertModel)` then
`nncf.quantize(model, dataset, model_type=TRANSFORMER)`. Ours is the export's
`--int8_calibration_file` artifact (`export_encoder(..., int8_calibration=...)`: NNCF with the
same settings on our OpenVINO IR), loaded by `load_serving(precision="int8")`. Beside them,
for scale: OpenVINO f32/bf16 of our IR, our dynamic-range int8 TFLite file and ONNX file, and
ONNX Runtime's static int8 (QDQ, `quantize_static`) of our ONNX graph calibrated on the same
sequences (benchmarks/ort_static_int8.py, its settings there).

Calibration: `--int8_calibration` sequences (pairs, 40–128 tokens, Zipf-distributed ids as
text has them; the benchmark's model has random weights and no tokenizer); the pooled-output
error vs fp32 (PyTorch fp32, the same weights) is measured on 16 other sequences of 128 tokens.
Timing: `--int8_rounds` interleaved rounds over every (batch, seq) config and candidate, each
figure the best of its rounds (this machine's throughput swings 2x from minute to minute); the
ratios are to the peer's figure of the same config.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

Feed = dict[str, np.ndarray]
INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
HF_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def text_like(count: int, seed: int, vocab: int = 30000, low: int = 40,
              high: int = 128) -> list[Feed]:
    """`count` [1, length] pair sequences: Zipf ids (skipping the special ones), types 0|1."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        length = int(rng.integers(low, high + 1))
        ids = np.minimum(rng.zipf(1.3, length) + 4, vocab - 1).astype(np.int32)
        ids[0], ids[-1] = 2, 3
        types = np.zeros(length, np.int32)
        types[int(rng.integers(length // 3, 2 * length // 3)):] = 1
        samples.append({"input_word_ids": ids[None], "input_mask": np.ones((1, length), np.int32),
                        "input_type_ids": types[None]})
    return samples


def batched(samples: list[Feed], batch: int, seq: int) -> Feed:
    """`batch` rows of `seq` tokens from the samples (cycled, padded with mask 0)."""
    out = {name: np.zeros((batch, seq), np.int32) for name in INPUTS}
    for row in range(batch):
        sample = samples[row % len(samples)]
        n = min(seq, sample["input_word_ids"].shape[1])
        for name in INPUTS:
            out[name][row, :n] = sample[name][0, :n]
    return out


def _hf(feed: Feed) -> dict[str, np.ndarray]:
    return {h: feed[k].astype(np.int64) for h, k in zip(HF_INPUTS, INPUTS)}


def nncf_on_hf(model, calibration: list[Feed], threads: int) -> Callable[[Feed], np.ndarray]:
    """The peer: HF's AlbertModel → OpenVINO → NNCF int8 (TRANSFORMER), compiled as
    optimum-intel does (OpenVINO's default precision for the float ops)."""
    import nncf
    import openvino as ov
    import torch

    example = _hf(calibration[0])
    with torch.no_grad():
        ov_model = ov.convert_model(model, example_input={k: torch.from_numpy(v)
                                                          for k, v in example.items()})
    names = [port.get_any_name() for port in ov_model.inputs]
    dataset = nncf.Dataset(calibration, lambda s: {n: _hf(s)[n] for n in names})
    quantized = nncf.quantize(ov_model, dataset, model_type=nncf.ModelType.TRANSFORMER,
                              subset_size=len(calibration))
    compiled = ov.Core().compile_model(quantized, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                          "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    pooled = next(p for p in compiled.outputs if "pooler_output" in p.get_names()
                  or p.get_index() == 1)

    def run(feed: Feed) -> np.ndarray:
        hf = _hf(feed)
        return np.array(request.infer({n: hf[n] for n in names})[pooled], copy=True)
    return run


def _export_from_hf(workdir: str, hf_dir: str, name: str, **options) -> str:
    """Our encoder export of the HF weights in `hf_dir` by the export code (`export_encoder`
    with `options`), cached in `workdir` under `<hf dir name>_<name>`."""
    from albert_tf.export.tfhub import export_encoder
    from albert_tf.model_source import task_config

    path = os.path.join(workdir, f"{os.path.basename(hf_dir)}_{name}")
    if not os.path.isdir(path):
        export_encoder(task_config(None, None, hf_dir), hf_dir, path, None, True, False,
                       "float32", **options)
    return path


def our_int8_export(workdir: str, hf_dir: str, calibration: list[Feed], seq: int) -> str:
    """Our encoder export with the calibrated int8 IR (and the dynamic int8 TFLite file)."""
    return _export_from_hf(workdir, hf_dir, "ours_int8_static", tflite_quantization="dynamic_int8",
                           tflite_seq_length=seq, openvino_ir=True,
                           int8_calibration=calibration)


def our_onnx_export(workdir: str, hf_dir: str) -> str:
    """Our encoder export with the ONNX files of `--onnx` (float32, the 7-bit dynamic int8 file
    and the full-range one)."""
    return _export_from_hf(workdir, hf_dir, "ours_onnx", onnx_quantization="dynamic_int8")


def _ort_static_int8(workdir: str, hf_dir: str, calibration: list[Feed], threads: int
                     ) -> Callable[[Feed], np.ndarray]:
    """ONNX Runtime static QDQ int8 of our ONNX graph (benchmarks/ort_static_int8.py)."""
    try:
        from benchmarks.ort_static_int8 import ort_runner, qdq_from_hf
    except ImportError:  # benchmarks/ itself on sys.path (the scripts, the tests)
        from ort_static_int8 import ort_runner, qdq_from_hf
    path = qdq_from_hf(workdir, hf_dir, calibration)
    print(f"  ONNX Runtime static int8 → {path}", flush=True)
    return ort_runner(path, threads)


def compare(workdir: str, hf_dir: str, model, threads: int, rounds: int,
            configs: list[tuple[int, int]], calibration_count: int) -> None:
    """Prepares both sides, measures them interleaved and prints the table and ratios."""
    import torch

    from albert_tf.serving import load_serving

    calibration = text_like(calibration_count, seed=0)
    evaluation = text_like(16, seed=1, low=128, high=128)
    start = time.perf_counter()
    ours_path = our_int8_export(workdir, hf_dir, calibration, 128)
    onnx_path = our_onnx_export(workdir, hf_dir)
    ort_qdq = _ort_static_int8(workdir, hf_dir, calibration, threads)
    peer = nncf_on_hf(model, calibration, threads)
    print(f"int8 artifacts ready in {time.perf_counter() - start:.0f} s", flush=True)

    def ours(backend: str, precision: str, path: str = ours_path,
             seq_length: int | None = None) -> Callable[[Feed], np.ndarray]:
        served = load_serving(path, backend, num_threads=threads, precision=precision,
                              seq_length=seq_length)
        print(f"  load_serving({backend!r}, {precision!r}, seq_length={seq_length}) → "
              f"{served.backend} {served.file}", flush=True)
        return lambda feed: served(feed)["pooled_output"]

    candidates: dict[str, Callable[[Feed], np.ndarray]] = {
        "OpenVINO+NNCF int8 on HF's graph (peer)": peer,
        "ours: load_serving(precision='int8') (NNCF static int8 IR)": ours("auto", "int8"),
        "ours: OpenVINO IR f32": ours("openvino", "fp32"),
        "ours: OpenVINO IR bf16": ours("openvino", "bf16"),
        "ours: TFLite dynamic int8": ours("tflite", "int8"),
        # What a user serving up to 128 tokens gets: auto may take the fixed-length file.
        "ours: load_serving(precision='int8', seq_length=128) (auto, 128 tokens)":
            ours("auto", "int8", seq_length=128),
        "ours: ONNX Runtime static int8 (QDQ, MinMax) of our ONNX graph": ort_qdq,
        # The dynamic int8 ONNX file auto serves on AVX2 (export_tfhub --onnx).
        "ours: ONNX Runtime dynamic int8 (--onnx, the file for this CPU)":
            ours("onnxruntime", "int8", path=onnx_path),
    }
    fixed_length = ("TFLite dynamic int8", "(auto, 128 tokens)")
    # Pooled error vs PyTorch fp32, on the held-out sequences (one call each, batch 1).
    errors = {}
    with torch.inference_mode():
        want = [model(**{k: torch.from_numpy(v) for k, v in _hf(s).items()}).pooler_output
                .numpy() for s in evaluation]
    for name, run in candidates.items():
        got = [run(s) for s in evaluation]
        errors[name] = float(np.mean([np.abs(g - w).max() for g, w in zip(got, want)]))
    best: dict[tuple[str, int, int], float] = {}
    feeds = {(b, s): batched(evaluation + calibration, b, s) for b, s in configs}
    for name, run in candidates.items():  # warm-up: one call per config
        for key, feed in feeds.items():
            if not (name.endswith(fixed_length) and key[1] > 128):
                run(feed)
    for round_index in range(rounds):
        for (batch, seq), feed in feeds.items():
            calls = max(1, 8 // batch)
            for name, run in candidates.items():
                if name.endswith(fixed_length) and seq > 128:
                    continue  # its fixed length is 128
                begin = time.perf_counter()
                for _ in range(calls):
                    run(feed)
                rate = batch * calls / (time.perf_counter() - begin)
                best[name, batch, seq] = max(best.get((name, batch, seq), 0.0), rate)
        print(f"  round {round_index + 1}/{rounds} done", flush=True)
    peer_name = next(iter(candidates))
    header = " | ".join(f"b{b} s{s}" for b, s in configs)
    print(f"\n| int8 comparison, seq/s (best of {rounds}) and ratio to the peer | {header} | "
          "mean max abs pooled error vs fp32 |")
    print("|---|" + "---|" * len(configs) + "---|")
    for name in candidates:
        cells = []
        for b, s in configs:
            rate = best.get((name, b, s))
            peer_rate = best[peer_name, b, s]
            cells.append("—" if rate is None else f"{rate:.2f} ({rate / peer_rate:.2f}x)")
        print(f"| {name} | " + " | ".join(cells) + f" | {errors[name]:.4f} |")
    for ours_name in (n for n in candidates if "precision='int8'" in n):
        print(f"\npooled error {ours_name} / peer: {errors[ours_name] / errors[peer_name]:.3f} "
              "(acceptance ≤ 1.05)")
