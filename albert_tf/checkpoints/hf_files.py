"""Reading and writing a Hugging Face model directory, without PyTorch.

A directory as `save_pretrained` writes it: `config.json` and `model.safetensors` (or a
sharded `model.safetensors.index.json`, or a `pytorch_model.bin` when PyTorch is
installed), plus `spiece.model` (and `tokenizer.json`, `tokenizer_config.json`) when the
tokenizer was saved. Tensors are read through the `safetensors` NumPy API; names and shapes
come from the header alone (dry runs). Writing goes to a staging directory whose files are
moved in when complete.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Mapping

import numpy as np

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_directory
from albert_tf.checkpoints.report import CheckpointFileError

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"
SPM_FILE = "spiece.model"
WEIGHT_FILES = (SAFETENSORS_FILE, SAFETENSORS_INDEX, PYTORCH_FILE)
# What transformers' tokenizers read beside spiece.model (written by `hf_tokenizer`).
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_FILES = (TOKENIZER_FILE, TOKENIZER_CONFIG_FILE)
_MARKER_FILES = WEIGHT_FILES + (CONFIG_FILE,)


def hf_directory(path: str) -> str | None:
    """The HF model directory `path` is (or a file of), else None."""
    path = os.fspath(path)
    path = os.path.abspath(path) if paths.is_local(path) else path.rstrip("/")
    if os.path.basename(path) in _MARKER_FILES and paths.isfile(path):
        path = os.path.dirname(path)
    if paths.isdir(path) and any(paths.exists(os.path.join(path, name))
                                 for name in _MARKER_FILES):
        return path
    return None


def spm_model_of(path: str) -> str | None:
    """`spiece.model` of an HF directory, when present."""
    directory = hf_directory(path)
    candidate = os.path.join(directory, SPM_FILE) if directory else None
    return candidate if candidate and paths.isfile(candidate) else None


class HFWeights:
    """The tensors of an HF directory: names and shapes cheaply, values on request.

    Example:
        >>> weights = HFWeights("albert-base-v2")
        >>> weights.shapes["albert.pooler.weight"], weights.tensor("albert.pooler.bias").shape
        ([768, 768], (768,))
    """

    def __init__(self, directory: str):
        self.directory = directory
        self._files: dict[str, str] = {}  # tensor name → file
        self._dtypes: dict[str, str] = {}
        self.shapes: dict[str, list[int]] = {}
        self._torch_state: dict[str, Any] | None = None
        # safetensors and torch read local files only: a bucket's directory is staged locally.
        directory = paths.staged_copy(directory)
        if os.path.exists(os.path.join(directory, SAFETENSORS_INDEX)):
            self._read_index(os.path.join(directory, SAFETENSORS_INDEX))
        elif os.path.exists(os.path.join(directory, SAFETENSORS_FILE)):
            self._read_header(os.path.join(directory, SAFETENSORS_FILE))
        elif os.path.exists(os.path.join(directory, PYTORCH_FILE)):
            self._read_pytorch(os.path.join(directory, PYTORCH_FILE))
        else:
            raise CheckpointFileError(
                f"{directory}: no {SAFETENSORS_FILE}, {SAFETENSORS_INDEX} or {PYTORCH_FILE} "
                "(a Hugging Face model directory holds its weights in one of them)")
        self.file = self.label()

    def label(self) -> str:
        files = sorted(set(self._files.values()))
        return files[0] if len(files) == 1 else self.directory

    def _read_index(self, index_path: str) -> None:
        try:
            with open(index_path, encoding="utf-8") as f:
                weight_map = json.load(f)["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise CheckpointFileError(f"{index_path}: not a safetensors index ({e})") from None
        for shard in sorted(set(weight_map.values())):
            self._read_header(os.path.join(os.path.dirname(index_path), shard))

    def _read_header(self, file: str) -> None:
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(file, framework="numpy") as f:
                for name in f.keys():
                    view = f.get_slice(name)
                    self.shapes[name] = list(view.get_shape())
                    self._dtypes[name] = view.get_dtype()
                    self._files[name] = file
        except (SafetensorError, OSError) as e:
            raise CheckpointFileError(f"{file}: not a readable safetensors file ({e})") from None

    def _read_pytorch(self, file: str) -> None:
        try:
            import torch
        except ImportError:
            raise CheckpointFileError(
                f"{file}: reading pytorch_model.bin needs PyTorch (pip install torch); or "
                "save the model with safetensors (model.safetensors)") from None
        try:
            state = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises many types for a bad file
            raise CheckpointFileError(f"{file}: not a readable PyTorch state dict ({e})") from None
        self._torch_state = {k: v for k, v in state.items() if hasattr(v, "shape")}
        for name, value in self._torch_state.items():
            self.shapes[name] = list(value.shape)
            self._files[name] = file

    def tensor(self, name: str) -> np.ndarray:
        """The value of `name` as a NumPy array (bfloat16 widened to float32)."""
        if self._torch_state is not None:
            value = self._torch_state[name]
            return value.float().numpy() if str(value.dtype) == "torch.bfloat16" else value.numpy()
        file = self._files[name]
        if self._dtypes.get(name) == "BF16":
            return _read_bfloat16(file, name)
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(file, framework="numpy") as f:
                return f.get_tensor(name)
        except (SafetensorError, OSError) as e:
            raise CheckpointFileError(f"{file}: tensor {name} cannot be read ({e})") from None


def _read_bfloat16(file: str, name: str) -> np.ndarray:
    """A bfloat16 tensor as float32 (NumPy has no bfloat16): its bits are float32's top half."""
    with open(file, "rb") as f:
        (header_size,) = struct.unpack("<Q", f.read(8))
        entry = json.loads(f.read(header_size))[name]
        begin, end = entry["data_offsets"]
        f.seek(8 + header_size + begin)
        raw = np.frombuffer(f.read(end - begin), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])


def write_hf_directory(path: str, config: Mapping[str, Any], tensors: Mapping[str, np.ndarray],
                       spm_model_file: str | None = None,
                       tokenizer_files: Mapping[str, str] | None = None) -> str:
    """Writes config.json + model.safetensors (+ spiece.model and `tokenizer_files`, name →
    text: `hf_tokenizer`'s tokenizer.json and tokenizer_config.json) into `path`.

    The files are written in a staging directory and moved into `path` when all are complete
    (`atomic_directory`'s merge), so a failure leaves `path` as it was. With a SentencePiece
    model, an earlier save's tokenizer files not written now are removed (transformers would
    prefer a stale tokenizer.json to the new spiece.model).
    """
    from safetensors.numpy import save

    output = atomic_directory(path, existing="merge", what="Hugging Face checkpoint")
    with output as staging:
        with open(os.path.join(staging, CONFIG_FILE), "w", encoding="utf-8") as f:
            f.write(json.dumps(dict(config), indent=2, sort_keys=True) + "\n")
        arrays = {name: np.ascontiguousarray(value) for name, value in tensors.items()}
        # "format": "pt" is what transformers expects of a PyTorch-model file. Bytes through a
        # plain open(): safetensors' save_file creates its file 0600 whatever the umask.
        with open(os.path.join(staging, SAFETENSORS_FILE), "wb") as f:
            f.write(save(arrays, metadata={"format": "pt"}))
        if spm_model_file:  # local or a bucket; a plain open(): the umask's mode
            with open(os.path.join(staging, SPM_FILE), "wb") as f:
                f.write(paths.read_bytes(spm_model_file))
        for name, text in (tokenizer_files or {}).items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
                f.write(text)
        stale_files = [name for name in WEIGHT_FILES if name != SAFETENSORS_FILE]
        if spm_model_file:
            stale_files += [name for name in TOKENIZER_FILES if name not in (tokenizer_files or {})]
        for stale in stale_files:  # an earlier save's weights or tokenizer would shadow ours
            if paths.exists(os.path.join(output.target, stale)):
                paths.remove(os.path.join(output.target, stale))
    return output.target
