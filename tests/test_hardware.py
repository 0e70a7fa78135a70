"""bf16 units and CPU profiles read from /proc/cpuinfo text (x86 and Arm)."""

from albert_tf.runtime import hardware
from tests.cpuinfo_texts import AMD_AVX2, AVX512_VNNI, GRAVITON3, XEON_SPR



def test_bf16_units_from_cpuinfo_text():
    """One bf16 API (`bf16_units`/`has_bf16_units`); the earlier names give the same answers."""
    for text, units in ((AMD_AVX2, []), (XEON_SPR, ["avx512_bf16", "amx_bf16"]),
                        (GRAVITON3, ["bf16"])):
        flags = hardware.cpu_flags(text)
        assert hardware.bf16_units(flags) == units
        assert hardware.has_bf16_units(flags) is bool(units)
        assert hardware.bf16_units_in(text) == units
    assert hardware.bf16_units_in(AMD_AVX2) == []
    assert hardware.bf16_units_in(XEON_SPR) == ["avx512_bf16", "amx_bf16"]
    assert hardware.bf16_units_in(GRAVITON3) == ["bf16"]
    assert hardware.bf16_units_in("model name\t: Intel(R) bf16-ready marketing name\n") == []


def test_warning_only_for_bfloat16_on_a_cpu_without_units(monkeypatch, caplog):
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: AMD_AVX2)
    hardware.warn_if_slow_dtype("float32")
    hardware.warn_if_slow_dtype("bfloat16", on_cpu=False)
    assert not caplog.records
    hardware.warn_if_slow_dtype("bfloat16")
    assert "no bf16 units" in caplog.text




def test_cpu_profiles_and_units_from_cpuinfo_text():
    """The serving table's profiles (serving/auto_rule.py) from mocked /proc/cpuinfo text."""
    cases = ((AMD_AVX2, "x86_64", hardware.PROFILE_AVX2, False, False),
             (AVX512_VNNI, "x86_64", hardware.PROFILE_AVX512, False, True),
             (XEON_SPR, "x86_64", hardware.PROFILE_AMX, True, False),
             (XEON_SPR.replace("amx_tile", "amx_int8"), "x86_64", hardware.PROFILE_AMX, True, True),
             (GRAVITON3, "aarch64", hardware.PROFILE_ARM, True, True),
             ("", "x86_64", hardware.PROFILE_AVX2, False, False))
    for text, machine, profile, bf16, int8 in cases:
        flags = hardware.cpu_flags(text)
        assert hardware.cpu_profile(flags, machine) == profile, text
        assert hardware.has_bf16_units(flags) is bf16, text
        assert hardware.has_int8_dot(flags) is int8, text
    assert hardware.cpu_profile(frozenset(), "arm64") == hardware.PROFILE_ARM
    assert "x86-avx512-bf16" in hardware.describe_cpu(hardware.cpu_flags(XEON_SPR))
    assert "run natively" in hardware.describe_cpu(hardware.cpu_flags(XEON_SPR))
    assert "emulated in float32" in hardware.describe_cpu(hardware.cpu_flags(AMD_AVX2))


def test_an_unknown_cpu_is_described_so_and_not_warned_about(monkeypatch, caplog):
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: None)
    assert hardware.cpu_bf16_units() is None and not hardware.cpu_known()
    assert "unknown" in hardware.describe_cpu()
    hardware.warn_if_slow_dtype("bfloat16")
    assert not caplog.records


def test_has_nvidia_driver_lives_in_hardware_and_keeps_its_old_name():
    from albert_tf.runtime import quiet_startup

    assert quiet_startup.has_nvidia_driver is hardware.has_nvidia_driver
