"""``train --runs`` rows and ``--sweep`` points on array devices carry ``energy_breakdown_j`` as ``train``'s meta does
for that configuration alone: the object in JSON, one ``part: J, …`` cell in csv (train's csv's own text), left out
of the table; a GPU cluster's rows, priced at board power, have no parts."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
SLICE = str(ROOT / "configs" / "clusters" / "tpu_v4_like_slice.toml")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
SETTINGS = ["--dtype", "bf16", "--attention", "standard"]
LAYOUT = ["--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16", "--micro-batch", "2"]


def _out(args: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["train", MODEL, *args])
    assert code == 0, err.getvalue()
    return out.getvalue()


def _first_csv_row(text: str) -> dict:
    return next(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def alone() -> tuple[dict, str]:
    """train's own meta (JSON) and csv cell for TP 2 × PP 2 × DP 2 on the slice."""
    meta = json.loads(_out(["--cluster", SLICE, *LAYOUT, *SETTINGS, "--format", "json"]))["meta"]
    cell = _first_csv_row(_out(["--cluster", SLICE, *LAYOUT, *SETTINGS, "--format", "csv"]))["energy_breakdown_j"]
    return meta, cell


def test_a_sweep_point_has_train_s_parts(alone):
    meta, cell = alone
    assert set(meta["energy_breakdown_j"]) >= {"mac", "sram", "dram", "leakage"}
    assert sum(meta["energy_breakdown_j"].values()) == pytest.approx(meta["energy_j"], rel=1e-12)  # their sum
    sweep = ["--cluster", SLICE, *LAYOUT, *SETTINGS, "--sweep", "tp=3,2"]  # TP 3 cannot run: the first row fails
    rows = json.loads(_out([*sweep, "--format", "json"]))["rows"]
    assert rows[0]["energy_breakdown_j"] is None and rows[0]["error"]
    assert rows[1]["energy_breakdown_j"] == meta["energy_breakdown_j"] and rows[1]["energy_j"] == meta["energy_j"]
    printed = list(csv.DictReader(io.StringIO(_out([*sweep, "--format", "csv"]))))
    assert printed[1]["energy_breakdown_j"] == cell and printed[0]["energy_breakdown_j"] == ""
    header = list(printed[0])
    assert header.index("energy_breakdown_j") == header.index("energy_j") + 1  # beside it, the failed row first
    assert "energy_breakdown_j" not in _out([*sweep, "--format", "table"])
    result = archsim.train_sweep(MODEL, cluster=SLICE, pp=2, dp=2, global_batch=16, micro_batch=2, dtype="bf16",
                                 attention="standard", sweep={"tp": [2]})
    assert result.to_dict()["rows"][0]["energy_breakdown_j"] == meta["energy_breakdown_j"]
    assert result.to_frame()["energy_breakdown_j"][0] == cell


def test_a_runs_row_has_train_s_parts(alone, tmp_path):
    meta, cell = alone
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,2,2,1,8\n2,2,2,2,16\n")
    args = ["--cluster", SLICE, "--runs", str(runs), *SETTINGS]
    assert json.loads(_out([*args, "--format", "json"]))["rows"][1]["energy_breakdown_j"] == meta["energy_breakdown_j"]
    assert list(csv.DictReader(io.StringIO(_out([*args, "--format", "csv"]))))[1]["energy_breakdown_j"] == cell
    table = _out(args)
    assert "energy_breakdown_j" not in table and "{'mac'" not in table  # until 2026-12-05 the dict's Python text
    assert archsim.train_runs(MODEL, runs=str(runs), cluster=SLICE, dtype="bf16",
                              attention="standard").to_frame()["energy_breakdown_j"][1] == cell


def test_board_power_rows_have_no_parts():
    rows = json.loads(_out(["--cluster", NODE, "--tp", "8", "--global-batch", "4", "--sweep", "micro_batch=1,2",
                            "--format", "json"]))["rows"]
    assert all("energy_breakdown_j" not in row for row in rows)
