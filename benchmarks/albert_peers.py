"""What the speed benchmarks share without TensorFlow: the analytic FLOP count of ALBERT and
HF transformers' ALBERT set up as our peer (same config, same loss), so that
`model_speed.py` (CPU, ours and peers) and `gpu_train_step.py` (a GPU machine with PyTorch
only) measure the same work; and the trained-like random weights the CPU benchmarks time."""

from __future__ import annotations

from typing import Any

from albert_tf.config import AlbertConfig


def albert_flops(config: AlbertConfig, batch: int, seq: int, masked: int) -> dict[str, float]:
    """Multiply-add FLOPs (2 per MAC) of the matmuls of one forward pass, by part.

    Elementwise work (softmax, LayerNorm, gelu, bias adds) and the embedding lookups are
    not counted: they are < 2% of the total for base and would only flatter the figure.
    """
    tokens = batch * seq
    h, e, i, v = config.hidden_size, config.embedding_size, config.intermediate_size, config.vocab_size
    applications = config.num_hidden_layers * config.inner_group_num
    parts = {
        "embedding_projection": 2 * tokens * e * h if e != h else 0,
        "attention_qkvo": applications * 4 * 2 * tokens * h * h,
        # scores Q·Kᵀ and context P·V: each 2·B·N·S·S·D = 2·tokens·S·H
        "attention_scores_context": applications * 2 * 2 * tokens * seq * h,
        "ffn": applications * 2 * 2 * tokens * h * i,
        "pooler": 2 * batch * h * h,
        # MLM head on the masked positions only: dense H→E, tied decoder E→V
        "mlm_head": 2 * batch * masked * (h * e + e * v),
        "sop_head": 2 * batch * h * 2,
    }
    parts["encoder_forward"] = sum(parts[k] for k in (
        "embedding_projection", "attention_qkvo", "attention_scores_context", "ffn", "pooler"))
    parts["pretrainer_forward"] = parts["encoder_forward"] + parts["mlm_head"] + parts["sop_head"]
    parts["train_step"] = 3 * parts["pretrainer_forward"]
    return parts


def hf_albert_config(config: AlbertConfig) -> Any:
    """transformers.AlbertConfig of `config` (tanh-GELU as the original's `gelu`, no
    classifier dropout)."""
    import transformers

    return transformers.AlbertConfig(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_hidden_groups, num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, inner_group_num=config.inner_group_num,
        hidden_act="gelu_new", hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        classifier_dropout_prob=0.0, max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size)


def pretraining_loss(pre, enc_in: dict, positions, t: dict):
    """Masked LM on the masked positions + sentence order, as our PretrainingObjective."""
    import torch

    out = pre.albert(**enc_in)
    seq_out = out.last_hidden_state
    gathered = torch.gather(seq_out, 1, positions[:, :, None].expand(-1, -1, seq_out.shape[-1]))
    mlm_logits = pre.predictions(gathered)
    sop_logits = pre.sop_classifier(out.pooler_output)
    mlm = torch.nn.functional.cross_entropy(
        mlm_logits.reshape(-1, mlm_logits.shape[-1]), t["masked_lm_ids"].reshape(-1),
        reduction="none")
    w = t["masked_lm_weights"].reshape(-1)
    return (mlm * w).sum() / (w.sum() + 1e-5) + torch.nn.functional.cross_entropy(
        sop_logits, t["sentence_order_label"])


def randomize_weights(model: Any, seed: int = 0) -> None:
    """Every weight of a Keras model ~ N(0, 0.02), LayerNorm scales ~ 1 + N(0, 0.02): as in a
    trained model, no bias is exactly 0 nor scale exactly 1. A fresh model's zero biases and
    unit scales are folded away by Grappler once the weights are frozen (`x + 0`, `x · 1`),
    which removes the BiasAdds oneDNN fuses with the matmuls: a frozen bf16 ALBERT-base with
    fresh weights ran 1.5× slower than with these on a Xeon (322 vs 212 ms at batch 8)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for weight in model.weights:
        value = rng.normal(0.0, 0.02, tuple(weight.shape))
        if weight.path.endswith("gamma"):
            value += 1.0
        weight.assign(value.astype(weight.dtype))
