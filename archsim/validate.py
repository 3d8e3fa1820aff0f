"""The validation edge: ranges for numbers, one safe file reader, safe names, overflow guards.

Every reader and flag parser checks its input here, so everything behind it can trust its data; a written
number or boolean is read in these ranges by :mod:`archsim.value_parsers`. Ranges (documented in the README's "Input limits"):

* counts, dimensions and sizes given as integers: 1 … 2³¹ − 1 (int32), so products of a few of
  them stay inside int64 before :func:`check_exact` looks at the result;
* seeds: 0 … 2³² − 1 (numpy's seed range);
* real numbers: finite (no ``inf``/``nan``), 0 or at least 10⁻¹² in magnitude, and positive or
  non-negative where the command says;
* every integer archsim *computes* (cycles, MACs, bytes) stays below 2⁵³: exact in int64 and also
  in the float64 the simulator times with; beyond it the command refuses rather than wrap around.
"""

from __future__ import annotations

import errno
import math
import numbers
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from archsim.errors import InputError

INT32_MAX = 2**31 - 1
SEED_MAX = 2**32 - 1
EXACT_LIMIT = 2**53
MAX_FILE_BYTES = 64 * 2**20
MAX_NAME_CHARS = 100
MIN_MAGNITUDE = 1e-12  # smallest non-zero real accepted (seconds, GHz, bytes/cycle …): no subnormals
MAX_PROCESSORS = 4096  # processors a partition or schedule may use (partitioners are O(layers² · P))
# A file's figure in a unit (GB/s, GiB, MiB, W, TFLOP/s, pJ, µm²): far above every chip's, and low enough that the
# readers' products stay finite (× 10⁹ for bytes/s, × 2³⁰ for bytes, × 10¹² for FLOP/s, × a count below 2⁵³ for
# pJ): 10³⁰⁰ GB/s would be inf bytes/s, every op free; 10³⁰⁰ pJ per MAC an iteration of inf joules
MAX_FIGURE = 1e15


def is_nan(value: object) -> bool:
    """Whether ``value`` is a NaN of any real type (numpy's included); False for every non-number, so
    table cells of mixed types can be tested alike. The one NaN test archsim has."""
    return isinstance(value, numbers.Real) and math.isnan(value)


def shown(value: object, limit: int = 60) -> str:
    """``value`` quoted for an error line: control characters escaped, long text cut."""
    text = repr(str(value))
    return text if len(text) <= limit else text[: limit - 4] + "…" + text[-1]


def flag_text(value: object) -> str:
    """A keyword's value as its comma-separated flag's text (``--sram-kb 16,32,8``, ``--stage-times 1,1,1``): a
    list, tuple or numpy array (a notebook's) joined by commas, anything else as ``str`` gives it."""
    listed = isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray"
    return ",".join(map(str, value)) if listed else str(value)  # type: ignore[call-overload]



def shown_number(value: object) -> str:
    """A file's value where a number belongs, for an error line: as :func:`shown`, and a string said to be one,
    since ``'8'`` quoted from ``gpus = "8"`` reads as the number it was meant as (a number takes no quotes)."""
    return _shown_typed(value, "the number")


def shown_boolean(value: object) -> str:
    """A file's value where true or false belongs, for an error line, as :func:`shown_number` says a number's:
    ``'true'`` quoted from ``nvls = "true"`` is a string, not the boolean it was meant as."""
    return _shown_typed(value, "true or false")


def _shown_typed(value: object, what: str) -> str:
    """``value`` as :func:`shown`, and a string said to be one: ``what`` takes no quotes in a TOML or JSON file."""
    if isinstance(value, str):
        return f"the string {shown(value)} (write {what} without quotes)"
    if isinstance(value, bool):  # as the file spells it (true), not Python's 'True'
        return f"the boolean {str(value).lower()}"
    return shown(value)


def is_file(path: str | Path) -> bool:
    """Whether a user's path names a regular file; a name the OS refuses to look up (too long, a
    NUL, a component that is a file) is no file rather than an OSError."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def suffixed_files(folder: str | Path, name: str, suffixes: Iterable[str]) -> list[str]:
    """The names ``name`` + a suffix of ``suffixes`` (in their order) that are files in ``folder``: what a name
    written without its suffix (``device = "mychip"``) most likely meant, for the error that says to write it."""
    return [f"{name}{suffix}" for suffix in suffixes if is_file(Path(folder) / f"{name}{suffix}")]


def exists(path: str | Path) -> bool:
    """:func:`is_file`'s rule for any kind of entry."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def folder_ending(path: str | Path) -> str | None:
    """The ending that makes ``path`` a folder's name — a separator (``x.csv/``), ``/.`` or ``/..`` — else None.
    Why: ``Path`` drops a trailing ``/`` and a final ``.``, so a reader handed ``Path(text)`` read the file ``x.csv``
    that ``x.csv/`` does not name (POSIX refuses to open it, ENOTDIR); inputs and outputs are refused by this one rule."""
    text = os.fspath(path)
    return next((end for end in (os.sep, os.altsep, "/..", "/.") if end and text.endswith(end)), None)


def check_file_ending(path: str | Path, what: str) -> None:
    """Refuse, as :func:`read_bytes` does, an input ``path`` written as a folder's name (:func:`folder_ending`):
    for a reader that must turn the user's text into a ``Path`` (or join it to a folder) before it reads."""
    ending = folder_ending(path)
    if ending is not None and os.fspath(path) not in (os.sep, os.altsep):
        raise InputError(f"{what} named as a folder (a name ending in {ending!r}): give the file's name without it",
                         file=os.fspath(path))


def _open_error(exc: OSError, what: str) -> str:
    """One line for an OS refusal to open a user's file."""
    reasons: dict[int | None, str] = {errno.ENOENT: f"{what} not found", errno.ENOTDIR: f"{what} not found (a part of the path is a file)",
               errno.ELOOP: f"{what} is a symlink loop", errno.ENXIO: f"{what} is not a regular file (a socket)"}
    return reasons.get(exc.errno, f"cannot read {what} ({exc.strerror or exc.__class__.__name__})")


def read_bytes(path: str | Path, what: str, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a user's *regular* file, at most ``max_bytes``, or an :class:`InputError` naming
    it: missing, a symlink loop, a folder, a FIFO/device/socket (opened without blocking and refused,
    so a FIFO never hangs and ``/dev/zero`` is never read), too large, unreadable."""
    file = str(path)
    check_file_ending(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputError(_open_error(exc, what), file=file) from None
    except ValueError:  # a NUL in the path
        raise InputError(f"{what} not found", file=file) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else \
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a plain file"
            raise InputError(f"{what} is not a regular file ({kind})", file=file)
        if info.st_size > max_bytes:
            raise InputError(f"{what} is larger than {max_bytes // 2**20} MiB", file=file)
        chunks, size = [], 0
        while size <= max_bytes:  # bounded even if the file grows while it is read
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise InputError(f"{what} is larger than {max_bytes // 2**20} MiB", file=file)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read {what} ({exc.strerror or exc.__class__.__name__})", file=file) from None
    finally:
        os.close(fd)


def read_text(path: str | Path, what: str, *, encoding: str = "utf-8", max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a user's file (:func:`read_bytes`'s rules), or an :class:`InputError` naming it
    when it is not text in ``encoding``."""
    data = read_bytes(path, what, max_bytes=max_bytes)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{what} is not {encoding.removesuffix('-sig').upper()} text (byte {exc.start})",
                         file=str(path), line=line) from None


def cfg_syntax_error(exc: Exception, file: str, text: str | None = None) -> InputError:
    """The one-line refusal of a ``.cfg`` that configparser cannot read (``exc``: its error, or a
    UnicodeDecodeError): what is wrong, at its line, in place of configparser's class name and its multi-line
    text — a key or a section written twice (named as ``text``, the file's, spells it at that line: configparser
    lowercases it), a key above every header, a line that is neither."""
    import configparser

    line = getattr(exc, "lineno", None)
    if isinstance(exc, configparser.DuplicateOptionError):
        spelt = _cfg_spellings(text, exc.section, exc.option, line)  # the first and this line's, as written
        key = spelt[-1] if spelt else exc.option
        same = f" ({spelt[0]} and {key}: a .cfg's reader takes them as one key)" if spelt[0:1] != spelt[-1:] else ""
        return InputError(f"{key} is given twice in [{exc.section}]; state it once{same}", file=file, line=line,
                          field=key)
    if isinstance(exc, configparser.DuplicateSectionError):
        return InputError(f"section [{exc.section}] is given twice; put its keys in one", file=file, line=line)
    if isinstance(exc, configparser.MissingSectionHeaderError):
        return InputError("a key before any [section] header", file=file, line=line)
    if isinstance(exc, configparser.ParsingError) and getattr(exc, "errors", None):
        return InputError("neither a [section] header nor a key = value (or key: value) line", file=file,
                          line=exc.errors[0][0])
    return InputError(f"not a readable .cfg file ({exc.__class__.__name__})", file=file)


def _cfg_spellings(text: str | None, section: str, option: str, line: int | None) -> list[str]:
    """How ``text`` (a ``.cfg``'s) spells ``option`` in ``[section]`` up to ``line``, each key as written, in order
    (configparser hands on the key lowercased); empty where the text or line is not known."""
    if text is None or line is None:
        return []
    spelt, inside = [], False
    for row in text.splitlines()[:line]:
        stripped = row.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            inside = stripped[1:-1].strip() == section
        elif inside and (key := row.split("=", 1)[0].split(":", 1)[0].strip()).lower() == option.lower():
            spelt.append(key)
    return spelt


def parse_json(text: str, file: str) -> object:
    """``text`` as JSON (a leading byte-order mark skipped, as RFC 8259 allows), or one InputError."""
    import json

    try:
        return json.loads(text.removeprefix("\ufeff"))
    except RecursionError:
        raise InputError("not valid JSON (nested too deeply)", file=file) from None
    except json.JSONDecodeError as exc:  # its line as a location, as parse_toml's (``FILE, line N: …``)
        raise InputError(f"not valid JSON ({exc.msg}, column {exc.colno})", file=file, line=exc.lineno) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(f"not valid JSON ({exc})", file=file) from None


def shipped_configs(folder: str):
    """``configs/FOLDER/`` as installed (package ``archsim.configs``), or beside the package in a checkout:
    where shipped names (energy tables, a device sweep's devices and models) are looked up."""
    from importlib import resources

    try:
        return resources.files("archsim.configs").joinpath(folder)
    except ModuleNotFoundError:  # editable installs put the repo root on sys.path, not the mapping
        return Path(__file__).resolve().parents[1] / "configs" / folder


def shipped_file(folder: str, name: str, suffixes: tuple[str, ...], what: str, *,
                 field: str | None = None) -> Path | None:
    """``configs/FOLDER/NAME+SUFFIX`` for the first of ``suffixes`` that names a shipped file, or None: how a
    shipped name (``gpt3_1.3b``, ``tpu_v4_like``) is found, by a device sweep's spec and by the transformer
    commands alike; :func:`resolve_name`'s rules keep the name inside the folder."""
    for suffix in suffixes:
        candidate = resolve_name(shipped_configs(folder), name, suffix, what, field=field)
        if is_file(candidate):
            return Path(candidate)
    return None


def check_operand(text: object, field: str, what: str, shipped: Iterable[str]) -> None:
    """Refuse a blank NETWORK or MODEL (``field``) in one line, the same for every command and the API: ``what``
    it may be (``"a network's"``: "a network's path or a shipped name") and the ``shipped`` names. Why: ``Path("")``
    is ``"."``, the working folder, which ``archsim cost ""`` went on to read as a topology ("topology file not
    found")."""
    if not str(text).strip():
        raise InputError(f"expected {what} path or a shipped name, got an empty one; shipped: {', '.join(shipped)}",
                         field=field)


def shipped_names(folder: str, suffixes: tuple[str, ...]) -> list[str]:
    """The stems of ``configs/FOLDER/``'s files with one of ``suffixes``, sorted: what an error lists."""
    return sorted({entry.name[:-len(suffix)] for entry in shipped_configs(folder).iterdir()
                   for suffix in suffixes if entry.name.endswith(suffix)})


def spec_folder_file(candidate: Path, name: str, what: str) -> Path:
    """``candidate``, the file a sweep spec's entry ``name`` names in the spec's folder (:func:`resolve_name`),
    resolved; else an :class:`InputError` saying why (``what``: "device file"): a folder or a FIFO of that name
    gets the reader's "is not a regular file (a folder)" line, which until 2026-12-03 read "not found"; a ``name``
    ending in ``/`` is refused as the flags' files are (:func:`check_file_ending`), not joined into the file's name."""
    check_file_ending(name, f"{what} {shown(name)}")
    if is_file(candidate):
        return candidate.resolve()
    if os.path.lexists(candidate):
        read_bytes(candidate, f"{what} {shown(name)}")
    raise InputError(f"{what} {shown(name)} not found in the spec's folder")


def resolve_name(folder: str | Path, name: str, suffix: str, what: str, *, field: str | None = None) -> Path:
    """The file a *name* (not a path) stands for inside ``folder``: ``folder/name+suffix``. A name
    that is absolute, holds ``..``, a control character, or resolves (through a symlink) outside
    ``folder`` is refused, so a shared spec or flag can only pick among the folder's files."""
    text = str(name)
    if not text or not text.isprintable():
        raise InputError(f"{what} name must be printable and non-empty: {shown(text)}", field=field)
    parts = Path(text).parts
    base = Path(folder)
    label = base.resolve().name  # a spec's relative "" or "." folder still has a name to show (root: "")
    if Path(text).is_absolute() or ".." in parts or "\\" in text:
        raise InputError(f"{what} name must stay inside {label}/: {shown(text)}", field=field)
    candidate = base / f"{text}{suffix}"
    try:
        inside = candidate.resolve().is_relative_to(base.resolve())
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL
        inside = False
    if not inside:
        raise InputError(f"{what} name resolves outside {label}/: {shown(text)}", field=field)
    return candidate


def check_unique_columns(names: Sequence[str], source: str, line: int) -> None:
    """A CSV header naming no column twice: a reader keeps one of the two cells, so the other would be
    dropped silently. Blank names (a trailing comma) are not columns and are skipped."""
    seen: set[str] = set()
    for name in names:
        if name and name in seen:
            raise InputError("column given twice", file=source, line=line, field=name)
        seen.add(name)


def check_name(value: object, field: str, *, file: str | None = None, line: int | None = None,
               limit: int = MAX_NAME_CHARS) -> str:
    """A name that becomes part of a file name or a table cell: a non-empty string of at most
    ``limit`` printable characters, not a path (no ``/``, ``\\``, ``..``)."""
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {shown(value)}", file=file, line=line, field=field)
    if not value.strip():
        raise InputError("must not be empty", file=file, line=line, field=field)
    if len(value) > limit:
        raise InputError(f"longer than {limit} characters ({len(value)})", file=file, line=line, field=field)
    if not value.isprintable():
        raise InputError(f"contains control characters: {shown(value)}", file=file, line=line, field=field)
    if "/" in value or "\\" in value or value.strip() in (".", ".."):
        raise InputError(f"must be a plain name, not a path: {shown(value)}", file=file, line=line, field=field)
    return value


def positive_count(value: object, field: str) -> int:
    """A count given in code (an ``int`` or a numpy integer, as an array's shape or a frame's cell gives it; never
    a ``bool``, a float or text) that is at least 1, as a Python ``int``; else InputError naming ``field``. One
    rule for the array engine's sizes and BPPSA's scan lengths and processors."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise InputError(f"must be a positive integer, got {value!r}", field=field)
    return int(value)


SMALLER_JOB = "use a smaller batch or network, or a larger array"  # check_exact's advice unless its caller knows the cause


def check_exact(estimate: object, what: str, hint: str = SMALLER_JOB, field: str | None = None) -> None:
    """Refuse a computation whose integer result (``estimate``, any float array-like bounding it)
    would reach 2⁵³: beyond it int64 sums may wrap and float64 times lose exactness. ``field``: the setting the
    ``hint`` names, where one does (a runs file's row names it as its column)."""
    import numpy as np  # here, not at the top: flag parsers import this module, and --help loads no numpy

    values = np.asarray(estimate, dtype=np.float64)
    if values.size == 0:
        return
    worst = float(np.max(values))
    if not worst < EXACT_LIMIT:
        raise InputError(f"{what} would reach {worst:.3g}, beyond the 2^53 archsim counts exactly; {hint}", field=field)


DEFAULT_MAX_OPS = 1_000_000
# Measured with `/usr/bin/time -f "%e s %M KB" archsim pipeline vgg16 --processors 4 --microbatches 4000`
# (444,000 simulated ops: 1.2 GB peak, 27 s on one core): about 2.7 kB and 60 µs per simulated op.
BYTES_PER_OP = 2_700
SECONDS_PER_OP = 60e-6
MAX_CONFIGS = 1_000_000  # sweep --max-configs' default: rows of results.csv (~1.8 kB each at peak, 2026-12-02: < 4 GB)


def check_job_size(ops: int, limit: int, flag: str = "--max-ops", work: str = "") -> None:
    """Refuse, before any work, a simulation of more than ``limit`` ops, showing the estimate and
    the flag that lifts the limit (so a typo of 10⁷ micro-batches fails in a second, not after 3 GB).
    ``work``: what another command's estimate counts, "{:,}" where the number goes (then no GB or minutes
    are claimed: those are measured per simulated op)."""
    if ops > limit:  # the limit as the caller spells it: --max-ops 48 from a command, max_ops=48 from Python
        from archsim.console import setting

        name = flag.lstrip("-")
        lift = (f"give {setting(name, ops)} to run it anyway" if ops <= INT32_MAX
                else f"beyond {setting(name)}'s range ({INT32_MAX:,})")
        amount = (work.format(ops) if work else f"simulates about {ops:,} ops (≈{ops * BYTES_PER_OP / 1e9:.3g} GB, "
                  f"≈{ops * SECONDS_PER_OP / 60:.3g} min)")
        raise InputError(f"this job {amount}, above the limit of {limit:,}; {lift}", field=flag.lstrip("-"))


def did_you_mean(name: str, valid: Iterable[str], prefix: str = "", cutoff: float = 0.6) -> str:
    """`` (did you mean 'X'?)`` naming the valid name nearest ``name`` (difflib's closeness, case ignored, shown
    in the valid name's own case), or "" where none is near: the one hint of every unknown key, keyword and flag,
    so a typo's error names the fix and a name unlike any (``gpus`` for ``max_ops``) gets none. ``prefix`` is
    shown before the name and not compared (a flag's ``--``: ``--gpus`` and ``--dp`` share it, not a likeness);
    ``cutoff``: difflib's closeness a match needs, in [0, 1] (higher: only a near-miss)."""
    from difflib import get_close_matches

    spelled = {str(key).lower(): str(key) for key in valid}
    nearest = get_close_matches(name.lower(), list(spelled), n=1, cutoff=cutoff)
    return f" (did you mean {prefix + spelled[nearest[0]]!r}?)" if nearest else ""
