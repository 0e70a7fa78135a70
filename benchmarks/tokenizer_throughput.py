"""Tokenizer throughput: Python FullTokenizer + feature packing vs the in-graph preprocessing export.

    python benchmarks/tokenizer_throughput.py [--sentences=20000] [--seq_length=128]

Both paths turn raw sentences from the built-in corpus into packed int32 [seq_length]
features (ids, mask, type ids), as fine-tuning does. Rounds alternate between the two paths
and the best round of each is reported, with the ratio taken in the same run.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import tensorflow as tf
from absl import app, flags

from albert_tf.corpus import tiny_assets
from albert_tf.export.preprocessing import save_preprocessing_export
from albert_tf.glue.features import pack_tokens
from albert_tf.tokenization import FullTokenizer, preprocess_text

FLAGS = flags.FLAGS
flags.DEFINE_integer("sentences", 20000, "Sentences per round.")
flags.DEFINE_integer("seq_length", 128, "Packed length.")
flags.DEFINE_integer("batch_size", 256, "Batch of the in-graph path.")
flags.DEFINE_integer("rounds", 3, "Alternating rounds.")
flags.DEFINE_string("work_dir", None, "Where assets and the export go (default: a temp dir).")


def python_path(tokenizer: FullTokenizer, sentences: list[str], seq_length: int) -> int:
    for text in sentences:
        pack_tokens(tokenizer.tokenize(preprocess_text(text, lower=True)), None, seq_length, tokenizer)
    return len(sentences)


def graph_path(preprocess, sentences: list[str], seq_length: int, batch_size: int) -> int:
    length = tf.constant(seq_length)
    for start in range(0, len(sentences), batch_size):
        batch = tf.constant(sentences[start:start + batch_size])
        preprocess.bert_pack_inputs([preprocess.tokenize(batch)], length)["input_word_ids"].numpy()
    return len(sentences)


def main(argv: list[str]) -> None:
    del argv
    work = FLAGS.work_dir or tempfile.mkdtemp(prefix="tokenizer_bench_")
    corpus, model = tiny_assets(os.path.join(work, "assets"), vocab_size=5000)
    export = os.path.join(work, "preprocess")
    if not os.path.exists(export):
        save_preprocessing_export(model, export, do_lower_case=True, default_seq_length=FLAGS.seq_length)
    sentences = [s.strip() for s in open(corpus, encoding="utf-8") if s.strip()]
    sentences = (sentences * (FLAGS.sentences // len(sentences) + 1))[:FLAGS.sentences]
    tokenizer = FullTokenizer(spm_model_file=model)
    preprocess = tf.saved_model.load(export)
    graph_path(preprocess, sentences[:512], FLAGS.seq_length, FLAGS.batch_size)  # trace
    best = {"python": np.inf, "graph": np.inf}
    for _ in range(FLAGS.rounds):
        for name, run in (("python", lambda: python_path(tokenizer, sentences, FLAGS.seq_length)),
                          ("graph", lambda: graph_path(preprocess, sentences, FLAGS.seq_length,
                                                       FLAGS.batch_size))):
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    rates = {k: FLAGS.sentences / v for k, v in best.items()}
    print(f"| path | sentences/s (best of {FLAGS.rounds}) |\n|---|---|")
    print(f"| Python FullTokenizer + pack_tokens | {rates['python']:,.0f} |")
    print(f"| preprocessing SavedModel (tokenize + bert_pack_inputs, batch {FLAGS.batch_size}) | "
          f"{rates['graph']:,.0f} |")
    print(f"in-graph / Python: {rates['graph'] / rates['python']:.2f}x")


if __name__ == "__main__":
    app.run(main)
