"""Where a run's config and tokenizer come from, decided from the flags alone: the one
statement of the precedence that `model_source` loads by and that the checks before a run
(`finetuning.preflight`, run_pretraining's record checks) name in their messages. It reads no
model file and imports no TensorFlow: it only asks what each path is (a Hugging Face
directory, a keras-hub preset, a TF1 Hub module, a Model Garden export) and whether the
tokenizer file a directory may carry is there. `model_source` re-exports it.

The precedence (faithfulness Q21, §8.1, §10.1, §11.2, §11.4):

* config: `--albert_hub_module_handle` (its asset, or inferred from a Model Garden export);
  else an `--init_checkpoint` that carries one (an HF directory's or keras-hub preset's
  config.json, a TF1 Hub module's albert_config.json asset, a Model Garden export's inferred
  one), which a `--albert_config_file` given too must agree with; else `--albert_config_file`.
* tokenizer: an explicit `--spm_model_file` (it wins over `--vocab_file`) or `--vocab_file`;
  else the handle's SentencePiece model; else the one `--init_checkpoint` carries (a TF1 Hub
  module's or Model Garden export's asset, an HF directory's spiece.model, a keras-hub
  preset's assets/tokenizer/vocabulary.spm).

Example:
    >>> plan = plan_sources(opts)              # opts: a run's options (flags)
    >>> plan.config_from, plan.tokenizer_from  # ("init_checkpoint", "spm_model_file")
    >>> plan.config_source                     # "the config.json of --init_checkpoint=hf/"
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from albert_tf.checkpoints.hf_files import spm_model_of
from albert_tf.checkpoints.keras_hub_files import SPM_ASSET, is_keras_hub_preset, preset_directory
from albert_tf.checkpoints.kinds import is_hf_checkpoint
from albert_tf.checkpoints.model_garden_files import is_model_garden_export
from albert_tf.checkpoints.tf1_hub_files import is_tf1_hub_module
from albert_tf.runtime import paths

__all__ = ["HANDLE", "INIT_CHECKPOINT", "SOURCE_FLAGS", "ModelSourcePlan", "plan_sources"]

HANDLE, INIT_CHECKPOINT = "albert_hub_module_handle", "init_checkpoint"
# The flags the plan reads, each the name of a field of the run's options.
SOURCE_FLAGS = ("albert_config_file", HANDLE, INIT_CHECKPOINT, "spm_model_file", "vocab_file")

# How a message names the config and the tokenizer an --init_checkpoint of each kind carries.
_CONFIG_OF = {"hf": "the config.json of", "keras_hub": "the config.json of",
              "tf1_hub": "the albert_config.json of", "model_garden": "the config inferred from"}
_TOKENIZER_OF = {"tf1_hub": "the SentencePiece model of", "model_garden":
                 "the SentencePiece model of", "keras_hub": "the vocabulary.spm of"}


def _checkpoint_kind(path: str | None) -> str | None:
    """What `--init_checkpoint` is as a source of config and tokenizer: "hf", "keras_hub",
    "tf1_hub", "model_garden", or None (an original or albert-tf checkpoint, or unset)."""
    for kind, test in (("hf", is_hf_checkpoint), ("keras_hub", is_keras_hub_preset),
                       ("tf1_hub", is_tf1_hub_module), ("model_garden", is_model_garden_export)):
        if test(path):
            return kind
    return None


def _carried_spm_model(path: str | None, kind: str | None) -> str | None:
    """The SentencePiece model file an HF directory or a keras-hub preset holds, if any."""
    if kind == "hf":
        return spm_model_of(path)
    if kind == "keras_hub":
        candidate = os.path.join(preset_directory(path), SPM_ASSET)
        return candidate if paths.isfile(candidate) else None
    return None


@dataclasses.dataclass(frozen=True)
class ModelSourcePlan:
    """The five source flags and what they decide (computed once, at construction).

    `config_from` / `tokenizer_from`: the flag whose file or directory supplies each
    (`HANDLE`, `INIT_CHECKPOINT`, "albert_config_file", "spm_model_file", "vocab_file"), None
    when nothing does (loading then fails with one line, `model_source`). `checkpoint_kind`:
    `--init_checkpoint`'s kind as a source (`_checkpoint_kind`). `carried_spm_model`: the
    SentencePiece file an HF directory or keras-hub preset as `--init_checkpoint` holds, when
    the tokenizer comes from there. The handle's kind is `model_source.hub_handle_kind`'s
    (it opens the SavedModel's layout); it decides how, not whether, the handle is read.
    """

    albert_config_file: str | None = None
    albert_hub_module_handle: str | None = None
    init_checkpoint: str | None = None
    spm_model_file: str | None = None
    vocab_file: str | None = None
    checkpoint_kind: str | None = dataclasses.field(init=False)
    config_from: str | None = dataclasses.field(init=False)
    tokenizer_from: str | None = dataclasses.field(init=False)
    carried_spm_model: str | None = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        kind = _checkpoint_kind(self.init_checkpoint)
        config_from = (HANDLE if self.albert_hub_module_handle else INIT_CHECKPOINT if kind
                       else "albert_config_file" if self.albert_config_file else None)
        carried = None
        if self.spm_model_file or self.vocab_file:
            tokenizer_from = "spm_model_file" if self.spm_model_file else "vocab_file"
        elif self.albert_hub_module_handle:
            tokenizer_from = HANDLE
        else:
            carried = _carried_spm_model(self.init_checkpoint, kind)
            tokenizer_from = (INIT_CHECKPOINT if carried or kind in ("tf1_hub", "model_garden")
                              else None)
        for name, value in (("checkpoint_kind", kind), ("config_from", config_from),
                            ("tokenizer_from", tokenizer_from), ("carried_spm_model", carried)):
            object.__setattr__(self, name, value)

    @property
    def config_source(self) -> str:
        """How a message names where the config came from (the file when one is given: a
        checkpoint's own config has been checked to agree with it)."""
        if self.albert_hub_module_handle:
            return f"the config of --{HANDLE}={self.albert_hub_module_handle}"
        if not self.albert_config_file and self.checkpoint_kind:
            return f"{_CONFIG_OF[self.checkpoint_kind]} --{INIT_CHECKPOINT}={self.init_checkpoint}"
        return f"--albert_config_file={self.albert_config_file}"

    @property
    def tokenizer_source(self) -> str:
        """How a message names where the vocabulary came from."""
        if self.tokenizer_from in ("spm_model_file", "vocab_file"):
            return f"--{self.tokenizer_from}={getattr(self, self.tokenizer_from)}"
        if self.tokenizer_from == HANDLE:
            return f"the SentencePiece model of --{HANDLE}={self.albert_hub_module_handle}"
        prefix = _TOKENIZER_OF.get(self.checkpoint_kind, "the spiece.model of")
        return f"{prefix} --{INIT_CHECKPOINT}={self.init_checkpoint}"


def plan_sources(opts: Any) -> ModelSourcePlan:
    """The plan of a run's options (a plan is returned as it is). Options that do not declare
    a source flag leave it unset: run_pretraining's have no handle and no tokenizer flags."""
    if isinstance(opts, ModelSourcePlan):
        return opts
    return ModelSourcePlan(**{name: getattr(opts, name, None) for name in SOURCE_FLAGS})
