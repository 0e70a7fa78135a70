"""Global gradient norms of one batch: the original's (TF1's IndexedSlices) vs dense (Q35).

    python benchmarks/clip_norms.py [--config=albert_base_v2] [--batch=8] [--seq=128]

Builds the built-in corpus, a 1000-piece SentencePiece model and pretraining records
(create_pretraining_data, seq 128, 20 predictions), takes the first batch, and reports for
a freshly initialised (seeded) model of the preset's shape with the 1000-piece vocabulary:
* the pretrainer (MLM + SOP) on it;
* a sentence-pair classifier on the same token ids (label: the SOP label).
Each row gives the norm the original computes off TPU (the token-type rows counted once per
token occurrence, and the word rows too where nothing but the lookup reads the word table),
the norm `--clip_norm_mode=original` computes (it must be the same), the dense norm of the
summed gradients, and each lookup table's share of the norm both ways.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("config", "albert_base_v2", "AlbertConfig preset (vocab set to the SPM's).")
flags.DEFINE_integer("batch", 8, "Batch size.")
flags.DEFINE_integer("seq", 128, "Sequence length.")
flags.DEFINE_integer("seed", 0, "Initialisation seed.")


def first_batch(directory: str):
    """(features, labels) of the first training batch of records built from the corpus."""
    from albert_tf.corpus import tiny_assets
    from albert_tf.pretraining.records import pretraining_dataset_fn
    import tensorflow as tf

    corpus, spm_model = tiny_assets(directory, vocab_size=1000)
    records = os.path.join(directory, "records.tfrecord")
    subprocess.run([sys.executable, "-m", "albert_tf.create_pretraining_data",
                    f"--input_file={corpus}", f"--output_file={records}",
                    f"--spm_model_file={spm_model}", f"--max_seq_length={FLAGS.seq}",
                    "--max_predictions_per_seq=20", "--dupe_factor=1"],
                   check=True, capture_output=True)
    dataset = pretraining_dataset_fn(records, FLAGS.batch, FLAGS.seq, 20, seed=FLAGS.seed)(
        tf.distribute.InputContext())
    return next(iter(dataset))


TABLES = ("word_embeddings", "token_type_embeddings")


def norms(model, loss_fn, features, word_table_tied: bool) -> dict:
    """The batch's norms: "original" (the original's off TPU, computed here from Q35's
    table), "ours" (OccurrenceNormRule("original") and global_norm, as the training loop),
    "dense", and for each lookup table its share as (dense, per occurrence)."""
    import numpy as np
    import tensorflow as tf
    from albert_tf.training.clipping import OccurrenceNormRule, global_norm

    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(model(features, training=False))
    grads = tape.gradient(loss, variables)
    dense_sq = original_sq = 0.0
    shares = {}
    for g, v in zip(grads, variables):
        summed = tf.convert_to_tensor(g).numpy().astype(np.float64)
        table = v.path.rsplit("/", 1)[-1]
        square = float((summed ** 2).sum())
        dense_sq += square
        if table in TABLES and isinstance(g, tf.IndexedSlices):
            rows = g.values.numpy().astype(np.float64)  # one row per token occurrence
            occurrence = float((rows ** 2).sum())
            shares[table] = (np.sqrt(square), np.sqrt(occurrence))
            gathered_alone = table == "token_type_embeddings" or not word_table_tied
            original_sq += occurrence if gathered_alone else square
        else:
            if table in TABLES:  # dense already: the tied decoder's gradient was added
                shares[table] = (np.sqrt(square), None)
            original_sq += square
    dense, occurrence_sq, flagged = OccurrenceNormRule("original").split(grads, variables)
    ours = float(global_norm(dense, flagged, occurrence_sq))
    return {"original": float(np.sqrt(original_sq)), "ours": ours,
            "dense": float(np.sqrt(dense_sq)), "shares": shares}


def share(values: tuple) -> str:
    """'dense → per occurrence' of one table's share, or the dense one alone."""
    dense, occurrence = values
    return f"{dense:.4f} (dense gradient)" if occurrence is None else (
        f"{dense:.4f} → {occurrence:.4f}")


def main(argv):
    del argv
    import keras
    import tensorflow as tf
    from albert_tf import AlbertConfig
    from albert_tf.models import AlbertClassifier, AlbertPretrainer
    from albert_tf.pretraining.modeling import PretrainingObjective

    with tempfile.TemporaryDirectory() as directory:
        features, labels = first_batch(directory)
    config = AlbertConfig.from_preset(FLAGS.config).copy(vocab_size=1000)
    objective = PretrainingObjective()
    keras.utils.set_random_seed(FLAGS.seed)
    pretrainer = AlbertPretrainer(config)
    keras.utils.set_random_seed(FLAGS.seed)
    classifier = AlbertClassifier(config, num_classes=2)
    classifier_features = {k: features[k] for k in ("input_word_ids", "input_mask",
                                                    "input_type_ids")}
    sop = tf.reshape(labels["next_sentence_labels"], [-1])
    rows = [
        ("pretrainer (MLM+SOP, tied decoder)", pretrainer, True,
         lambda out: objective.loss(labels, out, objective.normalizers(labels)), features),
        ("classifier (2 classes, pooled output)", classifier, False,
         lambda out: tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
             sop, out["logits"])), classifier_features),
    ]
    print(f"{FLAGS.config} shape, vocab 1000, seed {FLAGS.seed}, batch {FLAGS.batch} × seq "
          f"{FLAGS.seq} of the built-in corpus")
    print("| model | original's norm | --clip_norm_mode=original | dense norm "
          "| word share: dense → per occurrence | token-type share: dense → per occurrence |")
    print("|---|---|---|---|---|---|")
    for name, model, tied, loss_fn, inputs in rows:
        result = norms(model, loss_fn, inputs, tied)
        print(f"| {name} | {result['original']:.4f} | {result['ours']:.4f} | "
              f"{result['dense']:.4f} | {share(result['shares']['word_embeddings'])} | "
              f"{share(result['shares']['token_type_embeddings'])} |")


if __name__ == "__main__":
    app.run(main)
