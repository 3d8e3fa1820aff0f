"""A researcher reproducing SPP's and Jigsaw's figures and planning a cluster of their own: ``plan --method`` of a
baseline or LayerPipe states the plan it priced (which layers on which GPUs), not its makespan alone; ``plan`` on a
cluster of bandwidth ranges states the seed they were drawn with; ``cluster --seeds N`` repeats one policy over N
synthetic traces (the ``jigsaw-nospb`` row of docs/papers/jigsaw.md in one command, not five runs and a hand
average)."""

from __future__ import annotations

import json
import statistics

import pytest

import archsim
from archsim.cli import main

TESTBED = "configs/clusters/testbed_1080ti.toml"  # 4 servers × 2 GPUs
SMALL = ["layerpipe_sample", "--array", "128x128", "--cluster", TESTBED, "--microbatches", "4"]


def _meta(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    from test_docs import ROOT

    monkeypatch.chdir(ROOT)


def test_a_baselines_plan_names_its_layers_and_gpus(capsys):
    """layerpipe_sample's 4 conv layers on 8 GPUs: GPipe runs one stage a GPU (docs/papers/spp.md), so at most one
    layer a stage on g0–g3 (its note: 4 of the 8 GPUs used); data parallelism is one stage of every layer on every
    GPU. Before, both printed a makespan and no stage."""
    gpipe = _meta(capsys, ["plan", *SMALL, "--method", "gpipe"])
    assert gpipe["stage_plan"] == "s1: conv1 on g0; s2: conv2 on g1; s3: conv3 on g2; s4: conv4 on g3"
    dp = _meta(capsys, ["plan", *SMALL, "--method", "dp"])
    assert dp["stage_plan"] == "s1: conv1–conv4 on " + " ".join(f"g{d}" for d in range(8))


def test_layerpipes_plan_is_pipelines_on_as_many_processors(capsys):
    """docs/cli.md: priced on an array, plan's LayerPipe plan is ``pipeline --method layerpipe``'s on as many
    processors at the same samples. Its stages, read from pipeline's own table (each processor's layers and the δ
    parts it runs for earlier layers, starred in its ``ops``), are the ones plan now names, one stage a GPU in order."""
    assert main(["pipeline", "layerpipe_sample", "--method", "layerpipe", "--processors", "8", "--batch", "4",
                 "--array", "128x128", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    expected = []
    for n, row in enumerate(rows):
        layers = row["layers"].replace(",", " ").split()
        span = layers[0] if len(layers) == 1 else (f"{layers[0]}–{layers[-1]}" if layers else "")
        borrowed = [op.rstrip("*") for op in row["ops"].split() if op.endswith("*")]
        what = ", ".join(x for x in (span, "borrows " + " ".join(borrowed) if borrowed else "") if x)
        expected.append(f"s{n + 1}: {what} on g{n}")
    assert any("borrows" in part for part in expected)  # the case holds borrowed δs
    meta = _meta(capsys, ["plan", *SMALL, "--method", "layerpipe"])
    assert meta["stage_plan"] == "; ".join(expected)


def test_hetpipes_plan_says_it_is_one_servers():
    """HetPipe runs a pipeline on each server: the plan it shows is one server's (two GPUs here), said so."""
    result = archsim.plan("layerpipe_sample", cluster=TESTBED, microbatches=4, array="128x128", method="hetpipe")
    gpus = {word for part in result.meta["stage_plan"].split("; ") for word in part.split() if word[:1] == "g"}
    assert gpus <= {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"} and len(gpus) <= 2
    assert "the slowest server's pipeline" in result.meta["stage_plan"]


RANGED = """[cluster]
name = "ranged"
seed = 7
inter_server_gbps = [10, 50]

[[servers]]
count = 2
gpus = 2
intra_server_gbps = [100, 400]
"""


def test_plan_states_the_seed_its_bandwidth_ranges_were_drawn_with(tmp_path, capsys):
    """Two seeds draw two clusters and two makespans; the output named neither seed, so two runs' files could not be
    told apart. The file's own seed (7) unless --seed is given; a file of figures draws nothing and names none."""
    path = tmp_path / "ranged.toml"
    path.write_text(RANGED)
    args = ["layerpipe_sample", "--array", "32x32", "--microbatches", "2", "--baselines", "none"]
    own = archsim.plan("layerpipe_sample", cluster=str(path), microbatches=2, array="32x32", baselines="none")
    other = archsim.plan("layerpipe_sample", cluster=str(path), microbatches=2, array="32x32", baselines="none", seed=3)
    assert own.meta["seed"] == 7 and other.meta["seed"] == 3
    assert own.meta["makespan_seconds"] != other.meta["makespan_seconds"]  # the seed moves the plan's numbers
    assert _meta(capsys, ["plan", *args, "--cluster", str(path), "--seed", "3"])["seed"] == 3
    assert "seed" not in _meta(capsys, ["plan", *args, "--cluster", TESTBED])


def test_seeds_repeat_one_policy_as_separate_runs_averaged_by_hand(capsys):
    """docs/papers/jigsaw.md took the jigsaw-nospb row's mean ± sample standard deviation by hand over
    ``--seed S`` runs, as ``--seeds`` was refused beside one policy. Now ``--seeds 3`` prints those statistics:
    checked against three single-seed runs and Python's statistics module."""
    common = ["cluster", "--policy", "jigsaw-nospb", "--jobs", "12", "--gpus", "16"]
    makespans, jcts = [], []
    for seed in range(2, 5):
        assert main([*common, "--seed", str(seed), "--format", "json"]) == 0
        row = json.loads(capsys.readouterr().out)["rows"][0]
        makespans.append(row["makespan_seconds"])
        jcts.append(row["jct_mean_seconds"])
    assert main([*common, "--seed", "2", "--seeds", "3", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    (row,) = printed["rows"]
    assert printed["meta"]["seeds"] == "2,3,4" and row["policy"] == "jigsaw-nospb" and row["runs"] == 3
    assert row["makespan_seconds_mean"] == pytest.approx(statistics.mean(makespans), rel=1e-12)
    assert row["makespan_seconds_std"] == pytest.approx(statistics.stdev(makespans), rel=1e-9)
    assert row["jct_mean_seconds_mean"] == pytest.approx(statistics.mean(jcts), rel=1e-12)
    assert not any(key.startswith("jigsaw_gain") for key in row)  # no other policy to gain over
    library = archsim.cluster_jobs(policy="jigsaw-nospb", jobs=12, gpus=16, seed=2, seeds=3)
    assert library.to_dict() == printed


def test_seeds_stay_refused_on_a_trace_file(capsys):
    """A trace file is one run: --seeds would draw nothing there."""
    assert main(["cluster", "--trace", "configs/traces/sample_tiresias.csv", "--policy", "jigsaw",
                 "--seeds", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--seeds" in err and "trace file" in err


@pytest.mark.parametrize("method", ["gpipe", "pipedream-prm", "layerpipe"])
def test_a_pipelines_timeline_ends_at_its_printed_makespan(tmp_path, capsys, method):
    """--gantt, --chrome-trace and --schedule-csv were refused beside every --method but spp and pipedream, so a
    baseline's or LayerPipe's makespan could not be looked at. Its Chrome trace (µs) now ends at the makespan
    printed, and its stages are the stage_plan's."""
    trace = tmp_path / "t.json"
    assert main(["plan", *SMALL, "--method", method, "--chrome-trace", str(trace), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    makespan = printed["rows"][0]["makespan_seconds"]
    events = json.loads(trace.read_text())["traceEvents"]
    ends = [e["ts"] + e["dur"] for e in events if e.get("ph") == "X"]
    assert max(ends) == pytest.approx(makespan * 1e6, rel=1e-9)
    rows = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    stage_rows = {name for name in rows if name[0] == "s" and name[1:].isdigit()}
    assert len(stage_rows) == len(printed["meta"]["stage_plan"].split("; "))


def test_gpipes_schedule_csv_is_fill_drain(tmp_path, capsys):
    """GPipe (docs/papers/spp.md): every stage runs every forward, then every backward, oldest micro-batch first;
    4 stages (one layer a GPU) × 4 micro-batches, so each rank's row is F0–F3 then B0–B3."""
    out = tmp_path / "s.csv"
    assert main(["plan", *SMALL, "--method", "gpipe", "--schedule-csv", str(out)]) == 0
    capsys.readouterr()
    rows = out.read_text().split()
    assert rows == [",".join([f"{r}F{m}" for m in range(4)] + [f"{r}B{m}" for m in range(4)]) for r in range(4)]


@pytest.mark.parametrize("method", ["dp", "hetpipe"])
def test_no_timeline_for_a_plan_that_is_no_one_pipeline(tmp_path, capsys, method):
    out = tmp_path / "g.html"
    assert main(["plan", *SMALL, "--method", method, "--gantt", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{method} gives its makespan only" in err and not out.exists()
