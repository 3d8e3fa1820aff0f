"""Nothing a user's file or flag names runs in a page (issue 32): every HTML output — Gantt (pipeline,
schedule, plan), cluster, sweep report, study pages — escapes the user's text in titles, headings,
tables, captions and plotly labels.

Two checks, independent of the page builder: a parser that lists every tag, attribute and plotly
string a page holds (a hostile name must add no tag, no ``on…`` handler, and no ``<`` to a string
plotly renders as HTML), run over random names; and headless Chromium, where a hostile name's
script would mark the document if it ran.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_report import CHROMIUM, FLAGS

from archsim.cli import main
from archsim.cluster.report import write_cluster_report
from archsim.report.gantt import write_gantt
from archsim.report.page import write_page
from archsim.report.sweep_report import build_report
from archsim.sweep.summary import summarize

ROOT = Path(__file__).resolve().parents[1]
MARK = "document.documentElement.setAttribute('data-pwned','1')"
HOSTILE = (f"</title></script><script>{MARK}</script><img src=x onerror=\"{MARK}\">"
           f"<b onmouseover='{MARK}'>&amp;\"'<a href=\"javascript:{MARK}\">x</a>")
BUNDLE = re.compile(r"<script[^>]*>\s*/\*\*\s*\* plotly\.js.*?</script>", re.DOTALL)
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "section", "div", "script", "table",
                "thead", "tbody", "tr", "th", "td", "code", "b", "figure", "figcaption", "ul", "li", "br"}


class Page(HTMLParser):
    """Every tag and attribute of a page, and the strings of its plotly figures' JSON."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)

    def plotly_strings(self) -> list[str]:
        """Every string literal of the ``Plotly.newPlot`` calls (the figures' data and layout)."""
        found = []
        for script in self.scripts:
            if "Plotly.newPlot" in script:
                found += [json.loads(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', script)]
        return found


def check_page(text: str, name: str) -> None:
    """No tag outside archsim's own set, no event handler, no script with a source, and no string
    plotly would render as markup except archsim's hover templates."""
    page = Page(BUNDLE.sub("<script></script>", text))  # plotly.js itself is not the user's text
    tags = {tag for tag, _ in page.tags}
    assert tags <= ALLOWED_TAGS, (tags - ALLOWED_TAGS, name)
    attributes = [(tag, key) for tag, attrs in page.tags for key, _ in attrs]
    assert not [a for a in attributes if a[1].lower().startswith("on")], (attributes, name)
    assert not [a for a in attributes if a == ("script", "src")]
    for string in page.plotly_strings():
        string = string.replace("<br>", "")  # archsim's own line breaks (a wrapped title)
        if "<" in string or ">" in string:
            assert "%{" in string, (string[:200], name)  # only archsim's templates carry markup


def gantt_page(name: str, folder: Path) -> str:
    frame = pd.DataFrame({"op": [f"F {name}", f"B {name}"], "processor": [0, 1], "start": [0.0, 1.0],
                          "end": [1.0, 2.0], "kind": ["F", name]})
    return write_gantt(frame, folder / "gantt.html", title=name, caption=name).read_text(encoding="utf-8")


def study_page(name: str, folder: Path) -> str:
    fig = go.Figure(go.Bar(x=[name, "b"], y=[1, 2], name=name, hovertext=[name, name]))
    fig.update_layout(title=name, xaxis_title=name)
    fig.add_annotation(text=name, x=0, y=1)
    table = pd.DataFrame({name: [name, 1.5], "x": [1, 2]})
    return write_page(folder / "page.html", name, [(fig, "a caption"), (table, "a table")]).read_text(encoding="utf-8")


def cluster_page(name: str, folder: Path) -> str:
    summary = pd.DataFrame({"policy": [name], "makespan": [1.0]})
    return write_cluster_report(folder / "cluster.html", CLUSTER_RUN["results"], f"archsim cluster --trace {name}",
                                summary=summary, notes=name).read_text(encoding="utf-8")


def sweep_page(name: str, folder: Path) -> str:
    results = SWEEP["results"].assign(network=name)
    return build_report(results, summarize(results), results_path=f"{name}/results", out=folder / "report.html",
                        spec_command=f"archsim sweep {name}").read_text(encoding="utf-8")


PAGES = {"gantt": gantt_page, "study": study_page, "cluster": cluster_page, "sweep": sweep_page}
SWEEP: dict[str, pd.DataFrame] = {}
CLUSTER_RUN: dict[str, object] = {}


@pytest.fixture(scope="module", autouse=True)
def runs(tmp_path_factory):
    """One tiny sweep and one small cluster run; each page is then built with the names swapped."""
    folder = tmp_path_factory.mktemp("runs")
    spec = folder / "spec.toml"
    spec.write_text('[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["16x16"]\nbatches = [4]\n'
                    'processors = [2]\nmethods = ["layerpipe", "pipedream"]\n', encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(folder / "results"), "--quiet"]) == 0
    SWEEP["results"] = pd.read_csv(folder / "results" / "results.csv")
    from archsim.cluster.jobs import JobCluster
    from archsim.cluster.simulate import simulate_trace
    from archsim.cluster.trace import synthetic_trace

    cluster = JobCluster.uniform(8, 4, 16 * 2**30)
    CLUSTER_RUN["results"] = [simulate_trace(synthetic_trace(4, 0), cluster, policy) for policy in ("jigsaw", "gandiva")]


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_a_hostile_name_adds_no_markup(kind, tmp_path):
    text = PAGES[kind](HOSTILE, tmp_path)
    check_page(text, kind)
    assert "&lt;/title&gt;" in text  # the name is shown, as text


def test_the_check_finds_an_unescaped_name(tmp_path):
    """The parser is not blind: the pre-escaping Gantt page (a raw title) and a raw plotly label fail it."""
    with pytest.raises(AssertionError):
        check_page(f"<html><head><title>{HOSTILE}</title></head></html>", "raw title")
    fig = go.Figure(go.Bar(x=["<b onmouseover=x>a</b>"], y=[1]))
    import plotly.io as pio

    with pytest.raises(AssertionError):
        check_page(pio.to_html(fig, include_plotlyjs=False), "raw label")


PIECES = st.sampled_from(["<script>", "</title>", "onerror=", "&lt;", "<b>", "<br>", "javascript:", "%{x}"])
NAMES = st.lists(st.text(min_size=1, max_size=6) | st.sampled_from(list("<>&\"'/=;`\\\x00\n\x1b\u2028é\U0001F600"))
                 | PIECES, min_size=1, max_size=8).map("".join)


@pytest.mark.long
@settings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAMES)
@example(name=HOSTILE)
def test_random_names_add_no_markup_to_any_page(name):
    with tempfile.TemporaryDirectory() as folder:
        for kind, build in PAGES.items():
            check_page(build(name, Path(folder)), kind)


def test_a_hostile_transformer_name_never_reaches_the_gantt_title(tmp_path, capsys):
    """Issue 32's reproducer: a [transformer] name with a script, through `pipeline --gantt`."""
    config = tmp_path / "t.toml"
    config.write_text('[transformer]\nname = "</title><script>alert(1)</script>"\nfamily = "gpt"\nlayers = 2\n'
                      'hidden = 64\nheads = 2\nseq = 16\nvocab = 100\n', encoding="utf-8")
    out = tmp_path / "g.html"
    code = main(["pipeline", str(config), "--processors", "2", "--method", "gpipe", "--microbatches", "2",
                 "--gantt", str(out)])
    err = capsys.readouterr().err
    if code == 2:  # refused as a name (control characters, a path) is also safe
        assert len(err.splitlines()) == 1
        return
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    check_page(text, "pipeline gantt")
    assert "<script>alert(1)" not in text


def _dom(path: Path, tmp_path: Path) -> str:
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
                            capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
@pytest.mark.parametrize("kind", sorted(PAGES))
def test_no_hostile_script_runs_in_chromium(kind, tmp_path):
    PAGES[kind](HOSTILE, tmp_path)
    page = next(tmp_path.glob("*.html"))
    dom = _dom(page, tmp_path)
    opening = re.search(r"<html[^>]*>", dom)
    assert opening and "data-pwned" not in opening.group(0), opening
    assert "plot-container" in dom  # the figures did render: the page's own scripts ran
    handlers = [(tag, key) for tag, attrs in Page(dom).tags for key, _ in attrs if key.lower().startswith("on")]
    assert not handlers, handlers[:3]


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
def test_the_chromium_check_sees_a_script_that_runs(tmp_path):
    """The marker works: an unescaped title's script does mark the document."""
    page = tmp_path / "raw.html"
    page.write_text(f"<!doctype html><html><head><title></title><script>{MARK}</script></head><body></body></html>",
                    encoding="utf-8")
    opening = re.search(r"<html[^>]*>", _dom(page, tmp_path))
    assert opening and "data-pwned" in opening.group(0)
