"""A ``dtypes`` sweep's report names each design's width by its dtype (results.csv's ``dtype`` column),
in the Pareto chart's hover text and the energy bars' labels; an ``element_bytes`` sweep keeps bytes."""

from __future__ import annotations

import html

from test_dtype_everywhere import SWEEP
from test_gantt_borrowed import plotly_figures

from archsim.cli import main


def report_strings(tmp_path, name: str, axis: str) -> tuple[list[str], list[str]]:
    """(hover texts of the Pareto chart's markers, x labels of the energy bars) of a sweep's report."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text(SWEEP + axis, encoding="utf-8")
    report = tmp_path / f"{name}.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / name), "--report", str(report), "--quiet"]) == 0
    figures = plotly_figures(report.read_text(encoding="utf-8"))
    def traces_of(title: str) -> list[dict]:
        (traces,) = [traces for traces, layout in figures if title in layout["title"]["text"]]
        return traces

    hover = [html.unescape(t) for trace in traces_of("time vs energy per iteration") for t in trace["text"]]
    bars = [html.unescape(x) for trace in traces_of("energy per iteration by part") for x in trace["x"]]
    return hover, bars


def test_dtypes_sweep_labels_name_the_dtype(tmp_path):
    hover, bars = report_strings(tmp_path, "named", 'dtypes = ["int8", "fp16"]\n')
    assert len(hover) == 2 and bars
    assert sorted(", int8, M=" in t for t in hover) == [False, True]  # one design each
    assert sorted(", fp16, M=" in t for t in hover) == [False, True]
    assert not any(" B, M=" in t for t in hover) and not any("B M" in x for x in bars)
    assert all(" int8 M" in x or " fp16 M" in x for x in bars)


def test_element_bytes_sweep_labels_keep_the_bytes(tmp_path):
    hover, bars = report_strings(tmp_path, "widths", "element_bytes = [1, 2]\n")
    assert sorted(", 1 B, M=" in t for t in hover) == [False, True]
    assert sorted(", 2 B, M=" in t for t in hover) == [False, True]
    assert all("B M" in x for x in bars) and not any("int8" in t or "fp16" in t for t in hover + bars)
