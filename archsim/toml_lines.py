"""The line of each key of a TOML document: tomllib gives values without positions, so the (valid) text is
scanned once more and each key's and table's full path mapped to its line — ``("cluster", "seed")``,
``("servers", 1, "gpus")`` in the 2nd ``[[servers]]``, dotted and quoted keys, an inline table's keys (at their own
line); multi-line strings and arrays skipped whole. A path met on two lines (a dotted key's parent) has none:
a wrong line is worse than none (:mod:`archsim.toml_errors` puts the line in an error)."""

from __future__ import annotations

import json
import re

KeyPath = tuple[str | int, ...]  # a key's tables and names; an int: which table of an array (0-based)
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END = re.compile(r"[,\]}#\n]")


class _Scan:
    """One pass over valid TOML text: ``lines`` maps each path to its line (None: seen on two lines)."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0
        self.lines: dict[KeyPath, int | None] = {}
        self.arrays: dict[KeyPath, int] = {}  # each array of tables' path → its tables so far

    def line(self) -> int:
        return self.text.count("\n", 0, self.at) + 1

    def record(self, path: KeyPath, line: int) -> None:
        self.lines[path] = line if self.lines.get(path, line) == line else None

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

    def value(self, path: KeyPath) -> None:
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

    def pair(self, table: KeyPath) -> None:
        """A ``key = value`` at ``at`` in ``table``: the key's path and each dotted parent recorded at its line."""
        line, parts = self.line(), self.key()
        for n in range(1, len(parts) + 1):
            self.record(table + tuple(parts[:n]), line)
        self.at += 1  # the "="
        self.skip()
        self.value(table + tuple(parts))

    def header(self) -> KeyPath:
        """A ``[table]`` or ``[[array]]`` header at ``at``: the path its keys go under, recorded at its line."""
        line, array = self.line(), self.text.startswith("[[", self.at)
        self.at += 2 if array else 1
        parts = self.key()
        self.at += 2 if array else 1
        path: KeyPath = ()
        for n, part in enumerate(parts):
            path += (part,)
            if path in self.arrays and (n < len(parts) - 1 or not array):
                path += (self.arrays[path] - 1,)
        if array:
            self.arrays[path] = self.arrays.get(path, 0) + 1
            path += (self.arrays[path] - 1,)
        self.record(path, line)
        return path

    def document(self) -> dict[KeyPath, int | None]:
        table: KeyPath = ()
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


def key_lines(text: str) -> dict[KeyPath, int | None]:
    """Each key's and table's full path in valid TOML ``text`` → its 1-based line (None: on two lines)."""
    return _Scan(text.replace("\r\n", "\n")).document()
