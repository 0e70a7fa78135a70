"""Where an ALBERT pretraining train step's time goes, per TensorFlow op type (issue 30).

Steps model_speed.py's pretraining step (trained-like random weights, AdamW) under --dtype a
few times, then traces `--steps` steps with `tf.profiler` and sums the ops' durations per op
type from the trace (XLA kernels are `ExecuteAsyncOnStream`). With `--inter_op 1` ops run one
at a time, so the sums add up to the step; TensorFlow's default runs independent ops side by
side, and the sums then exceed it.

    .venv/bin/python benchmarks/train_step_profile.py --dtype float32 --inter_op 1
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.runtime import execution_rules  # before TensorFlow: it sets oneDNN

execution_rules.choose_onednn()

import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402  (no public reader)

from albert_tf.config import AlbertConfig  # noqa: E402
from model_speed import POLICIES, make_inputs, pretraining_step  # noqa: E402


# Executor and XLA-launch events that wrap ops (not ops): left out of the sums.
WRAPPERS = {"Process", "Start", "Execute", "Done"}


def op_times(trace_dir: str, steps: int) -> tuple[collections.Counter, collections.Counter]:
    """(ms per step, calls per step) per op type, from the host plane's TensorFlow op events
    (named `name:Type`)."""
    path = glob.glob(os.path.join(trace_dir, "**", "*.xplane.pb"), recursive=True)[0]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    ms, calls = collections.Counter(), collections.Counter()
    for plane in space.planes:
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = names.get(event.metadata_id, "")
                kind = name.rsplit(":", 1)[-1]
                if ":" in name and kind not in WRAPPERS:
                    ms[kind] += event.duration_ps / 1e9 / steps
                    calls[kind] += 1 / steps
    return ms, calls


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--dtype", choices=sorted(POLICIES), default="float32")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--masked", type=int, default=20)
    parser.add_argument("--steps", type=int, default=3, help="traced steps")
    parser.add_argument("--inter_op", type=int, default=0, help="0: TensorFlow's default")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    if args.inter_op:
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_op)
    config = AlbertConfig.from_preset(args.preset)
    inputs = make_inputs(config, args.batch, args.seq, args.masked)
    x = {k: tf.constant(inputs[k]) for k in (
        "input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")}
    y = {k: tf.constant(inputs[k]) for k in (
        "masked_lm_ids", "masked_lm_weights", "sentence_order_label")}
    step = pretraining_step(config, args.dtype)
    for _ in range(3):
        step(x, y).numpy()
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        step(x, y).numpy()
        walls.append((time.perf_counter() - start) * 1e3)
    with tempfile.TemporaryDirectory() as trace_dir:
        tf.profiler.experimental.start(trace_dir)
        for _ in range(args.steps):
            step(x, y).numpy()
        tf.profiler.experimental.stop()
        ms, calls = op_times(trace_dir, args.steps)
    print(f"{args.preset} {args.dtype} train step, batch {args.batch} × {args.seq}, "
          f"{args.masked} masked; inter-op threads {args.inter_op or 'default'}; "
          f"untraced step {sorted(walls)[1]:.0f} ms (median of 3)")
    print(f"sum of op times {sum(ms.values()):.0f} ms per step")
    print("| op type | ms per step | calls per step |")
    print("|---|---|---|")
    for kind, value in ms.most_common(args.top):
        print(f"| {kind} | {value:.1f} | {calls[kind]:.0f} |")


if __name__ == "__main__":
    main()
