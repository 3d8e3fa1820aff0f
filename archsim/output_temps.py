"""A killed writer's temp files, found by name and removed: the one cleaner of ``.NAME.PID.XXXXXXXX.tmp`` files.

Why its own module: the writer (:mod:`archsim.output_files`) makes these files and a sweep cleans its folder of them
(:mod:`archsim.sweep.cache`); telling whose file a temp is (its PID, alive or not) is a job apart from writing one.
The names come from :func:`archsim.output_targets.temp_prefix` and ``TEMP_SUFFIX``."""

from __future__ import annotations

import os
from pathlib import Path

from archsim.output_targets import TEMP_SUFFIX, temp_prefix


def remove_own_temps(target: Path) -> None:
    """Remove this process's temp files beside ``target`` (``.NAME.PID.XXXXXXXX.tmp`` with this PID): what an
    interrupt between making a temp file and recording it would leave (another process's are never touched)."""
    prefix = temp_prefix(target.name)
    try:
        with os.scandir(target.parent) as entries:
            own = [entry.path for entry in entries if entry.name.startswith(prefix) and entry.name.endswith(TEMP_SUFFIX)]
    except OSError:
        return
    for temp in own:
        Path(temp).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # someone else's live process, or not a pid at all
    return True


def _writer_pid(temp: Path) -> int | None:
    """The PID in a temp file's name (``.NAME.PID.XXXX.tmp``), else None."""
    parts = temp.name[:-len(".tmp")].rsplit(".", 2)  # ".NAME", PID, random part
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() and len(parts[1]) < 10 else None


def _is_temp_name(entry: str, name: str = "*") -> bool:
    """Whether a folder entry's name is glob's ``.NAME.*.tmp`` (``name`` ``*``: any NAME), by string tests: a
    glob pattern per target compiled a new regex at every write, a quarter of a sweep's cache-writing CPU time."""
    if name == "*":
        return entry.startswith(".") and entry.endswith(TEMP_SUFFIX) and "." in entry[1:-len(TEMP_SUFFIX)]
    prefix = f".{name}."
    return entry.startswith(prefix) and entry.endswith(TEMP_SUFFIX) and len(entry) >= len(prefix) + len(TEMP_SUFFIX)


def remove_orphans(folder: str | Path, name: str = "*") -> int:
    """Delete the temp files that killed writers left in ``folder`` (for target ``name``, or all) and return
    how many: the one cleaner, for every write (:func:`~archsim.output_files.write_output`, its target's own) and for a sweep's
    folder and cache under its lock (:mod:`archsim.sweep.cache`). :func:`~archsim.output_files.write_output` names its temp files
    ``.NAME.PID.XXXX.tmp``; one whose PID is gone is an orphan. Kept, since a live process may still be writing
    it: a live PID's (another run writing beside this one, or a run whose :func:`~archsim.output_files.output_set` has not renamed its
    files yet; a dead writer's PID reused by another process keeps it too), and one with no PID in its name
    (``.NAME.XXXX.tmp``), which this writer did not make (every temp file it makes carries its PID): another program's,
    whose writer cannot be known dead, or the user's own file; a folder's lock does not make it ours."""
    try:
        with os.scandir(folder) as entries:
            candidates = [Path(entry.path) for entry in entries if _is_temp_name(entry.name, name)]
    except OSError:
        return 0
    removed = 0
    for temp in candidates:
        pid = _writer_pid(temp)
        if pid is not None and not _alive(pid):
            try:
                temp.unlink()
                removed += 1
            except OSError:
                pass  # gone meanwhile, or not ours to delete
    return removed
