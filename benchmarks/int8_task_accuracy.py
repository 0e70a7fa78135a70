"""Issue 42's real-task check at ALBERT-base shape: does int8 keep a fine-tuned model's answers?

Fine-tunes an ALBERT-base-shaped classifier (H=768, 12 layers, 12 heads, I=3072, E=128; the
demo's 1000-piece SentencePiece vocabulary, so V=1000) from random init, with
`run_classifier.py` as a user runs it, on one of two GLUE-format tasks built from the built-in
corpus (the Python documentation):
- `--task=topic` (default; SST-2 format): is a documentation sentence from the Language
  Reference or from a library module's docstrings? Labels come from where the sentence was
  written, not from a rule, so the boundary is fuzzy (a bag-of-words logistic regression gets
  ~0.78 on dev); dev sentences come from held-out documents.
- `--task=paraphrase` (MRPC format, `albert_tf.corpus.make_glue_task`, the demo's task): a
  shortened copy of the sentence or another document's sentence.

`--export_dir` included: the task export then holds the fp32 `serving/` graph, the
dynamic int8 TFLite file and the static int8 OpenVINO IR calibrated on the run's own training
records (NNCF; kept only when it passes its accuracy gate). Each int8 artifact is then run on the
dev set (the run's own cached dev features) against the fp32 graph: dev accuracy, and the share
of examples whose predicted class is the fp32 graph's (the issue: within 1 point, ≥ 99 %).

    PYTHONPATH=. .venv/bin/python benchmarks/int8_task_accuracy.py --workdir /tmp/int8_task

The defaults are what learned: from random init, LAMB (the original's optimizer for training
from scratch) at 1e-3 learns either task at this size in 400 steps; AdamW at 3e-5 to 3e-4 did
not learn in 90–300 steps (RESULTS.md). The tiny model learns with AdamW at 1e-3, its default.
`--tiny` runs the same at the test config's size (H=32, 2 layers) in a minute, to check the
script itself. The figures go to benchmarks/RESULTS.md ("Calibrated int8 on a fine-tuned task").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
            embedding_size=128)
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            embedding_size=16)
# (backend, precision) of each artifact the task export holds, fp32 first (the reference).
ARTIFACTS = (("tensorflow", "fp32"), ("openvino", "int8"), ("tflite", "int8"))


def run(args: list[str]) -> None:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": REPO})
    print(f"  ({time.perf_counter() - start:.0f} s) {' '.join(args[:2])}", flush=True)


TASKS = {"topic": "SST-2", "paraphrase": "MRPC"}  # --task → the GLUE task it is written as


def write_topic_task(folder: str, num_train: int, num_dev: int = 400, seed: int = 12345) -> None:
    """SST-2-format `train.tsv` / `dev.tsv` / `test.tsv`: label 1 for a Language Reference
    sentence, 0 for a module docstring's; classes balanced; dev from a held-out quarter of
    each source's documents."""
    import random

    from albert_tf.corpus.glue_task import write_tsv
    from albert_tf.corpus.stdlib_text import iter_documents

    rng = random.Random(seed)
    sources: dict[int, list[list[str]]] = {0: [], 1: []}
    for name, sentences in iter_documents():
        sources[int(name.startswith("pydoc_data.topics["))].append(sentences)
    splits: dict[str, dict[int, list[str]]] = {"train": {}, "dev": {}}
    for label, documents in sources.items():
        rng.shuffle(documents)
        held_out = len(documents) // 4  # a quarter of each source's documents
        for split, docs in (("dev", documents[:held_out]), ("train", documents[held_out:])):
            splits[split][label] = [" ".join(s.split()) for doc in docs for s in doc]
    os.makedirs(folder, exist_ok=True)
    for split, by_label in splits.items():
        limit = num_dev if split == "dev" else num_train
        size = min(len(by_label[0]), len(by_label[1]), limit // 2)
        rows = [(s, label) for label in (0, 1) for s in rng.sample(by_label[label], size)]
        rng.shuffle(rows)
        write_tsv(os.path.join(folder, f"{split}.tsv"), ("sentence", "label"), rows)
    write_tsv(os.path.join(folder, "test.tsv"), ("index", "sentence"), [(0, "A statement.")])


def prepare(workdir: str, task: str, shape: dict, num_train: int, seq: int
            ) -> tuple[str, str, str]:
    """(glue data_dir, config file, SentencePiece model), built once in `workdir`."""
    from albert_tf import AlbertConfig
    from albert_tf.corpus import tiny_assets

    corpus, spm = tiny_assets(os.path.join(workdir, "assets"), vocab_size=1000)
    data_dir = os.path.join(workdir, "glue")
    folder = os.path.join(data_dir, TASKS[task])
    if os.path.isdir(folder):
        pass  # written by an earlier run
    elif task == "topic":
        write_topic_task(folder, num_train)
    else:
        run(["-m", "albert_tf.corpus.make_glue_task", f"--output_dir={data_dir}",
             f"--corpus={corpus}", f"--num_train={num_train}", "--num_dev=400", "--num_test=2"])
    config = os.path.join(workdir, "albert_config.json")
    AlbertConfig(vocab_size=1000, max_position_embeddings=max(seq, 64), hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0, **shape).to_json_file(config)
    return data_dir, config, spm


def dev_features(path: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The run's cached dev features (the original's record names) and their labels."""
    import tensorflow as tf

    names = ("input_ids", "input_mask", "segment_ids", "label_ids")
    rows: dict[str, list] = {name: [] for name in names}
    for record in tf.data.TFRecordDataset(path):
        example = tf.train.Example.FromString(record.numpy())
        for name in names:
            rows[name].append(list(example.features.feature[name].int64_list.value))
    arrays = {name: np.array(values, np.int32) for name, values in rows.items()}
    inputs = {"input_word_ids": arrays["input_ids"], "input_mask": arrays["input_mask"],
              "input_type_ids": arrays["segment_ids"]}
    return inputs, arrays["label_ids"].reshape(-1)


def predictions(export_dir: str, backend: str, precision: str, inputs: dict,
                batch: int = 16) -> np.ndarray:
    from albert_tf.serving import load_serving

    model = load_serving(export_dir, backend, precision=precision, num_threads=os.cpu_count())
    out = []
    for start in range(0, len(inputs["input_word_ids"]), batch):
        out.append(model({k: v[start:start + batch] for k, v in inputs.items()})["predictions"])
    return np.concatenate(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="/tmp/albert_int8_task")
    parser.add_argument("--train_steps", type=int, default=400)
    parser.add_argument("--num_train", type=int, default=8000)
    parser.add_argument("--seq_length", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--optimizer", choices=("adamw", "lamb"),
                        help="default: lamb at ALBERT-base shape, adamw with --tiny (what learns)")
    parser.add_argument("--warmup_fraction", type=float, default=0.1)
    parser.add_argument("--task", choices=sorted(TASKS), default="topic")
    parser.add_argument("--tiny", action="store_true", help="the test config's size")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    shape = TINY if args.tiny else BASE
    optimizer = args.optimizer or ("adamw" if args.tiny else "lamb")
    data_dir, config, spm = prepare(args.workdir, args.task, shape, args.num_train, args.seq_length)
    output_dir = os.path.join(args.workdir, "run")
    export_dir = os.path.join(args.workdir, "export")
    if not os.path.isdir(export_dir):
        steps = args.train_steps
        run(["run_classifier.py", f"--task_name={TASKS[args.task]}", f"--data_dir={data_dir}",
             f"--output_dir={output_dir}", f"--albert_config_file={config}",
             f"--spm_model_file={spm}", f"--max_seq_length={args.seq_length}", "--do_train",
             "--do_eval", "--train_batch_size=32", "--eval_batch_size=50",
             f"--learning_rate={args.learning_rate}", f"--train_step={steps}",
             f"--optimizer={optimizer}",
             f"--warmup_step={max(1, int(steps * args.warmup_fraction))}",
             f"--save_checkpoints_steps={steps}",
             f"--log_steps={max(1, steps // 10)}", "--seed=1", f"--export_dir={export_dir}",
             "--tflite_quantization=dynamic_int8"])  # the task file: max_seq_length tokens
    records = f"{TASKS[args.task].lower()}_eval.tf_record"  # the run's cached dev features
    inputs, labels = dev_features(os.path.join(output_dir, records))
    with open(os.path.join(export_dir, "serving.json"), encoding="utf-8") as f:
        held = sorted(json.load(f))
    print(f"export holds: {', '.join(held)}; dev examples: {len(labels)}")
    predicted = {}
    for backend, precision in ARTIFACTS:
        predicted[backend, precision] = predictions(export_dir, backend, precision, inputs)
    reference = predicted[ARTIFACTS[0]]
    shape_name = "tiny" if args.tiny else "ALBERT-base shape"
    print(f"\n| {shape_name}, {args.task}, {args.train_steps} steps | dev accuracy | "
          "vs fp32 (points) | argmax agreement with fp32 |\n|---|---|---|---|")
    for (backend, precision), got in predicted.items():
        accuracy = float(np.mean(got == labels))
        print(f"| {backend} {precision} | {accuracy:.4f} | "
              f"{100 * (accuracy - float(np.mean(reference == labels))):+.2f} | "
              f"{float(np.mean(got == reference)):.4f} |")


if __name__ == "__main__":
    main()
