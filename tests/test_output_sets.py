"""A command that writes several files writes all of them or none: every target (each output flag, a
sweep's results folder, a default report path) is checked before the first is written, so one target
that cannot be written leaves no partial set behind (docs/security.md, "What archsim writes").

The refused targets are ones root cannot write either (the tests run as root): a name longer than the
file system allows under a folder still to be made, a regular file where a folder should be, ``/proc``."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest
from output_commands import SWEEP_SPEC
from test_output_targets import _argv, output_flags
from test_robustness import clean_error

LONG = "a" * 300  # over NAME_MAX (255 bytes) of every Linux file system


def _multi_output_flags() -> list[tuple[str, str, tuple[str, ...]]]:
    """(command, the flag refused, every output flag of the command) for each command with two or more."""
    by_command: dict[str, list[str]] = defaultdict(list)
    for command, flag in output_flags():
        by_command[command].append(flag)
    return sorted((command, refused, tuple(sorted(flags)))
                  for command, flags in by_command.items() if len(flags) > 1 for refused in flags)


MULTI = _multi_output_flags()


def _refused(tmp_path: Path, how: str) -> Path:
    if how == "name too long":
        return tmp_path / "new" / f"{LONG}.out"
    if how == "file in the way":
        (tmp_path / "blocked").write_text("a file\n", encoding="utf-8")
        return tmp_path / "blocked" / "sub" / "x.out"
    return Path("/proc") / f"archsim-test-{os.getpid()}.out"  # /proc takes no new files, not even root's


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_the_multi_output_commands_are_found():
    """The grouping sees what the brief names: train, schedule, search and the reports."""
    commands = {command for command, _, _ in MULTI}
    assert {"train", "schedule", "search", "pipeline", "plan", "cluster", "validate-gpu"} <= commands
    assert ("train", "--out", ("--chrome-trace", "--gantt", "--out", "--schedule-csv")) in MULTI


@pytest.mark.parametrize(("command", "refused", "flags"), MULTI)
def test_one_refused_target_writes_nothing(tmp_path, capsys, command, refused, flags):
    outs = tmp_path / "outs"
    outs.mkdir()
    argv = _argv(command, tmp_path)
    before = _files(tmp_path)
    for flag in flags:
        target = _refused(tmp_path, "name too long") if flag == refused else outs / f"file{flag}"
        argv += [flag, str(target)]
    capsys.readouterr()
    line = clean_error(capsys, *argv)
    assert "too long" in line
    assert _files(tmp_path) == before  # nothing in outs/, no folder made for the refused name


@pytest.mark.parametrize("how", ["name too long", "file in the way", "/proc"])
def test_train_writes_no_json_when_its_gantt_cannot_be_written(tmp_path, capsys, how):
    """The reported run: ``--out run.json --gantt blocked/g.html`` wrote run.json, then failed."""
    gantt = _refused(tmp_path, how)
    out = tmp_path / "run.json"
    line = clean_error(capsys, *_argv("train", tmp_path), "--out", out, "--gantt", gantt,
                       "--chrome-trace", tmp_path / "t.json")
    assert str(gantt.name)[:20] in line or "blocked" in line
    assert not out.exists() and not (tmp_path / "t.json").exists() and not (tmp_path / "new").exists()


def _sweep(tmp_path: Path) -> Path:
    spec = tmp_path / "columns.toml"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    return spec


@pytest.mark.parametrize("how", ["name too long", "file in the way", "/proc"])
def test_sweep_writes_no_results_when_its_report_cannot_be_written(tmp_path, capsys, how):
    spec, results = _sweep(tmp_path), tmp_path / "results"
    clean_error(capsys, "sweep", spec, "--out", results, "--quiet", "--report", _refused(tmp_path, how))
    assert not results.exists()


@pytest.mark.parametrize("how", ["name too long", "file in the way", "/proc"])
def test_sweep_writes_no_report_when_its_folder_cannot_be_written(tmp_path, capsys, how):
    spec, report = _sweep(tmp_path), tmp_path / "report.html"
    folder = _refused(tmp_path, how)
    line = clean_error(capsys, "sweep", spec, "--out", folder, "--quiet", "--report", report)
    assert "--out" in line
    assert not report.exists() and not (tmp_path / "new").exists()


def test_sweep_checks_its_default_report_before_running(tmp_path, capsys, monkeypatch):
    """``--report`` alone writes ``reports/<spec name>.html``: a file named ``reports`` is in its way."""
    spec = _sweep(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("a file\n", encoding="utf-8")
    line = clean_error(capsys, "sweep", spec, "--quiet", "--report")
    assert "reports" in line
    assert not (tmp_path / "results").exists()


def test_sweep_checks_its_default_folder_before_running(tmp_path, capsys, monkeypatch):
    """No ``--out``: ``results/<spec name>``; a file named ``results`` is in its way."""
    spec = _sweep(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("a file\n", encoding="utf-8")
    line = clean_error(capsys, "sweep", spec, "--quiet", "--report", tmp_path / "r.html")
    assert "results" in line
    assert not (tmp_path / "r.html").exists()


def _pairs() -> list[tuple[str, str, str]]:
    """(command, first flag, second flag): each command's first two output flags, named at one file."""
    firsts = {command: flags for command, _, flags in MULTI}
    return sorted((command, flags[0], flags[1]) for command, flags in firsts.items())


@pytest.mark.parametrize(("command", "first", "second"), _pairs())
def test_one_file_named_by_two_flags_is_refused_and_kept(tmp_path, capsys, command, first, second):
    """``--out x --gantt x``: the second write would replace the first without a word. The file there
    before the run keeps its bytes."""
    target = tmp_path / "same.out"
    target.write_text("the user's file\n", encoding="utf-8")
    argv = _argv(command, tmp_path)
    capsys.readouterr()
    line = clean_error(capsys, *argv, first, target, second, target)
    assert "two output flags" in line and first in line and second in line
    assert target.read_text(encoding="utf-8") == "the user's file\n"


def test_a_symlink_to_another_flags_file_is_the_same_file(tmp_path, capsys):
    out, link = tmp_path / "run.json", tmp_path / "alias.html"
    out.write_text("kept\n", encoding="utf-8")
    link.symlink_to(out)
    line = clean_error(capsys, *_argv("train", tmp_path), "--out", out, "--gantt", link)
    assert "two output flags" in line
    assert out.read_text(encoding="utf-8") == "kept\n" and link.is_symlink()


def test_a_device_may_take_two_outputs(tmp_path, capsys):
    """/dev/null is written through, never replaced: two flags may name it."""
    from archsim.cli import main

    assert main([*_argv("train", tmp_path), "--out", "/dev/null", "--gantt", "/dev/null"]) == 0
