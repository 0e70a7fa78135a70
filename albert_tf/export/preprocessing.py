"""In-graph text preprocessing for ALBERT (tensorflow-text), exported as a SavedModel (faithfulness §12.2).

The graph reproduces the Python pipeline `FullTokenizer.tokenize(preprocess_text(text,
lower=True))` + the fine-tuning feature builder:
  1. whitespace runs → one space, stripped (`remove_space`);
  2. NFKD, then combining marks removed (`\\p{Mn}`; Python drops characters with a non-zero
     combining class — the two sets differ only for rare marks);
  3. lower-casing (`tf.strings.lower` with UTF-8, Python's `str.lower` for all but a few
     special cases such as final sigma);
  4. SentencePiece with the model's own normaliser, no sampling;
  5. the original's digit-comma re-split (faithfulness §7.3, Python-3 behaviour of Q2);
  6. packing as `[CLS] a [SEP] (b [SEP])`, truncating the longer segment first (ties: the
     second), exactly as the fine-tuning features do (faithfulness §8.3) — not Model Garden's round robin.
     A row whose second segment has no pieces (empty text, spaces, a lone combining mark) is
     packed as a single sentence, `[CLS] a [SEP]` cut to seq_length − 2, as the original's
     `if tokens_b:` does; Model Garden's packer would add a second `[SEP]`.
"""

from __future__ import annotations

import tempfile

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.export.assets import asset_copy
from albert_tf.export.save_tracing import traced_for_saving

SPIECE_UNDERLINE = "\u2581"
# Python's str.split() whitespace: ASCII controls \t\n\v\f\r, \x1c-\x1f, \x85 and Unicode Z*.
_WHITESPACE_RUN = r"[\t\n\x0b\f\r\x1c-\x1f\x{85}\p{Z}]+"


class AlbertPreprocessor(tf.Module):
    """Strings → encoder inputs, with `tokenize` and `bert_pack_inputs` as separate steps.

    Example:
        >>> pre = AlbertPreprocessor(open("30k-clean.model", "rb").read())
        >>> pre.bert_pack_inputs([pre.tokenize(["a question"]), pre.tokenize(["a passage"])], 128)
    """

    def __init__(self, sp_model_proto: bytes, do_lower_case: bool = True, default_seq_length: int = 128,
                 name: str | None = None):
        super().__init__(name=name)
        self.tokenizer = tf_text.SentencepieceTokenizer(model=sp_model_proto, out_type=tf.int32)
        self.do_lower_case = do_lower_case
        self.default_seq_length = default_seq_length
        ids = self.tokenizer.string_to_id(tf.constant(["[CLS]", "[SEP]", "[MASK]", "<pad>", ","]))
        self.cls_id, self.sep_id, self.mask_id, self.pad_id, self.comma_id = [int(i) for i in ids.numpy()]
        if self.pad_id != 0 and self.tokenizer.id_to_string(self.pad_id).numpy() != b"<pad>":
            self.pad_id = 0
        self.vocab_size = int(self.tokenizer.vocab_size().numpy())

    # ----- tokenize -----
    def normalize(self, text: tf.Tensor) -> tf.Tensor:
        """Steps 1–3 of the module docstring on a string tensor [batch]."""
        text = tf.strings.strip(tf.strings.regex_replace(text, _WHITESPACE_RUN, " "))
        text = tf_text.normalize_utf8(text, "NFKD")
        text = tf.strings.regex_replace(text, r"\p{Mn}", "")
        if self.do_lower_case:
            text = tf.strings.lower(text, encoding="utf-8")
        return text

    def _fix_digit_comma(self, ids: tf.RaggedTensor) -> tf.RaggedTensor:
        """Pieces ending in "<digit>," are re-encoded without ▁ and the comma, plus ","."""
        # Flat index arithmetic, no ragged concat/validation: every row split below is a
        # cumulative sum of non-negative lengths, valid by construction (faster to export).
        flat_ids = ids.flat_values
        pieces = self.tokenizer.id_to_string(flat_ids)
        hit = tf.strings.regex_full_match(pieces, r".*[0-9],") & (tf.strings.length(pieces, "UTF8_CHAR") > 1)
        hit_pieces = tf.boolean_mask(pieces, hit)
        stripped = tf.strings.regex_replace(tf.strings.regex_replace(hit_pieces, ",$", ""),
                                            SPIECE_UNDERLINE, "")
        reencoded = self.tokenizer.tokenize(stripped)  # [hits, (ids)]; each gets "," appended
        starts = tf.cast(reencoded.row_splits, tf.int64)
        n = tf.shape(flat_ids, out_type=tf.int64)[0]
        out_len = tf.tensor_scatter_nd_update(tf.ones([n], tf.int64), tf.where(hit),
                                              starts[1:] - starts[:-1] + 1)
        out_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(out_len)], axis=0)
        position = tf.range(out_splits[-1])
        piece = tf.searchsorted(out_splits[1:], position, side="right", out_type=tf.int64)
        offset = position - tf.gather(out_splits, piece)
        hit_index = tf.maximum(tf.gather(tf.cumsum(tf.cast(hit, tf.int64)) - 1, piece), 0)
        values = tf.concat([flat_ids, reencoded.flat_values, [self.comma_id]], axis=0)
        index = tf.where(~tf.gather(hit, piece), piece,
                         tf.where(offset < tf.gather(out_len, piece) - 1,
                                  n + tf.gather(starts, hit_index) + offset,
                                  n + tf.shape(reencoded.flat_values, out_type=tf.int64)[0]))
        return tf.RaggedTensor.from_row_splits(tf.gather(values, index),
                                               tf.gather(out_splits, ids.row_splits), validate=False)

    def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
        """String tensor [batch] → int32 ragged ids [batch, (pieces)]."""
        ids = self.tokenizer.tokenize(self.normalize(text))
        return self._fix_digit_comma(ids)

    def get_special_tokens_dict(self) -> dict[str, tf.Tensor]:
        return {"vocab_size": tf.constant(self.vocab_size), "start_of_sequence_id": tf.constant(self.cls_id),
                "end_of_segment_id": tf.constant(self.sep_id), "padding_id": tf.constant(self.pad_id),
                "mask_id": tf.constant(self.mask_id)}

    # ----- pack -----
    @staticmethod
    def truncated_lengths(len_a: tf.Tensor, len_b: tf.Tensor, budget: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Lengths after the original's pair truncation: pop from the longer, ties from b.

        Closed form: the shorter segment is kept whole when it fits in half the budget
        (rounded down) and the longer gets the rest; otherwise a gets ⌈T/2⌉ and b ⌊T/2⌋.
        """
        fits = len_a + len_b <= budget
        half_down = budget // 2
        a_shorter = len_a <= len_b
        shorter = tf.minimum(len_a, len_b)
        keep_shorter = shorter <= half_down
        a_if_keep = tf.where(a_shorter, len_a, budget - len_b)
        b_if_keep = tf.where(a_shorter, budget - len_a, len_b)
        new_a = tf.where(fits, len_a, tf.where(keep_shorter, a_if_keep, budget - half_down))
        new_b = tf.where(fits, len_b, tf.where(keep_shorter, b_if_keep, half_down))
        return new_a, new_b

    def bert_pack_inputs(self, segments: list, seq_length=None) -> dict[str, tf.Tensor]:
        """1 or 2 ragged segments [batch, (ids)] → int32 encoder inputs [batch, seq_length]."""
        if seq_length is None:
            seq_length = self.default_seq_length
        seq_length = tf.cast(seq_length, tf.int32)
        segments = [_merged_rows(s) if s.ragged_rank > 1 else s for s in segments]
        if len(segments) not in (1, 2):
            raise ValueError(f"bert_pack_inputs takes 1 or 2 segments, got {len(segments)}")
        # Each row is [CLS] a[:len_a] [SEP] (b[:len_b] [SEP]), padded or cut to seq_length;
        # every position's id is gathered from the segments' values (no ragged concat or
        # to_tensor, whose validation ops made the export slow).
        a = segments[0]
        len_a = tf.cast(a.row_lengths(), tf.int32)
        j = tf.range(seq_length)[None, :]
        if len(segments) == 1:
            len_a = tf.minimum(tf.maximum(seq_length - 2, 0), len_a)[:, None]
            b_values = tf.zeros([0], a.values.dtype)
            b_starts = tf.zeros_like(a.row_starts())
            len_b = has_b = tf.zeros_like(len_a)
        else:
            b = segments[1]
            tf.debugging.assert_equal(b.nrows(), a.nrows(),
                                      message="bert_pack_inputs: segments of different batch sizes")
            len_b = tf.cast(b.row_lengths(), tf.int32)
            has_b = len_b > 0  # an empty b makes a single-sentence row (faithfulness §8.3)
            budget = tf.where(has_b, seq_length - 3, seq_length - 2)
            new_a, new_b = self.truncated_lengths(len_a, len_b, budget)
            len_a = tf.minimum(tf.maximum(new_a, 0), len_a)[:, None]
            len_b = tf.minimum(tf.maximum(new_b, 0), len_b)[:, None]
            has_b = tf.cast(has_b, tf.int32)[:, None]
            b_values, b_starts = b.values, b.row_starts()
        in_a = (j >= 1) & (j <= len_a)
        in_b = (j >= len_a + 2) & (j < len_a + 2 + len_b)
        is_sep = (j == len_a + 1) | ((j == len_a + 2 + len_b) & (has_b > 0))
        # One table: a's values, b's values, then [CLS], [SEP], padding.
        size_a = tf.shape(a.values, out_type=tf.int64)[0]
        special = size_a + tf.shape(b_values, out_type=tf.int64)[0]
        table = tf.concat([a.values, b_values, [self.cls_id, self.sep_id, self.pad_id]], axis=0)
        j64 = tf.cast(j, tf.int64)
        index = tf.where(in_a, a.row_starts()[:, None] + j64 - 1,
                         tf.where(in_b, size_a + b_starts[:, None] + j64 - tf.cast(len_a + 2, tf.int64),
                                  tf.where(j == 0, special, tf.where(is_sep, special + 1, special + 2))))
        total = len_a + 2 + len_b + has_b
        return {"input_word_ids": tf.gather(table, index),
                "input_mask": tf.cast(j < total, tf.int32),
                "input_type_ids": tf.cast(in_b | (is_sep & (j > len_a + 1)), tf.int32)}

    def __call__(self, text: tf.Tensor, seq_length=None) -> dict[str, tf.Tensor]:
        """Single strings [batch] → encoder inputs with the default sequence length."""
        return self.bert_pack_inputs([self.tokenize(text)], seq_length)


def _merged_rows(segment: tf.RaggedTensor) -> tf.RaggedTensor:
    """`segment.merge_dims(1, -1)` without its validation ops (the row splits of a
    RaggedTensor are valid already): each row's ids, all inner dimensions merged."""
    if segment.flat_values.shape.rank != 1:
        return segment.merge_dims(1, -1)
    splits = segment.row_splits
    for inner in segment.nested_row_splits[1:]:
        splits = tf.gather(inner, splits)
    return tf.RaggedTensor.from_row_splits(segment.flat_values, splits, validate=False)


def save_preprocessing_export(sp_model_file: str, export_path: str, do_lower_case: bool = True,
                              default_seq_length: int = 128) -> str:
    """Writes the preprocessing SavedModel: root call, `tokenize` (+ special tokens), `bert_pack_inputs`."""
    with tf.io.gfile.GFile(sp_model_file, "rb") as f:
        proto = f.read()
    pre = AlbertPreprocessor(proto, do_lower_case, default_seq_length)
    strings = tf.TensorSpec([None], tf.string)
    # Saving traces each function again unless its cache already holds the trace under the
    # save's own key: made in a save context, with the argument names as spec names. No
    # function has tensor-dependent Python control flow: autograph would only slow tracing.
    text, length = tf.TensorSpec([None], tf.string, name="text"), tf.TensorSpec([], tf.int32, name="seq_length")

    root = tf.train.Checkpoint()
    root.preprocessor = pre
    tokenize = tf.train.Checkpoint()
    tokenize.__call__ = tf.function(pre.tokenize, input_signature=[strings], autograph=False)
    tokenize.get_special_tokens_dict = tf.function(pre.get_special_tokens_dict, input_signature=[],
                                                   autograph=False)
    root.tokenize = tokenize

    pack = tf.function(pre.bert_pack_inputs, autograph=False)
    call = tf.function(pre.__call__, autograph=False)
    with traced_for_saving():
        for ragged_rank in (1, 2):
            spec = tf.RaggedTensorSpec([None] + [None] * ragged_rank, tf.int32, ragged_rank=ragged_rank)
            for count in (1, 2):
                pack.get_concrete_function([spec] * count)
                pack.get_concrete_function([spec] * count, length)
        call.get_concrete_function(text)
        call.get_concrete_function(text, length)
    root.bert_pack_inputs = pack
    root.__call__ = call
    with tempfile.TemporaryDirectory() as scratch:
        root.sp_model_file = tf.saved_model.Asset(asset_copy(sp_model_file, scratch))
        root.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
        serving = tf.function(lambda text: pre(text), input_signature=[strings], autograph=False)
        tf.saved_model.save(root, export_path,
                            signatures={"serving_default": serving.get_concrete_function()})
    return export_path
