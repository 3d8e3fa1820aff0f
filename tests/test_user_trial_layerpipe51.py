"""A LayerPipe reader's trial of the sweep report (004_2cd4e01df0d40184.txt, Table IV): the paper's numbers and
the notes on them appear only beside Table IV's own experiment, and the notes' figures are the sweep's."""

from __future__ import annotations

import html as html_text
import re

import pandas as pd
import pytest

# Table IV's grid, as §IV-C states it: arrays 32×32 to 256×256, mini-batches 16 to 256 in powers of two.
GRID_ARRAYS = '["32x32", "64x64", "128x128", "256x256"]'
GRID_BATCHES = "[16, 32, 64, 128, 256]"


def _sweep_report(tmp_path, *, arrays: str, batches: str, processors: str, extra: str = "") -> tuple[pd.DataFrame, str]:
    """`archsim sweep --report` on VGG16's conv layers in paper mode, LayerPipe and PipeDream: the results' rows
    and the report's text, entities unescaped (a heading's apostrophe is written `&#x27;`)."""
    from archsim.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nname = "s"\nnetworks = ["vgg16"]\nonly = ["conv"]\narrays = {arrays}\n'
                    f'batches = {batches}\nprocessors = {processors}\nmethods = ["layerpipe", "pipedream"]\n'
                    f'mode = "paper"\n{extra}\n')
    report = tmp_path / "r.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--report", str(report)]) == 0
    return pd.read_csv(tmp_path / "out" / "results.csv"), html_text.unescape(report.read_text())


def _layerpipe_note(html: str) -> str:
    match = re.search(r"<li><b>LayerPipe</b>.*?</li>", html, flags=re.DOTALL)
    assert match, "the report has no note on LayerPipe against Table IV"
    return match.group(0)


@pytest.mark.long
def test_table_iv_notes_quote_this_sweeps_saturation_and_not_row_splits_as_its_cause(tmp_path, capsys):
    """Defect: the report's notes beside Table IV printed the shipped sweep's "7.5, 8.0 vs 6.88" at 11–12
    processors whatever the sweep, and blamed row splits ("archsim splits δ along its pixel rows too, which the
    paper's channel-only parallelism cannot, and so keeps balancing"), though docs/papers/layerpipe.md found
    channel splits alone give 7.51 and 7.87 there. Run here with channel splits alone over Table IV's grid, the
    note must quote this sweep's means — taken here from results.csv's 20 rows per processor count — and the
    notes' stated channel-only figures must be what this run gives."""
    rows, html = _sweep_report(tmp_path, arrays=GRID_ARRAYS, batches=GRID_BATCHES, processors="[10, 11, 12]",
                               extra='split_axes = ["channels"]')
    capsys.readouterr()
    assert "LayerPipe's Table IV" in html  # the paper's grid: its columns and notes belong here
    layerpipe = rows[rows.method == "layerpipe"]
    means = {p: layerpipe[layerpipe.processors == p].speedup for p in (11, 12)}
    assert all(len(part) == 20 for part in means.values())  # 4 arrays × 5 batches
    eleven, twelve = (f"{part.mean():.2f}" for part in means.values())
    note = _layerpipe_note(html)
    assert f"at 11–12 processors {eleven}, {twelve} against the paper's 6.88, 6.88" in note
    assert f"gives {eleven} and {twelve} at 11 and 12 processors" in note  # the docs' channel-only figures
    assert "pixel rows too" not in html and "keeps balancing" not in html


@pytest.mark.long
def test_one_array_sweep_is_not_reported_as_table_iv(tmp_path, capsys):
    """Defect: a sweep of one array and one batch (32×32, batch 16) was headed "LayerPipe's Table IV", drew the
    paper's mean speedups over 4 arrays × 5 batches beside its single configuration, and printed the shipped
    sweep's notes. Table IV's numbers are means over its grid: beside another grid they are no reference."""
    _, html = _sweep_report(tmp_path, arrays='["32x32"]', batches="[16]", processors="[11, 12]")
    capsys.readouterr()
    assert "LayerPipe's Table IV" not in html
    assert "paper LayerPipe" not in html and "layerpipe (paper)" not in html
    assert "<li><b>LayerPipe</b>" not in html


def _grid_results(arrays, batches, dataflows=("ws",)) -> pd.DataFrame:
    return pd.DataFrame([{"network": "vgg16", "only": "conv", "mode": "paper", "rows": a, "cols": a, "dataflow": d,
                          "batch": b, "processors": p, "method": m, "speedup": 2.0, "additional_comm_bytes": 0,
                          "mandatory_comm_bytes": 0}
                         for a in arrays for b in batches for d in dataflows for p in (2, 3)
                         for m in ("layerpipe", "pipedream")])


@pytest.mark.parametrize(("arrays", "batches", "dataflows", "paper"), [
    ((32, 64, 128, 256), (16, 32, 64, 128, 256), ("ws",), True),
    ((32,), (16, 32, 64, 128, 256), ("ws",), False),                   # one array
    ((32, 64, 128, 256), (16, 32), ("ws",), False),                    # two batches
    ((32, 64, 128, 256, 512), (16, 32, 64, 128, 256), ("ws",), False),  # an array more
    ((32, 64, 128, 256), (16, 32, 64, 128, 256), ("os", "ws"), False),  # output-stationary means too
])
def test_paper_columns_only_over_table_ivs_grid(arrays, batches, dataflows, paper):
    """The table and the speedup figure carry the paper's numbers exactly when the sweep's means are over Table
    IV's grid — weight-stationary arrays 32, 64, 128 and 256 square, batches 16…256 — and nothing else."""
    from archsim.report.sweep_report import speedup_figure, table_iv
    from archsim.sweep import summarize

    results = _grid_results(arrays, batches, dataflows)
    summary = summarize(results)
    table = table_iv(summary, "vgg16", results)
    assert ("paper LayerPipe" in table.columns) is paper
    assert bool([t.name for t in speedup_figure(summary, "vgg16", results).data if "paper" in t.name]) is paper


def test_layerpipe_note_signs_and_names_the_farthest_count():
    """The note's gap is archsim's speedup over the paper's − 1, signed: 1.93·0.9 at 2 processors is −10.0%,
    2.75·1.05 at 3 is +5.0%, so the farthest is 2; no count of 11 or 12, no saturation sentence."""
    from archsim.report.table_iv_notes import layerpipe_note

    table = pd.DataFrame({"processors": [2, 3], "LayerPipe": [1.93 * 0.9, 2.75 * 1.05],
                          "paper LayerPipe": [1.93, 2.75]})
    note = layerpipe_note(table)
    assert "−10.0%" in note.replace("-", "−") and "+5.0%" in note and "(farthest at 2)" in note
    assert "6.88" not in note


def _spec_error(tmp_path, capsys, body: str) -> str:
    from archsim.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(body)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    return capsys.readouterr().err.strip()


def test_a_processor_count_pipedream_cannot_take_names_its_line(tmp_path, capsys):
    """Defect: every refusal of a spec key names its line (`s.toml, line 6, field 'processors': …`) except the
    one found once the spec is read: PipeDream asked for 6 processors on layerpipe_sample, whose 4 conv layers
    are 4 layer groups, said `s.toml, field 'processors'` with no line. `processors` is the spec's 6th line. (Such a
    point beside others is skipped now, tests/test_user_trial_layerpipe51b.py; a spec of no other is refused.)"""
    err = _spec_error(tmp_path, capsys, '[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\n'
                                        'batches = [32]\nprocessors = [5, 6]\nmethods = ["pipedream"]\n')
    assert "s.toml, line 6, field 'processors': network 'layerpipe_sample'" in err
    assert "takes 1–4 processors, not 5, 6 processors" in err


def test_a_network_file_that_does_not_load_names_the_networks_line(tmp_path, capsys):
    """The same for a network file with a bad row: the spec's `networks` key (its 3rd line) and the file's row."""
    (tmp_path / "net.csv").write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                      "Num Filter, Strides, Padding,\nl1, 8, 8, 3, 3, 1, 16, 1, x,\n")
    err = _spec_error(tmp_path, capsys, '[sweep]\nname = "s"\nnetworks = ["net.csv"]\narrays = ["32x32"]\n'
                                        'batches = [32]\nprocessors = [2]\nmethods = ["layerpipe"]\n')
    assert "s.toml, line 3, field 'networks': network " in err and "line 2, field 'Padding'" in err
