"""Reference outputs of the v1.1 / v2.0 fixture runs, recorded before SQuAD moved onto
`albert_tf.finetuning` (issue 14): the move must not change a prediction or a score.

`reference_run` makes the same seeded tiny run the end-to-end tests make (train 5 / 7
steps on the fixture train file, predict and score the dev file) and `snapshot` reads what
it left in output_dir. `python -m tests.squad.reference` re-records
tests/fixtures/squad/reference_outputs.json — do that only when a change is *meant* to move
the numbers, and say why in the commit.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import keras

from albert_tf import AlbertConfig, checkpoints
from albert_tf.models import AlbertPretrainer
from tests.squad.conftest import FIXTURES, fixture_path

REFERENCE_FILE = os.path.join(FIXTURES, "reference_outputs.json")
SEED = 20240514
TOLERANCE = 1e-4  # on scores from float32 logits: another CPU may round differently


def tiny_config(vocab_size: int) -> AlbertConfig:
    return AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=128)


def reference_options(config_file: str, spm_model: str, output_dir: str, v2: bool,
                      **overrides) -> dict:
    """The run's options (the end-to-end tests' settings) as keyword arguments."""
    version = "v2.0" if v2 else "v1.1"
    values = dict(albert_config_file=config_file, spm_model_file=spm_model,
                  output_dir=str(output_dir), train_file=fixture_path(f"train-{version}.json"),
                  predict_file=fixture_path(f"dev-{version}.json"), do_train=True,
                  do_predict=True, max_seq_length=96, doc_stride=48, max_query_length=16,
                  train_batch_size=8, predict_batch_size=32, num_train_epochs=1.0,
                  learning_rate=1e-3, version_2_with_negative=v2, start_n_top=3, end_n_top=3,
                  seed=1, log_steps=2,
                  # Recorded with the summed-gradient norm, as every run clipped before Q35's
                  # per-occurrence norm became the default; the move is what this pins.
                  clip_norm_mode="dense",
                  bucket_by_length=False)  # the recorded batches: the original's order
    values.update(overrides)
    return values


def seeded_init_checkpoint(config_file: str, directory: str) -> str:
    """Seeds Keras/TF/NumPy, then saves a fresh pretrainer as an original TF1 checkpoint
    (the warm start of the run; the SQuAD head is not in it)."""
    keras.utils.set_random_seed(SEED)
    pretrainer = AlbertPretrainer(AlbertConfig.from_json_file(config_file))
    return checkpoints.save_original_checkpoint(pretrainer, os.path.join(directory, "model.ckpt"))


def snapshot(output_dir: str) -> dict:
    """predictions.json, null_odds.json (v2), eval_results.txt and each question's n-best
    head (text, probability, lead over the runner-up) of a finished run."""
    def read_json(name):
        path = os.path.join(output_dir, name)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    nbest = read_json("nbest_predictions.json")
    nbest_top = {qas_id: [entries[0]["text"], entries[0]["probability"],
                          entries[0]["probability"] - (entries[1]["probability"]
                                                       if len(entries) > 1 else 0.0)]
                 for qas_id, entries in nbest.items()}
    return {"predictions": read_json("predictions.json"), "null_odds": read_json("null_odds.json"),
            "nbest_top": nbest_top,
            "eval_results": [line for line in lines if " = " in line and
                             not line.startswith("best = ")]}


def _parse(lines: list[str]) -> dict[str, float]:
    return {key: float(value) for key, value in (line.split(" = ", 1) for line in lines)}


def assert_matches_reference(name: str, output_dir: str) -> None:
    """The run in output_dir left what the recorded run `name` ("v1", "v2") left: the same
    predictions.json, the same scores, null odds and n-best heads within TOLERANCE (an
    n-best head whose recorded lead is below TOLERANCE may swap with its runner-up)."""
    import pytest

    with open(REFERENCE_FILE, encoding="utf-8") as f:
        expected = json.load(f)[name]
    actual = snapshot(output_dir)
    assert actual["predictions"] == expected["predictions"]
    if expected["null_odds"] is None:
        assert actual["null_odds"] is None
    else:
        assert sorted(actual["null_odds"]) == sorted(expected["null_odds"])
        for qas_id, value in expected["null_odds"].items():
            assert actual["null_odds"][qas_id] == pytest.approx(value, abs=TOLERANCE), qas_id
    assert sorted(actual["nbest_top"]) == sorted(expected["nbest_top"])
    for qas_id, (text, probability, lead) in expected["nbest_top"].items():
        got_text, got_probability, _ = actual["nbest_top"][qas_id]
        assert got_probability == pytest.approx(probability, abs=TOLERANCE), qas_id
        if lead > TOLERANCE:
            assert got_text == text, qas_id
    got, want = _parse(actual["eval_results"]), _parse(expected["eval_results"])
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=TOLERANCE), key


def record(spm_model: str) -> dict:
    """Runs v1 and v2 in fresh temporary directories; {"v1": snapshot, "v2": snapshot}."""
    from albert_tf.squad.runner import SquadRunOptions, run
    from albert_tf.tokenization import FullTokenizer

    outputs = {}
    for name, v2 in (("v1", False), ("v2", True)):
        with tempfile.TemporaryDirectory() as tmp:
            config_file = os.path.join(tmp, "albert_config.json")
            tiny_config(FullTokenizer(spm_model_file=spm_model).vocab_size).to_json_file(config_file)
            init = seeded_init_checkpoint(config_file, os.path.join(tmp, "init"))
            out = os.path.join(tmp, "out")
            run(SquadRunOptions(**reference_options(config_file, spm_model, out, v2,
                                                    init_checkpoint=init)))
            outputs[name] = snapshot(out)
    return outputs


def main(argv: list[str]) -> None:
    """`python -m tests.squad.reference [SPM_MODEL]`: re-records REFERENCE_FILE."""
    from albert_tf.corpus import tiny_assets

    spm_model = argv[1] if len(argv) > 1 else tiny_assets(tempfile.mkdtemp(), 1000)[1]
    outputs = record(spm_model)
    payload = {
        "note": "Recorded by `python -m tests.squad.reference` (tests/squad/reference.py) with "
                "the code of commit 9313f93, before SQuAD moved onto albert_tf.finetuning "
                "(issue 14): tiny ALBERT (H=32, 2 layers), the 1000-piece SentencePiece model "
                "of tests/text_assets.py, warm-started from a seeded pretrainer, trained on "
                "the fixture train file (5 steps v1, 7 steps v2) and scored on the dev file.",
        **outputs}
    with open(REFERENCE_FILE, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {REFERENCE_FILE}")


if __name__ == "__main__":
    main(sys.argv)
