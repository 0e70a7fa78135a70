"""Raw text → ALBERT pre-training TFRecords (faithfulness §5): SOP/NSP pairs with n-gram masking.

    python -m albert_tf.create_pretraining_data --input_file=corpus.txt \
        --output_file=train.tfrecord --spm_model_file=30k-clean.model \
        --max_seq_length=128 --dupe_factor=5

Flags and defaults are the original's (§5.1) plus: --num_workers (parallel, output identical
for any value), --dynamic_masking_records (unmasked records for in-graph masking),
--invalid_utf8 and --spm_comma_rule (faithfulness Q2), --sentence_prediction=sop|nsp|none and
--skip_single_sentence_chunks (the paper's Table 5 data, albert_tf.experiments). Output is
deterministic for --random_seed (Q6 fixed). Each output gets `<output>.json` with counts, flags
and what run_pretraining checks the records against (record_kind, max_seq_length,
max_predictions_per_seq / prediction_slots, vocab_size, sentence_prediction). Bad input gives
one line `create_pretraining_data: error: …` and exit status 1; outputs are written under
temporary names and renamed when complete.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.data import features as F
from albert_tf.data.documents import InputError
from albert_tf.data.generation import GenerationOptions
from albert_tf.data.masking import MaskingOptions
from albert_tf.data.pretraining_data import create_pretraining_data
from albert_tf.tokenization import COMMA_RULES, FullTokenizer, TokenizerError
from albert_tf.training import flags as training_flags

flags.DEFINE_string("input_file", None, "Comma-separated globs of raw text files: one sentence per line, "
                    "a blank line between documents.")
flags.DEFINE_string("output_file", None, "Comma-separated output TFRecord files (instances round-robin).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt; used only without --spm_model_file.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model; selects SentencePiece tokenization, "
                    "preprocess_text and the SentencePiece word-start rule.")
flags.DEFINE_enum("input_file_mode", "r", ["r", "rb"], "Kept for compatibility: input is always read as "
                  "bytes and decoded as UTF-8.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (preprocess_text or BasicTokenizer).")
flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words: continuation pieces join their word.")
flags.DEFINE_bool("do_permutation", False, "Also permute up to max_predictions_per_seq more tokens; "
                  "records then hold 2·max_predictions_per_seq prediction slots (faithfulness Q13).")
flags.DEFINE_bool("favor_shorter_ngram", True, "n-gram length probability ∝ 1/n (else reversed).")
flags.DEFINE_bool("random_next_sentence", False, "True: BERT-style NSP, segment B from a random document "
                  "half the time. False (default): sentence-order prediction, A and B swapped half the time.")
flags.DEFINE_enum("sentence_prediction", None, ["sop", "nsp", "none"], "Pair task (the paper's Table 5): "
                  "sop, nsp, or none (the SOP pairs never swapped: A always precedes B). Default: "
                  "nsp with --random_next_sentence, else sop.")
flags.DEFINE_bool("skip_single_sentence_chunks", False, "Leave out the pairs of one-sentence chunks (their "
                  "B is from a random document in every task, Q10), so each label is the task's own: "
                  "for held-out SOP/NSP evaluation sets.")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length S (>= 5).")
flags.DEFINE_integer("ngram", 3, "Maximum n-gram length in words.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked positions per sequence M.")
flags.DEFINE_integer("random_seed", 12345, "Seed: the output is a function of it (not of --num_workers).")
flags.DEFINE_integer("dupe_factor", 40, "Passes over the input, each with fresh random choices.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens to mask.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length for a document.")
flags.DEFINE_integer("num_workers", None, "Worker processes (default: all available cores).", lower_bound=1)
flags.DEFINE_bool("dynamic_masking_records", False, "Write unmasked records (no masked_lm_* features) for "
                  "pretraining_dataset(dynamic_masking=True).")
flags.DEFINE_enum("invalid_utf8", "error", ["error", "skip_line"], "A line that is not valid UTF-8: stop with "
                  "an error naming file and line, or skip it and count it.")
flags.DEFINE_enum("spm_comma_rule", "python3", list(COMMA_RULES), "Digit-comma re-encoding (faithfulness Q2): "
                  "python3 = what the original produces today, python2 = the intended rule.")
FLAGS = flags.FLAGS

_FLAG_NAMES = ("input_file", "output_file", "vocab_file", "spm_model_file", "do_lower_case",
               "do_whole_word_mask", "do_permutation", "favor_shorter_ngram", "random_next_sentence",
               "sentence_prediction", "skip_single_sentence_chunks",
               "max_seq_length", "ngram", "max_predictions_per_seq", "random_seed", "dupe_factor",
               "masked_lm_prob", "short_seq_prob", "dynamic_masking_records", "invalid_utf8", "spm_comma_rule")


def build_tokenizer() -> FullTokenizer:
    if not FLAGS.spm_model_file and not FLAGS.vocab_file:
        raise InputError("one of --spm_model_file (SentencePiece) or --vocab_file (WordPiece) is required")
    try:
        return FullTokenizer(vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
                             spm_model_file=FLAGS.spm_model_file, comma_rule=FLAGS.spm_comma_rule)
    except TokenizerError as e:
        flag = "--spm_model_file" if FLAGS.spm_model_file else "--vocab_file"
        raise InputError(f"{flag}: {e}") from None


def run() -> None:
    """The flags → `data.pretraining_data.create_pretraining_data`."""
    tokenizer = build_tokenizer()
    masking = MaskingOptions(
        vocab_size=tokenizer.vocab_size, mask_id=tokenizer.mask_id, cls_id=tokenizer.cls_id,
        sep_id=tokenizer.sep_id, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob, ngram=FLAGS.ngram,
        favor_shorter_ngram=FLAGS.favor_shorter_ngram, do_whole_word_mask=FLAGS.do_whole_word_mask,
        do_permutation=FLAGS.do_permutation)
    options = GenerationOptions(
        max_seq_length=FLAGS.max_seq_length, dupe_factor=FLAGS.dupe_factor,
        short_seq_prob=FLAGS.short_seq_prob, random_next_sentence=FLAGS.random_next_sentence,
        sentence_prediction=FLAGS.sentence_prediction,
        skip_single_sentence_chunks=FLAGS.skip_single_sentence_chunks,
        random_seed=FLAGS.random_seed, do_lower_case=FLAGS.do_lower_case,
        record_kind=F.DYNAMIC if FLAGS.dynamic_masking_records else F.STATIC, masking=masking)
    create_pretraining_data(FLAGS.input_file, FLAGS.output_file, tokenizer, options,
                            FLAGS.num_workers, FLAGS.invalid_utf8,
                            {name: FLAGS[name].value for name in _FLAG_NAMES})


def console_main() -> None:
    """`albert-create-pretraining-data` (console script), `python -m
    albert_tf.create_pretraining_data`. Bad input, a bad option value or a full disk: one line,
    exit 1, nothing written."""
    flags.mark_flags_as_required(["input_file", "output_file"])
    training_flags.register_float_validators({"masked_lm_prob": training_flags.PROBABILITY,
                                              "short_seq_prob": training_flags.PROBABILITY})
    cli.start("create_pretraining_data", run, __name__)


if __name__ == "__main__":
    console_main()
