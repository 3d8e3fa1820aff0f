"""The table results' reprs are one line, as TrainResult's: a notebook shows a cell's value by its repr, and
``archsim.cost``'s, ``archsim.gemm``'s and ``archsim.plan``'s printed the whole DataFrame over many lines
(each test failed on the code before the one-line repr). ``print(result)`` still shows every row. The figures
are checked against what the command prints for the same flags (the API promises the command's numbers)."""

from __future__ import annotations

import warnings

from api_parity_helpers import cli_json
from test_docs import ROOT

import archsim

TINY = ["docs/examples/tiny_resnet.csv", "--array", "32x32", "--batch", "4", "--clock-ghz", "1"]


def one_line(text: str, name: str) -> None:
    assert "\n" not in text and len(text) < 200, text
    assert text.startswith(f"{name}(") and text.endswith(")"), text


def test_a_cost_result_repr_is_one_line_with_the_total_row(monkeypatch, capsys):
    """tiny_resnet.csv has 6 layers (its file's 6 rows): 6 rows; the TOTAL row's cycles and seconds are
    ``archsim cost``'s own TOTAL row for the same flags."""
    monkeypatch.chdir(ROOT)
    printed = cli_json(["cost", *TINY], capsys)["rows"][-1]
    result = archsim.cost(TINY[0], array="32x32", batch=4, clock_ghz=1.0)
    text = repr(result)
    one_line(text, "CostResult")
    assert "tiny_resnet: 6 rows × " in text, text
    assert f"total {printed['total_cycles']} cycles, {printed['total_seconds']:.4g} s" in text, text
    assert str(result) == str(result.table) and str(result).count("\n") >= 6  # print shows the whole table


def test_a_gemm_table_result_repr_names_its_size_and_first_columns(monkeypatch):
    """One GEMM is one row, its first columns m, k and n (docs/cli.md's gemm columns)."""
    monkeypatch.chdir(ROOT)
    result = archsim.gemm(m=64, k=128, n=96, array="16x16")
    text = repr(result)
    one_line(text, "TableResult")
    assert f"1 row × {len(result.columns)} columns: m, k, n, …" in text, text


def test_a_plan_result_repr_is_one_line_with_its_makespan(monkeypatch, capsys):
    """SPP's plan names its method and the makespan ``archsim plan`` prints for the same flags; a baseline's
    (gpipe) its one row's makespan, which the command prints as that row."""
    monkeypatch.chdir(ROOT)
    flags = ["layerpipe_sample", "--cluster", "configs/clusters/testbed_1080ti.toml", "--microbatches", "4",
             "--batch", "16"]
    for method in ("spp", "gpipe"):
        printed = cli_json(["plan", *flags, "--method", method], capsys)
        seconds = printed["meta"]["makespan_seconds"] if method == "spp" else printed["rows"][0]["makespan_seconds"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = archsim.plan("layerpipe_sample", cluster="configs/clusters/testbed_1080ti.toml", microbatches=4,
                                  batch="16", method=method)
        text = repr(result)
        one_line(text, "PlanResult")
        assert f"layerpipe_sample: {len(printed['rows'])} row" in text, text
        assert f", {method} makespan {seconds:.4g} s" in text, text
