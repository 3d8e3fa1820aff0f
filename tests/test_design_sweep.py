"""Design-space sweeps: axes in the spec, time/energy/area rows, the Pareto front against brute force,
and the report (rendered in headless Chromium where installed)."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report import CHROMIUM, FLAGS

from archsim.cli import main
from archsim.errors import InputError
from archsim.pareto_rule import pareto_mask
from archsim.report.pareto import with_front
from archsim.sweep.spec import load_spec

ACCEPTANCE = """[sweep]
name = "dse"
networks = ["resnet50"]
arrays = ["16x16", "32x32", "64x64", "128x128"]
batches = [2]
processors = [2]
methods = ["pipedream"]
mode = "exact"
engine = "{engine}"
sram_kb = [16, 64, 256]
{bandwidths}clocks_ghz = [0.5, 1.0, 2.0]
"""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30))
def test_pareto_mask_equals_brute_force(points) -> None:
    values = np.array(points, dtype=float)
    expected = [not any(all(q[d] <= p[d] for d in range(3)) and any(q[d] < p[d] for d in range(3))
                        for q in points) for p in points]
    assert pareto_mask(values, ties="all").tolist() == expected


def test_design_axes_parse_and_plain_specs_keep_their_keys(tmp_path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text('[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["8x8"]\nbatches = [4]\nprocessors = [2]\n'
                     'methods = ["gpipe"]\n')
    unit = load_spec(plain).units()[0]
    assert unit.design is None and unit.key.endswith("_a1.001")
    design = tmp_path / "design.toml"
    design.write_text(plain.read_text() + "sram_kb = [8, 16]\nelement_bytes = [1, 2]\nmicrobatches = [1, 2]\n"
                      "clocks_ghz = [1.5]\n")
    spec = load_spec(design)
    assert len(spec.units()) == 8 and spec.size == 8
    assert {u.design.sram_kb for u in spec.units()} == {8, 16}
    bad = tmp_path / "bad.toml"
    bad.write_text(plain.read_text() + "microbatches = [3]\n")
    with pytest.raises(InputError, match="microbatches"):
        load_spec(bad)
    bad.write_text(plain.read_text() + "clocks_ghz = [0]\n")
    with pytest.raises(InputError, match="clocks_ghz"):
        load_spec(bad)


def test_design_rows_time_energy_area(tmp_path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["8x8", "16x16"]\nbatches = [4]\n'
                    'processors = [1, 2]\nmethods = ["pipedream"]\nmode = "exact"\nsram_kb = [8, 32]\n'
                    'microbatches = [1, 2]\nclocks_ghz = [1.0, 2.0]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    rows = pd.read_csv(tmp_path / "r" / "results.csv")
    assert len(rows) == 2 * 2 * 2 * 2 * 2
    assert np.allclose(rows.iteration_seconds, rows.iteration_cycles / (rows.clock_ghz * 1e9))
    parts = rows[["mac_pj", "register_pj", "sram_pj", "dram_pj", "vector_pj", "leakage_pj"]].sum(axis=1)
    assert np.allclose(rows.energy_pj, parts)
    # Area: P arrays; a bigger SRAM costs area and per-access energy, never time (analytic engine).
    one = rows[(rows.processors == 1)].set_index(["rows", "sram_kb", "microbatches", "clock_ghz"])
    two = rows[(rows.processors == 2)].set_index(["rows", "sram_kb", "microbatches", "clock_ghz"])
    assert np.allclose(two.area_mm2, 2 * one.area_mm2) and np.allclose(two.energy_pj, one.energy_pj)
    small, big = (rows[rows.sram_kb == s].reset_index(drop=True) for s in (8, 32))
    assert (big.area_mm2 > small.area_mm2).all() and (big.sram_pj > small.sram_pj).all()
    assert np.allclose(big.iteration_cycles, small.iteration_cycles)


def _acceptance(tmp_path, engine: str):
    spec = tmp_path / "dse.toml"
    # a bandwidth axis is the cycle engine's (the analytic engine refuses it: it would change nothing)
    bandwidths = "bandwidths = [4, 10, 32]\n" if engine == "cycle" else ""
    spec.write_text(ACCEPTANCE.format(engine=engine, bandwidths=bandwidths))
    report = tmp_path / "dse.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet", "--report", str(report)]) == 0
    rows = pd.read_csv(tmp_path / "r" / "results.csv")
    assert len(rows) == 4 * 3 * 3 * (3 if bandwidths else 1)
    front = with_front(rows)
    assert 0 < front.pareto.sum() < len(rows)
    text = report.read_text()
    assert "time vs energy vs area (Pareto front)" in text and f"the {front.pareto.sum()} Pareto-optimal designs" in text
    return report


@pytest.fixture(scope="module")
def acceptance_report(tmp_path_factory):
    """4 array shapes × 3 SRAM sizes × 3 clocks on ResNet-50 (analytic engine: seconds)."""
    return _acceptance(tmp_path_factory.mktemp("dse"), "analytic")


def test_resnet50_design_sweep_report_has_a_front(acceptance_report) -> None:
    assert "Regenerate:" in acceptance_report.read_text()


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (.ci/run installs it)")
def test_resnet50_design_sweep_report_renders_in_chromium(acceptance_report, tmp_path) -> None:
    report = acceptance_report
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                             report.as_uri()], capture_output=True, text=True, check=False, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = len(re.findall(r'class="plotly-graph-div', report.read_text()))
    rendered = len(re.findall(r'<div[^>]*class="[^"]*plot-container', result.stdout))
    assert figures >= 6 and rendered == figures, (figures, rendered)
    assert not [line for line in result.stderr.splitlines() if "Uncaught" in line or "SyntaxError" in line]


@pytest.mark.slow
def test_shipped_resnet50_design_sweep_cycle_engine(tmp_path) -> None:
    """configs/sweeps/dse_resnet50.toml, memory-aware: SRAM size and bandwidth change stalls and DRAM
    traffic, so bigger SRAMs and more bandwidth are never slower (about 8 minutes on two busy cores)."""
    from pathlib import Path

    spec = Path(__file__).resolve().parents[1] / "configs" / "sweeps" / "dse_resnet50.toml"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet", "--report",
                 str(tmp_path / "r.html")]) == 0
    rows = pd.read_csv(tmp_path / "r" / "results.csv")
    assert len(rows) == 4 * 3 * 3 * 3 and 0 < with_front(rows).pareto.sum() < len(rows)
    for keys, part in rows.groupby(["rows", "clock_ghz", "bandwidth_words_per_cycle"]):
        cycles = part.sort_values("sram_kb").iteration_cycles.to_numpy()
        assert (np.diff(cycles) <= 0).all(), keys
    for keys, part in rows.groupby(["rows", "clock_ghz", "sram_kb"]):
        assert (np.diff(part.sort_values("bandwidth_words_per_cycle").iteration_cycles.to_numpy()) <= 0).all(), keys


def report_gantt(tmp_path, capsys, settings: str) -> tuple[str, list[str]]:
    """A one-configuration sweep's report, checked: its Gantt's Regenerate command reproduces the drawn
    makespan. Returns the page and that command."""
    import html
    import json

    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\n'
                    'dataflows = ["ws"]\nbatches = [1]\nprocessors = [2]\nmethods = ["layerpipe"]\nmode = "exact"\n'
                    + settings)
    report = tmp_path / "r.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--report", str(report)]) == 0
    page = html.unescape(report.read_text(encoding="utf-8"))
    drawn = float(re.search(r"makespan ([0-9.,e+]+) cycles", page).group(1).replace(",", ""))
    command = re.search(r"Regenerate: <code>archsim (pipeline [^<]*) --gantt gantt\.html</code>", page).group(1).split()
    capsys.readouterr()
    assert main([*command, "--format", "json"]) == 0
    assert drawn == pytest.approx(json.loads(capsys.readouterr().out)["meta"]["makespan"], rel=5e-4)  # 4 digits
    return page, command


@pytest.mark.long
def test_a_cycle_engine_sweeps_report_draws_the_sweeps_costs(tmp_path, capsys) -> None:
    """The report's per-layer chart and LayerPipe Gantt were costed on the analytic engine at the default
    memory while the sweep's rows were memory-aware (a Gantt of 8 micro-batches shorter than one of the
    sweep's iterations). Each section's Regenerate command must reproduce what it draws."""
    page, command = report_gantt(tmp_path, capsys, 'engine = "cycle"\nsram_kb = [16]\nbandwidths = [4]\n'
                                                   'clocks_ghz = [1.0]\n')
    assert "--engine" in command and command[command.index("--engine") + 1] == "cycle"
    per_layer = re.search(r"Regenerate: <code>archsim (cost [^<]*)</code>", page).group(1).split()
    assert per_layer[per_layer.index("--engine") + 1] == "cycle" and "--sram-kb" in per_layer


def test_the_reports_gantt_partitions_with_the_specs_alpha(tmp_path, capsys) -> None:
    # the sweep's LayerPipe plans used the spec's alpha; the report's Gantt used the default 1.001
    _, command = report_gantt(tmp_path, capsys, "alpha = 1.5\n")
    assert command[command.index("--alpha") + 1] == "1.5"


def test_the_reports_gantt_title_names_the_dataflow(tmp_path, capsys) -> None:
    # the per-layer chart said "(32x32 ws, batch 1)", the Gantt beside it "(32x32, batch 1)"
    page, _ = report_gantt(tmp_path, capsys, "")
    assert "8 micro-batches (32x32 ws, batch 1" in page.replace("<br>", " ").replace("\\n", " ")
