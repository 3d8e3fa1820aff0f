"""A LayerPipe researcher's trial of sweeps (array size × batch × processors; `archsim sweep`, the HTML report,
`archsim.run_sweep`): a split axis named twice, the sweep API's documented signature, PipeDream's points beyond a
network's layer groups, and Table IV's paper columns beside a cycle-engine sweep."""

from __future__ import annotations

import html as html_text
import re
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from test_robustness import clean_error

from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
# layers/layerpipe_sample.csv, by hand: conv1 → conv2 → conv3 → conv4, a chain of 4 layers, so 4 layer groups and
# PipeDream's straight pipeline (whole layers on every processor) fills at most 4 processors.
SAMPLE_GROUPS = 4


def _spec(folder: Path, lines: str, name: str = "s.toml") -> Path:
    """A spec whose first six lines are fixed ([sweep], name, networks, arrays, batches, processors) and whose
    ``lines`` follow from line 7 on."""
    spec = folder / name
    spec.write_text('[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32", "64x64"]\n'
                    f'batches = [16]\nprocessors = [3, 5]\n{lines}', encoding="utf-8")
    return spec


# --- 1. a split axis named twice ---------------------------------------------------------------------------------

def test_split_axes_twice_in_a_spec_names_its_line_and_a_reason_that_fits(tmp_path, capsys):
    """Defect: `split_axes = ["channels", "channels"]` was refused as if it were a sweep axis ("each value is one
    point of the sweep… summary.csv's means"): split_axes is a set of names LayerPipe may split δ along."""
    spec = _spec(tmp_path, 'methods = ["layerpipe"]\nsplit_axes = ["channels", "channels"]\n')
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert "s.toml, line 8, field 'split_axes': 'channels' is listed twice" in line
    assert "point of the sweep" not in line and "set of names" in line
    assert not (tmp_path / "out").exists()


def test_split_axes_twice_is_refused_by_pipeline_the_command_and_a_hand_made_spec(tmp_path, capsys):
    """Defect: `archsim.pipeline(…, split_axes=["channels", "channels"])` and `--split-axes channels,channels`
    planned silently (a typo for another axis unseen); so would a SweepSpec given them by hand."""
    import archsim
    from archsim.sweep import load_spec, run_sweep

    profile = archsim.profile("layerpipe_sample", array="32x32", batch=16)
    with pytest.raises(InputError) as error:
        archsim.pipeline(profile, processors=2, split_axes=["channels", "channels"])
    assert "field 'split_axes': 'channels' is listed twice" in str(error.value)
    line = clean_error(capsys, "pipeline", "layerpipe_sample", "--processors", "2", "--split-axes", "rows,channels,rows")
    assert "argument --split-axes: 'rows' is listed twice" in line
    spec = replace(load_spec(_spec(tmp_path, 'methods = ["layerpipe"]\n')), split_axes=("channels", "channels"))
    with pytest.raises(InputError, match="'channels' is listed twice"):
        run_sweep(spec, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()  # refused before the folder is made


@pytest.mark.parametrize(("key", "value", "twice"), [
    ("networks", '["layerpipe_sample", "layerpipe_sample"]', "'layerpipe_sample'"),
    ("arrays", '["32x32", "32x32"]', "'32x32'"),
    ("batches", "[16, 32, 16]", "16"),
    ("processors", "[2, 3, 2]", "2"),
    ("methods", '["gpipe", "gpipe"]', "'gpipe'"),
    ("dataflows", '["ws", "ws"]', "'ws'"),
    ("only", '["conv", "conv"]', "'conv'"),
])
def test_every_list_axis_refuses_a_repeat_naming_its_key_and_line(tmp_path, capsys, key, value, twice):
    """The spec reader's other lists refuse a repeat too (checked here, not changed): one line naming the key at
    its line, the fifth line of the spec written below."""
    keys = {"networks": '["layerpipe_sample"]', "arrays": '["32x32"]', "batches": "[16]", "processors": "[2]",
            "methods": '["gpipe"]', key: value}
    others = "".join(f"{k} = {v}\n" for k, v in keys.items() if k != key)
    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nname = "s"\n# a comment\n\n{key} = {value}\n{others}', encoding="utf-8")
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert f"s.toml, line 5, field '{key}': {twice} is listed twice" in line


# --- 2. the sweep API's documented signature ---------------------------------------------------------------------

def _sweeps_section() -> str:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    return page.split("\n## Sweeps\n", 1)[1].split("\n## ", 1)[0]


def test_the_sweeps_section_documents_the_public_run_sweep_and_its_example_runs(tmp_path):
    """Defect: docs/api.md's "Sweeps" rendered `archsim.sweep.runner.run_sweep(spec, out, …)`, `out` positional,
    where the library's job is `archsim.run_sweep(spec, *, out=…)`. The section shows the public call, and its
    example runs: 2 arrays × 1… 2 batches × (LayerPipe on 4 counts + PipeDream on the 3 of 2…5 the sample's
    4 layer groups take) = 2 × 2 × 7 = 28 rows, the skipped point warned."""
    section = _sweeps_section()
    assert "archsim.sweep.runner.run_sweep" not in section
    assert "archsim.run_sweep(spec, *, out=" in section
    examples = re.findall(r"^```python\n(.*?)^```", section, flags=re.DOTALL | re.MULTILINE)
    assert len(examples) == 1
    done = subprocess.run([sys.executable, "-c", examples[0]], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    printed = done.stdout.splitlines()
    assert printed[0] == str(2 * 2 * (4 + (SAMPLE_GROUPS - 1)))
    assert printed[1].startswith("skipped 1 of 8 (network, processors, method) points (4 of 32 configurations)")
    assert (tmp_path / "reports" / "trial.html").is_file()


# --- 3. PipeDream's points beyond a network's layer groups -------------------------------------------------------

def _grid(folder: Path, processors: str = "[3, 5, 6]", extra: str = "") -> Path:
    spec = folder / "s.toml"
    spec.write_text('[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32", "64x64"]\n'
                    f'batches = [16, 32]\nprocessors = {processors}\nmethods = ["layerpipe", "pipedream", "gpipe"]\n'
                    f'mode = "paper"\n{extra}', encoding="utf-8")
    return spec


@pytest.mark.parametrize("extra", ["", "sram_kb = [64]\n"], ids=["plain", "design"])
def test_pipedream_points_beyond_the_layer_groups_are_skipped_and_counted(tmp_path, capsys, extra):
    """Defect: a sweep of processors 3, 5, 6 with pipedream among its methods was refused whole, as PipeDream
    cannot split the sample's 4 layer groups over 5 or 6 processors, though LayerPipe (δ splits) and gpipe
    (idle processors) run there. Those 2 of 9 (network, processors, method) points are skipped, 2 arrays × 2
    batches each: 8 of 36 rows; one note says so, the results hold the 28 that ran, `archsim report` draws them
    with the same line, and a rerun reads them from the cache."""
    spec = _grid(tmp_path, extra=extra)
    out, report = tmp_path / "out", tmp_path / "r.html"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(report)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "skipped" in line]
    assert len(notes) == 1 and "skipped 2 of 9 (network, processors, method) points (8 of 36 configurations)" in notes[0]
    assert f"layerpipe_sample has {SAMPLE_GROUPS} layer groups, so it takes 1–4 processors, not 5, 6" in notes[0]
    rows = pd.read_csv(out / "results.csv")
    counts = rows.groupby("method").processors.apply(lambda p: sorted(set(p))).to_dict()
    assert counts == {"layerpipe": [3, 5, 6], "gpipe": [3, 5, 6], "pipedream": [3]} and len(rows) == 36 - 8
    summary = pd.read_csv(out / "summary.csv")
    at_five = summary[summary.processors == 5].set_index("method")
    assert set(at_five.index) == {"layerpipe", "gpipe"} and at_five.improvement_vs_pipedream_pct.isna().all()
    page = html_text.unescape(report.read_text(encoding="utf-8"))
    assert "Skipped 2 of 9 (network, processors, method) points" in page
    cached = sorted(p.stat().st_mtime_ns for p in (out / "cache").glob("*.json"))
    first = (out / "results.csv").read_bytes()
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0  # from the cache: nothing recomputed
    assert sorted(p.stat().st_mtime_ns for p in (out / "cache").glob("*.json")) == cached
    assert (out / "results.csv").read_bytes() == first
    assert main(["report", str(out), "--out", str(tmp_path / "again.html")]) == 0  # the row count is the record's
    capsys.readouterr()


def test_run_sweep_warns_the_same_line(tmp_path, capsys):
    import archsim

    spec = _grid(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = archsim.run_sweep(str(spec), out=tmp_path / "out")
    lines = [str(w.message) for w in caught if issubclass(w.category, UserWarning) and "skipped" in str(w.message)]
    assert len(frame) == 28 and len(lines) == 1
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert lines[0] in capsys.readouterr().err  # the CLI's note, word for word


def test_a_sweep_with_no_point_left_is_refused_saying_the_counts_pipedream_takes(tmp_path, capsys):
    spec = _spec(tmp_path, 'methods = ["pipedream"]\n')  # processors 3, 5: 3 runs
    assert main(["sweep", str(spec), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    capsys.readouterr()
    spec.write_text(spec.read_text(encoding="utf-8").replace("[3, 5]", "[5, 6]"), encoding="utf-8")
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "b", "--quiet")
    assert "s.toml, line 6, field 'processors': network 'layerpipe_sample'" in line
    assert f"it has {SAMPLE_GROUPS} layer groups, so pipedream takes 1–4 processors, not 5, 6 processors" in line
    assert not (tmp_path / "b").exists()


# --- 4. Table IV's paper columns and the engine ------------------------------------------------------------------

def _table_iv_grid() -> pd.DataFrame:
    """Rows over Table IV's grid (§IV-C: arrays 32…256 square, batches 16…256, weight-stationary), VGG16's conv
    layers in paper mode, 2 and 3 processors."""
    return pd.DataFrame([{"network": "vgg16", "only": "conv", "mode": "paper", "rows": a, "cols": a, "dataflow": "ws",
                          "batch": b, "processors": p, "method": m, "speedup": 2.0, "additional_comm_bytes": 0,
                          "mandatory_comm_bytes": 0}
                         for a in (32, 64, 128, 256) for b in (16, 32, 64, 128, 256) for p in (2, 3)
                         for m in ("layerpipe", "pipedream")])


@pytest.mark.parametrize(("engine", "paper"), [("analytic", True), (None, True), ("cycle", False)])
def test_table_iv_columns_only_beside_the_analytic_engine(engine, paper):
    """Defect: a sweep with engine = "cycle" over Table IV's grid drew the paper's columns and lines as its
    reference, though the paper's processors exchange data "without any external memory" (§IV-C) and its costs
    have none of the DRAM stalls the cycle engine adds."""
    from archsim.report.sweep_report import speedup_figure, table_iv
    from archsim.sweep import summarize

    results = _table_iv_grid()
    summary = summarize(results)
    assert ("paper LayerPipe" in table_iv(summary, "vgg16", results, engine).columns) is paper
    traces = [t.name for t in speedup_figure(summary, "vgg16", results, engine=engine).data]
    assert any("paper" in name for name in traces) is paper


def test_a_cycle_engine_report_of_table_ivs_grid_says_why_the_paper_is_absent(tmp_path):
    from archsim.report.sweep_report import build_report
    from archsim.sweep import summarize

    results = _table_iv_grid()
    pages = {}
    for engine in ("analytic", "cycle"):
        out = build_report(results, summarize(results), results_path="r", out=tmp_path / f"{engine}.html",
                           spec_command="archsim sweep s.toml", engine=engine)
        pages[engine] = html_text.unescape(out.read_text(encoding="utf-8"))
    assert "LayerPipe's Table IV" in pages["analytic"] and "without the paper's columns" not in pages["analytic"]
    assert "LayerPipe's Table IV" not in pages["cycle"] and "paper LayerPipe" not in pages["cycle"]
    assert "Table IV's grid, without the paper's columns" in pages["cycle"] and "external memory" in pages["cycle"]


# The bar counting only the configurations that run (28 of this grid): test_sweep_skipped_count.py, with the
# note, spec.json, the report and results.csv, with and without a design's clocks.
