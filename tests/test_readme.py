"""Every code block of README.md runs as written, so the README cannot rot.

The README is cut into sections (its `#`/`##`/`###` headings); each section's blocks run in
order in one fresh directory, as a reader would type them: ```python blocks with `python -c`,
```bash blocks with `bash -euo pipefail` (where `python` is this interpreter and the run_*.py
scripts lie in the working directory, as in a checkout), `make` targets in the repository.
Before that, the test writes the files the README says the reader has (`SETUP`), as tiny
stand-ins: `albert_base/` (the original release's tarball: albert_config.json,
model.ckpt-best.*, 30k-clean.model), `albert-base-v2/` (a Hugging Face directory written by
transformers' `save_pretrained`), GLUE/SQuAD/RACE data from tests/fixtures, a corpus.

Where a command is inherently huge or needs the network, the section's `substitutions` replace
the exact text (each must match, so a README change cannot silently skip one):
- sizes: batch 4096 → 8, 125,000 steps → 4, sequence length 512/384/128 → 64 (SQuAD: query
  length 64 → 16, RACE: question+answer length 128 → 32, to fit), vocabulary 30,000 → 400
  (the stand-in corpus is small), 2 epochs → 0.5, ...;
- `make demo` / `make paper` run their recipes with the interpreter running this test instead
  of .venv (`-o <stamp>` skips the install), into a temporary directory, with few steps
  (`make demo`: also 60 corpus documents and a 64-pair task, the Makefile's DEMO_* sizes;
  `make paper`: `--budget=tiny`, Table 2 only);
- `make test` is not run here: it is the suite this test is part of (CI runs it);
- `pip install` / `hf download` (network) are replaced by writing the stand-in directory.
Every block of the README must have an entry in `SECTIONS`, so a new block cannot go
untested. The ```text block (Architecture) is checked instead: every path it names exists.
The pip user's block ("Installed with pip") runs in tests/test_pip_install.py, in a fresh
virtual environment holding the built wheel (`Section.run_by`).

The commands run under umask 022, and everything a section's commands wrote (not the SETUP
stand-ins) must be 0644 for a file and 0755 for a directory, with no *.tmp left over (issue 20
§3: a model server running as another user must read the exports; owner-only modes, what
tempfile.mkstemp/mkdtemp give, broke that). `Section.writes` names the outputs each section
must have written, so the walk covers every kind: corpus, SentencePiece model, TFRecords,
checkpoints (ours, the original's, Hugging Face's), eval results, TensorBoard events, feature
files, predictions, task and encoder exports (SavedModel, TFLite, ONNX, OpenVINO), the
preprocessing export, the curves PNG.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.runtime import stderr_filter
from tests.training.processes import RUNTIME_PYTHONPATH

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
NVIDIA_DRIVER = os.path.exists("/proc/driver/nvidia/version")
HEADING = re.compile(r"^#{1,3} (.+)$", re.M)


def readme_sections() -> dict[str, list[tuple[str, str]]]:
    """{heading: [(language, code), ...]} for every heading with code blocks (in order)."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    blocks = list(FENCE.finditer(text))
    headings = [(m.start(), m.group(1).strip()) for m in HEADING.finditer(text)
                if not any(b.start() < m.start() < b.end() for b in blocks)]  # not a # comment
    sections: dict[str, list[tuple[str, str]]] = {}
    for block in blocks:
        heading = ""
        for start, name in headings:
            if start < block.start():
                heading = name
        sections.setdefault(heading, []).append((block.group(1), block.group(2)))
    return sections


@dataclasses.dataclass(frozen=True)
class Section:
    setup: tuple[str, ...] = ()                       # names of SETUP functions
    substitutions: tuple[tuple[str, str], ...] = ()   # (README text, what runs instead)
    run_by: str | None = None                         # another test file runs its blocks
    writes: tuple[str, ...] = ()                      # outputs it must write (fnmatch patterns)
    foreign: tuple[str, ...] = ()                     # written by another library: modes not ours
    scikit_learn: bool = False                        # make paper's probes: not hidden (runtime_site)


TINY_HF = (
    'python -c "import sys; sys.path.insert(0, {tests!r}); '
    'from test_readme import write_hf_stand_in; write_hf_stand_in(\'albert-base-v2\')"')


def make_target(target: str, stamp: str, tmp_variables: str) -> str:
    return (f"make -C {REPO} {target} -o {stamp} PY={sys.executable} {tmp_variables}")


SECTIONS: dict[str, Section] = {
    "albert-tf": Section(substitutions=(
        ("make demo ", make_target("demo", ".venv/.installed-runtime",
                                   "DEMO_DIR=$PWD/demo_output PRETRAIN_STEPS=4 FINETUNE_STEPS=2 "
                                   "DEMO_DOCS=60 DEMO_DUPE_FACTOR=1 DEMO_EVAL_STEPS=1 "
                                   "DEMO_GLUE_TRAIN=64 DEMO_GLUE_DEV=16 DEMO_GLUE_TEST=8")
         + " "),
        ("make test ", "true "),  # this suite itself (CI: .ci/run)
    ), writes=tuple(f"demo_output/{path}" for path in (
        "corpus.txt", "spm.model", "pretrain.tfrecord", "pretrain/checkpoint",
        "pretrain/eval_results.txt", "pretrain/train/events.*", "glue/MRPC/train.tsv",
        "mrpc_pretrained/mrpc_train.tf_record",
        "mrpc_pretrained/model.ckpt-best.index", "mrpc_pretrained/eval_results.txt",
        "export/encoder/assets/albert_config.json", "export/encoder/assets/spm.model",
        "export/preprocess/saved_model.pb", "pretraining_curves.png"))),
    "Installed with pip": Section(run_by="tests/test_pip_install.py"),
    "Configs, presets, models": Section(),
    "ALBERT layers in your own Keras model": Section(),
    "Released checkpoints": Section(setup=("albert_base",), writes=(
        "out/model.ckpt.index", "out/model_only/model.ckpt.index")),
    "Hugging Face checkpoints": Section(setup=("albert_base", "corpus"), substitutions=(
        ("pip install huggingface_hub ", "true "),
        ("hf download albert/albert-base-v2 config.json model.safetensors spiece.model "
         "--local-dir albert-base-v2", TINY_HF.format(tests=os.path.join(REPO, "tests"))),
    ), writes=("out/mnli-hf/model.safetensors", "albert_base_tf1/model.ckpt.index",
               "albert_base_hf/model.safetensors", "albert_base_ours/model.ckpt-0.index",
               "albert_tf1/model.ckpt.index", "hf_finetuned/model.safetensors"),
        # transformers' save_pretrained (the stand-in download, the reader's own model) → 0600
        foreign=("albert-base-v2/model.safetensors", "hf_albert/model.safetensors")),
    "Pretraining": Section(setup=("corpus", "pretraining_config"), substitutions=(
        ("--vocab_size=30000", "--vocab_size=400"),
        ("--max_seq_length=512", "--max_seq_length=64"),
        ("--dupe_factor=10", "--dupe_factor=1"),
        ("--train_batch_size=4096", "--train_batch_size=8"),
        ("--num_train_steps=125000 --num_warmup_steps=3125", "--num_train_steps=4 --num_warmup_steps=1"),
    ), writes=("30k-clean.model", "out/train.tfrecord", "out/pretrain/checkpoint",
               "out/pretrain/eval_results.txt", "out/pretrain/train/events.*")),
    "Fine-tuning": Section(setup=("albert_base", "glue", "squad", "race"), substitutions=(
        ("--max_seq_length=128", "--max_seq_length=64"),
        ("--train_batch_size=128 --learning_rate=3e-5 --train_step=10000 --warmup_step=1000",
         "--train_batch_size=8 --learning_rate=3e-5 --train_step=2 --warmup_step=1"),
        ("--max_seq_length=384 --doc_stride=128 --train_batch_size=48",
         "--max_seq_length=64 --max_query_length=16 --doc_stride=32 --train_batch_size=8"),
        ("--num_train_epochs=2", "--num_train_epochs=0.5"),
        ("--max_seq_length=512 --train_batch_size=32 --learning_rate=1e-5 --train_step=12000 "
         "--warmup_step=1000",
         "--max_seq_length=64 --max_qa_length=32 --train_batch_size=4 --learning_rate=1e-5 --train_step=2 "
         "--warmup_step=1"),
    ), writes=("out/mnli/mnli_train.tf_record", "out/mnli/model.ckpt-best.index",
               "out/mnli/eval_results.txt", "out/mnli/MNLI-m.tsv", "out/squad2/predictions.json",
               "out/race/model.ckpt-best.index")),
    "Export and TF-Hub": Section(setup=("albert_base", "glue", "squad"), substitutions=(
        ("--seq_length=128", "--seq_length=64"),
        ("--max_seq_length=128 --do_train --do_eval --train_batch_size=32 \\\n"
         "  --learning_rate=2e-5 --train_step=800 --warmup_step=80",
         "--max_seq_length=64 --do_train --do_eval --train_batch_size=8 \\\n"
         "  --learning_rate=2e-5 --train_step=2 --warmup_step=1"),
        ("--max_seq_length=384 --doc_stride=128 --train_batch_size=48 --learning_rate=5e-5 "
         "--num_train_epochs=2",
         "--max_seq_length=64 --max_query_length=16 --doc_stride=32 --train_batch_size=8 "
         "--learning_rate=5e-5 --num_train_epochs=0.5"),
        ("np.zeros((1, 384), np.int32)", "np.zeros((1, 64), np.int32)"),
    ), writes=("out/encoder/saved_model.pb", "out/encoder/assets/albert_config.json",
               "out/encoder/assets/30k-clean.model", "out/preprocess/saved_model.pb",
               "out/mrpc_hub/model.ckpt-best.index", "out/classifier.keras",
               "out/squad/export/saved_model/saved_model.pb", "out/squad/export/albert_model.tflite")),
    "Serving on a CPU (fp32, bf16, int8; TensorFlow, TFLite, OpenVINO)": Section(
        setup=("albert_base",), substitutions=(
            ("--tflite_seq_length=128", "--tflite_seq_length=16"),
        ), writes=("out/serving/albert_encoder.tflite", "out/serving/onnx/albert_encoder.onnx",
                   "out/serving/openvino/albert_encoder.xml", "models/albert/1/saved_model.pb")),
    "Reproducing the paper's ablations": Section(scikit_learn=True, substitutions=(
        ("make paper ", make_target("paper", ".venv/.installed-paper",
                                    "PAPER_DIR=$PWD/paper_output PAPER_TABLES=2 "
                                    "PAPER_FLAGS=--budget=tiny") + " "),
    ), writes=("paper_output/results.md",)),
    "Architecture": Section(),
}

# ----- the files the README says the reader has (tiny stand-ins) -----
VOCAB_SIZE = 400


def write_corpus(directory: str) -> None:
    """corpus.txt and data/*.txt: one sentence per line, a blank line between documents."""
    from albert_tf.corpus import build_corpus

    build_corpus(os.path.join(directory, "corpus.txt"), max_documents=60)
    os.makedirs(os.path.join(directory, "data"))
    shutil.copy(os.path.join(directory, "corpus.txt"), os.path.join(directory, "data", "part-0.txt"))


def tiny_config_dict() -> dict:
    return dict(vocab_size=VOCAB_SIZE, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)


def write_spm(directory: str, path: str) -> None:
    from albert_tf.corpus import build_corpus, train_tiny_spm

    corpus = os.path.join(directory, "spm_corpus.txt")
    build_corpus(corpus, max_documents=40)
    shutil.copy(train_tiny_spm(corpus, os.path.join(directory, "spm_stand_in"),
                               vocab_size=VOCAB_SIZE), path)


def write_albert_base(directory: str) -> None:
    """albert_base/ as the original release's tarball unpacks (tiny sizes)."""
    from albert_tf import AlbertConfig, checkpoints
    from albert_tf.models import AlbertPretrainer

    base = os.path.join(directory, "albert_base")
    os.makedirs(base)
    config = AlbertConfig(**tiny_config_dict())
    config.to_json_file(os.path.join(base, "albert_config.json"))
    model = AlbertPretrainer(config)
    ids = np.array([[2, 5, 3]], np.int32)
    model({"input_word_ids": ids, "input_mask": np.ones_like(ids),
           "input_type_ids": np.zeros_like(ids), "masked_lm_positions": np.array([[1]], np.int32)})
    checkpoints.save_original_checkpoint(model, os.path.join(base, "model.ckpt-best"))
    write_spm(directory, os.path.join(base, "30k-clean.model"))


def write_hf_stand_in(path: str) -> None:
    """A Hugging Face ALBERT directory as `hf download` leaves it: config.json,
    model.safetensors (written by transformers' save_pretrained), spiece.model."""
    import transformers

    model = transformers.AlbertForPreTraining(transformers.AlbertConfig(**tiny_config_dict()))
    model.save_pretrained(path)
    write_spm(".", os.path.join(path, "spiece.model"))
    assert sorted(os.listdir(path)) == ["config.json", "model.safetensors", "spiece.model"]


def write_pretraining_config(directory: str) -> None:
    from albert_tf import AlbertConfig

    AlbertConfig(**tiny_config_dict()).to_json_file(os.path.join(directory, "albert_config.json"))


def copy_glue(directory: str) -> None:
    shutil.copytree(os.path.join(FIXTURES, "glue"), os.path.join(directory, "glue_data"))


def copy_squad(directory: str) -> None:
    for name in ["train-v1.1.json", "dev-v1.1.json", "train-v2.0.json", "dev-v2.0.json"]:
        shutil.copy(os.path.join(FIXTURES, "squad", name), directory)


def copy_race(directory: str) -> None:
    shutil.copytree(os.path.join(FIXTURES, "race"), os.path.join(directory, "race_data"))


SETUP = {"corpus": write_corpus, "albert_base": write_albert_base, "glue": copy_glue,
         "squad": copy_squad, "race": copy_race, "pretraining_config": write_pretraining_config}


def test_every_block_has_a_test():
    sections = readme_sections()
    assert set(sections) == set(SECTIONS), "README sections with code and SECTIONS differ"
    assert sum(len(blocks) for blocks in sections.values()) >= 15
    for heading, blocks in sections.items():
        for language, code in blocks:
            assert language in ("python", "bash", "text"), f"{heading}: a block without language"


def test_architecture_names_existing_paths():
    """The Architecture block's file and folder names exist (indented lines: under albert_tf/)."""
    (language, layout), = readme_sections()["Architecture"]
    assert language == "text"
    checked = 0
    for line in layout.splitlines():
        names = re.split(r"\s{3,}", line.strip())[0]  # the description follows 3+ spaces
        under = "albert_tf" if line.startswith("  ") else ""
        for name in re.findall(r"[\w.]+/|\w+\.py", names):
            assert os.path.exists(os.path.join(REPO, under, name)), f"Architecture: no {under}/{name}"
            checked += 1
    assert checked >= 15


def substituted(heading: str, blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out = [code for _, code in blocks]
    for old, new in SECTIONS[heading].substitutions:
        hits = [i for i, code in enumerate(out) if old in code]
        assert hits, f"README section {heading!r}: substitution target not found: {old!r}"
        for i in hits:
            out[i] = out[i].replace(old, new)
    return [(language, code) for (language, _), code in zip(blocks, out)]


def test_sections_run_elsewhere_are_run_there():
    """A section with `run_by` names a test file that reads that section of the README."""
    for heading, section in SECTIONS.items():
        if section.run_by:
            with open(os.path.join(REPO, section.run_by), encoding="utf-8") as f:
                assert f'"{heading}"' in f.read(), f"{section.run_by} does not run {heading!r}"


# The two sections of Python only stay in the fast tier; the others run whole scripts.
FAST_SECTIONS = ("Configs, presets, models", "ALBERT layers in your own Keras model")


@pytest.mark.parametrize("heading", [
    pytest.param(h, marks=() if h in FAST_SECTIONS else pytest.mark.slow)
    for h, section in SECTIONS.items() if h != "Architecture" and not section.run_by])
def test_readme_section_runs(heading, tmp_path):
    blocks = substituted(heading, readme_sections()[heading])
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    # `python` is this interpreter (a wrapper, not a link: a venv is found from the path run).
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    for script in ["run_pretraining.py", "run_classifier.py", "run_squad.py", "run_race.py"]:
        (work / script).symlink_to(os.path.join(REPO, script))
    section = SECTIONS[heading]
    # As a runtime install: without the test-only scikit-learn (tests/runtime_site/sklearn).
    path = REPO if section.scikit_learn else RUNTIME_PYTHONPATH
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": path,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    here = os.getcwd()
    os.chdir(work)
    try:
        for name in section.setup:
            SETUP[name](str(work))
    finally:
        os.chdir(here)
    stand_ins = set(walk_modes(work))  # the reader's files, written by this test
    for index, (language, code) in enumerate(blocks):
        command = {"python": [sys.executable, "-c", code],
                   "bash": ["bash", "-euo", "pipefail", "-c", code]}[language]
        # Commands run as a new user's would: TF_CPP_MIN_LOG_LEVEL unset, the tools' own
        # default (make exports it as the Makefile says).
        block_env = env if language == "python" else {
            k: v for k, v in env.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
        result = subprocess.run(command, cwd=work, env=block_env, capture_output=True,
                                text=True, timeout=900, umask=0o022)
        assert result.returncode == 0, (
            f"README {heading!r} block {index} failed:\n{code}\n{result.stdout[-2000:]}\n"
            f"{result.stderr[-4000:]}")
        if language == "bash":
            noise = [line for line in result.stderr.splitlines()
                     if not stderr_filter.keep(line.encode(), NVIDIA_DRIVER)]
            assert not noise, (f"README {heading!r} block {index}: TensorFlow's INFO/WARNING "
                               f"or known-harmless lines reached stderr:\n" + "\n".join(noise[:10]))
    assert_outputs_readable(heading, section, {path: mode for path, mode in walk_modes(work).items()
                                      if path not in stand_ins})


def walk_modes(root) -> dict[str, tuple[bool, int]]:
    """{path relative to root: (is a directory, permission bits)} of everything under root."""
    found = {}
    for directory, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(directory, name)
            mode = os.lstat(path).st_mode
            found[os.path.relpath(path, root)] = (stat.S_ISDIR(mode), stat.S_IMODE(mode))
    return found


def assert_outputs_readable(heading: str, section: Section,
                            written: dict[str, tuple[bool, int]]) -> None:
    """Under umask 022: files 0644, directories 0755, no *.tmp; the section's `writes` there."""
    written = {path: mode for path, mode in written.items()
               if not any(fnmatch.fnmatch(path, pattern) for pattern in section.foreign)}
    for pattern in section.writes:
        assert fnmatch.filter(written, pattern), (
            f"README {heading!r}: nothing written matches {pattern!r}", sorted(written))
    assert not [path for path in written if path.endswith(".tmp")], heading
    wrong = {path: oct(mode) for path, (is_dir, mode) in written.items()
             if mode != (0o755 if is_dir else 0o644)}
    assert wrong == {}, f"README {heading!r}: not 0644 (files) / 0755 (directories): {wrong}"
