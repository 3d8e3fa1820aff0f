"""One default dtype for a device TOML: ``cost`` (``--energy`` too), ``energy`` and ``gemm``, and ``archsim.cost``,
``archsim.iteration_energy`` and ``archsim.gemm``, price a device TOML given no ``--dtype`` (nor
``--element-bytes``) at train's fp16 (the file states no dtype; train charges the chip at fp16), from one rule
(:func:`archsim.device_toml.device_toml_dtype`); a SCALE-Sim ``.cfg`` keeps SCALE-Sim's int8 word, and a given
``--dtype`` wins.

Failed before: ``energy`` priced the TOML at fp16 while ``cost --energy`` and ``gemm`` priced it at int8 (the
shipped TPU-like file's resnet50: ``energy`` 2.285 J, ``cost --energy`` 0.8695 J for the same iteration, before
partial sums were priced at the accumulator's 32 bits)."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main
from tests.device_files import device_toml

# 2 arrays of 16 × 16 (ws) at 1 GHz, 96 KiB of SRAM per array (three 32 KiB operand buffers)
CHIP = device_toml(name="Small", arrays=2, rows=16, cols=16, dataflow="ws", clock_mhz=1000, sram_kib=96, hbm_gib=8,
                   hbm_gbps=1000, intra_gbps=100)
BY_HAND = ["--array", "16x16", "--dataflow", "ws", "--clock-ghz", "1", "--sram-kb", "32,32,32"]
GEMM = ["gemm", "--m", "64", "--k", "40", "--n", "48", "--format", "json"]


def _json(capsys, argv: list[str]) -> tuple[dict, str]:
    assert main(argv) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    return json.loads(out), err


@pytest.fixture
def chip(tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text(CHIP, encoding="utf-8")
    return str(path)


def test_cost_energy_prices_a_device_toml_as_energy_does(chip, capsys):
    """``cost --energy`` without --dtype: the array by hand at --dtype fp16 (2-byte words), and its TOTAL energy
    the one ``energy`` prints for the same iteration; no note asking for --dtype fp16."""
    read, err = _json(capsys, ["cost", "layerpipe_sample", "--config", chip, "--energy", "--format", "json"])
    by_hand, _ = _json(capsys, ["cost", "layerpipe_sample", *BY_HAND, "--dtype", "fp16", "--energy", "--format", "json"])
    energy, _ = _json(capsys, ["energy", "layerpipe_sample", "--config", chip, "--format", "json"])
    assert (read["meta"]["dtype"], read["meta"]["element_bytes"]) == ("fp16", 2)
    per_array = list(by_hand["rows"][0])
    assert [{k: row[k] for k in per_array} for row in read["rows"]] == by_hand["rows"]
    assert read["rows"][-1]["energy_pj"] == pytest.approx(energy["rows"][-1]["energy_pj"], rel=1e-12)
    assert "add --dtype fp16" not in err


def test_gemm_prices_a_device_toml_at_fp16_words(chip, capsys):
    """``gemm`` without --dtype: 2-byte words, so its SRAM traffic in bytes is twice its word counts, and its
    one-array columns are the flags' by hand with --dtype fp16; the file's chip of 2 arrays adds ``chip_seconds``
    (the flags by hand state no chip). Its rule, train's op timing, by hand: ⌈40/16⌉ · ⌈48/16⌉ = 9 folds of
    2·16 + 16 + 64 − 2 = 110 cycles (SCALE-Sim's ws fold) in ⌈9/2⌉ = 5 waves, less SCALE-Sim's last-cycle index:
    549 cycles, 549 ns at 1 GHz, beyond the (64·40 + 40·48 + 64·48) · 2 B = 15,104 B at 1000 GB/s (15 ns)."""
    read, err = _json(capsys, [*GEMM, "--config", chip])
    by_hand, _ = _json(capsys, [*GEMM, *BY_HAND[:4], "--dtype", "fp16", "--clock-ghz", "1"])
    assert (read["meta"]["dtype"], read["meta"]["element_bytes"]) == ("fp16", 2)
    row = read["rows"][0]
    assert row["sram_read_bytes"] == 2 * (row["ifmap_sram_reads"] + row["filter_sram_reads"])
    assert row["sram_write_bytes"] == 2 * row["ofmap_sram_writes"]
    assert [{k: v for k, v in one.items() if k != "chip_seconds"} for one in read["rows"]] == by_hand["rows"]
    assert row["chip_seconds"] == pytest.approx(549e-9, rel=1e-12)
    assert "add --dtype fp16" not in err


@pytest.mark.parametrize("command", [["cost", "layerpipe_sample", "--energy"], GEMM[:-2]])
def test_a_given_dtype_wins(chip, capsys, command):
    """--dtype int8 and --element-bytes 1 still price SCALE-Sim's 1-byte word on the TOML."""
    int8, _ = _json(capsys, [*command, "--config", chip, "--dtype", "int8", "--format", "json"])
    one, _ = _json(capsys, [*command, "--config", chip, "--element-bytes", "1", "--format", "json"])
    assert int8["meta"]["element_bytes"] == one["meta"]["element_bytes"] == 1
    assert int8["rows"] == one["rows"]


def test_a_scalesim_cfg_keeps_int8(capsys):
    """A SCALE-Sim .cfg device file is priced at its SCALE-Sim word, int8, as before, with the note naming fp16."""
    cfg = "configs/devices/scalesim_32x32_device.cfg"
    read, err = _json(capsys, ["cost", "layerpipe_sample", "--config", cfg, "--energy", "--format", "json"])
    assert (read["meta"]["dtype"], read["meta"]["element_bytes"]) == ("int8", 1)
    assert "add --dtype fp16" in err
    gemm, _ = _json(capsys, [*GEMM, "--config", cfg])
    assert "dtype" not in gemm["meta"]  # no width given: SCALE-Sim's word, no bytes columns


def test_the_library_takes_the_same_default(chip, recwarn):
    """``archsim.cost``, ``archsim.iteration_energy`` and ``archsim.gemm`` on the TOML: fp16 without ``dtype``,
    ``dtype='int8'`` still int8."""
    import archsim

    assert archsim.cost("layerpipe_sample", config=chip, energy=True).to_dict()["meta"]["dtype"] == "fp16"
    assert archsim.iteration_energy("layerpipe_sample", config=chip).to_dict()["meta"]["dtype"] == "fp16"
    assert archsim.gemm(m=64, k=40, n=48, config=chip).to_dict()["meta"]["element_bytes"] == 2
    assert archsim.cost("layerpipe_sample", config=chip, dtype="int8").to_dict()["meta"]["element_bytes"] == 1
    assert archsim.gemm(m=64, k=40, n=48, config=chip, dtype="int8").to_dict()["meta"]["element_bytes"] == 1
    assert not any("to price what train charges" in str(w.message) for w in recwarn.list)
