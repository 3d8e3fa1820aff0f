"""A runs file's per-row expert capacity: the ``moe_expert_capacity_factor`` (empty: dropless) and
``moe_pad_expert_input_to_capacity`` (true/false, empty: false) columns, read as ``ep`` and ``etp`` are — each row
prices as one ``train`` iteration with the same flags, ``--runs`` refuses the flags, a bad cell is refused in one line
naming file, line and column — and the output rows carry them where a row sets a factor."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
MIXTRAL = str(ROOT / "tests" / "data" / "hf_configs" / "mixtral_8x7b.json")
DENSE = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
LAYOUT = ["--cluster", CLUSTER, "--seq", "1024", "--dtype", "bf16"]
HEADER = "tp,pp,dp,micro_batch,global_batch,ep,moe_expert_capacity_factor,moe_pad_expert_input_to_capacity"


def _runs(tmp_path, *rows: str, header: str = HEADER) -> str:
    path = tmp_path / "runs.csv"
    path.write_text("\n".join((header, *rows)) + "\n")
    return str(path)


def _rows(capsys, runs: str, model: str = MIXTRAL, *flags: str) -> list[dict]:
    assert main(["train", model, *LAYOUT, "--runs", runs, *flags, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_a_padded_row_is_slower_and_heavier_than_the_same_row_dropless(tmp_path, capsys):
    rows = _rows(capsys, _runs(tmp_path, "1,4,4,1,16,4,,", "1,4,4,1,16,4,1.25,true", "1,4,4,1,16,4,0.5,"))
    dropless, padded, dropped = rows
    assert padded["predicted_seconds"] > dropless["predicted_seconds"] > dropped["predicted_seconds"]
    # Mixtral (h 4096, f 14336, E 8, k 2) at seq 1024, TP 1: 2048 rows a rank, 256 an expert; padded to
    # ⌈256 · 1.25⌉ = 320, 512 rows more, each keeping 2h + 6f + 2h bytes, in the one rerun layer (full recompute)
    extra = 8 * (math.ceil(256 * 1.25) - 256) * (4 * 4096 + 6 * 14336)
    assert padded["peak_memory_gib"] - dropless["peak_memory_gib"] == pytest.approx(extra / 2**30, rel=1e-9)
    assert [(r["moe_expert_capacity_factor"], r["moe_pad_expert_input_to_capacity"]) for r in rows] == \
        [(None, False), (1.25, True), (0.5, False)]


def test_each_row_prices_as_one_iteration_with_the_same_flags(tmp_path, capsys):
    rows = _rows(capsys, _runs(tmp_path, "1,4,4,1,16,4,1.25,1", "1,4,4,1,16,4,,0"))
    seconds = []
    for flags in (["--moe-expert-capacity-factor", "1.25", "--moe-pad-expert-input-to-capacity"], []):
        assert main(["train", MIXTRAL, *LAYOUT, "--pp", "4", "--dp", "4", "--ep", "4", "--global-batch", "16",
                     *flags, "--format", "json"]) == 0
        seconds.append(json.loads(capsys.readouterr().out)["meta"]["iteration_seconds"])
    assert [r["predicted_seconds"] for r in rows] == seconds and seconds[0] > seconds[1]


def test_rows_without_a_factor_carry_no_capacity_columns(tmp_path, capsys):
    rows = _rows(capsys, _runs(tmp_path, "1,4,4,1,16,4,,false"))
    assert "moe_expert_capacity_factor" not in rows[0] and "moe_pad_expert_input_to_capacity" not in rows[0]


def test_a_dataframe_reads_its_columns_as_the_file(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"tp": [1, 1], "pp": [4, 4], "dp": [4, 4], "micro_batch": [1, 1], "global_batch": [16, 16],
                          "ep": [4, 4], "moe_expert_capacity_factor": [float("nan"), 1.25],
                          "moe_pad_expert_input_to_capacity": [False, True]})
    rows = archsim.train_runs(MIXTRAL, runs=frame, cluster=CLUSTER, seq=1024, dtype="bf16")
    from_file = archsim.train_runs(MIXTRAL, runs=_runs(tmp_path, "1,4,4,1,16,4,,", "1,4,4,1,16,4,1.25,true"),
                                   cluster=CLUSTER, seq=1024, dtype="bf16")
    assert [r["predicted_seconds"] for r in rows] == [r["predicted_seconds"] for r in from_file]
    assert rows[1]["predicted_seconds"] > rows[0]["predicted_seconds"]


@pytest.mark.parametrize("cells,column,match", [
    ("x,", "moe_expert_capacity_factor", "expected a positive number, got 'x'"),
    ("0,", "moe_expert_capacity_factor", "expected a positive number"),
    ("-1,", "moe_expert_capacity_factor", "expected a positive number"),
    ("inf,", "moe_expert_capacity_factor", "expected a finite positive number"),
    ("1.25,maybe", "moe_pad_expert_input_to_capacity", "expected true or false"),
    (",true", "moe_pad_expert_input_to_capacity", "give moe_expert_capacity_factor=C too"),
])
def test_a_bad_cell_is_refused_naming_file_line_and_column(tmp_path, capsys, cells, column, match):
    runs = _runs(tmp_path, "1,4,4,1,16,4,,", f"1,4,4,1,16,4,{cells}")  # the bad row second: nothing runs
    assert main(["train", MIXTRAL, *LAYOUT, "--runs", runs]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert runs in err and f"line 3, field '{column}'" in err and match in err


def test_a_factor_on_a_dense_model_is_refused_on_its_row(tmp_path, capsys):
    runs = _runs(tmp_path, "1,1,1,1,8,1.25", header="tp,pp,dp,micro_batch,global_batch,moe_expert_capacity_factor")
    assert main(["train", DENSE, "--cluster", CLUSTER, "--runs", runs]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "line 2, field 'moe_expert_capacity_factor'" in err and "is dense" in err


@pytest.mark.parametrize("flags", [["--moe-expert-capacity-factor", "1.25"],
                                   ["--moe-expert-capacity-factor", "1.25", "--moe-pad-expert-input-to-capacity"],
                                   ["--moe-pad-expert-input-to-capacity"]])
def test_runs_refuses_the_flags_as_it_refuses_ep(tmp_path, capsys, flags):
    runs = _runs(tmp_path, "1,4,4,1,16,4,,")
    assert main(["train", MIXTRAL, *LAYOUT, "--runs", runs, *flags]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"{flags[0]}" in err and "give them as its columns, or drop --runs" in err


def test_the_reader_keeps_the_cells():
    from archsim.training.measured import CsvText
    from archsim.training.runs import read_runs

    rows = read_runs(CsvText("runs", f"{HEADER}\n1,1,8,1,8,1,,\n1,1,8,1,8,1,2,TRUE\n1,1,8,1,8,1,0.75,no\n"))
    assert [(r.moe_expert_capacity_factor, r.moe_pad_expert_input_to_capacity) for r in rows] == \
        [(None, False), (2.0, True), (0.75, False)]
    with pytest.raises(InputError, match="line 2, field 'moe_expert_capacity_factor': expected a finite positive"):
        read_runs(CsvText("runs", f"{HEADER}\n1,1,8,1,8,1,1e999,\n"))
