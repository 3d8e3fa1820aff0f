"""A Gantt's time axis is titled in its timeline's unit: cycles on arrays, seconds where a plan
is timed in seconds (SPP, PipeDream on a cluster), and the user's own unit for per-stage times or
unit costs — never "cycles" on a timeline that is not in cycles."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
SPP = str(ROOT / "configs/clusters/spp_sim.toml")
V100 = str(ROOT / "configs/clusters/testbed_v100.toml")


def x_title(path: Path) -> str:
    found = re.search(r'"xaxis":\{"title":\{"text":"([^"]*)"', path.read_text())
    assert found, "the Gantt has a titled x axis"
    return html.unescape(found.group(1))  # the page escapes text; plotly decodes the entities


@pytest.mark.parametrize("argv, unit", [
    (["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2"], "cycles"),
    (["schedule", "layerpipe_sample", "--policy", "1f1b", "--processors", "2", "--microbatches", "2"], "cycles"),
    (["plan", "layerpipe_sample", "--cluster", SPP, "--microbatches", "2"], "seconds"),
    (["plan", "layerpipe_sample", "--cluster", V100, "--microbatches", "2", "--method", "pipedream"], "seconds"),
])
def test_axis_names_the_timelines_unit(argv, unit, tmp_path, capsys):
    out = tmp_path / "g.html"
    assert main([*argv, "--gantt", str(out)]) == 0
    capsys.readouterr()
    assert x_title(out) == unit


@pytest.mark.parametrize("argv", [
    ["schedule", "ffnn8", "--unit-costs", "--policy", "gpipe", "--processors", "2", "--microbatches", "2"],
    ["schedule", "--stages", "2", "--stage-times", "1,2,1", "--microbatches", "2", "--policy", "1f1b"],
])
def test_unitless_times_are_not_called_cycles(argv, tmp_path, capsys):
    out = tmp_path / "g.html"
    assert main([*argv, "--gantt", str(out), "--format", "json"]) == 0
    unit = json.loads(capsys.readouterr().out)["meta"]["unit"]  # what the command's own output calls it
    assert unit != "cycles" and unit in x_title(out)


@pytest.mark.parametrize("argv, kinds", [
    (["schedule", "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "2", "--policy", "zb-h1"], "F I W"),
    (["schedule", "--stages", "2", "--stage-times", "1,2,0", "--microbatches", "2", "--policy", "1f1b"], "F B"),
    (["plan", "layerpipe_sample", "--cluster", SPP, "--microbatches", "2"], "FB A"),
])
def test_every_legend_entry_says_what_its_op_is(argv, kinds, tmp_path, capsys):
    # F read "F (forward)" beside bare "I", "W", "B", "FB" and "A" in the same legend
    out = tmp_path / "g.html"
    assert main([*argv, "--gantt", str(out)]) == 0
    capsys.readouterr()
    names = re.findall(r'"name":"([^"]*)"', html.unescape(out.read_text()))
    for kind in kinds.split():
        assert any(name.startswith(f"{kind} (") for name in names), (kind, names)
