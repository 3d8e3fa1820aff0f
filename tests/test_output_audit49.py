"""An audit of every output path for what can destroy or half-write a user's files (issue 49).

What it found and these tests hold fixed:

* SIGTERM (a batch system's time limit, ``kill``) ended every command but ``sweep`` by the signal's default
  action: status -15, no word, and the temp files of the run's output set left beside their targets
  (``.o.txt.PID.XXXXXXXX.tmp``); a sweep's report, built after its results were staged, left the staged
  ``results.csv`` too. Now every command ends as Ctrl-C ends it: one line, status 143, no temp file, no target
  replaced.
* A Ctrl-C that came after a temp file was made but before the output set recorded it left that file behind.
* A results folder's ``.archsim.lock`` that was a FIFO hung ``archsim report`` forever (a blocking read-only
  open), and one that was a FIFO or a device gave ``archsim sweep`` a traceback (``ftruncate``: EINVAL).

The devices are this test's own nodes (``os.mknod`` in ``tmp_path``, never ``/dev/``): making one needs
root, which CI has; elsewhere those cases skip, as in ``tests/test_output_targets.py``.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from output_commands import COMMANDS, SWEEP_SPEC
from test_output_targets import CASES, argv_for
from test_robustness import clean_error

from archsim import output_files
from archsim.cli import main
from archsim.errors import InputError

NULL = os.makedev(1, 3)  # Linux's number for /dev/null

# A run in a child process whose Nth output file gets the signal just before it is written: the run has
# staged the files before it (their temp files exist) and none is renamed yet. The child takes Python's own
# SIGINT handler first: a process started with SIGINT ignored (a shell's background job, ``nohup``) keeps it
# ignored, as Python does, and a Ctrl-C test run from such a shell would otherwise see no interrupt at all.
SIGNALLED_RUN = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even when this test's parent ignores SIGINT
from archsim import output_files
real, started = output_files.write_temp, []
def signalled(path, text):
    started.append(path)
    if len(started) == {nth}:
        os.kill(os.getpid(), signal.{signal})
    return real(path, text)
output_files.write_temp = signalled
from archsim.cli import command_line
sys.argv = ["archsim", *{argv!r}]
sys.exit(command_line())
"""


def _signalled(folder: Path, argv: list[str], nth: int, signal: str) -> subprocess.CompletedProcess:
    script = SIGNALLED_RUN.format(nth=nth, signal=signal, argv=argv)
    return subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("signal", ["SIGTERM", "SIGINT"])
def test_a_signal_while_a_run_writes_its_files_leaves_no_temp_and_no_target(tmp_path, signal):
    """Failed before for SIGTERM: status -15, stderr empty, ``.o.txt.PID.XXXXXXXX.tmp`` left in the folder."""
    (tmp_path / "o.txt").write_text("old\n", encoding="utf-8")
    argv = [*COMMANDS["train"], "--out", "o.txt", "--gantt", "g.html"]
    done = _signalled(tmp_path, argv, 2, signal)
    word, code = ("terminated", 143) if signal == "SIGTERM" else ("interrupted", 130)
    assert (done.returncode, done.stderr.strip()) == (code, f"archsim train: error: {word}"), done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.txt"]  # no temp file, no g.html
    assert (tmp_path / "o.txt").read_text(encoding="utf-8") == "old\n"  # the old file kept whole


def test_sigterm_while_a_sweep_draws_its_report_keeps_the_cache_and_no_temp(tmp_path):
    """Failed before: the sweep turned SIGTERM into Ctrl-C only while computing; during its report (after
    results.csv and summary.csv were staged) the signal killed it and left ``res/.results.csv.PID….tmp``."""
    (tmp_path / "s.toml").write_text(SWEEP_SPEC, encoding="utf-8")
    argv = ["sweep", "s.toml", "--out", "res", "--quiet", "--report", "rep.html"]
    done = _signalled(tmp_path, argv, 5, "SIGTERM")  # spec.json, a unit, results.csv, summary.csv, then the report
    said = ("archsim sweep: error: terminated: all 1 configurations are cached in res; the same command writes "
            "results.csv and the report from them")  # the one unit the spec has, computed before the signal
    assert done.returncode == 143 and done.stderr.strip() == said, done.stderr[-2000:]
    assert not list(tmp_path.rglob("*.tmp"))
    assert not (tmp_path / "rep.html").exists() and not (tmp_path / "res" / "results.csv").exists()
    assert len(list((tmp_path / "res" / "cache").glob("*.json"))) == 1  # the unit it computed is kept


def _interrupt_after_the_temp_file(monkeypatch) -> None:
    """A Ctrl-C just after a temp file is made, before the output set records it."""
    real = output_files.write_temp

    def made_then_interrupted(path, text):
        real(path, text)
        raise KeyboardInterrupt

    monkeypatch.setattr(output_files, "write_temp", made_then_interrupted)


def test_an_interrupt_between_making_a_temp_file_and_recording_it_leaves_none(tmp_path, capsys, monkeypatch):
    """Failed before: the temp file of the file being staged was not yet in the set's list, so the set's
    cleanup missed it and ``.o.txt.PID.XXXXXXXX.tmp`` stayed."""
    _interrupt_after_the_temp_file(monkeypatch)
    assert main(["cost", "layerpipe_sample", "--out", str(tmp_path / "o.txt")]) == 130
    assert capsys.readouterr().err.strip() == "archsim cost: error: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_the_cleanup_removes_only_this_processs_temp_files(tmp_path, capsys, monkeypatch):
    """Another live writer's temp file beside the same target (a PID not ours, alive: PID 1) is not touched."""
    theirs = tmp_path / ".o.txt.1.abcdefgh.tmp"
    theirs.write_text("theirs", encoding="utf-8")
    _interrupt_after_the_temp_file(monkeypatch)
    assert main(["cost", "layerpipe_sample", "--out", str(tmp_path / "o.txt")]) == 130
    assert [p.name for p in tmp_path.iterdir()] == [theirs.name]


def _lock_node(folder: Path, kind: str) -> Path:
    lock = folder / ".archsim.lock"
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root (CI runs as root)")
        os.mknod(lock, stat.S_IFCHR | 0o666, NULL)
    else:
        lock.symlink_to(folder / "elsewhere")
    return lock


@pytest.mark.parametrize("kind", ["fifo", "device", "symlink"])
def test_a_lock_that_is_not_a_regular_file_is_one_line_and_stays(tmp_path, capsys, kind):
    """Failed before (a FIFO, a device): a traceback ending ``OSError: [Errno 22] Invalid argument`` (ftruncate)."""
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    out = tmp_path / "res"
    out.mkdir()
    lock = _lock_node(out, kind)
    before = os.lstat(lock)
    line = clean_error(capsys, "sweep", spec, "--out", out, "--quiet")
    assert "cannot lock the results folder (its .archsim.lock is not a regular file: remove it)" in line
    after = os.lstat(lock)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert [p.name for p in out.rglob("*") if not p.is_dir()] == [".archsim.lock"]  # no file written (cache/ empty)


def test_a_fifo_lock_does_not_hang_a_report(tmp_path):
    """Failed before: ``archsim report`` of a folder whose sweep stopped early opened the FIFO read-only to ask
    whether a sweep held it, and waited for a writer forever (here: the timeout)."""
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    out = tmp_path / "res"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    (out / "results.csv").unlink()  # a sweep stopped before its end
    (out / ".archsim.lock").unlink()
    _lock_node(out, "fifo")
    done = subprocess.run([sys.executable, "-m", "archsim", "report", str(out), "--out", str(tmp_path / "r.html")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "no results.csv: the sweep stopped before its end" in done.stderr, done.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(("command", "flag"), CASES)
def test_a_symlink_to_a_folder_is_one_line_and_nothing_lands_in_the_folder(tmp_path, capsys, command, flag):
    """The audit's one case of the table not yet tested per flag (a folder and a dangling link are, in
    test_output_targets.py): the link is refused as the folder it leads to, before any work."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    link = tmp_path / "link"
    link.symlink_to(folder)
    argv = argv_for(command, flag, link, tmp_path)  # (report's runs a sweep first)
    capsys.readouterr()
    assert "cannot write here (a folder)" in clean_error(capsys, *argv)
    assert link.is_symlink() and list(folder.iterdir()) == []


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """The shipped folders as a copy in ``tmp_path`` (``pkg/layers``, ``pkg/configs``), so that a broken check
    replaces a copy, never the checkout's own files."""
    from archsim import validate
    from archsim.energy import table
    from archsim.workload import shipped

    root = Path(__file__).resolve().parents[1]
    layers, configs = tmp_path / "pkg" / "layers", tmp_path / "pkg" / "configs"
    layers.mkdir(parents=True)
    (configs / "energy").mkdir(parents=True)
    shutil.copy(root / "layers" / "layerpipe_sample.csv", layers)
    shutil.copy(root / "configs" / "energy" / "horowitz45.toml", configs / "energy")
    monkeypatch.setattr(shipped, "shipped_dir", lambda: layers)
    monkeypatch.setattr(validate, "shipped_configs", lambda folder: configs / folder)
    monkeypatch.setattr(table, "shipped_configs", lambda folder: configs / folder)
    return layers, configs


@pytest.mark.parametrize(("name", "input_name"), [("layerpipe_sample", "NETWORK"), ("LayerPipe-Sample", "NETWORK")])
def test_an_output_over_the_shipped_network_the_run_reads_is_refused(shipped_copy, capsys, name, input_name):
    """Failed before: ``cost layerpipe_sample --out layers/layerpipe_sample.csv`` (in a checkout, or the installed
    package's folder) replaced the shipped network it had just read with its table, exit 0: a name given for the
    input is no path, so the check of an output against the run's inputs never saw it."""
    layers, _ = shipped_copy
    target = layers / "layerpipe_sample.csv"
    before = target.read_bytes()
    line = clean_error(capsys, "cost", name, "--out", target)
    assert f"--out names this run's input ({input_name}, the shipped {name!r})" in line
    assert target.read_bytes() == before


def test_an_output_over_the_shipped_energy_table_the_run_reads_is_refused(shipped_copy, capsys):
    _, configs = shipped_copy
    target = configs / "energy" / "horowitz45.toml"
    before = target.read_bytes()
    line = clean_error(capsys, "cost", "layerpipe_sample", "--energy-table", "horowitz45", "--out", target)
    assert "--out names this run's input (--energy-table, the shipped 'horowitz45')" in line
    assert target.read_bytes() == before


def test_a_shipped_folder_still_takes_a_file_the_run_does_not_read(shipped_copy, capsys):
    """Writing a new network into layers/ (a checkout's own) stays the user's choice."""
    layers, _ = shipped_copy
    assert main(["import", "layerpipe_sample", "-o", str(layers / "mine.csv")]) == 0
    before = (layers / "layerpipe_sample.csv").read_bytes()
    assert main(["import", "layerpipe_sample", "-o", str(layers / "again.csv")]) == 0  # the name read, another file
    assert (layers / "mine.csv").stat().st_size > 0 and (layers / "layerpipe_sample.csv").read_bytes() == before


COMMIT_INTERRUPTED = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even when this test's parent ignores SIGINT
from archsim import output_files
real, renamed = os.replace, []
def interrupted_between_two_renames(src, dst):
    if str(src).endswith(".tmp"):
        if len(renamed) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C once the set's first file is in place, before the second
        renamed.append(dst)
    return real(src, dst)
output_files.os.replace = interrupted_between_two_renames
from archsim.cli import command_line
sys.argv = ["archsim", *{argv!r}]
sys.exit(command_line())
"""


def test_ctrl_c_while_a_runs_files_are_renamed_replaces_all_of_them_or_none(tmp_path):
    """Failed before: a Ctrl-C between the renames of a run's files left the first renamed (new) and the rest
    removed (old): half a set. Now SIGINT and SIGTERM wait for the renames: every file is the new one, each
    announced, then the one "interrupted" line and status 130."""
    for name in ("o.txt", "g.html"):
        (tmp_path / name).write_text("old\n", encoding="utf-8")
    argv = [*COMMANDS["train"], "--out", "o.txt", "--gantt", "g.html"]
    done = subprocess.run([sys.executable, "-c", COMMIT_INTERRUPTED.format(argv=argv)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 130, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == ["wrote o.txt", "wrote g.html", "archsim train: error: interrupted"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.html", "o.txt"]  # no temp file
    assert all((tmp_path / name).read_text(encoding="utf-8") != "old\n" for name in ("o.txt", "g.html"))


# --- the API's keywords that write files: the CLI's checks of the same flags (issue 49) ---------------------------

def test_validate_gpu_refuses_a_report_over_its_measured_csv_and_one_file_for_two_outputs(tmp_path):
    """Failed before: ``archsim.validate_gpu(csv=k.csv, report=k.csv)`` replaced the measured CSV with the HTML page
    (and ``markdown=`` alike), and ``report=x, markdown=x`` kept only the second; ``archsim validate-gpu`` refuses
    all three before any work."""
    from output_commands import GPU_CSV

    import archsim

    measured = tmp_path / "k.csv"
    shutil.copy(GPU_CSV, measured)
    before = measured.read_bytes()
    for keyword in ("report", "markdown"):
        with pytest.raises(InputError, match=f"{keyword} names this run's input \\(csv\\)"):
            archsim.validate_gpu(csv=measured, **{keyword: measured})
        assert measured.read_bytes() == before
    both = tmp_path / "both.txt"
    with pytest.raises(InputError, match=r"named by two output flags \(report and markdown\)"):
        archsim.validate_gpu(csv=str(measured), report=both, markdown=str(both))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.csv"]


def test_cluster_jobs_refuses_a_report_over_its_trace(tmp_path):
    """Failed before: ``archsim.cluster_jobs(trace=t.csv, report=t.csv)`` went on to read the trace and would
    replace it with the page; ``archsim cluster`` refuses it before any work."""
    import archsim

    trace = tmp_path / "t.csv"
    trace.write_text("not read: refused before\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"report names this run's input \(trace\)"):
        archsim.cluster_jobs(trace=str(trace), report=trace)
    assert trace.read_text(encoding="utf-8") == "not read: refused before\n"


@pytest.mark.parametrize("name", ["results.csv", "summary.csv", "spec.json", "the spec"])
def test_write_report_refuses_to_replace_the_results_it_draws(tmp_path, name):
    """Failed before: ``archsim.write_report("res", out="res/results.csv")`` replaced the sweep's results with the
    HTML page (exit as success); ``archsim report res --out res/results.csv`` refuses it, naming the file."""
    import archsim

    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    out = tmp_path / "res"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    target = spec if name == "the spec" else out / name
    before = target.read_bytes()
    with pytest.raises(InputError, match="out names the (results folder's|sweep spec)"):
        archsim.write_report(out, out=target)
    assert target.read_bytes() == before
