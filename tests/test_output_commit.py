"""A run's output files are one transaction: a write that fails after the first file was written (a
full disk, a quota, an I/O error) or a Ctrl-C between two writes replaces none of the run's targets
and leaves no temp file behind (archsim.output_files.output_set, docs/security.md).

The failure is injected at the writer's ``os.fsync`` of one named target's temp file — the last step
before the old writer renamed that file into place — so every file written before it was complete."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from output_commands import SWEEP_SPEC
from test_output_targets import _argv
from test_robustness import clean_error

from archsim.cli import main
from archsim.output_files import note_written, output_set, pending, write_output

OLD = "the user's file from an earlier run\n"


def _fail_on(monkeypatch, folder: Path, name: str, error: BaseException) -> list[str]:
    """Make the fsync of ``name``'s temp file (``.NAME.PID.XXXX.tmp`` under ``folder``) raise
    ``error``; returns the targets fsynced so far, in order (the failing one last)."""
    real, folder = os.fsync, folder.resolve()
    seen: list[str] = []

    def fsync(fd: int) -> None:
        where = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if folder in where.parents and where.name.endswith(".tmp"):
            target = where.name[1:].rsplit(".", 3)[0]  # ".NAME.PID.XXXXXXXX.tmp" → NAME
            seen.append(target)
            if target == name:
                raise error
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _full_disk() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _temps(folder: Path) -> list[Path]:
    return sorted(folder.rglob(".*.tmp"))


def _old_files(*paths: Path) -> None:
    for path in paths:
        path.write_text(OLD, encoding="utf-8")


def _kept(*paths: Path) -> bool:
    return all(path.read_text(encoding="utf-8") == OLD for path in paths)


# train: --out is written first, then the Gantt


def test_train_full_disk_on_its_gantt_keeps_the_old_json(tmp_path, capsys, monkeypatch):
    out, gantt = tmp_path / "run.json", tmp_path / "g.html"
    _old_files(out, gantt)
    argv = [*_argv("train", tmp_path), "--out", out, "--gantt", gantt]
    seen = _fail_on(monkeypatch, tmp_path, "g.html", _full_disk())
    line = clean_error(capsys, *argv)
    assert seen == ["run.json", "g.html"]  # the Gantt is the second file, the JSON was complete
    assert str(gantt) in line and "No space left on device" in line
    assert _kept(out, gantt)
    assert _temps(tmp_path) == []


def test_train_interrupted_on_its_gantt_keeps_the_old_json(tmp_path, capsys, monkeypatch):
    out, gantt, trace = tmp_path / "run.json", tmp_path / "g.html", tmp_path / "t.json"
    _old_files(out, gantt, trace)
    argv = [str(a) for a in (*_argv("train", tmp_path), "--out", out, "--gantt", gantt, "--chrome-trace", trace)]
    seen = _fail_on(monkeypatch, tmp_path, "g.html", KeyboardInterrupt())
    assert main(argv) == 130  # Ctrl-C: the shell's code for SIGINT, one line, no traceback
    assert seen == ["run.json", "g.html"]
    assert _kept(out, gantt, trace)
    assert _temps(tmp_path) == []
    err = capsys.readouterr().err
    assert "wrote" not in err and err.strip() == "archsim train: error: interrupted"  # run.json was not written: no line says it was


def test_a_folder_made_for_a_failed_run_is_removed(tmp_path, capsys, monkeypatch):
    out, gantt = tmp_path / "run.json", tmp_path / "new" / "sub" / "g.html"
    _old_files(out)
    _fail_on(monkeypatch, tmp_path, "g.html", _full_disk())
    clean_error(capsys, *_argv("train", tmp_path), "--out", out, "--gantt", gantt)
    assert _kept(out)
    assert not (tmp_path / "new").exists()


def test_train_writes_all_its_files_when_nothing_fails(tmp_path, capsys):
    paths = {flag: tmp_path / name for flag, name in (("--out", "run.txt"), ("--gantt", "g.html"),
                                                       ("--chrome-trace", "t.json"), ("--schedule-csv", "s.csv"))}
    _old_files(*paths.values())
    argv = [str(a) for a in _argv("train", tmp_path)] + [str(a) for pair in paths.items() for a in pair]
    assert main(argv) == 0
    assert not any(_kept(path) for path in paths.values())
    assert paths["--out"].read_text(encoding="utf-8").startswith("# model: ")
    assert _temps(tmp_path) == []
    # every file its wrote line, in the order train writes them: --out, then the timeline's (issue #40)
    assert capsys.readouterr().err.splitlines() == [f"wrote {path}" for path in paths.values()]


# plan: the schedule CSV is written first (with the timeline), then --out


@pytest.mark.parametrize("error", [_full_disk(), KeyboardInterrupt()], ids=["ENOSPC", "KeyboardInterrupt"])
def test_plan_failing_on_its_table_keeps_the_old_schedule_csv(tmp_path, capsys, monkeypatch, error):
    out, csv = tmp_path / "plan.txt", tmp_path / "s.csv"
    _old_files(out, csv)
    argv = [str(a) for a in (*_argv("plan", tmp_path), "--out", out, "--schedule-csv", csv)]
    seen = _fail_on(monkeypatch, tmp_path, "plan.txt", error)
    if isinstance(error, OSError):
        line = clean_error(capsys, *argv)
        assert str(out) in line and "No space left on device" in line
    else:
        assert main(argv) == 130 and capsys.readouterr().err.strip() == "archsim plan: error: interrupted"
    assert seen == ["s.csv", "plan.txt"]
    assert _kept(out, csv)
    assert _temps(tmp_path) == []


# sweep: the folder's results.csv and summary.csv, then the report


def _swept(tmp_path: Path) -> tuple[list[str], Path]:
    """A sweep already run into ``results/`` (its cache kept), then its results.csv and summary.csv
    replaced by the user's bytes, so a rerun that rewrote them would show."""
    spec, results = tmp_path / "columns.toml", tmp_path / "results"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    argv = ["sweep", str(spec), "--out", str(results), "--quiet"]
    assert main(argv) == 0
    _old_files(results / "results.csv", results / "summary.csv")
    return argv, results


@pytest.mark.parametrize("error", [_full_disk(), KeyboardInterrupt()], ids=["ENOSPC", "KeyboardInterrupt"])
def test_sweep_failing_on_its_report_keeps_the_old_results(tmp_path, capsys, monkeypatch, error):
    argv, results = _swept(tmp_path)
    report = tmp_path / "report.html"
    _old_files(report)
    caches = sorted((results / "cache").iterdir())
    capsys.readouterr()
    seen = _fail_on(monkeypatch, tmp_path, "report.html", error)
    if isinstance(error, OSError):
        line = clean_error(capsys, *argv, "--report", report)
        assert str(report) in line and "No space left on device" in line
    else:
        assert main([*argv, "--report", str(report)]) == 130
        assert capsys.readouterr().err.strip().startswith("archsim sweep: error: interrupted")
    assert seen[-3:] == ["results.csv", "summary.csv", "report.html"]
    assert _kept(results / "results.csv", results / "summary.csv", report)
    assert _temps(tmp_path) == []
    assert sorted((results / "cache").iterdir()) == caches  # the computed units stay cached


def test_sweep_report_reads_the_results_of_its_own_run(tmp_path, capsys):
    """The report is built from the results.csv the same run wrote (not yet renamed into place), not
    from the user's old bytes there (which are no results file at all)."""
    argv, results = _swept(tmp_path)
    report = tmp_path / "report.html"
    assert main([*argv, "--report", str(report)]) == 0
    assert results.joinpath("results.csv").read_text(encoding="utf-8").startswith("network,")
    assert "archsim sweep report" in report.read_text(encoding="utf-8")
    assert _temps(tmp_path) == []
    err = capsys.readouterr().err.splitlines()
    assert err[-2:] == [f"1 results in {results / 'results.csv'}; summary in {results / 'summary.csv'}",
                        f"wrote {report}"]


def test_a_sweep_leaves_a_live_writers_temp_file_alone(tmp_path, capsys):
    """Under its folder's lock a sweep removes a killed writer's temp files, but not a live process's
    (another command writing into the folder, or a run whose output set has not ended)."""
    argv, results = _swept(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = results / f".results.csv.{dead}.k2j4h1ab.tmp"
    live = results / f".summary.csv.{os.getpid()}.zz9x8y7w.tmp"  # this process: alive
    _old_files(orphan, live)
    assert main(argv) == 0
    assert not orphan.exists() and _kept(live)


def test_a_sweeps_folder_stays_locked_until_its_results_are_in_place(tmp_path):
    """Inside an open set (the CLI's, where the report joins) the results are renamed when the set
    ends, so the folder's lock is held until then: no other sweep runs there in between."""
    from archsim.errors import InputError
    from archsim.sweep import load_spec, run_sweep
    from archsim.sweep.folder import holding

    spec_file, results = tmp_path / "columns.toml", tmp_path / "results"
    spec_file.write_text(SWEEP_SPEC, encoding="utf-8")
    spec = load_spec(spec_file)
    with output_set():
        run_sweep(spec, results, progress=False)
        assert not (results / "results.csv").exists()
        with pytest.raises(InputError, match="in use by another archsim sweep"), holding(results, str(spec_file), "x"):
            pass
    assert (results / "results.csv").is_file() and (results / "summary.csv").is_file()
    with holding(results, str(spec_file), "x"):  # free now
        pass


# the set itself


def test_an_output_set_renames_at_its_end_and_joins_an_open_one(tmp_path, capsys):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    _old_files(first, second)
    with output_set():
        write_output(first, "new a\n")
        with output_set():  # joins: its end renames nothing yet
            write_output(second, "new b\n")
            note_written("wrote b")
        assert _kept(first, second)
        assert pending(second).read_text(encoding="utf-8") == "new b\n" and pending(second) != second
        assert capsys.readouterr().err == ""
    assert first.read_text(encoding="utf-8") == "new a\n" and second.read_text(encoding="utf-8") == "new b\n"
    assert pending(second) == second
    assert capsys.readouterr().err == "wrote b\n"
    assert _temps(tmp_path) == []


def test_an_output_set_ended_by_an_error_replaces_nothing(tmp_path, capsys):
    first = tmp_path / "a.txt"
    _old_files(first)
    with pytest.raises(RuntimeError), output_set():
        write_output(first, "new a\n")
        write_output(tmp_path / "made" / "b.txt", "new b\n")
        note_written("wrote a")
        raise RuntimeError("the run failed after writing")
    assert _kept(first)
    assert not (tmp_path / "made").exists() and _temps(tmp_path) == []
    assert capsys.readouterr().err == ""


def test_a_file_written_at_once_is_in_place_before_the_set_ends(tmp_path):
    cache = tmp_path / "cache.json"
    with pytest.raises(RuntimeError), output_set():
        write_output(cache, "{}\n", at_once=True)
        assert cache.read_text(encoding="utf-8") == "{}\n"
        raise RuntimeError("stopped")
    assert cache.read_text(encoding="utf-8") == "{}\n"


# every command with several output flags, all of them given


def _commands_with_several_outputs() -> list[tuple[str, tuple[str, ...]]]:
    from test_output_sets import MULTI

    return sorted({(command, flags) for command, _, flags in MULTI})


@pytest.mark.parametrize(("command", "flags"), _commands_with_several_outputs(),
                         ids=[command for command, _ in _commands_with_several_outputs()])
def test_every_multi_output_command_replaces_none_when_its_second_file_fails(tmp_path, capsys, monkeypatch,
                                                                          command, flags):
    outs = tmp_path / "outs"
    outs.mkdir()
    targets = [outs / f"file{flag}" for flag in flags]
    _old_files(*targets)
    argv = [*_argv(command, tmp_path), *[a for flag, target in zip(flags, targets) for a in (flag, target)]]
    capsys.readouterr()
    real, seen = os.fsync, []

    def fsync(fd: int) -> None:  # the second output file's fsync fails, whichever flag it is
        if Path(os.readlink(f"/proc/self/fd/{fd}")).parent == outs.resolve():
            seen.append(fd)
            if len(seen) == 2:
                raise _full_disk()
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    line = clean_error(capsys, *argv)
    assert len(seen) == 2 and "No space left on device" in line
    assert _kept(*targets)
    assert _temps(tmp_path) == []


# a reader of stdout that leaves early (`| head -1`): the run's files land all the same

PIPELINE = ["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2", "--format", "csv"]


def test_a_stdout_whose_reader_left_still_gets_the_runs_files_written(tmp_path, capsys, monkeypatch):
    """stdout a pipe whose read end is closed, line-buffered so the run's first line meets it."""
    expected, trace = tmp_path / "expected.json", tmp_path / "t.json"
    assert main([*PIPELINE, "--chrome-trace", str(expected)]) == 0
    read, write = os.pipe()
    os.close(read)
    with open(write, "w", encoding="utf-8", buffering=1) as gone:
        monkeypatch.setattr(sys, "stdout", gone)
        assert main([*PIPELINE, "--chrome-trace", str(trace)]) == 0
        assert trace.read_bytes() == expected.read_bytes()
    assert _temps(tmp_path) == []


def test_a_stdout_closed_before_the_run_still_gets_the_runs_files_written(tmp_path, capsys, monkeypatch):
    """`archsim cost … --out f >&-`: Python's sys.stdout is None; the file is written, status 0."""
    out = tmp_path / "cost.csv"
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["cost", "layerpipe_sample", "--format", "csv", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("layer,")


@pytest.mark.long
def test_a_pipe_closed_after_one_line_still_gets_the_runs_files_written(tmp_path, capsys):
    """`archsim pipeline wide.csv --format csv --chrome-trace t.json | head -1`: the table (~32 kB,
    one row a layer) outgrows a one-page pipe, so the run is still printing when the reader closes
    it; the trace must land complete, with status 0 and nothing on stderr about the pipe."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        pytest.skip("needs Linux's F_SETPIPE_SZ to make the pipe one page")
    network = tmp_path / "wide.csv"
    network.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                       "Strides,\n" + "".join(f"fc{i}, 1, 1, 1, 1, 16, 16, 1,\n" for i in range(1000)),
                       encoding="utf-8")
    argv = ["pipeline", str(network), "--processors", "2", "--microbatches", "2", "--format", "csv"]
    expected, trace = tmp_path / "expected.json", tmp_path / "t.json"
    assert main([*argv, "--chrome-trace", str(expected)]) == 0
    table = capsys.readouterr().out
    read, write = os.pipe()
    fcntl.fcntl(read, fcntl.F_SETPIPE_SZ, 4096)  # the child can have handed over at most ~16 kB when it closes
    assert len(table.encode()) > 4 * 4096
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # unbuffered, a partial write passes
    with subprocess.Popen([sys.executable, "-m", "archsim", *argv, "--chrome-trace", str(trace)],
                          stdout=write, stderr=subprocess.PIPE, env=env) as child:
        os.close(write)
        with os.fdopen(read, "rb") as reader:
            first = reader.readline()
        err = child.communicate(timeout=300)[1].decode()
    assert first.decode() == table.splitlines(keepends=True)[0]
    assert child.returncode == 0, err
    assert "Broken" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert trace.read_bytes() == expected.read_bytes()
    assert _temps(tmp_path) == []
