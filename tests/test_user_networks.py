"""A user's own networks end to end: a sweep spec naming a CSV (relative to the spec), an ONNX file
and a transformer config runs, keeps each network's path and hash, and its report renders."""

from __future__ import annotations

import re
import subprocess

import onnx
import pandas as pd
import pytest

from archsim.cli import main
from archsim.sweep.spec_files import file_sha256_unless_shipped
from tests.onnx_models import mixed_cnn
from tests.test_report import CHROMIUM, FLAGS

CSV = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding,\n"
       "c1, 32, 32, 3, 3, 3, 16, 1, 1,\nc2, 32, 32, 3, 3, 16, 32, 2, 1,\nc3, 16, 16, 3, 3, 32, 32, 1, 1,\n")
TOML = '[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 100\nseq = 16\n'
SPEC = """[sweep]
name = "mine"
networks = ["nets/mynet.csv", "model.onnx", "tiny_gpt.toml"]
arrays = ["16x16"]
dataflows = ["ws"]
batches = [4]
processors = [2]
methods = ["layerpipe", "pipedream"]
mode = "exact"
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mine")
    (folder / "nets").mkdir()
    (folder / "nets" / "mynet.csv").write_text(CSV)
    onnx.save(mixed_cnn(), folder / "model.onnx")
    (folder / "tiny_gpt.toml").write_text(TOML)
    (folder / "spec.toml").write_text(SPEC)
    out = folder / "report.html"
    assert main(["sweep", str(folder / "spec.toml"), "--out", str(folder / "results"), "--quiet",
                 "--report", str(out)]) == 0
    return folder


def test_results_keep_path_and_hash(swept):
    results = pd.read_csv(swept / "results" / "results.csv")
    assert sorted(results.network.unique()) == ["model", "mynet", "tiny_gpt"]
    for stem, path in (("mynet", swept / "nets" / "mynet.csv"), ("model", swept / "model.onnx")):
        rows = results[results.network == stem]
        assert set(rows.network_path) == {str(path.resolve())}
        assert set(rows.network_sha256) == {file_sha256_unless_shipped(str(path))}
    # `archsim report` rebuilds the report from the results alone, from another working directory.
    assert main(["report", str(swept / "results"), "--out", str(swept / "again.html")]) == 0


def test_missing_network_file_in_a_spec_is_named(tmp_path, capsys):
    (tmp_path / "spec.toml").write_text(SPEC)
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert "network file 'nets/mynet.csv' not found" in capsys.readouterr().err


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
def test_report_of_user_networks_renders_in_headless_chromium(swept, tmp_path):
    report = swept / "report.html"
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                             report.as_uri()], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = len(re.findall(r'class="plotly-graph-div', report.read_text()))
    rendered = len(re.findall(r'<div[^>]*class="[^"]*plot-container', result.stdout))
    assert figures >= 4 and rendered == figures, (figures, rendered)


def test_a_user_networks_report_uses_its_names_and_neutral_headings(swept):
    """Issue reproducers: "Table IV" and the file's absolute path in headings, a clipped Gantt title,
    ticks at 2.5 processors, per-layer bars on a log axis by default."""
    import json
    import re

    page = (swept / "report.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert headings and not any("Table IV" in h or str(swept) in h or "/" in h.split(":")[0] for h in headings)
    assert any(re.match(r"(model|mynet|tiny_gpt): per-layer", h) for h in headings)  # the user's own names
    titles = [json.loads(f'"{t}"') for t in re.findall(r'"title":\{"text":"((?:[^"\\]|\\.)*)"', page)]
    # the Gantt's title is its section's heading, which the page wraps (drawn in the figure too it was clipped,
    # then wrapped onto a second line over the legend): once, never inside the figure
    # (one per network of the sweep)
    gantts = [heading for heading in headings if "LayerPipe schedule" in heading]
    assert gantts and all(gantt.startswith(("model", "mynet", "tiny_gpt")) for gantt in gantts)
    assert not any("LayerPipe schedule" in title for title in titles)
    assert all("/" not in title.split(":")[0] for title in titles)
    ticks = re.findall(r'"tickvals":\[([^\]]*)\]', page)
    assert ticks and all(all(v.strip().isdigit() for v in t.split(",")) for t in ticks)
    assert '"type":"log"' not in page.replace(" ", "")  # only the toggle's button may switch to log
