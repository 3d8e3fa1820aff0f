"""Caches that must follow content and live where the user expects: the sweep cache keyed by what a
network file holds, not its name; numba's compiled kernels in the user's cache folder, never beside
the installed source. (Split from test_robustness.py by job; the hostile-input reproducers stay there.)"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_robustness import ROOT, TOPOLOGY_HEADER, clean_error, json_rows, write

from archsim.cli import main

# 13. The sweep cache follows content, not file names.

SWEEP_TEMPLATE = """[sweep]
name = "edit"
networks = [{networks}]
arrays = ["8x8"]
batches = [4]
processors = [2]
methods = ["gpipe"]
"""


def _results(folder: Path):
    import pandas as pd

    return pd.read_csv(folder / "results.csv")


def test_editing_a_network_between_runs_changes_the_results(capsys, tmp_path):
    net = write(tmp_path / "net.csv", f"{TOPOLOGY_HEADER}\nc1, 8, 8, 3, 3, 3, 4, 1,\n")
    spec = write(tmp_path / "s.toml", SWEEP_TEMPLATE.format(networks='"net.csv"'))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    first = _results(out).single_processor_cycles.tolist()
    write(net, f"{TOPOLOGY_HEADER}\nc1, 8, 8, 3, 3, 3, 16, 1,\n")  # 4 → 16 filters
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    second = _results(out).single_processor_cycles.tolist()
    _, fresh = json_rows(capsys, "cost", net, "--array", "8x8", "--batch", 4)
    assert second == [fresh[-1]["total_cycles"]] != first


def test_two_networks_with_the_same_stem_both_appear(capsys, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write(tmp_path / "a" / "net.csv", f"{TOPOLOGY_HEADER}\nc1, 8, 8, 3, 3, 3, 4, 1,\n")
    write(tmp_path / "b" / "net.csv", f"{TOPOLOGY_HEADER}\nc1, 8, 8, 3, 3, 3, 16, 1,\n")
    spec = write(tmp_path / "s.toml", SWEEP_TEMPLATE.format(networks='"a/net.csv", "b/net.csv"'))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    frame = _results(out)
    assert len(frame) == 2 and set(frame.network) == {"net"}  # the stem, told apart by network_path
    by_path = frame.set_index("network_path")
    for name in ("a", "b"):
        path = (tmp_path / name / "net.csv").resolve()
        _, fresh = json_rows(capsys, "cost", path, "--array", "8x8", "--batch", 4)
        assert by_path.loc[str(path), "single_processor_cycles"] == fresh[-1]["total_cycles"]
    assert len(set(frame.single_processor_cycles)) == 2


def test_orphaned_temp_files_are_removed(tmp_path):
    """Temp files of a killed writer (its PID in the name, as archsim names them, and gone) are removed; a temp
    file with no PID is not archsim's and stays (tests/test_orphan_temps.py)."""
    spec = write(tmp_path / "s.toml", SWEEP_TEMPLATE.format(networks='"layerpipe_sample"'))
    out = tmp_path / "out"
    (out / "cache").mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()  # a PID whose process has exited
    orphans = [write(out / "cache" / f".abc.json.{dead}.x1y2.tmp", "{"),
               write(out / f".results.csv.{dead}.k3.tmp", "half")]
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert not any(path.exists() for path in orphans)
    assert not list(out.rglob("*.tmp"))


def test_an_unknown_sweep_network_names_the_spec(capsys, tmp_path):
    spec = write(tmp_path / "s.toml", SWEEP_TEMPLATE.format(networks='"no_such_network"'))
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert "s.toml" in line and "field 'networks'" in line


# 14. numba's cache lives in a user folder.

def test_numba_cache_dir_prefers_the_users_setting_then_xdg(monkeypatch, tmp_path):
    from archsim import numba_cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert numba_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert numba_cache.cache_dir() == tmp_path / "xdg" / "archsim" / "numba"


def test_numba_cache_dir_none_when_nothing_is_writable(monkeypatch, tmp_path):
    from archsim import numba_cache

    blocker = write(tmp_path / "a_file", "")  # a regular file: no folder can be made below it, even by root
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "x"))
    import tempfile  # numba_cache imports it when it picks the folder

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(blocker / "tmp"))
    assert numba_cache.cache_dir() is None


def test_no_writable_cache_folder_is_said_once(monkeypatch, tmp_path, capsys):
    """With no folder writable (as above), the first kernel's setup says so once on stderr, as the command's note:
    otherwise every run recompiles its kernels with no word why."""
    from archsim import console, numba_cache

    blocker = write(tmp_path / "a_file", "")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "x"))
    import tempfile

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(blocker / "tmp"))
    monkeypatch.setattr(numba_cache, "CACHING", None)  # this process's choice, made again here
    monkeypatch.setattr(numba_cache, "CACHE_NOTE", "")
    with console.speaking_as("archsim plan"):
        assert numba_cache.caching() is False
        assert numba_cache.caching() is False  # decided once: said once
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim plan: note: no writable folder for numba's cache")
    assert "NUMBA_CACHE_DIR" in lines[0] and "compile on each run" in lines[0]
    monkeypatch.setattr(numba_cache, "CACHING", None)
    with pytest.warns(UserWarning, match="no writable folder for numba's cache"):  # a library call: a warning
        numba_cache.caching()


@pytest.mark.long
def test_a_cached_kernel_lands_in_the_user_folder_not_beside_its_source(tmp_path):
    """A fresh interpreter compiles a kernel declared with archsim's njit(cache=True): the cache files
    go to XDG_CACHE_HOME/archsim/numba, none beside the module (numba's default)."""
    import subprocess
    import sys

    source = tmp_path / "src"
    source.mkdir()
    write(source / "kernel_mod.py", "from archsim.numba_cache import njit\n\n@njit(cache=True)\n"
                                    "def twice(x):\n    return 2 * x\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"} | {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, "-c", "import kernel_mod; print(kernel_mod.twice(21))"], cwd=source,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr[-500:]
    assert list((tmp_path / "xdg" / "archsim" / "numba").rglob("*.nbi"))
    assert not [p for p in source.rglob("*") if p.suffix in (".nbi", ".nbc")]


def test_archsim_kernels_use_the_cache_aware_njit():
    """Every numba kernel goes through archsim.numba_cache (whose folder the tests above check)."""
    for path in (ROOT / "archsim").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "numba_cache.py":
            assert "from numba import" not in text and "numba.njit" not in text and "numba.jit" not in text, path


@pytest.mark.slow
def test_the_kernels_cache_outside_the_package(tmp_path):
    """A fresh interpreter compiles the cycle engine's kernels into XDG_CACHE_HOME, not archsim/."""
    import subprocess
    import sys

    package = ROOT / "archsim"
    before = set(package.rglob("*.nbi"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"} | {"XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "archsim", "gemm", "--m", "8", "--k", "8", "--n", "8", "--array",
                           "4x4", "--engine", "cycle"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert list((tmp_path / "archsim" / "numba").rglob("*.nbi"))
    assert set(package.rglob("*.nbi")) == before
