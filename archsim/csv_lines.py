"""The one rule for ``#`` lines in every CSV archsim reads (runs files, measured runs, topologies, traces,
profiles, shapes, kernel CSVs): a line whose first non-blank character is ``#`` is a comment wherever it
stands — above the header or between rows — and is skipped, each other line keeping its own number. The one
line read despite its ``#`` is vTrain's released header (``# GPUs,global batch,…``), a header by its first
cell; ``# key: value`` lines above a header are comments that a reader may also read as metadata.
:func:`csv_rows`, the CSV row reader of every reader that parses quoted cells, skips them; the line readers
skip them with :func:`comment_line`."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from archsim.errors import InputError

# the first cell of vTrain's released header (archsim.training.measured.COLUMNS), lower case
VTRAIN_FIRST_CELL = "# gpus"


def comment_line(line: str) -> bool:
    """Whether ``line`` (one physical line of a CSV) is a comment: its first non-blank character is ``#``
    and it is not vTrain's header (module docstring)."""
    text = line.lstrip()
    return text.startswith("#") and text.split(",")[0].strip().lower() != VTRAIN_FIRST_CELL


def csv_rows(text: str | Iterable[str], source: str, *, first_line: int = 1, **options) -> list[tuple[int, list[str]]]:
    """(line, row) of every CSV row of ``text`` (a string, or lines starting at ``first_line``), a ``#`` comment
    line (:func:`comment_line`) no row; a malformed row — an over-long field, a NUL, an unclosed quote — is an
    InputError at its line."""
    comments: set[int] = set()  # the lines (counted from first_line) that were comments, read as empty

    def lines(stream: Iterable[str]) -> Iterable[str]:
        for number, line in enumerate(stream, start=first_line):
            if comment_line(line):
                comments.add(number)
                line = ""
            yield line

    reader = csv.reader(lines(io.StringIO(text, newline="") if isinstance(text, str) else text), **options)
    rows: list[tuple[int, list[str]]] = []
    start = first_line
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return rows
        except csv.Error as exc:
            raise InputError(f"malformed CSV ({exc})", file=source, line=first_line + reader.line_num - 1) from None
        if row or start not in comments:
            rows.append((start, row))
        start = first_line + reader.line_num
