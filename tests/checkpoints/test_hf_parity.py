"""Hugging Face checkpoints both ways, every head, against transformers' PyTorch outputs.

For each config shape of tests/models/test_hf_parity.py and each HF head class: an HF model
with random weights, saved by `save_pretrained`, loads into ours with outputs within 1e-5 of
HF's (padding included). Then (every head at E = H, where the projection is HF's own, and
the pretraining heads with groups and inner blocks) our model with fresh random weights,
written by `save_hf_checkpoint`, loads into the HF class with no missing or unexpected
weights and gives our outputs.
"""

import numpy as np
import pytest

from albert_tf import checkpoints
from albert_tf.checkpoints.hf_config import config_from_hf
from albert_tf.models import (AlbertClassifier, AlbertMultipleChoice, AlbertPretrainer,
                              AlbertSpanLabeler)
from tests.checkpoints.hf_models import (HEAD_CLASSES, NUM_LABELS, hf_config, save_heads, torch,
                                         torch_feed, transformers)
from tests.conftest import random_inputs, tiny_config

TOLERANCE = 1e-5
NUM_CHOICES = 2
# name → (our config overrides, HF hidden_act): the exact-erf GELU ("gelu" in HF) on one shape.
SHAPES = {
    "tiny": (dict(), "gelu_new"),
    "groups_inner_E_ne_H": (dict(num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2),
                            "gelu_new"),
    "E_eq_H": (dict(embedding_size=32), "gelu"),
}
# HF class → (our model, allow_missing when loading the HF file)
OURS = {
    "AlbertForPreTraining": (AlbertPretrainer, ()),
    "AlbertForMaskedLM": (AlbertPretrainer, ("pooler", "sop_head")),  # HF's file has neither
    "AlbertForSequenceClassification": (lambda c: AlbertClassifier(c, NUM_LABELS), ()),
    "AlbertForQuestionAnswering": (AlbertSpanLabeler, ()),
    "AlbertForMultipleChoice": (lambda c: AlbertMultipleChoice(c, NUM_CHOICES), ()),
}


# (shape, HF class) pairs also written back to HF: the writer's names per head, and per shape
# the group/inner-block names. (The head writers do not depend on the shape.)
WRITE_BACK = {("E_eq_H", c) for c in HEAD_CLASSES} | {("groups_inner_E_ne_H", "AlbertForPreTraining")}


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
    """{shape: {HF class: (HF model, directory)}}, built on first use."""
    cache = {}

    def get(shape):
        if shape not in cache:
            overrides, act = SHAPES[shape]
            config = hf_config(tiny_config(**overrides), hidden_act=act)
            cache[shape] = save_heads(config, str(tmp_path_factory.mktemp(shape)))
        return cache[shape]

    return get


def feeds(config, class_name):
    """(our inputs, HF kwargs, masked positions or None)."""
    if class_name == "AlbertForMultipleChoice":
        flat = random_inputs(config, batch=2 * NUM_CHOICES, seq=12, seed=1)
        ours = {k: flat[k].reshape(2, NUM_CHOICES, 12) for k in ("input_word_ids", "input_mask",
                                                                  "input_type_ids")}
        hf = {k: v.reshape(2, NUM_CHOICES, 12) for k, v in torch_feed(flat).items()}
        return ours, hf, None
    inputs = random_inputs(config, batch=3, seq=12, seed=1)
    if class_name not in ("AlbertForPreTraining", "AlbertForMaskedLM"):
        inputs.pop("masked_lm_positions")
        return inputs, torch_feed(inputs), None
    return inputs, torch_feed(inputs), inputs["masked_lm_positions"]


def compare_outputs(class_name, ours_model, hf_model, inputs, hf_feed, positions) -> dict:
    """{output: max |ours − HF|} for the outputs of the head."""
    with torch.no_grad():
        hf_out = hf_model(**hf_feed)
    out = ours_model(inputs)

    def gather(logits):
        return np.stack([logits[b].numpy()[positions[b]] for b in range(len(positions))])

    if class_name == "AlbertForPreTraining":
        with torch.no_grad():
            base = hf_model.albert(**hf_feed)
        encoded = ours_model.encoder({k: inputs[k] for k in ("input_word_ids", "input_mask",
                                                             "input_type_ids")})
        return {"sequence_output": max_diff(encoded["sequence_output"], base.last_hidden_state),
                "pooled_output": max_diff(encoded["pooled_output"], base.pooler_output),
                "mlm_logits": max_diff(out["mlm_logits"], gather(hf_out.prediction_logits)),
                "sop_logits": max_diff(out["sop_logits"], hf_out.sop_logits)}
    if class_name == "AlbertForMaskedLM":
        return {"mlm_logits": max_diff(out["mlm_logits"], gather(hf_out.logits))}
    if class_name == "AlbertForQuestionAnswering":
        return {"start_logits": max_diff(out["start_logits"], hf_out.start_logits),
                "end_logits": max_diff(out["end_logits"], hf_out.end_logits)}
    return {"logits": max_diff(out["logits"], hf_out.logits)}


def randomize(model, seed):
    rng = np.random.default_rng(seed)
    for w in model.weights:
        base = 1.0 if "gamma" in w.path else 0.0
        w.assign(base + rng.normal(0, 0.1, w.shape).astype("float32"))


@pytest.mark.parametrize("class_name", HEAD_CLASSES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hf_checkpoint_in_and_out(hf_dirs, tmp_path, shape, class_name):
    hf_model, directory = hf_dirs(shape)[class_name]
    config = config_from_hf(directory)
    assert config.hidden_act == {"gelu_new": "gelu", "gelu": "gelu_exact"}[SHAPES[shape][1]]
    build, allow_missing = OURS[class_name]
    model = build(config)
    inputs, hf_feed, positions = feeds(config, class_name)
    model(inputs)

    # 1. HF → ours: a strict load, then HF's outputs.
    report = checkpoints.load_hf_checkpoint(model, directory, allow_missing=allow_missing)
    assert report.kind == "hf" and not report.unused
    assert len(report.restored) + len(report.missing) == len(model.weights)
    diffs = compare_outputs(class_name, model, hf_model, inputs, hf_feed, positions)
    assert max(diffs.values()) < TOLERANCE, diffs

    # 2. ours (fresh random weights) → HF: no missing/unexpected weights, our outputs.
    if (shape, class_name) not in WRITE_BACK:
        return
    randomize(model, seed=7)
    architecture = class_name if class_name == "AlbertForMaskedLM" else None
    out_dir = checkpoints.save_hf_checkpoint(model, str(tmp_path / "out"), architecture)
    reloaded, info = getattr(transformers, class_name).from_pretrained(
        out_dir, output_loading_info=True, attn_implementation="eager")
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    diffs = compare_outputs(class_name, model, reloaded.eval(), inputs, hf_feed, positions)
    assert max(diffs.values()) < TOLERANCE, diffs
