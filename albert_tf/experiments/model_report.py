"""The released ALBERT sizes' parameter table and a checkpoint round trip in the original
release's format (`python -m albert_tf.model_report` is its command line).

What it shows: the presets build, their parameter counts are the original's (faithfulness §1.3),
and a checkpoint written with the original's TF1 names restores to identical outputs.
"""

from __future__ import annotations

import os
import time

import numpy as np
from absl import logging

from albert_tf.runtime import paths
from albert_tf import PRESET_NAMES, AlbertConfig
from albert_tf import checkpoints
from albert_tf.models import AlbertEncoder, AlbertPretrainer


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


def model_report(output_dir: str, preset: str, all_presets: bool = True) -> None:
    """Prints the parameter table (every preset, or `preset` only) and the round trip of
    `preset` through an original-format checkpoint under `output_dir`; raises ValueError
    when the restored model's outputs differ from the saved one's."""
    paths.makedirs(output_dir)
    start = time.time()
    names = list(PRESET_NAMES) if all_presets else [preset]
    print("Parameter counts (the paper rounds these to 12M/18M/60M/235M; faithfulness §1.3):")
    print(parameter_table(names))
    print(f"\nOriginal-format checkpoint round trip of {preset}:")
    difference = round_trip(preset, output_dir)
    print(f"max |output difference| after restore: {difference:.3g}")
    if difference != 0.0:
        raise ValueError("round trip changed the outputs")
    logging.info("done in %.1fs", time.time() - start)
