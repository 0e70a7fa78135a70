"""Training checkpoints: model, optimizer, step and input position, keyed by variable path.

Variables are saved under their Keras path (e.g. `transformer/group_0_inner_group_0_ffn/
intermediate/kernel`) rather than through the Keras object graph: the path is the same in
every model that contains the encoder, so a GLUE or SQuAD run can warm-start from a
pretraining checkpoint by name, and nothing depends on how layers store their sublayers.
Dropout RNG states are saved too (by order), so a resumed run draws the same masks.
Files are named `model.ckpt-<step>.*` as the original's Estimator checkpoints.

Faults (docs/faults.md): a checkpoint is written, then read back whole (every tensor,
checksums included) before the `checkpoint` state file names it and before `max_to_keep`
deletes an older one; a failed write (a full disk) removes what it left and raises
`CheckpointWriteError`, the previous checkpoints untouched. A resume takes the newest
*complete* checkpoint, saying in one warning line which newer ones it passed over (an
`.index` without its data, a truncated `.data` file, a state file naming a missing prefix).
"""

from __future__ import annotations

import os
import re
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.ours import keyed_variables
from albert_tf.runtime.paths import is_remote
from albert_tf.training.errors import OutputWriteError

CHECKPOINT_NAME = "model.ckpt"
_NUMBERED = re.compile(r"^" + re.escape(CHECKPOINT_NAME) + r"-(\d+)\.index$")


class CheckpointWriteError(OutputWriteError):
    """A checkpoint could not be written (e.g. the disk is full): one line naming the prefix;
    the partial files are removed and the previous checkpoints are intact."""


def restore_model(model: keras.Model, global_step: tf.Variable, directory: str,
                  path: str | None = None) -> str:
    """Loads the model weights and the step of one of our training checkpoints, `path` or
    else the latest of `directory` (for evaluation: optimizer slots and the input position
    are left); returns the path read."""
    path = path or tf.train.latest_checkpoint(directory)
    if not path:
        raise FileNotFoundError(f"no checkpoint found in {directory}")
    checkpoint = tf.train.Checkpoint(model=keyed_variables(model.variables),
                                     global_step=global_step)
    checkpoint.read(path).expect_partial()
    logging.info("Restored model weights from %s (step %d)", path, int(global_step.numpy()))
    return path


def error_phrase(error: BaseException) -> str:
    """An error's first line without TensorFlow's op decorations ({{function_node …}},
    [Op:…])."""
    message = (getattr(error, "message", None) or str(error)).strip()
    line = message.splitlines()[0] if message else type(error).__name__
    line = re.sub(r"\{\{[^}]*\}\}\s*|\s*\[Op:[^\]]*\]", "", line).strip()
    return line or type(error).__name__


def checkpoint_problem(prefix: str) -> str | None:
    """None when the checkpoint at `prefix` is complete and readable, else why not (a phrase).

    Reads every tensor back (one at a time, through the same op a restore uses), so a missing
    or truncated `.data` shard and a checksum mismatch are found, not only a missing index.
    """
    if not tf.io.gfile.exists(prefix + ".index"):
        return "its .index file is missing"
    try:
        reader = tf.compat.v1.train.NewCheckpointReader(prefix)
        for name, dtype in reader.get_variable_to_dtype_map().items():
            tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=[name], shape_and_slices=[""],
                                 dtypes=[dtype])
    except (tf.errors.OpError, ValueError) as e:
        return error_phrase(e)
    return None


def numbered_prefixes(directory: str) -> dict[int, str]:
    """{step: prefix} of every `model.ckpt-<step>` whose `.index` is in `directory`, plus the
    prefix the directory's `checkpoint` state file names (whether or not its files exist)."""
    found: dict[int, str] = {}
    if not tf.io.gfile.isdir(directory):
        return found
    for name in tf.io.gfile.listdir(directory):
        match = _NUMBERED.match(name)
        if match:
            found[int(match.group(1))] = os.path.join(directory, name[:-len(".index")])
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError):  # an unreadable state file: the files decide
        state = None
    named = state.model_checkpoint_path if state else ""
    if named:
        # TensorFlow gives the state's relative names joined to the directory already.
        path = named if os.path.isabs(named) or is_remote(named) else os.path.join(directory, named)
        match = _NUMBERED.match(os.path.basename(path) + ".index")
        if match:
            found.setdefault(int(match.group(1)), path)
    return found


def newest_complete(directory: str) -> tuple[str | None, list[str]]:
    """(the newest complete checkpoint of `directory` or None, the newer ones passed over as
    "<prefix> (<why>)")."""
    skipped = []
    for step, prefix in sorted(numbered_prefixes(directory).items(), reverse=True):
        problem = checkpoint_problem(prefix)
        if problem is None:
            return prefix, skipped
        skipped.append(f"{prefix} ({problem})")
    return None, skipped


def remove_checkpoint_files(prefix: str) -> None:
    """Deletes `prefix.index`, its `.data` shards and the `prefix_temp` directory TensorFlow
    writes shards to before merging them (what a failed write may leave)."""
    for name in tf.io.gfile.glob(prefix + ".*"):
        if name.endswith(".index") or ".data-" in name:
            tf.io.gfile.remove(name)
    for name in tf.io.gfile.glob(prefix + "_temp*"):
        if tf.io.gfile.isdir(name):
            tf.io.gfile.rmtree(name)
        else:
            tf.io.gfile.remove(name)


class TrainingCheckpoint:
    """tf.train.CheckpointManager over model + optimizer + global step (+ input iterator).

    On a multi-worker strategy every worker must save (variables may be synchronised on
    read). Non-chief workers write to `output_dir/.worker_<id>` and keep it: their input
    iterator reads another shard, so each worker resumes its own input position (falling
    back to the chief's checkpoint, input position included, when its own is missing).

    Example:
        >>> ckpt = TrainingCheckpoint(output_dir, model, optimizer, step, max_to_keep=5)
        >>> ckpt.attach_iterator(iterator); ckpt.restore_latest(); ckpt.save(1000)
    """

    def __init__(self, directory: str, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                 global_step: tf.Variable, max_to_keep: int = 5, is_chief: bool = True,
                 worker_id: int = 0):
        self.directory = directory
        self.is_chief = is_chief
        self._objects: dict[str, Any] = {
            "model": keyed_variables(model.variables),
            "optimizer": keyed_variables(optimizer.variables),
            "global_step": global_step,
        }
        self._global_step = global_step
        self._max_to_keep = max_to_keep
        self._write_dir = directory if is_chief else os.path.join(directory, f".worker_{worker_id}")
        self._manager: tf.train.CheckpointManager | None = None

    def attach_iterator(self, iterator: Any) -> None:
        """Adds the (distributed) input iterator, so a resumed run continues the data stream."""
        self._objects["iterator"] = iterator
        self._manager = None

    @property
    def manager(self) -> tf.train.CheckpointManager:
        if self._manager is None:
            checkpoint = tf.train.Checkpoint(**self._objects)
            self._manager = tf.train.CheckpointManager(
                checkpoint, self._write_dir, max_to_keep=self._max_to_keep,
                checkpoint_name=CHECKPOINT_NAME, step_counter=self._global_step)
        return self._manager

    def latest(self) -> str | None:
        """The newest complete checkpoint in the (chief's) directory, or None."""
        return newest_complete(self.directory)[0]

    def restore(self, path: str) -> None:
        """Restores everything attached; every attached object must be in the checkpoint."""
        self.manager.checkpoint.restore(path).assert_existing_objects_matched()

    def restore_latest(self) -> str | None:
        """Restores the newest checkpoint of `directory` if there is one; returns its path.

        Incomplete newer checkpoints are passed over with one warning line. A non-chief
        worker prefers its own copy of the same step (its input position).
        """
        for stale in tf.io.gfile.glob(os.path.join(self._write_dir, f"{CHECKPOINT_NAME}-*_temp*")):
            if tf.io.gfile.isdir(stale):  # shards of a write that was killed before merging
                tf.io.gfile.rmtree(stale)
        path, skipped = newest_complete(self.directory)
        if skipped:
            logging.warning("Incomplete checkpoint(s) %s: resuming from the newest complete "
                            "one, %s", "; ".join(skipped), path or "(none: starting afresh)")
        if path and not self.is_chief:
            own = os.path.join(self._write_dir, os.path.basename(path))
            if checkpoint_problem(own) is None:
                path = own
            else:
                logging.warning("worker %s: no own checkpoint for %s; its input restarts from "
                                "the chief's position", self._write_dir, path)
        if path:
            self.restore(path)
        return path

    def prefix(self, step: int) -> str:
        """This worker's path of the checkpoint of `step` (the chief's: in `directory`)."""
        return os.path.join(self._write_dir, f"{CHECKPOINT_NAME}-{step}")

    def save(self, step: int) -> str | None:
        """Writes `model.ckpt-<step>`, pruning to `max_to_keep`; returns the chief's path.

        The new checkpoint is read back whole before the state file names it and before the
        rotation deletes an older one (a write callback, which runs before the manager's own
        record-and-sweep callback). Raises CheckpointWriteError, having removed the partial
        files, when writing or reading back fails (e.g. a full disk).
        """
        prefix = self.prefix(step)

        def verify(save_path: str) -> None:
            problem = checkpoint_problem(save_path)
            if problem is not None:
                raise CheckpointWriteError(f"{save_path}: the checkpoint just written does "
                                           f"not read back ({problem})")

        options = tf.train.CheckpointOptions(experimental_write_callbacks=[verify])
        try:
            path = self.manager.save(checkpoint_number=step, options=options)
        except (tf.errors.OpError, OSError) as e:
            try:
                remove_checkpoint_files(prefix)
            except (tf.errors.OpError, OSError):
                pass
            previous = newest_complete(self._write_dir)[0] or "(none)"
            raise CheckpointWriteError(
                f"{prefix}: writing the checkpoint of step {step} failed ({error_phrase(e)}); "
                f"its partial files were removed; the previous checkpoint {previous} is intact"
            ) from None
        return path if self.is_chief else None
