"""A device sweep's key written as another's word for it — ``gpus`` (the cluster file's and the results' word),
``processors``, an array sweep's ``bandwidths`` or ``sram_kb`` — is told the device sweep's key and its unit, in one
line. Failed before: difflib found no key near them, so the refusal named none (an accelerator designer's trial)."""

import pytest
from test_robustness import clean_error, write

BASE = 'model = "gpt2"\ndevice = "tpu_v4_like"\nglobal_batch = 16\n'


@pytest.mark.parametrize(("extra", "written", "meant", "unit"), [
    ("gpus = [4]\n", "gpus", "chips", "chips the model trains on"),
    ("chips = [4]\nprocessors = [4]\n", "processors", "chips", "whole devices"),
    ("chips = [4]\nbandwidths = [600]\n", "bandwidths", "hbm_gbps", "GB/s"),
    ("chips = [4]\nsram_kb = [4096]\n", "sram_kb", "sram_kib_per_array", "the three together"),
    # a designer's words for the HBM axis and the clock in MHz (2026-12-06's accelerator trial)
    ("chips = [4]\nhbm_bandwidth = [1600]\n", "hbm_bandwidth", "hbm_gbps", "GB/s"),
    ("chips = [4]\nbandwidth = [1600]\n", "bandwidth", "hbm_gbps", "GB/s"),
    ("chips = [4]\nclock_mhz = [1200]\n", "clock_mhz", "clocks_ghz", "GHz"),
    ("chips = [4]\nsram_mib = [32]\n", "sram_mib", "sram_kib_per_array", "KiB"),
])
def test_another_words_key_is_told_the_device_sweeps(tmp_path, capsys, extra, written, meant, unit):
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + extra)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert f"field '{written}'" in line and f"(did you mean {meant!r}?" in line and unit in line, line
    assert not (tmp_path / "out").exists()


def test_a_typo_still_gets_difflibs_hint_and_a_stranger_none(tmp_path, capsys):
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + "chips = [4]\nhbm_gbs = [600]\n")
    assert "(did you mean 'hbm_gbps'?)" in clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    spec = write(tmp_path / "t.toml", "[sweep]\n" + BASE + "chips = [4]\nbogus = 1\n")
    assert "did you mean" not in clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
