"""AlbertSpanLabeler: the v1 and v2 SQuAD heads against NumPy, names, original round trips."""

import numpy as np
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.models import AlbertSpanLabeler
from albert_tf.squad.modeling import squad_v1_example_loss, squad_v2_example_loss
from tests.conftest import random_inputs, tiny_config

SEQ = 12
ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def _feed(config, seed=0):
    feed = {k: v for k, v in random_inputs(config, seq=SEQ, seed=seed).items() if k in ENCODER_KEYS}
    p_mask = np.ones((3, SEQ), "int32")
    p_mask[:, 0] = 0  # [CLS]
    p_mask[:, 4:SEQ - 5] = 0  # window pieces (the padding of rows 1, 2 stays masked)
    return feed, p_mask


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _layer_norm(x, gamma, beta):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def _weights(model):
    return {name: v.numpy() for name, v in checkpoints.variable_map(model).items()}


def _numpy_v2(w, h, p_mask, starts):
    """The v2 head of faithfulness §9.6 in NumPy: start log-probs, end log-probs given starts, cls."""
    p = p_mask.astype(np.float64)
    s = (h @ w["start_logits/dense/kernel"])[..., 0] + w["start_logits/dense/bias"][0]
    s = s * (1 - p) - 1e30 * p
    h_s = h[np.arange(len(h)), starts]  # [B, H]
    x = np.concatenate([h, np.broadcast_to(h_s[:, None], h.shape)], -1)
    x = np.tanh(x @ w["end_logits/dense_0/kernel"] + w["end_logits/dense_0/bias"])
    x = _layer_norm(x, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
    e = (x @ w["end_logits/dense_1/kernel"])[..., 0] + w["end_logits/dense_1/bias"][0]
    e = e * (1 - p) - 1e30 * p
    probs = np.exp(_log_softmax(s))
    weighted = np.einsum("bs,bsh->bh", probs, h)
    a = np.tanh(np.concatenate([weighted, h[:, 0]], -1) @ w["answer_class/dense_0/kernel"]
                + w["answer_class/dense_0/bias"])
    cls = (a @ w["answer_class/dense_1/kernel"])[:, 0]
    return _log_softmax(s), _log_softmax(e), cls


def test_v1_logits_are_the_squad_weights_on_the_sequence_output():
    config = tiny_config()
    model = AlbertSpanLabeler(config)
    feed, _ = _feed(config)
    out = model(feed)
    h = model.encoder(feed)["sequence_output"].numpy()
    w = _weights(model)
    logits = h @ w["cls/squad/output_weights"].T + w["cls/squad/output_bias"]
    np.testing.assert_allclose(out["start_logits"], logits[..., 0], atol=1e-5)
    np.testing.assert_allclose(out["end_logits"], logits[..., 1], atol=1e-5)  # unmasked (Q22)
    assert w["cls/squad/output_weights"].shape == (2, 32)


def test_v2_head_matches_numpy_in_training_and_beam_search():
    config = tiny_config()
    model = AlbertSpanLabeler(config, version_2_with_negative=True, start_n_top=3, end_n_top=2,
                              dropout_prob=0.0)
    feed, p_mask = _feed(config)
    starts = np.array([5, 0, 6], "int32")
    out = model({**feed, "p_mask": p_mask, "start_positions": starts}, training=True)
    h = model.encoder(feed)["sequence_output"].numpy().astype(np.float64)
    w = {k: v.astype(np.float64) for k, v in _weights(model).items()}
    start_lp, end_lp, cls = _numpy_v2(w, h, p_mask, starts)
    open_ = p_mask == 0
    np.testing.assert_allclose(out["start_log_probs"].numpy()[open_], start_lp[open_], atol=1e-4)
    np.testing.assert_allclose(out["end_log_probs"].numpy()[open_], end_lp[open_], atol=1e-4)
    np.testing.assert_allclose(out["cls_logits"], cls, atol=1e-4)
    assert (out["start_log_probs"].numpy()[~open_] < -1e29).all()
    # Given starts, the "beam" is the best ends given those starts, once per beam start.
    np.testing.assert_array_equal(out["end_top_index"].numpy(),
                                  np.tile(np.argsort(-end_lp, -1)[:, :2], 3))

    # Inference: beam over the 3 best starts, 2 best ends for each (start-major).
    pred = model({**feed, "p_mask": p_mask, "start_positions": None})
    top_starts = pred["start_top_index"].numpy()
    np.testing.assert_array_equal(top_starts, np.argsort(-start_lp, -1)[:, :3])
    np.testing.assert_allclose(pred["start_top_log_probs"], np.sort(start_lp, -1)[:, ::-1][:, :3], atol=1e-4)
    for i in range(3):
        _, beam_end_lp, _ = _numpy_v2(w, h, p_mask, top_starts[:, i])
        np.testing.assert_array_equal(pred["end_top_index"].numpy()[:, 2 * i:2 * i + 2],
                                      np.argsort(-beam_end_lp, -1)[:, :2])
        np.testing.assert_allclose(pred["end_top_log_probs"].numpy()[:, 2 * i:2 * i + 2],
                                   np.sort(beam_end_lp, -1)[:, ::-1][:, :2], atol=1e-4)
    _, best_start_end_lp, _ = _numpy_v2(w, h, p_mask, top_starts[:, 0])
    np.testing.assert_allclose(pred["end_log_probs"].numpy()[open_], best_start_end_lp[open_], atol=1e-4)


def test_v2_answer_class_dropout_only_in_training():
    config = tiny_config()
    model = AlbertSpanLabeler(config, version_2_with_negative=True, dropout_prob=0.5)
    feed, p_mask = _feed(config)
    inputs = {**feed, "p_mask": p_mask, "start_positions": np.zeros(3, "int32")}
    a, b = model(inputs)["cls_logits"], model(inputs)["cls_logits"]
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(model(inputs, training=True)["cls_logits"], a)


def test_v2_checkpoint_names_and_original_round_trip(tmp_path):
    config = tiny_config()
    model = AlbertSpanLabeler(config, version_2_with_negative=True)
    shapes = {k: tuple(v.shape) for k, v in checkpoints.variable_map(model).items()
              if not k.startswith("bert/")}
    assert shapes == {
        "start_logits/dense/kernel": (32, 1), "start_logits/dense/bias": (1,),
        "end_logits/dense_0/kernel": (64, 32), "end_logits/dense_0/bias": (32,),
        "end_logits/LayerNorm/gamma": (32,), "end_logits/LayerNorm/beta": (32,),
        "end_logits/dense_1/kernel": (32, 1), "end_logits/dense_1/bias": (1,),
        "answer_class/dense_0/kernel": (64, 32), "answer_class/dense_0/bias": (32,),
        "answer_class/dense_1/kernel": (32, 1)}
    feed, p_mask = _feed(config)
    inputs = {**feed, "p_mask": p_mask, "start_positions": None}
    path = checkpoints.save_original_checkpoint(model, str(tmp_path / "model.ckpt"))
    other = AlbertSpanLabeler(config, version_2_with_negative=True)
    report = checkpoints.load_original_checkpoint(other, path)
    assert not report.missing and not report.unused
    for key in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        np.testing.assert_allclose(other(inputs)[key], model(inputs)[key], atol=1e-6)


def test_losses_match_their_definitions_and_train_every_head_variable():
    config = tiny_config()
    model = AlbertSpanLabeler(config, version_2_with_negative=True)
    feed, p_mask = _feed(config)
    labels = {"start_positions": np.array([5, 0, 6]), "end_positions": np.array([6, 0, 4]),
              "is_impossible": np.array([0, 1, 0])}
    with tf.GradientTape() as tape:
        out = model({**feed, "p_mask": p_mask, "start_positions": labels["start_positions"]},
                    training=True)
        loss = squad_v2_example_loss(labels, out)
        mean_loss = tf.reduce_mean(loss)
    rows = np.arange(3)
    cls = out["cls_logits"].numpy()
    z = labels["is_impossible"]
    expected = (0.5 * (-out["start_log_probs"].numpy()[rows, labels["start_positions"]]
                       - out["end_log_probs"].numpy()[rows, labels["end_positions"]])
                + 0.5 * (np.maximum(cls, 0) - cls * z + np.log1p(np.exp(-np.abs(cls)))))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    head = model.squad_v2_head.trainable_variables
    grads = tape.gradient(mean_loss, head)
    assert len(head) == 11 and all(g is not None for g in grads)
    # Terms that add the same constant to every start or end logit (the two output biases
    # and the end LayerNorm's beta, which reaches the logits as beta · w) cancel in the
    # softmax: their gradient is (numerically) zero, in the original too. All else learns.
    shift_invariant = {"squad_v2_head/start_dense/bias", "squad_v2_head/end_dense_1/bias",
                       "squad_v2_head/end_layer_norm/beta"}
    for variable, grad in zip(head, grads):
        if variable.path in shift_invariant:
            assert np.abs(grad).max() < 1e-6, variable.path
        else:
            assert np.abs(grad).sum() > 1e-6, variable.path

    v1 = {"start_logits": np.array([[0.0, 1.0, 2.0]]), "end_logits": np.array([[3.0, 0.0, 0.0]])}
    loss = squad_v1_example_loss({"start_positions": [2], "end_positions": [0]}, v1)
    expected = 0.5 * (-_log_softmax(v1["start_logits"])[0, 2] - _log_softmax(v1["end_logits"])[0, 0])
    np.testing.assert_allclose(loss, [expected], rtol=1e-6)
