"""Every API result that its command prints as rows has ``to_frame()``: the command's ``--format csv`` rows as a
DataFrame (docs/api.md, "Results as DataFrames"). The reference is the CSV the command prints for the same input,
read back by pandas, the documented contract: the same columns in the same order, the same rows in the same order,
each column of the same kind and each value equal, floats to the last digits (the CSV writes them at full precision:
``repr``), an empty text cell as the empty cell pandas reads as NaN."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest
from api_parity_helpers import MODEL, NODE
from test_docs import ROOT

import archsim
from archsim import cli

SPARSE_CFG = "configs/arrays/scalesim_sparsity_128x128_ws.cfg"
PRUNED = "docs/examples/pruned_convs.csv"
TESTBED = "configs/clusters/testbed_1080ti.toml"
ON_GPUS = "configs/clusters/testbed_1080ti_gpu.toml"
RUNS = "configs/runs/vtrain_h1024_l24.csv"  # measured runs of MODEL: the meta's MAPE is a number

# name → (the command's argv, the function, its positional arguments, its keywords), the same input both ways
CASES = {
    "cost": (["cost", "layerpipe_sample", "--array", "32x32", "--batch", "8"],
             archsim.cost, ("layerpipe_sample",), {"array": "32x32", "batch": 8}),
    "cost, cycle engine, clock, energy": (
        ["cost", "docs/examples/tiny_resnet.csv", "--engine", "cycle", "--bandwidth", "4", "--batch", "2",
         "--clock-ghz", "1", "--energy"],
        archsim.cost, ("docs/examples/tiny_resnet.csv",),
        {"engine": "cycle", "bandwidth": 4, "batch": 2, "clock_ghz": 1, "energy": True}),
    "gemm": (["gemm", "--m", "64", "--k", "128", "--n", "96", "--array", "16x16", "--engine", "cycle"],
             archsim.gemm, (), {"m": 64, "k": 128, "n": 96, "array": "16x16", "engine": "cycle"}),
    "sparse": (["sparse", PRUNED, "--config", SPARSE_CFG, "--batch", "2", "--energy"],
               archsim.sparse, (PRUNED,), {"config": SPARSE_CFG, "batch": 2, "energy": True}),
    "sparse, partition": (["sparse", PRUNED, "--config", SPARSE_CFG, "--processors", "3", "--method", "gpipe"],
                          archsim.sparse, (PRUNED,), {"config": SPARSE_CFG, "processors": 3, "method": "gpipe"}),
    "energy": (["energy", "layerpipe_sample", "--array", "16x16", "--batch", "8", "--microbatches", "2",
                "--clock-ghz", "1.2"],
               archsim.iteration_energy, ("layerpipe_sample",),
               {"array": "16x16", "batch": 8, "microbatches": 2, "clock_ghz": 1.2}),
    "plan, spp": (["plan", "layerpipe_sample", "--cluster", TESTBED, "--microbatches", "4"],
                  archsim.plan, ("layerpipe_sample",), {"cluster": TESTBED, "microbatches": 4}),
    "plan, pipedream": (["plan", "layerpipe_sample", "--cluster", ON_GPUS, "--microbatches", "4", "--dtype", "fp32",
                         "--method", "pipedream"],
                        archsim.plan, ("layerpipe_sample",),
                        {"cluster": ON_GPUS, "microbatches": 4, "dtype": "fp32", "method": "pipedream"}),
    "validate-gpu": (["validate-gpu", "--csv", "tests/data/neusight_kernels/linear.csv"],
                     archsim.validate_gpu, (), {"csv": "tests/data/neusight_kernels/linear.csv"}),
    "cluster": (["cluster", "--policy", "jigsaw", "--jobs", "12", "--gpus", "16", "--unit-seconds", "0"],
                archsim.cluster_jobs, (), {"policy": "jigsaw", "jobs": 12, "gpus": 16, "unit_seconds": 0}),
    "bppsa rnn": (["bppsa", "rnn", "--seq-len", "10,30", "--processors", "64,256"],
                  archsim.bppsa_rnn, (), {"seq_len": [10, 30], "processors": [64, 256]}),
    "bppsa pruned-vgg11": (["bppsa", "pruned-vgg11", "--width-divisor", "16"],
                           archsim.bppsa_pruned_vgg11, (), {"width_divisor": 16}),
    "bppsa network": (["bppsa", "network", "docs/examples/bppsa_chain.csv", "--up-levels", "1"],
                      archsim.bppsa_network, ("docs/examples/bppsa_chain.csv",), {"up_levels": 1}),
    "search": (["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--top", "3", "--schedule", "1f1b",
                "--max-micro-batch", "2"],
               archsim.search, (MODEL,),
               {"cluster": NODE, "global_batch": 16, "top": 3, "schedule": ["1f1b"], "max_micro_batch": 2}),
    # schedule's result was the timeline's ops before 2026-12-03, and multistream's (no timeline) raised
    "schedule, ooo-pipe2": (["schedule", "ffnn8", "--policy", "ooo-pipe2", "--processors", "2", "--unit-costs"],
                            archsim.schedule, ("ffnn8",), {"policy": "ooo-pipe2", "processors": 2, "unit_costs": True}),
    "schedule, multistream": (["schedule", "ffnn8", "--policy", "multistream", "--streams", "joint"],
                              archsim.schedule, ("ffnn8",), {"policy": "multistream", "streams": "joint"}),
    "schedule, per-stage": (["schedule", "--stages", "4", "--stage-times", "1,1,1", "--microbatches", "8",
                             "--policy", "zb-h1"],
                            archsim.schedule, (), {"stages": 4, "stage_times": "1,1,1", "microbatches": 8,
                                                   "policy": "zb-h1"}),
    # train_runs returned plain dicts, no to_frame, before 2026-12-03
    "train --runs": (["train", MODEL, "--cluster", NODE, "--runs", RUNS, "--attention", "standard"],
                     archsim.train_runs, (MODEL,), {"runs": RUNS, "cluster": NODE, "attention": "standard"}),
    # a grid with a point that cannot run (TP 3 of 16 heads): its empty cells as the CSV's; no function before 2026-12-05
    "train --sweep": (["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--sweep", "tp=1,3",
                       "--sweep", "micro_batch=1,2"],
                      archsim.train_sweep, (MODEL,), {"cluster": NODE, "global_batch": 16,
                                                      "sweep": {"tp": [1, 3], "micro_batch": [1, 2]}}),
}


def printed_csv(argv: list[str], capsys) -> pd.DataFrame:
    """The command's ``--format csv`` output as pandas reads it."""
    capsys.readouterr()
    assert cli.main([*argv, "--format", "csv"]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def kind(column: pd.Series) -> str:
    """A column's kind as a CSV can carry it: number, flag or text (a column of no value reads as numbers)."""
    if pd.api.types.is_bool_dtype(column):
        return "flag"
    if pd.api.types.is_numeric_dtype(column) or column.isna().all():
        return "number"
    return "text"


def assert_same_frame(frame: pd.DataFrame, printed: pd.DataFrame) -> None:
    """``frame`` is ``printed`` as the CSV carries it: columns, their order, row order, kinds and values."""
    assert list(frame.columns) == list(printed.columns)
    assert len(frame) == len(printed) and list(frame.index) == list(range(len(frame)))
    for name in printed.columns:
        got, want = frame[name], printed[name]
        if not pd.api.types.is_numeric_dtype(got):  # an empty text cell reads as NaN
            got = got.astype(object).where(got != "", None)
        if kind(got) == "text" and kind(want) == "number":  # text of digits (cluster's seeds, "0"): the CSV
            got = pd.to_numeric(got)                         # cannot tell it from a number, pandas reads one
        assert kind(got) == kind(want), (name, got.dtype, want.dtype)
        if kind(want) == "number":  # full precision both ways: any difference is the parser's last bit
            np.testing.assert_allclose(got.to_numpy(dtype=float), want.to_numpy(dtype=float), rtol=1e-14, atol=0,
                                       equal_nan=True, err_msg=name)
        else:
            assert [None if pd.isna(v) else v for v in got] == [None if pd.isna(v) else v for v in want], name


@pytest.mark.parametrize("case", sorted(CASES))
def test_to_frame_is_the_commands_csv(case, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv, function, arguments, keywords = CASES[case]
    printed = printed_csv(argv, capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes the command prints on stderr: the parity tests' own
        result = function(*arguments, **keywords)
    assert len(printed) > 0
    assert_same_frame(result.to_frame(), printed)


def test_cost_frame_ends_with_the_total_row_the_table_leaves_out(capsys, monkeypatch):
    """The CSV's last row is TOTAL, the sum of every layer's cycles; ``table`` is the layers alone."""
    monkeypatch.chdir(ROOT)
    result = archsim.cost("layerpipe_sample", array="32x32", batch=8)
    frame = result.to_frame()
    assert list(frame["layer"]) == [*result.table["layer"], "TOTAL"]
    assert frame["total_cycles"].iloc[-1] == result.table["total_cycles"].sum()
    assert set(frame["array"]) == {"32x32"} and set(frame["batch"]) == {8}  # the meta, a column per value


def test_train_frame_is_the_commands_csv(capsys, monkeypatch):
    """``archsim.train`` returns (TrainResult, Throughput): the rows, and so ``to_frame``, are the TrainResult's."""
    monkeypatch.chdir(ROOT)
    argv = ["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
            "--micro-batch", "2"]
    printed = printed_csv(argv, capsys)
    result, _ = archsim.train(MODEL, cluster=NODE, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2)
    frame = result.to_frame()
    assert_same_frame(frame, printed)
    assert len(frame) == len(result.to_dict()["rows"]) > 0
    assert set(frame["iteration_seconds"]) == {result.iteration_seconds}


def test_an_empty_search_frame_is_the_commands_header(capsys, monkeypatch):
    """No split of 7 GPUs has TP dividing 16 heads, PP 24 layers and DP a global batch of 16: the CSV is a header
    of the columns a reader parses, and so is the frame (no row, so no meta column)."""
    monkeypatch.chdir(ROOT)
    argv = ["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--gpus", "7", "--schedule", "1f1b"]
    printed = printed_csv(argv, capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = archsim.search(MODEL, cluster=NODE, global_batch=16, gpus=7, schedule="1f1b")
    frame = found.to_frame()
    assert found.rows == () and frame.empty and printed.empty
    assert list(frame.columns) == list(printed.columns) == ["tp", "pp", "dp", "micro_batch", "recompute", "schedule",
                                                            "iteration_seconds"]


def test_train_runs_is_still_the_list_of_dicts_it_was(capsys, monkeypatch):
    """Backward compatible: the result is a list of the rows, each with its ``energy_source`` and ``seq`` (the CSV
    says each once, in the meta), ``json.dumps`` takes it, and ``to_dict()`` is the command's ``--format json`` document."""
    import json

    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert cli.main(["train", MODEL, "--cluster", NODE, "--runs", RUNS, "--attention", "standard",
                     "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = archsim.train_runs(MODEL, runs=RUNS, cluster=NODE, attention="standard")
    assert isinstance(rows, list) and json.loads(json.dumps(rows)) == rows
    assert [{k: v for k, v in row.items() if k not in ("energy_source", "seq")} for row in rows] == printed["rows"]
    assert {row["energy_source"] for row in rows} == {printed["meta"]["energy_source"]}
    assert {row["seq"] for row in rows} == {printed["meta"]["seq"]}  # one sequence length: said once, as the source
    assert rows.to_dict() == printed  # no NaN in these rows' JSON: equal as read back
    assert len(rows.to_frame()) == len(rows) == printed["meta"]["runs"] == 18  # the file's 18 rows, counted by hand
