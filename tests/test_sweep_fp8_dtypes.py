"""An array sweep's ``dtypes`` axis takes fp8 (since 2026-12-06), as ``archsim cost --dtype fp8`` does: 1-byte words,
the .cfg's ``[macs_per_pe]`` fp8 rate, each MAC at the energy table's fp8 figure; a device .cfg stating no fp8 rate
is refused in cost's one line. Until then the axis refused fp8.

References: ``archsim cost --config chip.cfg --dtype fp8 --energy`` on the same layers and batch (one processor,
one micro-batch: a row's cycles are the network's F, G, D summed, its dynamic energy the layers'), and SCALE-Sim's
os cycles of the rate-2 GEMMs counted by hand (test_schedule_mac_rate's)."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
from test_cfg_mac_rates import CFG
from test_schedule_mac_rate import _hand_makespan
from test_sweep_bppsa_mac_rate import _folder, _sweep

from archsim.cli import main

FP8_RATE = "[macs_per_pe]\nfp8 = 2\n"
DTYPES = 'dtypes = ["fp16", "fp8"]'


def _cost_total(tmp_path, capsys) -> dict[str, str]:
    """The TOTAL row of cost --dtype fp8 --energy on the sweep's network, .cfg and batch."""
    capsys.readouterr()
    assert main(["cost", str(tmp_path / "net.csv"), "--config", str(tmp_path / "chip.cfg"), "--dtype", "fp8",
                 "--batch", "16", "--energy", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    return next(row for row in rows if row["layer"] == "TOTAL")


def test_an_fp8_row_costs_what_cost_dtype_fp8_costs(tmp_path, capsys):
    """The fp8 row: cost's cycles (the file's rate 2, by hand too) and energy in 1-byte words; fp16 at rate 1."""
    rows, _ = _sweep(tmp_path, capsys, FP8_RATE, DTYPES)
    by = {row["dtype"]: row for row in rows}
    total = _cost_total(tmp_path, capsys)
    assert float(by["fp8"]["iteration_cycles"]) == float(total["total_cycles"]) == _hand_makespan(2)
    assert float(by["fp16"]["iteration_cycles"]) == _hand_makespan(1)
    assert by["fp8"]["element_bytes"] == "1" and float(by["fp8"]["leakage_pj"]) == 0
    assert float(by["fp8"]["energy_pj"]) == float(total["energy_pj"])


def test_the_fp8_mac_is_the_energy_table_s_fp8_figure(tmp_path, capsys):
    """Same MAC count as int8 (1-byte words both), each MAC at fp8_mac_pj rather than the 1-byte int MAC."""
    from archsim.energy import load_table
    from archsim.energy.table import fp8_mac_pj

    rows, _ = _sweep(tmp_path, capsys, FP8_RATE, 'dtypes = ["int8", "fp8"]')
    by = {row["dtype"]: row for row in rows}
    table = load_table("horowitz45")
    int8_mac, _, _ = table.at_width(1, "test")
    fp8_mac = fp8_mac_pj(table)
    assert fp8_mac is not None and fp8_mac != int8_mac
    macs = float(by["int8"]["mac_pj"]) / int8_mac
    assert abs(float(by["fp8"]["mac_pj"]) - macs * fp8_mac) <= 1e-9 * macs * fp8_mac
    assert by["int8"]["sram_pj"] == by["fp8"]["sram_pj"] and by["int8"]["dram_pj"] == by["fp8"]["dram_pj"]


def test_the_report_recosts_an_fp8_row_at_its_rate(tmp_path, capsys):
    """The report's re-cost of the fp8 row: the rate spec.json recorded, cost's cycles, its command --dtype fp8."""
    from archsim.array.costing import cost_network
    from archsim.sweep.report import sweep_array
    from archsim.workload import load_network

    rows, _ = _sweep(tmp_path, capsys, FP8_RATE, DTYPES)
    record = json.loads((tmp_path / "out" / "spec.json").read_text())
    network = load_network(str(tmp_path / "net.csv"))
    (row,) = [row for row in rows if row["dtype"] == "fp8"]
    array, _, flags = sweep_array(record, pd.Series(row))
    costs = cost_network(network, array, 16)
    recosted = float(costs[["F_cycles", "G_cycles", "D_cycles"]].fillna(0).to_numpy().sum())
    assert recosted == float(_cost_total(tmp_path, capsys)["total_cycles"]) == float(row["iteration_cycles"])
    assert flags.endswith(" --dtype fp8") and array.element_bytes == 1


def test_a_device_cfg_without_an_fp8_rate_is_refused_in_one_line(tmp_path, capsys):
    """As cost --dtype fp8 refuses it, naming the file, and nothing written."""
    spec = _folder(tmp_path, "", DTYPES)
    capsys.readouterr()
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the device's fp8 rate" in err and "chip.cfg states none" in err
    assert not (tmp_path / "out").exists()


def test_two_one_byte_names_beside_fp8_are_still_refused(tmp_path, capsys):
    """fp16 and bf16 (same rows) stay refused; int8 beside fp8 runs (different MACs)."""
    (tmp_path / "chip.cfg").write_text(CFG.format(rates=FP8_RATE, device=""))
    spec = _folder(tmp_path, FP8_RATE, 'dtypes = ["fp16", "bf16", "fp8"]')
    capsys.readouterr()
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "fp16 and bf16 are both 2-byte elements" in capsys.readouterr().err


def test_an_energy_table_without_an_fp8_mac_is_refused_before_any_row(tmp_path, capsys):
    """An energy_tables entry with no fp8 MAC figure (no 4-byte vector add): cost's one line, nothing written."""
    from pathlib import Path

    table = (Path(__file__).parents[1] / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
    (tmp_path / "t.toml").write_text(table.replace('"4" = 0.9\n', "", 1).replace('"horowitz45"', '"nofp8"', 1))
    spec = _folder(tmp_path, FP8_RATE, f'{DTYPES}\nenergy_tables = ["t.toml"]')
    capsys.readouterr()
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "energy table 'nofp8' has no fp8 MAC figure" in err and "'dtypes'" in err
    assert not (tmp_path / "out").exists()
