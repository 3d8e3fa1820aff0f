"""The sweep report's LayerPipe Gantt is drawn at the median of the sweep's processor counts, and LayerPipe's
plan may use fewer stages than that: its title says both, not just "on P processors"."""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

SPEC = """[sweep]
name = "t"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
dataflows = ["ws"]
batches = [4]
processors = PROCESSORS
methods = ["layerpipe"]
mode = "exact"
"""


def _gantt_title(tmp_path: Path, processors: str, capsys) -> str:
    spec, out = tmp_path / "spec.toml", tmp_path / "report.html"
    spec.write_text(SPEC.replace("PROCESSORS", processors), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "results"), "--quiet", "--report", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text(encoding="utf-8")
    [title] = [title for title in re.findall(r"<h2>([^<]*)</h2>", page) if "LayerPipe schedule" in title]
    return html.unescape(title)  # the section's heading: the chart draws no title of its own


def _stages(processors: int) -> int:
    """The stages `archsim pipeline` plans for the sweep's configuration, one row each."""
    profile = archsim.profile("layerpipe_sample", array="16x16", batch=4, mode="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the library's note on idle processors: the count is read here
        return len(archsim.pipeline(profile, processors=processors, method="layerpipe").to_rows())


@pytest.mark.long  # a sweep and its report: about 1-3 s
def test_title_names_the_median_and_the_stages_used(tmp_path, capsys):
    stages = _stages(8)
    assert stages < 8  # the case the title must not hide: processors left without a stage
    title = _gantt_title(tmp_path, "[2, 8]", capsys)
    assert f"LayerPipe schedule on 8 processors (the sweep's median), {stages} stages used, 8 micro-batches" in title


@pytest.mark.long  # a sweep and its report: about 1-3 s
def test_one_processor_count_is_not_called_a_median(tmp_path, capsys):
    title = _gantt_title(tmp_path, "[2]", capsys)
    assert f"LayerPipe schedule on 2 processors, {_stages(2)} stages used, 8 micro-batches" in title
    assert "median" not in title
