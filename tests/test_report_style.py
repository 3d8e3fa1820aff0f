"""Report polish: one colour per op kind everywhere, Gantt pages sized to their rows with the legend
visible (checked in headless Chromium), log toggle where one layer dwarfs the rest, no exponents in tables."""

from __future__ import annotations

import re
import subprocess

import pandas as pd
import pytest
from test_report import CHROMIUM, FLAGS

from archsim.report.gantt import gantt_figure, gantt_height, write_gantt
from archsim.report.style import KIND_COLORS, KIND_LABELS, table_number
from archsim.report.sweep_report import layer_breakdown_figure


def frame(rows: int) -> pd.DataFrame:
    kinds = ["F", "G", "D", "D1", "D2", "comm"]
    return pd.DataFrame([{"op": f"{k}:l{p}", "processor": f"p{p}", "start": 10.0 * i, "end": 10.0 * i + 9,
                          "kind": k} for p in range(1, rows + 1) for i, k in enumerate(kinds)])


# Kinds that name the same work in two vocabularies (zero-bubble's I and W are LayerPipe's δ and G; a
# training timeline's A is the array pipeline's S) share a colour; every other pair differs.
SAME_WORK = {"I": "D", "W": "G", "A": "S"}


def test_each_op_kind_has_its_own_colour_in_every_figure():
    canonical = {kind: colour for kind, colour in KIND_COLORS.items() if kind not in SAME_WORK}
    assert len(set(canonical.values())) == len(canonical)
    assert {kind: KIND_COLORS[kind] for kind in SAME_WORK} == {kind: KIND_COLORS[same] for kind, same in SAME_WORK.items()}
    gantt = gantt_figure(frame(3))
    colours = {trace.name: trace.marker.color for trace in gantt.data}
    assert colours == {KIND_LABELS[k]: KIND_COLORS[k] for k in ("F", "G", "D", "D1", "D2", "comm")}
    costs = pd.DataFrame({"layer": ["conv1", "conv2"], "F_cycles": [1, 5], "G_cycles": [2, 5], "D_cycles": [40, 20]})
    breakdown = layer_breakdown_figure(costs, "t")
    assert {trace.name.split()[0]: trace.marker.color for trace in breakdown.data} == {
        k: KIND_COLORS[k] for k in ("F", "G", "D")}


def test_layer_breakdown_starts_linear_and_offers_log_scale():
    """Stacked bars on a log axis misstate their parts: linear by default, even when one layer dwarfs the rest."""
    even = pd.DataFrame({"layer": list("abc"), "F_cycles": [5, 6, 7], "G_cycles": [5, 6, 7], "D_cycles": [5, 6, 7]})
    skewed = even.assign(D_cycles=[5000, 6, 7])
    assert layer_breakdown_figure(even, "t").layout.yaxis.type == "linear"
    fig = layer_breakdown_figure(skewed, "t")
    assert fig.layout.yaxis.type == "linear"
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["linear", "log"]


def test_table_numbers_never_use_exponents_for_large_values():
    assert table_number(109_000.4, 3) == "109,000"
    assert table_number(2.99700397, 4) == "2.997"
    assert table_number(0.0012345, 3) == "0.00123"


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
@pytest.mark.parametrize("rows", [3, 12])
def test_standalone_gantt_page_fits_its_rows_and_shows_the_whole_legend(tmp_path, rows):
    page = write_gantt(frame(rows), tmp_path / "g.html", title="t")
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,800",
                             "--dump-dom", page.as_uri()], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    svg = re.search(r'<svg class="main-svg"[^>]*width="([\d.]+)" height="([\d.]+)"', result.stdout)
    assert svg and float(svg.group(2)) == gantt_height(rows) >= 36 * rows
    assert float(svg.group(1)) <= 1000  # no wider than the window
    # plotly draws a legend scrollbar only when the legend is clipped
    bar = re.search(r'<rect class="scrollbar"[^>]*height="([\d.]+)"', result.stdout)
    assert bar is None or float(bar.group(1)) == 0
    assert len(re.findall(r'class="traces"', result.stdout)) >= 6  # every kind drawn, in the legend too
