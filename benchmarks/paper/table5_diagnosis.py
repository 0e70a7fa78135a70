"""Why Table 5's sentence heads score near chance: checks on a finished paper run.

    python benchmarks/paper/table5_diagnosis.py --run_dir=paper_run \
        [--output=benchmarks/paper/table5_diagnosis.md]

Reads a finished `python -m albert_tf.experiments.paper` output dir (its data/ and the Table 5
checkpoints in runs/) and reports, without training anything:

1. label balance of every record set (training and held-out, per task);
2. whether each pair is what its label claims: A and B located in the tokenized documents
   (masked tokens restored): in order in one document, swapped in one document, or B from
   another document — per task and label, plus a few decoded pairs;
3. how much of the label a classifier of segment lengths alone predicts (a depth-6 decision
   tree on len(A), len(B), fitted on half of the training pairs, scored on the other half);
4. each pretrained head's accuracy and its rate of answering "1" on training-like pairs with
   and without the one-sentence chunks (Q10: A one sentence, B from a random document, label 1
   in every task), on those chunks alone, and on held-out pairs with and without them.

The extra record sets of 2 and 4 are made by create_pretraining_data with the run's own
settings (same documents, seed and flags; only --skip_single_sentence_chunks differs) under
<run_dir>/diagnosis/.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import albert_tf.runtime.quiet_startup  # noqa: F401  (before TensorFlow)

import numpy as np

from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.data.documents import LineTokenizer
from albert_tf.data.example_codec import decode_example
from albert_tf.data.tfrecord_io import read_records
from albert_tf.experiments.budget import BUDGETS
from albert_tf.experiments.data import create_records
from albert_tf.tokenization import FullTokenizer

CLS, SEP = 2, 3
TASKS = ("sop", "nsp")
SINGLE_CHUNKS = "one-sentence chunks (none_train, label 1)"


# ----- record sets -----
def summary(path: str) -> dict:
    with open(path + ".json", encoding="utf-8") as f:
        return json.load(f)


def extra_records(run_dir: str, budget) -> dict[str, str]:
    """Training pairs without the one-sentence chunks, held-out pairs with them."""
    data, out = os.path.join(run_dir, "data"), os.path.join(run_dir, "diagnosis")
    os.makedirs(out, exist_ok=True)
    spm = os.path.join(data, "spm.model")
    made = {}
    for task in TASKS:
        for name, text, dupe, skip in (
                (f"{task}_train_without_single", "corpus_train.txt", budget.dupe_factor, True),
                (f"{task}_heldout_with_single", "corpus_heldout.txt", budget.heldout_dupe_factor,
                 False)):
            path = os.path.join(out, f"{name}.tfrecord")
            if not os.path.exists(path + ".json"):
                create_records(os.path.join(data, text), path, spm, budget, task, dupe, skip)
            made[name] = path
    return made


def read_pairs(path: str) -> list[tuple[list[int], list[int], int]]:
    """(A ids, B ids, label) of every record, masked positions restored to their tokens."""
    pairs = []
    for record in read_records(path):
        f = decode_example(record)
        ids = list(f["input_ids"])
        for pos, tok, w in zip(f["masked_lm_positions"], f["masked_lm_ids"], f["masked_lm_weights"]):
            if w > 0:
                ids[pos] = tok
        first = ids.index(SEP)
        second = ids.index(SEP, first + 1)
        pairs.append((ids[1:first], ids[first + 1:second], int(f["next_sentence_labels"][0])))
    return pairs


# ----- where a pair's segments come from -----
def key_of(ids) -> str:
    """Token ids as a string, so that segments are found with str.find."""
    return "".join(chr(0x4000 + int(i)) for i in ids)


class DocumentIndex:
    """The tokenized documents of a text file, searchable for a segment's ids."""

    def __init__(self, text_path: str, tokenizer: FullTokenizer):
        with open(text_path, encoding="utf-8") as f:
            documents = [d for d in f.read().split("\n\n") if d.strip()]
        line_tokenizer = LineTokenizer(tokenizer, do_lower_case=True)
        self.texts = []
        for doc in documents:
            ids, _, _ = line_tokenizer([line for line in doc.split("\n") if line.strip()])
            self.texts.append(key_of(ids))

    def find(self, ids: list[int]) -> list[tuple[int, int]]:
        """(document, offset) of every occurrence."""
        needle = key_of(ids)
        hits = []
        for d, text in enumerate(self.texts):
            start = text.find(needle)
            while start >= 0:
                hits.append((d, start))
                start = text.find(needle, start + 1)
        return hits


def relations(index: DocumentIndex, a: list[int], b: list[int]) -> set[str]:
    """Every relation some occurrence of A and B has (repeated text can give several):
    "in order" / "swapped" (one document, A before / after B), "other document" (B in a
    document A is not in), or "not found"."""
    hits_a, hits_b = index.find(a), index.find(b)
    if not hits_a or not hits_b:
        return {"not found"}
    found = set()
    docs_a = {d for d, _ in hits_a}
    if any(d not in docs_a for d, _ in hits_b):
        found.add("other document")
    for da, pa in hits_a:
        for db, pb in hits_b:
            if da == db and pa + len(a) <= pb:
                found.add("in order")
            if da == db and pb + len(b) <= pa:
                found.add("swapped")
    return found


def consistent(task: str, label: int, found: set[str]) -> bool:
    """Label 0: A precedes B in one document. Label 1: SOP swaps (or, for a one-sentence chunk,
    takes B from another document, Q10); NSP takes B from another document."""
    if label == 0:
        return "in order" in found
    return bool(found & ({"swapped", "other document"} if task == "sop" else {"other document"}))


def sentence_keys(text_path: str, tokenizer: FullTokenizer) -> set[str]:
    """The token sequences of the corpus' sentences (lines)."""
    with open(text_path, encoding="utf-8") as f:
        sentences = [line for line in f.read().split("\n") if line.strip()]
    line_tokenizer = LineTokenizer(tokenizer, do_lower_case=True)
    keys = set()
    for i in range(0, len(sentences), 4096):
        ids, _, lengths = line_tokenizer(sentences[i:i + 4096])
        pos = 0
        for n in lengths:
            if n > 0:
                keys.add(key_of(ids[pos:pos + n]))
                pos += n
    return keys


# ----- length-only classifier -----
def length_only_accuracy(pairs, seed: int = 0) -> tuple[float, float]:
    """(held-out-half accuracy of a depth-6 tree on (len A, len B), majority share)."""
    from sklearn.tree import DecisionTreeClassifier

    x = np.array([[len(a), len(b)] for a, b, _ in pairs], np.float32)
    y = np.array([label for _, _, label in pairs])
    order = np.random.default_rng(seed).permutation(len(y))
    fit, test = order[: len(y) // 2], order[len(y) // 2:]
    tree = DecisionTreeClassifier(max_depth=6, random_state=seed).fit(x[fit], y[fit])
    return float(tree.score(x[test], y[test])), float(max(y[test].mean(), 1 - y[test].mean()))


# ----- the pretrained heads -----
def head_scores(run_dir: str, budget, task: str,
                record_sets: dict[str, str]) -> dict[str, dict[str, tuple]]:
    """{model: {set: (accuracy %, share answered 1 %, n)}} for the Table 5 models of `task`."""
    from albert_tf.config import AlbertConfig
    from albert_tf.experiments.evaluation import OutputReader, load_pretrainer
    from albert_tf.experiments.runs import fresh_session

    scores = {}
    for seed in budget.seeds:
        name = f"{task}_E{budget.model.embedding_size}_all_seed{seed}"
        run = os.path.join(run_dir, "runs", name)
        fresh_session(seed)
        config = AlbertConfig.from_json_file(os.path.join(run, "albert_config.json"))
        read = OutputReader(load_pretrainer(config, os.path.join(run, "pretrain")),
                            budget.max_seq_length, budget.max_predictions_per_seq,
                            budget.eval_batch)
        scores[name] = {}
        for set_name, path in record_sets.items():
            out = read(path)
            keep = np.ones(len(out["labels"]), bool)
            if set_name == SINGLE_CHUNKS:
                keep = out["labels"] == 1
            hits = out["head_predictions"][keep] == out["labels"][keep]
            scores[name][set_name] = (100 * hits.mean(),
                                      100 * (out["head_predictions"][keep] == 1).mean(),
                                      int(keep.sum()))
        print(f"scored {name}", flush=True)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run_dir", required=True)
    parser.add_argument("--output", default=None, help="Markdown report (default: stdout)")
    args = parser.parse_args()
    start = time.time()
    budget = BUDGETS["full"]
    with open(os.path.join(args.run_dir, "budget.json"), encoding="utf-8") as f:
        if json.load(f) != budget.to_dict():
            sys.exit(f"{args.run_dir}/budget.json: not the full budget of this checkout")
    data = os.path.join(args.run_dir, "data")
    extra = extra_records(args.run_dir, budget)
    tokenizer = FullTokenizer(spm_model_file=os.path.join(data, "spm.model"))
    lines = []
    out = lines.append
    out("# Table 5 diagnosis: why the sentence heads score near chance\n")
    out(f"Command: `python benchmarks/paper/table5_diagnosis.py --run_dir={args.run_dir}"
        f"{' --output=' + args.output if args.output else ''}` "
        f"({datetime.date.today().isoformat()}). Reads the paper run's data and Table 5 "
        f"checkpoints; trains nothing.\n")

    # 1. label balance
    out("## 1. Label balance (share of label 1: swapped / random B)\n")
    out("| Record set | Instances | Label 1 | of which one-sentence chunks (Q10) |")
    out("|---|---|---|---|")
    none_single = summary(os.path.join(data, "none_train.tfrecord"))["next_sentence_labels"]
    sets = {f"{t}_{s}": os.path.join(data, f"{t}_{s}.tfrecord")
            for t in ("sop", "nsp", "none") for s in ("train", "heldout")}
    sets.update(extra)
    for name, path in sets.items():
        s = summary(path)
        n, ones = s["instances"], s["next_sentence_labels"]["1_swapped_or_random"]
        single = ""
        if name == "sop_train":
            single = f"{none_single['1_swapped_or_random']} ({100 * none_single['1_swapped_or_random'] / n:.1f}%)"
        out(f"| {name} | {n} | {100 * ones / n:.1f}% | {single} |")
    out("\n`none_train` holds the SOP pairs of the same seed in text order, so its label-1 pairs "
        "are exactly the one-sentence chunks of `sop_train`.\n")

    # 2. provenance
    out("## 2. Are the pairs what their labels claim?\n")
    out("A and B (masked tokens restored) located in the tokenized documents; a pair counts in "
        "every relation some occurrence of its segments has (repeated sentences, e.g. "
        "\"Return value is a string\", occur in several places). \"Consistent\": label 0 has A "
        "before B in one document; SOP label 1 has B before A in one document or (one-sentence "
        "chunk) B from another document; NSP label 1 has B from another document. \"A one "
        "sentence\": A is exactly one sentence of the corpus.\n")
    out("| Record set | Label | Pairs | Consistent with the label | in order | swapped | "
        "other document | not found | A one sentence |")
    out("|---|---|---|---|---|---|---|---|---|")
    indexes = {}
    samples = []
    for name in ("sop_heldout", "nsp_heldout", "sop_heldout_with_single", "nsp_heldout_with_single",
                 "sop_train", "nsp_train"):
        split = "train" if "train" in name else "heldout"
        if split not in indexes:
            indexes[split] = (DocumentIndex(os.path.join(data, f"corpus_{split}.txt"), tokenizer),
                              sentence_keys(os.path.join(data, f"corpus_{split}.txt"), tokenizer))
        index, sentences = indexes[split]
        pairs = read_pairs(sets[name])
        if split == "train":  # a sample: the searches are linear in the corpus
            pairs = [pairs[i] for i in np.random.default_rng(0).permutation(len(pairs))[:1500]]
        by_label = collections.defaultdict(collections.Counter)
        for a, b, label in pairs:
            found = relations(index, a, b)
            counts = by_label[label]
            counts["pairs"] += 1
            counts["consistent"] += consistent(name[:3], label, found)
            counts.update(found)
            counts["single"] += key_of(a) in sentences
            if name in ("sop_heldout", "nsp_heldout") and len(a) + len(b) < 40 and \
                    sum(1 for s in samples if s[0] == name and s[1] == label) < 2:
                samples.append((name, label, ", ".join(sorted(found)),
                                tokenizer.convert_ids_to_tokens(a), tokenizer.convert_ids_to_tokens(b)))
        for label in sorted(by_label):
            c = by_label[label]
            out(f"| {name}{' (sample of 1500)' if split == 'train' else ''} | {label} | "
                f"{c['pairs']} | {c['consistent']} ({100 * c['consistent'] / c['pairs']:.1f}%) | "
                f"{c['in order']} | {c['swapped']} | {c['other document']} | {c['not found']} | "
                f"{c['single']} |")
    out("\nDecoded held-out pairs (SentencePiece pieces joined):\n")
    for name, label, kind, a, b in samples:
        join = lambda pieces: "".join(pieces).replace("\u2581", " ").strip()  # noqa: E731
        out(f"- `{name}` label {label} ({kind}): A = \"{join(a)}\" | B = \"{join(b)}\"")
    out("")

    # 3. length-only classifier
    out("## 3. How much of the label do segment lengths alone give?\n")
    out("| Record set | Length-only tree accuracy | Majority share |")
    out("|---|---|---|")
    for name in ("sop_train", "nsp_train", "sop_train_without_single", "nsp_train_without_single",
                 "sop_heldout", "nsp_heldout"):
        acc, majority = length_only_accuracy(read_pairs(sets[name]))
        out(f"| {name} | {100 * acc:.1f}% | {100 * majority:.1f}% |")
    out("")

    # 4. the heads
    out("## 4. The pretrained heads on training-like and held-out pairs\n")
    scores = {}
    for task in TASKS:
        record_sets = {
            "training pairs (as trained on)": sets[f"{task}_train"],
            "training pairs without one-sentence chunks": sets[f"{task}_train_without_single"],
            SINGLE_CHUNKS: sets["none_train"],
            "held-out without one-sentence chunks (results.md)": sets[f"{task}_heldout"],
            "held-out with one-sentence chunks": sets[f"{task}_heldout_with_single"]}
        cache = os.path.join(args.run_dir, "diagnosis", f"{task}_head_scores.json")
        if not os.path.exists(cache):
            with atomic_file(cache) as f:
                json.dump(head_scores(args.run_dir, budget, task, record_sets), f)
        with open(cache, encoding="utf-8") as f:
            scores.update(json.load(f))
    out("Each cell: accuracy / share answered \"1\" (%), for each seed; pairs of the model's own task.\n")
    columns = list(next(iter(scores.values())))
    out("| Model | " + " | ".join(columns) + " |")
    out("|---|" + "---|" * len(columns))
    for name, by_set in scores.items():
        out(f"| {name} | " + " | ".join(f"{acc:.1f} / {ones:.0f}" for acc, ones, _ in by_set.values()) + " |")
    out("")
    for name, by_set in list(scores.items())[:1]:
        out("Pairs per set: " + ", ".join(f"{k}: {n}" for k, (_, _, n) in by_set.items()) + ".\n")
    out(f"Runtime: {(time.time() - start) / 60:.1f} min.")
    text = "\n".join(lines) + "\n"
    if args.output:
        with atomic_file(args.output) as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
