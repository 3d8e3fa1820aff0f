"""A device sweep's ``array_sides`` fills the file's PE budget with as many side² arrays as fit, the count
rounded down (docs/formats.md, "Device sweep spec"): a side whose square does not divide the budget quietly
used part of the chip (300 on the TPU-v4-like file's 8 × 128² = 131,072 PEs: one 300² array, 69%). Each such
side is now warned of once, with the fraction of the PEs it uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_robustness import write

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.sweep import load_spec
from archsim.sweep.device_arrays import unused_pe_lines

ROOT = Path(__file__).resolve().parents[1]
SPEC = '[sweep]\nmodel = "gpt2"\ndevice = "tpu_v4_like"\narray_sides = [128, 300, 100]\nchips = [4]\nglobal_batch = 16\n'
BUDGET = 8 * 128 * 128  # configs/devices/tpu_v4_like.toml: [compute] arrays = 8 of 128 × 128


def test_the_spec_keeps_its_sides_and_each_wasting_side_is_one_line(tmp_path):
    spec = load_spec(write(tmp_path / "s.toml", SPEC))
    assert spec.array_sides == (128, 300, 100)
    lines = unused_pe_lines(load_device(spec.setup.device_path), spec.array_sides)
    assert len(lines) == 2  # 128² divides the budget; 300² (1 array) and 100² (13 arrays) do not
    three, one = lines
    assert three.startswith("array_sides 300: 90,000 of the device's 131,072 PEs used")
    assert f"({90_000 / BUDGET:.1%}: 1 array of 300 × 300" in three and "68.7%" in three
    assert one.startswith("array_sides 100: 130,000 of") and f"({130_000 / BUDGET:.1%}: 13 arrays" in one


def test_array_shapes_are_not_judged_against_the_budget(tmp_path):
    """An explicit COUNTxROWSxCOLS chooses its own PEs: no sides, so no line."""
    spec = load_spec(write(tmp_path / "s.toml", SPEC.replace("array_sides = [128, 300, 100]",
                                                             'array_shapes = ["1x300x300"]')))
    assert spec.array_sides == ()


@pytest.mark.long
def test_the_sweep_warns_once_per_side_that_wastes_pes(tmp_path, capsys):
    spec = write(tmp_path / "s.toml", SPEC.replace("[128, 300, 100]", "[128, 300]"))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("archsim sweep: warning: array_sides 300: ") == 1 and "68.7%" in err
    assert "array_sides 128" not in err
