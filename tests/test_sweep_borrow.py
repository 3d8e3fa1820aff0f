"""A sweep spec's ``borrow`` (LayerPipe's ``--borrow paper|gainful``): Algorithm 1 as printed and its gainful
variant side by side over arrays × batches × processors, as LayerPipe's study runs them.

Each value gives LayerPipe rows of its own, told apart by a ``borrow`` column after ``split_axes`` and by the
cache key (a folder's cached paper plans are never read as gainful ones); the report draws the gainful rows as a
method of their own, ``layerpipe (gainful)``. A spec without the key (or with ``borrow = ["paper"]``, the
default) writes what it wrote before the key, byte for byte. The hand-checked case is
tests/test_layerpipe_borrow_gainful.py's: layerpipe_sample on 2 processors (32x32 ws, batch 32, paper mode),
where the printed walk leaves a δ″ of conv1 (33,349 cycles) on conv2–conv4's processor and the gainful plan sends
it home: conv2–conv4's Table II totals, PipeDream's split.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from test_robustness import clean_error

from archsim.cli import main
from archsim.errors import InputError
from archsim.sweep import load_spec
from archsim.sweep.cache import cache_file
from archsim.sweep.report import borrow_series, series_methods
from archsim.sweep.results_check import check_spec_rows

BASE = """[sweep]
name = "borrow"
networks = ["layerpipe_sample"]
arrays = ["32x32"]
batches = [32]
processors = [2]
mode = "paper"
"""
CONV2_TO_4 = 30_704_565 + 11_146_333 + 11_159_869  # Table II's F + G + δ of conv2, conv3, conv4 (cycles)
CONV1_DELTA_PART = 33_349  # the δ″ of conv1 the printed walk leaves on conv2–conv4's processor
# docs/formats.md's columns, written by hand: borrow right after split_axes where the spec runs it
HEADER = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method", "alpha",
          "split_axes", "borrow", "stages", "single_processor_cycles", "iteration_cycles", "speedup",
          "mandatory_comm_bytes", "additional_comm_bytes", "network_path", "network_sha256"]


def _spec(folder: Path, extra: str, methods: str = '["layerpipe", "pipedream"]') -> Path:
    path = folder / "borrow.toml"
    path.write_text(BASE + f"methods = {methods}\n" + extra, encoding="utf-8")
    return path


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    text = path.read_text(encoding="utf-8")
    return next(csv.reader(io.StringIO(text))), list(csv.DictReader(io.StringIO(text)))


def test_borrow_is_read_as_a_list_and_counts_layerpipe_rows_once_per_value(tmp_path):
    spec = load_spec(_spec(tmp_path, 'borrow = ["paper", "gainful"]\n', '["layerpipe", "pipedream", "gpipe"]'))
    assert spec.borrow == ("paper", "gainful")
    assert spec.size == 1 * (2 + 1 + 1)  # one configuration: layerpipe twice, pipedream and gpipe once
    assert [unit.borrow for unit in spec.units()] == [("paper", "gainful")]
    assert load_spec(_spec(tmp_path, "")).borrow == ("paper",)  # absent: the printed algorithm, as --borrow


@pytest.mark.parametrize("extra, methods, said", [
    ('borrow = ["gainful"]\n', '["pipedream"]', ("borrow tunes LayerPipe's Algorithm 1, which none of methods "
                                                 "(pipedream) runs: list layerpipe in methods, or drop borrow")),
    ('borrow = ["paper"]\n', '["pipedream", "gpipe"]', "list layerpipe in methods"),  # stated even at the default
    ('borrow = ["best"]\n', '["layerpipe"]', "unknown value 'best'; choose from paper, gainful"),
    ("borrow = []\n", '["layerpipe"]', "expected at least one of paper, gainful"),
    ('borrow = ["gainful", "gainful"]\n', '["layerpipe"]', "'gainful' is listed twice"),
    ('borrow = "gainful"\n', '["layerpipe"]', "expected a list of strings"),
])
def test_a_bad_borrow_is_refused_naming_the_key(tmp_path, capsys, extra, methods, said):
    spec = _spec(tmp_path, extra, methods)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert "field 'borrow'" in line and said in line and str(spec) in line
    assert not (tmp_path / "out").exists()  # refused as the spec is read: nothing written
    with pytest.raises(InputError) as caught:
        load_spec(spec)
    assert caught.value.where.field == "borrow"


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """The hand-checked configuration at both borrow values beside PipeDream, with its report's inputs."""
    folder = tmp_path_factory.mktemp("borrow")
    assert main(["sweep", str(_spec(folder, 'borrow = ["paper", "gainful"]\n')), "--out", str(folder / "out"),
                 "--quiet"]) == 0
    return folder / "out"


def test_both_values_give_their_own_rows_at_the_hand_counts(swept):
    header, rows = _rows(swept / "results.csv")
    assert header == HEADER
    assert [(r["method"], r["borrow"]) for r in rows] == [("layerpipe", "paper"), ("layerpipe", "gainful"),
                                                          ("pipedream", "")]
    paper, gainful, pipedream = rows
    assert float(paper["iteration_cycles"]) == CONV2_TO_4 + CONV1_DELTA_PART
    assert float(gainful["iteration_cycles"]) == CONV2_TO_4 == float(pipedream["iteration_cycles"])
    assert float(paper["additional_comm_bytes"]) > 0 and float(gainful["additional_comm_bytes"]) == 0
    assert paper["mandatory_comm_bytes"] == gainful["mandatory_comm_bytes"]  # the same layer split
    single = float(paper["single_processor_cycles"])
    assert float(gainful["speedup"]) == pytest.approx(single / CONV2_TO_4)


def test_summary_keys_each_borrow_apart(swept):
    header, rows = _rows(swept / "summary.csv")
    assert header[:8] == ["network", "only", "mode", "processors", "method", "alpha", "split_axes", "borrow"]
    by = {(r["method"], r["borrow"]): r for r in rows}
    assert set(by) == {("layerpipe", "paper"), ("layerpipe", "gainful"), ("pipedream", "")}
    # each borrow's best with at most P processors is its own (never the other borrow's faster plan)
    assert float(by["layerpipe", "paper"]["speedup_upto"]) < float(by["layerpipe", "gainful"]["speedup_upto"])
    assert float(by["layerpipe", "gainful"]["improvement_vs_pipedream_pct"]) == 0


def test_the_default_writes_the_files_of_before_the_key(tmp_path):
    """No ``borrow`` key, and ``borrow = ["paper"]`` (the default stated): the same results.csv, without the column
    (test_sweep_settings_columns' header), spec.json without the key, and one cache entry between them."""
    written = []
    for name, extra in (("none", ""), ("stated", 'borrow = ["paper"]\n')):
        folder = tmp_path / name
        folder.mkdir()
        assert main(["sweep", str(_spec(folder, extra)), "--out", str(folder / "out"), "--quiet"]) == 0
        written.append(folder / "out")
    assert (written[0] / "results.csv").read_bytes() == (written[1] / "results.csv").read_bytes()
    header, rows = _rows(written[0] / "results.csv")
    assert "borrow" not in header and len(rows) == 2
    assert "borrow" not in json.loads((written[1] / "spec.json").read_text(encoding="utf-8"))
    assert [p.name for p in (written[0] / "cache").glob("*.json")] == \
        [p.name for p in (written[1] / "cache").glob("*.json")]


def test_the_cache_key_tells_the_borrow_values_apart(tmp_path):
    """A folder run at paper, then its spec edited to gainful: the gainful plan is computed (the hand count), not
    the cached paper one read back; and each unit's cache file is named by its borrow values."""
    spec, out = _spec(tmp_path, 'borrow = ["paper"]\n', '["layerpipe"]'), tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert float(_rows(out / "results.csv")[1][0]["iteration_cycles"]) == CONV2_TO_4 + CONV1_DELTA_PART
    spec.write_text(spec.read_text(encoding="utf-8").replace('["paper"]', '["gainful"]'), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    (row,) = _rows(out / "results.csv")[1]
    assert (row["borrow"], float(row["iteration_cycles"])) == ("gainful", CONV2_TO_4)
    assert len(list((out / "cache").glob("*.json"))) == 2
    units = {}
    for borrow in ('["paper"]', '["gainful"]', '["paper", "gainful"]', '["gainful", "paper"]'):
        (unit,) = load_spec(_spec(tmp_path, f"borrow = {borrow}\n", '["layerpipe"]')).units()
        units[borrow] = unit
    digests = {unit.network: "d" for unit in units.values()}
    assert len({cache_file(out, unit, digests) for unit in units.values()}) == 4
    assert len({unit.key for unit in units.values()}) == 4


def test_a_design_sweep_runs_each_borrow_at_each_clock(tmp_path):
    extra = 'borrow = ["paper", "gainful"]\nsram_kb = [64]\nclocks_ghz = [0.5, 1.0]\n'
    spec = load_spec(_spec(tmp_path, extra))
    assert spec.size == 1 * (2 + 1) * 2
    assert main(["sweep", str(_spec(tmp_path, extra)), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    _, rows = _rows(tmp_path / "out" / "results.csv")
    cycles = {(r["method"], r["borrow"], r["clock_ghz"]): float(r["iteration_cycles"]) for r in rows}
    assert len(rows) == 6 and len(cycles) == 6
    for clock in ("0.5", "1.0"):  # one micro-batch of 32: the plain sweep's hand counts, at either clock
        assert cycles["layerpipe", "gainful", clock] == CONV2_TO_4 < cycles["layerpipe", "paper", clock]


def test_the_report_draws_gainful_as_a_method_of_its_own(swept):
    frame = pd.read_csv(swept / "results.csv")
    labelled = borrow_series(frame)
    assert list(labelled["method"]) == ["layerpipe", "layerpipe (gainful)", "pipedream"]
    assert borrow_series(frame.drop(columns="borrow")).equals(frame.drop(columns="borrow"))  # no key: as before
    assert series_methods(("pipedream", "layerpipe"), ("paper", "gainful")) == \
        ("pipedream", "layerpipe", "layerpipe (gainful)")
    assert series_methods(("layerpipe",), ("gainful",)) == ("layerpipe (gainful)",)


def test_the_report_refuses_borrow_rows_the_spec_json_does_not_give(swept):
    frame = pd.read_csv(swept / "results.csv")
    record = json.loads((swept / "spec.json").read_text(encoding="utf-8"))
    check_spec_rows(frame, record, swept / "results.csv", "archsim sweep")  # as written: taken
    with pytest.raises(InputError, match="2 rows, where the folder's spec.json gives 3 configurations"):
        check_spec_rows(frame.iloc[[0, 2]].reset_index(drop=True), record, swept / "results.csv", "archsim sweep")
    edited = frame.assign(borrow=frame["borrow"].replace({"gainful": "best"}))
    with pytest.raises(InputError, match="layerpipe's borrow 'best' is not on the folder's spec.json's borrow") as caught:
        check_spec_rows(edited, record, swept / "results.csv", "archsim sweep")
    assert (caught.value.where.line, caught.value.where.field) == (3, "borrow")
    with pytest.raises(InputError, match="no borrow column, where the folder's spec.json runs borrow paper, gainful"):
        check_spec_rows(frame.drop(columns="borrow"), record, swept / "results.csv", "archsim sweep")


@pytest.mark.long
def test_the_report_page_has_the_gainful_series(swept, tmp_path):
    assert main(["report", str(swept), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '"name":"layerpipe (gainful)"' in page  # a trace of its own in the speedup figure
    assert re.search(r"<b>layerpipe \(gainful\)</b> is fastest|layerpipe \(gainful\)</td>", page)  # the headline
    # the spec lists paper first: the Gantt is the printed walk's, its command without --borrow
    assert "LayerPipe schedule on 2 processors" in page and "--borrow" not in page


def test_the_report_schedule_of_a_spec_listing_gainful_first_is_the_gainful_plan():
    """The report's LayerPipe schedule is drawn at the spec's first borrow value; gainful says so in its title and
    command (``pipeline --borrow gainful`` redraws it), and its makespan is that of conv1 | conv2–conv4 (no δ″ of
    conv1 left on the bottleneck), lower than the printed walk's."""
    from archsim.array.config import ArrayConfig
    from archsim.sweep.report_sections import gantt_section
    from archsim.workload.shipped import load_shipped

    network, array = load_shipped("layerpipe_sample"), ArrayConfig(32, 32, "ws")
    first = pd.Series({"network": "layerpipe_sample", "rows": 32, "cols": 32, "dataflow": "ws", "batch": 32,
                       "mode": "paper", "only": "all"})
    titles, commands, spans = {}, {}, {}
    for borrow in ("paper", "gainful"):
        titles[borrow], _, commands[borrow] = gantt_section(network, array, first, 2, borrow=borrow)
        spans[borrow] = float(re.search(r"makespan ([\d,]+) cycles", titles[borrow]).group(1).replace(",", ""))
    assert "LayerPipe (borrow gainful) schedule" in titles["gainful"] and "--borrow gainful" in commands["gainful"]
    assert "borrow" not in titles["paper"] + commands["paper"]
    assert spans["gainful"] < spans["paper"]


@pytest.mark.parametrize("borrow, said", [((), "expected a value"), (("best",), "unknown value 'best'"),
                                          (("paper", "paper"), "expected each value once")])
def test_a_hand_built_spec_of_a_bad_borrow_is_refused_before_anything_is_written(tmp_path, borrow, said):
    from dataclasses import replace

    from archsim.sweep.runner import run_sweep

    spec = replace(load_spec(_spec(tmp_path, "", '["layerpipe"]')), borrow=borrow)
    with pytest.raises(InputError, match=f"{said}: borrow takes paper and gainful, each once") as caught:
        run_sweep(spec, tmp_path / "out", progress=False)
    assert caught.value.where.field == "borrow" and not (tmp_path / "out").exists()


def test_summary_keeps_the_spec_order_of_borrow(swept):
    """summary.csv lists LayerPipe's rows in the spec's order of borrow, as results.csv does (paper before
    gainful here), not sorted by name; a results.csv listing gainful first summarizes gainful first."""
    from archsim.sweep import summarize

    _, rows = _rows(swept / "summary.csv")
    assert [(r["method"], r["borrow"]) for r in rows] == [("layerpipe", "paper"), ("layerpipe", "gainful"),
                                                          ("pipedream", "")]
    frame = pd.read_csv(swept / "results.csv").iloc[[1, 0, 2]]  # as a spec of borrow = ["gainful", "paper"] writes
    summary = summarize(frame)
    assert list(zip(summary["method"], summary["borrow"].fillna(""), strict=True)) == \
        [("layerpipe", "gainful"), ("layerpipe", "paper"), ("pipedream", "")]


def test_each_layerpipe_series_is_compared_with_pipedream(swept):
    """The report's LayerPipe-vs-PipeDream table for each LayerPipe series the sweep has, its columns named by it:
    a sweep of borrow = ["gainful"] alone gets one (its rows are not ``layerpipe``), with the hand count's speedup
    (conv2–conv4 on the bottleneck, PipeDream's split: 0% improvement); both values give two; only the printed
    walk's is Table IV's (no paper columns on the gainful one)."""
    from archsim.report.sweep_report import layerpipe_series, table_iv
    from archsim.sweep import summarize

    frame = borrow_series(pd.read_csv(swept / "results.csv"))
    single = float(frame["single_processor_cycles"].iloc[0])
    gainful_only = frame[frame["borrow"].fillna("") != "paper"]
    summary = summarize(gainful_only)
    assert layerpipe_series(summary) == ["layerpipe (gainful)"]
    table = table_iv(summary, "layerpipe_sample", gainful_only, "analytic", "layerpipe (gainful)")
    assert list(table.columns[:3]) == ["processors", "LayerPipe (gainful)", "LayerPipe (gainful) (≤P)"]
    (row,) = table.to_dict("records")
    assert row["LayerPipe (gainful)"] == pytest.approx(single / CONV2_TO_4) == pytest.approx(row["PipeDream"])
    assert row["improvement %"] == pytest.approx(0) and row["comm overhead KiB per iteration"] == 0
    summary = summarize(frame)
    assert layerpipe_series(summary, ("pipedream", "layerpipe (gainful)", "layerpipe")) == \
        ["layerpipe (gainful)", "layerpipe"]
    paper = table_iv(summary, "layerpipe_sample", frame, "analytic")
    assert paper.iloc[0]["LayerPipe"] == pytest.approx(single / (CONV2_TO_4 + CONV1_DELTA_PART))
    assert paper.iloc[0]["improvement %"] < 0  # the printed walk trails PipeDream here (its δ″ of conv1)


@pytest.mark.long
def test_the_report_of_gainful_alone_has_its_table(tmp_path):
    out, page = tmp_path / "out", tmp_path / "r.html"
    assert main(["sweep", str(_spec(tmp_path, 'borrow = ["gainful"]\n')), "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out), "--out", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "layerpipe_sample: LayerPipe (gainful) vs PipeDream</h2>" in text
    assert "<th>LayerPipe (gainful)</th>" in text and "layerpipe_sample: LayerPipe vs PipeDream" not in text
