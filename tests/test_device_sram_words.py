"""A chip's SRAM written as a designer names it — ``sram_mib = 32``, the chip's shared MiB — is a key neither device
file form has, and difflib finds none near it, so the refusal named only the section's keys. It now names the key
that states it and its unit, per array (an accelerator designer's trial, 2026-12-06)."""

from __future__ import annotations

import pytest
from device_files import device_message, device_toml, scalesim_chip_cfg, write_file


def _toml(tmp_path, key: str):
    text = device_toml(name="chip", arrays=4, rows=128, cols=128, clock_mhz=1200, sram_kib=8192, hbm_gib=64,
                       hbm_gbps=1600, intra_gbps=400)
    return write_file(tmp_path, "chip.toml", text.replace("sram_kib_per_array = 8192\n", f"{key} = 32\n"))


@pytest.mark.parametrize("key", ["sram_mib", "sram_mb", "shared_sram_mib"])
def test_a_toml_s_sram_in_mib_is_told_sram_kib_per_array(tmp_path, key):
    line = device_message(_toml(tmp_path, key))
    assert f"field 'memory.{key}'" in line and "unknown key" in line
    assert "sram_kib_per_array, KiB beside each array" in line and "÷ the arrays" in line
    assert "\n" not in line


def test_a_cfg_s_sram_in_mib_is_told_its_sramszkb_keys(tmp_path):
    text = scalesim_chip_cfg(arrays=4, size=128).replace("hbm_gib = 16\n", "hbm_gib = 16\nsram_mib = 32\n")
    line = device_message(write_file(tmp_path, "chip.cfg", text))
    assert "field 'memory.sram_mib'" in line and "IfmapSramSzkB, FilterSramSzkB and OfmapSramSzkB" in line
    assert "\n" not in line


def test_a_plain_stranger_still_gets_no_sram_hint(tmp_path):
    assert "SRAM" not in device_message(_toml(tmp_path, "bogus"))
