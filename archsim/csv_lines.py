"""The one rule for ``#`` lines in every CSV archsim reads (runs files, measured runs, topologies, traces,
profiles, shapes, kernel CSVs): a line whose first non-blank character is ``#`` is a comment wherever it
stands — above the header or between rows — and is skipped, each other line keeping its own number; a line
inside a quoted cell that spans lines is that cell's text, as the csv module's quoting reads it. The one
line read despite its ``#`` is vTrain's released header (``# GPUs,global batch,…``), a header by its first
cell; ``# key: value`` lines above a header are comments that a reader may also read as metadata.
:func:`csv_rows`, the CSV row reader of every reader that parses quoted cells, skips them; the line readers
skip them with :func:`comment_line`. A cell that names one of a column's choices is read in any case
(:func:`choice_cell`); names and paths keep theirs. A row of fewer cells than its header's columns is refused
where the format gives no meaning to it (:func:`check_row_length`), not read with its last cells empty."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from archsim.errors import InputError
from archsim.validate import did_you_mean, shown

# the first cell of vTrain's released header (archsim.training.measured.COLUMNS), lower case
VTRAIN_FIRST_CELL = "# gpus"


def comment_line(line: str) -> bool:
    """Whether ``line`` (one physical line of a CSV) is a comment: its first non-blank character is ``#``
    and it is not vTrain's header (module docstring)."""
    text = line.lstrip()
    return text.startswith("#") and text.split(",")[0].strip().lower() != VTRAIN_FIRST_CELL


def choice_cell(cell: str, choices: Sequence[str], *, file: str, line: int, field: str,
                default: str | None = None) -> str:
    """A cell naming one of ``choices``, read in any case as true/false cells are (``Full`` is ``full``,
    ``dg_serial`` is ``DG_serial``) and returned in the choices' own spelling; an empty cell is ``default``
    (where None, refused as any other). An InputError at the cell names every choice, and the one a misspelt
    cell resembles (``ful``: did you mean 'full'?), as a flag's choice is told."""
    text = cell.strip()
    if not text and default is not None:
        return default
    chosen = {choice.casefold(): choice for choice in choices}.get(text.casefold())
    if chosen is None:
        raise InputError(f"expected one of {', '.join(choices)} (any case), got {shown(text)}"
                         f"{did_you_mean(text, choices)}", file=file,
                         line=line, field=field)
    return chosen


def check_row_length(row: Sequence[str], header: Sequence[str], *, file: str, line: int) -> None:
    """Refuse a row of fewer cells than ``header`` names columns (a trailing empty header cell, a spreadsheet's
    empty last column, names none): the cells it lacks would be read as empty, data lost without a word. One line
    naming the row's line and the columns it has no cell for; an empty cell written between commas is a cell."""
    names = list(header)
    while names and not names[-1].strip():
        names.pop()
    if len(row) < len(names):
        check_row_comma_separated(row, len(names), file, line)
        lacking = [name.strip() or f"column {i}" for i, name in enumerate(names[len(row):], start=len(row) + 1)]
        raise InputError(f"{len(row)} cells, the header names {len(names)} columns: no cell for "
                         f"{', '.join(lacking)} (write an empty cell between commas to leave one empty)",
                         file=file, line=line)


def _seeming_separator(cell: str) -> str | None:
    """How a spreadsheet in another locale (or saved as "Text") separated the one cell a reader found: ``';'`` or
    ``tabs``, the one the cell holds more of (a name may hold the other), or None where it holds neither."""
    counts = [(cell.count(mark), name) for mark, name in ((";", "';'"), ("\t", "tabs"))]
    count, name = max(counts, key=lambda pair: pair[0])
    return name if count else None


def check_comma_separated(header: Sequence[str], source: str, line: int) -> None:
    """Refuse a header of one column holding ``;`` or a tab: a spreadsheet's export in another locale (or as
    "Text"), which would otherwise read as one unknown column or too few of them."""
    separator = _seeming_separator(header[0]) if len(header) == 1 else None
    if separator:
        raise InputError(f"the header is one column that seems separated by {separator}; archsim reads "
                         "comma-separated files", file=source, line=line)


def check_row_comma_separated(row: Sequence[str], columns: int, source: str, line: int) -> None:
    """Refuse a row of one cell holding ``;`` or a tab under a header of ``columns`` > 1 columns: a row pasted from
    a spreadsheet's other export under a comma header, which would otherwise read as a row of one field."""
    separator = _seeming_separator(row[0]) if len(row) == 1 and columns > 1 else None
    if separator:
        raise InputError(f"the row is one cell that seems separated by {separator} under a header of {columns} "
                         "comma-separated columns; archsim reads comma-separated files", file=source, line=line)


def csv_rows(text: str, source: str, *, first_line: int = 1, **options) -> list[tuple[int, list[str]]]:
    """(line, row) of every CSV row of ``text`` (a file's text, or its tail from line ``first_line``), a ``#`` comment
    line (:func:`comment_line`) no row; a line that goes on a quoted cell of the row above (the csv module's
    quoting) is that cell's text, whatever it starts with, never a comment; a malformed row — an over-long field, a NUL, an unclosed quote — is an
    InputError at its line."""
    comments: set[int] = set()  # the lines (counted from first_line) that were comments, read as empty
    record_start = [True]  # whether the reader asks for a record's first line, not the rest of a quoted cell

    def lines(stream: Iterable[str]) -> Iterable[str]:
        for number, line in enumerate(stream, start=first_line):
            if record_start[0] and comment_line(line):
                comments.add(number)
                line = ""
            record_start[0] = False  # the reader asks again within one record only inside a quoted cell
            yield line

    # whole text, never split lines: a line break inside a quoted cell is the cell's (str.splitlines drops it)
    reader = csv.reader(lines(io.StringIO(text, newline="")), **options)
    rows: list[tuple[int, list[str]]] = []
    start = first_line
    while True:
        record_start[0] = True
        try:
            row = next(reader)
        except StopIteration:
            return rows
        except csv.Error as exc:
            raise InputError(f"malformed CSV ({exc})", file=source, line=first_line + reader.line_num - 1) from None
        if row or start not in comments:
            rows.append((start, row))
        start = first_line + reader.line_num
