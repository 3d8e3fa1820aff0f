"""An accelerator architect's energy trial on a chip of 4 arrays (tests/device_files.py's ``trial_array_chip_toml``):
``energy --config`` timed one array where cost timed the chip; fp8 GEMMs priced as 16-bit words; fp32 GEMMs on
lanes. Each reference is a hand count (words × pJ per word, MACs × pJ per MAC) or cost's own documented column."""

from __future__ import annotations

import json

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
