"""``archsim energy NETWORK --config chip.toml``: a device TOML's arrays, SRAM sizes and ``[energy]`` section priced
through the readers ``train`` prices it with (:func:`archsim.devices.device_file.load_device`,
:func:`archsim.energy.file_energy.read_cfg_energy`), so a TOML and a ``.cfg`` stating one chip give one ``energy`` table.

Failed before the fix: every test here but the refusals' wording — ``energy --config chip.toml`` was refused
("a TOML file: --config reads a SCALE-Sim .cfg"), its ``[energy]`` figures reachable only through a ``.cfg``."""

import json

import pytest

from archsim.cli import main
from tests.chip_pair import ENERGY_ZEROS, chip_cfg, chip_toml, energy_body

# one chip twice (as tests/test_device_toml_energy.py states it): 8 output-stationary 64 × 64 arrays (4 per core)
# at 1.2 GHz, SRAMs 512/512/256 KiB, static power 3 W per chip
CHIP_CFG = chip_cfg(static_watts=3)

CHIP_TOML = chip_toml(static_watts=3)

ZEROS = (*ENERGY_ZEROS, "pe_leakage_mw", "sram_leakage_mw_per_kib")

# two fully connected layers, 8 → 4 → 2, small enough to count their MACs by hand
TWO_FC = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type,
fc1, 1, 1, 1, 1, 8, 4, 1, 0, fc,
fc2, 1, 1, 1, 1, 4, 2, 1, 0, fc,
"""


def _run(tmp_path, capsys, name: str, text: str, *flags: str) -> tuple[int, str, str]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "two_fc.csv").write_text(TWO_FC, encoding="utf-8")
    code = main(["energy", str(tmp_path / "two_fc.csv"), "--config", str(tmp_path / name), "--batch", "2",
                 "--format", "json", *flags])
    out, err = capsys.readouterr()
    return code, out, err


def _energy_json(tmp_path, capsys, name: str, text: str, *flags: str) -> dict:
    code, out, err = _run(tmp_path, capsys, name, text, *flags)
    assert code == 0, err
    return json.loads(out)


def notes(stderr: str) -> str:
    """``stderr`` without the one-time note of numba compiling the cycle engine: whichever of two runs finds the
    cache cold prints it (a fresh clone's first ``--engine cycle`` run), so it says nothing of the file read."""
    return "".join(line for line in stderr.splitlines(keepends=True) if "compiling the cycle-level engine" not in line)


@pytest.mark.parametrize("mac_pj", [1.0, 2.5])
def test_energy_on_a_device_toml_is_its_macs_times_its_mac_pj(mac_pj, tmp_path, capsys):
    """Reference, by hand: batch 2 through fc1 (8 → 4) and fc2 (4 → 2) is F = 2·8·4 + 2·4·2 = 80 MACs, the weight
    gradients G the same 80, the data gradient D of fc2 alone (fc1's input needs none) 2·4·2 = 16: 176 MACs ×
    the TOML's mac_pj, every other per-event figure (leakage too) zero; plus the chip's 3 W of static_watts over its
    seconds, which energy prices on a device of several arrays as train does (since 2026-12-05)."""
    energy = {"mac_pj": mac_pj, **dict.fromkeys(ZEROS, 0)}
    result = _energy_json(tmp_path, capsys, "chip.toml", CHIP_TOML.format(lanes="", energy=energy_body(energy, True)))
    total = result["rows"][-1]
    assert total["macs"] == 176
    assert total["leakage_pj"] == pytest.approx(3 * result["meta"]["iteration_seconds"] * 1e12, rel=1e-12)
    assert total["energy_pj"] - total["leakage_pj"] == pytest.approx(176 * mac_pj, rel=1e-9)


@pytest.mark.parametrize("energy", [{"mac_pj": 0.7, "dram_read_pj": 30.0, "ifmap_read_pj": 1.5},
                                    {"table": "horowitz45", "filter_write_pj": 4.0},
                                    {}])
@pytest.mark.parametrize("flags", [(), ("--dtype", "fp16", "--engine", "cycle"), ("--array", "16x16")])
def test_a_device_toml_and_cfg_of_one_chip_give_one_energy_table(energy, flags, tmp_path, capsys):
    """The TOML and the .cfg stating the same chip and ``[energy]``: the same rows and meta, and the same notes
    (its 8 arrays, its static power) but for the file's name, the TOML without ``--dtype`` priced at train's fp16
    as the .cfg is with ``--dtype fp16`` (a .cfg's default is SCALE-Sim's int8 word)."""
    fp16 = () if "--dtype" in flags else ("--dtype", "fp16")
    cfg = _run(tmp_path, capsys, "chip.cfg", CHIP_CFG.format(energy=energy_body(energy, False)), *flags, *fp16)
    toml = _run(tmp_path, capsys, "chip.toml", CHIP_TOML.format(lanes="", energy=energy_body(energy, True)), *flags)
    assert cfg[0] == toml[0] == 0, cfg[2] + toml[2]
    assert json.loads(toml[1]) == json.loads(cfg[1])
    assert notes(toml[2]).replace("chip.toml", "chip.cfg") == notes(cfg[2])
    assert "device of 8 arrays" in toml[2]
    assert "static_watts" not in toml[2]  # priced now over the chip's seconds (test_energy_chip_static.py), unnoted
    assert "add --dtype fp16" not in toml[2]  # it prices what train charges


def test_energy_prices_a_device_toml_at_trains_dtype_unless_told(tmp_path, capsys):
    """Without --dtype a device TOML is priced at fp16, train's default (the file states no dtype): 2-byte words,
    so every memory part (SRAM, DRAM) is twice --dtype int8's on the same word counts (docs/cli.md), the MACs the
    same count; --dtype int8 and --element-bytes 1 still price SCALE-Sim's 1-byte word."""
    text = CHIP_TOML.format(lanes="", energy="")
    default = _energy_json(tmp_path, capsys, "chip.toml", text)
    int8 = _energy_json(tmp_path, capsys, "chip.toml", text, "--dtype", "int8")
    assert _energy_json(tmp_path, capsys, "chip.toml", text, "--element-bytes", "1") == int8
    assert (default["meta"]["dtype"], default["meta"]["element_bytes"]) == ("fp16", 2)
    assert (int8["meta"]["dtype"], int8["meta"]["element_bytes"]) == ("int8", 1)
    wide, narrow = default["rows"][-1], int8["rows"][-1]
    assert wide["macs"] == narrow["macs"] and wide["dram_read_pj"] > 0
    for part in ("dram_read_pj", "dram_write_pj", "ifmap_sram_read_pj", "filter_sram_read_pj", "ofmap_sram_write_pj"):
        assert wide[part] == pytest.approx(2 * narrow[part], rel=1e-12), part


def test_a_device_tomls_energy_figures_are_read(tmp_path, capsys):
    """The TOML's [energy] figures price the table, not the default table's (the mac_pj column follows it)."""
    plain = _energy_json(tmp_path, capsys, "plain.toml", CHIP_TOML.format(lanes="", energy=""))
    priced = _energy_json(tmp_path, capsys, "chip.toml",
                          CHIP_TOML.format(lanes="", energy=energy_body({"mac_pj": 7.0}, True)))
    assert priced["rows"][-1]["mac_pj"] == pytest.approx(176 * 7.0)
    assert plain["rows"][-1]["mac_pj"] != priced["rows"][-1]["mac_pj"]
    assert priced["meta"]["sram_kb"] == "512,512,256" and priced["meta"]["array"] == "64x64"
    assert priced["meta"]["dataflow"] == "os" and priced["meta"]["clock_ghz"] == pytest.approx(1.2)


def test_a_device_toml_of_two_array_kinds_is_refused_in_one_line(tmp_path, capsys):
    """Arrays and fp32 lanes: two kinds, of which energy would price one unsaid."""
    text = CHIP_TOML.format(lanes="lanes = 16\nlane_rows = 8\nlane_cols = 8\n", energy="")
    code, out, err = _run(tmp_path, capsys, "chip.toml", text)
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim energy: error:")
    assert "two array kinds" in lines[0] and "lanes" in lines[0]


def test_a_tile_timed_device_toml_is_refused_in_one_line(tmp_path, capsys):
    """gemm = "tiles": no array the energy model prices (train prices such a chip at board power × time)."""
    text = CHIP_TOML.format(lanes="", energy="").replace("static_watts = 3", 'gemm = "tiles"')
    text = text.replace("clock_mhz = 1200", "clock_mhz = 1200\n\n[compute.peak_tflops]\nfp16 = 100")
    code, out, err = _run(tmp_path, capsys, "chip.toml", text)
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim energy: error:")
    assert 'gemm = "tiles"' in lines[0] and "board power" in lines[0]


# the shipped TPU-like file's [compute] and [memory] by hand: 128 × 128 ws arrays at 1050 MHz, 4096 KiB of SRAM
# per array in three whole-KiB operand buffers of ⌊4096 / 3⌋ = 1365, at train's fp16
TPU_FLAGS = ["--array", "128x128", "--dataflow", "ws", "--clock-ghz", "1.05", "--sram-kb", "1365,1365,1365",
             "--dtype", "fp16"]


@pytest.mark.parametrize("command", ["cost", "energy"])
def test_a_shipped_device_toml_prices_as_its_flags_by_hand(command, capsys):
    """Peer reference: cost refused tpu_v4_like.toml and named the flags that state its array; cost and energy now
    read the TOML through one reader (:func:`archsim.device_toml.device_toml_array`), and with no [energy] in the
    file print the rows and meta those flags, written by hand, print."""
    from pathlib import Path

    toml = str(Path(__file__).parents[1] / "configs" / "devices" / "tpu_v4_like.toml")
    assert main([command, "layerpipe_sample", *TPU_FLAGS, "--format", "json"]) == 0
    by_flags = json.loads(capsys.readouterr().out)
    assert main([command, "layerpipe_sample", "--config", toml, "--dtype", "fp16", "--format", "json"]) == 0
    captured = capsys.readouterr()
    read = json.loads(captured.out)
    assert [{k: row[k] for k in by_flags["rows"][0]} for row in read["rows"]] == by_flags["rows"]  # + the chip's
    # energy's: the file's 8 arrays' time and area (test_energy_trial_chip.py, test_energy_chip_static.py)
    chip_time = ("iteration_seconds", "average_power_w", "pe_array_mm2", "sram_mm2", "area_mm2", "array_area_mm2",
                 "per_array")
    assert {k: v for k, v in read["meta"].items() if not k.startswith("chip_") and k not in chip_time} == {
        k: v for k, v in by_flags["meta"].items() if k not in chip_time}
    if command == "energy":  # all 8 arrays' PEs and SRAMs
        assert read["meta"]["area_mm2"] == pytest.approx(8 * by_flags["meta"]["area_mm2"], rel=1e-12)
    assert "device of 8 arrays" in captured.err
