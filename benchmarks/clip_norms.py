"""Global gradient norms of one batch: per-occurrence (TF1's IndexedSlices) vs dense (Q35).

    python benchmarks/clip_norms.py [--config=albert_base_v2] [--batch=8] [--seq=128]

Builds the built-in corpus, a 1000-piece SentencePiece model and pretraining records
(create_pretraining_data, seq 128, 20 predictions), takes the first batch, and reports for
a freshly initialised (seeded) model of the preset's shape with the 1000-piece vocabulary:
* the pretrainer (MLM + SOP) on it;
* a sentence-pair classifier on the same token ids (label: the SOP label).
Each row gives the norm that counts the word-embedding gradient once per token occurrence,
the dense norm, and which of the two `--clip_norm_mode=original` uses for that model.
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
    from albert_tf.training.pretraining import pretraining_dataset_fn
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


def norms(model, loss_fn, features):
    """(per-occurrence norm, dense norm, what mode "original" counts per occurrence)."""
    import tensorflow as tf
    from albert_tf.training.clipping import OccurrenceNormRule, global_norm

    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(model(features, training=False))
    grads = tape.gradient(loss, variables)
    dense, _, _ = OccurrenceNormRule("dense").split(grads, variables)
    dense_norm = float(global_norm(dense, [False] * len(dense), tf.constant(0.0)))
    # What a per-occurrence count of every gathered word-table gradient gives.
    occurrence_sq = 0.0
    for g, v in zip(grads, variables):
        if v.path.endswith("word_embeddings"):
            values = g.values if isinstance(g, tf.IndexedSlices) else None
            occurrence_sq = None if values is None else float(tf.reduce_sum(tf.square(values)))
    rest = [d for d, v in zip(dense, variables) if not v.path.endswith("word_embeddings")]
    per_occurrence = (None if occurrence_sq is None else
                      float(global_norm(rest, [False] * len(rest), tf.constant(occurrence_sq))))
    _, _, flagged = OccurrenceNormRule("original").split(grads, variables)
    used = "per occurrence" if any(flagged) else "dense"
    return per_occurrence, dense_norm, used


def main(argv):
    del argv
    import keras
    import tensorflow as tf
    from albert_tf import AlbertConfig
    from albert_tf.models import AlbertClassifier, AlbertPretrainer
    from albert_tf.training.pretraining import PretrainingObjective

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
        ("pretrainer (MLM+SOP, tied decoder)", pretrainer,
         lambda out: objective.loss(labels, out, objective.normalizers(labels)), features),
        ("classifier (2 classes, pooled output)", classifier,
         lambda out: tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
             sop, out["logits"])), classifier_features),
    ]
    print(f"{FLAGS.config} shape, vocab 1000, seed {FLAGS.seed}, batch {FLAGS.batch} × seq "
          f"{FLAGS.seq} of the built-in corpus")
    print("| model | per-occurrence norm | dense norm | --clip_norm_mode=original uses |")
    print("|---|---|---|---|")
    for name, model, loss_fn, inputs in rows:
        per_occurrence, dense, used = norms(model, loss_fn, inputs)
        shown = "n/a (gradient is dense)" if per_occurrence is None else f"{per_occurrence:.4f}"
        print(f"| {name} | {shown} | {dense:.4f} | {used} |")


if __name__ == "__main__":
    app.run(main)
