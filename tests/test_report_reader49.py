"""The sweep report as a reader meets it: networks in the spec's order (not alphabetical), each network's own
per-layer chart and LayerPipe Gantt, each of their titles once (the heading), a table's header aligned as its
cells (text left, numbers right), and the methods' error bars side by side rather than on top of each other."""

from __future__ import annotations

import csv
import html
import json
import re
import subprocess
from itertools import pairwise
from pathlib import Path

import pandas as pd
import pytest
from test_gantt_borrowed import plotly_figures
from test_report import CHROMIUM, FLAGS

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The spec lists layerpipe_sample before ffnn8: alphabetically ffnn8 comes first.
SPEC = """[sweep]
name = "reader"
networks = ["layerpipe_sample", "ffnn8"]
arrays = ["16x16", "32x32"]
dataflows = ["ws"]
batches = [4, 8]
processors = [2, 3]
methods = ["layerpipe", "pipedream", "gpipe"]
mode = "exact"
"""
ORDER = ("layerpipe_sample", "ffnn8")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("reader")
    spec = folder / "spec.toml"
    spec.write_text(SPEC, encoding="utf-8")
    out = folder / "report.html"
    assert main(["sweep", str(spec), "--out", str(folder / "results"), "--quiet", "--report", str(out)]) == 0
    return out, folder / "results"


def headings(page: str, tag: str = "h2") -> list[str]:
    return [html.unescape(h) for h in re.findall(rf"<{tag}>([^<]*)</{tag}>", page)]


def network_of(heading: str) -> str:
    return heading.split(":")[0].split(" ")[0].split("[")[0]


def test_networks_follow_the_specs_order_throughout_the_page(report):
    page = report[0].read_text(encoding="utf-8")
    intro = html.unescape(re.sub(r"<[^>]+>", "", page[page.index("<h1>"):page.index("<h2>")]))
    assert "layerpipe_sample, ffnn8;" in intro
    assert [network_of(h) for h in headings(page, "h3")] == list(ORDER)  # the headline's blocks
    sections = [network_of(h) for h in headings(page)[1:]]  # after "At a glance"
    assert sections == sorted(sections, key=ORDER.index) and set(sections) == set(ORDER)


def _page_without_spec_json(report, tmp_path) -> str:
    """The report of the fixture's results copied without spec.json (no record of the spec's order)."""
    import shutil

    _, results = report
    copy = tmp_path / "results"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("spec.json", "cache", ".archsim.lock"))
    out = tmp_path / "r.html"
    assert main(["report", str(copy), "--out", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_a_folder_without_spec_json_lists_its_networks_alphabetically(report, tmp_path):
    """No record of the spec's order: the documented fallback, alphabetical."""
    assert [network_of(h) for h in headings(_page_without_spec_json(report, tmp_path), "h3")] == sorted(ORDER)


def test_each_network_has_its_per_layer_chart_and_gantt_after_its_speedups(report):
    page = report[0].read_text(encoding="utf-8")
    titles = headings(page)[1:]
    for network in ORDER:
        own = [t for t in titles if network_of(t) == network]
        assert own[0] == f"{network}: speedup vs processors"
        assert [t for t in own if "per-layer F/G/D cycles" in t] == [own[-2]]
        assert [t for t in own if "LayerPipe schedule" in t] == [own[-1]]
    # each per-layer chart draws its own network's layers, as its CSV names them
    charts = [traces for traces, _ in plotly_figures(page)
              if [trace.get("name") for trace in traces][:1] == ["F (forward)"] and traces[0].get("type") == "bar"
              and traces[0].get("orientation") != "h"]
    layers = [[html.unescape(x) for x in traces[0]["x"]] for traces in charts]
    expected = []
    for network in ORDER:
        with open(ROOT / "layers" / f"{network}.csv", newline="", encoding="utf-8") as handle:
            expected.append([row[0].strip() for row in list(csv.reader(handle))[1:] if row and row[0].strip()])
    assert layers == expected


def test_the_gantt_and_per_layer_charts_draw_a_short_title_of_their_own(report):
    """The Gantt's long title was both the heading and the figure's own, wrapped onto two lines above its legend;
    then neither chart drew one, so a plot saved alone (plotly's camera button) said nothing of what it shows. Each
    draws one line now naming the network, the array and the batch: the detail configuration is the smallest array
    at the smallest batch (16x16 ws, batch 4), the Gantt's processors those its heading names."""
    page = report[0].read_text(encoding="utf-8")
    titled = [html.unescape(str(layout.get("title", {}).get("text", ""))) for _, layout in plotly_figures(page)]
    assert not [t for t in titled if "LayerPipe schedule" in t or "per-layer" in t]  # the heading's words stay there
    assert len([t for t in headings(page) if "LayerPipe schedule" in t]) == len(ORDER)
    for network in ORDER:
        [gantt] = [h for h in headings(page) if network_of(h) == network and "LayerPipe schedule" in h]
        processors = re.search(r"schedule on (\d+) processors", gantt)[1]
        assert f"{network}: F/G/D cycles by layer, 16x16 ws, batch 4" in titled
        assert f"{network}: LayerPipe on {processors} processors, 16x16 ws, batch 4" in titled
    assert all(len(t) <= 80 for t in titled if "LayerPipe on" in t or "by layer" in t)  # one line (gantt.wrapped)


def shown_tables(page: str) -> list[tuple[set[str], list[str], list[list[str]]]]:
    """Each table: its classes, header texts and rows of cell texts, as shown."""
    found = []
    for attrs, body in re.findall(r"<table([^>]*)>(.*?)</table>", page, re.DOTALL):
        classes = set(re.search(r'class="([^"]*)"', attrs)[1].split())
        heads = [html.unescape(h).strip() for h in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", body, re.DOTALL)]
        rows = [[html.unescape(c).strip() for c in re.findall(r"<td(?:\s[^>]*)?>(.*?)</td>", row, re.DOTALL)]
                for row in re.findall(r"<tr>(.*?)</tr>", body.split("</thead>", 1)[1], re.DOTALL)]
        found.append((classes, heads, rows))
    return found


def is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def test_every_column_of_numbers_and_only_those_are_marked_for_right_alignment(report):
    """By the cells as shown: a column is of numbers when every cell reads as one (— or blank: none)."""
    tables = shown_tables(report[0].read_text(encoding="utf-8"))
    assert len(tables) == 2 + 2  # the headline's table per network, LayerPipe vs PipeDream per network
    for classes, heads, rows in tables:
        numbers = {f"num{n}" for n in range(1, len(heads) + 1)
                   if all(is_number(row[n - 1]) for row in rows if row[n - 1] not in ("", "—"))}
        assert {c for c in classes if c.startswith("num")} == numbers, heads
    headline = tables[0]
    assert {"num1", "num5", "num7"}.isdisjoint(headline[0])  # method, best at, range: text
    assert headline[1][0] == "method" and headline[1][4] == "best at"


def values(array) -> list:
    """A plotly figure's array: a list, or plotly's typed array (``dtype`` and base64 ``bdata``)."""
    import base64

    import numpy as np

    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def test_the_speedup_figure_sets_the_methods_points_side_by_side_at_their_values(report):
    """The offset is drawn (plotly's grouped scatter), the data are the summary's own."""
    page, results = report[0].read_text(encoding="utf-8"), report[1]
    summary = pd.read_csv(results / "summary.csv")
    [(traces, layout)] = [(t, layout) for t, layout in plotly_figures(page)
                          if "layerpipe_sample: speedup over one processor" in
                          html.unescape(str(layout.get("title", {}).get("text", "")))]
    assert layout["scattermode"] == "group" and 0 < layout["scattergap"] < 1
    assert sorted(t["offsetgroup"] for t in traces) == ["gpipe", "layerpipe", "pipedream"]
    for trace in traces:
        rows = summary[(summary.network == "layerpipe_sample") & (summary.method == trace["name"])]
        assert values(trace["x"]) == rows.processors.tolist()
        assert values(trace["y"]) == pytest.approx(rows.speedup.tolist(), rel=1e-12)


PROBE = """<script>window.addEventListener('load', () => setTimeout(() => {
const align = [...document.querySelectorAll('table')].map(t => [...t.querySelectorAll('tr')].map(
  r => [...r.children].map(c => getComputedStyle(c).textAlign)));
const bars = [...document.querySelectorAll('.js-plotly-plot')].filter(
  p => (p.layout.title.text || '').includes('speedup over one processor')).map(p => [...p.querySelectorAll(
  'g.trace.scatter')].map(g => [...g.querySelectorAll('path.yerror')].map(e => e.getAttribute('d'))));
document.body.setAttribute('data-probe', JSON.stringify({align, bars}));}, 500));</script></body>"""


@pytest.mark.long  # headless Chromium on a 5 MB page: a few seconds
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
def test_in_chromium_headers_align_as_their_cells_and_error_bars_sit_apart(report, tmp_path):
    probed = tmp_path / "probed.html"
    probed.write_text(report[0].read_text(encoding="utf-8").replace("</body>", PROBE), encoding="utf-8")
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                             probed.as_uri()], capture_output=True, text=True, check=False, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    probe = json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', result.stdout)[1]))
    for table in probe["align"]:
        header, *rows = [["left" if a == "start" else a for a in row] for row in table]  # start: left, in LTR
        assert set(header) <= {"left", "right"}
        assert all(row == header for row in rows), table  # each cell as its column's header
    assert any("right" in t[0] for t in probe["align"]) and any("left" in t[0] for t in probe["align"])
    for figure in probe["bars"]:
        xs = [[float(re.match(r"M([\d.]+),", d)[1]) for d in trace] for trace in figure]
        assert len(xs) == 3 and all(len(x) == 2 for x in xs)  # three methods, processors 2 and 3
        for at in zip(*xs, strict=True):  # one processor count: each method's bar 3 px or more from the next
            ordered = sorted(at)
            assert all(b - a >= 3 for a, b in pairwise(ordered)), at


def test_a_column_of_numbers_formatted_before_the_table_is_still_numbers():
    """The GPU study formats its floats as text ("0.918") before its table: those columns align right too; a
    column that mixes words and numbers ("all", "4") and one of booleans stay text."""
    from archsim.report.html_page import table

    frame = pd.DataFrame({"op": ["F", "D"], "batch": ["all", "4"], "rho": ["0.918", ""], "count": [90, 1_234],
                          "bytes": ["1,234", "1e+05"], "split": [True, False], "range": ["0.999–1.4", "1–2"],
                          "ratio": [0.5, float("nan")], "mixed": [1.5, None]})
    [(classes, heads, rows)] = shown_tables(table(frame, na_rep="—"))
    assert heads == list(frame.columns) and rows[0][:2] == ["F", "all"]
    assert sorted(c for c in classes if c.startswith("num")) == sorted(["num3", "num4", "num5", "num8", "num9"])


CFG_SPEC = """[sweep]
name = "reader_cfg"
networks = ["ffnn8"]
arrays = ["small.cfg"]
batches = [4]
processors = [2, 3]
methods = ["layerpipe"]
engine = "cycle"
"""


@pytest.mark.long  # the cycle engine: a sweep, its report and the pipeline command, a few seconds
def test_a_cfg_sweeps_gantt_command_reproduces_its_makespan(tmp_path, capsys, monkeypatch):
    """The Gantt's "Regenerate" command named ``--array ROWSxCOLS`` for a .cfg array, so under the cycle engine
    it ran on the default SRAMs and bandwidth, not the file's: it now names ``--config`` as the per-layer
    chart's does, and run as printed gives the makespan the heading states."""
    import shlex

    text = (ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg").read_text(encoding="utf-8")
    small = text.replace("IfmapSramSzkB:    64", "IfmapSramSzkB:    2").replace("Bandwidth : 10", "Bandwidth : 2")
    assert small != text
    (tmp_path / "small.cfg").write_text(small, encoding="utf-8")
    (tmp_path / "spec.toml").write_text(CFG_SPEC, encoding="utf-8")
    out = tmp_path / "report.html"
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "results"), "--quiet",
                 "--report", str(out)]) == 0
    page = html.unescape(out.read_text(encoding="utf-8"))
    [title] = [h for h in headings(out.read_text(encoding="utf-8")) if "LayerPipe schedule" in h]
    shown = float(re.search(r"makespan ([\d,.]+) cycles", title)[1].replace(",", ""))
    [command] = re.findall(r"Regenerate: <code>(archsim pipeline [^<]*)</code>", page)
    argv = shlex.split(command)[1:]
    assert "--config" in argv and "--array" not in argv
    monkeypatch.chdir(tmp_path)  # its --gantt file lands here
    capsys.readouterr()
    assert main(argv) == 0
    printed = float(re.search(r"^# makespan: ([\d.]+)$", capsys.readouterr().out, re.MULTILINE)[1])
    assert shown == pytest.approx(printed, abs=0.5)  # the heading writes it to the cycle (table_number)


def figure_methods(page: str, words: str) -> list[list[str]]:
    """The legend order (trace order) of each figure whose title holds ``words``."""
    return [[html.unescape(str(t.get("name"))) for t in traces] for traces, layout in plotly_figures(page)
            if words in html.unescape(str(layout.get("title", {}).get("text", "")))]


def methods_shown(page: str) -> tuple[str, list[list[str]], list[list[str]]]:
    """The intro's list of methods, and the speedup and distribution figures' legends."""
    intro = html.unescape(re.sub(r"<[^>]+>", "", page[page.index("<h1>"):page.index("<h2>")]))
    return intro, figure_methods(page, "speedup over one processor"), figure_methods(page, ": speedup by ")


def test_methods_follow_the_specs_order_in_the_intro_legends_and_boxes(tmp_path):
    """They were alphabetical (gpipe first) in the intro, the speedup legend and the boxes; the spec's order
    now, neither alphabetical nor the paper's here."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.replace('["layerpipe", "pipedream", "gpipe"]', '["pipedream", "gpipe", "layerpipe"]')
                    .replace('["layerpipe_sample", "ffnn8"]', '["ffnn8"]'), encoding="utf-8")
    out = tmp_path / "report.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "results"), "--quiet", "--report", str(out)]) == 0
    intro, lines, boxes = methods_shown(out.read_text(encoding="utf-8"))
    order = ["pipedream", "gpipe", "layerpipe"]
    assert "ffnn8; pipedream, gpipe, layerpipe." in intro
    assert lines == [order] and boxes == [order, order]


def test_without_spec_json_methods_follow_the_papers_order(report, tmp_path):
    """The documented fallback: LayerPipe's paper's order (layerpipe, pipedream, gpipe), not alphabetical."""
    intro, lines, boxes = methods_shown(_page_without_spec_json(report, tmp_path))
    order = ["layerpipe", "pipedream", "gpipe"]
    assert "; layerpipe, pipedream, gpipe." in intro
    assert lines == [order] * 2 and boxes == [order] * 4


def test_the_headlines_ranking_breaks_a_tie_by_the_pages_order():
    """Its rows rank the methods (wins, then median: the leader first); two methods equal in both were listed
    alphabetically, gpipe before pipedream against the spec: now in the page's order. By hand: layerpipe wins
    both configurations; gpipe and pipedream win none, each at median 1.5."""
    from test_report_headline import columns, rows

    from archsim.report.headline import headline

    tied = rows({(32, 8, 2): {"layerpipe": 3.0, "pipedream": 1.0, "gpipe": 2.0},
                 (32, 8, 4): {"layerpipe": 4.0, "pipedream": 2.0, "gpipe": 1.0}})
    assert columns(headline(tied, (), ("layerpipe", "pipedream", "gpipe")))["method"] == ["layerpipe", "pipedream",
                                                                                          "gpipe"]
    assert columns(headline(tied, (), ("gpipe", "pipedream")))["method"] == ["layerpipe", "gpipe", "pipedream"]


def test_every_speedup_axis_starts_at_zero(report):
    """Speedup is a ratio: on a zero-based axis a point's height is its speedup to scale. The line figure started
    at 0 only as plotly's grouped scatter happened to draw it, and the boxes at their least value (near 1)."""
    page = report[0].read_text(encoding="utf-8")
    axes = [layout.get("yaxis", {}) for _, layout in plotly_figures(page)
            if "speedup" in html.unescape(str(layout.get("yaxis", {}).get("title", {}).get("text", "")))]
    assert len(axes) == len(ORDER) * 3  # per network: the lines and two box figures
    assert all(axis.get("rangemode") == "tozero" for axis in axes)
