"""The peer's ALBERT pretraining train step on a GPU: HF transformers (PyTorch), fp32, TF32 and
bf16 autocast, eager and torch.compile, against the GPU's matmul peaks measured in the same
run, with MFU.

Written for a GPU machine that has PyTorch and transformers but no TensorFlow (the device
machine lent to some of this project's tasks: TensorFlow's 600 MB wheel cannot be carried
there), so it imports neither TensorFlow nor Keras; `model_speed.py` measures ours beside the
same peer on a CPU. The work is `model_speed.py`'s: AlbertForPreTraining with the MLM head on
the masked positions only plus SOP (`albert_peers.pretraining_loss`), torch AdamW, FLOPs from
`albert_peers.albert_flops` (matmuls only, train step = 3 × forward).

MFU is the train step's FLOP/s over (a) the dtype's dense matmul peak measured here (an
8192³ product) and (b) the vendor's dense figure (`--spec_tflops`, H100 SXM by default).

Usage (on the GPU machine, from the repository root):
    python3 benchmarks/gpu_train_step.py --batches 8,64 --json $OUT/gpu_train_step.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Callable

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
from albert_peers import albert_flops, hf_albert_config, pretraining_loss  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402

# Dense (no sparsity) TFLOP/s of an H100 SXM5 (NVIDIA's datasheet): what MFU is usually quoted
# against. "float32" is the CUDA-core peak; "tf32" and "bfloat16" the tensor cores'.
H100_SXM_SPEC = {"float32": 67.0, "tf32": 494.7, "bfloat16": 989.4}
# Precision name → (torch matmul precision setting, autocast dtype or None).
DEVICE = "cuda"  # --device cpu: a smoke run where there is no GPU
PRECISIONS = {"float32": ("highest", None), "tf32": ("high", None), "bfloat16": ("highest", "bf16")}


def timed(step: Callable[[], object], iters: int, warmup: int) -> tuple[float, float]:
    """(first call s, median s per step) of `step`, synchronising the GPU around each call."""
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    start = time.perf_counter()
    step()
    sync()
    first = time.perf_counter() - start
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(iters):
        sync()
        start = time.perf_counter()
        step()
        sync()
        samples.append(time.perf_counter() - start)
    return first, statistics.median(samples)


def matmul_peak(precision: str, size: int, iters: int) -> float:
    """TFLOP/s of a size³ matmul at `precision` (bf16 operands for bfloat16)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
    a = torch.randn(size, size, device=DEVICE, dtype=dtype)
    b = torch.randn(size, size, device=DEVICE, dtype=dtype)
    _, seconds = timed(lambda: torch.mm(a, b), iters, 3)
    return 2 * size**3 / seconds / 1e12


def example_inputs(config: AlbertConfig, batch: int, seq: int, masked: int) -> dict:
    """Random token ids, a quarter of the rows padded at the end, masked positions and labels."""
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, config.vocab_size, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1:, seq - seq // 4:] = 0
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2:] = 1
    positions = torch.stack([torch.randperm(seq - seq // 4, generator=g)[:masked]
                             for _ in range(batch)])
    t = dict(masked_lm_positions=positions,
             masked_lm_ids=torch.randint(5, config.vocab_size, (batch, masked), generator=g),
             masked_lm_weights=torch.ones(batch, masked),
             sentence_order_label=torch.randint(0, 2, (batch,), generator=g))
    t = {k: v.to(DEVICE) for k, v in t.items()}
    enc_in = dict(input_ids=ids.to(DEVICE), attention_mask=mask.to(DEVICE),
                  token_type_ids=types.to(DEVICE))
    return {"enc_in": enc_in, "t": t}


def train_step_fn(config: AlbertConfig, inputs: dict, precision: str, compiled: bool):
    """One AdamW step of HF's AlbertForPreTraining at `precision`, eager or torch.compile'd."""
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.AlbertForPreTraining(hf_albert_config(config)).to(DEVICE).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01, fused=DEVICE == "cuda")
    autocast = PRECISIONS[precision][1] is not None
    enc_in, t = inputs["enc_in"], inputs["t"]

    def loss_fn():
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=autocast):
            return pretraining_loss(model, enc_in, t["masked_lm_positions"], t)

    forward = torch.compile(loss_fn) if compiled else loss_fn

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        optimizer.step()
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--batches", default="8,64", help="comma-separated batch sizes")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--masked", type=int, default=20)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--precisions", default="float32,tf32,bfloat16")
    parser.add_argument("--compile_batches", default="64",
                        help="batch sizes also measured under torch.compile")
    parser.add_argument("--matmul_size", type=int, default=8192)
    parser.add_argument("--json", default="", help="also write the figures here")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device

    import torch
    import transformers

    config = AlbertConfig.from_preset(args.preset)
    gpu = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU (smoke run)"
    print(f"{args.preset}: seq {args.seq}, {args.masked} masked; {gpu}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}", flush=True)
    precisions = args.precisions.split(",")
    peaks = {p: matmul_peak(p, args.matmul_size, 10) for p in precisions}
    for p, tflops in peaks.items():
        print(f"matmul {args.matmul_size}³ {p}: {tflops:.1f} TFLOP/s "
              f"(spec {H100_SXM_SPEC[p]:.0f})", flush=True)
    compile_batches = {int(b) for b in args.compile_batches.split(",") if b}
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        inputs = example_inputs(config, batch, args.seq, args.masked)
        flops = albert_flops(config, batch, args.seq, args.masked)["train_step"]
        for precision in precisions:
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            torch.backends.cudnn.allow_tf32 = precision == "tf32"
            for compiled in ((False, True) if batch in compile_batches else (False,)):
                step = train_step_fn(config, inputs, precision, compiled)
                first, seconds = timed(step, args.iters, args.warmup)
                tflops = flops / seconds / 1e12
                row = dict(batch=batch, precision=precision, compiled=compiled,
                           ms=seconds * 1e3, seq_per_s=batch / seconds, tflops=tflops,
                           mfu_measured=tflops / peaks[precision],
                           mfu_spec=tflops / H100_SXM_SPEC[precision], first_call_s=first)
                rows.append(row)
                print(f"batch {batch:3d} {precision:8s} {'compile' if compiled else 'eager  '} "
                      f"{row['ms']:8.2f} ms {row['seq_per_s']:8.1f} seq/s {tflops:7.2f} TFLOP/s "
                      f"MFU {row['mfu_measured']:.1%} of measured, {row['mfu_spec']:.1%} of spec "
                      f"(first call {first:.1f} s)", flush=True)
                del step
                if DEVICE == "cuda":
                    torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(gpu=gpu, torch=torch.__version__, transformers=transformers.__version__,
                           peaks_tflops=peaks, spec_tflops=H100_SXM_SPEC, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
