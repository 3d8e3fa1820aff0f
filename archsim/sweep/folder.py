"""A results folder belongs to one sweep spec at a time.

Two runs writing into one folder would lose results: a second spec's ``results.csv`` replaces the
first's, and a second run of the same spec races the first's files. So a run holds
``DIR/.archsim.lock`` (an advisory ``flock``, released by the OS even when the run is killed) for
its whole length, and a second run is refused with the holder's pid and spec. Only the sweep's own
process holds it: a forked worker closes its copy of the descriptor (a ``flock`` belongs to the open
file, which a fork shares), so a killed sweep's lock never outlives it, whatever its workers do; and a folder records
its spec in ``spec.json``, so a run of a *different* spec file is refused unless ``--force`` (which
hands the folder over; cached units stay valid, they are keyed by their settings).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from archsim.console import setting, switch_on
from archsim.errors import InputError
from archsim.json_text import dumps
from archsim.validate import parse_json, read_text

LOCK_NAME = ".archsim.lock"
_HELD: set[int] = set()  # this process's lock descriptors, which no forked child may keep


def _close_held() -> None:
    for fd in _HELD:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held)


def _spec_id(source: str) -> str:
    """What makes two specs the same: the spec file (resolved), so editing it keeps its folder."""
    try:
        return str(Path(source).resolve())
    except (OSError, RuntimeError):
        return source


@contextmanager
def holding(out: Path, source: str, name: str) -> Iterator[None]:
    """Hold ``out``'s lock for the block, or refuse naming the run that holds it."""
    import fcntl

    try:
        fd = _open_lock(out / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise InputError(f"cannot lock the results folder ({exc.strerror or exc.__class__.__name__})",
                         file=str(out), field="out") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise InputError(f"results folder is in use by another archsim sweep ({holder}); wait for it to finish "
                             "or give another --out", file=str(out), field="out") from None
        os.ftruncate(fd, 0)
        os.write(fd, dumps({"pid": os.getpid(), "spec": _spec_id(source), "name": name}).encode())
        _HELD.add(fd)
        yield
    finally:
        _HELD.discard(fd)
        os.close(fd)  # closing releases the flock


def in_use(out: Path) -> str | None:
    """The run holding ``out``'s lock now (its pid and spec), or None: a report asked for while its sweep runs
    says so. A shared, non-blocking probe, released at once; it creates no lock file."""
    import fcntl

    try:
        fd = _open_lock(out / LOCK_NAME, os.O_RDONLY)
    except OSError:  # none, or not a lock file (which no sweep can hold)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd)
    finally:
        os.close(fd)  # closing releases a probe that was granted
    return None


def _open_lock(path: Path, flags: int) -> int:
    """Open the lock file ``path`` (``flags``: ``O_RDWR | O_CREAT`` to hold it, ``O_RDONLY`` to probe it) only if
    it is a regular file or absent; else an :class:`OSError` (``EINVAL``, "not a regular file"). Why: a FIFO put
    there blocked a read-only open forever (``archsim report`` hung) and a device gave ``ftruncate`` a traceback;
    a device is not even opened (its open may act: a tape rewinds), and the open neither follows a symlink
    nor blocks nor takes a terminal, so what was opened is checked again."""
    import errno
    import stat

    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError(errno.EINVAL, f"its {path.name} is not a regular file: remove it")
    except FileNotFoundError:
        pass
    extra = getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags | extra, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the look and the open
        os.close(fd)
        raise OSError(errno.EINVAL, f"its {path.name} is not a regular file: remove it")
    return fd


def _holder(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {int(data['pid'])}, spec {data['spec']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "pid unknown"


def check_owner(out: Path, source: str, *, force: bool) -> None:
    """Refuse a folder whose ``spec.json`` names another spec file, or that holds a ``results.csv`` or
    ``summary.csv`` with no ``spec.json`` (a file no sweep wrote: a sweep writes ``spec.json`` first, so
    ``--out .`` in a working folder would replace the user's own file silently), unless ``force``."""
    record = out / "spec.json"
    if force:
        return
    if not record.exists():
        theirs = [name for name in ("results.csv", "summary.csv") if (out / name).exists()]
        if theirs:
            raise InputError(f"the folder holds a {theirs[0]} but no spec.json, so no sweep wrote it, and this one "
                             f"would replace it; give another {setting('out')}, or {switch_on('force')} to replace it",
                             file=str(out), field="out")
        return
    try:
        owner = parse_json(read_text(record, "the folder's spec.json"), str(record))
        previous = (owner.get("source_path") or owner.get("source")) if isinstance(owner, dict) else None
    except InputError:
        previous = None
    if not isinstance(previous, str) or _spec_id(previous) != _spec_id(source):
        shown = previous if isinstance(previous, str) else "an unreadable spec.json"
        raise InputError(f"results folder holds the results of another spec ({shown}); give another {setting('out')}, "
                         f"or {switch_on('force')} to replace them", file=str(out), field="out")
