"""Every artifact × every engine × every precision (issue 27), on any x86 CPU: format conversion
does not depend on the CPU, so this matrix needs no AMX to run.

Four encoder exports of one tiny checkpoint, written by `export_tfhub`'s command line:
fp32 and bf16, each plain (serving/ only; bf16 also --with_mlm) and with every artifact flag
(tests/export/tiny_exports.py builds them once per run for every file that tests them). Each
`load_serving(path, backend=B, precision=P)` either loads and matches the float32 Keras model of
the checkpoint within the stated bound, or is refused in one line that names the export flag
that would give it — as EXPECTED below says, written out by hand from the docs, not from the
loader's own table. Bounds: fp32 1e-5 absolute; anything touching bf16 2^-5 of each output's
largest magnitude (tests/export/test_bfloat16_export.py derives it); int8 10 % of it (the
ONNX tests' bound; the argmax tests bound the trained case), the static int8 IR (fp32_full's
--int8_calibration_file) its export's accuracy gate (int8_calibration.INT8_RELATIVE_BOUND).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.runtime import hardware
from albert_tf.serving import engines, load_serving
from albert_tf.export import int8_calibration
from albert_tf.serving.auto_rule import AUTO_RULE
from albert_tf.serving.loader import Artifact, ServingLoadError, auto_backend, installed
from tests.export.tiny_exports import EXPORTS, KEYS, shared_export
from tests.export.tiny_exports import encoder_inputs as _inputs

ENGINES = ("tensorflow", "tflite", "openvino", "onnxruntime")
PRECISIONS = ("fp32", "bf16", "int8")
OK = None
# (export, engine, precision) → None: loads; else a word the one-line refusal must contain.
EXPECTED = {}
for _export in EXPORTS:
    _bf16, _full = _export.startswith("bf16"), _export.endswith("full")
    EXPECTED |= {
        (_export, "tensorflow", "fp32"): "--dtype=float32" if _bf16 else OK,
        (_export, "tensorflow", "bf16"): OK if _bf16 else "--dtype=bfloat16",
        (_export, "tensorflow", "int8"): "runs fp32, bf16",
        (_export, "openvino", "fp32"): OK,
        (_export, "openvino", "bf16"): OK,
        (_export, "openvino", "int8"): (OK if _export == "fp32_full"  # NNCF's static int8 IR
                                        else "--int8_calibration_file"),
        (_export, "onnxruntime", "fp32"): OK if _full else "--onnx",
        (_export, "onnxruntime", "bf16"): "runs fp32, int8",
        (_export, "onnxruntime", "int8"): OK if _full else "--onnx",
        (_export, "tflite", "fp32"): OK if _export == "bf16_full" else "--tflite_quantization=none",
        (_export, "tflite", "bf16"): "runs fp32, int8",
        (_export, "tflite", "int8"): (OK if _export == "fp32_full"
                                      else "--tflite_quantization=dynamic_int8"),
    }


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """name → (export directory, the float32 Keras encoder of its checkpoint), shared with the
    other export tests (tiny_exports.EXPORTS). fp32_full also holds the static int8 IR,
    calibrated on records of the inputs the tests send."""
    made = {}
    for name in EXPORTS:
        path, pretrainer = shared_export(tmp_path_factory, name)
        made[name] = (path, pretrainer.encoder)
    return made


def _relative_error(got, want) -> float:
    return max(float(np.abs(got[k] - want[k].numpy()).max())
               / float(np.abs(want[k].numpy()).max()) for k in ("pooled_output", "sequence_output"))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("export", EXPORTS)
def test_each_engine_and_precision_loads_and_matches_or_is_refused_in_one_line(
        exports, export, engine, capfd):
    path, encoder = exports[export]
    inputs = _inputs(encoder.config)
    want = encoder(inputs, training=False)
    for precision in PRECISIONS:
        expected = EXPECTED[(export, engine, precision)]
        if expected is not OK:
            with pytest.raises(ServingLoadError) as refused:
                load_serving(path, backend=engine, precision=precision)
            message = str(refused.value)
            assert "\n" not in message and expected in message, (precision, message)
            continue
        capfd.readouterr()
        model = load_serving(path, backend=engine, precision=precision, num_threads=1)
        err = capfd.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("load_serving: "), err  # its one line
        assert (model.backend, model.precision) == (engine, precision)
        got = model(inputs)
        error = _relative_error(got, want)
        if precision == "int8" and engine == "openvino":
            # Static int8 (activations too) on random weights: the bound its export's accuracy
            # gate held on calibration rows like these (int8_calibration.py), per row.
            relative = [np.linalg.norm(got[k][i] - want[k].numpy()[i])
                        / np.linalg.norm(want[k].numpy()[i])
                        for k in ("pooled_output", "sequence_output") for i in range(len(got[k]))]
            assert 0 < np.mean(relative) <= int8_calibration.INT8_RELATIVE_BOUND, relative
        elif precision == "int8":
            assert 0 < error <= 0.1, (precision, error)
        elif precision == "bf16" or export.startswith("bf16"):
            assert error <= 2.0 ** -5, (precision, error)
            if engine == "tensorflow":  # really bf16: not bit-equal to float32
                assert error > 0, (precision, error)
        else:
            for name in got:
                np.testing.assert_allclose(got[name], want[name].numpy(), atol=1e-5, rtol=0)


def test_the_bf16_export_without_openvino_ir_loads_on_openvino_through_auto(exports,
                                                                            monkeypatch):
    """Defect 1 of issue 27: OpenVINO read the frozen bf16 graph and failed on its bf16
    constants. On a CPU with bf16 units `auto` takes OpenVINO for a bf16 export."""
    path, encoder = exports["bf16"]
    monkeypatch.setattr(hardware, "cpu_profile", lambda *a, **k: hardware.PROFILE_AMX)
    model = load_serving(path)
    assert (model.backend, model.precision) == ("openvino", "bf16")
    inputs = _inputs(encoder.config, batch=2, seq=9)
    assert _relative_error(model(inputs), encoder(inputs, training=False)) <= 2.0 ** -5


CPUINFO = {
    hardware.PROFILE_AVX2: "flags : fpu sse2 avx avx2 fma",
    hardware.PROFILE_AVX512: "flags : avx2 avx512f avx512bw avx512_vnni",
    hardware.PROFILE_AMX: "flags : avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_int8",
    hardware.PROFILE_ARM: "Features : fp asimd asimddp bf16 i8mm",
}


@pytest.mark.parametrize("profile", hardware.CPU_PROFILES)
def test_auto_follows_the_table_for_every_cpu_profile_and_never_picks_what_fails(
        exports, profile, monkeypatch):
    flags = hardware.cpu_flags(CPUINFO[profile])
    machine = "aarch64" if profile == hardware.PROFILE_ARM else "x86_64"
    assert hardware.cpu_profile(flags, machine) == profile
    for export, (path, _) in exports.items():
        artifact = Artifact(path, cpu_flags=flags)
        for precision in (None,) + PRECISIONS:
            for batch in (1, 8):
                try:
                    engine, chosen = auto_backend(artifact, precision, batch, profile)
                except ServingLoadError as refused:
                    # Refused only where no engine of the table can run it.
                    assert all(EXPECTED[(export, e, precision)] is not OK
                               for e in ENGINES if (export, e, precision) in EXPECTED)
                    assert "\n" not in str(refused)
                    continue
                assert EXPECTED[(export, engine, chosen)] is OK, (export, engine, chosen)
                default = "bf16" if export.startswith("bf16") else "fp32"
                assert chosen == (precision or default)
                first_ok = next(e for e in AUTO_RULE[profile][chosen][batch]
                                if EXPECTED[(export, e, chosen)] is OK
                                and not (e == "tflite" and export == "fp32_full"))
                assert engine == first_ok, (export, precision, batch, engine)
    # Full-range int8 weights only with int8 dot products; the 7-bit file elsewhere.
    full = Artifact(exports["fp32_full"][0], cpu_flags=flags)
    file = engines.ENGINES["onnxruntime"].file_for(full, "int8")
    vnni = profile != hardware.PROFILE_AVX2
    assert file.endswith("_vnni.onnx") == vnni, (profile, file)
    # A missing package moves auto to the next engine of the table.
    monkeypatch.setattr(engines, "installed", lambda package: package != "openvino")
    bf16_full = Artifact(exports["bf16_full"][0], cpu_flags=flags)
    assert auto_backend(bf16_full, "bf16", 8, profile)[0] == "tensorflow"


def test_every_engine_refuses_bad_ids_in_one_line(exports):
    path, encoder = exports["fp32_full"]
    good = _inputs(encoder.config, batch=2, seq=8)
    vocab, types = encoder.config.vocab_size, encoder.config.type_vocab_size
    for engine, precision in (("tensorflow", "fp32"), ("tflite", "int8"), ("openvino", "fp32"),
                              ("onnxruntime", "fp32"), ("onnxruntime", "int8")):
        model = load_serving(path, backend=engine, precision=precision)
        for name, value, allowed in (("input_word_ids", 10**6, f"[0, {vocab})"),
                                     ("input_word_ids", -1, f"[0, {vocab})"),
                                     ("input_type_ids", types, f"[0, {types})")):
            bad = {k: v.copy() for k, v in good.items()}
            bad[name][1, 3] = value
            with pytest.raises(ValueError) as refused:
                model(bad)
            message = str(refused.value)
            assert "\n" not in message
            assert f"{name}: value {value} is outside the allowed range {allowed}" in message


def test_precision_is_validated_and_its_spellings_honoured(exports):
    path, _ = exports["fp32_full"]
    with pytest.raises(ServingLoadError, match=r"precision must be one of fp32, bf16, int8.*"
                                               r"got 'int4'"):
        load_serving(path, precision="int4")
    assert load_serving(path, backend="openvino", precision="f32").precision == "fp32"
    assert load_serving(path, backend="openvino", precision="bfloat16").precision == "bf16"
    assert load_serving(path, backend="tensorflow", precision="float32").precision == "fp32"


@pytest.mark.parametrize("engine,precision", [("tensorflow", "bf16"), ("tflite", "fp32"),
                                              ("openvino", "bf16"), ("onnxruntime", "fp32"),
                                              ("onnxruntime", "int8")])
def test_concurrent_calls_give_the_serial_answer_bit_for_bit(exports, engine, precision):
    """Issue 27, defect 3: a thread-pool server calls one loaded model from many threads."""
    path, encoder = exports["bf16_full"]
    model = load_serving(path, backend=engine, precision=precision)
    feeds = [_inputs(encoder.config, batch=1 + i % 3, seq=6 + 3 * (i % 4), seed=i)
             for i in range(8)]
    serial = [model(feed) for feed in feeds]
    failures: list[str] = []

    def client(offset: int) -> None:
        for call in range(20):
            i = (offset + call) % len(feeds)
            try:
                got = model(feeds[i])
            except Exception as error:
                failures.append(repr(error))
                continue
            for name, value in got.items():
                if not np.array_equal(value, serial[i][name]):
                    failures.append(f"call {call} of client {offset}: {name} differs")

    threads = [threading.Thread(target=client, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:5]


# ----- moved from test_serving.py: the serving graph, refusals, OpenVINO's LayerNorm fusion -----
TFLITE_SEQ = 16  # fp32_full's --tflite_seq_length


def test_serving_graph_is_frozen_and_minimal_and_the_hub_signature_is_unchanged(exports):
    path, _ = exports["fp32"]
    serving = tf.saved_model.load(os.path.join(path, "serving")).signatures["serving_default"]
    assert len(serving.variables) == 0  # weights are constants
    assert sorted(serving.structured_input_signature[1]) == sorted(KEYS)  # no `training`
    assert sorted(serving.structured_outputs) == ["pooled_output", "sequence_output"]
    hub = tf.saved_model.load(path)
    assert len(hub.signatures["serving_default"].variables) > 0
    assert "encoder_outputs_1" in hub.signatures["serving_default"].structured_outputs
    assert len(hub.trainable_variables) > 0


def test_bad_paths_engines_and_inputs_fail_with_one_clear_line(exports, tmp_path):
    path, encoder = exports["fp32_full"]  # its TFLite file: int8, 16 tokens
    with pytest.raises(ServingLoadError, match=r"missing_dir: does not exist; expected .*"
                                               r"saved_model\.pb.*\.tflite.*\.xml"):
        load_serving(str(tmp_path / "missing_dir"))
    with pytest.raises(ServingLoadError, match="empty: not a serving artifact"):
        os.makedirs(tmp_path / "empty")
        load_serving(str(tmp_path / "empty"))
    with pytest.raises(ServingLoadError, match="backend must be one of"):
        load_serving(path, backend="cuda")
    model = load_serving(path, backend="tflite", precision="int8")
    with pytest.raises(ValueError, match=f"sequence length 17 exceeds .* maximum {TFLITE_SEQ}"):
        model(_inputs(encoder.config, batch=1, seq=TFLITE_SEQ + 1))
    with pytest.raises(ValueError, match="input_mask: expected int32 or int64, got float32"):
        inputs = _inputs(encoder.config, batch=1, seq=4)
        model({**inputs, "input_mask": inputs["input_mask"].astype(np.float32)})
    with pytest.raises(ValueError, match="missing inputs"):
        model({"input_word_ids": np.zeros((1, 4), np.int32)})


@pytest.mark.skipif(not installed("openvino"), reason="needs the optional openvino package")
def test_openvino_fuses_every_layer_norm_of_our_graph_into_one_mvn(exports):
    """The serving graph's LayerNorm form (serving_graph.engine_layer_norm) is the one OpenVINO's
    MVN fusion recognises: one MVN per LayerNorm (the embeddings' one, and two per layer
    application), no Reduce ops left. A form it does not match (Keras' own) leaves 2 Reduce +
    4 Eltwise per LayerNorm. Structure, not speed: the same on any CPU."""
    import openvino as ov

    path, encoder = exports["fp32_full"]
    config = encoder.config
    compiled = ov.Core().compile_model(os.path.join(path, "openvino", "albert_encoder.xml"),
                                       "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    kinds = [node.get_rt_info()["layerType"].astype(str)
             for node in compiled.get_runtime_model().get_ops()]
    assert kinds.count("MVN") == 1 + 2 * config.num_hidden_layers, kinds
    assert kinds.count("Reduce") == 0, kinds
