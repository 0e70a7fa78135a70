"""No new local-only file access of a user's path: every path a user gives may be a bucket.

`os.path.exists`/`isdir`/`isfile`, `open()`, `os.listdir`, `os.makedirs`, `glob.glob`,
`shutil` copies and the like see only the local disk: on `gs://bucket/…` they find nothing
(or create a local directory named `gs:`). Code must call `albert_tf.runtime.paths` (or
`tf.io.gfile`) instead. This test walks the AST of every module under albert_tf/ and fails on
such a call outside `ALLOWED`: the places that touch only local files, each with its reason,
keyed by (module, function). An entry that no longer matches anything fails too, so the
list stays exact.
"""

from __future__ import annotations

import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, "albert_tf")

# Calls that reach only the local file system.
LOCAL_ONLY = {
    "open", "os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.lexists",
    "os.path.getsize", "os.path.getmtime", "os.listdir", "os.scandir", "os.makedirs",
    "os.mkdir", "os.remove", "os.unlink", "os.rename", "os.replace", "os.walk", "os.stat",
    "glob.glob", "_glob.glob", "shutil.copy", "shutil.copyfile", "shutil.copytree",
    "shutil.rmtree", "shutil.move",
}

STAGING = "inside a local staging directory (atomic_directory stages locally, also for a bucket)"
SCRATCH = "a local temporary file of its own"

# (module path under albert_tf/, enclosing function, "<module>", or "*" for the whole module):
# why it is local only.
ALLOWED: dict[tuple[str, str], str] = {
    # The helpers themselves: their local fast path.
    ("runtime/paths.py", "exists"): "the local branch of the one helper",
    ("runtime/paths.py", "isdir"): "the local branch of the one helper",
    ("runtime/paths.py", "isfile"): "the local branch of the one helper",
    ("runtime/paths.py", "listdir"): "the local branch of the one helper",
    ("runtime/paths.py", "glob"): "the local branch of the one helper",
    ("runtime/paths.py", "makedirs"): "the local branch of the one helper",
    ("runtime/paths.py", "open_file"): "the local branch of the one helper",
    ("runtime/paths.py", "remove"): "the local branch of the one helper",
    ("runtime/paths.py", "rmtree"): "the local branch of the one helper",
    ("runtime/paths.py", "_copy_tree"): "writes the local copy of a remote input",
    ("runtime/paths.py", "local_copy"): "removes the local copy of a remote input",
    ("runtime/local_files.py", "fsync_tree"): "local branch (fsync has no remote meaning)",
    ("runtime/local_files.py", "remove_local"): "local branch",
    ("runtime/local_files.py", "replace_local"): "local branch",
    ("runtime/atomic_files.py", "AtomicFile.__init__"): "local branch (remote: tf.io.gfile)",
    ("runtime/atomic_files.py", "AtomicFile._publish_local"): "local branch",
    ("runtime/atomic_files.py", "AtomicFile.discard"): "local branch (remote: tf.io.gfile)",
    ("runtime/atomic_files.py", "AtomicDirectory.__init__"): "local branch (remote: tf.io.gfile)",
    ("runtime/atomic_files.py", "AtomicDirectory._publish_local"): "local branch",
    ("runtime/atomic_files.py", "AtomicDirectory._publish_remote"): "walks the local staging tree it uploads",
    ("runtime/atomic_files.py", "AtomicDirectory.discard"): "removes the local staging directory",
    # The machine, not a user's file.
    ("runtime/hardware.py", "has_nvidia_driver"): "the NVIDIA driver's /proc file",
    ("runtime/hardware.py", "_this_cpuinfo"): "this machine's /proc/cpuinfo",
    # The package's own data and the Python installation's text (the built-in corpus).
    ("corpus/stdlib_text.py", "module_files"): "the Python installation's own files",
    ("corpus/stdlib_text.py", "_topic_texts"): "the Python installation's own files",
    ("corpus/stdlib_text.py", "iter_documents"): "the Python installation's own files",
    # Writers into a staging directory or a scratch file of their own.
    ("data/sentencepiece.py", "train_sentencepiece"):
        "spm_train's local input/output: a scratch file, or a local --model_prefix only",
    ("export/assets.py", "asset_copy"): SCRATCH,
    ("serving/manifest.py", "write_manifest"): STAGING,
    ("export/serving_artifacts.py", "write_encoder_tflite"): STAGING,
    ("export/serving_artifacts.py", "write_openvino_ir"): STAGING,
    ("export/onnx_artifacts.py", "write_onnx_artifacts"): STAGING,
    ("export/onnx_artifacts.py", "_write_int8"): STAGING,
    ("export/onnx_artifacts.py", "write_task_onnx"): STAGING,
    ("export/int8_calibration.py", "write_openvino_int8"): STAGING,
    ("checkpoints/hf_files.py", "write_hf_directory"): STAGING,
    ("checkpoints/conversion.py", "convert_checkpoint"): STAGING,
    # Readers of a local copy (paths.staged_copy) of what may be a bucket's directory.
    ("checkpoints/hf_files.py", "HFWeights.__init__"): "the directory's local copy (safetensors, torch)",
    ("checkpoints/hf_files.py", "HFWeights._read_index"): "the directory's local copy",
    ("checkpoints/hf_files.py", "_read_bfloat16"): "a file of the directory's local copy",
    ("checkpoints/hf_source.py", "_signature"):
        "a read cache's key: local files' identity (a bucket's files read as absent, so its "
        "key stays constant within the process)",
    # keras-hub presets: read from a local copy (paths.staged_copy: h5py opens local files
    # only), written into an atomic_directory's local staging directory.
    ("checkpoints/keras_hub_files.py", "read_preset_json"): "reads the preset's local copy",
    ("checkpoints/keras_hub_files.py", "PresetFiles.__init__"): "the preset's local copy",
    ("checkpoints/keras_hub_files.py", "PresetFiles.is_classifier"): "the preset's local copy",
    ("checkpoints/keras_hub_files.py", "PresetFiles.weights_file"): "the preset's local copy",
    ("checkpoints/keras_hub_files.py", "write_bytes"): "writes into the local staging directory",
    ("checkpoints/keras_hub_files.py", "write_json"): "writes into the local staging directory",
}


def _call_name(node: ast.Call) -> str | None:
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
        return ".".join(reversed(parts))
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self):
        self.scope: list[str] = []
        self.found: list[tuple[str, int, str]] = []  # (function, line, call)

    def _visit_scope(self, node) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node)
        if name in LOCAL_ONLY:
            # A method's class and name (nested functions count as their outer function).
            scope = self.scope[:2] if len(self.scope) > 1 and self.scope[0][:1].isupper() \
                else self.scope[:1]
            self.found.append((".".join(scope) or "<module>", node.lineno, name))
        self.generic_visit(node)


def local_only_calls() -> list[tuple[str, str, int, str]]:
    """(module, function, line, call) of every local-only call under albert_tf/."""
    calls = []
    for directory, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            finder = _Finder()
            finder.visit(tree)
            module = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
            calls.extend((module, function, line, call) for function, line, call in finder.found)
    return calls


def _allowed(module: str, function: str) -> bool:
    return (module, function) in ALLOWED or (module, "*") in ALLOWED


def test_no_local_only_access_outside_the_allow_list():
    unexpected = [f"albert_tf/{module}:{line}: {call}() in {function}"
                  for module, function, line, call in local_only_calls()
                  if not _allowed(module, function)]
    assert not unexpected, (
        "local-only file access of what may be a user's bucket path; use albert_tf.runtime.paths "
        "(or tf.io.gfile), or add (module, function) to ALLOWED with the reason:\n"
        + "\n".join(unexpected))


def test_every_allowed_entry_is_used_and_says_why():
    calls = local_only_calls()
    used = {(module, function) for module, function, _, _ in calls}
    used |= {(module, "*") for module, _, _, _ in calls}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"ALLOWED entries that match no call any more: {stale}"
    assert all(len(reason.split()) >= 2 for reason in ALLOWED.values())


@pytest.mark.parametrize("source,expected", [
    ("import os\ndef f(p):\n    return os.path.exists(p)\n", [("f", "os.path.exists")]),
    ("def g(p):\n    with open(p) as f:\n        return f.read()\n", [("g", "open")]),
    ("class C:\n    def m(self, p):\n        def inner():\n            return os.listdir(p)\n",
     [("C.m", "os.listdir")]),
    ("from albert_tf import paths\ndef h(p):\n    return paths.exists(p)\n", []),
])
def test_the_finder_sees_each_kind_of_call(source, expected):
    finder = _Finder()
    finder.visit(ast.parse(source))
    assert [(function, call) for function, _, call in finder.found] == expected
