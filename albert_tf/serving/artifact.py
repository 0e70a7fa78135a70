"""What a serving path holds: `Artifact` finds each engine's file, the dtype and the input
limits (from serving.json, a SavedModel's config asset, or the file itself); the precisions and
the one-line error the loader shares with the engines."""

from __future__ import annotations

import os
from typing import Mapping

from albert_tf.runtime import paths
from albert_tf.serving.file_precision import ir_is_int8, tflite_quantization
from albert_tf.serving.layout import SAVED_MODEL_PB, SERVING_DIR, config_asset_path
from albert_tf.serving.manifest import ENCODER_OUTPUTS, Manifest, ManifestError, read_manifest

# The precisions `load_serving` knows, and the spellings it also accepts for them.
PRECISIONS = ("fp32", "bf16", "int8", "fp16")
PRECISION_ALIASES = {"f32": "fp32", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
# A TFLite file's quantization → the precision it runs (float16: fp16 weights, fp32 compute).
TFLITE_PRECISION = {"none": "fp32", "dynamic_int8": "int8", "float16": "fp16"}


class ServingLoadError(ValueError):
    """The path is not a serving artifact, or the engine asked for cannot run it (one line)."""


# Manifest.files() roles that Artifact keeps in its own fields; any other role is an engine's.
_FIELD_ROLES = ("saved_model", "tflite", "openvino", "onnx", "openvino_int8", "onnx_int8_file",
                "onnx_int8_vnni_file")
EXPECTED = ("an encoder or task export directory (serving/, serving.json), a SavedModel "
            "directory (saved_model.pb), a .tflite file, an OpenVINO .xml with its .bin or an "
            ".onnx file")


class Artifact:
    """What `path` holds: the files each engine would read, the dtype and input limits."""

    def __init__(self, path: str, cpu_flags: frozenset[str] | None = None,
                 suffixes: Mapping[str, str] | None = None):
        self.path = os.fspath(path)
        # Engines without a field below (engines.py `listed_file`): engine → its file, from
        # serving.json's entry of that name or a bare file ending in one of `suffixes`
        # (ending → engine, the table's `engines.engine_suffixes()`).
        self.engine_files: dict[str, str] = {}
        self._suffixes = dict(suffixes or {})
        self.cpu_flags = cpu_flags  # None: this machine's (tests pass a mocked CPU)
        self.saved_model: str | None = None
        self.tflite: str | None = None
        self.tflite_seq_length: int | None = None
        self.tflite_quantization: str | None = None
        self.openvino: str | None = None
        self.openvino_int8: str | None = None  # NNCF static int8 IR (export/int8_calibration.py)
        self.onnx: str | None = None
        self.onnx_int8: str | None = None
        self.onnx_int8_vnni: str | None = None
        self.compute_dtype = "float32"
        self.max_seq_length: int | None = None
        self.vocab_size: int | None = None
        self.type_vocab_size: int | None = None
        self.outputs: tuple[str, ...] = ENCODER_OUTPUTS
        self.has_manifest = False
        self._resolve()

    @property
    def precision(self) -> str:
        """The precision of the export's serving graph (its --dtype)."""
        return "bf16" if self.compute_dtype == "bfloat16" else "fp32"

    def _resolve(self) -> None:
        path = self.path
        try:
            if paths.isdir(path):
                manifest = read_manifest(path)
                if manifest is not None:
                    self._from_manifest(path, manifest)
                elif paths.isfile(os.path.join(path, SAVED_MODEL_PB)):
                    self.saved_model = path
                    self._read_config(path)
                if self.saved_model is None and self.onnx is None and not self.engine_files:
                    raise ServingLoadError(f"{path}: not a serving artifact; expected {EXPECTED}")
                return
            if paths.isfile(path):  # a file inside an export: the limits of its manifest
                manifest = read_manifest(os.path.dirname(paths.absolute(path)))
                if manifest is not None:
                    self._limits(manifest)
        except ManifestError as error:
            raise ServingLoadError(str(error)) from None
        if paths.isfile(path) and path.endswith(".tflite"):
            self.tflite = path
            self.tflite_quantization = tflite_quantization(path)  # its own tensors tell
        elif paths.isfile(path) and path.endswith(".xml"):
            if not paths.isfile(path[:-4] + ".bin"):
                raise ServingLoadError(f"{path}: the OpenVINO IR's weights {path[:-4]}.bin are "
                                       "missing")
            if ir_is_int8(path):  # a bare file: its own quantized ops tell its precision
                self.openvino_int8 = path
            else:
                self.openvino = path
        elif paths.isfile(path) and path.endswith(".onnx"):
            self.onnx = path
        elif paths.isfile(path) and any(path.endswith(s) for s in self._suffixes):
            engine = next(e for s, e in self._suffixes.items() if path.endswith(s))
            self.engine_files[engine] = path
        else:
            what = "does not exist" if not paths.exists(path) else "is not a serving artifact"
            raise ServingLoadError(f"{path}: {what}; expected {EXPECTED}")

    def _limits(self, manifest: Manifest) -> None:
        self.max_seq_length = manifest.max_seq_length
        self.vocab_size = manifest.vocab_size
        self.type_vocab_size = manifest.type_vocab_size
        self.outputs = manifest.outputs

    def _from_manifest(self, path: str, manifest: Manifest) -> None:
        self._limits(manifest)
        self.compute_dtype = manifest.compute_dtype
        self.has_manifest = True
        for role, file in manifest.files().items():  # an engine's own entry (not a field)
            if role not in _FIELD_ROLES:
                self.engine_files[role] = os.path.join(path, file)
        if manifest.saved_model or not (manifest.onnx or self.engine_files):  # no SavedModel
            self.saved_model = os.path.join(path, manifest.saved_model or SERVING_DIR)
        if manifest.tflite:
            self.tflite = os.path.join(path, manifest.tflite["file"])
            self.tflite_seq_length = int(manifest.tflite["seq_length"])
            self.tflite_quantization = manifest.tflite.get("quantization")
        if manifest.openvino:
            self.openvino = os.path.join(path, manifest.openvino["file"])
        if manifest.openvino_int8:
            self.openvino_int8 = os.path.join(path, manifest.openvino_int8["file"])
        if manifest.onnx:
            self.onnx = os.path.join(path, manifest.onnx["file"])
            for key, attribute in (("int8_file", "onnx_int8"),
                                   ("int8_vnni_file", "onnx_int8_vnni")):
                if manifest.onnx.get(key):
                    setattr(self, attribute, os.path.join(path, manifest.onnx[key]))
        for name in ("saved_model", "tflite", "openvino", "openvino_int8", "onnx", "onnx_int8",
                     "onnx_int8_vnni"):
            target = getattr(self, name)
            if target is not None and not paths.exists(target):
                raise ServingLoadError(f"{path}: serving.json lists {target}, which is missing")
        for target in self.engine_files.values():
            if not paths.exists(target):
                raise ServingLoadError(f"{path}: serving.json lists {target}, which is missing")

    def _read_config(self, saved_model: str) -> None:
        from albert_tf.config import AlbertConfig
        config_file = config_asset_path(saved_model)
        if paths.isfile(config_file):
            config = AlbertConfig.from_json_file(config_file)
            self.max_seq_length = config.max_position_embeddings
            self.vocab_size, self.type_vocab_size = config.vocab_size, config.type_vocab_size

    def default_precision(self) -> str:
        """What precision=None means: the serving graph's dtype, else the file's own."""
        if self.saved_model:
            return self.precision
        if self.openvino_int8 and not (self.openvino or self.onnx or self.tflite):
            return "int8"
        if self.openvino or self.onnx:
            return "fp32"
        return TFLITE_PRECISION.get(self.tflite_quantization or "none", "fp32")

    def tflite_covers(self, seq_length: int | None = None) -> bool:
        """Whether the TFLite file's fixed length takes every input up to `seq_length` tokens
        (None: every input the export accepts)."""
        longest = seq_length or self.max_seq_length
        return longest is None or self.tflite_seq_length is None or self.tflite_seq_length >= longest
