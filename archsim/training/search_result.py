"""What a search returns (:class:`SearchResult`): the ranked rows, the rejections counted, the Pareto front
and the twins left out; apart from the search (:mod:`archsim.training.search`) that fills it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, SupportsIndex, cast, overload

from archsim.errors import InputError
from archsim.read_only import ResultDict, plain, read_only

if TYPE_CHECKING:
    import pandas as pd

    from archsim.training.search_rows import RowContext, Setting

# the columns archsim search's CSV heads an empty answer with (no configuration fits): its readers parse a header
EMPTY_COLUMNS = ("tp", "pp", "dp", "micro_batch", "recompute", "schedule", "iteration_seconds")


@dataclass(frozen=True)
class ShardedFits:
    """What Megatron-LM's distributed optimizer would admit of a search it was off in and that costed nothing,
    every configuration out of memory: how many configurations would fit and the smallest one's bytes per GPU
    (:func:`archsim.training.search_note.empty_search_note` names them)."""
    configurations: int
    smallest_bytes: float


def read_only_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[ResultDict, ...]:
    """``rows`` as a tuple of :class:`~archsim.read_only.ResultDict`, each a copy of its row's items, nested dicts and
    lists read-only too (:func:`~archsim.read_only.read_only`: the API results' one rule). A nested container left
    plain was shared with the result's document: editing ``compute_split_seconds`` changed ``to_dict()``."""
    return tuple(read_only(dict(row)) for row in rows)


@dataclass(frozen=True)
class SearchResult:
    rows: Sequence[dict]  # best first; held as a tuple of ResultDict (__post_init__ copies and freezes what is given)
    rejected: Mapping[str, int]  # reason → candidates; held as a ResultDict
    enumerated: int
    costed: int
    pareto: Sequence[dict]  # time vs memory per GPU (or vs the objective), at the rows' times: none other is faster
    #                         and smaller; held read-only as rows
    identical_rows_dropped: int = 0  # configurations left out as alike but for recompute to a row listed
    #                                  (flash: selective prices as none)
    # where every configuration was out of memory without the distributed optimizer and it fits some: how many
    sharded_fits: ShardedFits | None = None
    # --placement planned's note where each kind's servers kept the file's order (leaves told apart would pass a cap)
    orders_note: str | None = None
    # archsim search --format json's document, set by archsim.search (train_json.search_document): what
    # to_dict returns (a plain copy); held read-only at every depth; not compared, as it only restates the fields above
    document: dict | None = field(default=None, compare=False, repr=False)
    # what each row's command says beside the row (global batch, dtype, seq, the model's flags), set with document:
    # train_keywords' settings, the command's
    row_context: RowContext | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """The rows, the front, the rejected counts and the document frozen (:mod:`archsim.read_only`, the rule of
        every API result), so that editing what a search returned is an error, not a result that no longer says what
        was found: the document left plain took ``found.document["meta"][…] = …``, changing ``to_dict()`` and
        ``to_frame()`` (``to_dict()`` is an editable copy)."""
        object.__setattr__(self, "rows", read_only_rows(self.rows))
        object.__setattr__(self, "pareto", read_only_rows(self.pareto))
        object.__setattr__(self, "rejected", ResultDict(self.rejected))
        object.__setattr__(self, "document", read_only(self.document))

    def __repr__(self) -> str:
        """One line, not every row and the whole front (a notebook shows a cell's value by its repr)."""
        best = self.rows[0] if self.rows else {}
        said = "" if "iteration_seconds" not in best else (
            f", best tp {best.get('tp')} × pp {best.get('pp')} × dp {best.get('dp')} micro-batch "
            f"{best.get('micro_batch')} {best.get('schedule')}: {best['iteration_seconds']:.4g} s")
        return (f"SearchResult({len(self.rows)} row{'s' * (len(self.rows) != 1)}{said}; {len(self.pareto)} on the Pareto front; "
                f"{self.enumerated} enumerated, {self.costed} costed; rejected {self.rejected})")

    def __len__(self) -> int:
        """The rows ranked (``len(result.rows)``), as the table results count theirs."""
        return len(self.rows)

    @overload
    def __getitem__(self, index: SupportsIndex) -> ResultDict: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ResultDict, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> ResultDict | tuple[ResultDict, ...]:
        """Row ``index`` (0: the best; a slice: a tuple of rows), read-only, as ``result.rows[index]``: a result
        that has a length is indexed as the sequence of its rows."""
        return cast("tuple[ResultDict, ...]", self.rows)[index]

    def __iter__(self) -> Iterator[ResultDict]:
        """The rows, best first, read-only (``for row in result``, ``list(result)``), as ``iter(result.rows)``."""
        return iter(cast("tuple[ResultDict, ...]", self.rows))

    def to_dict(self) -> dict:
        """The JSON document ``archsim search --format json`` prints for this search (``meta`` and the
        ranked ``rows``; NaN where the CLI prints null): a plain, editable copy at every depth, JSON-safe, of a
        result of ``archsim.search``."""
        if self.document is None:
            raise InputError("only archsim.search's result knows its model and cluster to make archsim search's "
                             "JSON; this one came from archsim.training.search.search", field="to_dict")
        return plain(self.document)

    def to_frame(self) -> pd.DataFrame:
        """The rows ``archsim search --format csv`` prints for this search, as a DataFrame, best first: each
        configuration's columns (its ``command`` too; its compute split one ``part: seconds, …`` cell), then the meta's single values as columns (the rejected
        counts as one ``reason: n, …`` cell; the Pareto front is the rows' ``pareto_optimal``) (imports pandas)."""
        from archsim.outputs import csv_frame
        from archsim.training.table_lines import csv_rows

        document = self.to_dict()
        return csv_frame(rows_frame(csv_rows(document["rows"])), text_meta(document["meta"]))

    def train_keywords(self, index: int = 0) -> dict[str, int | float | str | bool | tuple[int, ...]]:
        """The keywords of :func:`archsim.train` that run row ``index`` (0: the best; −1: the last) again, less ``model``
        and ``cluster``: ``archsim.train(model, cluster=…, **found.train_keywords(0))`` gives the row's iteration
        (its seconds the row's) and timeline. They are the flags of the row's ``command``, each as its keyword
        (``--cp-hierarchy`` → ``cp_hierarchy``), typed as ``train`` takes it, from the same settings the command is
        written from (:func:`~archsim.training.search_rows.train_settings`); the row itself is no set of keywords, as
        it says "none" as an empty text (``cp_comm`` at CP 1, ``stage_layers`` on an even split) ``train`` refuses."""
        from archsim.training.search_rows import train_settings

        if self.document is None or self.row_context is None:
            raise InputError("only archsim.search's result knows the settings its rows' commands name; this one came "
                             "from archsim.training.search.search", field="train_keywords")
        rows = self.document["rows"]
        if not isinstance(index, int) or isinstance(index, bool) or not -len(rows) <= index < len(rows):
            raise InputError(f"expected a row of the search's {len(rows)} (0: the best), got {index!r}", field="index")
        return dict(keyword(setting) for setting in train_settings(rows[index], self.row_context))


def keyword(setting: Setting) -> tuple[str, int | float | str | bool | tuple[int, ...]]:
    """A train line's setting as :func:`archsim.train`'s keyword: ``--x-y`` → ``x_y``, the value as it is."""
    flag, value = setting
    return flag.removeprefix("--").replace("-", "_"), value


def text_meta(meta: dict, digits: int | None = None) -> dict:
    """``archsim search``'s meta as its table and CSV print it: a count per reason (``rejected``) as one
    ``reason: n, …`` line, the Pareto front left out (the CSV's rows say ``pareto_optimal``; the table ends with
    the front's own block); the network's two entries as one line each, as train's table and CSV print them
    (:func:`~archsim.training.table_lines.network_lines`, to ``digits``: the table's ``--precision``)."""
    from archsim.training.table_lines import network_lines

    links = network_lines(meta, digits) if "intra_server" in meta else {}
    return {k: links[k] if k in links else (", ".join(f"{r}: {n}" for r, n in v.items()) if isinstance(v, dict) else v)
            for k, v in meta.items() if k != "pareto"}


def rows_frame(rows: list[dict]) -> pd.DataFrame:
    """A search's rows as the DataFrame its command prints; no row: the header of :data:`EMPTY_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(rows, columns=None if rows else list(EMPTY_COLUMNS))


__all__ = ["EMPTY_COLUMNS", "SearchResult", "ShardedFits", "read_only_rows", "rows_frame", "text_meta"]
