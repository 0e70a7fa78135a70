"""`pretraining_dataset`: tf.data input for MLM + SOP pre-training (faithfulness §6.2).

Static mode reads the original's masked records. Dynamic mode reads our unmasked records and
masks each batch inside the graph with the same n-gram algorithm (albert_tf.data.masking_tf),
drawing fresh masks every epoch. Both yield the original feature names.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import tensorflow as tf

from albert_tf.data import features as F
from albert_tf.data.masking import MaskingOptions, read_sidecar
from albert_tf.data.record_checks import resolve_files
from albert_tf.data.value_checks import RECORD_KEY, RECORDS_PER_FILE, IdLimits, check_batch

AUTOTUNE = tf.data.AUTOTUNE
OUTPUT_KEYS = F.TRAINER_FEATURES


def parse_spec(max_seq_length: int, max_predictions_per_seq: int,
               kind: str = F.STATIC) -> dict[str, tf.io.FixedLenFeature]:
    """The FixedLenFeature spec of the original trainer (§6.2), or of our dynamic records."""
    layout = F.feature_layout(kind, max_seq_length, max_predictions_per_seq)
    if kind == F.STATIC:
        layout.pop("token_boundary")  # written (§5.8) but not read by the trainer (§6.2)
    dtypes = {"int64": tf.int64, "float": tf.float32}
    return {name: tf.io.FixedLenFeature([length], dtypes[dtype])
            for name, (dtype, length) in layout.items()}


def _decoder(spec: Mapping[str, tf.io.FixedLenFeature]):
    def decode(serialized: tf.Tensor, *indices: tf.Tensor) -> dict[str, tf.Tensor]:
        example = tf.io.parse_single_example(serialized, spec)
        # The original casts every int64 feature to int32 (TPUs have no int64).
        example = {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}
        if indices:  # which file and record, for the value checks' error message
            example[RECORD_KEY], = indices
        return example
    return decode


def _indexed_records(path: tf.Tensor, file_index: tf.Tensor) -> tf.data.Dataset:
    """(serialized, key) of one file's records, the key naming file and record number."""
    start = tf.cast(file_index, tf.int64) * RECORDS_PER_FILE
    return tf.data.Dataset.zip((tf.data.TFRecordDataset(path),
                                tf.data.Dataset.range(start, start + RECORDS_PER_FILE)))


def _resolve_masking_options(masking_options: MaskingOptions | Mapping[str, Any] | None,
                             files: Sequence[str], max_predictions_per_seq: int) -> MaskingOptions:
    """Explicit options win; otherwise those the writer stored in the JSON beside the records."""
    if isinstance(masking_options, MaskingOptions):
        options = masking_options
    elif masking_options is not None:
        options = MaskingOptions(**dict(masking_options))
    else:
        sidecar = read_sidecar(files[0])
        if sidecar is None:
            raise ValueError(
                f"dynamic_masking needs masking_options (vocab_size, mask_id, ...) or the JSON "
                f"that create_pretraining_data writes beside {files[0]}")
        if sidecar.get("record_kind") != F.DYNAMIC:
            raise ValueError(f"{files[0]} holds {sidecar.get('record_kind')!r} records; "
                             f"dynamic_masking needs records written with --dynamic_masking_records")
        options = MaskingOptions.from_dict(sidecar["masking_options"])
    return options.replace(max_predictions_per_seq=max_predictions_per_seq)


def pretraining_dataset(input_patterns: str | Sequence[str], batch_size: int, max_seq_length: int,
                        max_predictions_per_seq: int, is_training: bool = True,
                        input_context: tf.distribute.InputContext | None = None,
                        dynamic_masking: bool = False,
                        masking_options: MaskingOptions | Mapping[str, Any] | None = None,
                        seed: int | None = None, drop_remainder: bool = True, *,
                        id_limits: IdLimits | None = None,
                        shuffle_buffer_size: int = 100, cycle_length: int = 4) -> tf.data.Dataset:
    """Batches of pre-training features with the original names (faithfulness §6.2).

    Yields dicts: input_ids, input_mask, segment_ids int32 [B, S]; masked_lm_positions,
    masked_lm_ids int32 [B, P]; masked_lm_weights float32 [B, P]; next_sentence_labels int32
    [B, 1] (the original's shape; 0 = in order, 1 = swapped/random).

    Args:
      input_patterns: glob(s) of TFRecord files: a str (comma-separated) or a list.
      batch_size: the global batch size. With `input_context` each pipeline batches
        `input_context.get_per_replica_batch_size(batch_size)` rows (tf.distribute convention).
      max_seq_length, max_predictions_per_seq: S and P; must match static records.
      is_training: True: repeat, shuffle files and records, parallel interleave (as the
        original). False: one sequential pass in file order, no shuffling.
      input_context: from `strategy.distribute_datasets_from_function`; files (or records, when
        there are fewer files than pipelines) are sharded by input pipeline.
      dynamic_masking: read unmasked records (written with --dynamic_masking_records) and draw
        fresh n-gram masks in the graph for every batch, so every epoch sees new masks.
      masking_options: MaskingOptions or a dict of its fields for dynamic masking; default: the
        options stored in the JSON beside the first record file.
      seed: makes shuffling and dynamic masks reproducible; None draws a fresh seed.
      drop_remainder: drop a last partial batch (needed for static shapes, e.g. TPU).
      id_limits: check every batch on the host: ids below the model's vocab_size and
        type_vocab_size, masked positions below max_seq_length, labels 0/1; the first value
        outside stops the input with an error naming file, record and feature
        (`albert_tf.data.value_checks`).
      shuffle_buffer_size: record shuffle buffer (the original uses 100).
      cycle_length: files read in parallel (the original uses min(4, #files)).
    """
    files = resolve_files(input_patterns)
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    kind = F.DYNAMIC if dynamic_masking else F.STATIC
    options = (_resolve_masking_options(masking_options, files, max_predictions_per_seq)
               if dynamic_masking else None)
    pipelines, pipeline_id = 1, 0
    if input_context is not None:
        pipelines, pipeline_id = input_context.num_input_pipelines, input_context.input_pipeline_id
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    shard_records = pipelines > 1 and len(files) < pipelines
    if pipelines > 1 and not shard_records:
        files = files[pipeline_id::pipelines]

    # With value checks each record carries its file and record number (same order).
    if id_limits is None:
        paths = tf.data.Dataset.from_tensor_slices(files)
        read_file = tf.data.TFRecordDataset
    else:
        paths = tf.data.Dataset.from_tensor_slices((files, tf.range(len(files), dtype=tf.int32)))
        read_file = _indexed_records
    if is_training:
        if shard_records:
            dataset = paths.flat_map(read_file).shard(pipelines, pipeline_id).repeat()
        else:
            dataset = paths.repeat().shuffle(len(files), seed=seed)
            # Deterministic interleave order (the original's is not), so a seed reproduces a run.
            dataset = dataset.interleave(
                read_file, cycle_length=min(cycle_length, len(files)),
                num_parallel_calls=AUTOTUNE, deterministic=True)
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed + 1)
    else:
        dataset = paths.flat_map(read_file)
        if shard_records:
            dataset = dataset.shard(pipelines, pipeline_id)

    dataset = dataset.map(_decoder(parse_spec(max_seq_length, max_predictions_per_seq, kind)),
                          num_parallel_calls=AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if id_limits is not None:
        dataset = dataset.map(lambda batch: check_batch(batch, files, id_limits, max_seq_length),
                              num_parallel_calls=AUTOTUNE)
    if dynamic_masking:
        from albert_tf.data.masking_tf import mask_batch_tf

        # Batch t of pipeline i is masked with the stateless seed (seed, t·pipelines + i): new
        # masks every epoch (the counter keeps running across repeats), reproducible for a seed.
        dataset = tf.data.Dataset.zip((tf.data.Dataset.counter(), dataset))
        dataset = dataset.map(
            lambda step, batch: mask_batch_tf(
                batch, options, seed=tf.stack([tf.constant(seed, tf.int64), step * pipelines + pipeline_id])),
            num_parallel_calls=AUTOTUNE)
    dataset = dataset.map(lambda batch: {k: batch[k] for k in OUTPUT_KEYS})
    return dataset.prefetch(AUTOTUNE)
