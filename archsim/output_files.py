"""The one writer of every output file a flag names: what it does depends on what the name is.

A regular file (or a new name) is replaced atomically, keeping the old file's permissions (a
read-only one is refused); this process's own descriptor
(``/dev/stdout``, ``/dev/fd/N``) is written into; a character device or FIFO is written
through in place, never replaced; anything else is refused in one line (docs/security.md).
Every target is checked when the command line is read (:func:`output_flag`, :func:`folder_flag`),
where it would go as well as what it is, and a run's files are one :func:`output_set`: each is
written to its temp file first and renamed into place only when all of them are written, so a run
that fails while writing (a full disk, Ctrl-C) replaces none of them.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from archsim.errors import InputError

T = TypeVar("T")


def check_target(path: str | Path) -> str:
    """What writing to ``path`` will do: ``"replace"`` (a regular file, through a symlink too, or a
    new name) or ``"through"`` (a character device or FIFO); anything else is an
    :class:`InputError`. A new name is checked where it would go and an existing file's folder must
    take the rename (:func:`_check_creatable`); a FIFO's reader is checked when it is opened."""
    path = Path(path)
    if own_descriptor(path) is not None:
        return "through"
    try:
        mode = os.stat(path).st_mode  # follows symlinks: what the name leads to
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError("a symlink to nothing: give a file name, or fix the link", file=str(path)) from None
        _check_creatable(path, path.parent, [path.name])
        return "replace"
    except OSError as exc:  # a file in the way (named by the walk), a loop, a name too long, no permission
        if isinstance(exc, NotADirectoryError):
            _check_creatable(path, path.parent, [path.name])
        raise _unwritable(exc, path) from None
    if stat.S_ISREG(mode):
        if not mode & 0o222 or not os.access(path, os.W_OK):  # the rename needs only the folder's permission
            raise InputError(f"a read-only file (mode {stat.S_IMODE(mode):o}): give another name, or make it "
                             "writable", file=str(path))
        real = Path(os.path.realpath(path))  # through a symlink the file it leads to is replaced
        _check_creatable(path, real.parent, [real.name])
        return "replace"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "through"
    what = ("a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a block device (a disk)" if stat.S_ISBLK(mode) else "not a file")
    raise InputError(f"cannot write here ({what}): give a file name", file=str(path))


def check_folder(path: str | Path) -> Path:
    """Check a folder that several output files will go into (a sweep's results folder) before any
    is written: an existing folder this process can create files in, or a new name that can be made
    there (:func:`check_target`'s rules for a new name); else an :class:`InputError`."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError("a symlink to nothing: give a folder, or fix the link", file=str(path)) from None
        _check_creatable(path, path.parent, [path.name], is_folder=True)
        return path
    except OSError as exc:
        if isinstance(exc, NotADirectoryError):  # names the file in the way
            _check_creatable(path, path.parent, [path.name], is_folder=True)
        raise _unwritable(exc, path) from None
    if not stat.S_ISDIR(mode):
        raise InputError("cannot write results here (not a folder): give a folder name", file=str(path))
    _check_creatable(path, path, [], is_folder=True)
    return path


def _check_creatable(path: Path, where: Path, names: list[str], *, is_folder: bool = False) -> None:
    """Refuse ``path`` unless ``names`` (the folders still to be made, then the target's own name) can
    be made under ``where``'s nearest existing ancestor: it must be a folder (not a file in the way)
    this process may create in (``os.access`` W_OK | X_OK, then one empty temp file made and removed
    there: only that finds a folder of ``/proc`` or ``/sys``, whose permission bits pass root), and
    each name must fit the file system's NAME_MAX (a file's with its temp file's affixes)."""
    while True:
        try:
            mode = os.stat(where).st_mode
            break
        except (FileNotFoundError, NotADirectoryError) as exc:
            if where == where.parent:  # the working folder itself is gone
                raise _unwritable(exc, path) from None
            if os.path.islink(where):  # mkdir cannot make a folder where a dangling link is
                raise InputError(f"cannot write here ({_shown(where)} is a symlink to nothing)",
                                 file=str(path)) from None
            names.insert(0, where.name)
            where = where.parent
        except OSError as exc:
            raise _unwritable(exc, path) from None
    if not stat.S_ISDIR(mode):
        raise InputError(f"cannot write here ({_shown(where)} is a file, not a folder)", file=str(path))
    if not os.access(where, os.W_OK | os.X_OK):
        raise InputError(f"cannot write here (no permission to create files in {_shown(where)})", file=str(path))
    try:
        limit = os.pathconf(where, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    for index, name in enumerate(names):
        temp = index == len(names) - 1 and not is_folder  # a file is written as its temp file first
        size = len(os.fsencode(_temp_prefix(name) + "X" * 8 + _TEMP_SUFFIX if temp else name))
        if size > limit:
            own = len(os.fsencode(name))
            shown = f"{own} bytes ({size} as its temp file)" if temp and own <= limit else f"{own} bytes"
            raise InputError(f"cannot write here (a name too long: {shown}, over the file system's {limit})",
                             file=str(path))
    _probe(path, where, names[0] if len(names) == 1 and not is_folder else "archsim")


def _probe(path: Path, folder: Path, name: str) -> None:
    """Make one empty temp file in ``folder`` (named as :func:`write_output`'s, so a killed run's is an
    orphan the next run removes) and remove it: a pseudo file system (``/proc``) or a read-only mount
    refuses it here, before any output is written."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(name), suffix=_TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write here (cannot create files in {_shown(folder)}: "
                         f"{exc.strerror or exc.__class__.__name__})", file=str(path)) from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def _shown(folder: Path) -> str:
    return str(folder) if str(folder) not in ("", ".") else "the current folder"


_TEMP_SUFFIX = ".tmp"


def _temp_prefix(name: str) -> str:
    """The start of a temp file's name beside ``name``: ``.NAME.PID.`` (then 8 random characters and
    ``.tmp``), which :func:`remove_orphans` reads back."""
    return f".{name}.{os.getpid()}."


_OWN_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_OWN_FD_FOLDERS = ("/dev/fd", "/proc/self/fd")


def own_descriptor(path: str | Path) -> int | None:
    """The descriptor of this process that ``path`` names (``/dev/stdout`` → 1, ``/dev/fd/N`` or
    ``/proc/self/fd/N`` → N), else None. Why: such a name is a link to whatever the shell opened —
    often a regular file (``> log``, ``>> log``) — and replacing what it points to would destroy
    the file the shell appends to; the output must go through the descriptor, at its offset."""
    text = os.path.normpath(os.path.abspath(str(path)))
    if text in _OWN_STREAMS:
        return _OWN_STREAMS[text]
    folder, name = os.path.split(text)
    return int(name) if folder in _OWN_FD_FOLDERS and name.isdigit() else None


def output_flag(text: str) -> str:
    """An argparse ``type=`` for every flag that names an output file: a target that cannot be
    written is refused before any work (:func:`check_target`), not after minutes of it."""
    if text:  # an empty value is the command's own business (a default path, or an error)
        try:
            check_target(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def folder_flag(text: str) -> str:
    """An argparse ``type=`` for a flag that names a folder of output files (:func:`check_folder`)."""
    if text:
        try:
            check_folder(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def distinct_targets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse one file named by two output flags of a run (``--out x --gantt x``): the second write
    would silently replace the first. Devices, FIFOs and this process's own descriptors
    (``/dev/null``, ``/dev/stdout``) are written through, not replaced, so they may be named twice."""
    seen: dict[str, str] = {}
    for action in parser._actions:  # the parser's flags, as argparse keeps them
        value = getattr(args, action.dest, None) if action.type is output_flag else None
        if not value or action.dest in seen.values() or check_target(value) == "through":
            continue
        key = os.path.realpath(value)
        if key in seen:
            raise InputError(f"named by two output flags ({_flag(parser, seen[key])} and "
                             f"{_flag(parser, action.dest)}): the second would replace the first; "
                             "give each its own file", file=str(value))
        seen[key] = action.dest


def _flag(parser: argparse.ArgumentParser, dest: str) -> str:
    """The first option string of the flag storing into ``dest`` (``"trace"`` → ``--chrome-trace``)."""
    named = [action for action in parser._actions if action.dest == dest and action.option_strings]
    shown = [action for action in named if action.help != argparse.SUPPRESS] or named
    return shown[0].option_strings[0] if shown else dest


def write_output(path: str | Path, text: str, *, at_once: bool = False) -> Path:
    """Write ``text`` (UTF-8) to the output ``path`` a flag names: the one writer of every output.

    * a regular file, or a new name: :func:`_replace_atomically` (a temp file renamed over it), so a
      reader sees the old file or the new one, never half; through a symlink the file it points to is
      replaced and the link stays. Inside an :func:`output_set` (every CLI run) the temp file is
      written now and renamed when the set ends, with the run's other files; ``at_once``: renamed
      now even so (a file that stands alone: a sweep's cache of one unit, kept if the run stops);
    * this process's own descriptor (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
      ``/proc/self/fd/N``): written into that descriptor (:func:`own_descriptor`), whatever it
      leads to, so a file the shell appends to keeps what it had;
    * a character device (``/dev/null``, a terminal) or a FIFO: written through in
      place (opened for writing, no temp file, no rename), so the node is never replaced. A FIFO is
      opened without blocking: with no reader it is refused at once, not waited on forever;
    * a folder, a dangling symlink, a socket, a block device (a disk), or a place the OS refuses
      (no permission, a full device, a name too long): an :class:`InputError` naming it, with
      nothing left behind.
    """
    path = Path(path)
    fd = own_descriptor(path)
    if fd is not None:
        return _write_descriptor(fd, path, text)
    if check_target(path) == "through":
        return _write_through(path, text, fifo=stat.S_ISFIFO(os.stat(path).st_mode))
    target = Path(os.path.realpath(path)) if os.path.islink(path) else path
    staged = _OPEN_SET.get()
    if staged is None or at_once:
        return _replace_atomically(target, text)
    staged.stage(target, text)
    return target


@dataclass(frozen=True)
class _OutputSet:
    """The files of one run written so far (target → its temp file, in writing order) and the
    folders made for them (made first, first): what :func:`output_set` renames or removes."""

    temps: dict[Path, Path] = field(default_factory=dict)
    folders: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    held: ExitStack = field(default_factory=ExitStack)  # left after the renames (:func:`hold_until_written`)

    def stage(self, path: Path, text: str) -> None:
        key = Path(os.path.abspath(path))
        self.folders.extend(_missing_folders(path.parent))
        tmp = _write_temp(path, text)
        old = self.temps.pop(key, None)  # the same file written twice in a run: the later text wins
        if old is not None:
            old.unlink(missing_ok=True)
        self.temps[key] = tmp

    def commit(self) -> None:
        """Rename every temp file into place, in writing order; a rename the OS refuses (rare: the
        folder was removed or made read-only meanwhile) names its file and removes the temps left."""
        for index, (path, tmp) in enumerate(self.temps.items()):
            try:
                os.replace(tmp, path)
            except BaseException as exc:
                for _, left in list(self.temps.items())[index:]:
                    left.unlink(missing_ok=True)
                if isinstance(exc, OSError):
                    raise _unwritable(exc, path) from None
                raise

    def discard(self) -> None:
        """Remove every temp file and the folders made for them (when still empty): nothing replaced."""
        for tmp in self.temps.values():
            tmp.unlink(missing_ok=True)
        for folder in reversed(self.folders):
            try:
                folder.rmdir()
            except OSError:
                pass  # holds something else now, or is gone


_OPEN_SET: ContextVar[_OutputSet | None] = ContextVar("archsim_output_set", default=None)


@contextmanager
def output_set() -> Iterator[None]:
    """Make the files :func:`write_output` writes inside the ``with`` one transaction. Why: a run
    that fails while writing (a full disk, a quota, an I/O error, Ctrl-C) after its first file must
    not leave that file replaced and the rest old or missing. Each file goes to its temp file beside
    its target (written and fsynced) as the run writes it; when the ``with`` ends normally every temp
    is renamed into place; when it ends by an exception every temp (and any folder made for one) is
    removed and no target is replaced. Devices, FIFOs and this process's own descriptors are written
    in place as they come (nothing there is replaced). A set opened inside another joins it.
    ``archsim.cli.main`` runs every command inside one."""
    if _OPEN_SET.get() is not None:
        yield
        return
    staged = _OutputSet()
    token = _OPEN_SET.set(staged)
    with staged.held:  # left last: after the renames, or after the temps are removed
        try:
            yield
        except BaseException:
            staged.discard()
            raise
        finally:
            _OPEN_SET.reset(token)
        staged.commit()
    for note in staged.notes:
        print(note, file=sys.stderr)


def hold_until_written(context: AbstractContextManager[T]) -> T:
    """Enter ``context`` now and leave it when the open :func:`output_set` ends, after its files are
    renamed into place (or removed). Why: a sweep's folder lock must cover its results' renames,
    which the set defers past the sweep itself to the end of the run (its report)."""
    staged = _OPEN_SET.get()
    if staged is None:
        raise RuntimeError("hold_until_written needs an open output_set")
    return staged.held.enter_context(context)


def note_written(message: str) -> None:
    """Print ``message`` (``wrote run.json``) on stderr once the run's files are in place: at once
    outside an :func:`output_set`, else when it commits, and never when a later file fails (the
    file it names was not written then)."""
    staged = _OPEN_SET.get()
    if staged is None:
        print(message, file=sys.stderr)
    else:
        staged.notes.append(message)


def pending(path: str | Path) -> Path:
    """The file to read ``path``'s contents from in this run: the temp file of the open
    :func:`output_set` that holds what the run wrote to it, not yet renamed; else ``path``. Why: a
    sweep's report reads the results.csv the same run has just written."""
    staged = _OPEN_SET.get()
    found = None if staged is None else staged.temps.get(Path(os.path.abspath(path)))
    return found if found is not None else Path(path)


def _missing_folders(folder: Path) -> list[Path]:
    """The ancestors of ``folder`` (itself included) that do not exist yet, outermost first: the ones
    writing a file there will make."""
    missing: list[Path] = []
    while not folder.exists() and folder != folder.parent:
        missing.insert(0, folder)
        folder = folder.parent
    return missing


def _unwritable(exc: OSError, path: Path) -> InputError:
    return InputError(f"cannot write here ({exc.strerror or exc.__class__.__name__})", file=str(path))


def _write_descriptor(fd: int, path: Path, text: str) -> Path:
    """Write into this process's own open descriptor ``fd`` (not closed): the shell's ``>``/``>>``
    file, pipe or terminal keeps its inode, its earlier contents and its offset."""
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as exc:  # a closed descriptor (EBADF), a full disk, a reader that left
        raise _unwritable(exc, path) from None
    return path


def _write_through(path: Path, text: str, *, fifo: bool) -> Path:
    """Write into a device or FIFO in place. A FIFO is opened with ``O_NONBLOCK`` (no reader: ENXIO,
    refused at once) and then written blocking, as a pipe on stdout would be."""
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | (os.O_NONBLOCK if fifo else 0))
    except OSError as exc:
        if fifo and exc.errno == errno.ENXIO:
            raise InputError("a FIFO with no reader: start its reader first", file=str(path)) from None
        raise _unwritable(exc, path) from None
    try:
        if fifo:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as exc:  # /dev/full: ENOSPC; a FIFO whose reader left: EPIPE
        raise _unwritable(exc, path) from None
    finally:
        os.close(fd)
    return path


def _replace_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and ``os.replace``.

    A crash mid-write leaves the old file (or none), never half a file. A path that cannot be
    written (a name too long, a folder that is a file, no permission, a full disk) is an
    :class:`InputError` naming it, with nothing left behind.
    """
    tmp = _write_temp(path, text)
    try:
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _unwritable(exc, path) from None
        raise
    return path


def _write_temp(path: Path, text: str) -> Path:
    """Write ``text`` to a new temp file beside ``path`` (flushed and fsynced, with the permissions
    ``path`` will have) and return it: the first half of every replacement. A failure (a full disk,
    Ctrl-C) removes the temp file; an OSError is an :class:`InputError` naming ``path``."""
    import tempfile  # here, not at the top: it pulls in random and shutil

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_orphans(path.parent, path.name)
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path.name), suffix=_TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise _unwritable(exc, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _replacement_mode(path))  # mkstemp makes 0600
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _unwritable(exc, path) from None
        raise
    return Path(tmp)


def _replacement_mode(path: Path) -> int:
    """Permission bits for the file that replaces ``path``: the old file's (a private 0600 file stays
    private), else a new file's usual 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


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


def live_writer(temp: str | Path) -> bool:
    """Whether the temp file ``temp`` belongs to a live process: a writer still at work, or a run
    whose :func:`output_set` has not renamed its files yet; only a killed writer's is an orphan."""
    pid = _writer_pid(Path(temp))
    return pid is not None and _alive(pid)


def remove_orphans(folder: str | Path, name: str = "*") -> int:
    """Delete the temp files that killed writers left in ``folder`` (for target ``name``, or all):
    :func:`write_output` names them ``.NAME.PID.XXXX.tmp``, so one whose PID is gone is an
    orphan, while a live writer's temp file (another run writing beside this one) is left alone.
    Returns how many were removed."""
    removed = 0
    import glob

    try:
        candidates = list(Path(folder).glob(f".{name if name == '*' else glob.escape(name)}.*.tmp"))
    except OSError:
        return 0
    for temp in candidates:
        pid = _writer_pid(temp)
        if pid is not None and not _alive(pid):
            try:
                temp.unlink()
                removed += 1
            except OSError:
                pass
    return removed


