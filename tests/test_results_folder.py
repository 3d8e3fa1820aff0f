"""A results folder belongs to one sweep spec at a time (issue 32): a run holds the folder's lock and
a second is refused naming the holder; another spec's folder is refused unless --force; temp files
of killed writers are removed by the next write, a live writer's are not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import USAGE

from archsim.cli import main
from archsim.output_temps import remove_orphans
from archsim.outputs import atomic_write_text
from archsim.sweep.folder import holding

SPEC = ('[sweep]\nname = "{name}"\nnetworks = ["layerpipe_sample"]\narrays = ["{array}"]\nbatches = [4]\n'
        'processors = [2, 3]\nmethods = ["layerpipe", "gpipe"]\n')


def spec(folder: Path, name: str, array: str = "16x16") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(SPEC.format(name=name, array=array), encoding="utf-8")
    return path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and USAGE.match(err), err
    return err


def test_a_second_run_is_refused_with_the_holders_pid_and_spec(tmp_path, capsys):
    a = spec(tmp_path, "a")
    out = tmp_path / "out"
    out.mkdir()
    with holding(out, str(a), "a"):
        assert main(["sweep", str(a), "--out", str(out), "--quiet"]) == 2
    line = one_line_error(capsys)
    assert f"pid {os.getpid()}" in line and str(a.resolve()) in line
    assert not (out / "results.csv").exists()
    assert main(["sweep", str(a), "--out", str(out), "--quiet"]) == 0  # released: the run goes ahead


def test_another_specs_folder_is_refused_unless_forced(tmp_path, capsys):
    a, b = spec(tmp_path, "a"), spec(tmp_path, "b", "8x8")
    out = tmp_path / "out"
    assert main(["sweep", str(a), "--out", str(out), "--quiet"]) == 0
    before = (out / "results.csv").read_bytes()
    capsys.readouterr()
    assert main(["sweep", str(b), "--out", str(out), "--quiet"]) == 2
    assert "another spec" in one_line_error(capsys) and (out / "results.csv").read_bytes() == before
    assert main(["sweep", str(a), "--out", str(out), "--quiet"]) == 0  # the owner may re-run
    assert main(["sweep", str(b), "--out", str(out), "--quiet", "--force"]) == 0
    assert set(pd.read_csv(out / "results.csv").rows) == {8}
    assert json.loads((out / "spec.json").read_text())["source_path"] == str(b.resolve())


def test_a_folder_holding_a_results_csv_no_sweep_wrote_is_refused_unless_forced(tmp_path, capsys):
    """``--out .`` in a working folder replaced the user's own ``results.csv`` silently: with no
    ``spec.json`` beside it, no sweep wrote it, so it is refused as another spec's results are."""
    a, out = spec(tmp_path, "a"), tmp_path / "work"
    out.mkdir()
    (out / "results.csv").write_text("mine\n")
    assert main(["sweep", str(a), "--out", str(out), "--quiet"]) == 2
    line = one_line_error(capsys)
    assert "holds a results.csv but no spec.json" in line and "--force" in line, line
    assert (out / "results.csv").read_text() == "mine\n" and not (out / "spec.json").exists()
    assert main(["sweep", str(a), "--out", str(out), "--quiet", "--force"]) == 0
    assert set(pd.read_csv(out / "results.csv").rows) == {16}  # the 16 × 16 array's rows: the sweep's own


@pytest.mark.parametrize("theirs", ["results.csv", "summary.csv"])
def test_a_refused_users_folder_is_left_as_it_was(tmp_path, capsys, theirs):
    """Failed before: the refusal above came after the run had made the folder's ``.archsim.lock`` and an empty
    ``cache/``, left in the user's folder beside their own files. Nothing is written there now, the report neither."""
    a, out = spec(tmp_path, "a"), tmp_path / "work"
    out.mkdir()
    (out / theirs).write_text("mine\n")
    (out / "notes.txt").write_text("notes\n")
    report = tmp_path / "a.html"
    assert main(["sweep", str(a), "--out", str(out), "--quiet", "--report", str(report)]) == 2
    assert "no spec.json" in one_line_error(capsys)
    assert sorted(p.name for p in out.iterdir()) == sorted([theirs, "notes.txt"]) and not report.exists()
    (out / "cache").mkdir()  # --prune-cache, refused there too, leaves the folder (and its cache) as it was
    (out / "cache" / "mine.json").write_text("{}")
    assert main(["sweep", str(a), "--out", str(out), "--prune-cache"]) == 2
    assert "no spec.json" in one_line_error(capsys)
    assert sorted(p.name for p in out.iterdir()) == sorted([theirs, "notes.txt", "cache"])


def test_orphan_temp_files_go_and_a_live_writers_stay(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = tmp_path / f".out.csv.{dead}.k2j4h1ab.tmp"
    live = tmp_path / f".out.csv.{os.getpid()}.zz9x8y7w.tmp"
    other = tmp_path / f".other.csv.{dead}.aaaa1111.tmp"
    for path in (orphan, live, other):
        path.write_bytes(b"")
    atomic_write_text(tmp_path / "out.csv", "x\n")
    assert not orphan.exists() and live.exists() and other.exists()
    assert remove_orphans(tmp_path) == 1 and not other.exists() and live.exists()
    assert (tmp_path / "out.csv").read_text() == "x\n"


def test_a_killed_gemm_out_leaves_nothing_the_next_run_keeps(tmp_path, capsys):
    """Issue 32: a killed `archsim gemm --out` left a 0-byte temp file that nothing removed."""
    out = tmp_path / "g.csv"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    (tmp_path / f".g.csv.{proc.pid}.abcd1234.tmp").write_bytes(b"")
    proc.kill()
    proc.wait()
    assert main(["gemm", "--m", "8", "--k", "8", "--n", "8", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.csv"]


RUN = [sys.executable, "-m", "archsim", "sweep"]


@pytest.mark.slow
@pytest.mark.parametrize("same", [True, False], ids=["same spec", "different specs"])
def test_concurrent_sweeps_lose_nothing_and_never_claim_anothers_results(tmp_path, same):
    """20 trials of two sweeps started together into one fresh folder: every run exits 0 or 2 (one
    line); each exit 0 leaves results.csv holding its own spec's complete results."""
    a = spec(tmp_path, "a")
    b = a if same else spec(tmp_path, "b", "8x8")
    expected = {str(b.resolve()): 8, str(a.resolve()): 16}  # array rows each spec's results carry
    outcomes = []
    for trial in range(20):
        out = tmp_path / f"out{trial}"
        procs = [(s, subprocess.Popen([*RUN, str(s), "--out", str(out), "--quiet"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)) for s in (a, b)]
        for source, proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode in (0, 2), err[-2000:]
            if proc.returncode == 2:
                assert len(err.strip().splitlines()) == 1 and "archsim sweep: error: " in err, err
            outcomes.append(proc.returncode)
        winners = [source for source, proc in procs if proc.returncode == 0]
        assert winners, "both runs refused"
        owner = json.loads((out / "spec.json").read_text())["source_path"]
        frame = pd.read_csv(out / "results.csv")
        assert len(frame) == len(spec_rows(frame)) and owner in {str(s.resolve()) for s in winners}
        assert set(frame.rows) == {expected[owner]}
        if not same:
            assert len(winners) == 1  # two different specs never both exit 0 into one folder
    print(f"{'same' if same else 'different'} specs: exit 0 ×{outcomes.count(0)}, exit 2 ×{outcomes.count(2)}")


def spec_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """A spec's complete results: 2 processor counts × 2 methods."""
    assert len(frame) == 4, frame
    return frame
