"""Pre-training record generation: documents → pairs → masks → TFRecords (faithfulness §5).

Determinism (Q6 fixed) independent of the worker count: every random choice comes from a
generator seeded by (random_seed, pass, block) where a block is BLOCK_DOCUMENTS consecutive
documents of the shuffled document list. Workers process blocks in any order; results are
put back in block order, then shuffled with a seeded permutation and written round-robin,
so `num_workers` changes only the speed.

Speed choices (benchmarks/RESULTS.md): each line is tokenized once (SentencePiece batch
encode) into a flat id array shared copy-on-write by forked workers; pairs are token ranges;
masking runs vectorised over a block (albert_tf.data.masking); Examples are serialised and
framed with numpy (example_codec, tfrecord_io), so no process imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import random
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.data import features as F
from albert_tf.data.documents import (InputError, InputStats, LineTokenizer, TokenizedCorpus, assemble,
                                      expand_input_patterns, read_lines)
from albert_tf.data.example_codec import encode_examples
from albert_tf.data.instances import SENTENCE_TASKS, PairBuilder, pack_pairs
from albert_tf.data.masking import SIDECAR_SUFFIX, MaskingOptions, mask_batch, token_boundary
from albert_tf.data.tfrecord_io import AtomicTFRecordWriter
from albert_tf.tokenization import FullTokenizer

BLOCK_DOCUMENTS = 16  # documents per random-stream block (part of the output's definition)
TOKENIZE_LINES = 4096  # lines per tokenization task
_SHUFFLE_DOCS, _SHUFFLE_INSTANCES = 0x0D0C5, 0x1257A  # stream tags for the two global shuffles


@dataclasses.dataclass(frozen=True)
class GenerationOptions:
    """The create_pretraining_data settings that shape the instances (§5.1).

    `sentence_prediction` (ours, see instances.SENTENCE_TASKS) names the pair task; None
    keeps the original's switch: "nsp" when `random_next_sentence`, else "sop".
    """

    max_seq_length: int = 512
    dupe_factor: int = 40
    short_seq_prob: float = 0.1
    random_next_sentence: bool = False
    sentence_prediction: str | None = None
    skip_single_sentence_chunks: bool = False
    random_seed: int = 12345
    do_lower_case: bool = True
    record_kind: str = F.STATIC
    masking: MaskingOptions = MaskingOptions()

    @property
    def sentence_task(self) -> str:
        if self.sentence_prediction is not None:
            return self.sentence_prediction
        return "nsp" if self.random_next_sentence else "sop"

    def validate(self) -> None:
        if self.sentence_prediction is not None and self.sentence_prediction not in SENTENCE_TASKS:
            raise InputError(f"--sentence_prediction={self.sentence_prediction}: must be one of "
                             f"{', '.join(SENTENCE_TASKS)}")
        if self.random_next_sentence and self.sentence_task != "nsp":
            raise InputError(f"--random_next_sentence conflicts with --sentence_prediction="
                             f"{self.sentence_prediction} (it means nsp)")
        if self.max_seq_length < 5:
            raise InputError(f"--max_seq_length={self.max_seq_length}: must be >= 5 "
                             f"([CLS] A [SEP] B [SEP] needs one token each for A and B)")
        if self.dupe_factor < 1:
            raise InputError(f"--dupe_factor={self.dupe_factor}: must be >= 1")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise InputError(f"--short_seq_prob={self.short_seq_prob}: must be in [0, 1]")
        if self.record_kind not in F.RECORD_KINDS:
            raise InputError(f"record kind must be one of {F.RECORD_KINDS}")
        if self.record_kind == F.DYNAMIC and self.masking.do_permutation:
            raise InputError("--do_permutation cannot be combined with --dynamic_masking_records (Q13)")


@dataclasses.dataclass
class GenerationResult:
    instances: int
    per_output: list[int]
    label_counts: dict[int, int]
    masked_tokens: int
    documents: int
    single_sentence_documents: int
    sentences: int
    tokens: int
    input: InputStats
    seconds: float


def block_rngs(seed: int, dupe_pass: int, block: int) -> tuple[random.Random, np.random.Generator]:
    """Python and numpy generators of one (pass, block): the unit of determinism."""
    sequence = np.random.SeedSequence([seed, dupe_pass, block])
    return random.Random(int(sequence.generate_state(1, np.uint64)[0])), np.random.default_rng(sequence)


# ----- worker side (state inherited through fork, or set in-process for one worker) -----
_STATE: dict[str, Any] = {}


def _tokenize_task(lines: list[str]):
    return _STATE["line_tokenizer"](lines)


def _block_task(task: tuple[int, int]) -> tuple[int, int, list[bytes], list[int], int]:
    """Records of documents [block·BLOCK_DOCUMENTS, …) in pass `dupe_pass`."""
    dupe_pass, block = task
    corpus: TokenizedCorpus = _STATE["corpus"]
    options: GenerationOptions = _STATE["options"]
    builder: PairBuilder = _STATE["builder"]
    py_rng, np_rng = block_rngs(options.random_seed, dupe_pass, block)
    first = block * BLOCK_DOCUMENTS
    pairs = []
    for doc in range(first, min(first + BLOCK_DOCUMENTS, corpus.num_documents)):
        pairs.extend(builder(py_rng, doc))
    if not pairs:
        return dupe_pass, block, [], [0, 0], 0
    rows = pack_pairs(corpus, pairs, options.max_seq_length, options.masking.cls_id, options.masking.sep_id)
    layout = F.feature_layout(options.record_kind, options.max_seq_length, options.masking.num_predictions)
    if options.record_kind == F.STATIC:
        masked = mask_batch(np_rng, rows["input_ids"], rows["input_mask"], rows["word_start"], options.masking)
        values = {**rows, **masked}
        num_masked = int(masked["masked_lm_weights"].sum())
    else:
        values = dict(rows, token_boundary=token_boundary(
            rows["input_ids"], rows["input_mask"], rows["word_start"], options.masking))
        num_masked = 0
    records = encode_examples({name: (dtype, values[name]) for name, (dtype, _) in layout.items()})
    labels = np.bincount(rows["next_sentence_labels"][:, 0], minlength=2).tolist()
    return dupe_pass, block, records, labels, num_masked


def _run(pool: multiprocessing.pool.Pool | None, fn: Callable, tasks: Sequence, chunksize: int = 1):
    if pool is None:
        return map(fn, tasks)
    return pool.imap(fn, tasks, chunksize)


def _pool(num_workers: int, num_tasks: int):
    """A fork pool (workers inherit the corpus), or None to run in this process.

    Forking a process that has loaded TensorFlow risks deadlocks in the children, so a caller
    that imported it (e.g. a test or notebook) runs in-process; the CLI never imports it.
    """
    if num_workers <= 1 or num_tasks <= 1 or "tensorflow" in sys.modules:
        return None
    return multiprocessing.get_context("fork").Pool(min(num_workers, num_tasks))


def tokenize_corpus(files: Sequence[str], tokenizer: FullTokenizer, options: GenerationOptions,
                    num_workers: int, invalid_utf8: str, log: Callable[[str], None]) -> tuple[TokenizedCorpus, InputStats]:
    """Reads and tokenizes all input files into the shuffled document list (§5.2)."""
    stats = InputStats()
    lines = read_lines(files, stats, invalid_utf8, warn=log)
    _STATE["line_tokenizer"] = LineTokenizer(tokenizer, options.do_lower_case)
    tasks = [lines[i:i + TOKENIZE_LINES] for i in range(0, len(lines), TOKENIZE_LINES)]
    pool = _pool(num_workers, len(tasks))
    try:
        corpus = assemble(_run(pool, _tokenize_task, tasks), stats)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    if corpus.num_documents == 0:
        raise InputError(f"--input_file: no text in {len(files)} file(s) ({', '.join(files[:3])}"
                         f"{', …' if len(files) > 3 else ''})")
    order = np.random.default_rng([options.random_seed, _SHUFFLE_DOCS]).permutation(corpus.num_documents)
    return corpus.permuted(order), stats


def generate(input_file: str, output_files: Sequence[str], tokenizer: FullTokenizer,
             options: GenerationOptions, num_workers: int = 1, invalid_utf8: str = "error",
             log: Callable[[str], None] = print, flags_used: dict[str, Any] | None = None) -> GenerationResult:
    """Writes pre-training records for `input_file` (comma-separated globs) to `output_files`.

    Each output gets a JSON summary beside it (`<output>.json`) with counts, the masking
    options, the special ids and `flags_used`. Outputs appear only when complete.
    """
    options.validate()
    begin = time.time()
    files = expand_input_patterns(input_file)
    corpus, stats = tokenize_corpus(files, tokenizer, options, num_workers, invalid_utf8, log)
    lengths = corpus.doc_ends - corpus.doc_starts
    log(f"read {len(files)} file(s): {corpus.num_documents} documents, {corpus.num_sentences} sentences, "
        f"{corpus.num_tokens} tokens in {time.time() - begin:.1f}s")

    _STATE.update(corpus=corpus, options=options,
                  builder=PairBuilder(corpus, options.max_seq_length, options.short_seq_prob,
                                      options.sentence_task == "nsp",
                                      keep_order=options.sentence_task == "none",
                                      skip_single_sentence_chunks=options.skip_single_sentence_chunks))
    num_blocks = -(-corpus.num_documents // BLOCK_DOCUMENTS)
    tasks = [(p, b) for p in range(options.dupe_factor) for b in range(num_blocks)]
    results: dict[tuple[int, int], list[bytes]] = {}
    labels = np.zeros(2, np.int64)
    masked = 0
    last_log = time.time()
    pool = _pool(num_workers, len(tasks))
    try:
        for dupe_pass, block, records, block_labels, block_masked in _run(pool, _block_task, tasks):
            results[(dupe_pass, block)] = records
            labels += block_labels
            masked += block_masked
            if time.time() - last_log > 5:
                last_log = time.time()
                done = sum(len(r) for r in results.values())
                log(f"pass {dupe_pass + 1}/{options.dupe_factor}: {len(results)}/{len(tasks)} blocks, "
                    f"{done} instances, {done / (last_log - begin):.0f}/s")
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    all_records = [r for task in tasks for r in results[task]]
    order = np.random.default_rng([options.random_seed, _SHUFFLE_INSTANCES]).permutation(len(all_records))
    per_output = _write(output_files, [all_records[i] for i in order])
    result = GenerationResult(
        instances=len(all_records), per_output=per_output, label_counts={0: int(labels[0]), 1: int(labels[1])},
        masked_tokens=masked, documents=corpus.num_documents,
        single_sentence_documents=int((lengths == 1).sum()), sentences=corpus.num_sentences,
        tokens=corpus.num_tokens, input=stats, seconds=time.time() - begin)
    _write_summaries(output_files, result, options, tokenizer, flags_used or {})
    _STATE.clear()
    return result


def _write(output_files: Sequence[str], records: list[bytes]) -> list[int]:
    """Round-robin over the outputs, as the original; all-or-nothing."""
    writers: list[AtomicTFRecordWriter] = []
    try:
        for path in output_files:  # a failure to open the k-th removes the first k-1 too
            writers.append(AtomicTFRecordWriter(path, what="pretraining records"))
        for i, writer in enumerate(writers):
            writer.write_many(records[i::len(writers)])
        for writer in writers:  # a full disk shows here, before any output is published
            writer.sync()
        for writer in writers:
            writer.close()
    except BaseException:
        for writer in writers:  # the temporaries of all that are not published yet
            writer.abort()
        raise
    return [w.count for w in writers]


def _write_summaries(output_files: Sequence[str], result: GenerationResult, options: GenerationOptions,
                     tokenizer: FullTokenizer, flags_used: dict[str, Any]) -> None:
    for path, count in zip(output_files, result.per_output):
        summary = {
            "record_kind": options.record_kind,
            "instances": count,
            "instances_all_outputs": result.instances,
            "outputs": list(output_files),
            "max_seq_length": options.max_seq_length,
            "max_predictions_per_seq": options.masking.max_predictions_per_seq,
            "prediction_slots": options.masking.num_predictions,
            "sentence_prediction": options.sentence_task,
            "next_sentence_labels": {"0_in_order": result.label_counts[0],
                                     "1_swapped_or_random": result.label_counts[1]},
            "masked_tokens": result.masked_tokens,
            "documents": result.documents,
            "single_sentence_documents": result.single_sentence_documents,
            "sentences": result.sentences,
            "tokens": result.tokens,
            "input": result.input.to_dict(),
            "special_ids": tokenizer.special_ids(),
            "vocab_size": tokenizer.vocab_size,
            "masking_options": options.masking.to_dict(),
            "flags": flags_used,
            "seconds": round(result.seconds, 2),
        }
        with atomic_file(path + SIDECAR_SUFFIX, what="pretraining records summary") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
            f.write("\n")
