"""The sweep report opens with its answer: which schedule wins, by how much and where (hand-counted on a
small made-up sweep), before any figure; and it names the model (mode, engine) and the docs that explain it."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest
from test_report import SPEC

from archsim.cli import main
from archsim.report.headline import headline


def rows(speedups: dict[tuple[int, int, int], dict[str, float]]) -> pd.DataFrame:
    """Results rows of one network: (array side, batch, processors) → method → speedup."""
    return pd.DataFrame([{"network": "net", "only": "conv", "mode": "paper", "rows": side, "cols": side,
                          "dataflow": "ws", "batch": batch, "processors": procs, "method": method, "speedup": value}
                         for (side, batch, procs), by in speedups.items() for method, value in by.items()])


# Four configurations. By hand: a wins 3 (its ratios to b: 2, 1.5, 1.2; 0.5 where b wins), c wins none.
# a ÷ b per configuration: 2.0, 1.5, 1.2, 0.5 → median 1.35; by array: 32 → (2.0, 1.5) median 1.75,
# 64 → (1.2, 0.5) median 0.85; by batch: 8 → (2.0, 1.2) 1.6, 16 → (1.5, 0.5) 1.0; by processors: 2 → (2.0, 0.5)
# 1.25, 4 → (1.5, 1.2) 1.35. a ÷ c: 4, 3, 2, 2 → median 2.5.
SMALL = rows({(32, 8, 2): {"a": 4.0, "b": 2.0, "c": 1.0}, (32, 16, 4): {"a": 3.0, "b": 2.0, "c": 1.0},
              (64, 8, 4): {"a": 1.2, "b": 1.0, "c": 0.6}, (64, 16, 2): {"a": 1.0, "b": 2.0, "c": 0.5}})


def text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def columns(markup: str) -> dict[str, list[str]]:
    """The first table's cells by header, as shown."""
    heads = [text(h).strip() for h in re.findall(r"<th>(.*?)</th>", markup, re.DOTALL)]
    body = [[text(c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.DOTALL)]
            for row in re.findall(r"<tr>(.*?)</tr>", markup.split("</thead>", 1)[1].split("</table>", 1)[0], re.DOTALL)]
    return {head: [row[i] for row in body] for i, head in enumerate(heads)}


def test_headline_counts_wins_and_states_the_leaders_ratio_and_where_it_is_largest():
    shown = " ".join(text(headline(SMALL)).split())
    assert "net (conv layers, paper mode)" in shown
    assert "a is fastest in 3 of 4 configurations per method" in shown
    assert "a median 1.35× b's, 2.5× c's" in shown
    assert ("over b its lead is largest on 32x32 arrays (median 1.75×), at batch 8 (median 1.6×), "
            "on 4 processors (median 1.35×)") in shown
    table = columns(headline(SMALL))
    assert table["method"] == ["a", "b", "c"]
    assert table["fastest in (of 4)"] == ["3", "1", "0"]
    # medians by hand: a (1, 1.2, 3, 4) → 2.1; b (1, 2, 2, 2) → 2; c (.5, .6, 1, 1) → 0.8
    assert table["median speedup (×)"] == ["2.1", "2", "0.8"]
    assert table["best at"] == ["32x32, batch 8, 2 processors"] * 3
    assert table["a ÷ this method: median (×)"] == ["—", "1.35", "2.5"]
    assert table["range (×)"] == ["", "0.5–2", "2–4"]
    assert "NaN" not in headline(SMALL) and "nan" not in shown


def test_a_tie_is_no_ones_win_and_one_method_gets_no_headline():
    tied = rows({(32, 8, 2): {"a": 2.0, "b": 2.0}, (32, 8, 3): {"a": 3.0, "b": 2.0}})
    shown = " ".join(text(headline(tied)).split())
    assert "a is fastest in 1 of 2 configurations per method, 1 tied" in shown
    assert headline(SMALL[SMALL.method == "a"]) == ""


def test_rows_that_share_a_configuration_get_no_headline_rather_than_a_wrong_one():
    """Two rows of one configuration and method: an axis the key does not know, so no ratio can be trusted."""
    assert headline(pd.concat([SMALL, SMALL])) == ""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("headline")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    out = folder / "report.html"
    assert main(["sweep", str(spec), "--out", str(folder / "results"), "--quiet", "--report", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_the_report_opens_with_the_headline_and_names_its_model(page):
    headings = re.findall(r"<h2>([^<]*)</h2>", page)
    assert headings[0] == "At a glance: which schedule wins, by how much, where"
    assert page.index("At a glance") < page.index('class="plotly-graph-div')
    intro = text(page[page.index("<h1>"):page.index("<h2>")])
    assert "exact mode" in intro and "analytic array engine" in intro
    assert "docs/concepts.md" in intro and "layerpipe_sample" in intro


def test_the_reports_gantt_title_writes_the_makespan_without_an_exponent(page):
    title = re.search(r"makespan ([^<]*) cycles</h2>", html.unescape(page)).group(1)
    assert re.fullmatch(r"[0-9][0-9,.]*", title), title


def style_rules(page_text: str) -> dict[str, str]:
    """A page's ``<style>`` as selector → its declarations (later rules of one selector appended)."""
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", re.search(r"<style>(.*?)</style>", page_text, re.DOTALL)[1]):
        for selector in selectors.split(","):
            rules[selector.strip()] = rules.get(selector.strip(), "") + body + ";"
    return rules


def test_wide_tables_scroll_inside_the_page_and_keep_each_cell_on_one_line(page, tmp_path, capsys):
    """The search front's table (19 columns) ran past a 1,400-pixel window and broke "interleaved-zb" in two:
    every kind of page now lets a table scroll by itself and keeps a cell on one line."""
    from pathlib import Path

    from archsim.report.page import page as study_page

    root = Path(__file__).resolve().parents[1]
    front = tmp_path / "front.html"
    assert main(["search", str(root / "configs/transformers/gpt_1024h_24l.json"), "--cluster",
                 str(root / "configs/clusters/a100_node.toml"), "--global-batch", "32", "--top", "1",
                 "--schedule", "1f1b", "--pareto-html", str(front)]) == 0  # one schedule: the page's style is checked
    capsys.readouterr()
    for text in (page, front.read_text(encoding="utf-8"), study_page("t", [(pd.DataFrame({"a": [1.0]}), "c")])):
        rules = style_rules(text)
        table = rules["table"].replace(" ", "")
        assert "display:block" in table and "overflow-x:auto" in table and "max-width:100%" in table
        assert "white-space:nowrap" in rules["td"].replace(" ", "")


def test_a_design_sweeps_axes_are_configurations_of_their_own():
    """Two SRAM sizes of one array, batch and processor count are two configurations, and the page says so:
    4 configurations by hand, a ahead of b in 3 (ratios 2, 1.5, 1.2, 0.5 as in SMALL)."""
    design = SMALL.assign(sram_kb=[16] * 3 + [64] * 3 + [16] * 3 + [64] * 3, processors=2, batch=8,
                          rows=[32] * 6 + [64] * 6, cols=[32] * 6 + [64] * 6)
    shown = " ".join(text(headline(design)).split())
    assert "processor count; each of its SRAM sizes a configuration of its own" in shown
    assert "a is fastest in 3 of 4 configurations per method" in shown and "a median 1.35× b's" in shown
