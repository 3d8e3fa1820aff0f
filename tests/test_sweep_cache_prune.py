"""A sweep's cache kept every unit it ever computed: a spec edited over time left the entries of units it no
longer has, and the cache only grew. ``archsim sweep SPEC --cache-info`` says what SPEC uses of it and
``--prune-cache`` deletes the rest (how many and the bytes freed), under the folder's lock, never a file the cache
did not write. Failed before: neither flag existed (argparse refused them, exit 2).

The reference for what a spec uses is independent of the code that prunes: the entries a fresh run of the
edited spec writes into an empty folder, and the bytes are the file system's sizes of the others."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import USAGE

from archsim.cli import main
from archsim.sweep.folder import holding

SPEC = ('[sweep]\nname = "c"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16", "32x32"]\nbatches = [{batches}]\n'
        'processors = [2, 3]\nmethods = ["layerpipe", "gpipe"]\nmode = "paper"\n')


def spec(folder: Path, batches: str) -> Path:
    path = folder / "spec.toml"
    path.write_text(SPEC.format(batches=batches), encoding="utf-8")
    return path


def sweep(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(["sweep", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def edited(tmp_path, capsys):
    """A folder swept with batches 4 and 8, then the spec edited to batch 4 alone; the names and sizes of the
    entries the edited spec no longer uses (those a fresh run of it into another folder does not write)."""
    out = tmp_path / "out"
    assert sweep([str(spec(tmp_path, "4, 8")), "--out", str(out), "--quiet"], capsys)[0] == 0
    path = spec(tmp_path, "4")
    assert sweep([str(path), "--out", str(tmp_path / "fresh"), "--quiet"], capsys)[0] == 0
    fresh = {p.name for p in (tmp_path / "fresh" / "cache").iterdir()}
    before = {p.name: p.stat().st_size for p in (out / "cache").iterdir()}
    unused = {name: size for name, size in before.items() if name not in fresh}
    assert len(before) == 4 and len(fresh) == 2 and len(unused) == 2  # 2 arrays × 2 batches; 2 × 1
    return path, out, fresh, unused


def test_prune_deletes_the_entries_the_spec_no_longer_uses_and_says_how_many_and_the_bytes(edited, capsys):
    path, out, fresh, unused = edited
    (out / "cache" / "notes.txt").write_text("the user's own file")  # not an entry: never touched
    results = (out / "results.csv").read_bytes()
    code, stdout, err = sweep([str(path), "--out", str(out), "--prune-cache"], capsys)
    assert code == 0 and err == ""
    kept = sum(p.stat().st_size for p in (out / "cache").iterdir() if p.name in fresh)
    assert stdout == (f"pruned 2 cache entries ({sum(unused.values()):,} bytes freed) in {out / 'cache'}; "
                      f"kept 2 ({kept:,} bytes): {path}'s cached units\n")
    assert {p.name for p in (out / "cache").iterdir()} == fresh | {"notes.txt"}
    assert (out / "results.csv").read_bytes() == results  # nothing computed or rewritten
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "cache").iterdir()}
    assert sweep([str(path), "--out", str(out), "--quiet"], capsys)[0] == 0  # the rerun computes nothing
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (out / "cache").iterdir()}
    fresh_results = (out.parent / "fresh" / "results.csv").read_text().replace(str(out.parent / "fresh"), "")
    assert (out / "results.csv").read_text() == fresh_results


def test_cache_info_says_what_the_spec_uses_and_deletes_nothing(edited, capsys):
    path, out, fresh, unused = edited
    sizes = {p.name: p.stat().st_size for p in (out / "cache").iterdir()}
    code, stdout, _ = sweep([str(path), "--out", str(out), "--cache-info"], capsys)
    assert code == 0
    used = sum(size for name, size in sizes.items() if name in fresh)
    assert stdout.splitlines() == [
        f"cache: {out / 'cache'}: 4 entries, {sum(sizes.values()):,} bytes",
        f"{path}: 2 units, 2 cached ({used:,} bytes), 0 to compute",
        (f"unused by {path}: 2 entries, {sum(unused.values()):,} bytes (archsim sweep {path} --out {out} "
         "--prune-cache deletes them)")]
    assert {p.name: p.stat().st_size for p in (out / "cache").iterdir()} == sizes


def test_prune_is_refused_while_a_sweep_holds_the_folder(edited, capsys):
    """A running sweep holds the folder's lock: pruning then could delete nothing it is writing, but the flag
    refuses at once, in one line naming the holder, every entry left."""
    path, out, _, _ = edited
    names = sorted(p.name for p in (out / "cache").iterdir())
    with holding(out, str(path), "c"):
        code, stdout, err = sweep([str(path), "--out", str(out), "--prune-cache"], capsys)
    assert code == 2 and stdout == "" and USAGE.match(err) and len(err.splitlines()) == 1
    assert "in use by another archsim sweep" in err
    assert sorted(p.name for p in (out / "cache").iterdir()) == names


def test_prune_of_another_specs_folder_is_refused_unless_force(edited, tmp_path, capsys):
    """Another spec's folder: every entry would be unused by this one, so it is refused as a run is."""
    _, out, _, _ = edited
    other = tmp_path / "other"
    other.mkdir()
    other_spec = spec(other, "4")
    code, _, err = sweep([str(other_spec), "--out", str(out), "--prune-cache"], capsys)
    assert code == 2 and "another spec" in err and len(list((out / "cache").iterdir())) == 4
    code, stdout, _ = sweep([str(other_spec), "--out", str(out), "--prune-cache", "--force"], capsys)
    assert code == 0 and stdout.startswith("pruned 2 cache entries")  # the same units: the same entries kept


def test_an_empty_folder_has_nothing_to_prune_and_nothing_is_made(tmp_path, capsys):
    path = spec(tmp_path, "4")
    code, stdout, _ = sweep([str(path), "--out", str(tmp_path / "none"), "--prune-cache"], capsys)
    assert code == 0 and stdout == f"no cache in {tmp_path / 'none'}: nothing to prune\n"
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("extra", [["--report"], ["--workers", "2"], ["--dask", "local"]])
def test_a_cache_flag_beside_a_run_flag_is_refused(tmp_path, capsys, extra):
    path = spec(tmp_path, "4")
    code, _, err = sweep([str(path), "--out", str(tmp_path / "o"), "--cache-info", *extra], capsys)
    assert code == 2 and "runs no sweep" in err and not (tmp_path / "o").exists()
