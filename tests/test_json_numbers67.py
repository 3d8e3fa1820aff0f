"""JSON meta carries numbers as numbers, the API writes its outputs as one set, and a table's lines follow
``--precision``: ``bppsa pruned-vgg11``'s figures per up-sweep depth are JSON numbers (they were ``0:21; 1:12``
text), ``archsim.validate_gpu`` writes its report and Markdown as the command does (one set), and ``search``'s
``host_bound`` line and plan's ``stage_counts``/``baselines_seconds`` lines are written to ``--precision``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _out(capsys, argv: list[str]) -> str:
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _table_line(table: str, key: str) -> str:
    """The text after ``# key: `` in a table's header."""
    return next(line.split(": ", 1)[1] for line in table.splitlines() if line.startswith(f"# {key}: "))


# --- archsim.validate_gpu's two files: one set ---------------------------------------------------------------------

@pytest.mark.long  # two HTML pages (plotly), about 4 s
def test_validate_gpu_replaces_neither_output_when_the_second_fails(tmp_path, monkeypatch):
    """Failed before: ``archsim.validate_gpu(report=…, markdown=…)`` wrote the report, then the Markdown, each on its
    own, so a full disk at the Markdown left the report replaced and the Markdown old (the command writes them as one
    set). The Markdown's write fails here (ENOSPC): the error is raised, both files keep their old text and no temp
    file is left beside them; the same call without the failure replaces both."""
    from output_commands import GPU_CSV, full_disk_at

    from archsim.errors import InputError

    measured = tmp_path / "k.csv"
    shutil.copy(GPU_CSV, measured)
    report, markdown = tmp_path / "report.html", tmp_path / "summary.md"
    report.write_text("old report")
    markdown.write_text("old markdown")

    full_disk_at(monkeypatch, markdown.name)
    with pytest.raises(InputError, match="no space left"):
        archsim.validate_gpu(csv=measured, report=report, markdown=markdown)
    assert (report.read_text(), markdown.read_text()) == ("old report", "old markdown")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.csv", "report.html", "summary.md"]

    monkeypatch.undo()
    archsim.validate_gpu(csv=measured, report=report, markdown=markdown)
    assert report.read_text().startswith("<!") and markdown.read_text().startswith("#")


# --- bppsa pruned-vgg11's figures per up-sweep depth: numbers in JSON ------------------------------------------------

VGG = ["bppsa", "pruned-vgg11", "--width-divisor", "16", "--compare-levels", "1"]
BY_DEPTH = ("steps", "critical_path_flops", "work_flops")


def test_bppsa_by_up_levels_are_json_numbers_the_table_and_csv_show_as_one_line(capsys):
    """Failed before: JSON's ``steps_by_up_levels`` (and the two FLOPs entries) were ``0:21; 1:12`` text a JSON reader
    had to split. Now a list of ``{"up_levels": depth, column: value}``, fewest levels first, as plan's
    ``stage_counts``: depths 0 (always: the linear scan) and 1 (``--compare-levels 1``); by hand 21 operators scan in
    21 linear steps, and at depth 1 in 1 up + 10 linear (11 pairs) + 1 down = 12; depth 0's critical path and work
    are BP's (one step after another). The table's line and csv's cell are those numbers as ``depth:value; …``."""
    import csv
    import io

    meta = json.loads(_out(capsys, [*VGG, "--format", "json"]))["meta"]
    for column in BY_DEPTH:
        records = meta[f"{column}_by_up_levels"]
        assert [list(r) for r in records] == [["up_levels", column]] * 2, records
        assert [r["up_levels"] for r in records] == [0, 1]
        assert all(type(r[column]) is int for r in records)
    assert [r["steps"] for r in meta["steps_by_up_levels"]] == [21, 12]
    assert meta["critical_path_flops_by_up_levels"][0]["critical_path_flops"] == meta["bp_critical_path_flops"]
    assert meta["work_flops_by_up_levels"][0]["work_flops"] == meta["bp_critical_path_flops"]

    table = _out(capsys, VGG)
    row = next(csv.DictReader(io.StringIO(_out(capsys, [*VGG, "--format", "csv"]))))
    for column in BY_DEPTH:
        line = "; ".join(f"{r['up_levels']}:{r[column]}" for r in meta[f"{column}_by_up_levels"])
        assert _table_line(table, f"{column}_by_up_levels") == line == row[f"{column}_by_up_levels"]


def test_bppsa_pruned_vgg11_api_meta_is_the_json(capsys):
    """``archsim.bppsa_pruned_vgg11``'s ``.meta`` carries the command's numbers, not its table's text."""
    doc = json.loads(_out(capsys, [*VGG, "--format", "json"]))
    meta = archsim.bppsa_pruned_vgg11(width_divisor=16, compare_levels="1").meta
    for column in BY_DEPTH:
        assert meta[f"{column}_by_up_levels"] == doc["meta"][f"{column}_by_up_levels"]
    assert meta["steps_by_up_levels"] == [{"up_levels": 0, "steps": 21}, {"up_levels": 1, "steps": 12}]


# --- the table's lines follow --precision ---------------------------------------------------------------------------

CLUSTERS = ROOT / "configs" / "clusters"
# layerpipe_sample's 4 layers on testbed_1080ti's 4 servers × 2 GPUs, up to 2 stages: a search of 2,048 PRM steps
PLAN = ["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "testbed_1080ti.toml"), "--microbatches", "4",
        "--max-stages", "2"]


def test_plan_table_lines_follow_precision(capsys):
    """Failed before: ``stage_counts``' and ``baselines_seconds``' lines were written to 4 significant digits whatever
    ``--precision`` said (the makespan line above them followed it). With ``--precision 2`` each makespan is written
    to 2 significant digits (these are all under 1 s, where ``{:.2g}`` writes no exponent), as the makespan line."""
    meta = json.loads(_out(capsys, [*PLAN, "--format", "json"]))["meta"]
    table = _out(capsys, [*PLAN, "--precision", "2"])
    counts = "; ".join(f"{c['stages']}:{c['makespan_seconds']:.2g}s" for c in meta["stage_counts"])
    baselines = "; ".join(f"{m}:{t:.2g}" for m, t in meta["baselines_seconds"].items())
    assert all(t < 1 for t in meta["baselines_seconds"].values())
    assert _table_line(table, "stage_counts") == counts
    assert _table_line(table, "baselines_seconds") == baselines
    assert _table_line(table, "makespan_seconds") == f"{meta['makespan_seconds']:.2g}"
    assert counts != "; ".join(f"{c['stages']}:{c['makespan_seconds']:.4g}s" for c in meta["stage_counts"])


MEDIUM = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
# 8 A100s, micro-batch 1: short passes, whose host issue time sets the first row (over the note's 10% mark)
HOST_BOUND = ["search", MEDIUM, "--cluster", str(CLUSTERS / "a100_node.toml"), "--global-batch", "32",
              "--attention", "standard", "--recompute", "none", "--schedule", "1f1b", "--max-micro-batch", "1",
              "--top", "3"]


@pytest.mark.parametrize("digits", [2, 5])
def test_search_host_bound_line_follows_precision(capsys, digits):
    """Failed before: search's ``host_bound`` line wrote its seconds and µs to 3 significant digits whatever
    ``--precision`` said (train's line follows it). With ``--precision 2`` and ``5``, the first row's host and
    iteration seconds are written to that many digits (seconds under 1: no exponent), and the per-op time of
    vTrain's A100 fit, 69.4 µs, as 69 µs and 69.4 µs (its third digit is its last: 69.4e-6 s, as tests/
    test_host_bound_search.py prints it)."""
    row = json.loads(_out(capsys, [*HOST_BOUND, "--format", "json"]))["rows"][0]
    host, total = row["host_bound_seconds"], row["iteration_seconds"]
    line = _table_line(_out(capsys, [*HOST_BOUND, "--precision", str(digits)]), "host_bound")
    per_op = "69" if digits == 2 else "69.4"
    assert line.startswith(f"the first row's rank rests on the host floor: {host:.{digits}g} s of {total:.{digits}g} s "
                           f"is the host issuing ops ({per_op} µs per op, vTrain's A100 fit)"), line


# --- energy_figures: numbers in JSON -------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["energy", "layerpipe_sample"], ["cost", "layerpipe_sample", "--energy"]])
def test_energy_figures_are_json_numbers_the_table_and_csv_show_as_one_line(tmp_path, capsys, command):
    """Failed before: JSON's ``energy_figures`` was ``mac_pj=0.5, register_pj=0.0625`` text. Now an object of the
    ``[energy]`` section's figures as written in the file (pJ), in its order; csv's cell and the table's line keep
    the ``KEY=VALUE, …`` text, each figure as the file states it (both exact in binary: no digits lost either way)."""
    import csv
    import io

    config = tmp_path / "two.cfg"
    config.write_text((ROOT / "tests" / "data" / "energy_figures_32x32.cfg").read_text(encoding="utf-8")
                      + "register_pj = 0.0625\n", encoding="utf-8")
    argv = [*command, "--config", str(config)]
    meta = json.loads(_out(capsys, [*argv, "--format", "json"]))["meta"]
    assert meta["energy_figures"] == {"mac_pj": 0.5, "register_pj": 0.0625}
    assert all(type(v) is float for v in meta["energy_figures"].values())
    assert _table_line(_out(capsys, argv), "energy_figures") == "mac_pj=0.5, register_pj=0.0625"
    row = next(csv.DictReader(io.StringIO(_out(capsys, [*argv, "--format", "csv"]))))
    assert row["energy_figures"] == "mac_pj=0.5, register_pj=0.0625"
