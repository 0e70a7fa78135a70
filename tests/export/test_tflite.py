"""TFLite exports (albert_tf/export/tflite.py): the interpreter's outputs against the Keras
model's (float: within 1e-4; dynamic_int8: same argmax), and run_squad's export options.

run_squad's v1 --export_dir end to end is the README's "Export and TF-Hub" section
(tests/test_readme.py: SavedModel + albert_model.tflite written by the command), and the SQuAD
export's files against the Keras model on every engine are tests/export/test_task_serving.py's.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export.tflite import (TFLITE_FILE, TFLITE_INPUTS, TFLiteExportError, convert,
                                     signature_runner, token_function, write_tflite)
from albert_tf.glue.export import classifier_outputs
from albert_tf.models.classifier import AlbertClassifier
from albert_tf.squad.runner import SquadRunError, SquadRunOptions, run
from tests.conftest import tiny_config
from tests.squad.reference import reference_options, tiny_config as squad_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture: tiny SP model)

SEQ = 32
NUM_EXAMPLES = 200


def _examples(vocab_size: int, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """[1, SEQ] int32 examples of random lengths (≥ 4 real tokens), two segments each."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(count):
        length = int(rng.integers(4, SEQ + 1))
        mask = (np.arange(SEQ) < length).astype(np.int32)
        ids = rng.integers(1, vocab_size, SEQ).astype(np.int32) * mask
        segments = ((np.arange(SEQ) >= length // 2) & (mask == 1)).astype(np.int32)
        examples.append({"input_ids": ids[None], "input_mask": mask[None],
                         "segment_ids": segments[None]})
    return examples


def _keras_logits(model: keras.Model, examples: list[dict[str, np.ndarray]]) -> np.ndarray:
    batch = {name: np.concatenate([e[key] for e in examples])
             for key, name in zip(TFLITE_INPUTS, ("input_word_ids", "input_mask", "input_type_ids"))}
    return model(batch, training=False)["logits"].numpy()


@pytest.fixture(scope="module")
def classifier():
    """A tiny 3-class classifier with random weights (initializer_range 0.1: at 0.02 the
    pooled output barely depends on the input and every logit is a near tie)."""
    keras.utils.set_random_seed(3)
    config = tiny_config(vocab_size=1000, initializer_range=0.1)
    model = AlbertClassifier(config, 3)
    examples = _examples(config.vocab_size, NUM_EXAMPLES)
    return model, examples, _keras_logits(model, examples)


def _tflite_outputs(content: bytes, examples) -> dict[str, np.ndarray]:
    runner = signature_runner(content)
    outputs = [runner(**example) for example in examples]
    return {name: np.concatenate([o[name] for o in outputs]) for name in outputs[0]}


def test_float_tflite_equals_the_keras_model(classifier):
    model, examples, expected = classifier
    content = convert(token_function(model, SEQ, lambda out: classifier_outputs(out, False)), "none")
    got = _tflite_outputs(content, examples)
    assert sorted(got) == ["logits", "predictions", "probabilities"]
    np.testing.assert_allclose(got["logits"], expected, atol=1e-4, rtol=0)
    np.testing.assert_allclose(got["probabilities"], tf.nn.softmax(expected).numpy(), atol=1e-5)
    np.testing.assert_array_equal(got["predictions"], expected.argmax(-1))


def test_dynamic_int8_keeps_the_argmax_and_shrinks_the_weights(classifier):
    """Random weights here (a fine-tuned tiny classifier is not made in seconds); the demo
    task's fine-tuned model is checked in tests/glue/test_learning.py."""
    model, examples, expected = classifier
    fn = token_function(model, SEQ, lambda out: classifier_outputs(out, False))
    content = convert(fn, "dynamic_int8")
    with_floats = convert(fn, "float16")
    interpreter_types = {d["dtype"] for d in tf.lite.Interpreter(
        model_content=content).get_tensor_details()}
    assert np.int8 in interpreter_types  # the large weight matrices are stored as int8
    got = _tflite_outputs(content, examples)["logits"]
    agreement = np.mean(got.argmax(-1) == expected.argmax(-1))
    assert agreement >= 0.95, agreement
    assert len(content) < len(with_floats)
    np.testing.assert_allclose(_tflite_outputs(with_floats, examples[:20])["logits"],
                               expected[:20], atol=1e-2)


def test_non_finite_outputs_write_nothing(tmp_path):
    model = AlbertClassifier(tiny_config(), 2)
    # NaN whatever the weights: the converter turns an `* inf` into `* FLT_MAX`, finite
    # for every logit under 1 in magnitude (a random init could pass).
    fn = token_function(model, SEQ, lambda out: {"logits": tf.math.sqrt(-1.0 - tf.abs(out["logits"]))})
    with pytest.raises(TFLiteExportError, match="'logits' is not finite on a sample input"):
        write_tflite(fn, str(tmp_path / TFLITE_FILE), "none", vocab_size=100)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def squad_config_file(tmp_path_factory, text_assets):  # noqa: F811
    from albert_tf.tokenization import FullTokenizer

    vocab_size = FullTokenizer(spm_model_file=text_assets.spm_model).vocab_size
    path = str(tmp_path_factory.mktemp("squad_config") / "albert_config.json")
    squad_config(vocab_size).to_json_file(path)
    return path


@pytest.mark.parametrize("overrides,message", [
    ({"version_2_with_negative": True}, "export_dir is SQuAD v1 only"),
    ({"export_dir": "OUT"}, "would replace output_dir"),
    ({"tflite_quantization": "int4"}, "--tflite_quantization=int4: expected one of none, "
                                     "dynamic_int8, float16"),
])
def test_bad_squad_export_options(squad_config_file, text_assets, tmp_path,  # noqa: F811
                                  overrides, message):
    options = reference_options(squad_config_file, text_assets.spm_model, tmp_path / "out",
                                False, do_train=False, do_predict=False,
                                export_dir=str(tmp_path / "export"))
    options.update(overrides)
    if options["export_dir"] == "OUT":
        options["export_dir"] = str(tmp_path)
    with pytest.raises(SquadRunError, match=message):
        run(SquadRunOptions(**options))
    assert list(tmp_path.iterdir()) == []
