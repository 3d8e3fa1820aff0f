"""A power user's trial of sweeps, their cache and reports: interrupted runs, corrupted results folders,
absurd sizes.

Each test here failed on the code before its fix (the docstring says how).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

SPEC = """[sweep]
name = "trial42"
networks = ["ffnn8"]
arrays = ["32x32", "64x64"]
dataflows = ["ws"]
batches = [16, 32]
processors = [2, 3]
methods = ["layerpipe", "gpipe"]
mode = "paper"
"""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A small sweep's results folder (2 arrays × 2 batches × 2 processor counts × 2 methods: 16 rows)."""
    spec = tmp_path / "trial42.toml"
    spec.write_text(SPEC)
    out = tmp_path / "res"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    return out


def test_report_refuses_a_results_cell_that_is_not_a_number(results, tmp_path, capsys):
    """Failed before: a results.csv whose ``processors`` cell was edited to text made ``archsim report``
    end in a ValueError traceback (exit 1) from the speedup figure; now one error line naming the file,
    line and column, exit 2, and no report written."""
    path = results / "results.csv"
    lines = path.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cells = lines[2].split(",")
    cells[header.index("processors")] = "x"
    lines[2] = ",".join(cells)
    path.write_text("".join(lines))
    capsys.readouterr()
    target = tmp_path / "r.html"
    assert main(["report", str(results), "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("archsim report: error:"), err
    assert "line 3" in err[0] and "processors" in err[0] and "results.csv" in err[0]
    assert not target.exists()


def test_ctrl_c_swallowed_by_a_finalizer_still_stops_the_sweep(tmp_path, monkeypatch, capsys):
    """Failed before: a Ctrl-C that lands while Python runs a finalizer (a weakref callback, a ``__del__``: a
    garbage collection inside pandas or numba) is printed as "Exception ignored in: <finalize object …>" with a
    traceback and lost, and the sweep ran on to write its results (seen once by hand, ``kill -INT`` 8 s into
    an 11,340-configuration sweep). Now the sweep stops at the next unit as Ctrl-C stops it anywhere else:
    one line, exit 130, the finished units cached, no results.csv."""
    import weakref

    from archsim.sweep import executors

    spec = tmp_path / "trial42.toml"
    spec.write_text(SPEC)
    out = tmp_path / "res"
    computed = []
    real = executors.compute_unit

    def interrupted_in_a_finalizer(unit):
        computed.append(unit)
        if len(computed) == 2:  # the interrupt arrives as Python runs a finalizer
            class Held:
                pass

            def fire() -> None:
                raise KeyboardInterrupt

            held = Held()
            weakref.finalize(held, fire)
            del held
        return real(unit)

    monkeypatch.setattr(executors, "compute_unit", interrupted_in_a_finalizer)
    capsys.readouterr()
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    expected = (f"archsim sweep: error: interrupted: 8 of 16 configurations are cached in {out}; the same "
                "command resumes from them")
    assert err == [expected], err
    assert not (out / "results.csv").exists() and not (out / "summary.csv").exists()
    assert len(list((out / "cache").glob("*.json"))) == 2
    rerun = []
    monkeypatch.setattr(executors, "compute_unit", lambda unit: rerun.append(unit) or real(unit))
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert len(rerun) == 2 and not set(rerun) & set(computed)  # the rerun computed only the two units left


def _numbers(low: int, high: int) -> str:
    return ", ".join(map(str, range(low, high + 1)))


@pytest.mark.parametrize(("extra", "configs"), [
    # 4 arrays × 1000 batches × 1000 processor counts × 3 methods: 1.2·10⁷ rows, each axis within its 1,000 values
    ("", 12_000_000),
    # a design sweep: 1000 SRAM sizes × 1000 bandwidths are 10⁶ designs, listed as the spec was read
    ('engine = "cycle"\nsram_kb = [{big}]\nbandwidths = [{big}]\n', 12_000_000_000_000),
])
def test_an_absurd_sweep_is_refused_before_any_work(tmp_path, capsys, extra, configs):
    """Failed before: a spec of 1.2·10⁷ configurations (or 10⁶ designs of them) was accepted and ground on,
    listing its units (30 s and 0.6 GB in, it had not computed one; the design product was built as the spec was
    read), with no word of its size. Now it is refused at once, one line with the count and the flag that lifts
    the limit, nothing written: 4 × 1000 × 1000 × 3 = 1.2·10⁷ (× 10⁶ designs), by hand."""
    import time

    big = _numbers(1, 1000)
    spec = tmp_path / "absurd.toml"
    spec.write_text(f"""[sweep]
name = "absurd"
networks = ["ffnn8"]
arrays = ["16x16", "32x32", "64x64", "128x128"]
batches = [{big}]
processors = [{_numbers(2, 1001)}]
methods = ["layerpipe", "pipedream", "gpipe"]
mode = "paper"
""" + extra.format(big=big))
    out = tmp_path / "res"
    capsys.readouterr()
    start = time.perf_counter()
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 2
    assert time.perf_counter() - start < 10
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("archsim sweep: error:"), err
    assert f"{configs:,} configurations" in err[0] and "--max-configs" in err[0] and "1,000,000" in err[0]
    assert not out.exists()


def test_max_configs_lifts_the_limit_and_run_sweep_keeps_it(tmp_path):
    """The limit is a flag's (the 16-configuration spec refused under --max-configs 15, run under 16), and the
    library's run_sweep keeps it for a spec built by hand (a SweepSpec whose 10⁶ batches were never read from
    a file). Failed before: no limit, no flag."""
    from dataclasses import replace

    import archsim
    from archsim.errors import InputError
    from archsim.sweep import load_spec

    spec = tmp_path / "trial42.toml"
    spec.write_text(SPEC)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "a"), "--quiet", "--max-configs", "15"]) == 2
    assert not (tmp_path / "a").exists()
    assert main(["sweep", str(spec), "--out", str(tmp_path / "a"), "--quiet", "--max-configs", "16"]) == 0
    huge = replace(load_spec(spec), batches=tuple(range(1, 1_000_001)))  # 2 × 10⁶ × 2 × 2 = 8·10⁶
    with pytest.raises(InputError, match="8,000,000 configurations"):
        archsim.run_sweep(huge, out=tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_report_refuses_results_the_folders_spec_did_not_give(results, tmp_path, monkeypatch, capsys):
    """Failed before: a sweep rerun after its spec was edited (batch 32 → 48) and stopped before its results were
    written leaves the old results.csv under the new spec.json; ``archsim report`` drew it without a word, beside
    the edited spec's command, as it drew a results.csv with half its rows deleted at a row boundary. Now both
    are one error line: the rows' batches are not the spec's, and 8 rows are not the 16 (2 arrays × 2 batches ×
    2 processor counts × 2 methods) the spec gives."""
    from archsim.sweep import executors

    spec = tmp_path / "trial42.toml"
    spec.write_text(SPEC.replace("batches = [16, 32]", "batches = [16, 48]"))

    def stopped(unit):
        raise KeyboardInterrupt

    monkeypatch.setattr(executors, "compute_unit", stopped)
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 130
    capsys.readouterr()
    assert main(["report", str(results), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "spec.json" in err[0] and "batch" in err[0] and "32" in err[0], err
    assert not (tmp_path / "r.html").exists()

    spec.write_text(SPEC)  # the spec as it was, and the folder's results cut to their first 8 rows
    monkeypatch.undo()
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0
    path = results / "results.csv"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:9]))
    capsys.readouterr()
    assert main(["report", str(results), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "8 rows" in err[0] and "16" in err[0], err
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0  # the advice: rerun the sweep
    assert main(["report", str(results), "--out", str(tmp_path / "r.html")]) == 0


def test_sigterm_ends_a_sweep_as_ctrl_c_does(tmp_path):
    """Failed before: ``kill -TERM`` (a batch system's time limit) ended ``archsim sweep`` without a word (status
    -15 from the signal), so a log did not say that the finished units were kept and the same command resumes.
    Now it is Ctrl-C's one line, "terminated", and the shell's code for SIGTERM, 143; the units finished before
    it are cached, and no results.csv is written."""
    import subprocess
    import sys

    spec = tmp_path / "trial42.toml"
    spec.write_text(SPEC)
    out = tmp_path / "res"
    script = f"""
import os, signal, sys
from archsim.sweep import executors
from archsim.cli import main
real, done = executors.compute_unit, []
def terminated_at_the_second(unit):
    done.append(unit)
    if len(done) == 2:
        os.kill(os.getpid(), signal.SIGTERM)
    return real(unit)
executors.compute_unit = terminated_at_the_second
sys.exit(main(["sweep", {str(spec)!r}, "--out", {str(out)!r}, "--quiet"]))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 143, (run.returncode, run.stderr)
    expected = f"archsim sweep: error: terminated: 4 of 16 configurations are cached in {out}; the same command resumes"
    assert run.stderr.strip().splitlines() == [f"{expected} from them"], run.stderr
    assert len(list((out / "cache").glob("*.json"))) == 1 and not (out / "results.csv").exists()


DEVICE_SPEC = """[sweep]
name = "trial42_device"
model = "gpt3_1.3b"
device = "tpu_v4_like"
hbm_gbps = [600, 1200]
chips = [4, 8]
global_batch = 64
micro_batch = 1
recompute = "full"
dtype = "bf16"
attention = "standard"
"""


@pytest.mark.parametrize(("damage", "said"), [
    (lambda text: text[:-40], "cut short"),  # the last row cut inside
    (lambda text: text.replace(",600.0,4,", ",600.0,x,", 1), "'gpus': not a number ('x')"),
    (lambda text: "".join(text.splitlines(keepends=True)[:3]), "2 rows, where the folder's spec.json gives 4"),
])
def test_device_report_refuses_a_damaged_results_csv(tmp_path, capsys, damage, said):
    """Failed before: a device sweep's report read its results.csv unchecked: a last row cut inside, a ``gpus``
    cell edited to text, half its rows deleted were all drawn into a report, exit 0. Now each is one error line,
    as a plain sweep's report says it, and no report is written. The spec gives 2 bandwidths × 2 chip counts =
    4 points, by hand."""
    spec = tmp_path / "device.toml"
    spec.write_text(DEVICE_SPEC)
    out = tmp_path / "res"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    path = out / "results.csv"
    path.write_text(damage(path.read_text()))
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("archsim report: error:") and said in err[0], err
    assert not (tmp_path / "r.html").exists()


def test_a_bar_draws_on_a_terminal_that_reports_no_width(monkeypatch):
    """Failed before: on a terminal whose size is unset (0 × 0: ``script -qc "archsim sweep …" /dev/null`` run
    from a job, a container's pty) tqdm drew bars -1 columns wide, that is nothing at all, for the whole sweep.
    Now such a terminal gets an 80-column bar."""
    import os
    import pty
    import select
    import sys

    from archsim import progress

    main_fd, side_fd = pty.openpty()  # a new pty's size is 0 × 0 until someone sets it
    try:
        assert os.get_terminal_size(side_fd).columns == 0
        with os.fdopen(side_fd, "w", closefd=False) as stream:
            monkeypatch.setattr(sys, "stderr", stream)  # the bar's stream, as archsim's commands draw it
            with progress.progress(3, "work", "step", mininterval=0) as bar:
                bar.update(3)
            stream.flush()
            monkeypatch.undo()
        drawn = ""  # the pty hands writes over through a kernel worker: they may arrive in pieces, or late
        while "3/3" not in drawn and select.select([main_fd], [], [], 10.0)[0]:
            drawn += os.read(main_fd, 65536).decode()
    finally:
        os.close(side_fd)
        os.close(main_fd)
    assert "3/3" in drawn, repr(drawn)
