"""The CSV conventions the cluster's input files share (profiles, Tiresias traces): a header naming
exactly the expected columns in any order, blank lines ignored, one error per bad cell naming the
file, line and column."""

from __future__ import annotations

import math

from archsim.csv_lines import check_comma_separated, csv_rows
from archsim.errors import InputError
from archsim.validate import INT32_MAX, check_unique_columns, shown
from archsim.value_parsers import parse_float, stated_integer

MAX_REAL = 1e15  # seconds or bytes in one cell: ~3·10⁷ years, a petabyte


def read_rows(text: str, columns: tuple[str, ...], *, source: str, what: str) -> list[tuple[int, dict[str, str]]]:
    """(line, {column: stripped cell}) for every non-blank row after the header.

    ``what`` names a row in the empty-file message ("layer", "job")."""
    rows = [(i, r) for i, r in csv_rows(text, source) if any(c.strip() for c in r)]
    if not rows:
        raise InputError(f"empty file (expected a header and one row per {what})", file=source)
    header_line, raw_header = rows[0]
    header = [c.strip() for c in raw_header]
    check_unique_columns(header, source, header_line)
    check_comma_separated(header, source, header_line)  # not an unknown column
    for column in header:
        if column not in columns:
            raise InputError(f"unknown column; the columns are {', '.join(columns)}", file=source,
                             line=header_line, field=column)
    for column in columns:
        if column not in header:
            raise InputError("missing column", file=source, line=header_line, field=column, missing=True)
    cells = []
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise InputError(f"expected {len(header)} fields, got {len(row)}", file=source, line=line)
        cells.append((line, dict(zip(header, (c.strip() for c in row)))))
    if not cells:
        raise InputError(f"no {what} rows", file=source)
    return cells


def non_negative(text: str, *, file: str, line: int, field: str, integer: bool = False) -> float:
    """A finite number in 0 … 10¹⁵ (a whole one in 0 … 2³¹ − 1 when ``integer``, that bound stated exactly)."""
    try:
        value = parse_float(text, high=math.inf if integer else MAX_REAL,
                            what="a non-negative whole number" if integer else "a non-negative number")
    except ValueError as exc:
        raise InputError(str(exc), file=file, line=line, field=field) from None
    if not integer:
        return value
    whole = stated_integer(text)  # every CSV's integer cells' reading: 64 and 64.0, not 64.5
    if whole is None and not value.is_integer():
        raise InputError(f"expected a whole number, got {shown(text)}", file=file, line=line, field=field)
    if whole is None or whole > INT32_MAX:
        raise InputError(f"expected a non-negative whole number <= {INT32_MAX}, got {shown(text)}", file=file,
                         line=line, field=field)
    return whole
