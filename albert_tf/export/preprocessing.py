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
        flat_ids = ids.flat_values
        pieces = self.tokenizer.id_to_string(flat_ids)
        hit = tf.strings.regex_full_match(pieces, r".*[0-9],") & (tf.strings.length(pieces, "UTF8_CHAR") > 1)
        hit_pieces = tf.boolean_mask(pieces, hit)
        stripped = tf.strings.regex_replace(tf.strings.regex_replace(hit_pieces, ",$", ""),
                                            SPIECE_UNDERLINE, "")
        reencoded = self.tokenizer.tokenize(stripped)
        comma = tf.fill([tf.shape(hit_pieces)[0], 1], self.comma_id)
        replacements = tf.concat([reencoded, tf.RaggedTensor.from_tensor(comma)], axis=1)
        singles = tf.RaggedTensor.from_tensor(flat_ids[:, None])
        stacked = tf.concat([singles, replacements], axis=0)
        n = tf.shape(flat_ids)[0]
        position = tf.cumsum(tf.cast(hit, tf.int32)) - 1
        index = tf.where(hit, n + position, tf.range(n))
        per_piece = tf.gather(stacked, index)  # [pieces, (ids)]
        return tf.RaggedTensor.from_row_lengths(per_piece, ids.row_lengths()).merge_dims(1, 2)

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
        segments = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s for s in segments]
        if len(segments) not in (1, 2):
            raise ValueError(f"bert_pack_inputs takes 1 or 2 segments, got {len(segments)}")
        batch = segments[0].nrows(out_type=tf.int32)
        cls = tf.fill([batch, 1], self.cls_id)
        sep = tf.fill([batch, 1], self.sep_id)
        if len(segments) == 1:
            a = segments[0][:, : seq_length - 2]
            pieces = [cls, a, sep]
            types = [tf.zeros_like(p) if not isinstance(p, tf.RaggedTensor) else tf.zeros_like(p)
                     for p in pieces]
        else:
            len_a = tf.cast(segments[0].row_lengths(), tf.int32)
            len_b = tf.cast(segments[1].row_lengths(), tf.int32)
            has_b = len_b > 0  # an empty b makes a single-sentence row (faithfulness §8.3)
            budget = tf.where(has_b, seq_length - 3, seq_length - 2)
            new_a, new_b = self.truncated_lengths(len_a, len_b, budget)
            a = tf.ragged.boolean_mask(segments[0], tf.ragged.range(len_a) < new_a[:, None])
            b = tf.ragged.boolean_mask(segments[1], tf.ragged.range(len_b) < new_b[:, None])
            sep_b = tf.ragged.boolean_mask(sep, has_b[:, None])
            pieces = [cls, a, sep, b, sep_b]
            types = [tf.zeros_like(cls), tf.zeros_like(a), tf.zeros_like(sep), tf.ones_like(b),
                     tf.ones_like(sep_b)]
        word_ids = tf.concat([_ragged(p) for p in pieces], axis=1)
        type_ids = tf.concat([_ragged(t) for t in types], axis=1)
        shape = tf.stack([batch, seq_length])
        input_word_ids = word_ids.to_tensor(default_value=self.pad_id, shape=shape)
        input_mask = tf.ones_like(word_ids).to_tensor(default_value=0, shape=shape)
        input_type_ids = type_ids.to_tensor(default_value=0, shape=shape)
        return {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}

    def __call__(self, text: tf.Tensor, seq_length=None) -> dict[str, tf.Tensor]:
        """Single strings [batch] → encoder inputs with the default sequence length."""
        return self.bert_pack_inputs([self.tokenize(text)], seq_length)


def _ragged(x):
    return x if isinstance(x, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(x)


def save_preprocessing_export(sp_model_file: str, export_path: str, do_lower_case: bool = True,
                              default_seq_length: int = 128) -> str:
    """Writes the preprocessing SavedModel: root call, `tokenize` (+ special tokens), `bert_pack_inputs`."""
    with tf.io.gfile.GFile(sp_model_file, "rb") as f:
        proto = f.read()
    pre = AlbertPreprocessor(proto, do_lower_case, default_seq_length)
    strings = tf.TensorSpec([None], tf.string)
    length = tf.TensorSpec([], tf.int32)

    root = tf.train.Checkpoint()
    root.preprocessor = pre
    tokenize = tf.train.Checkpoint()
    tokenize.__call__ = tf.function(pre.tokenize, input_signature=[strings])
    tokenize.get_special_tokens_dict = tf.function(pre.get_special_tokens_dict, input_signature=[])
    root.tokenize = tokenize

    pack = tf.function(pre.bert_pack_inputs)
    for ragged_rank in (1, 2):
        spec = tf.RaggedTensorSpec([None] + [None] * ragged_rank, tf.int32, ragged_rank=ragged_rank)
        for count in (1, 2):
            pack.get_concrete_function([spec] * count)
            pack.get_concrete_function([spec] * count, length)
    root.bert_pack_inputs = pack
    call = tf.function(pre.__call__)
    call.get_concrete_function(strings)
    call.get_concrete_function(strings, length)
    root.__call__ = call
    with tempfile.TemporaryDirectory() as scratch:
        root.sp_model_file = tf.saved_model.Asset(asset_copy(sp_model_file, scratch))
        root.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
        serving = tf.function(lambda text: pre(text), input_signature=[strings])
        tf.saved_model.save(root, export_path,
                            signatures={"serving_default": serving.get_concrete_function()})
    return export_path
