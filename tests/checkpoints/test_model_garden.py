"""TF Model Garden's ALBERT (TF2 Hub encoders, object checkpoints) wherever a checkpoint goes.

The artifacts are written by Model Garden's own code (`model_garden_fixture`: its
tf2_albert_encoder_checkpoint_converter and export_tfhub_lib.export_model, as the TF Hub /
Kaggle `albert_en_*` encoders were), and the reference is the written SavedModel's own forward
pass. Read through the kind rule and `load_checkpoint`, `convert` (to HF, compared with
transformers' forward pass), `export_checkpoints`, `export_tfhub --checkpoint` (whose export
keeps their interface: `default` and the full `encoder_outputs`), and a fine-tuning run's
`--albert_hub_module_handle` / `--init_checkpoint`. Bad inputs are one line and exit 1.
"""

import os
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from albert_tf import checkpoints, cli, export_tfhub
from albert_tf.checkpoints.conversion import convert_checkpoint, export_model_checkpoint
from albert_tf.config import ConfigError
from albert_tf.glue.runner import GlueRunOptions
from albert_tf.glue.runner import run as run_glue
from albert_tf.model_source import task_config, task_tokenizer
from albert_tf.models import AlbertClassifier, AlbertEncoder, AlbertPretrainer
from tests.checkpoints.model_garden_fixture import (ENCODER_KEYS, saved_model_outputs,
                                                    write_model_garden_artifacts)
from tests.conftest import random_inputs, tiny_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

pytest.importorskip("official.nlp.tools.export_tfhub_lib",
                    reason="tf-models-nightly (requirements-nodeps.txt) is not installed")

TOLERANCE = 1e-5
GLUE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures", "glue")
INFERRED = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
            "num_attention_heads", "intermediate_size", "max_position_embeddings",
            "type_vocab_size")


@pytest.fixture(scope="module")
def garden(tmp_path_factory, text_assets):  # noqa: F811
    """A tiny pretrainer (random, initializer_range 0.1) as an original checkpoint, turned into
    Model Garden object checkpoints and TF2 Hub exports by Model Garden; each export's own
    outputs on random inputs."""
    config = tiny_config(vocab_size=1000, max_position_embeddings=128, initializer_range=0.1)
    source = AlbertPretrainer(config)
    source(random_inputs(config))
    root = tmp_path_factory.mktemp("model_garden")
    original = checkpoints.save_original_checkpoint(source, str(root / "original" / "model.ckpt"))
    files = write_model_garden_artifacts(str(root), config, original, text_assets.spm_model)
    inputs = random_inputs(config, batch=3, seq=12)
    return SimpleNamespace(**vars(files), config=config, inputs=inputs, root=root,
                           spm_model=text_assets.spm_model,
                           want=saved_model_outputs(files.hub, inputs),
                           want_mlm=saved_model_outputs(files.hub_mlm, inputs))


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def assert_encoder_matches(encoder_outputs: dict, want: dict) -> None:
    """sequence/pooled/default and every one of encoder_outputs, within TOLERANCE."""
    for name in ("sequence_output", "pooled_output"):
        assert max_diff(encoder_outputs[name], want[name]) < TOLERANCE, name
    if "default" in encoder_outputs:
        assert max_diff(encoder_outputs["default"], want["default"]) < TOLERANCE
    ours = encoder_outputs["encoder_outputs"]
    assert len(ours) == len(want["encoder_outputs"]) == 2
    for got, expected in zip(ours, want["encoder_outputs"]):
        assert max_diff(got, expected) < TOLERANCE


def encoder_feeds(inputs: dict) -> dict:
    return {k: inputs[k] for k in ENCODER_KEYS}


def test_the_kind_rule_reads_config_tokenizer_and_weights(garden):
    """Both layouts, with and without the masked-LM head: kind, inferred config (an export's
    layer count from its signature), sp_model_file asset, and weights giving its outputs."""
    kinds = {garden.hub: "model_garden", garden.hub_mlm: "model_garden",
             garden.encoder_checkpoint: "model_garden_checkpoint",
             garden.pretrainer_checkpoint: "model_garden_checkpoint"}
    assert {p: checkpoints.checkpoint_kind(p) for p in kinds} == kinds
    source = checkpoints.read_model_garden(garden.hub)
    assert (source.num_layers, source.has_mlm, source.do_lower_case) == (2, False, None)
    assert open(source.spm_model_file, "rb").read() == open(garden.spm_model, "rb").read()
    inferred = checkpoints.model_garden_config(garden.hub)
    assert {k: getattr(inferred, k) for k in INFERRED} == {
        k: getattr(garden.config, k) for k in INFERRED}
    with pytest.raises(ConfigError, match="carries no layer count; pass --albert_config_file"):
        checkpoints.model_garden_config(garden.encoder_checkpoint)
    for path, want, mlm in ((garden.hub, garden.want, False),
                            (garden.hub_mlm, garden.want_mlm, True),
                            (garden.encoder_checkpoint, garden.want, False),
                            (garden.pretrainer_checkpoint, garden.want_mlm, True)):
        config = checkpoints.model_garden_config(path, garden.config_file)
        model = AlbertPretrainer(config)
        model(garden.inputs)
        report = checkpoints.load_checkpoint(model, path, allow_missing=["sop_head"] + (
            [] if mlm else ["mlm_head"]))
        assert (report.kind, len(report.restored), report.unused) == (
            kinds[path], 30 if mlm else 25, []), path
        assert_encoder_matches(model.encoder(encoder_feeds(garden.inputs)), want)
        if mlm:
            logits = np.asarray(model(garden.inputs)["mlm_logits"]).reshape(
                want["mlm_logits"].shape)
            assert max_diff(logits, want["mlm_logits"]) < TOLERANCE, path


def test_convert_to_hf_gives_the_saved_model_outputs(garden, tmp_path):
    """convert --input=<export> --to=hf (no config, no SentencePiece flag): transformers'
    AlbertForMaskedLM on the result gives the export's own outputs; an object checkpoint
    with the config given likewise as AlbertModel."""
    from tests.checkpoints.hf_models import torch, torch_feed, transformers

    result = convert_checkpoint(garden.hub_mlm, str(tmp_path / "hf"), "hf")
    assert (result.source_kind, result.head) == ("model_garden", "masked_lm")
    model = transformers.AlbertForMaskedLM.from_pretrained(str(tmp_path / "hf")).eval()
    with torch.no_grad():
        out = model(**torch_feed(garden.inputs), output_hidden_states=True)
    want = garden.want_mlm
    assert max_diff(out.hidden_states[-1], want["sequence_output"]) < TOLERANCE
    for got, expected in zip(out.hidden_states[1:], want["encoder_outputs"], strict=True):
        assert max_diff(got, expected) < TOLERANCE
    positions = garden.inputs["masked_lm_positions"]
    logits = np.take_along_axis(out.logits.numpy(), positions[:, :, None], axis=1)
    assert max_diff(logits, want["mlm_logits"]) < TOLERANCE
    assert os.path.isfile(tmp_path / "hf" / "spiece.model")

    result = convert_checkpoint(garden.encoder_checkpoint, str(tmp_path / "hf_encoder"), "hf",
                                albert_config_file=garden.config_file)
    assert (result.source_kind, result.head) == ("model_garden_checkpoint", "encoder")
    encoder = transformers.AlbertModel.from_pretrained(str(tmp_path / "hf_encoder")).eval()
    with torch.no_grad():
        out = encoder(**torch_feed(garden.inputs))
    assert max_diff(out.last_hidden_state, garden.want["sequence_output"]) < TOLERANCE
    assert max_diff(out.pooler_output, garden.want["pooled_output"]) < TOLERANCE


def test_export_checkpoints_writes_what_the_export_holds(garden, tmp_path):
    """export_checkpoints --albert_directory=<export>: encoder + MLM under the original's
    names, global_step 0, no SOP head invented."""
    prefix = export_model_checkpoint(garden.hub_mlm, "model.ckpt-best",
                                     str(tmp_path / "export" / "model.ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    assert reader.get_tensor("global_step") == 0
    assert "cls/seq_relationship/output_weights" not in reader.get_variable_to_shape_map()
    model = AlbertPretrainer(garden.config)
    model(garden.inputs)
    checkpoints.load_checkpoint(model, prefix, allow_missing=["sop_head"])
    assert_encoder_matches(model.encoder(encoder_feeds(garden.inputs)), garden.want_mlm)


def run_export_tfhub(values: dict) -> None:
    for name, value in values.items():
        flags.FLAGS[name].parse(value)
    flags.FLAGS.mark_as_parsed()
    try:
        export_tfhub.main([])
    finally:
        flags.FLAGS.unparse_flags()


def test_export_tfhub_keeps_the_model_garden_interface(garden, tmp_path):
    """export_tfhub --checkpoint=<export> (no config, no SentencePiece flag) and of an object
    checkpoint (config given): our export answers input_word_ids/input_mask/input_type_ids
    with pooled_output, sequence_output, default and the full encoder_outputs list, equal to
    the Model Garden export's own."""
    feeds = {k: tf.constant(garden.inputs[k]) for k in ENCODER_KEYS}
    for source, extra in ((garden.hub, {}),
                          (garden.encoder_checkpoint, {"albert_config_file": garden.config_file,
                                                       "spm_model_file": garden.spm_model})):
        path = str(tmp_path / os.path.basename(source))
        run_export_tfhub({"checkpoint": source, "export_path": path, **extra})
        loaded = tf.saved_model.load(path)
        outputs = loaded(feeds, training=False)
        assert set(outputs) == {"pooled_output", "sequence_output", "encoder_outputs", "default"}
        assert_encoder_matches(outputs, garden.want)
        assert open(os.path.join(path, "assets", os.path.basename(garden.spm_model)), "rb").read() \
            == open(garden.spm_model, "rb").read()
    # --with_mlm from the with_mlm export: the mlm sub-object gives its mlm_logits too.
    path = str(tmp_path / "with_mlm")
    run_export_tfhub({"checkpoint": garden.hub_mlm, "export_path": path, "with_mlm": "true"})
    mlm = tf.saved_model.load(path).mlm({**feeds, "masked_lm_positions": tf.constant(
        garden.inputs["masked_lm_positions"])}, training=False)
    assert_encoder_matches(mlm, garden.want_mlm)
    want = garden.want_mlm["mlm_logits"]
    assert max_diff(np.reshape(mlm["mlm_logits"], want.shape), want) < TOLERANCE


def glue_options(output_dir, **values) -> GlueRunOptions:
    return GlueRunOptions(**{
        "data_dir": GLUE_DIR, "task_name": "MRPC", "output_dir": str(output_dir),
        "max_seq_length": 32, "train_batch_size": 4, "eval_batch_size": 3,
        "predict_batch_size": 2, "learning_rate": 1e-3, "train_step": 1,
        "save_checkpoints_steps": 1, "log_steps": 1, "seed": 1, "do_train": True, **values})


def test_fine_tuning_starts_from_the_export_and_the_checkpoint(garden, tmp_path):
    """run_classifier --albert_hub_module_handle=<export> and --init_checkpoint=<export> with
    no config and no SentencePiece flags (both the export's), and --init_checkpoint=<object
    checkpoint> with them: every encoder variable from it (its outputs = the export's), the
    head fresh, a finite loss."""
    hub = garden.hub
    assert {k: getattr(task_config(None, hub), k) for k in INFERRED} == {
        k: getattr(garden.config, k) for k in INFERRED}
    assert task_config(None, None, hub) == task_config(None, hub)
    tokenizer = task_tokenizer(None, None, True, hub)
    assert tokenizer.vocab_size == 1000
    config = task_config(None, hub)
    classifier = AlbertClassifier(config, 2, encoder=AlbertEncoder(config, name="encoder"))
    classifier(encoder_feeds(garden.inputs))
    checkpoints.warm_start(classifier, hub, checkpoints.head_parts(classifier))
    assert_encoder_matches(classifier.encoder(encoder_feeds(garden.inputs)), garden.want)
    runs = {"handle": dict(albert_hub_module_handle=hub),
            "init": dict(init_checkpoint=hub),
            "object": dict(init_checkpoint=garden.encoder_checkpoint,
                           albert_config_file=garden.config_file,
                           spm_model_file=garden.spm_model)}
    names = {"handle": "Model Garden TF2 Hub encoder", "init": "Model Garden TF2 Hub encoder",
             "object": "Model Garden checkpoint"}
    for name, values in runs.items():
        result = run_glue(glue_options(tmp_path / name, **values))
        report = result.restore_report
        assert (report.kind, report.encoder_restored, report.encoder_total, report.head_restored
                ) == (names[name], 25, 25, 0), name
        assert np.isfinite(result.train_logs["loss"])


def exit_line(capsys, script: str, run) -> str:
    """The one stderr line of a script ending through `cli.run_script` with exit status 1."""
    with pytest.raises(SystemExit) as exit_info:
        cli.run_script(script, [script], run)
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1, stderr
    return stderr.strip()


def test_bad_inputs_are_one_line_and_exit_1(garden, tmp_path, capsys):
    """A Model Garden BERT export, a config disagreeing with the export, a Kaggle / TF Hub URL:
    one line, exit 1, nothing written."""
    bert, out = garden.bert_hub, tmp_path / "out"
    other_config = tmp_path / "other.json"
    garden.config.copy(num_hidden_layers=3).to_json_file(other_config)
    kaggle = "https://www.kaggle.com/models/tensorflow/albert/tensorFlow2/en-base/3"
    tfhub = "https://tfhub.dev/tensorflow/albert_en_base/3"

    def glue(**values):
        return lambda: run_glue(glue_options(out, **values))

    bert_line = ("a Model Garden BERT encoder (transformer/layer_0/intermediate/bias…: one "
                 "transformer block per layer), not ALBERT (one shared block); albert-tf reads "
                 "ALBERT encoders only")
    handle = "run_classifier: error: --albert_hub_module_handle="
    assert exit_line(capsys, "run_classifier", glue(albert_hub_module_handle=bert)) == (
        f"{handle}{bert}: {bert_line}")
    assert exit_line(capsys, "run_classifier", glue(init_checkpoint=bert)) == (
        f"run_classifier: error: --init_checkpoint={bert}: {bert_line}")
    assert exit_line(capsys, "convert", lambda: convert_checkpoint(
        bert, str(tmp_path / "never"), "hf")) == f"convert: error: {bert}: {bert_line}"
    assert exit_line(capsys, "run_classifier", glue(
        albert_hub_module_handle=garden.hub, albert_config_file=str(other_config))) == (
        f"{handle}{garden.hub}: {other_config} and {garden.hub} disagree (num_hidden_layers: 3 "
        "vs 2); omit --albert_config_file or pass the one of this model")
    assert exit_line(capsys, "convert", lambda: convert_checkpoint(
        garden.hub, str(tmp_path / "never"), "hf", albert_config_file=str(other_config))) == (
        f"convert: error: {other_config} and {garden.hub} disagree (num_hidden_layers: 3 vs 2); "
        "omit --albert_config_file or pass the one of this model")
    for url in (kaggle, tfhub):
        line = exit_line(capsys, "run_classifier", glue(albert_hub_module_handle=url))
        assert line.startswith(f"{handle}{url}: a hub URL; albert-tf downloads nothing at run "
                               "time") and line.endswith("pass the unpacked directory DIR")
        line = exit_line(capsys, "convert", lambda url=url: convert_checkpoint(
            url, str(tmp_path / "never"), "hf"))
        assert line.startswith(f"convert: error: {url}: a hub URL") and "unpacked" in line
    assert not out.exists() and not (tmp_path / "never").exists()


def test_an_export_on_a_bucket_reads_as_the_local_one(garden):
    """The with-MLM export under ram:// (TensorFlow's in-memory file system, standing in for
    gs://): same kind, inferred config, tokenizer and outputs as the local directory."""
    remote = "ram://model_garden_bucket/albert_en_tiny_mlm"
    for directory, _, names in os.walk(garden.hub_mlm):
        relative = os.path.relpath(directory, garden.hub_mlm)
        target = remote if relative == "." else f"{remote}/{relative}"
        tf.io.gfile.makedirs(target)
        for name in names:
            tf.io.gfile.copy(os.path.join(directory, name), f"{target}/{name}", overwrite=True)
    assert checkpoints.checkpoint_kind(remote) == "model_garden"
    source = checkpoints.read_model_garden(remote)
    assert source.spm_model_file.startswith(remote)
    with tf.io.gfile.GFile(source.spm_model_file, "rb") as f:
        assert f.read() == open(garden.spm_model, "rb").read()
    config = checkpoints.model_garden_config(remote)
    assert {k: getattr(config, k) for k in INFERRED} == {
        k: getattr(garden.config, k) for k in INFERRED}
    model = AlbertPretrainer(config)
    model(garden.inputs)
    report = checkpoints.load_checkpoint(model, remote, allow_missing=["sop_head"])
    assert (report.kind, len(report.restored), report.unused) == ("model_garden", 30, [])
    assert_encoder_matches(model.encoder(encoder_feeds(garden.inputs)), garden.want_mlm)
