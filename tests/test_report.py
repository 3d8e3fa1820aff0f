"""The sweep report opens in headless Chromium: every figure renders, no JavaScript error."""

import re
import shutil
import subprocess

import pytest

from archsim.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000"]
SPEC = """[sweep]
name = "r"
networks = ["layerpipe_sample"]
arrays = ["16x16", "32x32"]
dataflows = ["ws"]
batches = [4, 8]
processors = [2, 3]
methods = ["layerpipe", "pipedream", "gpipe"]
mode = "exact"
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    out = folder / "report.html"
    assert main(["sweep", str(spec), "--out", str(folder / "results"), "--quiet", "--report", str(out)]) == 0
    return out


def test_report_is_self_contained_and_names_commands_and_mode(report):
    text = report.read_text()
    assert not re.search(r"<script[^>]*\ssrc=", text)  # plotly.js is inlined, nothing fetched
    assert text.count("Regenerate:") >= 5
    assert "archsim report" in text and "archsim cost layerpipe_sample" in text
    assert "Mode: <b>exact</b>" in text


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
def test_report_renders_in_headless_chromium(report, tmp_path):
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                             report.as_uri()], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    figures = len(re.findall(r'class="plotly-graph-div', report.read_text()))
    rendered = len(re.findall(r'<div[^>]*class="[^"]*plot-container', dom))
    assert figures >= 4 and rendered == figures, (figures, rendered)
    errors = [line for line in result.stderr.splitlines() if "Uncaught" in line or "SyntaxError" in line]
    assert not errors, errors
