"""An analytic design sweep states no DRAM bandwidth: that engine reads none (its DRAM words are compulsory, and
``energy`` prints no bandwidth under it), so its rows' ``bandwidth_words_per_cycle`` is empty, spec.json's designs
record none, and the report's Pareto table and labels name none. Failed before: every analytic row said 10 words/cycle
(the ``bandwidths`` axis' unused default, which the spec refuses under that engine). A cache entry written before
reads as today's row; a cycle-engine row keeps its words."""

from __future__ import annotations

import json
import math

import pandas as pd

from archsim.report.pareto import front_table, point_label
from archsim.sweep.results import cached_rows
from archsim.sweep.runner import run_sweep
from archsim.sweep.spec import load_spec

LAYER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
         "fc1, 1, 1, 1, 1, 32, 16, 1,\n")


def _analytic(folder) -> pd.DataFrame:
    """An analytic design sweep (two SRAM sizes at one clock) of one small layer on an 8 × 8 array."""
    (folder / "fc.csv").write_text(LAYER)
    spec = folder / "spec.toml"
    spec.write_text('[sweep]\nname = "bw"\nnetworks = ["fc.csv"]\narrays = ["8x8"]\nbatches = [2]\nprocessors = [1]\n'
                    'methods = ["gpipe"]\nsram_kb = [8, 32]\nclocks_ghz = [1.0]\n')
    run_sweep(load_spec(spec), folder / "res")
    return pd.read_csv(folder / "res" / "results.csv")


def test_analytic_rows_state_no_bandwidth(tmp_path) -> None:
    rows = _analytic(tmp_path)
    assert len(rows) == 2 and rows["bandwidth_words_per_cycle"].isna().all()
    record = json.loads((tmp_path / "res" / "spec.json").read_text())
    assert [design["bandwidth"] for design in record["designs"]] == [None, None]
    table = front_table(rows, "fc")
    assert "bandwidth_words_per_cycle" not in table.columns and len(table) >= 1
    assert not point_label(rows).str.contains("DRAM|nan").any()


def test_an_older_cache_entry_reads_as_todays_row(tmp_path) -> None:
    """An analytic entry holding the old 10 gives an empty cell, not recomputed (its edited energy survives); a
    cycle-engine entry keeps its words."""
    _analytic(tmp_path)
    entries = sorted((tmp_path / "res" / "cache").glob("*.json"))
    assert len(entries) == 2
    for entry in entries:
        data = json.loads(entry.read_text())
        data["rows"] = [{**row, "bandwidth_words_per_cycle": 10, "energy_pj": 123.0} for row in data["rows"]]
        entry.write_text(json.dumps(data))
        assert [math.isnan(row["bandwidth_words_per_cycle"]) for row in cached_rows(entry)] == [True]
    rows = _analytic(tmp_path)  # the same spec again: every unit from its cache entry
    assert rows["bandwidth_words_per_cycle"].isna().all() and (rows["energy_pj"] == 123.0).all()
    data = json.loads(entries[0].read_text())
    data["unit"]["engine"] = "cycle"
    entries[0].write_text(json.dumps(data))
    assert [row["bandwidth_words_per_cycle"] for row in cached_rows(entries[0])] == [10]
