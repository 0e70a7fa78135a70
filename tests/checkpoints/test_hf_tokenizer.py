"""HF directories we write carry a tokenizer that transformers runs as our scripts do (issue 29):
the same pieces as `preprocess_text` + `FullTokenizer`, segment ids, our special ids and
model_max_length; a classifier fine-tuned by run_classifier and converted to HF gives
`pipeline("text-classification")` the class probabilities of our `--do_predict`; every
conversion carries the SentencePiece model beside its input (faithfulness §7.5)."""

import json
import os
import shutil

import numpy as np
import pytest

from albert_tf import checkpoints
from albert_tf.checkpoints.conversion import convert_checkpoint
from albert_tf.corpus.glue_task import build_corpus_task
from albert_tf.glue import GlueProcessor, get_task
from albert_tf.glue.features import pack_tokens
from albert_tf.glue.runner import GlueRunOptions, run
from albert_tf.models import AlbertClassifier, AlbertPretrainer
from albert_tf.tokenization import FullTokenizer, preprocess_text
from tests.checkpoints.hf_models import torch, transformers  # noqa: F401  (skips without them)
from tests.conftest import random_inputs, tiny_config
from tests.training import processes

MAX_POSITIONS = 64
TOLERANCE = 1e-4  # class probabilities, pipeline vs test_results.tsv (float32 both sides)
# Text where the original's steps matter: accents, compatibility forms, odd whitespace, quotes
# that transformers' AlbertTokenizer would rewrite, digits and commas, unknown characters.
EDGE_TEXTS = ("Café naïve RÉSUMÉ", "``quoted'' text", "tab\there  two  spaces", "  padded  ",
              "x\u00a0y\u2003z\u3000w", "ﬁne ① ², Ⅻ", "emoji 😀 ok", "中文字符", "In 1998, 2,000 people",
              "a\u0301b\u0308c", "\u00a8", "line\nbreak\r\n", "ctrl\x07char", "zero\u200bwidth",
              "full－width ＡＢＣ", "x\x1cy", "Ǆ ǅ ß ẞ ﬀ", "‘single’ “double” «angle»",
              "a -- b — c … d", '"ndbm" or "gnu") if recognized.', "http.client.HTTPResponse")


def classifier(config, num_classes=2):
    model = AlbertClassifier(config, num_classes)
    model({k: v for k, v in random_inputs(config).items() if k != "masked_lm_positions"})
    return model


def our_pair(tokenizer, a, b, lower=True):
    """(ids, segment ids) as run_classifier packs a raw pair, unpadded, never cut."""
    tokens = [tokenizer.tokenize(preprocess_text(t, lower=lower)) for t in (a, b)]
    ids, mask, segments = pack_tokens(*tokens, 10_000, tokenizer)
    return ids[:sum(mask)], segments[:sum(mask)]


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory, text_assets):
    config = tiny_config(vocab_size=1000, max_position_embeddings=MAX_POSITIONS)
    path = tmp_path_factory.mktemp("hf_tokenizer") / "classifier"
    return checkpoints.save_hf_checkpoint(classifier(config), str(path),
                                          spm_model_file=text_assets.spm_model)


def test_autotokenizer_tokenizes_as_our_scripts(hf_dir, text_assets):
    ours = FullTokenizer(spm_model_file=text_assets.spm_model)
    theirs = transformers.AutoTokenizer.from_pretrained(hf_dir)
    assert theirs.model_input_names == ["input_ids", "token_type_ids", "attention_mask"]
    assert theirs.model_max_length == MAX_POSITIONS
    assert {t: theirs.convert_tokens_to_ids(t) for t in ours.special_ids()} == ours.special_ids()
    assert (theirs.cls_token, theirs.sep_token, theirs.pad_token, theirs.unk_token,
            theirs.mask_token) == ("[CLS]", "[SEP]", "<pad>", "<unk>", "[MASK]")
    with open(text_assets.corpus, encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()][:4000] + list(EDGE_TEXTS)
    expected = [ours.convert_tokens_to_ids(ours.tokenize(preprocess_text(t, lower=True)))
                for t in texts]
    got = theirs(texts, add_special_tokens=False)["input_ids"]
    assert [t for t, e, g in zip(texts, expected, got) if e != g] == []
    for a, b in zip(texts[:200:2], texts[1:200:2]):  # [CLS] a [SEP] b [SEP], segments 0 then 1
        encoded = theirs(a, b)
        assert (encoded["input_ids"], encoded["token_type_ids"]) == our_pair(ours, a, b)
    # The one documented difference: a special token's spelling in the text is that token.
    assert theirs("a [MASK] b", add_special_tokens=False)["input_ids"][1] == ours.mask_id


def test_a_cased_model_keeps_case(tmp_path, text_assets):
    config = tiny_config(vocab_size=1000, max_position_embeddings=MAX_POSITIONS)
    path = checkpoints.save_hf_checkpoint(classifier(config), str(tmp_path / "cased"),
                                          spm_model_file=text_assets.spm_model,
                                          do_lower_case=False)
    ours = FullTokenizer(spm_model_file=text_assets.spm_model)
    theirs = transformers.AutoTokenizer.from_pretrained(path)
    for a, b in (("The Python Library", "Ünïcode ÀCCENTS"), ("HTTP Server", "os.Path")):
        encoded = theirs(a, b)
        assert (encoded["input_ids"], encoded["token_type_ids"]) == our_pair(ours, a, b, False)
    assert theirs("The")["input_ids"] != theirs("the")["input_ids"]


def test_what_transformers_builds_from_spiece_model_alone_differs(hf_dir, tmp_path):
    """Why tokenizer.json exists: AlbertTokenizer from spiece.model alone gives no segment ids
    and splits the user-defined symbols off first (180 of the demo's 400 dev pairs differ)."""
    shutil.copy(os.path.join(hf_dir, "spiece.model"), tmp_path / "spiece.model")
    bare = transformers.AlbertTokenizer.from_pretrained(str(tmp_path))
    ours = transformers.AutoTokenizer.from_pretrained(hf_dir)
    assert "token_type_ids" not in bare("a", "b")
    text = '"ndbm" or "gnu")'
    assert bare.tokenize(text)[:2] == ['"', "▁"] and ours.tokenize(text)[:2] == ["▁", '"']


@pytest.fixture(scope="module")
def fine_tuned(tmp_path_factory, text_assets):
    """MRPC fine-tuned 4 steps by run_classifier (train, eval, predict) and converted to HF by
    the convert command. initializer_range 0.5 spreads the probabilities, so a wrong segment
    id or piece moves them far beyond the tolerance."""
    root = tmp_path_factory.mktemp("mrpc_to_hf")
    build_corpus_task(str(root / "glue"), text_assets.corpus, num_train=64, num_dev=16,
                      num_test=32)
    config_file = str(root / "albert_config.json")
    tiny_config(vocab_size=1000, max_position_embeddings=MAX_POSITIONS,
                initializer_range=0.5).to_json_file(config_file)
    options = GlueRunOptions(
        task_name="MRPC", data_dir=str(root / "glue"), output_dir=str(root / "out"),
        albert_config_file=config_file, spm_model_file=text_assets.spm_model,
        max_seq_length=MAX_POSITIONS, do_train=True, do_eval=True, do_predict=True, train_step=4,
        save_checkpoints_steps=4, train_batch_size=16, eval_batch_size=16, predict_batch_size=16,
        learning_rate=1e-3, seed=1)
    run(options)
    result = processes.run(["-m", "albert_tf.convert", f"--input={root}/out/model.ckpt-best",
                            f"--albert_config_file={config_file}", f"--output={root}/hf",
                            "--to=hf", f"--spm_model_file={text_assets.spm_model}",
                            "--task_name=MRPC"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"tokenizer: {text_assets.spm_model}" in result.stdout
    return root


def test_pipeline_gives_the_probabilities_of_do_predict(fine_tuned, text_assets):
    root = fine_tuned
    examples = GlueProcessor(get_task("MRPC"), use_spm=False).get_test_examples(str(root / "glue"))
    expected = np.loadtxt(root / "out" / "test_results.tsv", ndmin=2)
    with open(root / "hf" / "config.json") as f:
        config = json.load(f)
    assert config["architectures"] == ["AlbertForSequenceClassification"]
    assert (config["id2label"], config["label2id"]) == ({"0": "0", "1": "1"}, {"0": 0, "1": 1})
    pipe = transformers.pipeline("text-classification", model=str(root / "hf"), top_k=None,
                                 device="cpu")
    assert type(pipe.model).__name__ == "AlbertForSequenceClassification"
    pairs = [{"text": e.text_a, "text_pair": e.text_b} for e in examples]
    outputs = pipe(pairs, truncation=True)  # cut to model_max_length, as --max_seq_length=64
    label2id = pipe.model.config.label2id
    got = np.array([[d["score"] for d in sorted(o, key=lambda d: label2id[d["label"]])]
                    for o in outputs])
    # transformers cuts a too-long pair as we do but for one case (README, faithfulness §7.5):
    # an odd budget, b at least as long as a and a over half of it: b keeps the extra token.
    ours = FullTokenizer(spm_model_file=text_assets.spm_model)
    budget = MAX_POSITIONS - 3
    lengths = [[len(ours.tokenize(preprocess_text(t, lower=True))) for t in (e.text_a, e.text_b)]
               for e in examples]
    cut_differs = np.array([a + b > budget and budget % 2 and b >= a and a > budget // 2
                            for a, b in lengths], bool)
    assert not cut_differs.all()
    np.testing.assert_allclose(got[~cut_differs], expected[~cut_differs], atol=TOLERANCE, rtol=0)
    # The same pipeline over the tokenizer transformers makes of spiece.model alone is off.
    bare_dir = root / "bare"
    bare_dir.mkdir(exist_ok=True)
    shutil.copy(root / "hf" / "spiece.model", bare_dir / "spiece.model")
    bare = transformers.AlbertTokenizer.from_pretrained(str(bare_dir),
                                                        model_max_length=MAX_POSITIONS)
    bare_pipe = transformers.pipeline("text-classification", model=pipe.model, tokenizer=bare,
                                      top_k=None, device="cpu")
    wrong = np.array([[d["score"] for d in sorted(o, key=lambda d: label2id[d["label"]])]
                      for o in bare_pipe(pairs, truncation=True)])
    assert np.abs(wrong - expected).max() > 100 * TOLERANCE


@pytest.fixture(scope="module")
def tarball(tmp_path_factory, text_assets):
    """A released-tarball layout with a real SentencePiece model as 30k-clean.model."""
    root = tmp_path_factory.mktemp("tarball")
    config = tiny_config(vocab_size=1000)
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    checkpoints.save_original_checkpoint(model, str(root / "model.ckpt-best"))
    config.to_json_file(root / "albert_config.json")
    shutil.copy(text_assets.spm_model, root / "30k-clean.model")
    return root


def test_every_format_carries_the_model_beside_the_input(tarball, tmp_path, text_assets):
    spm = (tarball / "30k-clean.model").read_bytes()
    to_hf = convert_checkpoint(str(tarball / "model.ckpt-best"), str(tmp_path / "hf"), "hf")
    assert to_hf.spm_model == str(tarball / "30k-clean.model")
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == spm
    assert {"tokenizer.json", "tokenizer_config.json"} <= set(os.listdir(tmp_path / "hf"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert tokenizer.model_max_length == MAX_POSITIONS  # the config's max_position_embeddings
    for to, name in (("keras", "30k-clean.model"), ("original", "30k-clean.model")):
        result = convert_checkpoint(str(tarball / "model.ckpt-best"), str(tmp_path / to), to)
        assert result.spm_model and (tmp_path / to / name).read_bytes() == spm
    # HF → ours → HF: spiece.model beside the HF input, then 30k-clean.model beside ours.
    back = convert_checkpoint(str(tmp_path / "keras"), str(tmp_path / "hf2"), "hf")
    assert back.spm_model == str(tmp_path / "keras" / "30k-clean.model")
    for name in ("spiece.model", "tokenizer.json", "tokenizer_config.json"):
        assert (tmp_path / "hf2" / name).read_bytes() == (tmp_path / "hf" / name).read_bytes()


def test_no_model_beside_the_input_is_said(tarball, tmp_path, caplog):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in os.listdir(tarball):
        if name.startswith("model.ckpt"):
            shutil.copy(tarball / name, bare / name)
    result = convert_checkpoint(str(bare / "model.ckpt-best"), str(tmp_path / "hf"), "hf",
                                albert_config_file=str(tarball / "albert_config.json"))
    assert result.spm_model is None
    assert sorted(os.listdir(tmp_path / "hf")) == ["config.json", "model.safetensors"]
    assert any("No SentencePiece model beside" in r.getMessage() for r in caplog.records)


def test_hf_classifier_labels_survive_and_a_stale_tokenizer_goes(tmp_path, text_assets, caplog):
    config = tiny_config(vocab_size=1000)
    path = checkpoints.save_hf_checkpoint(classifier(config, 3), str(tmp_path / "mnli"),
                                          spm_model_file=text_assets.spm_model,
                                          label_names=get_task("MNLI").labels)
    convert_checkpoint(path, str(tmp_path / "copy"), "hf")
    with open(tmp_path / "copy" / "config.json") as f:
        assert list(json.load(f)["id2label"].values()) == list(get_task("MNLI").labels)
    # A file that is no SentencePiece model is copied with a warning, and the tokenizer.json
    # of the earlier save (which transformers would prefer to it) is removed.
    (tmp_path / "not_spm.model").write_bytes(b"not a SentencePiece model")
    checkpoints.save_hf_checkpoint(classifier(config, 3), path,
                                   spm_model_file=str(tmp_path / "not_spm.model"))
    assert sorted(os.listdir(path)) == ["config.json", "model.safetensors", "spiece.model"]
    assert any("No tokenizer.json" in r.getMessage() for r in caplog.records)
