"""Classifies raw sentence pairs with the two exports and a fine-tuned head: the path a
downstream user takes (text in, label out, no Python tokenizer).

    python -m albert_tf.classify_with_exports --preprocess_export=out/preprocess \\
        --encoder_export=out/encoder --classifier_checkpoint=out/mrpc/model.ckpt-best \\
        --pairs_file=out/glue/MRPC/dev.tsv --num_examples=8

The preprocessing SavedModel tokenizes and packs the text in-graph, the encoder SavedModel
gives the pooled output, and the classifier head (`output_weights`, `output_bias`) is read
from the run_classifier checkpoint the encoder was exported from.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import csv
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the preprocessing export's ops)
from absl import flags

from albert_tf import cli
from albert_tf.checkpoints import resolve_checkpoint_path
from albert_tf.checkpoints.ours import entry_name

from albert_tf.runtime import paths

FLAGS = flags.FLAGS
flags.DEFINE_string("preprocess_export", None, "Preprocessing SavedModel (export_tfhub).")
flags.DEFINE_string("encoder_export", None, "Encoder SavedModel (export_tfhub).")
flags.DEFINE_string("classifier_checkpoint", None, "run_classifier checkpoint holding the head.")
flags.DEFINE_string("pairs_file", None, "MRPC-format TSV: label, id, id, sentence a, sentence b.")
flags.DEFINE_integer("num_examples", 8, "How many rows to classify.", lower_bound=1)
flags.DEFINE_integer("seq_length", 128, "Packed sequence length.", lower_bound=3)
flags.mark_flags_as_required(["preprocess_export", "encoder_export", "classifier_checkpoint", "pairs_file"])


def read_head(checkpoint: str) -> tuple[np.ndarray, np.ndarray]:
    """`classifier_head` weights [C, H] and bias [C] from one of our training checkpoints."""
    reader = tf.compat.v1.train.NewCheckpointReader(resolve_checkpoint_path(checkpoint))

    def tensor(name: str) -> np.ndarray:
        return reader.get_tensor(entry_name(f"classifier_head/{name}"))

    return tensor("output_weights"), tensor("output_bias")


def classify(preprocess, encoder, weights, bias, first: list[str], second: list[str], seq_length: int):
    """Class probabilities [N, C] of the pairs, computed from raw text."""
    tokenize = preprocess.tokenize
    inputs = preprocess.bert_pack_inputs([tokenize(tf.constant(first)), tokenize(tf.constant(second))],
                                         tf.constant(seq_length))
    pooled = encoder(inputs, training=False)["pooled_output"].numpy()
    return tf.nn.softmax(pooled @ weights.T + bias).numpy()


def run() -> None:
    """The flags → the two exports and the head, each pair printed with its prediction."""
    with paths.open_file(FLAGS.pairs_file) as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:FLAGS.num_examples + 1]
    labels, first, second = [r[0] for r in rows], [r[3] for r in rows], [r[4] for r in rows]
    preprocess = tf.saved_model.load(FLAGS.preprocess_export)
    encoder = tf.saved_model.load(FLAGS.encoder_export)
    weights, bias = read_head(FLAGS.classifier_checkpoint)
    probabilities = classify(preprocess, encoder, weights, bias, first, second, FLAGS.seq_length)
    correct = 0
    for label, a, b, p in zip(labels, first, second, probabilities):
        predicted = int(np.argmax(p))
        correct += str(predicted) == label
        print(f"predicted {predicted} (p={p[predicted]:.2f}, gold {label}) | {a[:60]!r} ||| {b[:60]!r}")
    print(f"{correct}/{len(rows)} of these raw pairs classified correctly through the exports")


def console_main() -> None:
    """`albert-classify-with-exports` (console script), `python -m
    albert_tf.classify_with_exports`. A missing file or export: one line, exit 1."""
    cli.start("classify_with_exports", run, __name__)


if __name__ == "__main__":
    console_main()
