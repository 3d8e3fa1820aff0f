"""A TOML reader's value or key error located at its key's line (``FILE, line N, field K``), in one place: the
reader raises with the key's name or path (``seed``, ``compute.clock_mhz``, ``servers[2].gpus``) and wraps its
checks in :func:`located`, which finds the line in the document's text (:mod:`archsim.toml_lines`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from archsim.errors import InputError
from archsim.toml_lines import KeyPath, key_lines

_INDEX = re.compile(r"(?P<name>[^.\[\]]+)\[(?P<n>[1-9][0-9]*)\]")  # servers[2]: the 2nd [[servers]]


class TomlDocument(dict):
    """A parsed TOML document (:func:`parse_toml`) that keeps its ``text`` for :func:`located`."""

    __slots__ = ("text",)

    def __init__(self, values: dict, text: str) -> None:
        super().__init__(values)
        self.text = text



def field_path(field: str) -> KeyPath | None:
    """A field as readers write it (``cluster.seed``, ``servers[2].gpus``, ``gpus``) as a path; None: not one."""
    path: KeyPath = ()
    for part in field.split("."):
        indexed = _INDEX.fullmatch(part)
        if indexed:
            path += (indexed["name"], int(indexed["n"]) - 1)
        elif part and "[" not in part and "]" not in part:
            path += (part,)
        else:
            return None
    return path


def line_of(lines: dict[KeyPath, int | None], field: str) -> int | None:
    """The line of ``field``: its path exactly, else the one key whose path ends so (a bare key of one table);
    None where no key or more than one matches, or a match sits on two lines."""
    path = field_path(field)
    if path is None:
        return None
    if path in lines:
        return lines[path]
    if any(isinstance(part, int) for part in path):  # a table named by its index: that one or none
        return None
    # a key of an array's table only by its index: a bare name may mean a sibling table that lacks it
    ends = [line for key, line in lines.items() if key[-len(path):] == path]
    plain = all(not any(isinstance(part, int) for part in key) for key in lines if key[-len(path):] == path)
    return ends[0] if len(ends) == 1 and plain else None


def locate(exc: InputError, document: object, file: str) -> InputError:
    """``exc`` with the line of its field where it is a key of ``document`` (parsed from ``file`` by
    :func:`parse_toml`) and the error has none; a missing key (``exc.missing``) has no line (it is nowhere)."""
    where, text = exc.where, getattr(document, "text", None)
    if (text is None or type(exc) is not InputError or where.file != file or where.line is not None
            or where.field is None or exc.missing):
        return exc
    try:
        line = line_of(key_lines(text), where.field)
    except (IndexError, ValueError):  # text this scanner misreads: the error as it was, never a worse one
        return exc
    return exc if line is None else exc.at(file=file, line=line, field=where.field)


def table_line(document: object, table: str) -> int | None:
    """The line where a :func:`parse_toml` document's top-level ``table`` begins (its header, or its first key of a
    dotted header such as ``[table.sub]``); None where the document keeps no text or the scanner cannot tell."""
    text = getattr(document, "text", None)
    if text is None:
        return None
    try:
        lines = [line for key, line in key_lines(text).items() if key[0] == table and line is not None]
    except (IndexError, ValueError):  # text this scanner misreads: no line rather than a wrong one
        return None
    return min(lines, default=None)


@contextmanager
def within(file: str, table: str) -> Iterator[None]:
    """Re-raise an error of ``file`` whose field is a bare key as that key of ``table`` (``servers[2]``), so that
    its line is found (:func:`located`) and the message says which table."""
    try:
        yield
    except InputError as exc:
        field = exc.where.field
        if type(exc) is not InputError or exc.where.file != file or field is None or field_path(field) != (field,):
            raise
        raise exc.at(file=file, line=exc.where.line, field=f"{table}.{field}") from None


@contextmanager
def located(document: object, file: str) -> Iterator[None]:
    """Re-raise a value or key error of ``document``'s reading with its key's line (:func:`locate`)."""
    try:
        yield
    except InputError as exc:
        found = locate(exc, document, file)
        if found is exc:
            raise
        raise found from None


_TOML_AT = re.compile(r"(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)", re.DOTALL)


def parse_toml(text: str, file: str) -> dict:
    """``text`` as TOML, or one InputError: bad syntax, nesting too deep, an integer too long. A syntax
    error's line is the error's own (``FILE, line N: …``, as every file error is located); tomllib before
    Python 3.14 gives it only inside its text, ``… (at line N, column C)``, so it is read back from there.
    The document keeps its text, for the line of a key a reader refuses later (:mod:`archsim.toml_lines`). A
    leading byte-order mark (Notepad's "UTF-8 with BOM") is skipped, as every CSV reader skips it."""
    import tomllib

    text = text.removeprefix("\ufeff")
    # SCALE-Sim's section, in a file named .toml: its "key: value" and bare text are no TOML
    cfg = "; it has SCALE-Sim's [architecture_presets]: a .cfg, name it .cfg" if "[architecture_presets]" in text else ""
    try:
        return TomlDocument(tomllib.loads(text), text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_AT.fullmatch(str(exc))
        if found is None:  # e.g. "Unterminated string (at end of document)"
            raise InputError(f"not valid TOML ({exc}){cfg}", file=file) from None
        raise InputError(f"not valid TOML ({found['msg']}, column {found['col']}){cfg}", file=file,
                         line=int(found["line"])) from None
    except RecursionError:
        raise InputError("not valid TOML (nested too deeply)", file=file) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(f"not valid TOML ({exc})", file=file) from None
