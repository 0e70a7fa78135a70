"""Training checkpoints: model, optimizer, step and input position, keyed by variable path.

Variables are saved under their Keras path (e.g. `transformer/group_0_inner_group_0_ffn/
intermediate/kernel`) rather than through the Keras object graph: the path is the same in
every model that contains the encoder, so a GLUE or SQuAD run can warm-start from a
pretraining checkpoint by name, and nothing depends on how layers store their sublayers.
Dropout RNG states are saved too (by order), so a resumed run draws the same masks.
Files are named `model.ckpt-<step>.*` as the original's Estimator checkpoints.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import keras
import tensorflow as tf
from absl import logging

CHECKPOINT_NAME = "model.ckpt"
_SEED_STATE = "seed_generator_state"


def _tf_variable(variable: Any) -> tf.Variable:
    return variable.value if isinstance(variable, keras.Variable) else variable


def keyed_variables(variables: Iterable[Any]) -> dict[str, tf.Variable]:
    """{checkpoint key: tf.Variable}: the Keras path, or `seed_states/<i>` for RNG states."""
    keyed: dict[str, tf.Variable] = {}
    seeds = 0
    for variable in variables:
        path = getattr(variable, "path", None) or variable.name
        if _SEED_STATE in path:
            key, seeds = f"seed_states/{seeds}", seeds + 1
        else:
            key, n = path, 1
            while key in keyed:  # never expected; keeps keys unique rather than overwriting
                key, n = f"{path}#{n}", n + 1
        keyed[key] = _tf_variable(variable)
    return keyed


def escape_key(key: str) -> str:
    """The escaping tf.train.Checkpoint applies to dict keys ("." → "..", "/" → ".S")."""
    return key.replace(".", "..").replace("/", ".S")


def is_training_checkpoint(path: str) -> bool:
    """True for a checkpoint written by `TrainingCheckpoint` (ours, not an original TF1 one)."""
    try:
        names = [name for name, _ in tf.train.list_variables(path)]
    except (tf.errors.NotFoundError, ValueError):
        return False
    return any(name.startswith("model/") and name.endswith("VARIABLE_VALUE") for name in names)


def load_model_weights(model: keras.Model, path: str, allow_missing: bool = True
                       ) -> tuple[list[str], list[str]]:
    """Warm start from one of our checkpoints: trainable variables, by path (faithfulness §3.5 rule).

    Variables absent from the checkpoint keep their initialisation and are logged (as the
    original's assignment map); optimizer slots and the step are never loaded.

    Returns:
        (loaded paths, missing paths).
    """
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    loaded, missing = [], []
    for key, variable in keyed_variables(model.trainable_variables).items():
        name = f"model/{escape_key(key)}/.ATTRIBUTES/VARIABLE_VALUE"
        if name not in shapes:
            missing.append(key)
            continue
        if list(shapes[name]) != list(variable.shape):
            raise ValueError(f"{path}: {key} has shape {shapes[name]} in the checkpoint, "
                             f"{list(variable.shape)} in the model")
        variable.assign(reader.get_tensor(name))
        loaded.append(key)
    for key in loaded:
        logging.info("  %s, *INIT_FROM_CKPT*", key)
    for key in missing:
        logging.info("  %s (not in %s; keeps its initialisation)", key, path)
    if missing and not allow_missing:
        raise ValueError(f"{path}: missing {len(missing)} model variable(s): {', '.join(missing)}")
    return loaded, missing


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
        """The newest checkpoint in the (chief's) directory, or None."""
        return tf.train.latest_checkpoint(self.directory)

    def restore(self, path: str) -> None:
        """Restores everything attached; every attached object must be in the checkpoint."""
        self.manager.checkpoint.restore(path).assert_existing_objects_matched()

    def restore_latest(self) -> str | None:
        """Restores the newest checkpoint of `directory` if there is one; returns its path.

        A non-chief worker prefers its own copy of the same step (its input position).
        """
        path = self.latest()
        if path and not self.is_chief:
            own = tf.train.latest_checkpoint(self._write_dir)
            if own and own.rsplit("-", 1)[-1] == path.rsplit("-", 1)[-1]:
                path = own
            else:
                logging.warning("worker %s: no own checkpoint for %s; its input restarts from "
                                "the chief's position", self._write_dir, path)
        if path:
            self.restore(path)
        return path

    def save(self, step: int) -> str | None:
        """Writes `model.ckpt-<step>`, pruning to `max_to_keep`; returns the chief's path."""
        path = self.manager.save(checkpoint_number=step)
        return path if self.is_chief else None
