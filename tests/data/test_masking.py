"""N-gram masking (faithfulness §5.6): numpy (writer) and TF (dynamic masking) paths.

Expected values come from the spec's algorithm worked out by hand or from scipy's tests,
never from our own outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from albert_tf.data.masking import MaskingOptions, mask_batch
from albert_tf.data.masking_tf import mask_batch_tf

CLS, SEP, MASK = 2, 3, 4
P_VALUE = 1e-3


def make_rows(rng, batch, seq, lengths=None, word_start_prob=1.0, vocab=1000):
    """Rows `[CLS] A [SEP] B [SEP]` with ids in [10, vocab), padded with 0."""
    if lengths is None:
        lengths = rng.integers(5, seq + 1, batch)
    ids = rng.integers(10, vocab, (batch, seq))
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int64)
    ids *= mask
    ids[:, 0] = CLS
    middle = np.maximum(1, lengths // 2)
    ids[np.arange(batch), middle] = SEP
    ids[np.arange(batch), lengths - 1] = SEP
    word_start = rng.random((batch, seq)) < word_start_prob
    return ids, mask, word_start


def run_numpy(ids, mask, word_start, options, seed=0):
    return mask_batch(np.random.default_rng(seed), ids, mask, word_start, options)


def run_tf(ids, mask, word_start, options, seed=0):
    batch = {"input_ids": tf.constant(ids, tf.int32), "input_mask": tf.constant(mask, tf.int32),
             "token_boundary": tf.constant(word_start, tf.int32),
             "segment_ids": tf.zeros_like(tf.constant(ids, tf.int32)),
             "next_sentence_labels": tf.zeros([len(ids), 1], tf.int32)}
    out = tf.function(lambda b: mask_batch_tf(b, options, tf.constant([seed, 7], tf.int64)))(batch)
    return {k: v.numpy() for k, v in out.items()}


RUNNERS = {"numpy": run_numpy, "tf": run_tf}


def run_lengths(positions, weights):
    """Lengths of maximal runs of consecutive masked positions, sorted, per row."""
    out = []
    for pos, w in zip(positions, weights):
        p = sorted(pos[w > 0].tolist())
        runs, current = [], 1
        for a, b in zip(p, p[1:]):
            if b == a + 1:
                current += 1
            else:
                runs.append(current)
                current = 1
        runs.append(current)
        out.append(tuple(sorted(runs)))
    return out


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("favor_shorter", [True, False])
def test_ngram_length_distribution_chi_square(runner, favor_shorter):
    """Budget 3 in a long sequence of one-token words. By the spec's procedure the first span
    has n ~ p, and the outcome is {3} with p3, {1,2} with p2 + p1(p2+p3), {1,1,1} with p1²
    (adjacent spans merging and the end effect have probability ~1/1000)."""
    p1, p2, p3 = (6 / 11, 3 / 11, 2 / 11) if favor_shorter else (2 / 11, 3 / 11, 6 / 11)
    expected = {(3,): p3, (1, 2): p2 + p1 * (p2 + p3), (1, 1, 1): p1 * p1}
    assert abs(sum(expected.values()) - 1) < 1e-12
    rng = np.random.default_rng(1)
    n, seq = 2000, 1024
    ids, mask, _ = make_rows(rng, n, seq, lengths=np.full(n, seq))
    ids[:, seq // 2] = 99  # a single [SEP] pair at the end only
    ids[:, seq - 2] = SEP
    options = MaskingOptions(vocab_size=1000, max_predictions_per_seq=3, favor_shorter_ngram=favor_shorter)
    out = RUNNERS[runner](ids, mask, np.ones_like(mask, bool), options, seed=3)
    outcomes = run_lengths(out["masked_lm_positions"], out["masked_lm_weights"])
    observed = [sum(o == k for o in outcomes) for k in expected]
    assert sum(observed) >= n - 10  # a handful of merged runs at most
    result = stats.chisquare(observed, [sum(observed) * p for p in expected.values()])
    assert result.pvalue > P_VALUE, (observed, expected)


@pytest.mark.parametrize("runner", RUNNERS)
def test_80_10_10_replacement(runner):
    vocab = 50
    rng = np.random.default_rng(2)
    ids, mask, ws = make_rows(rng, 3000, 128, vocab=vocab)
    options = MaskingOptions(vocab_size=vocab, max_predictions_per_seq=20)
    out = RUNNERS[runner](ids, mask, ws, options, seed=5)
    rows, cols = np.nonzero(out["masked_lm_weights"])
    pos = out["masked_lm_positions"][rows, cols]
    original = ids[rows, pos]
    assert np.array_equal(out["masked_lm_ids"][rows, cols], original)
    produced = out["input_ids"][rows, pos]
    total = len(produced)
    # A random replacement (10%) is uniform over the whole vocabulary, specials included (Q9).
    p_mask = 0.8 + 0.1 / vocab
    p_same = 0.1 + 0.1 / vocab
    p_other_special = 0.1 * 4 / vocab  # <pad>, <unk>, [CLS], [SEP] (ids 0..3)
    for hits, p in [((produced == MASK).sum(), p_mask), ((produced == original).sum(), p_same),
                    ((produced < MASK).sum(), p_other_special)]:
        assert stats.binomtest(int(hits), total, p).pvalue > P_VALUE, (hits, total, p)
    # Unmasked positions are untouched.
    untouched = out["input_ids"].copy()
    untouched[rows, pos] = ids[rows, pos]
    assert np.array_equal(untouched, ids)


@pytest.mark.parametrize("runner", RUNNERS)
def test_positions_budget_and_padding(runner):
    rng = np.random.default_rng(3)
    lengths = np.array([5, 6, 10, 30, 50, 64, 64, 20])
    ids, mask, _ = make_rows(rng, len(lengths), 64, lengths=lengths)
    options = MaskingOptions(vocab_size=1000, max_predictions_per_seq=8)
    out = RUNNERS[runner](ids, mask, np.ones_like(mask, bool), options)
    # min(8, max(1, round_half_even(L·0.15))): 0.75→1, 0.9→1, 1.5→2, 4.5→4, 7.5→8, 9.6→8, 9.6→8, 3.0→3
    assert out["masked_lm_weights"].sum(axis=1).tolist() == [1, 1, 2, 4, 8, 8, 8, 3]
    for row in range(len(lengths)):
        w = out["masked_lm_weights"][row]
        pos = out["masked_lm_positions"][row]
        real = pos[w > 0]
        assert np.all(np.diff(real) > 0)  # sorted, distinct
        assert np.all(real < lengths[row])  # never on padding
        assert not np.isin(ids[row, real], [CLS, SEP]).any()  # never on [CLS]/[SEP]
        assert np.all(pos[w == 0] == 0) and np.all(out["masked_lm_ids"][row][w == 0] == 0)
    assert out["masked_lm_weights"].dtype == np.float32


def spec_groups(ids_row, ws_row, length, whole_word=True):
    """Candidate groups by the faithfulness §5.6.1 loop, written independently."""
    groups = []
    for i in range(length):
        if ids_row[i] in (CLS, SEP):
            continue
        if whole_word and groups and not ws_row[i]:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


@pytest.mark.parametrize("runner", RUNNERS)
def test_whole_word_masking_masks_whole_groups(runner):
    rng = np.random.default_rng(4)
    ids, mask, ws = make_rows(rng, 400, 64, word_start_prob=0.5)
    # Q32: a continuation piece right after the middle [SEP] joins the last word of A.
    middle = np.argmax(ids[:, 1:] == SEP, axis=1) + 1
    ws[np.arange(400), middle + 1] = False
    options = MaskingOptions(vocab_size=1000, max_predictions_per_seq=20)
    out = RUNNERS[runner](ids, mask, ws, options)
    for row in range(400):
        chosen = set(out["masked_lm_positions"][row][out["masked_lm_weights"][row] > 0].tolist())
        for group in spec_groups(ids[row], ws[row], int(mask[row].sum())):
            inside = [g in chosen for g in group]
            assert all(inside) or not any(inside), (row, group, chosen)


def test_no_whole_word_masks_single_tokens_of_words():
    """With do_whole_word_mask=False every token is its own group, even inside a word."""
    rng = np.random.default_rng(5)
    ids, mask, _ = make_rows(rng, 300, 64, lengths=np.full(300, 64))
    no_starts = np.zeros_like(mask, bool)  # one long "word"
    options = MaskingOptions(vocab_size=1000, max_predictions_per_seq=9, do_whole_word_mask=False)
    out = run_numpy(ids, mask, no_starts, options)
    assert np.all(out["masked_lm_weights"].sum(axis=1) == 9)  # round(64·0.15) = 10 → capped at 9
    whole = run_numpy(ids, mask, no_starts, options.replace(do_whole_word_mask=True))
    # One group holding all of A, [SEP] skipped, B: too large for the budget → nothing masked.
    assert np.all(whole["masked_lm_weights"].sum(axis=1) == 0)


def test_token_boundary_feature():
    rng = np.random.default_rng(6)
    ids, mask, ws = make_rows(rng, 50, 32, word_start_prob=0.5)
    out = run_numpy(ids, mask, ws, MaskingOptions(vocab_size=1000))
    for row in range(50):
        for i in range(32):
            expected = 0 if not mask[row, i] else int(ids[row, i] in (CLS, SEP) or ws[row, i])
            assert out["token_boundary"][row, i] == expected


def test_zero_masked_lm_prob_masks_nothing():
    rng = np.random.default_rng(7)
    ids, mask, ws = make_rows(rng, 20, 32)
    out = run_numpy(ids, mask, ws, MaskingOptions(vocab_size=1000, masked_lm_prob=0.0))
    assert out["masked_lm_weights"].sum() == 0 and np.array_equal(out["input_ids"], ids)


def test_permutation_adds_permuted_predictions():
    """Q13/§5.6.8: up to M more positions whose tokens are permuted among themselves; 2M slots.

    Every row holds distinct ids (10 + position) and the vocabulary is huge, so a changed,
    non-[MASK] token is either a random replacement (almost surely outside the row's ids) or
    the original token of another predicted position (a permutation)."""
    n, seq, budget = 200, 128, 19  # round(128 · 0.15) = 19
    ids = np.tile(10 + np.arange(seq), (n, 1))
    ids[:, 0], ids[:, 60], ids[:, -1] = CLS, SEP, SEP
    mask = np.ones_like(ids)
    options = MaskingOptions(vocab_size=10**6, max_predictions_per_seq=20, do_permutation=True)
    out = run_numpy(ids, mask, np.ones_like(ids, bool), options)
    assert out["masked_lm_positions"].shape == (n, 40)
    counts = out["masked_lm_weights"].sum(axis=1)
    assert np.all(counts == 2 * budget)  # one-token words: both selections fill their budget
    for row in range(n):
        predicted = out["masked_lm_positions"][row][out["masked_lm_weights"][row] > 0]
        assert np.array_equal(out["masked_lm_ids"][row][:len(predicted)], ids[row, predicted])
        changed = np.nonzero(out["input_ids"][row] != ids[row])[0]
        assert set(changed.tolist()) <= set(predicted.tolist())
        sources = [int(out["input_ids"][row, p]) - 10 for p in changed if out["input_ids"][row, p] != MASK]
        moved = [s for s in sources if 0 <= s < seq]
        assert set(moved) <= set(predicted.tolist())
        assert len(moved) == len(set(moved))  # each source token lands in one place
        assert len(moved) >= budget // 2  # a random permutation of 19 tokens moves most of them


def test_numpy_and_tf_statistics_agree():
    """One algorithm, two random streams: budgets, run structure and replacement rates agree."""
    rng = np.random.default_rng(9)
    ids, mask, ws = make_rows(rng, 2000, 96, word_start_prob=0.6)
    options = MaskingOptions(vocab_size=1000, max_predictions_per_seq=12)
    a = run_numpy(ids, mask, ws, options, seed=11)
    b = run_tf(ids, mask, ws, options, seed=11)

    def histogram(values, bins):
        return [sum(v == k for v in values) for k in bins]

    # Number of predictions per row: identical (the budget is deterministic and always met here
    # or not, by the same rule) up to rows where whole-word groups block the last slots.
    diff = np.abs(a["masked_lm_weights"].sum(1) - b["masked_lm_weights"].sum(1))
    assert diff.mean() < 0.5
    longest_a = [max(r) for r in run_lengths(a["masked_lm_positions"], a["masked_lm_weights"])]
    longest_b = [max(r) for r in run_lengths(b["masked_lm_positions"], b["masked_lm_weights"])]
    bins = sorted(set(longest_a) | set(longest_b))
    table = np.array([histogram(longest_a, bins), histogram(longest_b, bins)])
    table = table[:, table.sum(0) >= 10]
    assert stats.chi2_contingency(table).pvalue > P_VALUE, table
    for out_a, out_b in [(a, b)]:
        kinds = []
        for out in (out_a, out_b):
            rows, cols = np.nonzero(out["masked_lm_weights"])
            produced = out["input_ids"][rows, out["masked_lm_positions"][rows, cols]]
            original = out["masked_lm_ids"][rows, cols]
            kinds.append([(produced == MASK).sum(), (produced == original).sum(),
                          ((produced != MASK) & (produced != original)).sum()])
        assert stats.chi2_contingency(np.array(kinds)).pvalue > P_VALUE, kinds
    # Per-position masking frequency profile (whole sequence, 8-token bins).
    profile = []
    for out in (a, b):
        rows, cols = np.nonzero(out["masked_lm_weights"])
        profile.append(np.bincount(out["masked_lm_positions"][rows, cols] // 8, minlength=12))
    assert stats.chi2_contingency(np.array(profile)).pvalue > P_VALUE, profile


def test_tf_masks_change_with_seed_and_repeat_for_same_seed():
    rng = np.random.default_rng(10)
    ids, mask, ws = make_rows(rng, 16, 64)
    options = MaskingOptions(vocab_size=1000)
    first = run_tf(ids, mask, ws, options, seed=1)
    again = run_tf(ids, mask, ws, options, seed=1)
    other = run_tf(ids, mask, ws, options, seed=2)
    assert np.array_equal(first["masked_lm_positions"], again["masked_lm_positions"])
    assert not np.array_equal(first["masked_lm_positions"], other["masked_lm_positions"])
