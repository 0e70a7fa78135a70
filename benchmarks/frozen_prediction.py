"""Prediction on frozen weights vs on the variables: `Predictor` runs of N batches, each way
(issue 30; `execution_rules.FROZEN_SPEEDUP` and `FREEZE_STEPS` come from this script).

An ALBERT encoder (trained-like random weights, `albert_peers.randomize_weights`) under the
--dtype's policy predicts a cached batch repeated N times per run, with `freeze_weights`
False, True and None (the package's rule, `execution_rules.freeze_for_prediction`), in
interleaved rounds. A frozen run includes its freezing (trace, conversion, first call): the
freezing's cost is the one-batch run's excess, the steady state the slope between run sizes.

    .venv/bin/python benchmarks/frozen_prediction.py --dtype bfloat16 --batches 1,30,60
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.runtime import execution_rules  # before TensorFlow: it sets oneDNN

execution_rules.choose_onednn()

import tensorflow as tf  # noqa: E402

from albert_peers import randomize_weights  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.finetuning.inference import Predictor  # noqa: E402
from albert_tf.runtime.hardware import cpu_profile  # noqa: E402
from albert_tf.models import INPUT_NAMES, AlbertEncoder  # noqa: E402
from model_speed import POLICIES, _under_policy, make_inputs  # noqa: E402

WAYS = {"variables": False, "frozen": True, "rule": None}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--dtype", choices=sorted(POLICIES), default="bfloat16")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batches", default="1,30", help="batches per run, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    config = AlbertConfig.from_preset(args.preset)
    encoder = _under_policy(POLICIES[args.dtype], lambda: AlbertEncoder(config))
    randomize_weights(encoder)  # trained-like: fresh zeros and ones fold away once frozen
    inputs = make_inputs(config, args.batch, args.seq, masked=1)
    one_batch = {name: tf.constant(inputs[name]) for name in INPUT_NAMES}
    print(f"{args.preset}, {args.dtype}, batch {args.batch} × {args.seq}, CPU profile "
          f"{cpu_profile()}, TF_ENABLE_ONEDNN_OPTS="
          f"{os.environ.get(execution_rules.ONEDNN_ENV, '(unset)')}; median of {args.rounds} "
          "interleaved rounds, ms per run (frozen runs include their freezing)")
    print("| batches a run | variables | frozen | rule (froze?) | frozen vs variables |")
    print("|---|---|---|---|---|")
    per_size = {}
    for size in (int(n) for n in args.batches.split(",")):
        data = tf.data.Dataset.from_tensors(one_batch).repeat(size).cache()
        predictors = {way: Predictor(encoder, outputs=("pooled_output",), jit_compile=False,
                                     log_every=10**9, dtype=args.dtype, freeze_weights=freeze)
                      for way, freeze in WAYS.items()}
        for predictor in predictors.values():  # first runs: traces, the rule's decision
            predictor.run(data)
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        for _ in range(args.rounds):
            for way, predictor in predictors.items():
                start = time.perf_counter()
                predictor.run(data)
                times[way].append((time.perf_counter() - start) * 1e3)
        ms = {way: statistics.median(values) for way, values in times.items()}
        per_size[size] = ms
        froze = predictors["rule"].freeze_weights
        print(f"| {size} | {ms['variables']:.0f} | {ms['frozen']:.0f} | {ms['rule']:.0f} "
              f"({'yes' if froze else 'no'}) | {ms['variables'] / ms['frozen']:.2f}× |")
    sizes = sorted(per_size)
    if len(sizes) >= 2:
        low, high = sizes[0], sizes[-1]
        slope = {way: (per_size[high][way] - per_size[low][way]) / (high - low)
                 for way in ("variables", "frozen")}
        freezing = per_size[low]["frozen"] - low * slope["frozen"]
        print(f"steady state: variables {slope['variables']:.0f} ms a batch, frozen "
              f"{slope['frozen']:.0f} ({slope['variables'] / slope['frozen']:.2f}×); freezing "
              f"≈ {freezing / 1e3:.1f} s = {freezing / slope['variables']:.1f} variable batches")


if __name__ == "__main__":
    main()
