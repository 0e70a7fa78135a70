"""The compute budget of a paper run: toy model, data sizes, steps, seeds, Table 2 shapes.

The "full" budget was fixed from timing probes alone, before any outcome was looked at
(the probes printed durations only). On the shared 2-core machine at load average 9–12 one
base model took ≈0.145 s per pretraining step, ≈75 s for 400 fine-tuning steps with the
2000-pair dev evaluation and ≈50 s for the held-out evaluation; one ALBERT-large plus one
BERT-large step at batch 4 × 64 took ≈140 s wall (≈4× its CPU time). Hence 1,500 pretraining
steps (the pretraining budget tests/glue/test_learning.py shows to learn; the demo's 2,000
would push Tables 3 and 5 past 30 min on an idle machine), 2,000 probe pairs, and Table 2 at
batch 4 × length 64. The toy model and optimizer settings are the demo's, known to learn on
the built-in corpus (README, `make demo`). "tiny" only exercises the harness (tests): a few
steps per run, one seed, small shapes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.config import AlbertConfig


@dataclasses.dataclass(frozen=True)
class ToyModel:
    """The base model of Tables 3–5 (configs/demo_albert_config.json's shape)."""

    vocab_size: int = 1000
    hidden_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 64
    embedding_size: int = 16
    initializer_range: float = 0.1  # 0.02 leaves a tiny model's pooled output input-independent
    max_position_embeddings: int = 64

    def config(self, **overrides: Any) -> AlbertConfig:
        values = dataclasses.asdict(self)
        values.update(overrides)
        return AlbertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **values)


@dataclasses.dataclass(frozen=True)
class ThroughputShapes:
    """Table 2: ALBERT-large (E=128, all shared) against BERT-large (E=H, not shared)."""

    num_hidden_layers: int = 24
    hidden_size: int = 1024
    num_attention_heads: int = 16
    intermediate_size: int = 4096
    vocab_size: int = 30000
    albert_embedding_size: int = 128
    batch_size: int = 4
    seq_length: int = 64
    max_predictions_per_seq: int = 10
    warmup_steps: int = 2
    rounds: int = 4
    steps_per_round: int = 2

    def configs(self) -> dict[str, AlbertConfig]:
        shape = dict(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                     num_hidden_layers=self.num_hidden_layers,
                     num_attention_heads=self.num_attention_heads,
                     intermediate_size=self.intermediate_size,
                     max_position_embeddings=max(512, self.seq_length),
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        return {"ALBERT-large": AlbertConfig(embedding_size=self.albert_embedding_size,
                                             cross_layer_sharing="all", **shape),
                "BERT-large": AlbertConfig(embedding_size=self.hidden_size,
                                           cross_layer_sharing="none", **shape)}


@dataclasses.dataclass(frozen=True)
class Budget:
    """Everything that decides what a paper run computes; stored in output_dir/budget.json
    so a resumed run cannot silently mix budgets."""

    name: str
    model: ToyModel = ToyModel()
    max_documents: int | None = None  # of the built-in corpus (None: all 452)
    heldout_fraction: float = 0.15  # documents kept out of pretraining for the held-out sets
    max_seq_length: int = 64
    max_predictions_per_seq: int = 10
    dupe_factor: int = 2
    heldout_dupe_factor: int = 2
    pretrain_steps: int = 1500
    pretrain_warmup: int = 150
    pretrain_batch: int = 64
    pretrain_learning_rate: float = 2e-3
    checkpoint_every: int = 500
    finetune_steps: int = 400
    finetune_warmup: int = 40
    finetune_batch: int = 32
    finetune_learning_rate: float = 3e-4
    glue_train: int = 8000
    glue_dev: int = 2000
    glue_test: int = 20
    probe_train: int = 2000  # instances of the training records the linear probe fits on
    eval_batch: int = 100
    seeds: tuple[int, ...] = (1, 2, 3)
    embedding_sizes: tuple[int, ...] = (4, 8, 16, 32)  # Table 3 (H/8 … H, the paper's H/12 … H)
    factorized_embedding_size: int = 8  # Table 3's E < H compared with E = H (paper: 128 = H/6)
    sharing_modes: tuple[str, ...] = ("all", "attention", "ffn", "none")
    log_steps: int = 100
    throughput: ThroughputShapes = ThroughputShapes()

    def with_overrides(self, steps: int | None = None, num_seeds: int | None = None) -> "Budget":
        """--steps (pretraining and fine-tuning steps) and --seeds on top of a preset."""
        budget = self
        if steps is not None:
            budget = dataclasses.replace(
                budget, pretrain_steps=steps, finetune_steps=steps, checkpoint_every=steps,
                pretrain_warmup=steps // 10, finetune_warmup=steps // 10,
                log_steps=max(1, min(budget.log_steps, steps)))
        if num_seeds is not None:
            budget = dataclasses.replace(budget, seeds=tuple(range(1, num_seeds + 1)))
        return budget

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        values["seeds"] = list(self.seeds)
        values["embedding_sizes"] = list(self.embedding_sizes)
        values["sharing_modes"] = list(self.sharing_modes)
        return values


TINY = Budget(
    name="tiny",
    model=ToyModel(vocab_size=400, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                   embedding_size=8),
    max_documents=24, heldout_fraction=0.25, dupe_factor=1, heldout_dupe_factor=1,
    pretrain_steps=3, pretrain_warmup=0, pretrain_batch=8, checkpoint_every=3,
    finetune_steps=3, finetune_warmup=0, finetune_batch=8, glue_train=64, glue_dev=32,
    glue_test=4, probe_train=64, eval_batch=16, seeds=(1,), embedding_sizes=(8, 16),
    factorized_embedding_size=8, log_steps=3,
    throughput=ThroughputShapes(num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
                                intermediate_size=64, vocab_size=400, albert_embedding_size=8,
                                batch_size=2, seq_length=16, max_predictions_per_seq=2,
                                warmup_steps=1, rounds=2, steps_per_round=1))
BUDGETS = {"full": Budget(name="full"), "tiny": TINY}
