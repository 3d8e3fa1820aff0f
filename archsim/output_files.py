"""The one writer of every output file a flag names: what it does depends on what the name is.

A regular file (or a new name) is replaced atomically, keeping the old file's permissions (a read-only one is
refused); this process's own descriptor (``/dev/stdout``, ``/dev/fd/N``) is written into; a character device or
FIFO is written through in place, never replaced; anything else is refused in one line (docs/security.md). Every
target is checked when the command line is read (:mod:`archsim.output_targets`), where it would go as well as what
it is, and a run's files are one :func:`output_set`: each is written to its temp file first and renamed into place
only when all of them are written, so a run that fails while writing (a full disk, Ctrl-C, SIGTERM) replaces none.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from archsim.console import line
from archsim.errors import InputError
from archsim.output_targets import (
    TEMP_SUFFIX,
    check_entry,
    check_file_name,
    check_target,
    own_descriptor,
    temp_prefix,
    uncreatable,
    unwritable,
)
from archsim.output_temps import remove_orphans, remove_own_temps

T = TypeVar("T")


def write_output(path: str | Path, text: str, *, at_once: bool = False, within: str | Path | None = None) -> Path:
    """Write ``text`` (UTF-8) to the output ``path`` a flag names: the one writer of every output.

    * a regular file, or a new name: :func:`_replace_atomically` (a temp file renamed over it), so a
      reader sees the old file or the new one, never half; through a symlink the file it points to is
      replaced and the link stays. Inside an :func:`output_set` (every CLI run) the temp file is
      written now and renamed when the set ends, with the run's other files; ``at_once``: renamed
      now even so (a file that stands alone: a sweep's cache of one unit, kept if the run stops);
      ``within``: the folder archsim fills that ``path`` is its own entry of (a sweep's results folder): a symlink
      there is refused, not followed (:func:`~archsim.output_targets.check_entry`);
    * this process's own descriptor (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
      ``/proc/self/fd/N``): written into that descriptor (:func:`~archsim.output_targets.own_descriptor`), whatever it
      leads to, so a file the shell appends to keeps what it had;
    * a character device (``/dev/null``, a terminal) or a FIFO: written through in
      place (opened for writing, no temp file, no rename), so the node is never replaced. A FIFO is
      opened without blocking: with no reader it is refused at once, not waited on forever;
    * a folder, a dangling symlink, a socket, a block device (a disk), or a place the OS refuses
      (no permission, a full device, a name too long): an :class:`InputError` naming it, with
      nothing left behind.
    """
    check_file_name(path)  # before Path drops a trailing "/" or "."
    path = Path(path)
    if within is not None:
        check_entry(path, within)
    fd = own_descriptor(path)
    if fd is not None:
        return _write_descriptor(fd, path, text)
    link = os.path.islink(path)  # through a link the file it leads to is written: its check's probe names the link
    if check_target(path, probe=link) == "through":
        return _write_through(path, text, fifo=stat.S_ISFIFO(os.stat(path).st_mode))
    target = Path(os.path.realpath(path)) if link else path
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
    targets: list[Path] = field(default_factory=list)  # every target staged or being staged (a temp not yet in temps)
    folders: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the ``wrote FILE`` lines, in :func:`note_written`'s order
    leading: list[str] = field(default_factory=list)  # the ``--out`` file's, printed before ``notes``
    held: ExitStack = field(default_factory=ExitStack)  # left after the renames (:func:`hold_until_written`)

    def stage(self, path: Path, text: str) -> None:
        key = Path(os.path.abspath(path))
        self.folders.extend(_missing_folders(path.parent))
        self.targets.append(key)  # before its temp file exists: an interrupt from here on finds that file (discard)
        tmp = write_temp(path, text)
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
                    raise unwritable(exc, path) from None
                raise

    def discard(self) -> None:
        """Remove every temp file and the folders made for them (when still empty): nothing replaced."""
        for tmp in self.temps.values():
            tmp.unlink(missing_ok=True)
        for target in self.targets:  # a temp file made but not yet recorded when the interrupt came: this run's
            remove_own_temps(target)
        for folder in reversed(self.folders):
            try:
                folder.rmdir()
            except OSError:
                pass  # holds something else now, or is gone


_OPEN_SET: ContextVar[_OutputSet | None] = ContextVar("archsim_output_set", default=None)


@contextmanager
def output_set() -> Iterator[None]:
    """Make the files :func:`write_output` writes inside the ``with`` one transaction. Why: a run that fails while
    writing (a full disk, a quota, an I/O error, Ctrl-C) after its first file must not leave that file replaced and
    the rest old or missing. Each file goes to its temp file beside its target (written and fsynced) as the run
    writes it; when the ``with`` ends normally every temp is renamed into place (a Ctrl-C meanwhile waits for the
    renames: :func:`_interrupts_deferred`); when it ends by an exception every temp (and any folder made for one) is
    removed and no target is replaced. Devices, FIFOs and this process's own descriptors are written in place as
    they come. A set opened inside another joins it. ``archsim.cli.main`` runs every command inside one."""
    if _OPEN_SET.get() is not None:
        yield
        return
    staged = _OutputSet()
    token = _OPEN_SET.set(staged)
    with ExitStack() as renaming:
        with staged.held:  # left last: after the renames, or after the temps are removed
            try:
                yield
            except BaseException:
                staged.discard()
                raise
            finally:
                _OPEN_SET.reset(token)
            renaming.enter_context(_interrupts_deferred())  # all renamed and said, then a Ctrl-C that came
            staged.commit()
        for note in (*staged.leading, *staged.notes):
            line(note)


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block and act on the first after it, as its handler would have. Why: a
    Ctrl-C between two renames of an :func:`output_set` left its first files replaced and the rest old, half a set;
    the renames take microseconds. Python-level handlers, not a blocked signal mask: a signal sent to the process
    may reach any of its threads. Main thread only (the only one that may set a handler)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[signal.Signals] = []
    previous = {number: signal.signal(number, lambda got, frame: caught.append(signal.Signals(got)))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
    if caught:
        handler = previous[caught[0]]
        if callable(handler):  # Python's KeyboardInterrupt, sigterm_as_interrupt's Terminated
            handler(caught[0], None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(caught[0])


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (a batch system's time limit, ``kill``) raises :class:`~archsim.errors.Terminated`
    in this process, so a run ends as Ctrl-C ends it: its :func:`output_set` removes every temp file and replaces
    no target, and the CLI says so in one line (status 143), where the signal's default action left the staged temp
    files behind, without a word. A forked worker that inherits the handler dies of the signal as before. Main
    thread only; a handler set by the embedding program is left alone. ``archsim.cli.main`` runs every command in it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    owner = os.getpid()

    def handler(signum, frame) -> None:
        if os.getpid() != owner:  # a pool worker: the default action, death by the signal
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        from archsim.errors import Terminated

        raise Terminated

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def hold_until_written(context: AbstractContextManager[T]) -> T:
    """Enter ``context`` now and leave it when the open :func:`output_set` ends, after its files are
    renamed into place (or removed). Why: a sweep's folder lock must cover its results' renames,
    which the set defers past the sweep itself to the end of the run (its report)."""
    staged = _OPEN_SET.get()
    if staged is None:
        raise RuntimeError("hold_until_written needs an open output_set")
    return staged.held.enter_context(context)


def note_written(message: str, *, out: bool = False) -> None:
    """Print ``message`` (``wrote run.json``) on stderr once the run's files are in place: at once
    outside an :func:`output_set`, else when it commits, and never when a later file fails (the
    file it names was not written then). The one order of a run's lines, whatever order its command
    writes its files in: ``out`` (the ``--out`` file, the run's result) first, then the others as
    written."""
    staged = _OPEN_SET.get()
    if staged is None:
        line(message)
    else:
        (staged.leading if out else staged.notes).append(message)


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


def _write_descriptor(fd: int, path: Path, text: str) -> Path:
    """Write into this process's own open descriptor ``fd`` (not closed): the shell's ``>``/``>>``
    file, pipe or terminal keeps its inode, its earlier contents and its offset."""
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as exc:  # a closed descriptor (EBADF), a full disk, a reader that left
        raise unwritable(exc, path) from None
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
        raise unwritable(exc, path) from None
    try:
        if fifo:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as exc:  # /dev/full: ENOSPC; a FIFO whose reader left: EPIPE
        raise unwritable(exc, path) from None
    finally:
        os.close(fd)
    return path


def _replace_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and ``os.replace``.

    A crash mid-write leaves the old file (or none), never half a file. A path that cannot be
    written (a name too long, a folder that is a file, no permission, a full disk) is an
    :class:`InputError` naming it, with nothing left behind.
    """
    tmp = write_temp(path, text)
    try:
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise unwritable(exc, path) from None
        raise
    return path


def write_temp(path: Path, text: str) -> Path:
    """Write ``text`` to a new temp file beside ``path`` (flushed and fsynced, with the permissions
    ``path`` will have) and return it: the first half of every replacement. A failure (a full disk,
    Ctrl-C) removes the temp file; an OSError is an :class:`InputError` naming ``path``."""
    import tempfile  # here, not at the top: it pulls in random and shutil

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_orphans(path.parent, path.name)
    except OSError as exc:
        raise unwritable(exc, path) from None
    try:  # the probe of write_output's check (check_target's probe=False): refused in its words
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise uncreatable(exc, path, path.parent) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _replacement_mode(path))  # mkstemp makes 0600
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise unwritable(exc, path) from None
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
