"""Builds the released ALBERT sizes, prints their parameter table, and round-trips a
checkpoint in the original release's format.

    python -m albert_tf.model_report --output_dir=/tmp/albert_report [--preset=albert_base_v2]

What it shows: the presets build, their parameter counts are the original's (faithfulness §1.3),
and a checkpoint written with the original's TF1 names restores to identical outputs.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os
import time

import numpy as np
from absl import app, flags, logging

from albert_tf import cli
from albert_tf import PRESET_NAMES, AlbertConfig
from albert_tf import checkpoints
from albert_tf.models import AlbertEncoder, AlbertPretrainer

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where the original-format checkpoint is written.")
flags.DEFINE_enum("preset", "albert_base_v2", PRESET_NAMES, "Preset used for the checkpoint round trip.")
flags.DEFINE_boolean("all_presets", True, "Build every preset for the parameter table.")
flags.mark_flag_as_required("output_dir")


def parameter_table(names: list[str]) -> str:
    """Markdown table of backbone and pretraining parameter counts per preset."""
    rows = ["| preset | L | H | E | backbone params | + MLM/SOP heads |", "|---|---|---|---|---|---|"]
    for name in names:
        config = AlbertConfig.from_preset(name)
        pretrainer = AlbertPretrainer(config)
        rows.append(f"| {name} | {config.num_hidden_layers} | {config.hidden_size} | "
                    f"{config.embedding_size} | {pretrainer.encoder.count_params():,} | "
                    f"{pretrainer.count_params():,} |")
        del pretrainer
    return "\n".join(rows)


def round_trip(preset: str, output_dir: str) -> float:
    """Writes `preset` (random init) as an original checkpoint, restores it, compares outputs."""
    config = AlbertConfig.from_preset(preset)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, config.vocab_size, (2, 128)).astype("int32")
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids),
              "masked_lm_positions": rng.integers(1, 127, (2, 20)).astype("int32")}
    source = AlbertPretrainer(config)
    expected = source(inputs)
    path = checkpoints.save_original_checkpoint(source, os.path.join(output_dir, "model.ckpt"),
                                                global_step=0)
    config.to_json_file(os.path.join(output_dir, "albert_config.json"))
    print(f"wrote {path} (kind: {checkpoints.checkpoint_kind(path)})")
    target = AlbertPretrainer(AlbertConfig.from_json_file(os.path.join(output_dir, "albert_config.json")))
    target(inputs)
    report = checkpoints.load_original_checkpoint(target, path)
    print(report.summary())
    got = target(inputs)
    encoder = AlbertEncoder(config)
    encoder({k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    print(checkpoints.load_original_checkpoint(encoder, path).summary())
    return max(float(np.abs(np.asarray(got[k]) - np.asarray(expected[k])).max()) for k in got)


def main(argv: list[str]) -> None:
    del argv
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    start = time.time()
    names = list(PRESET_NAMES) if FLAGS.all_presets else [FLAGS.preset]
    print("Parameter counts (the paper rounds these to 12M/18M/60M/235M; faithfulness §1.3):")
    print(parameter_table(names))
    print(f"\nOriginal-format checkpoint round trip of {FLAGS.preset}:")
    difference = round_trip(FLAGS.preset, FLAGS.output_dir)
    print(f"max |output difference| after restore: {difference:.3g}")
    if difference != 0.0:
        raise SystemExit("round trip changed the outputs")
    logging.info("done in %.1fs", time.time() - start)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("model_report"))
