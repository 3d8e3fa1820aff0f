"""A job's table and its JSON document together, for the API's table jobs (``archsim.cost``, ``archsim.gemm``,
``archsim.sparse``, ``archsim.plan``): ``table``, the DataFrame the command prints (its columns, indexing and
methods answer on the result too), ``to_dict()``, the document its ``--format json`` prints, and ``to_frame()``,
the rows its ``--format csv`` prints."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from archsim.read_only import plain

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded by the job that builds the table


@dataclass(frozen=True, eq=False)
class TableResult:
    """``table``, a job's rows as the DataFrame its command prints, and ``to_dict()``, the document the command's
    ``--format json`` prints (``meta``: what was computed, on what; ``rows``). The table's columns, indexing and
    methods answer on the result too (``result["cycles"]``, ``result.cycles.sum()``, ``len(result)``,
    ``result.equals(other)``); pass ``result.table`` where a real DataFrame is needed (``pd.concat``)."""

    table: pd.DataFrame
    document: dict = field(repr=False)

    def __post_init__(self) -> None:
        """The document frozen all the way down (:mod:`archsim.read_only`): ``to_dict()`` and ``to_frame()`` are made
        from it, so an edit of ``result.document`` is a ``TypeError`` rather than a changed answer. ``table`` is a
        DataFrame (pandas has no read-only one): an edit of it reaches neither."""
        from archsim.read_only import read_only

        object.__setattr__(self, "document", read_only(self.document))

    @classmethod
    def of(cls, table: pd.DataFrame, meta: dict) -> TableResult:
        """The result of a table and the meta its command prints beside it (rows: the table's records)."""
        return cls(table, {"meta": dict(meta), "rows": table.to_dict(orient="records")})

    @property
    def meta(self) -> dict:
        """The document's ``meta`` (an editable copy): what the command prints above its rows."""
        return plain(self.document["meta"])

    def to_dict(self) -> dict:
        """The JSON document the command's ``--format json`` prints for the same keywords; a copy, NaN as NaN
        (the CLI writes null); editable."""
        return plain(self.document)

    def to_frame(self) -> pd.DataFrame:
        """The rows the command's ``--format csv`` prints for the same keywords, as a DataFrame: the document's rows
        (a cost's TOTAL row too, which ``table`` leaves out), then each single meta value as a column, as
        :func:`archsim.outputs.render` writes them (imports pandas)."""
        from archsim.outputs import csv_frame
        from archsim.rows import Rows

        document = self.to_dict()
        return csv_frame(Rows.of(document["rows"]), document["meta"])

    def equals(self, other: object) -> bool:
        """:meth:`pandas.DataFrame.equals` on the tables (``other`` a result or a DataFrame)."""
        return bool(self.table.equals(other.table if isinstance(other, TableResult) else other))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("table", "document"):  # unpickling asks before the fields exist
            raise AttributeError(name)
        return getattr(self.table, name)

    def __getitem__(self, key: Any) -> Any:
        return self.table[key]

    def __len__(self) -> int:
        return len(self.table)

    def __iter__(self) -> Iterator:
        return iter(self.table)

    def __repr__(self) -> str:
        """One line, not the whole table (a notebook shows a cell's value by its repr; ``print(result)`` and
        ``.table`` show every row): what it is, its size and the headline figure of the table's kind."""
        network = self.document["meta"].get("network")
        what = "" if network is None else f"{network}: "
        rows, columns = self.table.shape
        size = f"{rows} row{'' if rows == 1 else 's'} × {columns} column{'' if columns == 1 else 's'}"
        return f"{type(self).__name__}({what}{size}{self._headline()})"

    def __str__(self) -> str:
        return str(self.table)

    def _headline(self) -> str:
        """The repr's words after the size (a cost's ``", total 205961 cycles"``); a table of no one kind's
        first columns."""
        names = [str(name) for name in self.table.columns]
        return "" if not names else ": " + ", ".join(names[:3]) + (", …" if len(names) > 3 else "")


__all__ = ["TableResult"]
