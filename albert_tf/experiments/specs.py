"""RunSpec: what distinguishes one pretrained model of the tables (TensorFlow-free)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Equal specs are one run, shared by the tables that need it."""

    task: str  # sentence task of pretraining: sop, nsp or none
    embedding_size: int
    sharing: str  # cross_layer_sharing
    seed: int
    pretrain: bool = True  # False: fine-tuning from random initialisation (the reference row)

    @property
    def name(self) -> str:
        stem = self.task if self.pretrain else "random_init"
        return f"{stem}_E{self.embedding_size}_{self.sharing}_seed{self.seed}"
