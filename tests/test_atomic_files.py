"""atomic_file / atomic_directory (albert_tf/runtime/atomic_files.py): the modes a plain open()/mkdir()
gives under the umask, complete-or-absent outputs, the existing-target policies, remote paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from albert_tf.runtime import atomic_files
from albert_tf.runtime.atomic_files import atomic_directory, atomic_file
from tests.training.processes import RUNTIME_PYTHONPATH

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run under a given umask in a fresh process (the umask is process-wide): writes plain and atomic
# outputs of every kind, prints {relative path: mode} of everything under the root.
_WRITER = r"""
import json, os, stat, sys
from albert_tf.runtime.atomic_files import atomic_directory, atomic_file

root = sys.argv[1]
join = os.path.join
with open(join(root, "plain_file"), "w") as f:
    f.write("x")
os.mkdir(join(root, "plain_dir"))
with atomic_file(join(root, "text.txt")) as f:
    f.write("x")
with atomic_file(join(root, "new_parent", "bytes.bin"), "wb") as f:
    f.write(b"x")
os.mkdir(join(root, "merged"))
for name, existing in (("replaced", "replace"), ("refused", "refuse"), ("merged", "merge")):
    with atomic_directory(join(root, name), existing=existing) as staging:
        os.mkdir(join(staging, "sub"))
        with open(join(staging, "sub", "file"), "w") as f:
            f.write("x")
# Replacing outputs that are owner-only (as tempfile.mkstemp/mkdtemp made them) gives new modes.
for name in ("old_file", "old_dir"):
    path = join(root, name)
    if name == "old_file":
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        with atomic_file(path) as f:
            f.write("x")
    else:
        os.mkdir(path, 0o700)
        with atomic_directory(path) as staging:
            pass
modes = {}
for directory, dirs, files in os.walk(root):
    for name in dirs + files:
        path = join(directory, name)
        modes[os.path.relpath(path, root)] = stat.S_IMODE(os.stat(path).st_mode)
print(json.dumps(modes))
"""


def _modes_under(umask: int, root) -> dict[str, int]:
    result = subprocess.run([sys.executable, "-c", _WRITER, str(root)], umask=umask, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=RUNTIME_PYTHONPATH), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("umask, file_mode, dir_mode",
                         [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700), (0o002, 0o664, 0o775)],
                         ids=["umask022", "umask077", "umask002"])
def test_modes_are_those_of_a_plain_open_and_mkdir(tmp_path, umask, file_mode, dir_mode):
    modes = _modes_under(umask, tmp_path)
    assert modes["plain_file"] == file_mode and modes["plain_dir"] == dir_mode  # the reference
    expected_dirs = {"plain_dir", "new_parent", "replaced", "refused", "merged", "old_dir",
                     "replaced/sub", "refused/sub", "merged/sub"}
    assert set(modes) == expected_dirs | {
        "plain_file", "text.txt", "new_parent/bytes.bin", "old_file", "replaced/sub/file",
        "refused/sub/file", "merged/sub/file"}  # no temporary left behind
    for path, mode in modes.items():
        assert mode == (dir_mode if path in expected_dirs else file_mode), (path, oct(mode))


def test_the_temporary_is_hidden_beside_the_target_and_readers_see_the_old_file(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("old\n")
    with atomic_file(target) as f:
        f.write("new\n")
        f.flush()
        temporaries = [n for n in os.listdir(tmp_path) if n != "results.txt"]
        assert len(temporaries) == 1
        assert temporaries[0].startswith(".results.txt.") and temporaries[0].endswith(".tmp")
        assert (tmp_path / temporaries[0]).read_text() == "new\n"
        assert target.read_text() == "old\n"
    assert target.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["results.txt"]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_a_failed_write_leaves_the_target_and_no_temporary(tmp_path, error):
    target = tmp_path / "results.txt"
    target.write_text("old\n")
    with pytest.raises(error):
        with atomic_file(target) as f:
            f.write("half of the new")
            raise error()
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["results.txt"]
    with pytest.raises(error):
        with atomic_file(tmp_path / "new.txt") as f:
            raise error()
    assert os.listdir(tmp_path) == ["results.txt"]


def test_a_file_is_fsynced_before_it_is_renamed(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append(("fsync", fd)) or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append(("replace", b)) or real_replace(a, b))
    output = atomic_file(tmp_path / "out.bin", "wb")
    with output as f:
        f.write(b"data")
        descriptor = f.fileno()
    assert events[:2] == [("fsync", descriptor), ("replace", str(tmp_path / "out.bin"))]


def test_refusing_an_existing_file(tmp_path):
    target = tmp_path / "export.tflite"
    target.write_bytes(b"theirs")
    with pytest.raises(FileExistsError, match="export.tflite: already exists"):
        atomic_file(target, "wb", existing="refuse")  # before anything is written
    late = tmp_path / "late.txt"
    with pytest.raises(FileExistsError, match="late.txt: already exists"):
        with atomic_file(late, existing="refuse") as f:
            f.write("ours")
            late.write_text("theirs")  # appears while we write: not overwritten at the rename
    assert late.read_text() == "theirs" and target.read_bytes() == b"theirs"
    assert sorted(os.listdir(tmp_path)) == ["export.tflite", "late.txt"]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="mode must be"):
        atomic_file("x", "a")
    with pytest.raises(ValueError, match="existing must be one of replace, refuse, got 'merge'"):
        atomic_file("x", existing="merge")
    with pytest.raises(ValueError, match="existing must be one of replace, refuse, merge"):
        atomic_directory("x", existing="keep")


def test_commit_and_discard_without_a_with_block(tmp_path):
    output = atomic_file(tmp_path / "a.txt")
    output.stream.write("a")
    assert output.commit() == str(tmp_path / "a.txt")
    with pytest.raises(ValueError, match="already committed"):
        output.commit()
    output.discard()  # no effect after a commit
    assert (tmp_path / "a.txt").read_text() == "a"
    dropped = atomic_file(tmp_path / "b.txt")
    dropped.discard()
    dropped.discard()
    assert os.listdir(tmp_path) == ["a.txt"]


def _tree(root) -> dict[str, str]:
    return {os.path.relpath(os.path.join(d, n), root): open(os.path.join(d, n)).read()
            for d, _, files in os.walk(root) for n in files}


def test_replacing_a_directory_swaps_it_whole(tmp_path):
    target = tmp_path / "export"
    (target / "variables").mkdir(parents=True)
    (target / "old_only.pb").write_text("old")
    (target / "variables" / "v").write_text("old")
    with atomic_directory(target) as staging:
        assert os.path.dirname(staging) == str(tmp_path)  # beside the target
        assert _tree(target) == {"old_only.pb": "old", "variables/v": "old"}  # still the old one
        os.mkdir(os.path.join(staging, "variables"))
        with open(os.path.join(staging, "variables", "v"), "w") as f:
            f.write("new")
    assert _tree(target) == {"variables/v": "new"}
    assert os.listdir(tmp_path) == ["export"]


def test_a_failed_directory_leaves_the_old_one_and_no_staging(tmp_path):
    target = tmp_path / "export"
    target.mkdir()
    (target / "saved_model.pb").write_text("old")
    for existing in ("replace", "merge"):
        with pytest.raises(RuntimeError):
            with atomic_directory(target, existing=existing) as staging:
                with open(os.path.join(staging, "saved_model.pb"), "w") as f:
                    f.write("half")
                raise RuntimeError()
        assert _tree(target) == {"saved_model.pb": "old"} and os.listdir(tmp_path) == ["export"]
    with pytest.raises(RuntimeError):
        with atomic_directory(tmp_path / "new", existing="merge"):
            raise RuntimeError()
    assert os.listdir(tmp_path) == ["export"]  # the merge target it created is gone too


def test_refusing_an_existing_directory(tmp_path):
    (tmp_path / "export").mkdir()
    with pytest.raises(FileExistsError, match="export: already exists"):
        atomic_directory(tmp_path / "export", existing="refuse")
    late = tmp_path / "late"
    with pytest.raises(FileExistsError, match="late: already exists"):
        with atomic_directory(late, existing="refuse") as staging:
            open(os.path.join(staging, "ours"), "w").close()
            late.mkdir()  # an empty directory: rename() alone would silently replace it
    assert os.listdir(late) == [] and sorted(os.listdir(tmp_path)) == ["export", "late"]


def test_merging_keeps_other_entries_and_replaces_same_names(tmp_path):
    target = tmp_path / "checkpoints"
    target.mkdir()
    (target / "model.ckpt-1.index").write_text("step 1")
    (target / "checkpoint").write_text("old state")
    with atomic_directory(target, existing="merge") as staging:
        assert os.path.dirname(staging) == str(target)  # inside: only the target must be writable
        for name, text in (("model.ckpt-2.index", "step 2"), ("checkpoint", "new state")):
            with open(os.path.join(staging, name), "w") as f:
                f.write(text)
    assert _tree(target) == {"model.ckpt-1.index": "step 1", "model.ckpt-2.index": "step 2",
                             "checkpoint": "new state"}


def test_replacing_a_directory_target_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("a file")
    with atomic_directory(tmp_path / "out") as staging:
        open(os.path.join(staging, "inside"), "w").close()
    assert os.listdir(tmp_path / "out") == ["inside"] and os.listdir(tmp_path) == ["out"]


def test_log_lines_written_while_staged_name_the_final_paths(tmp_path, caplog):
    """Issue 28: a writer inside a staging directory logs where it writes; the line names
    where the output is published — nested stagings (a merge inside another's staging, as
    convert --to=hf does) included. Lines outside any staging are left as they are."""
    import logging

    from absl import logging as absl_logging

    export, merged = tmp_path / "export", tmp_path / "merged"
    with caplog.at_level(logging.INFO, logger="absl"):
        with atomic_directory(export, existing="refuse") as staging:
            absl_logging.info("Wrote %s (%d bytes)", os.path.join(staging, "model.tflite"), 7)
            with atomic_directory(staging, existing="merge") as inner:
                absl_logging.info("Wrote %s", os.path.join(inner, "config.json"))
            absl_logging.info("into %s/", staging)
        with atomic_directory(merged, existing="merge") as staging:
            absl_logging.info("Wrote %s", os.path.join(staging, "model.ckpt"))
        absl_logging.info("after: %s", staging)
    assert [r.getMessage() for r in caplog.records] == [
        f"Wrote {export}/model.tflite (7 bytes)", f"Wrote {export}/config.json",
        f"into {export}/", f"Wrote {merged}/model.ckpt", f"after: {staging}"]
    assert atomic_files.STAGED_PATHS.open == ()  # published: nothing left to rename
    with pytest.raises(RuntimeError), atomic_directory(tmp_path / "failed"):
        raise RuntimeError("a writer failed")
    assert atomic_files.STAGED_PATHS.open == ()  # discarded too


def test_remote_paths_go_through_gfile():
    """ram:// (TensorFlow's in-memory file system) stands in for gs://."""
    import tensorflow as tf

    gfile = tf.io.gfile
    root = "ram://atomic_files_test"
    assert atomic_files.is_remote(root) and not atomic_files.is_remote("/tmp/x")
    with atomic_file(f"{root}/eval_results.txt") as f:
        f.write("loss = 1\n")
        assert [n for n in gfile.listdir(root) if n.endswith(".tmp")]  # written aside
    with pytest.raises(RuntimeError):
        with atomic_file(f"{root}/eval_results.txt") as f:
            f.write("loss = 2\n")
            raise RuntimeError()
    with pytest.raises(FileExistsError):
        atomic_file(f"{root}/eval_results.txt", existing="refuse")
    with gfile.GFile(f"{root}/eval_results.txt") as f:
        assert f.read() == "loss = 1\n"
    assert gfile.listdir(root) == ["eval_results.txt"]

    with atomic_directory(f"{root}/export") as staging:
        gfile.makedirs(f"{staging}/variables")
        with gfile.GFile(f"{staging}/variables/v", "w") as f:
            f.write("v")
    with atomic_directory(f"{root}/export", existing="merge") as staging:
        with gfile.GFile(f"{staging}/saved_model.pb", "w") as f:
            f.write("pb")
    found = {os.path.join(d, n)[len(root) + 1:] for d, _, files in gfile.walk(root) for n in files}
    assert found == {"eval_results.txt", "export/variables/v", "export/saved_model.pb"}
    gfile.rmtree(root)
