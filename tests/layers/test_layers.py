"""Each layer against a NumPy reference of faithfulness §2, plus get_config/from_config round trips."""

import keras
import numpy as np
import pytest

from albert_tf import layers as L
from albert_tf.layers.gather import FIRST_TOKEN


def np_layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def randomize(layer, seed=0):
    """Non-trivial values everywhere (LayerNorm and biases too), so no term can hide."""
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(0, 0.3, w.shape).astype("float32") + (1.0 if "gamma" in w.path else 0.0))


def test_embedding_matches_reference():
    layer = L.AlbertEmbedding(vocab_size=20, embedding_size=8, max_position_embeddings=10)
    ids = np.array([[1, 5, 7, 0], [3, 3, 19, 2]], "int32")
    types = np.array([[0, 0, 1, 1], [0, 1, 1, 1]], "int32")
    layer(ids, types)
    randomize(layer)
    got = np.asarray(layer(ids, types))
    w = {v.path.split("/", 1)[1]: v.numpy() for v in layer.weights}
    x = w["word_embeddings"][ids] + w["token_type_embeddings"][types] + w["position_embeddings"][:4][None]
    expected = np_layer_norm(x, w["layer_norm/gamma"], w["layer_norm/beta"])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert layer.layer_norm.epsilon == 1e-12


def test_embedding_rejects_sequences_longer_than_the_position_table():
    layer = L.AlbertEmbedding(vocab_size=20, embedding_size=8, max_position_embeddings=10)
    with pytest.raises(ValueError, match=r"sequence length 11 exceeds max_position_embeddings \(10\)"):
        layer(np.zeros((1, 11), "int32"), np.zeros((1, 11), "int32"))


def np_attention(x, mask, w, heads):
    b, s, h = x.shape
    d = h // heads

    def split(t):
        return t.reshape(b, s, heads, d)

    q = split(x @ w["query/kernel"] + w["query/bias"])
    k = split(x @ w["key/kernel"] + w["key/bias"])
    v = split(x @ w["value/kernel"] + w["value/bias"])
    scores = np.einsum("bfnd,btnd->bnft", q, k) / np.sqrt(d)
    scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    ctx = np.einsum("bnft,btnd->bfnd", p, v).reshape(b, s, h)
    a = ctx @ w["output_dense/kernel"] + w["output_dense/bias"]
    return np_layer_norm(a + x, w["layer_norm/gamma"], w["layer_norm/beta"])


def weights_by_name(layer):
    return {v.path.split("/", 1)[1]: v.numpy().astype("float64") for v in layer.weights}


def test_attention_matches_reference_with_padding():
    rng = np.random.default_rng(1)
    layer = L.AttentionSublayer(hidden_size=16, num_attention_heads=4)
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "float32")
    layer(x, mask)
    randomize(layer)
    got = np.asarray(layer(x, mask))
    np.testing.assert_allclose(got, np_attention(x.astype("float64"), mask, weights_by_name(layer), 4),
                               atol=1e-5)


def test_attention_at_query_positions_is_those_rows_of_the_reference():
    """Only the asked rows are queries (and residuals); every row is still a key and value."""
    rng = np.random.default_rng(4)
    layer = L.AttentionSublayer(hidden_size=16, num_attention_heads=4)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], "int32")
    layer(x, mask)
    randomize(layer)
    positions = np.array([[0, 5, 2], [0, 3, 3]], "int32")  # any order, repeats allowed
    got = np.asarray(layer(x, mask, query_positions=positions))
    full = np_attention(x.astype("float64"), mask, weights_by_name(layer), 4)
    assert got.shape == (2, 3, 16)
    np.testing.assert_allclose(got, np.take_along_axis(full, positions[:, :, None], 1), atol=1e-5)
    # A slice of rows (the pooler's first token, as the task models ask) is a plain slice.
    first = np.asarray(layer(x, mask, query_positions=FIRST_TOKEN))
    assert first.shape == (2, 1, 16)
    np.testing.assert_allclose(first, full[:, :1], atol=1e-5)
    rows = slice(2, 5)
    np.testing.assert_allclose(layer(x, mask, query_positions=rows), full[:, rows], atol=1e-5)


def test_all_masked_row_equals_no_mask(monkeypatch):
    # faithfulness §2.9: −10000 on every key cancels in the softmax (not uniform, not NaN).
    rng = np.random.default_rng(2)
    layer = L.AttentionSublayer(hidden_size=16, num_attention_heads=2)
    x = rng.normal(size=(1, 4, 16)).astype("float32")
    layer(x)
    randomize(layer)
    masked = layer(x, np.zeros((1, 4), "int32"))
    # Scores near −10000 keep float32's ~1e-3 spacing there, as in the original.
    np.testing.assert_allclose(masked, layer(x), atol=3e-3)
    # A −1e9 bias swamps the scores and gives uniform attention: that must differ.
    from albert_tf.layers import attention as attention_module
    monkeypatch.setattr(attention_module, "attention_mask_bias",
                        lambda m: np.full((1, 1, 1, 4), -1e9, "float32"))
    uniform = layer(x, np.zeros((1, 4), "int32"))
    assert np.abs(np.asarray(masked) - np.asarray(uniform)).max() > 1e-2


def test_feed_forward_matches_reference():
    rng = np.random.default_rng(3)
    layer = L.FeedForwardSublayer(hidden_size=8, intermediate_size=12)
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    layer(x)
    randomize(layer)
    w = weights_by_name(layer)
    h = x @ w["intermediate/kernel"] + w["intermediate/bias"]
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    o = h @ w["output_dense/kernel"] + w["output_dense/bias"]
    expected = np_layer_norm(o + x, w["layer_norm/gamma"], w["layer_norm/beta"])
    np.testing.assert_allclose(layer(x), expected, atol=1e-5)


def test_classification_head_uses_the_transposed_layout():
    head = L.ClassificationHead(num_classes=3, hidden_size=4)
    x = np.arange(8, dtype="float32").reshape(2, 4)
    head(x)
    randomize(head)
    expected = x @ head.output_weights.numpy().T + head.output_bias.numpy()
    assert tuple(head.output_weights.shape) == (3, 4)
    np.testing.assert_allclose(head(x), expected, atol=1e-5)


def test_masked_lm_head_is_tied_to_the_word_table():
    emb = L.AlbertEmbedding(vocab_size=11, embedding_size=4)
    head = L.MaskedLMHead(vocab_size=11, hidden_size=6, embedding_size=4, embedding=emb)
    emb(np.zeros((1, 3), "int32"))
    seq = np.random.default_rng(4).normal(size=(2, 5, 6)).astype("float32")
    positions = np.array([[0, 4], [2, 2]], "int32")
    logits = head(seq, positions)
    randomize(emb), randomize(head)
    logits = np.asarray(head(seq, positions))
    w = weights_by_name(head)
    gathered = np.stack([seq[0][[0, 4]], seq[1][[2, 2]]])
    t = gathered @ w["dense/kernel"] + w["dense/bias"]
    t = 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3)))
    t = np_layer_norm(t, w["layer_norm/gamma"], w["layer_norm/beta"])
    expected = t @ emb.word_embeddings.numpy().T + w["output_bias"]
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    assert "decoder" not in " ".join(v.path for v in head.weights)


def test_pooler_is_tanh_of_the_first_token():
    pooler = L.Pooler(hidden_size=4)
    seq = np.random.default_rng(5).normal(size=(2, 3, 4)).astype("float32")
    pooler(seq)
    randomize(pooler)
    expected = np.tanh(seq[:, 0] @ pooler.dense.kernel.numpy() + pooler.dense.bias.numpy())
    np.testing.assert_allclose(pooler(seq), expected, atol=1e-6)


LAYER_FACTORIES = {
    "embedding": lambda: L.AlbertEmbedding(vocab_size=20, embedding_size=8, max_position_embeddings=16,
                                           dropout_rate=0.1),
    "attention": lambda: L.AttentionSublayer(16, 4, 0.05, 0.1, 0.2),
    "feed_forward": lambda: L.FeedForwardSublayer(16, 24, "relu", 0.03, 0.1),
    "block": lambda: L.TransformerBlock(16, 4, 24, "gelu", 0.02, 0.1, 0.1),
    "stack": lambda: L.SharedTransformerStack(16, 5, 4, 24, num_hidden_groups=2, inner_group_num=2,
                                              cross_layer_sharing="ffn"),
    "pooler": lambda: L.Pooler(16, 0.05),
    "mlm_head": lambda: L.MaskedLMHead(20, 16, 8, "gelu", 0.02),
    "classifier": lambda: L.ClassificationHead(3, 16, 0.02, 0.1),
}


@pytest.mark.parametrize("name", sorted(LAYER_FACTORIES))
def test_get_config_round_trip(name):
    layer = LAYER_FACTORIES[name]()
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    # Serialised through Keras' registry as a user's model file would be.
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer) and restored.get_config() == config
