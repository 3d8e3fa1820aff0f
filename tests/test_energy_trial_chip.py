"""An accelerator architect's energy trial on a chip of 4 arrays (tests/device_files.py's ``trial_array_chip_toml``):
``energy --config`` timed one array where cost timed the chip; fp8 GEMMs priced as 16-bit words; fp32 GEMMs on
lanes. Each reference is a hand count (words × pJ per word, MACs × pJ per MAC) or cost's own documented column."""

from __future__ import annotations

import json
import math

import pytest
from device_files import trial_array_chip_toml, write_file

from archsim.cli import main


def _json(capsys, flags: list[str]) -> dict:
    assert main([*flags, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("microbatches", [1, 2])
def test_energy_times_a_chip_of_4_arrays_as_costs_chip_seconds(capsys, tmp_path, microbatches):
    """Defect: `energy --config chip.toml` gave `iteration_seconds` of one array (its TOTAL cycles / clock) and the
    watts over it, where `cost --config` gives the chip's `chip_seconds` for the same layers. The chip runs the
    same accesses on 4 arrays, so the joules stay and the seconds are cost's: M micro-batches × the batch / M's."""
    path = write_file(tmp_path, "mychip.toml", trial_array_chip_toml())
    energy = _json(capsys, ["energy", "layerpipe_sample", "--config", str(path), "--batch", "8",
                            "--microbatches", str(microbatches)])
    cost = _json(capsys, ["cost", "layerpipe_sample", "--config", str(path), "--batch", str(8 // microbatches)])
    chip = cost["rows"][-1]["chip_seconds"] * microbatches
    meta, total = energy["meta"], energy["rows"][-1]
    assert meta["iteration_seconds"] == pytest.approx(chip, rel=1e-12)
    assert meta["iteration_seconds"] < total["cycles"] / 1e9 / 2  # not one array's: 4 arrays share the folds
    assert meta["average_power_w"] == pytest.approx(total["energy_pj"] * 1e-12 / chip, rel=1e-12)
    assert meta["chip_arrays"] == 4


def _gemm_parts(tmp_path, fp8: bool, mac_pj: object = None) -> dict[str, float]:
    """Picojoules by part of one 128 × 128 × 128 GEMM (one fold of the chip's 128 × 128 ws array) in bf16 training
    with its operands fp8 (``fp8``) or bf16, on the trial's chip stating ``mac_pj`` (None: the default table's)."""
    from archsim.lowering import Gemm, TrainingOp
    from archsim.training.energy import (
        ENERGY_PARTS,
        device_array,
        device_energies,
        device_fp8_energies,
        load_priced_device,
        ops_energy_parts,
    )

    device = load_priced_device(write_file(tmp_path, "mychip.toml", trial_array_chip_toml(mac_pj=mac_pj)))
    array = device_array(device, "bf16")
    energies = device_energies(device, array)
    op = TrainingOp("linear", "F", (Gemm(128, 128, 128),), gemm_dtype="fp8" if fp8 else "")
    low = device_fp8_energies(device, array, energies)
    return dict(zip(ENERGY_PARTS, ops_energy_parts([op], array, energies, low), strict=True))


WORDS = 128 * 128  # each operand's and the result's words: one fold reads A and B once, writes and reads out once
MACS = 128 ** 3
# Horowitz ISSCC 2014 (configs/energy/horowitz45.toml): a 64-bit access of the 682 KiB operand SRAM (2048 KiB / 3),
# log-log between 20 pJ at 32 KiB and 100 pJ at 1 MiB; DRAM 20.3125 pJ a bit
SRAM_BIT = 20 * (682 / 32) ** (math.log(5) / math.log(32)) / 64
DRAM_BIT = 20.3125


def test_an_fp8_gemm_reads_8_bit_operands_and_multiplies_at_an_fp8_mac(tmp_path):
    """Defect: under `train --fp8` a linear layer's GEMMs were priced as 16-bit operands, SRAM, DRAM and MAC alike,
    so fp8 cost the casts' energy and saved none. Now A and B are 8-bit words (SRAM reads and writes, DRAM reads),
    the result stays bf16 (Transformer Engine writes the higher precision), and the MAC is an 8-bit multiply
    accumulated in fp32: 0.2 + 0.1 (the table's int8 MAC) − 0.1 (its int32 add) + 0.9 (an fp32 add) = 1.1 pJ."""
    fp8, bf16 = _gemm_parts(tmp_path, True), _gemm_parts(tmp_path, False)
    # ifmap and filter: a read and a fill write each; the result: a write and a read
    assert bf16["sram"] == pytest.approx(WORDS * 6 * 16 * SRAM_BIT, rel=1e-9)
    assert fp8["sram"] == pytest.approx(WORDS * (4 * 8 + 2 * 16) * SRAM_BIT, rel=1e-9)
    assert bf16["dram"] == pytest.approx(WORDS * 3 * 16 * DRAM_BIT, rel=1e-12)
    assert fp8["dram"] == pytest.approx(WORDS * (2 * 8 + 16) * DRAM_BIT, rel=1e-12)
    assert (fp8["mac"], bf16["mac"]) == (pytest.approx(MACS * 1.1), pytest.approx(MACS * 2.0))
    # registers: an A word and a partial sum a MAC + B loaded once; A and B at 8 bits under fp8, partial sums at the
    # fp32 accumulator's 32 (until 2026-12-05 every move at bf16's 16 bits, fp8 or not)
    assert bf16["register"] == pytest.approx(((MACS + WORDS) * 16 + MACS * 32) * 0.009, rel=1e-12)
    assert fp8["register"] == pytest.approx(((MACS + WORDS) * 8 + MACS * 32) * 0.009, rel=1e-12)


def test_a_device_files_mac_pj_is_its_fp8_macs_figure_too(tmp_path):
    """The trial's chip states `[energy] mac_pj = 0.3`: the chip's own MAC figure, at every width (no rule scales a
    stated figure), so its fp8 GEMMs' MAC joules are bf16's while their operand words are 8-bit."""
    fp8, bf16 = _gemm_parts(tmp_path, True, 0.3), _gemm_parts(tmp_path, False, 0.3)
    assert fp8["mac"] == bf16["mac"] == pytest.approx(MACS * 0.3)
    assert fp8["sram"] == pytest.approx(WORDS * (4 * 8 + 2 * 16) * SRAM_BIT, rel=1e-9)


@pytest.mark.parametrize(("lanes", "rows", "cols"), [(4096, None, None), (64, 8, 8)])
def test_fp32_gemms_on_lanes_read_operands_as_the_lanes_tile_reuses_them(tmp_path, lanes, rows, cols):
    """The trial's fp32 GEMMs on `lanes = 4096` read both operands from SRAM every MAC. That is the tile the file
    states: lanes are `lanes` output-stationary arrays of `lane_rows` × `lane_cols` (default 1 × 1), which the time
    model folds GEMMs over and the energy model prices, one object (`Device.gemm_units`). An r × c tile reads A once
    per c columns and B once per r rows: a 64³ GEMM reads M·K·⌈N/c⌉ + K·N·⌈M/r⌉ words, fills M·K + K·N from DRAM,
    writes and reads back M·N results; on 8 × 8 tiles that is 81,920 32-bit words, on single lanes 540,672."""
    from archsim.lowering import Gemm, TrainingOp
    from archsim.training.energy import (
        ENERGY_PARTS,
        device_array,
        device_energies,
        load_priced_device,
        ops_energy_parts,
    )

    text = trial_array_chip_toml(lanes=lanes, lane_rows=rows, lane_cols=cols)
    device = load_priced_device(write_file(tmp_path, "lanes.toml", text))
    array = device_array(device, "fp32")
    assert (array.rows, array.cols, array.dataflow) == (rows or 1, cols or 1, "os")
    parts = dict(zip(ENERGY_PARTS, ops_energy_parts([TrainingOp("linear", "F", (Gemm(64, 64, 64),))], array,
                                              device_energies(device, array)), strict=True))
    r, c = rows or 1, cols or 1
    words = 64 * 64 * math.ceil(64 / c) + 64 * 64 * math.ceil(64 / r) + 2 * 64 * 64 + 2 * 64 * 64
    assert parts["sram"] == pytest.approx(words * 32 * SRAM_BIT, rel=1e-9)
