"""The line of each key of a TOML document, so that a value or key error names it (``FILE, line N, field K``).

tomllib gives values without positions; this scanner reads the (already valid) text once more and maps every
key's full path to its line: ``("cluster", "seed")``, ``("servers", 1, "gpus")`` for the 2nd ``[[servers]]``
table (indices 0-based here, 1-based in a field as written, ``servers[2].gpus``), dotted keys, quoted keys,
keys of inline tables (at their own line), table headers; multi-line strings and arrays are skipped whole. A path
met on two lines (a dotted key's parent table, an array's name) is ambiguous and has no line: a wrong line is
worse than none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

from archsim.errors import InputError

Path = tuple[str | int, ...]
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_INDEX = re.compile(r"(?P<name>[^.\[\]]+)\[(?P<n>[1-9][0-9]*)\]")
_SCALAR_END = re.compile(r"[,\]}#\n]")


class TomlDocument(dict):
    """A parsed TOML document (:func:`archsim.validate.parse_toml`) that keeps its ``text`` for :func:`located`."""

    __slots__ = ("text",)

    def __init__(self, values: dict, text: str) -> None:
        super().__init__(values)
        self.text = text


class _Scan:
    """One pass over valid TOML text: ``lines`` maps each path to its line (None: seen on two lines)."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0
        self.lines: dict[Path, int | None] = {}
        self.arrays: dict[Path, int] = {}  # each array of tables' path → its tables so far

    def line(self) -> int:
        return self.text.count("\n", 0, self.at) + 1

    def record(self, path: Path, line: int) -> None:
        if self.lines.get(path, line) != line:
            self.lines[path] = None
        else:
            self.lines[path] = line

    def skip(self, newlines: bool = False) -> None:
        """Past spaces (and newlines and comments, with ``newlines``: inside arrays and between statements)."""
        while self.at < len(self.text):
            c = self.text[self.at]
            if c in " \t" or (newlines and c in "\r\n"):
                self.at += 1
            elif c == "#" and newlines:
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
            else:
                return

    def string(self) -> str:
        """A quoted string at ``at`` (any of the four kinds), its value; ``at`` past it."""
        text, at = self.text, self.at
        quote = text[at]
        if text.startswith(quote * 3, at):
            end = text.find(quote * 3, at + 3) if quote == "'" else _basic_end(text, at + 3, '"""')
            while text.startswith(quote, end + 3):  # up to two quotes may close the content: """a"""""
                end += 1
            self.at = end + 3
            return text[at + 3:end]
        end = text.find("'", at + 1) if quote == "'" else _basic_end(text, at + 1, '"')
        self.at = end + 1
        raw = text[at + 1:end]
        return raw if quote == "'" or "\\" not in raw else json.loads(f'"{raw}"')  # TOML's escapes are JSON's

    def key(self) -> list[str]:
        """A (dotted, quoted) key at ``at``, its parts."""
        parts = []
        while True:
            self.skip()
            if self.text[self.at] in "\"'":
                parts.append(self.string())
            else:
                bare = _BARE.match(self.text, self.at)
                if bare is None:
                    raise ValueError(f"no key at offset {self.at}")
                parts.append(bare.group())
                self.at = bare.end()
            self.skip()
            if self.text[self.at] != ".":
                return parts
            self.at += 1

    def value(self, path: Path) -> None:
        """Past the value at ``at``: an inline table's keys recorded under ``path``."""
        c = self.text[self.at]
        if c in "\"'":
            self.string()
        elif c in "[{":
            close = "]" if c == "[" else "}"
            self.at += 1
            while True:
                self.skip(newlines=True)
                if self.text[self.at] == close:
                    self.at += 1
                    return
                if self.text[self.at] == ",":
                    self.at += 1
                elif c == "[":
                    self.value(path)
                else:
                    self.pair(path)
        else:  # a number, a date, true or false: up to what ends it
            found = _SCALAR_END.search(self.text, self.at)
            self.at = len(self.text) if found is None else found.start()

    def pair(self, table: Path) -> None:
        """A ``key = value`` at ``at`` in ``table``: the key's path and each dotted parent recorded at its line."""
        line, parts = self.line(), self.key()
        for n in range(1, len(parts) + 1):
            self.record(table + tuple(parts[:n]), line)
        self.at += 1  # the "="
        self.skip()
        self.value(table + tuple(parts))

    def header(self) -> Path:
        """A ``[table]`` or ``[[array]]`` header at ``at``: the path its keys go under, recorded at its line."""
        line, array = self.line(), self.text.startswith("[[", self.at)
        self.at += 2 if array else 1
        parts = self.key()
        self.at += 2 if array else 1
        path: Path = ()
        for n, part in enumerate(parts):
            path += (part,)
            if path in self.arrays and (n < len(parts) - 1 or not array):
                path += (self.arrays[path] - 1,)
        if array:
            self.arrays[path] = self.arrays.get(path, 0) + 1
            path += (self.arrays[path] - 1,)
        self.record(path, line)
        return path

    def document(self) -> dict[Path, int | None]:
        table: Path = ()
        while True:
            self.skip(newlines=True)
            if self.at >= len(self.text):
                return self.lines
            if self.text[self.at] == "[":
                table = self.header()
            else:
                self.pair(table)


def _basic_end(text: str, at: int, quote: str) -> int:
    """Where a basic string's closing ``quote`` starts, from ``at`` (escaped quotes skipped)."""
    while True:
        end = text.find(quote, at)
        backslashes = len(text[:end]) - len(text[:end].rstrip("\\"))
        if backslashes % 2 == 0:
            return end
        at = end + 1


def key_lines(text: str) -> dict[Path, int | None]:
    """Each key's and table's full path in valid TOML ``text`` → its 1-based line (None: on two lines)."""
    return _Scan(text.replace("\r\n", "\n")).document()


def field_path(field: str) -> Path | None:
    """A field as readers write it (``cluster.seed``, ``servers[2].gpus``, ``gpus``) as a path; None: not one."""
    path: Path = ()
    for part in field.split("."):
        indexed = _INDEX.fullmatch(part)
        if indexed:
            path += (indexed["name"], int(indexed["n"]) - 1)
        elif part and "[" not in part and "]" not in part:
            path += (part,)
        else:
            return None
    return path


def line_of(lines: dict[Path, int | None], field: str) -> int | None:
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
    :func:`archsim.validate.parse_toml`) and the error has none; a missing key has no line (it is nowhere)."""
    where, text = exc.where, getattr(document, "text", None)
    if (text is None or type(exc) is not InputError or where.file != file or where.line is not None
            or where.field is None or exc.message.startswith("missing")):
        return exc
    try:
        line = line_of(key_lines(text), where.field)
    except (IndexError, ValueError):  # text this scanner misreads: the error as it was, never a worse one
        return exc
    return exc if line is None else InputError(exc.message, file=file, line=line, field=where.field)


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
        raise InputError(exc.message, file=file, line=exc.where.line, field=f"{table}.{field}") from None


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
