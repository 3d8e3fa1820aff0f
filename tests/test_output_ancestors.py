"""``check_target`` looks where a new name would go, not only at the name: the nearest existing folder
above it must be a folder this process can create files in, and each name must fit the file system.
Root passes permission bits, so the permission cases monkeypatch ``os.access``; the others (a file in
the way, a name too long, ``/proc``) fail for root too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.output_files import write_output
from archsim.output_targets import check_folder, check_target

NAME_MAX = 255  # Linux's for every local file system the tests run on


def _refuses(path: Path | str, *words: str) -> str:
    with pytest.raises(InputError) as caught:
        check_target(path)
    line = str(caught.value)
    assert "\n" not in line and str(path)[:40] in line and all(word in line for word in words), line
    return line


def test_a_new_name_under_a_new_folder_is_fine(tmp_path):
    """write_output makes the missing folders (mkdir parents): checking must not refuse them."""
    target = tmp_path / "a" / "b" / "run.json"
    assert check_target(target) == "replace" and not (tmp_path / "a").exists()
    write_output(target, "{}\n")
    assert target.read_text(encoding="utf-8") == "{}\n"


def test_the_check_leaves_nothing_behind(tmp_path):
    check_target(tmp_path / "new.json")
    (tmp_path / "old.json").write_text("old\n", encoding="utf-8")
    check_target(tmp_path / "old.json")
    assert sorted(os.listdir(tmp_path)) == ["old.json"]


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_file_in_the_way_is_named(tmp_path, depth):
    (tmp_path / "blocked").write_text("a file\n", encoding="utf-8")
    target = tmp_path.joinpath("blocked", *["sub"] * depth, "g.html")
    _refuses(target, f"{tmp_path / 'blocked'} is a file, not a folder")


def test_a_dangling_symlink_in_the_way(tmp_path):
    """``link/run.json`` with ``link`` leading nowhere: stat says "no such file", but no folder can be made there."""
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    _refuses(tmp_path / "link" / "sub" / "run.json", f"{tmp_path / 'link'} is a symlink to nothing")
    with pytest.raises(InputError, match="symlink to nothing"):  # write_output runs the same check
        write_output(tmp_path / "link" / "sub" / "run.json", "x\n")


def test_a_name_too_long_under_a_new_folder(tmp_path):
    """stat() of ``new/<300 bytes>`` says "no such file" (``new`` is missing), so it was taken as a new name."""
    _refuses(tmp_path / "new" / ("x" * 300), "a name too long", "300 bytes")
    _refuses(tmp_path / "new" / ("d" * 300) / "x.csv", "a name too long", "300 bytes")
    _refuses(tmp_path / ("d" * 300) / "x.csv", "too long")  # the OS's own words: it checks the name first


def test_a_name_that_fits_but_not_with_its_temp_files_affixes(tmp_path):
    """write_output writes ``.NAME.PID.XXXXXXXX.tmp`` first: a 250-byte name fits NAME_MAX, its temp file does not."""
    name = "y" * 250
    affixed = len(f".{name}.{os.getpid()}.") + 8 + len(".tmp")
    assert affixed > NAME_MAX >= len(name)
    _refuses(tmp_path / name, "a name too long", f"250 bytes ({affixed} as its temp file)")
    with pytest.raises(InputError, match="too long"):  # what the write itself would have said, after the work
        write_output(tmp_path / name, "x\n")


@pytest.mark.parametrize("target", ["/proc/archsim-test.out", "/proc/archsim-new/x.out", "/proc/self/archsim.out"])
def test_proc_takes_no_new_files(target):
    _refuses(target, "cannot")
    assert not os.path.exists(target)


def test_a_folder_without_permission_is_refused(tmp_path, monkeypatch):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    _refuses(tmp_path / "new" / "run.json", f"no permission to create files in {tmp_path}")


def test_an_existing_file_whose_folder_refuses_the_rename(tmp_path, monkeypatch):
    """The file itself is writable, but replacing it makes a temp file beside it and renames it."""
    target = tmp_path / "run.json"
    target.write_text("old\n", encoding="utf-8")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    _refuses(target, f"no permission to create files in {tmp_path}")
    assert target.read_text(encoding="utf-8") == "old\n"


def test_a_relative_name_names_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == "." else real(p, mode))
    _refuses("run.json", "no permission to create files in the current folder")


def test_a_results_folder_is_checked_the_same_way(tmp_path, monkeypatch):
    (tmp_path / "blocked").write_text("a file\n", encoding="utf-8")
    assert check_folder(tmp_path / "new" / "results") == tmp_path / "new" / "results"
    assert check_folder(tmp_path) == tmp_path
    for folder, words in ((tmp_path / "blocked", "not a folder"), (tmp_path / "blocked" / "r", "is a file"),
                          (Path("/proc/archsim-results"), "cannot create files in /proc"),
                          (tmp_path / ("r" * 300), "too long")):
        with pytest.raises(InputError, match=words):
            check_folder(folder)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    with pytest.raises(InputError, match="no permission"):
        check_folder(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["blocked"]
