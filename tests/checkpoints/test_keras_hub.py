"""keras-hub presets in and out (issue 39): presets made by keras-hub's own `save_to_preset`
from a tiny config read into ours, HF and `--init_checkpoint` with keras-hub's outputs;
`convert --to=keras_hub` loads in `AlbertBackbone.from_preset` / `AlbertTextClassifier
.from_preset` with ours; bad presets are one line, exit 1, nothing written."""

import os

import numpy as np
import pytest
import tensorflow as tf

keras_hub = pytest.importorskip("keras_hub")  # a test-only dependency (requirements-dev)

from albert_tf import checkpoints  # noqa: E402
from albert_tf.checkpoints.conversion import build_model, convert_checkpoint  # noqa: E402
from albert_tf.corpus.glue_task import build_corpus_task  # noqa: E402
from albert_tf.glue import GlueProcessor, get_task  # noqa: E402
from albert_tf.glue.runner import GlueRunOptions, run  # noqa: E402
from albert_tf.tokenization import FullTokenizer, preprocess_text  # noqa: E402
from tests.checkpoints.hf_models import torch, transformers  # noqa: E402  (skips without them)
from tests.conftest import random_inputs, tiny_config  # noqa: E402
from tests.in_process_tools import run_tool  # noqa: E402

TOLERANCE = 1e-5  # outputs, float32 both sides
PROBABILITIES = 1e-4  # class probabilities, keras-hub's predict vs test_results.tsv
POSITIONS = 64
SIZES = dict(vocabulary_size=1000, num_layers=4, num_heads=4, embedding_dim=16, hidden_dim=32,
             intermediate_dim=64, num_groups=2, num_inner_repetitions=2,
             max_sequence_length=POSITIONS)


def spread(model, seed=0):
    """Weights drawn wider than the initialiser's 0.02, so a misplaced tensor shows."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.3, variable.shape).astype("float32"))


def inputs(seed=0):
    values = random_inputs(tiny_config(vocab_size=1000), seed=seed)
    return {k: v for k, v in values.items() if k != "masked_lm_positions"}


def keras_hub_inputs(values):
    return {"token_ids": values["input_word_ids"], "padding_mask": values["input_mask"],
            "segment_ids": values["input_type_ids"]}


def masked(sequence, values):
    return np.asarray(sequence) * values["input_mask"][..., None]


@pytest.fixture(scope="module")
def presets(tmp_path_factory, text_assets):
    """An AlbertTextClassifier (3 classes, 2 groups × 2 inner layers) with its tokenizer and
    a backbone-only preset of the same weights, both saved by keras-hub."""
    root = tmp_path_factory.mktemp("keras_hub")
    tokenizer = keras_hub.models.AlbertTokenizer(proto=text_assets.spm_model)
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(tokenizer,
                                                                     sequence_length=POSITIONS)
    backbone = keras_hub.models.AlbertBackbone(**SIZES)
    task = keras_hub.models.AlbertTextClassifier(backbone, 3, preprocessor=preprocessor)
    spread(task)
    task.save_to_preset(str(root / "classifier"))
    backbone.save_to_preset(str(root / "backbone"))
    tokenizer.save_to_preset(str(root / "backbone"))
    return root, task


def test_preset_kind_config_and_tokenizer(presets):
    root, _ = presets
    assert checkpoints.checkpoint_kind(str(root / "classifier")) == "keras_hub"
    assert not checkpoints.is_hf_checkpoint(str(root / "classifier"))
    preset = checkpoints.read_keras_hub_preset(str(root / "classifier"))
    assert (preset.config.num_hidden_groups, preset.config.inner_group_num,
            preset.config.num_hidden_layers, preset.num_classes) == (2, 2, 4, 3)
    assert preset.files.spm_model_file.endswith("assets/tokenizer/vocabulary.spm")


def test_preset_to_ours_and_hf_equals_keras_hub(presets, tmp_path):
    root, task = presets
    values = inputs()
    expected_logits = np.asarray(task(keras_hub_inputs(values)))
    expected = task.backbone(keras_hub_inputs(values))
    for to in ("ours", "hf"):
        result = convert_checkpoint(str(root / "classifier"), str(tmp_path / to), to)
        assert (result.source_kind, result.head) == ("keras_hub", "classification")
        config = checkpoints.read_keras_hub_preset(str(root / "classifier")).config
        model = build_model("classification", config, 3)
        report = checkpoints.load_checkpoint(model, str(tmp_path / to))
        assert not report.missing
        np.testing.assert_allclose(model(values)["logits"], expected_logits, atol=TOLERANCE)
        encoded = model.encoder(values)
        np.testing.assert_allclose(masked(encoded["sequence_output"], values),
                                   masked(expected["sequence_output"], values), atol=TOLERANCE)
    hf = transformers.AlbertForSequenceClassification.from_pretrained(str(tmp_path / "hf"))
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(values["input_word_ids"]).long(),
                    attention_mask=torch.tensor(values["input_mask"]).long(),
                    token_type_ids=torch.tensor(values["input_type_ids"]).long()).logits
    np.testing.assert_allclose(logits.numpy(), expected_logits, atol=TOLERANCE)


def test_our_model_to_keras_hub_loads_with_our_outputs(tmp_path, text_assets):
    """ours (2 groups × 2 inner layers) → `convert --to=keras_hub` → AlbertBackbone.from_preset."""
    config = tiny_config(vocab_size=1000, num_hidden_layers=4, num_hidden_groups=2,
                         inner_group_num=2, max_position_embeddings=POSITIONS)
    model = build_model("encoder", config)
    spread(model, seed=1)
    checkpoints.save_original_checkpoint(model, str(tmp_path / "tf1" / "model.ckpt"))
    config.to_json_file(str(tmp_path / "tf1" / "albert_config.json"))
    result = run_tool("albert_tf.convert", f"--input={tmp_path}/tf1/model.ckpt",
                      f"--output={tmp_path}/preset", "--to=keras_hub",
                      f"--spm_model_file={text_assets.spm_model}")
    assert result.status == 0, result.stderr[-2000:]
    assert "original (encoder) → keras_hub" in result.stdout
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path / "preset"))
    values = inputs(seed=2)
    theirs, ours = backbone(keras_hub_inputs(values)), model(values)
    np.testing.assert_allclose(theirs["pooled_output"], ours["pooled_output"], atol=TOLERANCE)
    np.testing.assert_allclose(masked(theirs["sequence_output"], values),
                               masked(ours["sequence_output"], values), atol=TOLERANCE)
    tokenizer = keras_hub.models.AlbertTokenizer.from_preset(str(tmp_path / "preset"))
    assert tokenizer.vocabulary_size() == 1000


@pytest.fixture(scope="module")
def fine_tuned(tmp_path_factory, presets, text_assets):
    """MRPC fine-tuned 4 steps from the backbone preset (config and SentencePiece model from
    it: no --albert_config_file, no --spm_model_file), predicted, converted to keras-hub."""
    root, _ = presets
    work = tmp_path_factory.mktemp("mrpc_keras_hub")
    build_corpus_task(str(work / "glue"), text_assets.corpus, num_train=64, num_dev=16,
                      num_test=32)
    result = run(GlueRunOptions(
        task_name="MRPC", data_dir=str(work / "glue"), output_dir=str(work / "out"),
        init_checkpoint=str(root / "backbone"), max_seq_length=POSITIONS, do_train=True,
        do_predict=True, train_step=4, save_checkpoints_steps=4, train_batch_size=16,
        predict_batch_size=16, learning_rate=1e-3, seed=1, do_lower_case=False))
    config = checkpoints.read_keras_hub_preset(str(root / "backbone")).config
    encoder_variables = len(build_model("encoder", config).weights)
    assert f"{encoder_variables}/{encoder_variables} encoder" in result.restore_report.summary()
    convert_checkpoint(str(work / "out"), str(work / "preset"), "keras_hub",
                       albert_config_file=str(root / "backbone" / "config.json"),
                       spm_model_file=text_assets.spm_model)
    return work


def test_text_classifier_predicts_the_probabilities_of_do_predict(fine_tuned, text_assets):
    work = fine_tuned
    examples = GlueProcessor(get_task("MRPC"), use_spm=False).get_test_examples(str(work / "glue"))
    expected = np.loadtxt(work / "out" / "test_results.tsv", ndmin=2)
    task = keras_hub.models.AlbertTextClassifier.from_preset(str(work / "preset"))
    task.jit_compile = False  # XLA's compile costs more CPU than the 32 pairs; the math is the same
    logits = task.predict(([e.text_a for e in examples], [e.text_b for e in examples]),
                          verbose=0)
    got = np.exp(logits - logits.max(-1, keepdims=True))
    got /= got.sum(-1, keepdims=True)
    # A cased run (keras-hub never lower-cases). Where its tokenizer (no NFKD, no comma-digit
    # split) gives our ids and no pair needs cutting, its probabilities are ours.
    ours = FullTokenizer(spm_model_file=text_assets.spm_model)
    tokenizer = task.preprocessor.tokenizer

    def agree(text):
        mine = ours.convert_tokens_to_ids(ours.tokenize(preprocess_text(text, lower=False)))
        return list(np.asarray(tokenizer(text))) == mine, len(mine)

    same = np.array([all(agree(t)[0] for t in (e.text_a, e.text_b))
                     and sum(agree(t)[1] for t in (e.text_a, e.text_b)) <= POSITIONS - 3
                     for e in examples], bool)
    assert same.sum() >= 4, same
    np.testing.assert_allclose(got[same], expected[same], atol=PROBABILITIES, rtol=0)


def test_bad_presets_are_one_line_and_write_nothing(presets, tmp_path):
    root, _ = presets
    bert = keras_hub.models.BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2,
                                         hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    bert.save_to_preset(str(tmp_path / "bert"))
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    for name in ("config.json", "metadata.json"):
        (truncated / name).write_bytes((root / "backbone" / name).read_bytes())
    weights = (root / "backbone" / "model.weights.h5").read_bytes()
    (truncated / "model.weights.h5").write_bytes(weights[:len(weights) // 2])
    disagreeing = tmp_path / "albert_config.json"
    tiny_config(vocab_size=1000, num_hidden_layers=4).to_json_file(str(disagreeing))
    cases = {
        "bert": ([f"--input={tmp_path}/bert"], "a keras-hub BertBackbone preset, not ALBERT"),
        "truncated": ([f"--input={truncated}"], "not a readable Keras weights file"),
        "config": ([f"--input={root}/backbone", f"--albert_config_file={disagreeing}"],
                   "disagree (num_hidden_groups: 1 vs 2"),
    }
    for name, (args, message) in cases.items():
        output = tmp_path / f"out_{name}"
        result = run_tool("albert_tf.convert", *args, f"--output={output}", "--to=hf")
        lines = result.stderr.strip().splitlines()
        assert result.status == 1 and len(lines) == 1 and message in lines[0], (name, lines)
        assert not output.exists()
    options = GlueRunOptions(task_name="MRPC", data_dir=str(tmp_path), output_dir=str(tmp_path / "o"),
                             init_checkpoint=str(tmp_path / "bert"), do_train=True)
    with pytest.raises(ValueError, match="a keras-hub BertBackbone preset, not ALBERT"):
        run(options)
    options = GlueRunOptions(task_name="MRPC", data_dir=str(tmp_path), output_dir=str(tmp_path / "o"),
                             init_checkpoint=str(root / "backbone"), do_train=True,
                             albert_config_file=str(disagreeing))
    with pytest.raises(ValueError, match="disagree .num_hidden_groups: 1 vs 2"):
        run(options)
    assert not (tmp_path / "o").exists()


def test_keras_is_a_deprecated_name_of_ours(presets, tmp_path):
    root, _ = presets
    result = run_tool("albert_tf.convert", f"--input={root}/backbone", f"--output={tmp_path}/o",
                      "--to=keras")
    assert result.status == 0, result.stderr[-2000:]
    assert result.stderr.count("--to=keras is deprecated") == 1
    assert checkpoints.checkpoint_kind(str(tmp_path / "o")) == "ours"
    assert os.path.exists(tmp_path / "o" / "30k-clean.model")  # the preset's vocabulary.spm


def test_our_hf_encoder_loads_in_every_transformers_class_and_in_keras_hub(tmp_path):
    """An AlbertModel we write has the `albert.` names transformers' task models use:
    every transformers class loads it exactly as transformers' own AlbertModel file (the same
    missing heads, nothing unexpected beyond them), and keras-hub's Hugging Face loader reads
    the local directory with our outputs."""
    config = tiny_config(vocab_size=1000)
    model = build_model("encoder", config)
    spread(model, seed=3)
    ours = checkpoints.save_hf_checkpoint(model, str(tmp_path / "ours"))
    transformers.AlbertModel.from_pretrained(ours).save_pretrained(str(tmp_path / "theirs"))
    for name in ("AlbertModel", "AlbertForPreTraining", "AlbertForMaskedLM",
                 "AlbertForSequenceClassification", "AlbertForMultipleChoice",
                 "AlbertForQuestionAnswering", "AlbertForTokenClassification"):
        infos = [getattr(transformers, name).from_pretrained(path, output_loading_info=True)[1]
                 for path in (ours, str(tmp_path / "theirs"))]
        # (transformers names the file's unexpected tensors as the file spells them)
        reported = [{k: {n.removeprefix("albert.") for n in v} for k, v in info.items() if v}
                    for info in infos]
        assert reported[0] == reported[1], name
        if name == "AlbertModel":
            assert not any(infos[0].values()), infos[0]
    backbone = keras_hub.models.AlbertBackbone.from_preset(ours)
    values = inputs(seed=4)
    np.testing.assert_allclose(backbone(keras_hub_inputs(values))["pooled_output"],
                               model(values)["pooled_output"], atol=TOLERANCE)


def test_export_checkpoints_writes_the_presets_encoder(presets, tmp_path):
    root, task = presets
    result = run_tool("albert_tf.export_checkpoints", f"--albert_directory={root}/backbone",
                      "--checkpoint_name=unused", f"--export_path={tmp_path}/export/model.ckpt")
    assert result.status == 0, result.stderr[-2000:]
    config = checkpoints.read_keras_hub_preset(str(root / "backbone")).config
    model = build_model("encoder", config)
    checkpoints.load_checkpoint(model, str(tmp_path / "export" / "model.ckpt"))
    values = inputs(seed=5)
    np.testing.assert_allclose(model(values)["pooled_output"],
                               task.backbone(keras_hub_inputs(values))["pooled_output"],
                               atol=TOLERANCE)


def test_a_preset_on_a_bucket_reads_as_the_local_one(presets, tmp_path):
    """A preset under ram:// (TensorFlow's in-memory file system, standing in for gs://):
    same kind, config and logits as the local directory; `convert --to=keras_hub` writes one
    there that keras-hub's own loader reads back from a local copy."""
    root, task = presets
    remote = "ram://keras_hub_bucket/classifier"
    copy_tree_up(str(root / "classifier"), remote)
    assert checkpoints.checkpoint_kind(remote) == "keras_hub"
    config = checkpoints.read_keras_hub_preset(remote).config
    model = build_model("classification", config, 3)
    values = inputs()
    model(values)
    report = checkpoints.load_checkpoint(model, remote)
    assert not report.missing and not report.unused
    np.testing.assert_allclose(model(values)["logits"],
                               np.asarray(task(keras_hub_inputs(values))), atol=TOLERANCE)
    written = convert_checkpoint(remote, "ram://keras_hub_bucket/out", "keras_hub")
    assert written.output == "ram://keras_hub_bucket/out"
    local = tmp_path / "back"
    copy_tree_down(written.output, str(local))
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(local))
    np.testing.assert_allclose(masked(backbone(keras_hub_inputs(values))["sequence_output"], values),
                               masked(task.backbone(keras_hub_inputs(values))["sequence_output"],
                                      values), atol=TOLERANCE)


def copy_tree_up(local: str, remote: str) -> None:
    for directory, _, names in os.walk(local):
        relative = os.path.relpath(directory, local)
        target = remote if relative == "." else f"{remote}/{relative}"
        tf.io.gfile.makedirs(target)
        for name in names:
            tf.io.gfile.copy(os.path.join(directory, name), f"{target}/{name}", overwrite=True)


def copy_tree_down(remote: str, local: str) -> None:
    os.makedirs(local, exist_ok=True)
    for name in tf.io.gfile.listdir(remote):
        name = name.rstrip("/")
        source = f"{remote}/{name}"
        if tf.io.gfile.isdir(source):
            copy_tree_down(source, os.path.join(local, name))
        else:
            tf.io.gfile.copy(source, os.path.join(local, name), overwrite=True)
