"""A user trial of `archsim plan` and `archsim cluster`: plan's JSON gives its stage counts' and baselines' makespans
as numbers (they were lines of text a JSON reader had to split), a plan priced on the servers' GPU states its
``dtype`` as an array run does, and ``archsim.cluster_jobs`` writes its report and job times as one set, as the
command does."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
# layerpipe_sample's 4 layers on testbed_1080ti's 4 servers × 2 GPUs, up to 2 stages: a search of 2,048 PRM steps
PLAN = ["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "testbed_1080ti.toml"), "--microbatches", "4",
        "--max-stages", "2"]


def _out(capsys, argv: list[str]) -> str:
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _table_line(table: str, key: str) -> str:
    """The text after ``# key: `` in a table's header."""
    return next(line.split(": ", 1)[1] for line in table.splitlines() if line.startswith(f"# {key}: "))


def _pairs(text: str) -> list[tuple[str, str]]:
    """``a:1; b:2`` as [("a", "1"), ("b", "2")]."""
    return [tuple(item.split(":")) for item in text.split("; ")]  # type: ignore[misc]


def test_plan_json_gives_stage_counts_and_baselines_as_numbers_the_table_shows(capsys):
    """Failed before: JSON's ``stage_counts`` and ``baselines_seconds`` were ``1:0.00234s; 2:0.00277s`` text. Now
    numbers: a stage count an int, each makespan a float, one per stage count SPP tried (1 and 2 here) and one per
    baseline archsim runs (dp, gpipe, pipedream-prm, hetpipe); the table's line shows them to 4 significant digits,
    csv's at full precision, and the plan's own makespan is the fastest stage count's."""
    doc = json.loads(_out(capsys, [*PLAN, "--format", "json"]))
    counts, baselines = doc["meta"]["stage_counts"], doc["meta"]["baselines_seconds"]
    assert [c["stages"] for c in counts] == [1, 2]
    assert all(type(c["stages"]) is int and type(c["makespan_seconds"]) is float for c in counts)
    assert list(baselines) == ["dp", "gpipe", "pipedream-prm", "hetpipe"]
    assert all(type(t) is float and t > 0 for t in baselines.values())
    assert min(c["makespan_seconds"] for c in counts) == doc["meta"]["makespan_seconds"]

    table = _out(capsys, PLAN)
    assert _pairs(_table_line(table, "stage_counts")) == [
        (str(c["stages"]), f"{c['makespan_seconds']:.4g}s") for c in counts]
    assert _pairs(_table_line(table, "baselines_seconds")) == [(m, f"{t:.4g}") for m, t in baselines.items()]

    row = next(csv.DictReader(io.StringIO(_out(capsys, [*PLAN, "--format", "csv"]))))
    assert [(int(n), float(t.removesuffix("s"))) for n, t in _pairs(row["stage_counts"])] == [
        (c["stages"], c["makespan_seconds"]) for c in counts]
    assert {m: float(t) for m, t in _pairs(row["baselines_seconds"])} == baselines


def test_plan_result_meta_is_the_json_and_its_frame_the_csv(capsys):
    """``archsim.plan``'s ``.meta`` and ``to_dict()`` carry the same numbers as the command's JSON, and ``to_frame()``
    the csv's one-line cells (csv_frame alone would drop a list and an object: no cell to go in)."""
    doc = json.loads(_out(capsys, [*PLAN, "--format", "json"]))
    result = archsim.plan("layerpipe_sample", cluster=CLUSTERS / "testbed_1080ti.toml", microbatches=4, max_stages=2)
    for key in ("stage_counts", "baselines_seconds"):
        assert result.meta[key] == result.to_dict()["meta"][key] == doc["meta"][key]
    frame = result.to_frame()
    row = next(csv.DictReader(io.StringIO(_out(capsys, [*PLAN, "--format", "csv"]))))
    assert frame["stage_counts"][0] == row["stage_counts"] and frame["baselines_seconds"][0] == row["baselines_seconds"]


def test_plan_without_baselines_gives_an_empty_object(capsys):
    """``--baselines none``: no baseline, ``{}`` in JSON; the table's line stays empty, as before."""
    argv = [*PLAN, "--baselines", "none"]
    assert json.loads(_out(capsys, [*argv, "--format", "json"]))["meta"]["baselines_seconds"] == {}
    assert "# baselines_seconds: \n" in _out(capsys, argv)


@pytest.mark.parametrize(("cluster", "flags", "dtype"), [
    ("testbed_v100_gpu.toml", [], "fp16"),  # train's default
    ("a100_node.toml", ["--dtype", "bf16"], "bf16"),
    ("testbed_1080ti_gpu.toml", ["--dtype", "fp32"], "fp32"),  # a card of no FP16 peak
])
def test_a_plan_priced_on_the_servers_gpu_states_its_dtype(capsys, cluster, flags, dtype):
    """Failed before: an array run's meta has ``dtype`` (the element type priced), a plan priced on the servers' GPU
    had none (only ``priced_on_model``'s tail said it). Now the same key: ``--dtype``, default fp16; for every method
    (SPP, a baseline, PipeDream's optimizer), as each states what priced its layers."""
    for method in ("spp", "gpipe", "pipedream"):
        argv = ["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / cluster), "--microbatches", "4",
                "--method", method, *flags, "--format", "json"]
        if method != "pipedream":
            argv += ["--max-stages", "2"]
        meta = json.loads(_out(capsys, argv))["meta"]
        assert meta["dtype"] == dtype, (method, meta)
        assert meta["priced_on"].startswith("NVIDIA") and "element_bytes" not in meta


def test_cluster_jobs_replaces_neither_output_when_the_second_fails(tmp_path, monkeypatch):
    """Failed before: ``archsim.cluster_jobs(report=…, job_times=…)`` wrote the report, then the job times, each on
    its own, so a full disk at the job times left the report replaced and the job times old (the command writes
    them as one set). The job times' write fails here (ENOSPC, as a full disk says it): the error is raised, both
    files keep their old text and no temp file is left beside them; the same call without the failure replaces
    both."""
    from output_commands import full_disk_at

    from archsim.errors import InputError

    report, times = tmp_path / "report.html", tmp_path / "times.csv"
    report.write_text("old report")
    times.write_text("old times")

    full_disk_at(monkeypatch, times.name)
    with pytest.raises(InputError, match="no space left"):
        archsim.cluster_jobs(jobs=4, gpus=8, report=report, job_times=times)
    assert (report.read_text(), times.read_text()) == ("old report", "old times")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "times.csv"]

    monkeypatch.undo()
    archsim.cluster_jobs(jobs=4, gpus=8, report=report, job_times=times)
    assert report.read_text().startswith("<!") and times.read_text().startswith("policy,seed,job_id,")


def _numbers(value, where: str = "meta"):
    """(place, type name) of every number in ``value`` (dicts, lists) that is not a plain int, float or bool."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _numbers(item, f"{where}.{key}")]
    if isinstance(value, (list, tuple)):
        return [found for i, item in enumerate(value) for found in _numbers(item, f"{where}[{i}]")]
    import numbers

    plain = type(value) in (int, float, bool)
    return [] if plain or not isinstance(value, numbers.Number) else [(where, type(value).__name__)]


@pytest.mark.parametrize("method", ["spp", "pipedream", "gpipe", "pipedream-prm", "layerpipe", "dp", "hetpipe"])
def test_every_methods_meta_names_it_and_holds_plain_numbers(capsys, method):
    """Failed before: a baseline's meta (``--method gpipe`` …) had no ``method`` key where SPP's and PipeDream's have
    one, and ``.meta["makespan_seconds"]`` (SPP's; PipeDream's ``simulated_makespan_seconds``, a baseline row's
    ``spp_makespan_seconds``) was a numpy float64 where the other figures are plain floats. Now every method's meta
    and JSON name the method run, and its meta's and rows' numbers are plain Python ints and floats."""
    bound = method != "pipedream"  # PipeDream's optimizer takes no --max-stages
    keywords = {"cluster": str(CLUSTERS / "testbed_1080ti.toml"), "microbatches": 4,
                **({"max_stages": 2} if bound else {})}
    result = archsim.plan("layerpipe_sample", method=method, **keywords)
    assert result.meta["method"] == method
    assert _numbers(result.meta) == [] and _numbers(result.document["rows"], "rows") == []
    document = json.loads(_out(capsys, [*(PLAN if bound else PLAN[:-2]), "--method", method, "--format", "json"]))
    assert document["meta"]["method"] == method
