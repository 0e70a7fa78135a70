"""The library half of `python -m albert_tf.create_pretraining_data`: raw text → pretraining
TFRecords, with the original's log of examples and counts (faithfulness §5, §5.8).

`create_pretraining_data` runs `generation.generate` over the comma-separated outputs and logs
what it wrote; an unreadable input is one `InputError` line (`<file>: <reason>`), a full disk
a `DiskFullError` (outputs are written under temporary names and renamed when complete).

Example:
    >>> result = create_pretraining_data("corpus.txt", "train.tfrecord", tokenizer, options)
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from absl import logging

from albert_tf.runtime.atomic_files import DiskFullError
from albert_tf.data.documents import InputError
from albert_tf.data.example_codec import decode_example
from albert_tf.data.generation import GenerationOptions, generate
from albert_tf.tokenization import FullTokenizer


def default_num_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def log_examples(path: str, tokenizer: FullTokenizer, count: int = 20) -> None:
    """Logs the first instances of an output with tokens and features, as the original (§5.8)
    does at INFO; here at --verbosity=1 (DEBUG), so they do not bury the progress lines."""
    from albert_tf.data.tfrecord_io import read_records

    if not logging.level_debug():
        return
    for i, record in enumerate(read_records(path, limit=count)):
        features = decode_example(record)
        real = sum(features["input_mask"])
        logging.debug("*** Example %d ***", i)
        logging.debug("tokens: %s", " ".join(tokenizer.convert_ids_to_tokens(features["input_ids"][:real])))
        for name, values in features.items():
            logging.debug("%s: %s", name, " ".join(str(v) for v in values))


def create_pretraining_data(input_file: str, output_file: str, tokenizer: FullTokenizer,
                            options: GenerationOptions, num_workers: int = 0,
                            invalid_utf8: str = "error",
                            flags_used: Mapping[str, Any] | None = None) -> Any:
    """Writes the instances of `input_file` (comma-separated files or globs) to the
    comma-separated `output_file`s with `num_workers` processes (0: every CPU this process
    may use; the output is the same for any count) and logs the counts; returns
    `generate`'s result."""
    outputs = [p.strip() for p in output_file.split(",") if p.strip()]
    if not outputs:
        raise InputError("--output_file is empty")
    num_workers = num_workers or default_num_workers()
    logging.info("*** Reading from input files (%d workers) ***", num_workers)
    try:
        result = generate(input_file, outputs, tokenizer, options, num_workers=num_workers,
                          invalid_utf8=invalid_utf8, log=logging.info, flags_used=flags_used)
    except DiskFullError:  # its own one line (cli.disk_full_exits)
        raise
    except OSError as e:
        raise InputError(f"{getattr(e, 'filename', '') or 'I/O error'}: {e.strerror or e}") from None
    log_examples(outputs[0], tokenizer)
    stats = result.input
    for path in stats.empty_files:
        logging.warning("skipped empty input file %s", path)
    if stats.invalid_utf8_lines:
        logging.warning("skipped %d line(s) that were not valid UTF-8", stats.invalid_utf8_lines)
    if result.single_sentence_documents:
        logging.info("%d single-sentence document(s): their segment B comes from a random document "
                     "(label 1, faithfulness Q10)", result.single_sentence_documents)
    logging.info("Wrote %d total instances (%s) in %.1fs: %.0f instances/s; labels: %d in order, %d swapped/random",
                 result.instances, ", ".join(f"{p}: {n}" for p, n in zip(outputs, result.per_output)),
                 result.seconds, result.instances / max(result.seconds, 1e-9),
                 result.label_counts[0], result.label_counts[1])
    return result
