"""The original's TF1 Hub modules (faithfulness §11) wherever a checkpoint or hub handle goes.

A tiny module in the layout of the original's export_to_tfhub.py, built by TF1 graph code
(`tests/checkpoints/tf1_hub_module.py`), is read back through every entry point — the kind
rule and `load_checkpoint`, `convert`, `export_checkpoints`, `export_tfhub --checkpoint`, and
`--albert_hub_module_handle` / `--init_checkpoint` of a fine-tuning run — and our models give
what the module's own signatures compute in a `tf.compat.v1.Session`. Bad modules are one line
and exit status 1.
"""

import os
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from albert_tf import checkpoints, cli, export_tfhub
from albert_tf.checkpoints.conversion import convert_checkpoint, export_model_checkpoint
from albert_tf.export.tfhub import resolve_sources
from albert_tf.glue.runner import GlueRunOptions
from albert_tf.glue.runner import run as run_glue
from albert_tf.model_source import ModelSourceError, task_config, task_tokenizer
from albert_tf.models import AlbertPretrainer
from tests.checkpoints.tf1_hub_module import run_signature, write_tf1_hub_module
from tests.conftest import random_inputs, tiny_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

TOLERANCE = 1e-5  # our Keras model vs the module's TF1 graph, float32
GLUE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures", "glue")
ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def module_feeds(inputs: dict) -> dict:
    """Our input names → the module's signature inputs."""
    return {"input_ids": inputs["input_word_ids"], "input_mask": inputs["input_mask"],
            "segment_ids": inputs["input_type_ids"], "mlm_positions": inputs["masked_lm_positions"]}


@pytest.fixture(scope="module")
def module(tmp_path_factory, text_assets):  # noqa: F811
    """A tiny pretrainer (random weights, initializer_range 0.1 so no layer idles) as an
    original checkpoint, exported as a TF1 Hub module with the real SentencePiece model; the
    module's own signatures on random inputs, in both tag sets."""
    config = tiny_config(vocab_size=1000, max_position_embeddings=128, initializer_range=0.1)
    source = AlbertPretrainer(config)
    source(random_inputs(config))
    root = tmp_path_factory.mktemp("tf1_hub")
    checkpoint = checkpoints.save_original_checkpoint(source, str(root / "ckpt" / "model.ckpt"))
    path = write_tf1_hub_module(str(root / "albert_tiny_hub"), config, checkpoint,
                                text_assets.spm_model)
    inputs = random_inputs(config, batch=3, seq=12)
    feeds = module_feeds(inputs)
    encoder_feeds = {k: v for k, v in feeds.items() if k != "mlm_positions"}
    want = {"tokens": run_signature(path, "tokens", encoder_feeds),
            "train_tokens": run_signature(path, "tokens", encoder_feeds, tags=("train",)),
            "mlm": run_signature(path, "mlm", feeds),
            "sop": run_signature(path, "sop", encoder_feeds)}
    return SimpleNamespace(path=path, config=config, checkpoint=checkpoint, inputs=inputs,
                           want=want, spm_model=text_assets.spm_model, root=root)


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def assert_gives_the_module_signatures(pretrainer: AlbertPretrainer, module) -> None:
    """Encoder outputs = the `tokens` signature (both tag sets: the tiny model has no dropout),
    MLM logits = the `mlm` signature ([B·P', V], batch-major), SOP = `sop_log_probs`."""
    inputs, want = module.inputs, module.want
    encoder = pretrainer.encoder({k: inputs[k] for k in ENCODER_KEYS})
    for signature in ("tokens", "train_tokens"):
        for name in ("sequence_output", "pooled_output"):
            assert max_diff(encoder[name], want[signature][name]) < TOLERANCE, (signature, name)
    outputs = pretrainer(inputs)
    logits = np.asarray(outputs["mlm_logits"]).reshape(-1, module.config.vocab_size)
    assert logits.shape == want["mlm"]["mlm_logits"].shape == (3 * 4, 1000)
    assert max_diff(logits, want["mlm"]["mlm_logits"]) < TOLERANCE
    sop = tf.nn.log_softmax(outputs["sop_logits"])
    assert max_diff(sop, want["sop"]["sop_log_probs"]) < TOLERANCE


def pretrainer_of(config) -> AlbertPretrainer:
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    return model


def test_the_kind_rule_and_load_checkpoint_read_the_module(module):
    path = module.path
    assert checkpoints.checkpoint_kind(path) == "tf1_hub" and checkpoints.is_tf1_hub_module(path)
    read = checkpoints.read_tf1_hub_module(path)
    assert read.tag_sets == ((), ("train",))
    assert read.signatures == ("mlm", "sop", "tokenization_info", "tokens")
    # tokenization_info's vocab_file is an asset tensor: its Const holds hub's placeholder,
    # the file name is in the saved_model_assets collection.
    assert read.spm_model_file == os.path.join(path, "assets", "30k-clean.model")
    assert read.do_lower_case is True
    assert checkpoints.module_config(path) == module.config
    model = pretrainer_of(checkpoints.module_config(path))
    report = checkpoints.load_checkpoint(model, path)
    assert (report.kind, report.path, len(report.restored), report.missing, report.unused) == (
        "tf1_hub", path, 32, [], [])
    assert_gives_the_module_signatures(model, module)


def test_convert_and_export_checkpoints_read_the_module(module, tmp_path):
    """convert --input=<module> and export_checkpoints --albert_directory=<module>: the
    module's variables and config, written as an original checkpoint, give its signatures."""
    result = convert_checkpoint(module.path, str(tmp_path / "converted"), "original")
    assert (result.source_kind, result.head, result.written) == ("tf1_hub", "pretraining", 32)
    assert result.spm_model == module.path + "/assets/30k-clean.model"
    converted = pretrainer_of(checkpoints.module_config(module.path))
    checkpoints.load_checkpoint(converted, str(tmp_path / "converted"))
    assert_gives_the_module_signatures(converted, module)
    assert (tmp_path / "converted" / "30k-clean.model").read_bytes() == \
        open(module.spm_model, "rb").read()

    prefix = export_model_checkpoint(module.path, "model.ckpt-best",
                                     str(tmp_path / "export" / "model.ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    assert reader.get_tensor("global_step") == 0  # §11.3: a fresh step
    exported = pretrainer_of(module.config)
    checkpoints.load_checkpoint(exported, prefix)
    assert_gives_the_module_signatures(exported, module)


def test_export_tfhub_takes_the_module_as_checkpoint(module, tmp_path):
    """export_tfhub --checkpoint=<module> (no config or SentencePiece flags: the module's)."""
    assert resolve_sources(module.path, None, None, "model.ckpt-best", None) == (
        None, module.path, os.path.join(module.path, "assets", "30k-clean.model"))
    path = str(tmp_path / "encoder")
    for name, value in {"checkpoint": module.path, "export_path": path}.items():
        flags.FLAGS[name].parse(value)
    flags.FLAGS.mark_as_parsed()
    try:
        export_tfhub.main([])
    finally:
        flags.FLAGS.unparse_flags()
    loaded = tf.saved_model.load(path)
    inputs = {k: tf.constant(module.inputs[k]) for k in ENCODER_KEYS}
    encoder = loaded(inputs)
    for name in ("sequence_output", "pooled_output"):
        assert max_diff(encoder[name], module.want["tokens"][name]) < TOLERANCE


def glue_options(output_dir, **values) -> GlueRunOptions:
    return GlueRunOptions(**{
        "data_dir": GLUE_DIR, "task_name": "MRPC", "output_dir": str(output_dir),
        "max_seq_length": 32, "train_batch_size": 4, "eval_batch_size": 3,
        "predict_batch_size": 2, "learning_rate": 1e-3, "train_step": 1,
        "save_checkpoints_steps": 1, "log_steps": 1, "seed": 1, "do_train": True, **values})


def test_a_fine_tuning_run_starts_from_the_module_as_hub_handle(module, tmp_path):
    """--albert_hub_module_handle=<module>: config, SentencePiece model and do_lower_case from
    the module (an explicit --spm_model_file wins, Q21), every encoder variable from its
    variables, the head fresh."""
    path = module.path
    assert task_config(None, path) == module.config
    tokenizer = task_tokenizer(None, None, False, path)
    assert tokenizer.vocab_size == 1000 and tokenizer.do_lower_case is True  # the module's
    assert task_tokenizer(None, module.spm_model, True, path).do_lower_case is True
    assert task_config(None, None, path) == module.config  # --init_checkpoint=<module>
    result = run_glue(glue_options(tmp_path / "run", albert_hub_module_handle=path))
    report = result.restore_report
    assert (report.kind, report.path, report.encoder_restored, report.encoder_total,
            report.head_restored, report.head_total) == ("TF1 Hub module", path, 25, 25, 0, 2)
    assert np.isfinite(result.train_logs["loss"])


def rewrite_variables(module, destination, change) -> str:
    """A copy of the module whose variables are `change(values)`."""
    shutil.copytree(module.path, destination)
    reader = tf.train.load_checkpoint(module.checkpoint)
    values = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
    change(values)
    shutil.rmtree(os.path.join(destination, "variables"))
    checkpoints.write_name_based_checkpoint(values, os.path.join(destination, "variables",
                                                                 "variables"))
    return str(destination)


def exit_line(capsys, script: str, run) -> str:
    """The one stderr line of a script ending through `cli.run_script` with exit status 1."""
    with pytest.raises(SystemExit) as exit_info:
        cli.run_script(script, [script], run)
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1, stderr
    return stderr.strip()


def test_bad_modules_are_one_line_and_exit_1(module, tmp_path, capsys):
    pooler_bias = "bert/pooler/dense/bias"
    missing = rewrite_variables(module, tmp_path / "missing", lambda v: v.pop(pooler_bias))
    reshaped = rewrite_variables(module, tmp_path / "reshaped", lambda v: v.update(
        {pooler_bias: np.zeros(7, np.float32)}))
    other_config = tmp_path / "other.json"
    module.config.copy(num_hidden_layers=3).to_json_file(other_config)
    url = "https://tfhub.dev/google/albert_base/3"
    tf2 = str(tmp_path / "tf2_saved_model")
    tf.saved_model.save(tf.Module(), tf2)
    no_config = tmp_path / "no_config"
    shutil.copytree(module.path, no_config)
    os.remove(no_config / "assets" / "albert_config.json")

    def run(**values):
        return lambda: run_glue(glue_options(tmp_path / "out", **values))

    handle = "run_classifier: error: --albert_hub_module_handle="
    assert exit_line(capsys, "run_classifier", run(albert_hub_module_handle=missing)) == (
        f"{handle}{missing}: module variables: checkpoint does not match AlbertClassifier; "
        f"model variables missing from the checkpoint (1): {pooler_bias}; pass "
        "allow_missing=[...] to load the rest anyway (e.g. a head the checkpoint never had)")
    assert exit_line(capsys, "run_classifier", run(albert_hub_module_handle=reshaped)) == (
        f"{handle}{reshaped}: module variables: checkpoint does not match AlbertClassifier; "
        f"shape mismatches (1): {pooler_bias}: checkpoint [7] vs model [32]")
    assert exit_line(capsys, "run_classifier", run(
        albert_hub_module_handle=module.path, albert_config_file=str(other_config))) == (
        f"{handle}{module.path}: {other_config} and {module.path}/assets/albert_config.json "
        "disagree (num_hidden_layers: 3 vs 2); omit --albert_config_file to use the module's")
    assert exit_line(capsys, "run_classifier", run(albert_hub_module_handle=url)) == (
        f"{handle}{url}: a hub URL; albert-tf downloads nothing at run time: fetch the module "
        f"once (for tfhub.dev: curl -L '{url}?tf-hub-format=compressed' | tar -xz -C DIR) and "
        "pass the unpacked directory DIR")
    assert exit_line(capsys, "run_classifier", run(albert_hub_module_handle=tf2)) == (
        f"{handle}{tf2}: a TF2 SavedModel that is neither an albert-tf encoder export (no "
        "assets/albert_config.json) nor a TF1 Hub module (no tfhub_module.pb)")
    assert exit_line(capsys, "run_classifier", run(init_checkpoint=str(no_config))) == (
        f"run_classifier: error: --init_checkpoint={no_config}: the TF1 Hub module carries no "
        "assets/albert_config.json; pass --albert_config_file")
    assert not os.path.exists(tmp_path / "out")
    # A config file stands in for the missing asset.
    config_file = tmp_path / "albert_config.json"
    module.config.to_json_file(config_file)
    assert task_config(str(config_file), str(no_config)) == module.config
    # The checkpoint entry points: the same lines, and the kind rule refuses a URL at once.
    assert exit_line(capsys, "convert", lambda: convert_checkpoint(
        reshaped, str(tmp_path / "never"), "hf")) == (
        f"convert: error: {reshaped}: module variables: checkpoint does not match "
        f"AlbertPretrainer; shape mismatches (1): {pooler_bias}: checkpoint [7] vs model [32]")
    with pytest.raises(checkpoints.CheckpointFileError, match="downloads nothing at run time"):
        checkpoints.checkpoint_kind(url)
    with pytest.raises(checkpoints.CheckpointFileError, match="a SavedModel without "
                       "tfhub_module.pb: neither a checkpoint nor a TF1 Hub module"):
        checkpoints.checkpoint_kind(tf2)
    with pytest.raises(ModelSourceError, match="no such directory"):
        task_config(None, str(tmp_path / "nowhere"))
