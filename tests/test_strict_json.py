"""Every JSON archsim writes is RFC 8259 JSON: NaN and infinities are ``null`` (archsim/json_text.py).

Python's ``json`` reads ``NaN``; JavaScript's ``JSON.parse``, jq, Go and Rust refuse it. These tests parse with
``parse_constant`` raising, as those readers do, on the commands whose results hold a "no value" cell (every
command's JSON is parsed so in test_output_columns.py), and check the sweep cache reads its nulls back as NaN.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archsim.cli import main
from archsim.json_text import dumps, strict

ROOT = Path(__file__).resolve().parents[1]
H200 = str(ROOT / "configs" / "clusters" / "h200_1gpu.toml")  # the H200 has no default price
TINY = '[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 7\nhidden = 96\nheads = 6\nvocab = 500\nseq = 64\n'


def _refuse(constant: str) -> float:
    raise ValueError(f"not JSON: {constant}")


def strict_load(text: str) -> object:
    """``text`` read as a strict JSON parser reads it: ``NaN``, ``Infinity`` and ``-Infinity`` refused."""
    return json.loads(text, parse_constant=_refuse)


def test_the_strict_reader_refuses_what_python_writes():
    with pytest.raises(ValueError, match="NaN"):
        strict_load(json.dumps([math.nan]))
    with pytest.raises(ValueError, match="Infinity"):
        strict_load(json.dumps({"a": -math.inf}))


def test_strict_nulls_every_non_finite_float_at_any_depth():
    value = {"a": math.nan, "b": [1.5, math.inf, (np.float32("nan"), -np.float64("inf"))],
             "c": {"d": {"e": np.float64(2.5), "f": np.int64(7), "g": np.bool_(True)}},
             "h": np.array([1.0, np.nan]), "i": "NaN", "j": None, "k": True, "l": 3}
    assert strict(value) == {"a": None, "b": [1.5, None, [None, None]],
                             "c": {"d": {"e": 2.5, "f": 7, "g": True}},
                             "h": [1.0, None], "i": "NaN", "j": None, "k": True, "l": 3}
    out = strict(value)
    assert type(out["c"]["d"]["f"]) is int and type(out["c"]["d"]["g"]) is bool and type(out["c"]["d"]["e"]) is float


def test_dumps_writes_null_and_refuses_a_nan_it_cannot_reach():
    assert dumps({"x": [math.nan, -math.inf, 1.0, np.float32(0.5)]}) == '{"x": [null, null, 1.0, 0.5]}'
    assert dumps({"b": 1, "a": math.inf}, sort_keys=True, indent=1) == '{\n "a": null,\n "b": 1\n}'
    with pytest.raises(ValueError):  # a value strict() does not walk into, turned into NaN by ``default``
        dumps({"s": frozenset([1])}, default=lambda _: [math.nan])


def _json_out(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    out = strict_load(text)
    assert isinstance(out, dict)
    return out


def test_search_without_a_split_or_a_price_is_null(tmp_path, capsys):
    """One H200: PP is 1 (no split: uneven_gain and its summaries have no value) and the H200 has no default
    price (cost_usd has none); both were NaN in the JSON, now null, and csv still leaves them empty."""
    model = tmp_path / "tiny.toml"
    model.write_text(TINY)
    argv = ["search", str(model), "--cluster", H200, "--global-batch", "8", "--refine", "0"]
    out = _json_out(capsys, argv)
    assert out["rows"] and all(r["pp"] == 1 for r in out["rows"])
    assert all(r["uneven_gain"] is None and r["cost_usd"] is None for r in out["rows"])
    assert all(isinstance(r["iteration_seconds"], float) and r["iteration_seconds"] > 0 for r in out["rows"])
    assert out["meta"]["uneven_gain_first_row"] is None and out["meta"]["uneven_gain_max"] is None


def test_train_sweep_rows_that_do_not_fit_are_null(capsys):
    """``train --sweep`` over a TP that does not divide the heads: that row has no time (NaN before)."""
    argv = ["train", str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"), "--cluster",
            str(ROOT / "configs" / "clusters" / "a100_node.toml"), "--global-batch", "8", "--sweep", "tp=2,3"]
    rows = _json_out(capsys, argv)["rows"]
    assert [r["tp"] for r in rows] == [2, 3]
    assert isinstance(rows[0]["iteration_seconds"], float) and rows[1]["iteration_seconds"] is None


def test_the_sweep_cache_reads_its_nulls_back_as_nan(tmp_path):
    """A design sweep without a clock has no seconds (NaN): its cache file holds null, and a second run, which
    assembles results.csv from the cache, gives the same frame and the same file as the first."""
    from archsim.sweep import load_spec, run_sweep

    spec_file = tmp_path / "spec.toml"
    spec_file.write_text('[sweep]\nname = "noclock"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16"]\n'
                         'batches = [16]\nprocessors = [2]\nmethods = ["layerpipe"]\nsram_kb = [64]\n')
    out = tmp_path / "out"
    first = run_sweep(load_spec(spec_file), out, progress=False)
    written = (out / "results.csv").read_text()
    (cache,) = (out / "cache").glob("*.json")
    rows = strict_load(cache.read_text())["rows"]
    assert rows and all(r["clock_ghz"] is None and r["iteration_seconds"] is None for r in rows)
    again = run_sweep(load_spec(spec_file), out, progress=False)
    assert first["clock_ghz"].isna().all() and again["clock_ghz"].dtype == np.float64
    pd.testing.assert_frame_equal(first, again)
    assert (out / "results.csv").read_text() == written
