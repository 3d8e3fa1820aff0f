"""Every kind of report page (sweep, Gantt, cluster, BPPSA, GPU validation, search's Pareto front) renders in headless Chromium at a laptop's width: each plotly figure
draws, no figure is wider than the window, and no legend is clipped."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_report import CHROMIUM, FLAGS

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 1280
PAGES = {
    "gantt": ["pipeline", "layerpipe_sample", "--processors", "3", "--microbatches", "4", "--gantt", "{out}"],
    "plan-gantt": ["plan", "vgg16", "--only", "conv", "--cluster", str(ROOT / "configs/clusters/testbed_1080ti.toml"),
                   "--microbatches", "4", "--gantt", "{out}"],
    "cluster": ["cluster", "--trace", str(ROOT / "configs/traces/sample_tiresias.csv"), "--policy", "all",
                "--report", "{out}"],
    "bppsa": ["bppsa", "rnn", "--seq-len", "10,100", "--processors", "64,256", "--report", "{out}"],
    "sweep": ["sweep", str(ROOT / "configs/sweeps/sample_quick.toml"), "--out", "{dir}/results", "--quiet",
              "--report", "{out}"],
    "search-front": ["search", str(ROOT / "configs/transformers/gpt_1024h_24l.json"), "--cluster",
                     str(ROOT / "configs/clusters/a100_node.toml"), "--global-batch", "32", "--top", "3",
                     "--pareto-html", "{out}"],
    "gpu": ["validate-gpu", "--csv", str(ROOT / "benchmarks/results/deepbench_v100_kernels.csv"), "--report", "{out}"],
}


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
@pytest.mark.parametrize("name", sorted(PAGES))
def test_report_page_renders_within_the_window(name, tmp_path, capsys):
    out = tmp_path / f"{name}.html"
    assert main([word.replace("{out}", str(out)).replace("{dir}", str(tmp_path)) for word in PAGES[name]]) == 0
    capsys.readouterr()
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WIDTH},900",
                             "--dump-dom", out.as_uri()], capture_output=True, text=True, check=False, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    figures = len(re.findall(r'class="plotly-graph-div', out.read_text(encoding="utf-8")))
    rendered = re.findall(r'<svg class="main-svg"[^>]*width="([\d.]+)" height="([\d.]+)"', dom)
    assert figures >= 1
    # plotly draws two main-svg layers per figure; every one has a size and fits the window
    assert len(rendered) >= 2 * figures, (figures, len(rendered))
    assert all(0 < float(w) <= WIDTH and float(h) > 0 for w, h in rendered), rendered
    clipped = [h for h in re.findall(r'<rect class="scrollbar"[^>]*height="([\d.]+)"', dom) if float(h) > 0]
    assert not clipped, f"{name}: a legend is clipped"
    assert not [line for line in result.stderr.splitlines() if "Uncaught" in line]
