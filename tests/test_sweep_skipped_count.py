"""PipeDream's skipped sweep points (more processors than a network's layer groups): one count of them, said alike
by the stderr note, spec.json, the report, results.csv and the progress bar; and the improvement over PipeDream
with at most P processors at a count PipeDream skipped, computed over what ran.

layers/layerpipe_sample.csv, by hand: conv1 → conv2 → conv3 → conv4, a chain of 4 layers, so 4 layer groups:
PipeDream's straight pipeline takes 1–4 processors, and of processors 3, 5, 6 it skips 5 and 6."""

from __future__ import annotations

import contextlib
import html as html_text
import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main

GRID = ('[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32", "64x64"]\nbatches = [16, 32]\n'
        'processors = [3, 5, 6]\nmethods = ["layerpipe", "pipedream", "gpipe"]\nmode = "paper"\n')
# by hand: 3 processor counts × 3 methods = 9 points, 2 of them skipped (pipedream at 5 and 6); each point is one
# row per array (2), batch (2) and, with the design axes below, clock (2)
POINTS, SKIPPED = 9, 2


def _spec(folder: Path, extra: str = "") -> Path:
    spec = folder / "s.toml"
    spec.write_text(GRID + extra, encoding="utf-8")
    return spec


@pytest.mark.parametrize(("extra", "per_point"), [("", 2 * 2), ("sram_kb = [64]\nclocks_ghz = [1.0, 2.0]\n", 2 * 2 * 2)],
                         ids=["plain", "two-clocks"])
def test_one_count_in_the_note_spec_json_report_results_and_bar(tmp_path, capsys, monkeypatch, extra, per_point):
    """Defect: the runner counted a unit's skipped rows apart from :mod:`archsim.sweep.pipedream_points`, and
    without the design's clocks: with two clocks the bar's total was 28 where the note said 72 − 16 = 56 rows
    ran (failed before the fix: total 28). Now the note, spec.json, the report, results.csv and the bar agree
    with the hand count: 2 of 9 points, 16 of 72 configurations, 56 rows; without the design axes 8 of 36, 28
    rows (the bar counted the skipped points before an earlier fix)."""
    from archsim.sweep import load_spec, runner

    seen = {"total": -1, "updates": 0}

    class Bar:
        def update(self, n: int) -> None:
            seen["updates"] += n

    @contextlib.contextmanager
    def recording_bar(total, *args, **kwargs):
        seen["total"] = total
        yield Bar()

    spec = _spec(tmp_path, extra)
    out = tmp_path / "out"
    monkeypatch.setattr(runner, "progress_bar", recording_bar)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        frame = runner.run_sweep(load_spec(str(spec)), out, progress=False)
    total, skipped_rows = POINTS * per_point, SKIPPED * per_point
    assert seen == {"total": total - skipped_rows, "updates": total - skipped_rows}
    assert len(frame) == len(pd.read_csv(out / "results.csv")) == total - skipped_rows
    recorded = json.loads((out / "spec.json").read_text(encoding="utf-8"))["skipped_points"]
    assert len(recorded) == SKIPPED and {point["processors"] for point in recorded} == {5, 6}
    said = f"skipped {SKIPPED} of {POINTS} (network, processors, method) points ({skipped_rows} of {total} configurations)"
    report = tmp_path / "r.html"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(report)]) == 0  # from the cache
    notes = [line for line in capsys.readouterr().err.splitlines() if "skipped" in line]
    assert len(notes) == 1 and said in notes[0]
    page = html_text.unescape(report.read_text(encoding="utf-8"))
    assert said[0].upper() + said[1:] in page
    assert main(["report", str(out), "--out", str(tmp_path / "again.html")]) == 0  # the results check agrees too


def _best_upto(results: pd.DataFrame, method: str, processors: int) -> float:
    """Brute force: per configuration (array, batch), the best speedup of ``method`` with at most ``processors``
    processors among the rows that ran, averaged over the configurations."""
    rows = results[(results.method == method) & (results.processors <= processors)]
    return float(rows.groupby(["rows", "cols", "batch"]).speedup.max().mean())


def test_improvement_upto_is_computed_at_counts_pipedream_skipped(tmp_path, capsys):
    """Defect: ``improvement_upto_vs_pipedream_pct`` was empty at 5 and 6 processors, where PipeDream was skipped,
    though it compares each method's best with at most P processors and PipeDream's best with at most 5 is its
    best at 3 (the rest idle). Failed before the fix: NaN. Now it is that comparison, checked against a brute
    force over results.csv; the raw ``improvement_vs_pipedream_pct`` stays empty (no PipeDream row at P)."""
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path)), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    results, summary = pd.read_csv(out / "results.csv"), pd.read_csv(out / "summary.csv")
    for p in (3, 5, 6):
        for method in ("layerpipe", "gpipe", "pipedream"):
            row = summary[(summary.processors == p) & (summary.method == method)]
            if method == "pipedream" and p > 4:
                assert row.empty  # skipped: no row of its own
                continue
            expected = (_best_upto(results, method, p) / _best_upto(results, "pipedream", p) - 1.0) * 100.0
            assert row.improvement_upto_vs_pipedream_pct.item() == pytest.approx(expected, rel=1e-12)
            assert bool(pd.isna(row.improvement_vs_pipedream_pct.item())) == (p > 4)


def test_improvement_upto_stays_empty_without_pipedream(tmp_path, capsys):
    """A sweep that never runs PipeDream has nothing to compare with: the column is empty."""
    spec = _spec(tmp_path)
    spec.write_text(re.sub(r'"pipedream", ', "", spec.read_text(encoding="utf-8")), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert pd.read_csv(out / "summary.csv").improvement_upto_vs_pipedream_pct.isna().all()
