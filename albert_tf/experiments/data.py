"""The data of a paper run, built once: corpus split, SentencePiece, records, corpus task.

Pretraining records come from `python -m albert_tf.create_pretraining_data` (the tool
itself, run as a process: it is TensorFlow-free and starts in a fraction of a second) with
`--sentence_prediction=sop|nsp|none` on the same training documents and seed. The held-out
documents (never pretrained on) give the evaluation sets: SOP and NSP pairs without the
one-sentence chunks whose B is random in every task (`--skip_single_sentence_chunks`), and
"none" pairs (text order) for held-out masked-LM accuracy. The GLUE-format corpus task
(`albert_tf.corpus.glue_task`, MRPC layout) is the downstream task.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from typing import Callable

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.data.instances import SENTENCE_TASKS
from albert_tf.experiments.budget import Budget
from albert_tf.experiments.files import write_json_atomically

READY_FILE = "ready.json"
HELDOUT_SEED = 20200  # the held-out document draw (fixed; not a tuning knob)


@dataclasses.dataclass
class ExperimentData:
    """Paths and counts of the built data (all under `directory`)."""

    directory: str
    spm_model: str
    glue_dir: str
    train_records: dict[str, str]
    heldout_records: dict[str, str]
    heldout_instances: dict[str, int]
    train_instances: dict[str, int]
    documents: dict[str, int]

    @property
    def glue_cache(self) -> str:
        return os.path.join(self.directory, "glue_features")


def split_documents(corpus: str, train_path: str, heldout_path: str, fraction: float,
                    seed: int = HELDOUT_SEED) -> dict[str, int]:
    """Writes the corpus' documents (blank-line separated) to two files: a seeded
    `fraction` of them held out, the rest for pretraining."""
    with paths.open_file(corpus) as f:
        documents = [d for d in f.read().split("\n\n") if d.strip()]
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    num_heldout = max(1, round(fraction * len(documents)))
    heldout = set(order[:num_heldout])
    for path, keep in ((train_path, lambda i: i not in heldout), (heldout_path, heldout.__contains__)):
        chosen = [documents[i].strip("\n") for i in range(len(documents)) if keep(i)]
        with atomic_file(path) as f:
            f.write("\n\n".join(chosen) + "\n")
    return {"train": len(documents) - num_heldout, "heldout": num_heldout}


def _package_root() -> str:
    import albert_tf

    return os.path.dirname(os.path.dirname(os.path.abspath(albert_tf.__file__)))


def create_records(input_file: str, output_file: str, spm_model: str, budget: Budget,
                   task: str, dupe_factor: int, heldout: bool) -> int:
    """Runs create_pretraining_data; returns the instance count from its .json summary."""
    args = [sys.executable, "-m", "albert_tf.create_pretraining_data",
            f"--input_file={input_file}", f"--output_file={output_file}",
            f"--spm_model_file={spm_model}", f"--max_seq_length={budget.max_seq_length}",
            f"--max_predictions_per_seq={budget.max_predictions_per_seq}",
            f"--dupe_factor={dupe_factor}", f"--sentence_prediction={task}",
            f"--skip_single_sentence_chunks={'true' if heldout else 'false'}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
    result = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"create_pretraining_data failed for {output_file}:\n"
                           f"{result.stderr[-2000:]}")
    with paths.open_file(output_file + ".json") as f:
        return int(json.load(f)["instances"])


def prepare_data(directory: str, budget: Budget, log: Callable[[str], None]) -> ExperimentData:
    """Builds (or reuses, when `ready.json` is there) everything the runs read."""
    ready = os.path.join(directory, READY_FILE)
    if paths.exists(ready):
        with paths.open_file(ready) as f:
            return ExperimentData(**json.load(f))
    from albert_tf.corpus import build_corpus, train_tiny_spm
    from albert_tf.corpus.glue_task import build_corpus_task

    paths.makedirs(directory)
    corpus = os.path.join(directory, "corpus.txt")
    stats = build_corpus(corpus, budget.max_documents)
    log(f"corpus: {stats.documents} documents, {stats.sentences} sentences, {stats.words} words")
    train_text = os.path.join(directory, "corpus_train.txt")
    heldout_text = os.path.join(directory, "corpus_heldout.txt")
    documents = split_documents(corpus, train_text, heldout_text, budget.heldout_fraction)
    log(f"documents: {documents['train']} for pretraining, {documents['heldout']} held out")
    spm_model = train_tiny_spm(train_text, os.path.join(directory, "spm"), budget.model.vocab_size)
    train_records, heldout_records, train_counts, heldout_counts = {}, {}, {}, {}
    for task in SENTENCE_TASKS:
        train_records[task] = os.path.join(directory, f"{task}_train.tfrecord")
        train_counts[task] = create_records(train_text, train_records[task], spm_model, budget,
                                            task, budget.dupe_factor, heldout=False)
        heldout_records[task] = os.path.join(directory, f"{task}_heldout.tfrecord")
        heldout_counts[task] = create_records(heldout_text, heldout_records[task], spm_model,
                                              budget, task, budget.heldout_dupe_factor,
                                              heldout=True)
        log(f"{task}: {train_counts[task]} training and {heldout_counts[task]} held-out instances")
    glue_dir = os.path.join(directory, "glue")
    counts = build_corpus_task(glue_dir, corpus_path=corpus, num_train=budget.glue_train,
                               num_dev=budget.glue_dev, num_test=budget.glue_test)
    log(f"corpus task (MRPC layout): {counts}")
    data = ExperimentData(directory=directory, spm_model=spm_model, glue_dir=glue_dir,
                          train_records=train_records, heldout_records=heldout_records,
                          heldout_instances=heldout_counts, train_instances=train_counts,
                          documents=documents)
    write_json_atomically(ready, dataclasses.asdict(data))
    return data
