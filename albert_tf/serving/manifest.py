"""`serving.json`: what an export directory holds for `load_serving`, read and written in one place.

The JSON keys are those of every export written so far (older exports load unchanged):

    {"compute_dtype": "float32", "max_seq_length": 512, "vocab_size": 30000,
     "type_vocab_size": 2, "saved_model": "serving",
     "outputs": ["pooled_output", "sequence_output"],            # a task export's own list
     "task": "classifier",                                       # task exports only
     "tflite": {"file": ..., "quantization": ..., "seq_length": 128, "batch_size": 1,
                "inputs": {...}},
     "openvino": {"file": "openvino/albert_encoder.xml"},
     "onnx": {"file": ..., "int8_file": ..., "int8_vnni_file": ...},
     "openvino_int8": {"file": "openvino/albert_encoder_int8.xml", ...},  # NNCF static int8
     "<engine>": {"file": ...},                  # an engine row without a built-in key (engines.py)
     ...}                                                        # extra keys: e.g. "threshold"

Standard library only (no TensorFlow): the loader reads it before any engine starts.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from albert_tf.serving.layout import MANIFEST
from albert_tf.runtime import paths

ENCODER_OUTPUTS = ("sequence_output", "pooled_output")


class ManifestError(ValueError):
    """serving.json is not valid (one line naming the file and the field)."""


@dataclasses.dataclass
class Manifest:
    """The fields of serving.json. File entries are dicts as written (relative paths)."""

    compute_dtype: str = "float32"
    max_seq_length: int | None = None
    vocab_size: int | None = None          # ids are checked against these before any engine
    type_vocab_size: int | None = None
    saved_model: str | None = None
    outputs: tuple[str, ...] = ENCODER_OUTPUTS
    task: str | None = None
    tflite: dict[str, Any] | None = None
    openvino: dict[str, Any] | None = None
    onnx: dict[str, Any] | None = None
    openvino_int8: dict[str, Any] | None = None  # static int8 IR (int8_calibration.py)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, None fields left out, `extra` merged at the top level."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "extra" or value is None:
                continue
            out[field.name] = list(value) if isinstance(value, tuple) else value
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = MANIFEST) -> "Manifest":
        names = {field.name for field in dataclasses.fields(cls)} - {"extra"}
        known = {key: value for key, value in data.items() if key in names}
        for key in ("tflite", "openvino", "onnx", "openvino_int8"):
            entry = known.get(key)
            if entry is not None and not (isinstance(entry, dict) and "file" in entry):
                raise ManifestError(f"{source}: field {key!r} must be an object with a 'file', "
                                    f"got {entry!r}")
        if "outputs" in known:
            known["outputs"] = tuple(known["outputs"])
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})

    def files(self) -> dict[str, str]:
        """Every file the manifest lists, by role (relative to the export directory)."""
        found = {}
        if self.saved_model:
            found["saved_model"] = self.saved_model
        for key in ("tflite", "openvino", "onnx", "openvino_int8"):
            entry = getattr(self, key)
            if entry:
                found[key] = entry["file"]
        for key in ("int8_file", "int8_vnni_file"):
            if self.onnx and self.onnx.get(key):
                found[f"onnx_{key}"] = self.onnx[key]
        for key, entry in self.extra.items():  # another engine's entry, under its name
            if isinstance(entry, dict) and isinstance(entry.get("file"), str):
                found[key] = entry["file"]
        return found


def read_manifest(export_dir: str) -> Manifest | None:
    """serving.json of an export directory, None when it has none (older exports)."""
    path = os.path.join(os.fspath(export_dir), MANIFEST)
    if not paths.isfile(path):
        return None
    with paths.open_file(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as error:
            raise ManifestError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return Manifest.from_dict(data, path)


def write_manifest(export_dir: str, manifest: Manifest) -> None:
    """Writes serving.json into `export_dir` (a staged directory: renamed into place whole)."""
    with open(os.path.join(export_dir, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest.to_dict(), f, indent=2)
