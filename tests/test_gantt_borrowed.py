"""Gantt charts mark the ops LayerPipe's Algorithm 1 borrowed (a δ or δ part run away from its layer's
weights) with a hatch and a legend entry, as its tables star them: exactly those bars, nothing else.

The reference is the paper's Table III as archsim reproduces it (README's worked example):
layerpipe_sample on 3 processors in paper mode borrows conv1's δ″ (on processor 2) and conv2's δ″
(on processor 3); every other op runs with its layer's weights.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import archsim
from archsim.cli import main
from archsim.report.gantt import BORROWED_LABEL, gantt_figure

MICROBATCHES = 4
BORROWED = {("conv1", "D2"), ("conv2", "D2")}  # Table III: δ″ of conv1 and of conv2


def hatched_and_plain(traces: list[dict]) -> tuple[list[str], list[str]]:
    """The hover texts (op ids) of hatched and of plain bars over a figure's bar traces."""
    hatched, plain = [], []
    for trace in traces:
        ops = trace.get("hovertext") or []
        shapes = ((trace.get("marker") or {}).get("pattern") or {}).get("shape") or [""] * len(ops)
        for op, shape in zip(ops, shapes):
            (hatched if shape else plain).append(op)
    return hatched, plain


def expected_borrowed_ids() -> set[str]:
    return {f"{kind}:{layer}:{b}" for layer, kind in BORROWED for b in range(MICROBATCHES)}


def sample_plan():
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32, mode="paper")
    plan = archsim.pipeline(profile, processors=3, method="layerpipe")
    return plan, archsim.simulate(plan, profile, microbatches=MICROBATCHES)


def test_the_plan_names_the_ops_its_table_stars():
    plan, _ = sample_plan()
    assert plan.borrowed_ops == BORROWED
    starred = {tuple(reversed(op.rstrip("*").split(":"))) for row in plan.to_rows() for op in row["ops"].split()
               if op.endswith("*")}
    assert starred == BORROWED


def test_gantt_figure_hatches_exactly_the_borrowed_ops():
    plan, timeline = sample_plan()
    fig = json.loads(gantt_figure(timeline.to_frame(), "sample", borrowed=plan.borrowed_ops).to_json())
    hatched, plain = hatched_and_plain(fig["data"])
    assert sorted(hatched) == sorted(expected_borrowed_ids())
    assert len(hatched) + len(plain) == len(timeline.to_frame())
    legend = [trace for trace in fig["data"] if trace.get("name") == BORROWED_LABEL]
    assert len(legend) == 1 and legend[0]["marker"]["pattern"]["shape"] == "/"
    assert BORROWED_LABEL == "borrowed (Algorithm 1)"


def test_gantt_without_borrowed_ops_has_no_hatch_and_no_legend_entry():
    _, timeline = sample_plan()
    fig = json.loads(gantt_figure(timeline.to_frame(), "sample").to_json())
    hatched, _ = hatched_and_plain(fig["data"])
    assert hatched == [] and BORROWED_LABEL not in [trace.get("name") for trace in fig["data"]]


def plotly_figures(page: str) -> list[tuple[list[dict], dict]]:
    """Every figure's (traces, layout) in a page: the two JSON arguments after Plotly.newPlot's id."""
    decoder, found = json.JSONDecoder(), []
    for match in re.finditer(r'Plotly\.newPlot\(\s*"[^"]*",\s*', page):
        traces, end = decoder.raw_decode(page, match.end())
        layout, _ = decoder.raw_decode(page, page.index("{", end))
        found.append((traces, layout))
    return found


def test_pipeline_gantt_html_hatches_exactly_the_borrowed_ops(tmp_path: Path, capsys):
    out = tmp_path / "g.html"
    assert main(["pipeline", "layerpipe_sample", "--processors", "3", "--method", "layerpipe", "--mode", "paper",
                 "--microbatches", str(MICROBATCHES), "--gantt", str(out)]) == 0
    capsys.readouterr()
    ((traces, _),) = plotly_figures(out.read_text())
    hatched, _ = hatched_and_plain(traces)
    assert sorted(html.unescape(op) for op in hatched) == sorted(expected_borrowed_ids())
    assert BORROWED_LABEL in [html.unescape(str(trace.get("name"))) for trace in traces]


def test_pipedream_gantt_html_marks_nothing(tmp_path: Path, capsys):
    out = tmp_path / "g.html"
    assert main(["pipeline", "layerpipe_sample", "--processors", "3", "--method", "pipedream", "--mode", "paper",
                 "--microbatches", "2", "--gantt", str(out)]) == 0
    capsys.readouterr()
    ((traces, _),) = plotly_figures(out.read_text())
    assert hatched_and_plain(traces)[0] == []
    assert BORROWED_LABEL not in [html.unescape(str(trace.get("name"))) for trace in traces]


REPORT_SPEC = """[sweep]
name = "b"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
dataflows = ["ws"]
batches = [4]
processors = [3]
methods = ["layerpipe", "pipedream"]
mode = "exact"
"""


def test_report_timeline_hatches_exactly_the_ops_its_table_stars(tmp_path: Path, capsys):
    spec, out = tmp_path / "spec.toml", tmp_path / "report.html"
    spec.write_text(REPORT_SPEC)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "results"), "--quiet", "--report", str(out)]) == 0
    capsys.readouterr()
    # the Gantt: the page's one figure of horizontal bars (its title is the section's heading)
    (traces,) = [traces for traces, _ in plotly_figures(out.read_text())
                 if any(trace.get("orientation") == "h" for trace in traces)]
    # The reference: the ops `archsim pipeline` stars in its table for the same configuration.
    profile = archsim.profile("layerpipe_sample", array="16x16", batch=4, mode="exact")
    rows = archsim.pipeline(profile, processors=3, method="layerpipe").to_rows()
    starred = [op.rstrip("*") for row in rows for op in row["ops"].split() if op.endswith("*")]
    assert starred
    hatched, _ = hatched_and_plain(traces)
    assert sorted(html.unescape(op) for op in hatched) == sorted(f"{op}:{b}" for op in starred for b in range(8))
