"""A results folder's own entries are never followed out of it (issue 49's audit, its one hole).

What failed before: a sweep's ``results.csv``, ``summary.csv``, ``spec.json``, a ``cache/<digest>.json`` or the
``cache/`` folder itself that was a symlink to something outside the folder was written (or read back) through the
link: ``archsim sweep`` replaced the outside file with its results, wrote its cache into the outside folder, and
took a linked cache entry's rows as its own. Now each is refused in one line naming the link, before anything is
written, and the outside file keeps its bytes. A symlink the user names as an output (``--out link.csv``), and a
results folder that is itself a link (``--out linked_dir``), are the user's own and still written through
(docs/security.md, "What archsim writes").
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from output_commands import SWEEP_SPEC
from test_robustness import clean_error

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.output_files import write_output
from archsim.output_targets import check_target

LINK_WORDS = "a symlink inside the results folder"
SECRET = b"the user's own file, outside the results folder\n"


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A results folder one sweep of SWEEP_SPEC filled (copied per test, so each test changes its own copy)."""
    root = tmp_path_factory.mktemp("swept")
    (root / "s.toml").write_text(SWEEP_SPEC, encoding="utf-8")
    assert main(["sweep", str(root / "s.toml"), "--out", str(root / "res"), "--quiet"]) == 0
    return root


@pytest.fixture
def folder(swept, tmp_path) -> Path:
    """This test's copy of the results, ``tmp_path/res``, beside ``tmp_path/outside``; ``tmp_path/s.toml`` links to
    the spec that wrote them (its ``spec.json`` names that file, resolved: the folder stays this spec's)."""
    (tmp_path / "s.toml").symlink_to(swept / "s.toml")
    shutil.copytree(swept / "res", tmp_path / "res", symlinks=True)
    (tmp_path / "res" / ".archsim.lock").unlink()
    (tmp_path / "outside").write_bytes(SECRET)
    return tmp_path


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (not following links) and its bytes: what a refused run must leave alone."""
    return {str(path.relative_to(folder)): (os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
            for path in sorted(folder.rglob("*")) if path.is_symlink() or path.is_file()}


def _only_entry(res: Path) -> Path:
    (entry,) = (res / "cache").glob("*.json")
    return entry


@pytest.mark.parametrize("name", ["results.csv", "summary.csv", "spec.json"])
def test_a_linked_results_file_is_refused_and_the_outside_file_kept(folder, capsys, name):
    """Failed before: exit 0, the outside file replaced by the sweep's CSV or, for spec.json (an outside record
    naming this spec, so the folder passed as this spec's), by the spec's record; the link kept."""
    res = folder / "res"
    if name == "spec.json":
        record = {"source_path": str((folder / "s.toml").resolve()), "note": "the user's own"}
        (folder / "outside").write_bytes(json.dumps(record).encode())
    outside = (folder / "outside").read_bytes()
    (res / name).unlink()
    (res / name).symlink_to(folder / "outside")
    before = _files(res)
    line = clean_error(capsys, "sweep", folder / "s.toml", "--out", res, "--quiet")
    assert line == (f"archsim sweep: error: {res / name}: {LINK_WORDS} {res}, which archsim fills itself and never "
                    "follows a link out of: remove the link, or give another folder")
    assert (folder / "outside").read_bytes() == outside
    assert _files(res) == before  # nothing written, not even the lock


def test_a_linked_cache_entry_is_not_read_through(folder, capsys):
    """Failed before: a cache entry linked to a file outside holding forged rows (iteration_cycles 1) was read as
    the unit's rows, exit 0, and results.csv carried the forged figure."""
    res = folder / "res"
    entry = _only_entry(res)
    forged = json.loads(entry.read_text(encoding="utf-8"))
    forged["rows"][0]["iteration_cycles"] = 1.0
    outside = json.dumps(forged).encode()
    (folder / "outside").write_bytes(outside)
    entry.unlink()
    entry.symlink_to(folder / "outside")
    before = _files(res)
    line = clean_error(capsys, "sweep", folder / "s.toml", "--out", res, "--quiet")
    assert f"{entry}: {LINK_WORDS} {res}" in line
    assert (folder / "outside").read_bytes() == outside and _files(res) == before


def test_a_dangling_cache_entry_link_is_refused_as_a_link(folder, capsys):
    """A link to a file not yet there: before, the unit was computed and refused only when written ("a symlink to
    nothing"), after the work; now it is named as a link of the folder, before any work."""
    res = folder / "res"
    entry = _only_entry(res)
    entry.unlink()
    entry.symlink_to(folder / "not_yet")
    line = clean_error(capsys, "sweep", folder / "s.toml", "--out", res, "--quiet")
    assert f"{entry}: {LINK_WORDS}" in line and not (folder / "not_yet").exists()


def test_a_linked_cache_folder_gets_nothing(folder, capsys):
    """Failed before: ``cache`` linked to a folder outside; the sweep wrote its unit's entry there, exit 0."""
    res = folder / "res"
    shutil.rmtree(res / "cache")
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    (res / "cache").symlink_to(elsewhere)
    line = clean_error(capsys, "sweep", folder / "s.toml", "--out", res, "--quiet")
    assert f"{res / 'cache'}: {LINK_WORDS} {res}" in line
    assert list(elsewhere.iterdir()) == []


def test_a_linked_lock_is_refused_and_the_outside_file_kept(folder, capsys):
    """The lock refused a link before this audit (it is opened with O_NOFOLLOW): held here with the others."""
    res = folder / "res"
    (res / ".archsim.lock").symlink_to(folder / "outside")
    line = clean_error(capsys, "sweep", folder / "s.toml", "--out", res, "--quiet")
    assert "its .archsim.lock is not a regular file" in line
    assert (folder / "outside").read_bytes() == SECRET and (res / ".archsim.lock").is_symlink()


def test_the_api_refuses_alike(folder):
    res = folder / "res"
    (res / "summary.csv").unlink()
    (res / "summary.csv").symlink_to(folder / "outside")
    with pytest.raises(InputError, match=LINK_WORDS):
        archsim.run_sweep(folder / "s.toml", out=res, progress=False)
    assert (folder / "outside").read_bytes() == SECRET


@pytest.mark.parametrize("inner", ["results.csv", "cache/0123.json"])
def test_the_writer_refuses_a_link_made_after_the_check(tmp_path, inner):
    """The one writer checks every file it writes into a results folder (``within``), so a link put there after the
    run's first check (a race) is refused too; the link is named, the outside file kept."""
    res = tmp_path / "res"
    (res / "cache").mkdir(parents=True)
    (tmp_path / "outside").write_bytes(SECRET)
    (res / inner).symlink_to(tmp_path / "outside")
    with pytest.raises(InputError, match=f"{res / inner}: {LINK_WORDS}"):
        write_output(res / inner, "rows\n", within=res)
    assert (tmp_path / "outside").read_bytes() == SECRET and (res / inner).is_symlink()
    assert sorted(p.name for p in res.rglob("*")) == sorted(["cache", Path(inner).name])  # no temp file left


def test_the_users_own_linked_out_file_is_still_written_through(tmp_path, capsys):
    """docs/security.md: a symlink the user names as an output leads to the file that is replaced; the link stays."""
    real = tmp_path / "real.csv"
    real.write_bytes(SECRET)
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert main(["cost", "layerpipe_sample", "--array", "16x16", "--format", "csv", "--out", str(link)]) == 0
    assert link.is_symlink() and real.read_text(encoding="utf-8").startswith("layer,")


def test_a_results_folder_that_is_itself_a_link_is_the_users_and_filled(tmp_path):
    """``--out linked`` names the folder: the user's own path, followed as any path they give; only what is inside
    it is archsim's."""
    (tmp_path / "s.toml").write_text(SWEEP_SPEC, encoding="utf-8")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real)
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "linked"), "--quiet"]) == 0
    assert {"results.csv", "summary.csv", "spec.json", "cache"} <= {p.name for p in real.iterdir()}


def test_a_folder_without_permission_is_named_as_given_for_a_new_and_an_existing_file(tmp_path, monkeypatch):
    """Failed before: ``ro/new.txt`` said ``no permission to create files in ro``, ``ro/old.txt`` (an existing file,
    whose folder must take the rename) ``… in /abs/path/ro``: the folder named two ways."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "old.txt").write_text("old\n", encoding="utf-8")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if os.path.abspath(p) == str(tmp_path / "ro")
                        else real(p, mode))
    said = []
    for name in ("ro/new.txt", "ro/old.txt"):
        with pytest.raises(InputError) as caught:
            check_target(name)
        said.append(str(caught.value))
    assert said == [f"{name}: cannot write here (no permission to create files in ro)"
                    for name in ("ro/new.txt", "ro/old.txt")]


def test_the_layer_builder_refuses_a_linked_network_file(tmp_path):
    """The other folder archsim fills with names of its own (``python -m archsim.workload.builders FOLDER``, the
    shipped networks regenerated): failed before, the outside file replaced by VGG-16's CSV, exit 0."""
    from archsim.workload import builders

    (tmp_path / "outside").write_bytes(SECRET)
    layers = tmp_path / "layers"
    layers.mkdir()
    (layers / "vgg16.csv").symlink_to(tmp_path / "outside")
    with pytest.raises(InputError, match=f"{layers / 'vgg16.csv'}: {LINK_WORDS}"):
        builders.main([str(layers)])
    assert (tmp_path / "outside").read_bytes() == SECRET


@pytest.mark.parametrize("name", ["results.csv", "spec.json", "summary.csv", "cache entry"])
@pytest.mark.parametrize("given", ["folder", "its results.csv"])
def test_the_report_refuses_a_linked_entry_and_writes_nothing(folder, capsys, name, given):
    """Failed before: ``archsim report`` read the folder's results.csv and spec.json through a link (an outside
    file's rows drawn as the folder's, exit 0), where the sweep refuses one. Now the sweep's own check runs before
    anything is read: its line, exit 2, no report written, the outside file kept."""
    res = folder / "res"
    if name == "cache entry":
        link = _only_entry(res)
        (folder / "outside").write_bytes(link.read_bytes())
    else:
        link = res / name
        (folder / "outside").write_bytes((res / name).read_bytes())  # the folder's own bytes: only the link is wrong
    outside = (folder / "outside").read_bytes()
    link.unlink()
    link.symlink_to(folder / "outside")
    before = _files(res)
    target = folder / "report.html"
    results = res if given == "folder" else res / "results.csv"
    line = clean_error(capsys, "report", results, "--out", target)
    assert line == (f"archsim report: error: {link}: {LINK_WORDS} {res}, which archsim fills itself and never follows "
                    "a link out of: remove the link, or give another folder")
    with pytest.raises(InputError, match=f"{link}: {LINK_WORDS}"):
        archsim.write_report(results, out=target)
    assert not target.exists() and _files(res) == before and (folder / "outside").read_bytes() == outside


def test_the_report_draws_the_same_folder_unlinked(folder, capsys):
    """The control: the copied folder without a link is drawn (exit 0), so the refusals above are the link's."""
    assert main(["report", str(folder / "res"), "--out", str(folder / "report.html")]) == 0
    assert (folder / "report.html").is_file()


def test_each_report_checks_the_folders_links_once(folder, capsys, monkeypatch):
    """One check, in one place: ``archsim report`` and ``archsim.write_report`` checked the folder's entries in
    ``results_folder`` and again in the report's writer before (two calls); ``sweep --report`` in the run and again
    in the writer. Now once each, before any file is read (the lines above: the same refusals)."""
    from archsim.sweep import cache, runner

    res, calls = folder / "res", []
    real = cache.check_entries

    def counted(out):
        calls.append(Path(out))
        real(out)

    monkeypatch.setattr(cache, "check_entries", counted)  # report.py imports it where it calls it
    monkeypatch.setattr(runner, "check_entries", counted)  # the sweep imports it once
    assert main(["report", str(res), "--out", str(folder / "a.html")]) == 0
    assert calls == [res]
    calls.clear()
    archsim.write_report(res, out=folder / "b.html")
    assert calls == [res]
    calls.clear()
    assert main(["sweep", str(folder / "s.toml"), "--out", str(res), "--quiet", "--report",
                 str(folder / "c.html")]) == 0
    assert calls == [res]
