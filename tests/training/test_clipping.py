"""Clipping by global norm as the original computes the norm (Q35) against TF1 and NumPy.

The witness of *which* gradients TF1 hands `clip_by_global_norm` as IndexedSlices is a TF1
graph (tf.compat.v1) with the original's embedding ops; the trajectories are checked
against a NumPy reference of the original's clip + LAMB/AdamW update (faithfulness §6.3).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import AlbertClassifier, AlbertPretrainer
from albert_tf.training import Callback, LoopConfig, MeanLossObjective, Trainer, create_optimizer
from albert_tf.training.clipping import OccurrenceNormRule
from albert_tf.training.distribute import uses_one_hot_lookups
from albert_tf.pretraining.modeling import PretrainingObjective
from tests.conftest import tiny_config as default_config
from tests.training.test_optimizers import reference_lr, reference_update

# 6 steps: two rounds of the 3 fixed batches, warm-up and decay (a mechanism: the count the
# norm is made of, step by step). One layer: ALBERT shares its layer's weights, so the model
# has the same variables as with two, at half the work per step and per trace.
STEPS, BATCH, SEQ, LR, WARMUP = 6, 8, 16, 0.005, 2


def tiny_config(**overrides):
    return default_config(**{"num_hidden_layers": 1, **overrides})


# ----- the witness: what TF1 hands clip_by_global_norm, and what it makes of it -----
def tf1_witness(tied_decoder: bool, use_tpu: bool = False
                ) -> tuple[dict[str, str], float, float, float]:
    """The original's embedding ops in a TF1 graph (tf.compat.v1), as ALBERT's modeling.py
    builds them: word and token-type tables by tf.nn.embedding_lookup, or by one-hot matmul
    when `use_one_hot_embeddings` (= --use_tpu); positions by tf.slice; then either a pooled
    classifier or the MLM decoder tied to the word table.

    Returns (gradient type by table, the norm `tf.clip_by_global_norm` computes, the NumPy
    norm of the same gradients with every IndexedSlices row counted once, the NumPy norm of
    the summed dense gradients)."""
    graph = tf.Graph()
    with graph.as_default():
        v1 = tf.compat.v1
        v1.set_random_seed(0)
        ids = tf.constant([[5, 7, 5, 5], [7, 7, 3, 5]])
        types = tf.constant([[0, 0, 1, 1], [0, 1, 1, 1]])
        words = v1.get_variable("word_embeddings", [10, 4])
        type_table = v1.get_variable("token_type_embeddings", [2, 4])
        positions = v1.get_variable("position_embeddings", [8, 4])

        def lookup(table, table_ids, depth):
            if use_tpu:
                one_hot = tf.one_hot(tf.reshape(table_ids, [-1]), depth)
                return tf.reshape(tf.matmul(one_hot, table), [2, 4, 4])
            return tf.nn.embedding_lookup(table, table_ids)

        x = lookup(words, ids, 10) + lookup(type_table, types, 2)
        x += tf.reshape(tf.slice(positions, [0, 0], [4, -1]), [1, 4, 4])
        hidden = tf.tanh(x)
        if tied_decoder:
            logits = tf.matmul(tf.reshape(hidden, [-1, 4]), words, transpose_b=True)
        else:
            logits = tf.matmul(hidden[:, 0], v1.get_variable("output_weights", [4, 3]))
        loss = 3.0 * tf.reduce_sum(tf.square(logits))
        tables = [words, type_table, positions]
        grads = v1.gradients(loss, v1.trainable_variables())
        _, norm = v1.clip_by_global_norm(grads, 1.0)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            values, norm_value = session.run([grads, norm])
    occurrence_sq = dense_sq = 0.0
    for value in values:
        if hasattr(value, "indices"):  # IndexedSlicesValue: one row per token occurrence
            rows = value.values.astype(np.float64)
            occurrence_sq += float((rows ** 2).sum())
            summed = np.zeros(value.dense_shape)
            np.add.at(summed, value.indices, rows)
            dense_sq += float((summed ** 2).sum())
        else:
            occurrence_sq += float((value.astype(np.float64) ** 2).sum())
            dense_sq += float((value.astype(np.float64) ** 2).sum())
    types_by_table = {t.op.name: type(g).__name__ for t, g in zip(tables, grads[:3])}
    return (types_by_table, float(norm_value), float(np.sqrt(occurrence_sq)),
            float(np.sqrt(dense_sq)))


def test_tf1_counts_gathered_rows_per_occurrence_off_tpu():
    """Off TPU the original gathers the word and the token-type table: both gradients are
    IndexedSlices, and clip_by_global_norm's norm counts their rows one per occurrence."""
    types, norm, per_occurrence, dense = tf1_witness(tied_decoder=False)
    assert types == {"word_embeddings": "IndexedSlices", "token_type_embeddings": "IndexedSlices",
                     "position_embeddings": "SymbolicTensor"}
    assert norm == pytest.approx(per_occurrence, rel=1e-6)
    assert abs(dense / norm - 1) > 1e-3, (norm, dense)  # repeated ids: the counts differ
    # Pretraining: the MLM decoder reads the word table densely; TF1 sums both into one
    # Tensor. The token-type table is still read by the lookup alone.
    types, norm, per_occurrence, dense = tf1_witness(tied_decoder=True)
    assert types == {"word_embeddings": "SymbolicTensor", "token_type_embeddings": "IndexedSlices",
                     "position_embeddings": "SymbolicTensor"}
    assert norm == pytest.approx(per_occurrence, rel=1e-6)
    assert abs(dense / norm - 1) > 1e-3, (norm, dense)


def test_tf1_on_tpu_every_table_is_dense():
    """--use_tpu looks both tables up by one-hot matmul: nothing counts per occurrence."""
    types, norm, _, dense = tf1_witness(tied_decoder=False, use_tpu=True)
    assert set(types.values()) == {"SymbolicTensor"}
    assert norm == pytest.approx(dense, rel=1e-6)


# ----- the models and their fixed batches -----
def classifier_batches(num_batches: int = 3, seed: int = 0):
    """Sentence pairs over 6 distinct tokens (every token repeats many times)."""
    rng = np.random.default_rng(seed)
    n = num_batches * BATCH
    ids = rng.choice([2, 3, 11, 12, 13, 14], (n, SEQ)).astype("int32")
    mask = np.ones((n, SEQ), "int32")
    mask[1::2, SEQ - 3:] = 0
    types = np.zeros((n, SEQ), "int32")
    types[:, SEQ // 2:] = 1
    features = {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types * mask}
    labels = {"label_ids": rng.integers(0, 3, n).astype("int32")}
    return features, labels


def pretraining_batches(num_batches: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = num_batches * BATCH
    ids = rng.choice([2, 3, 11, 12, 13, 14], (n, SEQ)).astype("int32")
    positions = np.stack([rng.choice(np.arange(1, SEQ), 4, replace=False) for _ in range(n)])
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": (np.arange(SEQ) >= SEQ // 2).astype("int32") + 0 * ids,
                "masked_lm_positions": positions.astype("int32")}
    labels = {"masked_lm_ids": rng.choice([11, 12, 13, 14], (n, 4)).astype("int32"),
              "masked_lm_weights": np.ones((n, 4), "float32"),
              "next_sentence_labels": rng.integers(0, 2, n).astype("int32")}
    return features, labels


# The losses are scaled up so that every step's global norm is above 1 (clipped) while the
# tiny model keeps its usual initialisation (a larger one makes its trajectory chaotic).
LOSS_SCALE = 20.0


def classification_loss(labels, outputs):
    return LOSS_SCALE * tf.nn.sparse_softmax_cross_entropy_with_logits(labels["label_ids"],
                                                                       outputs["logits"])


class ScaledPretrainingObjective(PretrainingObjective):
    def loss(self, labels, outputs, normalizers):
        return LOSS_SCALE * super().loss(labels, outputs, normalizers)


CASES = {
    "classifier": (lambda dtype=None: AlbertClassifier(tiny_config(), 3, dropout_rate=0.0,
                                                       dtype=dtype),
                   lambda: MeanLossObjective(classification_loss), classifier_batches),
    "pretrainer": (lambda dtype=None: AlbertPretrainer(tiny_config(), dtype=dtype),
                   ScaledPretrainingObjective,
                   pretraining_batches),
}


class NormLog(Callback):
    def __init__(self):
        self.norms = []

    def on_log(self, step, logs):
        self.norms.append(logs["gradient_norm"])


def initial_weights(case):
    keras.utils.set_random_seed(0)
    return CASES[case][0]().get_weights()


def train(case, optimizer, mode, output_dir, strategy=None, **loop):
    """STEPS steps of the case's model from `initial_weights` on its batches, in order;
    returns (trainer, per-step global norms as logged)."""
    model_fn, objective_fn, batches_fn = CASES[case]
    features, labels = batches_fn()
    initial = initial_weights(case)

    def dataset_fn(context):
        ds = tf.data.Dataset.from_tensor_slices((features, labels)).repeat()
        return ds.batch(context.get_per_replica_batch_size(BATCH), drop_remainder=True)

    keras.utils.set_random_seed(0)
    log = NormLog()
    trainer = Trainer(
        model_fn, objective_fn(),
        LoopConfig(str(output_dir), num_train_steps=STEPS, train_batch_size=BATCH, log_steps=1,
                   iterations_per_loop=STEPS, save_checkpoints_steps=STEPS,
                   clip_norm_mode=mode, **loop),
        optimizer_fn=lambda: create_optimizer(optimizer, LR, STEPS, WARMUP),
        strategy=strategy, callbacks=[log],
        init_fn=lambda model: model.set_weights(initial))
    trainer.train(dataset_fn)
    return trainer, log.norms


# ----- the NumPy reference of the original's step -----
def reference_run(case, optimizer, initial, per_occurrence_tables):
    """STEPS updates as the original: tf.gradients → clip_by_global_norm(1.0), where the
    tables in `per_occurrence_tables` count Σ‖row‖² over token occurrences → dense LAMB /
    AdamW update in float64. The gradients come from a GradientTape of the same model at the
    reference's weights. Returns (weights by path, per-step norms)."""
    model_fn, objective_fn, batches_fn = CASES[case]
    features, labels = batches_fn()
    objective = objective_fn()
    model = model_fn()
    model.set_weights(initial)
    variables = model.trainable_variables
    weights = {v.path: v.numpy().astype(np.float64) for v in variables}
    moments = {p: (np.zeros_like(w), np.zeros_like(w)) for p, w in weights.items()}
    num_batches = len(labels[next(iter(labels))]) // BATCH
    norms = []
    for step in range(STEPS):
        rows = slice((step % num_batches) * BATCH, (step % num_batches + 1) * BATCH)
        batch_features = {k: v[rows] for k, v in features.items()}
        batch_labels = {k: tf.constant(v[rows]) for k, v in labels.items()}
        for v in variables:
            v.assign(weights[v.path].astype(np.float32))
        with tf.GradientTape() as tape:
            outputs = model(batch_features, training=True)
            loss = objective.loss(batch_labels, outputs, objective.normalizers(batch_labels))
        grads, square_sum = [], 0.0
        for g, v in zip(tape.gradient(loss, variables), variables):
            table = v.path.rsplit("/", 1)[-1]
            if table in per_occurrence_tables:
                assert isinstance(g, tf.IndexedSlices), v.path
                values = g.values.numpy().astype(np.float64)
                # One row per token occurrence, as TF1's gather gradient (not deduplicated).
                assert values.shape[0] == batch_features["input_word_ids"].size
                square_sum += float((values ** 2).sum())  # one row per occurrence
                dense = np.zeros(v.shape)
                np.add.at(dense, g.indices.numpy(), values)
            else:
                dense = tf.convert_to_tensor(g).numpy().astype(np.float64)
                square_sum += float((dense ** 2).sum())
            grads.append(dense)
        norm = np.sqrt(square_sum)
        norms.append(norm)
        factor = 1.0 / max(norm, 1.0)
        lr = reference_lr(step, LR, STEPS, WARMUP, 0, 1.0)
        for g, v in zip(grads, variables):
            m, s = moments[v.path]
            weights[v.path], m, s = reference_update(v.path, weights[v.path], g * factor, m, s,
                                                     lr, optimizer == "lamb")
            moments[v.path] = (m, s)
    return weights, norms


_REFERENCES: dict = {}
_RUNS: dict = {}


def reference(case, optimizer, tables):
    """`reference_run` from `initial_weights(case)`, computed once per session."""
    key = (case, optimizer, tables)
    if key not in _REFERENCES:
        _REFERENCES[key] = reference_run(case, optimizer, initial_weights(case), tables)
    return _REFERENCES[key]


def trained(case, optimizer, mode, tmp_path_factory, **loop):
    """`train(...)` once per session: (per-occurrence variable paths, norms, final weights)."""
    key = (case, optimizer, mode, tuple(sorted(loop.items())))
    if key not in _RUNS:
        trainer, norms = train(case, optimizer, mode, tmp_path_factory.mktemp("run"), **loop)
        weights = {v.path: v.numpy() for v in trainer.model.trainable_variables}
        _RUNS[key] = (trainer.per_occurrence_variables, norms, weights)
    return _RUNS[key]


def assert_matches(run, expected):
    _, norms, weights = run
    expected_weights, expected_norms = expected
    assert min(expected_norms) > 1.0  # every step is clipped
    np.testing.assert_allclose(norms, expected_norms, rtol=1e-5)
    for path, value in weights.items():
        np.testing.assert_allclose(value, expected_weights[path], atol=1e-5, rtol=0, err_msg=path)


WORDS, TYPES = "embeddings/word_embeddings", "embeddings/token_type_embeddings"
# What the original counts per occurrence off TPU (Q35): every table it gathers, less the
# word table where the tied MLM decoder densifies its gradient.
ORIGINAL_TABLES = {"classifier": ("word_embeddings", "token_type_embeddings"),
                   "pretrainer": ("token_type_embeddings",)}


@pytest.mark.parametrize("optimizer", ["lamb", "adamw"])
def test_classifier_counts_word_and_type_rows_per_occurrence(tmp_path_factory, optimizer):
    """Fine-tuning: STEPS steps equal the reference with the word and the token-type table
    counted per occurrence."""
    run = trained("classifier", optimizer, "original", tmp_path_factory)
    assert run[0] == [WORDS, TYPES]
    assert_matches(run, reference("classifier", optimizer, ORIGINAL_TABLES["classifier"]))


@pytest.mark.parametrize("optimizer", ["lamb", "adamw"])
def test_pretrainer_counts_type_rows_per_occurrence(tmp_path_factory, optimizer):
    """Pretraining: the tied decoder makes the word gradient dense (as TF1's), the
    token-type table still counts per occurrence; STEPS steps equal that reference."""
    run = trained("pretrainer", optimizer, "original", tmp_path_factory)
    assert run[0] == [TYPES]
    assert_matches(run, reference("pretrainer", optimizer, ORIGINAL_TABLES["pretrainer"]))


@pytest.mark.parametrize("case", ["classifier", "pretrainer"])
def test_dense_mode_is_another_trajectory(tmp_path_factory, case):
    original = trained(case, "lamb", "original", tmp_path_factory)
    dense = trained(case, "lamb", "dense", tmp_path_factory)
    assert dense[0] == []
    assert_matches(dense, reference(case, "lamb", ()))
    assert abs(dense[1][0] / original[1][0] - 1) > 0.01, (original[1][0], dense[1][0])
    assert max(np.abs(dense[2][p] - original[2][p]).max() for p in original[2]) > 1e-4


def first_batch(batches_fn):
    """The first BATCH examples of `batches_fn()`: the trainer's first step."""
    features, labels = batches_fn()
    return ({k: v[:BATCH] for k, v in features.items()},
            {k: v[:BATCH] for k, v in labels.items()})


def expanded_gradients(case: str, tables: tuple[str, ...]) -> tuple[dict[str, np.ndarray],
                                                                     np.ndarray]:
    """Gradients of the first batch's loss at `initial_weights(case)`, with every table in
    `tables` given one row per token occurrence: the table is replaced by its rows gathered
    at the batch's ids (in NumPy) and the model reads row k at token k. The forward numbers
    are the same; the (dense) gradient row k is then the gradient at occurrence k alone,
    which is what TF1's IndexedSlices hold. Returns (float64 gradient by table name or path,
    the batch's token-type ids)."""
    model_fn, objective_fn, batches_fn = CASES[case]
    features, labels = first_batch(batches_fn)
    ids, types = features["input_word_ids"], features["input_type_ids"]
    occurrence = np.arange(ids.size, dtype="int32").reshape(ids.shape)
    overrides, inputs = {}, dict(features)
    if "word_embeddings" in tables:
        overrides["vocab_size"] = ids.size
        inputs["input_word_ids"] = occurrence
    if "token_type_embeddings" in tables:
        overrides["type_vocab_size"] = ids.size
        inputs["input_type_ids"] = occurrence
    small = model_fn()
    small.set_weights(initial_weights(case))
    big = {"classifier": lambda: AlbertClassifier(tiny_config(**overrides), 3, dropout_rate=0.0),
           "pretrainer": lambda: AlbertPretrainer(tiny_config(**overrides))}[case]()
    for source, target in zip(small.weights, big.weights):
        assert source.path == target.path
        name = source.path.rsplit("/", 1)[-1]
        value = source.numpy()
        if name in tables:
            value = value[(ids if name == "word_embeddings" else types).reshape(-1)]
        target.assign(value)
    objective = objective_fn()
    batch_labels = {k: tf.constant(v) for k, v in labels.items()}
    with tf.GradientTape() as tape:
        loss = objective.loss(batch_labels, big(inputs, training=True),
                              objective.normalizers(batch_labels))
    variables = big.trainable_variables
    grads = tape.gradient(loss, variables)
    return {v.path: tf.convert_to_tensor(g).numpy().astype(np.float64)
            for v, g in zip(variables, grads)}, types


@pytest.mark.parametrize("case", ["classifier", "pretrainer"])
def test_first_norm_equals_an_independent_per_occurrence_count(tmp_path_factory, case):
    """The first logged global norm (initial weights) is sqrt(Σ‖g‖² of the dense-counted
    gradients + Σ over token occurrences of ‖row‖² of the gathered tables), with the rows
    computed independently of IndexedSlices; the dense run logs the summed-table norm."""
    tables = ORIGINAL_TABLES[case]
    grads, types = expanded_gradients(case, tables)
    dense_part = sum((g ** 2).sum() for path, g in grads.items()
                     if path.rsplit("/", 1)[-1] not in tables)
    rows_part = sum((grads[f"embeddings/{t}"] ** 2).sum() for t in tables)
    # The original's dense norm: rows of one token-type summed (and, for the classifier,
    # rows of one word piece).
    _, _, batches_fn = CASES[case]
    ids = first_batch(batches_fn)[0]["input_word_ids"].reshape(-1)
    summed_part = 0.0
    for table in tables:
        rows = grads[f"embeddings/{table}"]
        keys = ids if table == "word_embeddings" else types.reshape(-1)
        summed = np.zeros((keys.max() + 1, rows.shape[1]))
        np.add.at(summed, keys, rows)
        summed_part += (summed ** 2).sum()
    assert len(np.unique(types)) < types.size and len(np.unique(ids)) < ids.size
    original = trained(case, "lamb", "original", tmp_path_factory)[1][0]
    dense = trained(case, "lamb", "dense", tmp_path_factory)[1][0]
    assert original == pytest.approx(np.sqrt(dense_part + rows_part), rel=1e-5)
    assert dense == pytest.approx(np.sqrt(dense_part + summed_part), rel=1e-5)
    assert original > 1.0 and abs(dense / original - 1) > 0.01, (original, dense)


@pytest.mark.parametrize("case", ["classifier", "pretrainer"])
def test_accumulated_micro_batches_count_every_occurrence(tmp_path_factory, case):
    """k = 2 micro-batches give the one-batch per-occurrence norm at every step."""
    one = trained(case, "lamb", "original", tmp_path_factory)
    two = trained(case, "lamb", "original", tmp_path_factory, gradient_accumulation_steps=2)
    assert two[0] == one[0]
    np.testing.assert_allclose(two[1], one[1], rtol=1e-5)


def test_float16_loss_scaling_logs_and_clips_with_the_unscaled_norm(tmp_path_factory):
    """--dtype=float16: the loop sees gradients of the scaled loss (×2^15) and must unscale
    the norm before clipping; the STEPS steps then follow the float32 norms to half precision."""
    one = trained("classifier", "lamb", "original", tmp_path_factory)
    half = trained("classifier", "lamb", "original", tmp_path_factory, dtype="float16")
    assert half[0] == one[0]
    np.testing.assert_allclose(half[1], one[1], rtol=2e-3)


@pytest.mark.parametrize("case", ["classifier", "pretrainer"])
def test_two_replicas_count_every_occurrence(tmp_path_factory, mirrored_clipping_norms, case):
    """2-replica MirroredStrategy (subprocess): the one-device per-occurrence norms."""
    one = trained(case, "lamb", "original", tmp_path_factory)
    np.testing.assert_allclose(mirrored_clipping_norms[f"{case}_norms"], one[1], rtol=1e-5)


def test_tpu_lookups_and_dense_mode_count_nothing_per_occurrence():
    rows = tf.IndexedSlices(tf.ones((3, 2)), tf.constant([1, 1, 0]), tf.constant([6, 2]))
    words = keras.Variable(np.zeros((6, 2), "float32"), name="word_embeddings")
    types = keras.Variable(np.zeros((6, 2), "float32"), name="token_type_embeddings")
    other = keras.Variable(np.zeros((6, 2), "float32"), name="position_embeddings")
    for table in (words, types):
        assert OccurrenceNormRule("original").counts_per_occurrence(rows, table)
        assert not OccurrenceNormRule("original", one_hot_lookups=True).counts_per_occurrence(
            rows, table)
        assert not OccurrenceNormRule("dense").counts_per_occurrence(rows, table)
    assert not OccurrenceNormRule("original").counts_per_occurrence(rows, other)
    dense, square_sum, flags = OccurrenceNormRule("original").split([rows], [types])
    assert flags == [True] and float(square_sum) == 6.0  # 3 rows of ‖(1, 1)‖² = 2
    np.testing.assert_array_equal(dense[0].numpy()[1], [2.0, 2.0])  # dense norm² would be 10
    with pytest.raises(ValueError, match="original, dense"):
        OccurrenceNormRule("sparse")
    assert not uses_one_hot_lookups(tf.distribute.get_strategy())  # TPUs only
