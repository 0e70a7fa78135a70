"""A keras-hub preset directory, read and written without keras-hub (and without TensorFlow).

What `save_to_preset` writes for ALBERT (keras-hub 0.32, Keras 3): `config.json` (the
serialized `AlbertBackbone`: `class_name`, `registered_name`, `config`), `model.weights.h5`,
`metadata.json`; with a tokenizer `tokenizer.json` and `assets/tokenizer/vocabulary.spm`; a
task adds `task.json` (e.g. `AlbertTextClassifier`), `task.weights.h5` (its own layers only)
and `preprocessor.json`. A `.weights.h5` file is Keras 3's `H5IOStore` layout: every layer's
variables under `layers/<snake_case class name>[_<n>]/…/vars/<index>`, numbered in the order
the functional model lists its layers, each `vars` group carrying the layer's `name`. The
tensors are read and written through h5py (a Keras dependency), so keras-hub is needed
only by the tests. `preset_directory` needs neither TensorFlow nor h5py (nor opens a file):
the kind rule asks it.
"""

from __future__ import annotations

import json
import os
import posixpath
from typing import Any, Iterable, Mapping

import numpy as np

from albert_tf.checkpoints.report import CheckpointFileError
from albert_tf.runtime import paths

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
SHARDED_WEIGHTS_FILE = "model.weights.json"
TASK_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
PREPROCESSOR_FILE = "preprocessor.json"
METADATA_FILE = "metadata.json"
SPM_ASSET = os.path.join("assets", "tokenizer", "vocabulary.spm")
BACKBONE_CLASS = "AlbertBackbone"
CLASSIFIER_CLASS = "AlbertTextClassifier"


def preset_directory(path: str | os.PathLike | None) -> str | None:
    """The keras-hub preset directory `path` is (or a file of), else None: a directory with
    config.json beside Keras weights (`model.weights.h5`, `model.weights.json`) or a
    `task.json` — files a Hugging Face directory never has. Names only, no file is opened (a
    run parses config.json once); `PresetFiles` reads what the config says."""
    if not path:
        return None
    path = paths.absolute(path)
    if paths.isfile(path):
        path = posixpath.dirname(path) if paths.is_remote(path) else os.path.dirname(path)
    if not paths.isfile(paths.join(path, CONFIG_FILE)):
        return None
    markers = (WEIGHTS_FILE, SHARDED_WEIGHTS_FILE, TASK_FILE)
    return path if any(paths.exists(paths.join(path, m)) for m in markers) else None


def is_keras_hub_preset(path: str | os.PathLike | None) -> bool:
    """True when `path` is a keras-hub preset directory (or a file inside one)."""
    return preset_directory(path) is not None


def read_preset_json(directory: str, name: str) -> dict[str, Any]:
    """A preset's JSON file as an object; one CheckpointFileError line naming the file."""
    path = os.path.join(directory, name)
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise CheckpointFileError(f"{path}: not found (a keras-hub preset holds it)") from None
    except json.JSONDecodeError as e:
        raise CheckpointFileError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(value, dict) or not isinstance(value.get("config"), dict):
        raise CheckpointFileError(f"{path}: not a serialized Keras object (no 'config' object)")
    return value


class PresetFiles:
    """The parts of an ALBERT preset: the backbone's config, the task's (if any), the
    SentencePiece model (if any). Refuses a preset of another architecture, one line."""

    def __init__(self, path: str):
        directory = preset_directory(path)
        if directory is None:
            raise FileNotFoundError(f"{path}: not a keras-hub preset directory (expected a "
                                    f"{CONFIG_FILE} written by save_to_preset)")
        # A preset on a bucket is read from a local copy (h5py opens local files only).
        self.source = directory
        directory = self.directory = paths.staged_copy(directory)
        backbone = read_preset_json(directory, CONFIG_FILE)
        class_name = backbone.get("class_name")
        if class_name != BACKBONE_CLASS:
            raise CheckpointFileError(
                f"{os.path.join(directory, CONFIG_FILE)}: a keras-hub {class_name} preset, not "
                f"ALBERT (expected class_name '{BACKBONE_CLASS}')")
        self.backbone_config: dict[str, Any] = backbone["config"]
        task_file = os.path.join(directory, TASK_FILE)
        self.task: dict[str, Any] | None = (read_preset_json(directory, TASK_FILE)
                                             if os.path.exists(task_file) else None)
        self.task_class: str | None = self.task.get("class_name") if self.task else None
        spm = os.path.join(directory, SPM_ASSET)
        self.spm_model_file: str | None = spm if os.path.isfile(spm) else None
        self.config_file = os.path.join(directory, CONFIG_FILE)

    @property
    def is_classifier(self) -> bool:
        """A task preset of AlbertTextClassifier with its head weights."""
        return (self.task_class == CLASSIFIER_CLASS
                and os.path.exists(os.path.join(self.directory, TASK_WEIGHTS_FILE)))

    def weights_file(self) -> str:
        path = os.path.join(self.directory, WEIGHTS_FILE)
        if not os.path.exists(path) and os.path.exists(
                os.path.join(self.directory, SHARDED_WEIGHTS_FILE)):
            raise CheckpointFileError(f"{self.directory}: sharded keras-hub weights "
                                      f"({SHARDED_WEIGHTS_FILE}) are not supported; save the "
                                      "preset with max_shard_size=None")
        return path


class H5Weights:
    """The tensors of a Keras 3 `.weights.h5` file under readable names: {name: shape}, and
    values on request. A dataset `layers/<path>/vars/<i>` is named `<layer>/<rest>/<i>`, with
    the file's auto-numbered top-level path replaced by the layer name `layer_names` gives."""

    def __init__(self, file: str, layer_names: Mapping[str, str], skipped_roots: Iterable[str] = ()):
        import h5py

        self.file = file
        self.shapes: dict[str, list[int]] = {}
        self.skipped: list[str] = []
        self._paths: dict[str, str] = {}
        skipped_roots = tuple(skipped_roots)
        try:
            with h5py.File(file, "r") as f:
                datasets: list[str] = []
                f.visititems(lambda name, obj: datasets.append(name)
                             if isinstance(obj, h5py.Dataset) else None)
                for path in datasets:
                    name = self._name(path, layer_names)
                    if path.startswith(skipped_roots):
                        self.skipped.append(name)
                        continue
                    self.shapes[name] = list(f[path].shape)
                    self._paths[name] = path
        except FileNotFoundError:
            raise CheckpointFileError(f"{file}: not found (a keras-hub preset holds its "
                                      "weights there)") from None
        except OSError as e:  # h5py: truncated, not HDF5
            raise CheckpointFileError(f"{file}: not a readable Keras weights file "
                                      f"({str(e).splitlines()[0]})") from None

    @staticmethod
    def _name(path: str, layer_names: Mapping[str, str]) -> str:
        parts = [p for p in path.split("/") if p != "vars"]
        if len(parts) > 2 and parts[0] == "layers":
            parts = [layer_names.get(parts[1], parts[1])] + parts[2:]
        return "/".join(parts)

    def tensor(self, name: str) -> np.ndarray:
        """The value of `name` as float32 (bfloat16 and float16 widened)."""
        import h5py

        try:
            with h5py.File(self.file, "r") as f:
                dataset = f[self._paths[name]]
                value = dataset[()]
                if dataset.attrs.get("dtype") == "bfloat16":
                    import ml_dtypes

                    value = np.asarray(value).view(ml_dtypes.bfloat16)
        except OSError as e:
            raise CheckpointFileError(f"{self.file}: tensor {name} cannot be read "
                                      f"({str(e).splitlines()[0]})") from None
        return np.asarray(value, dtype=np.float32)


def write_weights_h5(file: str, root_name: str,
                     layers: Iterable[tuple[str, str, list[np.ndarray]]],
                     extra: Mapping[str, list[np.ndarray]] | None = None) -> None:
    """Writes Keras 3's `.weights.h5` layout: for each (file path, layer name, values) the
    group `layers/<path>/vars` with attribute `name` and datasets "0", "1", …; `extra`:
    {group path: values} outside `layers/` (e.g. an optimizer's)."""
    import h5py

    with h5py.File(file, "w") as f:
        f.create_group("vars").attrs["name"] = root_name
        for path, name, values in layers:
            group = f.create_group(f"layers/{path}/vars")
            group.attrs["name"] = name.split("/")[-1]
            for index, value in enumerate(values):
                group[str(index)] = np.ascontiguousarray(value)
        for path, values in (extra or {}).items():
            group = f.create_group(f"{path}/vars")
            group.attrs["name"] = path.split("/")[-1]
            for index, value in enumerate(values):
                group[str(index)] = value


def write_bytes(path: str, content: bytes) -> None:
    """A file of the preset being written (in its local staging directory), parents made."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)


def write_json(path: str, value: Mapping[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(dict(value), indent=4) + "\n")
