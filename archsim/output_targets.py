"""Every output target is checked when the command line is read, before any work: what writing there will do
(:func:`check_target`: replace a regular file or a new name, write through a device, a FIFO or this process's own
descriptor, or refuse in one line), where it would go (a folder this process can create files in, a name the file
system takes) and that no two flags name one file (:func:`distinct_targets`; nor an input of the run:
:mod:`archsim.output_inputs`); a file whose suffix names another format than the flag writes is
warned of (:func:`suffix_mismatches`). Why its own module: checking a name is a different job from writing it
(:mod:`archsim.output_files`, which imports this one, never the other way), and every output flag's argparse
``type=`` needs only the checks."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from archsim.errors import InputError
from archsim.validate import folder_ending


def check_target(path: str | Path, *, probe: bool = True) -> str:
    """What writing to ``path`` will do: ``"replace"`` (a regular file, through a symlink too, or a
    new name) or ``"through"`` (a character device or FIFO); anything else is an
    :class:`InputError`. A new name is checked where it would go and an existing file's folder must
    take the rename (:func:`_check_creatable`); a FIFO's reader is checked when it is opened.
    ``probe=False``: the writer's own check, whose temp file, made next in that folder, is the probe when the
    folder exists (:func:`uncreatable`, the same line): one probe file per write, not two."""
    check_file_name(path)
    path = Path(path)
    if own_descriptor(path) is not None:
        return "through"
    try:
        mode = os.stat(path).st_mode  # follows symlinks: what the name leads to
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError("a symlink to nothing: give a file name, or fix the link", file=str(path)) from None
        _check_creatable(path, path.parent, [path.name], probe=probe)
        return "replace"
    except OSError as exc:  # a file in the way (named by the walk), a loop, a name too long, no permission
        if isinstance(exc, NotADirectoryError):
            _check_creatable(path, path.parent, [path.name], probe=probe)
        raise unwritable(exc, path) from None
    if stat.S_ISREG(mode):
        if not mode & 0o222 or not os.access(path, os.W_OK):  # the rename needs only the folder's permission
            raise InputError(f"a read-only file (mode {stat.S_IMODE(mode):o}): give another name, or make it "
                             "writable", file=str(path))
        # through a symlink the file it leads to is replaced; else its folder is named as the user gave it
        real = Path(os.path.realpath(path)) if os.path.islink(path) else path
        _check_creatable(path, real.parent, [real.name], probe=probe)
        return "replace"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "through"
    what = ("a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a block device (a disk)" if stat.S_ISBLK(mode) else "not a file")
    raise InputError(f"cannot write here ({what}): give a file name", file=str(path))


def check_file_name(path: str | Path) -> None:
    """Refuse ``-`` (stdout to many tools, a file named ``-`` here) and a name written as a folder's: one ending in a
    separator (``out/``), ``/.`` or ``/..``. Why:
    ``Path`` drops a trailing ``/`` and a final ``.``, so ``out/`` was written as a file ``out`` (or replaced
    the file ``out``) where the user named a folder, and ``out/..`` failed only after the run's work."""
    text = os.fspath(path)
    if path == "-":  # as typed (Path("./-") reads "-"): many tools' stdout, so a file named "-" would surprise
        raise InputError("'-' is not standard output here (it would write a file named '-'): give /dev/stdout, "
                         "or ./- for a file of that name", file=text)
    ending = folder_ending(text)
    if ending is not None:  # a bare "." or ".." is an existing folder: check_target says so
        raise InputError(f"cannot write here (a name ending in {ending!r} names a folder): give a file name",
                         file=text)


def check_entry(path: str | Path, folder: str | Path) -> None:
    """Refuse ``path``, a file archsim names itself inside a folder it fills (a sweep's ``results.csv``,
    ``cache/<digest>.json``), when it or a folder between it and ``folder`` is a symlink. Why: that folder may be
    someone else's or shared, and a link there would redirect archsim's write (or its read back) out of it, where
    a link the user names as an output is the user's choice and is written through. ``folder`` itself may be one."""
    path, folder = Path(path), Path(folder)
    entry = folder
    for part in path.relative_to(folder).parts:  # outermost first: a linked cache/ is named, not its entries
        entry = entry / part
        if os.path.islink(entry):
            raise InputError(f"a symlink inside the results folder {_shown(folder)}, which archsim fills itself and "
                             "never follows a link out of: remove the link, or give another folder", file=str(entry))


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
        raise unwritable(exc, path) from None
    if not stat.S_ISDIR(mode):
        raise InputError("cannot write results here (not a folder): give a folder name", file=str(path))
    _check_creatable(path, path, [], is_folder=True)
    return path


def _check_creatable(path: Path, where: Path, names: list[str], *, is_folder: bool = False,
                     probe: bool = True) -> None:
    """Refuse ``path`` unless ``names`` (the folders still to be made, then the target's own name) can
    be made under ``where``'s nearest existing ancestor: it must be a folder (not a file in the way)
    this process may create in (``os.access`` W_OK | X_OK, then one empty temp file made and removed
    there: only that finds a folder of ``/proc`` or ``/sys``, whose permission bits pass root), and
    each name must fit the file system's NAME_MAX (a file's with its temp file's affixes). ``probe=False``, with
    the target's folder there: no temp file here, the writer's own is made there next."""
    while True:
        try:
            mode = os.stat(where).st_mode
            break
        except (FileNotFoundError, NotADirectoryError) as exc:
            if where == where.parent:  # the working folder itself is gone
                raise unwritable(exc, path) from None
            if os.path.islink(where):  # mkdir cannot make a folder where a dangling link is
                raise InputError(f"cannot write here ({_shown(where)} is a symlink to nothing)",
                                 file=str(path)) from None
            names.insert(0, where.name)
            where = where.parent
        except OSError as exc:
            raise unwritable(exc, path) from None
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
        size = len(os.fsencode(temp_prefix(name) + "X" * 8 + TEMP_SUFFIX if temp else name))
        if size > limit:
            own = len(os.fsencode(name))
            shown = f"{own} bytes ({size} as its temp file)" if temp and own <= limit else f"{own} bytes"
            raise InputError(f"cannot write here (a name too long: {shown}, over the file system's {limit})",
                             file=str(path))
    if probe or len(names) > 1 or is_folder:  # else the write's own temp file, made in ``where`` next, probes it
        _probe(path, where, names[0] if len(names) == 1 and not is_folder else "archsim")


def _probe(path: Path, folder: Path, name: str) -> None:
    """Make one empty temp file in ``folder`` (named as :func:`~archsim.output_files.write_output`'s, so a killed run's is an
    orphan the next run removes) and remove it: a pseudo file system (``/proc``) or a read-only mount
    refuses it here, before any output is written."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(name), suffix=TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise uncreatable(exc, path, folder) from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def uncreatable(exc: OSError, path: Path, folder: Path) -> InputError:
    """A temp file for ``path`` that ``folder`` refused (a pseudo file system, a read-only mount) as one line."""
    return InputError(f"cannot write here (cannot create files in {_shown(folder)}: "
                      f"{exc.strerror or exc.__class__.__name__})", file=str(path))


def _shown(folder: Path) -> str:
    return str(folder) if str(folder) not in ("", ".") else "the current folder"


TEMP_SUFFIX = ".tmp"  # every temp file the writer makes ends so (``.NAME.PID.XXXXXXXX.tmp``)


def temp_prefix(name: str) -> str:
    """The start of a temp file's name beside ``name``: ``.NAME.PID.`` (then 8 random characters and
    ``.tmp``), which :func:`~archsim.output_temps.remove_orphans` reads back."""
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
    """The CLI's :func:`distinct_outputs`: over the run's output flags."""
    distinct_outputs(output_flags(parser, args))


def distinct_outputs(outputs: list[tuple[str, str | None]]) -> None:
    """Refuse one file named by two outputs of a run, (flag or keyword, path) pairs (``--out x --gantt x``): the
    second write would silently replace the first. Devices, FIFOs and this process's own descriptors
    (``/dev/null``, ``/dev/stdout``) are written through, not replaced, so they may be named twice."""
    seen: dict[str, str] = {}
    for flag, value in outputs:
        if not value or flag in seen.values() or check_target(value) == "through":  # an alias's flag: one
            continue
        key = os.path.realpath(value)
        if key in seen:
            raise InputError(f"named by two output flags ({seen[key]} and {flag}): the second would replace the "
                             "first; give each its own file", file=str(value))
        seen[key] = flag


def output_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The run's output flags as the docs write them, with their values, in the parser's order."""
    return [(flag_name(parser, action.dest), getattr(args, action.dest, None)) for action in parser._actions
            if action.type is output_flag]


# The formats an output's suffix names: a flag whose metavar ends in one of these (``--gantt OUT.html``)
# always writes that format, whatever the file's name.
_FORMATS = {".html": "HTML", ".htm": "HTML", ".json": "JSON", ".csv": "CSV", ".md": "Markdown", ".txt": "plain text"}
# what ``--format`` writes into ``--out FILE``, as the suffix it is normally named by (a text table: .txt)
_FORMAT_SUFFIXES = {"csv": ".csv", "json": ".json", "table": ".txt"}


def suffix_mismatches(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """One line for each output flag of a fixed format whose file's suffix names another known format
    (``--gantt out.json``: HTML in a ``.json``). Why a warning, not a refusal: the user may want that
    name, but a viewer opening the file by its suffix would fail on it. A flag's format is the suffix
    of its metavar (``OUT.html``); an unknown suffix, or none (``/dev/stdout``), names no format."""
    lines: list[str] = []
    warned: set[str] = set()
    for action in parser._actions:
        if action.type is not output_flag or not isinstance(action.metavar, str) or action.dest in warned:
            continue
        value = getattr(args, action.dest, None)
        if not isinstance(value, str) or not value:
            continue
        usual, suffix = Path(action.metavar).suffix, Path(value).suffix
        written, named = _FORMATS.get(usual.lower()), _FORMATS.get(suffix.lower())
        if written is None or named is None or named == written:
            continue
        warned.add(action.dest)
        lines.append(_mismatch(flag_name(parser, action.dest), written, value, suffix, named, usual))
    chosen, out = getattr(args, "format", None), getattr(args, "out", None)
    if chosen in _FORMAT_SUFFIXES and isinstance(out, str) and "out" not in warned:  # --out FILE: --format's
        usual, suffix = _FORMAT_SUFFIXES[chosen], Path(out).suffix
        named = _FORMATS.get(suffix.lower())
        written, files = ("a text table", "text tables") if chosen == "table" else (chosen.upper(), None)
        if named is not None and suffix.lower() != usual:
            lines.append(_mismatch(f"--out with --format {chosen}", written, out, suffix, named, usual, files))
    return lines


def _mismatch(flag: str, written: str, value: str, suffix: str, named: str, usual: str,
              files: str | None = None) -> str:
    """The one wording of a suffix that names another format than the file holds (``files``: what such files are
    called, default "``written`` files")."""
    return (f"{flag} writes {written} into {value}, whose suffix {suffix} says {named}; {files or f'{written} files'} "
            f"are normally named *{usual}")


def flag_name(parser: argparse.ArgumentParser, dest: str) -> str:
    """The flag storing into ``dest`` as the docs write it (``"trace"`` → ``--chrome-trace``): its first
    long form, whichever form the user typed (``--out``, not its alias ``-o``)."""
    named = [action for action in parser._actions if action.dest == dest and action.option_strings]
    shown = [action for action in named if action.help != argparse.SUPPRESS] or named
    if not shown:
        return dest
    strings = shown[0].option_strings
    return next((flag for flag in strings if flag.startswith("--")), strings[0])


def unwritable(exc: OSError, path: Path) -> InputError:
    """An OSError met at ``path`` as the one line the user sees."""
    return InputError(f"cannot write here ({exc.strerror or exc.__class__.__name__})", file=str(path))

