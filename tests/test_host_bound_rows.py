"""``host_bound_seconds`` and ``compute_split_seconds`` in ``train --runs`` and ``--sweep`` rows, and the benchmark's
error split by the first.

A runs row and a sweep point are predicted by other code than one ``train`` iteration (runs_predict.py and sweep.py
call the iteration model themselves, train_json.py builds the one run's meta): each row's figures must be the ones
``archsim train --format json`` prints for the same configuration. The split (benchmarks/bench_vtrain_e2e.py) is
checked on a hand-made table whose MAPEs are worked out by hand below.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from benchmark_scripts import load_benchmark
from test_docs import ROOT
from train_cli import run_cli, train_json

MEDIUM = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
A100_NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
# (tp, pp, dp, micro_batch, global_batch, recompute): TP 2 at micro-batch 1, whose passes are short enough that the
# host's issue time sets them; a two-stage pipeline; TP 1 at micro-batch 8, the GPU's work over the host's
LAYOUTS = [(2, 1, 4, 1, 32, "full"), (1, 2, 2, 1, 4, "selective"), (1, 1, 2, 8, 16, "none")]


def one_run(tp, pp, dp, micro_batch, global_batch, recompute) -> dict:
    return train_json([MEDIUM, "--cluster", A100_NODE, "--attention", "standard", "--tp", str(tp), "--pp", str(pp),
                       "--dp", str(dp), "--micro-batch", str(micro_batch), "--global-batch", str(global_batch),
                       "--recompute", recompute])["meta"]


@pytest.fixture(scope="module")
def singles() -> list[dict]:
    return [one_run(*layout) for layout in LAYOUTS]


def test_the_singles_include_a_host_bound_run_and_a_gpu_bound_one(singles):
    """The check below is not vacuous: one layout is over train's 10% mark, one has a host-bound part under it."""
    shares = [meta["host_bound_seconds"] / meta["iteration_seconds"] for meta in singles]
    assert shares[0] > 0.1 and 0 < min(shares) < 0.1


@pytest.fixture(scope="module")
def printed_runs(tmp_path_factory) -> tuple[str, list[dict], list[dict[str, str]]]:
    """A runs file of :data:`LAYOUTS` (its path), and ``train --runs``'s JSON rows and csv rows for it."""
    runs = tmp_path_factory.mktemp("runs") / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute\n"
                    + "".join(",".join(map(str, layout)) + "\n" for layout in LAYOUTS), encoding="utf-8")
    args = ["train", MEDIUM, "--cluster", A100_NODE, "--attention", "standard", "--runs", str(runs)]
    rows = json.loads(run_cli([*args, "--format", "json"]))["rows"]
    return str(runs), rows, list(csv.DictReader(io.StringIO(run_cli([*args, "--format", "csv"]))))


def test_runs_rows_carry_the_single_runs_host_bound_seconds(printed_runs, singles):
    _, rows, table = printed_runs
    for row, line, meta in zip(rows, table, singles, strict=True):
        assert row["predicted_seconds"] == meta["iteration_seconds"]
        assert row["host_bound_seconds"] == meta["host_bound_seconds"]
        assert float(line["host_bound_seconds"]) == pytest.approx(meta["host_bound_seconds"], rel=1e-12)


def test_sweep_points_carry_the_single_runs_host_bound_seconds(singles):
    """TP 1 and 2 at micro-batch 1 (the first layout and its TP 1 twin), one sweep against one run each."""
    args = ["train", MEDIUM, "--cluster", A100_NODE, "--attention", "standard", "--dp", "4", "--micro-batch", "1",
            "--global-batch", "32", "--recompute", "full", "--sweep", "tp=1,2", "--format", "json"]
    points = json.loads(run_cli(args))["rows"]
    assert [p["tp"] for p in points] == [1, 2]
    assert points[1]["host_bound_seconds"] == singles[0]["host_bound_seconds"]
    assert points[0]["host_bound_seconds"] == one_run(1, 1, 4, 1, 32, "full")["host_bound_seconds"]


def test_a_sweep_point_that_cannot_run_has_no_host_bound_figure():
    args = ["train", MEDIUM, "--cluster", A100_NODE, "--global-batch", "8", "--sweep", "tp=2,3", "--format", "json"]
    points = json.loads(run_cli(args))["rows"]
    assert points[1]["error"] and points[1]["host_bound_seconds"] is None and points[0]["host_bound_seconds"] >= 0


def csv_parts(cell: str) -> dict[str, float]:
    """A ``part: seconds, …`` cell (train's csv writes its meta's objects so) read back."""
    return {name: float(value) for name, value in (item.split(": ") for item in cell.split(", "))}


def test_runs_rows_carry_the_single_runs_compute_split(printed_runs, singles):
    """Each runs row's ``compute_split_seconds`` is the object train's JSON meta has for its configuration alone, and
    its csv cell train's own csv cell for it, character for character (full precision: the floats read back equal);
    ``archsim.train_runs`` returns the same rows, its ``to_frame()`` the same cells."""
    import archsim

    runs, rows, table = printed_runs
    for row, line, meta in zip(rows, table, singles, strict=True):
        assert list(meta["compute_split_seconds"]) == ["gemm", "memory_bound", "kernel_gaps", "host_floor",
                                                       "recompute_communication", "other"]
        assert row["compute_split_seconds"] == meta["compute_split_seconds"]
        assert csv_parts(line["compute_split_seconds"]) == meta["compute_split_seconds"]
    single = ["train", MEDIUM, "--cluster", A100_NODE, "--attention", "standard", "--tp", "2", "--dp", "4",
              "--micro-batch", "1", "--global-batch", "32", "--recompute", "full", "--format", "csv"]
    assert table[0]["compute_split_seconds"] == next(csv.DictReader(io.StringIO(run_cli(single))))["compute_split_seconds"]
    result = archsim.train_runs(MEDIUM, runs=runs, cluster=A100_NODE, attention="standard")
    assert [r["compute_split_seconds"] for r in result] == [meta["compute_split_seconds"] for meta in singles]
    assert result.to_frame()["compute_split_seconds"].tolist() == [line["compute_split_seconds"] for line in table]


def test_sweep_points_carry_the_single_runs_compute_split(singles):
    """TP 1 and 2 at micro-batch 1 and a TP 3 that cannot run (16 heads): the TP 2 point's object is train's for that
    configuration; the TP 3 point has none (null in JSON, an empty csv cell); the table leaves the column out (six
    parts a row), as it leaves none of the others."""
    import archsim

    args = ["train", MEDIUM, "--cluster", A100_NODE, "--attention", "standard", "--dp", "4", "--micro-batch", "1",
            "--global-batch", "32", "--recompute", "full", "--sweep", "tp=2,3"]
    points = json.loads(run_cli([*args, "--format", "json"]))["rows"]
    assert points[0]["compute_split_seconds"] == singles[0]["compute_split_seconds"]
    assert points[1]["error"] and points[1]["compute_split_seconds"] is None
    table = list(csv.DictReader(io.StringIO(run_cli([*args, "--format", "csv"]))))
    assert csv_parts(table[0]["compute_split_seconds"]) == singles[0]["compute_split_seconds"]
    assert table[1]["compute_split_seconds"] == ""
    text = run_cli(args)
    assert "host_bound_seconds" in text and "compute_split_seconds" not in text
    grid = archsim.train_sweep(MEDIUM, cluster=A100_NODE, attention="standard", dp=4, global_batch=32,
                               recompute="full", sweep={"tp": [2, 3]})
    assert grid.to_dict()["rows"][0]["compute_split_seconds"] == singles[0]["compute_split_seconds"]
    assert grid.to_frame()["compute_split_seconds"].tolist()[0] == table[0]["compute_split_seconds"]


def hand_row(predicted_ms: float, host_bound_ms: float, error: float) -> dict:
    return {"hidden": 1024, "layers": 24, "heads": 16, "seq": 1024, "global_batch": 16, "micro_batch": 1,
            "recompute": "full", "measured_ms": predicted_ms / (1 + error), "predicted_ms": predicted_ms,
            "error": error, "measured_gib": 10.0, "predicted_gib": 10.0, "memory_error": 0.0,
            "host_bound_ms": host_bound_ms}


# host-bound: 20 of 100 ms (+10%) and 6 of 50 ms (−20%); GPU-bound: exactly 10 of 100 ms, not over the mark
# (−30%), and none (+5%). By hand: host-bound MAPE (0.10 + 0.20) / 2 = 15%, signed (0.10 − 0.20) / 2 = −5%;
# GPU-bound MAPE (0.30 + 0.05) / 2 = 17.5%, signed (−0.30 + 0.05) / 2 = −12.5%
HAND = [hand_row(100.0, 20.0, 0.10), hand_row(100.0, 10.0, -0.30), hand_row(50.0, 6.0, -0.20),
        hand_row(200.0, 0.0, 0.05)]


def test_the_split_of_a_hand_made_table():
    split = load_benchmark("bench_vtrain_e2e").host_split(HAND)
    assert split["host_bound"]["runs"] == 2 and split["gpu_bound"]["runs"] == 2
    assert split["host_bound"]["mape"] == pytest.approx(0.15) and split["host_bound"]["signed_mean"] == pytest.approx(-0.05)
    assert split["gpu_bound"]["mape"] == pytest.approx(0.175)
    assert split["gpu_bound"]["signed_mean"] == pytest.approx(-0.125)


def test_a_side_without_runs_has_no_mape():
    split = load_benchmark("bench_vtrain_e2e").host_split([HAND[1], HAND[3]])
    assert split["host_bound"] == {"runs": 0, "mape": None, "signed_mean": None}
    assert split["gpu_bound"]["runs"] == 2


def test_the_summary_states_the_split():
    bench = load_benchmark("bench_vtrain_e2e")
    text = bench.measured_markdown(HAND, {}, "NVIDIA H200", str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"),
                                   str(ROOT / "benchmarks" / "results" / "gpu_train_measured_h200.csv"))
    assert ("| host-bound (host_bound_seconds > 10% of predicted) | 15.0% (signed -5.0%, max 20.0%, 2 runs) |"
            in text)
    assert "| GPU-bound (the others) | 17.5% (signed -12.5%, max 30.0%, 2 runs) |" in text


def test_the_summarys_runs_show_their_host_share():
    """Host share = host_bound_ms / predicted_ms, by hand: 20/100, 10/100, 6/50, 0/200."""
    bench = load_benchmark("bench_vtrain_e2e")
    text = bench.measured_markdown(HAND, {}, "NVIDIA H200", str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"),
                                   str(ROOT / "benchmarks" / "results" / "gpu_train_measured_h200.csv"))
    head = next(line for line in text.splitlines() if line.startswith("| model |")).split(" | ")
    runs = [line.split(" | ") for line in text.splitlines() if line.startswith("| h1024 L24 | full |")]  # per run
    assert head[7] == "host share" and [cells[7] for cells in runs] == ["20.0%", "10.0%", "12.0%", "0.0%"]
    assert [cells[6] for cells in runs] == ["+10.0%", "-30.0%", "-20.0%", "+5.0%"]  # the error beside it, unmoved


# three hand-made runs: host shares 50%, 5% and 25%, errors +12%, −8% and −30%, two recompute settings
THREE = [{**hand_row(80.0, 40.0, 0.12), "layers": 12}, {**hand_row(200.0, 10.0, -0.08), "recompute": "none"},
         {**hand_row(40.0, 10.0, -0.30), "global_batch": 32, "micro_batch": 4}]


def test_the_error_figure_plots_each_runs_host_share_against_its_error(tmp_path):
    host_share = load_benchmark("host_share")
    figure = host_share.error_figure(THREE, "three runs")
    traces = {trace.name: trace for trace in figure.data}
    assert sorted(traces) == ["recompute full", "recompute none"]  # one colour per recompute
    full, none = traces["recompute full"], traces["recompute none"]
    assert list(full.x) == pytest.approx([50.0, 25.0]) and list(full.y) == pytest.approx([12.0, -30.0])
    assert list(none.x) == pytest.approx([5.0]) and list(none.y) == pytest.approx([-8.0])
    assert list(full.text) == ["h1024 L12 recompute full B16 b1", "h1024 L24 recompute full B32 b4"]
    path = host_share.write_error_figure(THREE, tmp_path / "e.html", "three runs")
    html = path.read_text(encoding="utf-8")
    assert "cdn.plot.ly" in html and len(html) < 50_000  # plotly.js from its CDN, not inlined (about 4.7 MB)
