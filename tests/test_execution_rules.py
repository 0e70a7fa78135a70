"""The execution-path tables per CPU profile (oneDNN on/off, XLA or the graph), with mocked
profiles: every choice the tables make is checked on every profile, whatever CPU runs this."""

import pytest

from albert_tf.runtime import execution_rules, hardware
from albert_tf.runtime.execution_rules import (ONEDNN_ENV, choose_onednn, freeze_for_prediction,
                                       use_xla, xla_speedup)
from albert_tf.training.choices import DTYPE_POLICIES
from tests.cpuinfo_texts import AMD_AVX2, XEON_SPR



def test_every_profile_has_a_row_in_both_tables():
    assert set(execution_rules.ONEDNN_ON) == set(hardware.CPU_PROFILES)
    assert set(execution_rules.XLA_SPEEDUP) == set(hardware.CPU_PROFILES)
    assert set(execution_rules.FROZEN_SPEEDUP) == set(hardware.CPU_PROFILES)


@pytest.mark.parametrize("profile", hardware.CPU_PROFILES)
def test_every_step_and_dtype_has_a_graph_on_every_profile(profile):
    for step in execution_rules.STEP_KINDS:
        for dtype in DTYPE_POLICIES:
            assert use_xla(step, dtype, None, profile=profile) is False  # size unknown
            assert use_xla(step, dtype, 0, profile=profile) is False
            assert isinstance(use_xla(step, dtype, 10**6, 8, profile=profile), bool)


def test_onednn_is_set_on_x86_profiles_and_left_to_tensorflow_elsewhere():
    for profile in (hardware.PROFILE_AVX2, hardware.PROFILE_AVX512, hardware.PROFILE_AMX):
        environ: dict[str, str] = {}
        assert choose_onednn(environ, profile) == "1"
        assert environ == {ONEDNN_ENV: "1"}
    environ = {}
    assert choose_onednn(environ, hardware.PROFILE_ARM) is None and environ == {}


def test_the_users_onednn_setting_wins():
    for value in ("0", "1", ""):
        environ = {ONEDNN_ENV: value}
        assert choose_onednn(environ, hardware.PROFILE_AVX2) is None
        assert environ == {ONEDNN_ENV: value}


def test_onednn_choice_follows_the_cpuinfo_profile(monkeypatch):
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: AMD_AVX2)
    environ: dict[str, str] = {}
    assert choose_onednn(environ) == "1"
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: XEON_SPR)
    environ = {}
    assert choose_onednn(environ) == "1"


def test_xla_only_where_faster_and_repaid_by_the_run():
    avx2 = hardware.PROFILE_AVX2
    saved_per_step = 1 - 1 / xla_speedup("predict", "bfloat16", avx2)
    assert saved_per_step > 0
    # One padded length (SQuAD v1, --nobucket_by_length): a few batches repay it.
    assert use_xla("predict", "bfloat16", 10, 1, profile=avx2)
    # 8 buckets: 7 more compiles of FIRST_CALL_STEPS each must be repaid.
    needed = (7 * execution_rules.FIRST_CALL_STEPS + 1) / saved_per_step
    assert not use_xla("predict", "bfloat16", int(needed) - 1, 8, profile=avx2)
    assert use_xla("predict", "bfloat16", int(needed) + 1, 8, profile=avx2)


def test_measured_choices_per_profile():
    avx2, amx = hardware.PROFILE_AVX2, hardware.PROFILE_AMX
    long_run = 10**6
    # AVX2 (AMD Zen 3): XLA predicts faster in both dtypes and trains bf16 faster; fp32
    # training is level, so the graph (no compile to repay).
    assert use_xla("predict", "float32", long_run, profile=avx2)
    assert use_xla("train", "bfloat16", long_run, profile=avx2)
    assert not use_xla("train", "float32", long_run, profile=avx2)
    # AMX: the graph's oneDNN bf16 kernels are ≈ 2× XLA's; fp32 level: always the graph.
    for step in execution_rules.STEP_KINDS:
        for dtype in ("float32", "bfloat16"):
            assert not use_xla(step, dtype, long_run, profile=amx)
    # Unmeasured profiles keep the graph.
    for profile in (hardware.PROFILE_AVX512, hardware.PROFILE_ARM):
        assert xla_speedup("train", "bfloat16", profile) == 1.0
        assert not use_xla("predict", "float32", long_run, profile=profile)


def test_a_five_step_run_never_compiles():
    """Smoke runs of a few steps: XLA's compile could not be repaid."""
    for profile in hardware.CPU_PROFILES:
        for step in execution_rules.STEP_KINDS:
            for dtype in DTYPE_POLICIES:
                assert not use_xla(step, dtype, 5, profile=profile)


def test_unknown_step_kind_is_an_error():
    with pytest.raises(ValueError, match="step must be one of"):
        xla_speedup("serve", "float32", hardware.PROFILE_AVX2)


def test_frozen_weights_only_for_bf16_prediction_on_amx_and_when_repaid():
    """Measured on a Xeon with AMX: bf16 prediction 1.49× on frozen weights, fp32 level; the
    freezing of each run (FREEZE_STEPS batches) must be repaid. Elsewhere unmeasured: never."""
    amx = hardware.PROFILE_AMX
    saved_per_batch = 1 - 1 / execution_rules.FROZEN_SPEEDUP[amx]["bfloat16"]
    needed = execution_rules.FREEZE_STEPS / saved_per_batch  # ≈ 45.6 batches
    assert not freeze_for_prediction("bfloat16", int(needed), profile=amx)
    assert freeze_for_prediction("bfloat16", int(needed) + 1, profile=amx)
    for batches in (None, 0):
        assert not freeze_for_prediction("bfloat16", batches, profile=amx)
    long_run = 10**6
    assert not freeze_for_prediction("float32", long_run, profile=amx)
    for profile in (hardware.PROFILE_AVX2, hardware.PROFILE_AVX512, hardware.PROFILE_ARM):
        for dtype in DTYPE_POLICIES:
            assert not freeze_for_prediction(dtype, long_run, profile=profile)


def test_frozen_weights_follow_the_cpuinfo_profile(monkeypatch):
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: XEON_SPR)
    assert freeze_for_prediction("bfloat16", 1000)
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: AMD_AVX2)
    assert not freeze_for_prediction("bfloat16", 1000)


def test_a_tool_starts_with_the_profiles_choices_and_keeps_the_users():
    environ: dict[str, str] = {}
    assert execution_rules.start_tool(environ, hardware.PROFILE_AVX2) == {ONEDNN_ENV: "1"}
    assert environ == {ONEDNN_ENV: "1"}
    assert execution_rules.start_tool({ONEDNN_ENV: "0"}, hardware.PROFILE_AVX2) == {}
    assert execution_rules.start_tool({}, hardware.PROFILE_ARM) == {}
