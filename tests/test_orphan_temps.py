"""Killed writers' temp files: one cleaner (``output_temps.remove_orphans``) for every write and for a sweep's folder
and cache under its lock. The sweep had its own, which also deleted a temp file with no PID in its name (not one
this writer makes: another program's or the user's, whose writer cannot be known dead), in the folder and in its
cache, on every run and on ``--prune-cache``. Failed before: the no-PID files were gone after the sweep and after
the prune (the PID cases held in both cleaners already and must still hold).

The reference for dead and live: a PID taken from a child process that has exited (dead) and this test's own
(alive), whatever the code under test says of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.output_temps import remove_orphans

SPEC = ('[sweep]\nname = "o"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16"]\nbatches = [4]\n'
        'processors = [2]\nmethods = ["gpipe"]\nmode = "paper"\n')


def dead_pid() -> str:
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()


def temps(folder: Path) -> dict[str, Path]:
    """A killed writer's temp file, a live one's (this process) and two with no PID, made in ``folder``."""
    made = {"dead": folder / f".results.csv.{dead_pid()}.k2j4h1ab.tmp",
            "live": folder / f".summary.csv.{os.getpid()}.zz9x8y7w.tmp",
            "no_pid": folder / ".results.csv.k2j4h1ab.tmp",  # mkstemp's name without a PID
            "other": folder / ".notes.tmp"}
    for path in made.values():
        path.write_bytes(b"partial")
    return made


def assert_only_the_dead_went(made: dict[str, Path]) -> None:
    left = {kind for kind, path in made.items() if path.exists()}
    assert left == {"live", "no_pid", "other"}, left


def test_the_cleaner_removes_a_dead_writers_temp_file_alone(tmp_path):
    made = temps(tmp_path)
    assert remove_orphans(tmp_path) == 1
    assert_only_the_dead_went(made)
    assert remove_orphans(tmp_path / "missing") == 0  # a folder not made yet: nothing to clean


@pytest.fixture
def swept(tmp_path, capsys) -> tuple[Path, Path]:
    spec, out = tmp_path / "spec.toml", tmp_path / "out"
    spec.write_text(SPEC, encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    return spec, out


def test_a_sweep_removes_only_killed_writers_temp_files_in_its_folder_and_cache(swept, capsys):
    spec, out = swept
    made = [temps(out), temps(out / "cache")]
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    for one in made:
        assert_only_the_dead_went(one)


def test_prune_cache_removes_only_killed_writers_temp_files(swept, capsys):
    spec, out = swept
    made = [temps(out), temps(out / "cache")]
    assert main(["sweep", str(spec), "--out", str(out), "--prune-cache"]) == 0
    capsys.readouterr()
    for one in made:
        assert_only_the_dead_went(one)


def test_the_cleaner_matches_what_glob_matched(tmp_path):
    """The cleaner picks its candidates by string tests, no longer by ``Path.glob('.NAME.*.tmp')`` with NAME escaped;
    the reference is that glob pattern, written out by hand here: ``.r[1].csv.`` then anything then ``.tmp``
    (brackets literal, case kept). Only candidates with a dead writer's PID are removed (the PID rules are tested
    above), so each name below carries one: the first matches; the others miss by the bracket read as a class, by
    case, by a missing separator dot, by the suffix, or by the NAME's end."""
    pid = dead_pid()
    names = {f".r[1].csv.{pid}.k2j4h1ab.tmp": True, f".r1.csv.{pid}.k2j4h1ab.tmp": False,
             f".R[1].csv.{pid}.k2j4h1ab.tmp": False, f".r[1].csv{pid}.k2j4h1ab.tmp": False,
             f".r[1].csv.{pid}.k2j4h1ab.tmp.bak": False, f".r[1].csvx.{pid}.k2j4h1ab.tmp": False}
    for name in names:
        (tmp_path / name).write_bytes(b"partial")
    assert remove_orphans(tmp_path, "r[1].csv") == 1
    assert {name for name in names if not (tmp_path / name).exists()} == {n for n, match in names.items() if match}
    # any NAME ('*'): '.' NAME '.' anything '.tmp'; a file without the leading dot, or one dot short, is not one
    for name in (f".{pid}.x.tmp", f"r.{pid}.x.tmp", f".{pid}.tmp"):
        (tmp_path / name).write_bytes(b"partial")
    # removed: the three names above whose PID is their second-to-last dotted part (the bracket, case and
    # NAME's-end misses), and '.{pid}.x.tmp'; the one without a dot before its PID has none, '.bak' is not '.tmp'
    assert remove_orphans(tmp_path) == 4
