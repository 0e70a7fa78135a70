"""The published figures our tables are laid beside (Lan et al., ICLR 2020, arXiv:1909.11942v6).

Parameters in millions; "avg" is the paper's Avg column (mean of SQuAD1.1 F1, SQuAD2.0 F1,
MNLI, SST-2 and RACE accuracy) — our downstream column is the corpus task's dev accuracy,
the only downstream task at this scale. None marks a figure not transcribed here.
"""

from __future__ import annotations

# Table 2: model → (parameters, training-throughput speedup over BERT-large).
TABLE2 = {"BERT-large": (334, 1.0), "ALBERT-large": (18, 1.7)}

# Table 3 (ALBERT-base, H=768): (sharing, E) → (parameters, avg).
TABLE3 = {
    ("none", 64): (87, 81.3), ("none", 128): (89, 81.7), ("none", 256): (93, 81.8),
    ("none", 768): (108, 82.3),
    ("all", 64): (10, 79.0), ("all", 128): (12, 80.1), ("all", 256): (16, 79.6),
    ("all", 768): (31, 79.8),
}
TABLE3_EMBEDDING_SIZES = (64, 128, 256, 768)

# Table 4 (ALBERT-base, E=128 block): sharing → (parameters, avg).
TABLE4 = {"all": (12, 80.1), "attention": (64, 81.7), "ffn": (38, None), "none": (89, 81.6)}
TABLE4_EMBEDDING_SIZE = 128

# Table 5 (ALBERT-base): pretraining sentence task → intrinsic accuracies and avg.
TABLE5 = {
    "none": {"mlm": 54.9, "nsp": 52.4, "sop": 53.3, "avg": 79.0},
    "nsp": {"mlm": 54.5, "nsp": 90.5, "sop": 52.0, "avg": 79.2},
    "sop": {"mlm": 54.0, "nsp": 78.9, "sop": 86.5, "avg": 80.1},
}
