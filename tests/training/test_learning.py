"""Learning on the built-in corpus: 300 seeded steps of a tiny ALBERT (faithfulness §4, §6).

Corpus → tiny SentencePiece → create_pretraining_data → the training loop, held-out
documents for evaluation. Settings found to learn within 300 steps at H=32: a 4000-piece
vocabulary, initializer_range 0.1 (≈ 1/√H; 0.02 is tuned for H ≥ 768 and stalls at the
unigram plateau this early), AdamW at a constant 1e-3 (no bias correction, as the
original, makes early steps ~3× larger than Keras Adam's at the same rate).
"""

from __future__ import annotations

import os

import keras
import numpy as np
import pytest

from albert_tf import AlbertConfig
from albert_tf.corpus import train_tiny_spm
from albert_tf.models import AlbertPretrainer
from albert_tf.training import Callback, LoopConfig, Trainer, create_optimizer
from albert_tf.pretraining.modeling import PretrainingObjective
from albert_tf.pretraining.records import pretraining_dataset_fn
from tests.in_process_tools import run_tool
from tests.text_assets import text_assets  # noqa: F401  (session fixture: the corpus, built once)

# Slow tier (make test-all): 300 training steps (learning, not a mechanism);
# tests/training/test_run_pretraining.py covers the loop fast.
pytestmark = pytest.mark.slow

SEQ, PRED, VOCAB, STEPS, BATCH = 64, 10, 4000, 300, 64


class MlmLog(Callback):
    def __init__(self):
        self.values = []

    def on_log(self, step, logs):
        self.values.append(logs["masked_lm_loss"])


def write_split(corpus: str, train: str, held_out: str) -> None:
    """Every 10th document is held out (documents are separated by blank lines)."""
    documents = open(corpus, encoding="utf-8").read().strip("\n").split("\n\n")
    with open(train, "w", encoding="utf-8") as f:
        f.write("\n\n".join(d for i, d in enumerate(documents) if i % 10) + "\n")
    with open(held_out, "w", encoding="utf-8") as f:
        f.write("\n\n".join(documents[::10]) + "\n")


@pytest.fixture(scope="module")
def records(tmp_path_factory, text_assets):  # noqa: F811
    # The run's shared built-in corpus (the same build_corpus text; its 1000-piece model is
    # not used here): building the corpus is ~7 s of CPU, the 4000-piece model ~3 s.
    root = tmp_path_factory.mktemp("corpus")
    corpus = text_assets.corpus
    model = train_tiny_spm(corpus, str(root / "spm"), vocab_size=VOCAB)
    write_split(corpus, str(root / "train.txt"), str(root / "held_out.txt"))
    outputs = {}
    for name, dupe in (("train", 2), ("held_out", 1)):  # the command line, in this process
        outputs[name] = str(root / f"{name}.tfrecord")
        result = run_tool(
            "albert_tf.create_pretraining_data", f"--input_file={root / (name + '.txt')}",
            f"--output_file={outputs[name]}", f"--spm_model_file={model}",
            f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PRED}",
            f"--dupe_factor={dupe}", "--num_workers=1", "--random_seed=3")
        assert result.status == 0, result.stderr[-3000:]
    return outputs


def test_300_steps_learn_mlm_and_sop(tmp_path, records):
    keras.utils.set_random_seed(1)
    config = AlbertConfig(vocab_size=VOCAB, embedding_size=32, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=64, max_position_embeddings=SEQ,
                          initializer_range=0.1)
    log = MlmLog()
    trainer = Trainer(
        lambda: AlbertPretrainer(config), PretrainingObjective(),
        LoopConfig(str(tmp_path), num_train_steps=STEPS, train_batch_size=BATCH,
                   iterations_per_loop=100, save_checkpoints_steps=STEPS, log_steps=25),
        optimizer_fn=lambda: create_optimizer("adamw", 1e-3, STEPS, 0, poly_power=0.0),
        callbacks=[log])
    train_fn = pretraining_dataset_fn(records["train"], BATCH, SEQ, PRED, seed=1)
    held_out_fn = pretraining_dataset_fn(records["held_out"], 64, SEQ, PRED, is_training=False)
    start = trainer.evaluate(pretraining_dataset_fn(records["train"], 64, SEQ, PRED, is_training=False),
                             steps=10, results_file=None)["masked_lm_loss"]
    trainer.train(train_fn)
    results = trainer.evaluate(held_out_fn, steps=10)

    cut = 1.0 - log.values[-1] / start
    assert cut >= 0.30, (start, log.values)
    labels = np.concatenate([batch["next_sentence_labels"].numpy().ravel() for _, batch in
                             held_out_fn(_single_context()).take(10)])
    majority = max(labels.mean(), 1.0 - labels.mean())
    print(f"MLM loss {start:.3f} -> {log.values[-1]:.3f} (cut {cut:.1%}); held-out SOP accuracy "
          f"{results['sentence_order_accuracy']:.3f}, majority class {majority:.3f}")
    # Seeded run: cut 30.7%; SOP 0.667 against a 0.611 majority class.
    assert results["sentence_order_accuracy"] > max(0.6, majority + 0.03), (results, majority)
    assert os.path.exists(tmp_path / "eval_results.txt")


def _single_context():
    import tensorflow as tf

    return tf.distribute.InputContext()
