"""The held-out document split of the paper harness."""

from __future__ import annotations

from albert_tf.experiments.data import split_documents


def test_split_is_disjoint_complete_and_seeded(tmp_path):
    corpus = tmp_path / "corpus.txt"
    documents = [f"doc {d} sentence one .\ndoc {d} sentence two ." for d in range(20)]
    corpus.write_text("\n\n".join(documents) + "\n")
    train, heldout = tmp_path / "train.txt", tmp_path / "heldout.txt"
    counts = split_documents(str(corpus), str(train), str(heldout), fraction=0.25, seed=3)
    assert counts == {"train": 15, "heldout": 5}
    kept = [d for d in train.read_text().split("\n\n") if d.strip()]
    held = [d for d in heldout.read_text().split("\n\n") if d.strip()]
    assert sorted(d.strip() for d in kept + held) == sorted(documents)
    assert len(held) == 5 and not set(kept) & set(held)
    split_documents(str(corpus), str(tmp_path / "t2.txt"), str(tmp_path / "h2.txt"), 0.25, seed=3)
    assert (tmp_path / "h2.txt").read_text() == heldout.read_text()
