"""A killed sweep leaves nothing running and nothing locked (issue 39, K1): `kill -9` of
`archsim sweep --workers N` (or `--dask local`) leaves no worker alive a few seconds later, and a
re-run into the same folder goes ahead. Before the fix the pool's workers lived on as orphans
holding the folder's lock, and the re-run was refused "in use by another archsim sweep"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archsim.sweep.folder import LOCK_NAME, holding

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs" / "sweeps" / "sample_quick.toml"
# ~1000 units: minutes of work, so the sweep is still under way when it is killed
LONG = """[sweep]
name = "long"
networks = ["resnet50", "vgg16"]
arrays = ["8x8", "12x12", "16x16", "20x20", "24x24", "32x32", "48x48", "64x64", "96x96", "128x128"]
dataflows = ["ws", "os", "is"]
batches = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
processors = [2, 3, 4]
methods = ["layerpipe", "gpipe"]
"""

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def _parents() -> dict[int, int]:
    """pid → parent pid of every process now, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            table[int(entry)] = int(text[text.rindex(")") + 2:].split()[1])
    return table


def descendants(pid: int) -> set[int]:
    table, found, frontier = _parents(), set(), {pid}
    while frontier:
        frontier = {child for child, parent in table.items() if parent in frontier} - found
        found |= frontier
    return found


def workers_of(pid: int) -> set[int]:
    """The descendants that compute (multiprocessing's resource tracker, also a child, does not)."""
    def tracker(child: int) -> bool:
        try:
            return b"resource_tracker" in Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            return False
    return {child for child in descendants(pid) if not tracker(child)}


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped (a zombie holds no lock and runs nothing)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def holder(out: Path) -> int | None:
    try:
        return int(json.loads((out / LOCK_NAME).read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.long
@pytest.mark.parametrize("options", [["--workers", "1"], ["--workers", "2"], ["--workers", "4"],
                                     ["--dask", "local", "--workers", "2"]], ids=["1", "2", "4", "dask"])
def test_a_killed_sweep_leaves_no_worker_and_no_lock(tmp_path, options):
    spec, out = tmp_path / "long.toml", tmp_path / "out"
    spec.write_text(LONG, encoding="utf-8")
    workers = int(options[-1]) if "--dask" not in options else 2
    sweep = subprocess.Popen([sys.executable, "-m", "archsim", "sweep", str(spec), "--out", str(out), "--quiet",
                              *options], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wanted = 0 if workers == 1 else workers
        started = wait_for(lambda: holder(out) == sweep.pid and len(workers_of(sweep.pid)) >= wanted, 120)
        time.sleep(1.0)  # the workers take their first tasks
        assert started and sweep.poll() is None, sweep.stderr.read() if sweep.poll() is not None else "no workers"
        children = descendants(sweep.pid)
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait()
        assert wait_for(lambda: not any(map(alive, children)), 10), [c for c in children if alive(c)]
    finally:
        for child in descendants(sweep.pid) if sweep.poll() is None else ():
            os.kill(child, signal.SIGKILL)
        sweep.kill()
        sweep.wait()
        sweep.stderr.close()
    for unit in (out / "cache").glob("*.json"):  # what the killed run finished is whole
        assert json.loads(unit.read_text())["rows"]
    rerun = subprocess.run([sys.executable, "-m", "archsim", "sweep", str(QUICK), "--out", str(out), "--quiet",
                            "--force"], check=False, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert not list(out.glob(".*.tmp")) and not list((out / "cache").glob(".*.tmp"))  # a killed writer's: gone


def test_a_forked_child_does_not_keep_the_lock(tmp_path):
    """The lock is the sweep's alone: a child forked while it is held (a pool worker) closes its copy,
    so once the sweep lets go (or dies) the folder is free even while the child lives on."""
    out = tmp_path / "out"
    out.mkdir()
    ready, started = os.pipe()
    with holding(out, "a.toml", "a"):
        child = os.fork()
        if child == 0:  # pragma: no cover - the child says it runs (its fork hooks have), then sleeps
            os.write(started, b"x")
            time.sleep(30)
            os._exit(0)
        assert os.read(ready, 1) == b"x"
    os.close(ready)
    os.close(started)
    try:
        with holding(out, "b.toml", "b"):  # refused ("in use") if the child still held the lock
            assert holder(out) == os.getpid()
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
