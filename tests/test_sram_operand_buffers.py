"""The SRAM warning of a device file checks what it says it checks: each of the energy model's operand buffers
against one fold of the array (rows × cols words at 2 bytes: 64 × 64 × 2 B = 8 KiB here), the three stated sizes
where a TOML's ``sram_kib_per_array`` or a ``.cfg``'s ``SramSzkB`` keys state them, a third of one figure
otherwise.

Failed before the fix: it checked a third of the three stated buffers' sum, so ``[1, 1, 1000]`` (two 1 KiB
buffers, each an eighth of a fold) said nothing."""

import pytest
from device_files import device_toml

from archsim.devices.device_file import implausible_figures, load_device

CFG = """[architecture_presets]
ArrayHeight:    64
ArrayWidth:     64
IfmapSramSzkB:    {0}
FilterSramSzkB:   {1}
OfmapSramSzkB:    {2}
Dataflow : ws

[archsim]
ClockGHz = 1.0

[device]
name = chip
arrays = 4

[memory]
hbm_gib = 16
hbm_gbps = 400

[links]
intra_gbps = 100
"""


def _lines(tmp_path, sram: str) -> tuple[str, ...]:
    path = tmp_path / "chip.toml"
    path.write_text(device_toml(name="chip", arrays=4, rows=64, cols=64, clock_mhz=1000, sram_kib=sram, hbm_gib=16,
                                hbm_gbps=400, intra_gbps=100), encoding="utf-8")
    return implausible_figures(load_device(path))


@pytest.mark.parametrize(("sram", "short", "fix"), [
    # × 1024 would be 1,002 MiB, above any SRAM: the fold's size is the fix
    ("[1, 1, 1000]", ["sram_kib_per_array[0] = 1 KiB", "sram_kib_per_array[1] = 1 KiB"],
     "8 KiB or more in each buffer: raise sram_kib_per_array[0], sram_kib_per_array[1]"),
    # × 1024 is 205 MiB, a real SRAM: the MiB slip is the fix
    ("[100, 100, 5]", ["sram_kib_per_array[2] = 5 KiB"],
     "sram_kib_per_array[0]: 102400, sram_kib_per_array[1]: 102400, sram_kib_per_array[2]: 5120"),
])
def test_a_stated_buffer_below_one_fold_is_warned_naming_it(sram, short, fix, tmp_path):
    (line,) = _lines(tmp_path, sram)
    assert all(name in line for name in short) and "an operand buffer as stated" in line
    assert "less than one fold of a 64 × 64 array (8 KiB at 2 bytes)" in line and fix in line


def test_stated_buffers_each_holding_a_fold_say_nothing(tmp_path):
    assert _lines(tmp_path, "[8, 8, 8]") == ()


@pytest.mark.parametrize(("kib", "warned"), [(24, False), (23, True)])
def test_one_figure_is_judged_by_its_third_in_whole_kib(kib, warned, tmp_path):
    """24 KiB: three 8 KiB buffers, each a fold; 23 KiB: three of 7 KiB (whole KiB), each short of it."""
    lines = _lines(tmp_path, str(kib))
    assert bool(lines) == warned
    if warned:
        assert "a third of it in whole KiB, an operand buffer (7 KiB)," in lines[0] and f"write {kib * 1024} KiB" in lines[0]


def test_a_cfgs_sram_keys_are_each_checked(tmp_path):
    path = tmp_path / "chip.cfg"
    path.write_text(CFG.format(1, 1000, 1), encoding="utf-8")
    (line,) = implausible_figures(load_device(path))
    assert "IfmapSramSzkB = 1 KiB, OfmapSramSzkB = 1 KiB, an operand buffer as stated" in line
    assert "FilterSramSzkB = 1000" not in line and "raise IfmapSramSzkB, OfmapSramSzkB" in line
