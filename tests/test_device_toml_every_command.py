"""One device model, one reading: ``cost``, ``energy`` and ``gemm`` read a device TOML given as ``--config``
through one reader (:func:`archsim.energy_run.device_toml_array`, train's device reader beneath it), with the same
notes on stderr; ``archsim.cost`` and ``archsim.gemm`` likewise.

Failed before the fix: ``cost --config chip.toml`` and ``gemm --config chip.toml`` were refused ("--config reads a
SCALE-Sim .cfg (a device TOML is for train, search and energy)") and printed the flags that would do the same;
``sparse`` named flags it does not take."""

from __future__ import annotations

import json

import pytest
from device_files import device_toml

from archsim.cli import main

# 4 cores × 2 arrays of 64 × 64 (ws) at 1.2 GHz, 3072 KiB of SRAM per array: three operand buffers of 1024 KiB
CHIP = device_toml(name="MyChip", arrays=8, arrays_per_core=2, rows=64, cols=64, dataflow="ws", clock_mhz=1200,
                   sram_kib=3072, hbm_gib=96, hbm_gbps=2000, intra_gbps=400, links=4)
# the same array by hand, as the old refusal named it
BY_HAND = ["--array", "64x64", "--dataflow", "ws", "--clock-ghz", "1.2", "--sram-kb", "1024,1024,1024"]


def _json(capsys, argv: list[str]) -> tuple[dict, str]:
    assert main(argv) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


@pytest.mark.parametrize("dtype", [[], ["--dtype", "fp16"]])
def test_cost_on_a_device_toml_costs_its_array_as_the_flags_by_hand(tmp_path, capsys, dtype):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    by_hand, _ = _json(capsys, ["cost", "resnet50", *BY_HAND, *dtype, "--energy", "--format", "json"])
    read, err = _json(capsys, ["cost", "resnet50", "--config", str(chip), *dtype, "--energy", "--format", "json"])
    per_array = list(by_hand["rows"][0])
    assert [{k: row[k] for k in per_array} for row in read["rows"]] == by_hand["rows"]
    assert f"{chip} is a device of 8 arrays" in err
    assert ("add --dtype fp16" in err) == (not dtype)


def test_cost_and_energy_say_the_same_notes_of_what_they_read(tmp_path, capsys):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP.replace('name = "MyChip"', 'name = "MyChip"\nboard_watts = 300'), encoding="utf-8")
    notes = {}
    for command in ("cost", "energy"):
        _, err = _json(capsys, [command, "resnet50", "--config", str(chip), "--format", "json"])
        notes[command] = [line.split(": note: ", 1)[1] for line in err.splitlines() if ": note: " in line]
    assert any("board_watts" in line for line in notes["cost"])  # the unread key, said by the one reader
    assert any("device of 8 arrays" in line for line in notes["cost"])
    assert notes["cost"] == notes["energy"]


def test_gemm_on_a_device_toml_is_its_array_by_hand(tmp_path, capsys):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    shape = ["gemm", "--m", "300", "--k", "200", "--n", "100", "--engine", "cycle", "--format", "json"]
    by_hand, _ = _json(capsys, [*shape, *BY_HAND])
    read, err = _json(capsys, [*shape, "--config", str(chip)])
    assert read == by_hand
    assert "device of 8 arrays" in err


def test_the_library_reads_a_device_toml_as_the_commands_do(tmp_path):
    import archsim

    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    by_hand = archsim.cost("layerpipe_sample", array="64x64", dataflow="ws", clock_ghz=1.2, sram_kb="1024,1024,1024",
                           dtype="fp16")
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        read = archsim.cost("layerpipe_sample", config=chip, dtype="fp16")
    assert read.table[list(by_hand.table.columns)].equals(by_hand.table)
    gemm_by_hand = archsim.gemm(m=300, k=200, n=100, array="64x64", dataflow="ws", clock_ghz=1.2)
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        gemm_read = archsim.gemm(m=300, k=200, n=100, config=str(chip))
    assert gemm_read.to_dict() == gemm_by_hand.to_dict()


def test_sparse_refuses_a_device_toml_saying_why_in_one_line(tmp_path, capsys):
    """A device TOML states no [sparsity] section; the refusal named --array and --dataflow, which sparse lacks."""
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    assert main(["sparse", "docs/examples/pruned_convs.csv", "--config", str(chip)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "[sparsity]" in err and "--array" not in err
