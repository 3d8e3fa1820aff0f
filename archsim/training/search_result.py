"""What a search returns (:class:`SearchResult`): the ranked rows, the rejections counted, the Pareto front
and the twins left out; apart from the search (:mod:`archsim.training.search`) that fills it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, SupportsIndex, cast, overload

from archsim.errors import InputError

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


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError("a search result is read-only; dict(row) is an editable copy of a row, to_dict() of all")


class ReadOnlyDict(dict):
    """A row of a :class:`SearchResult` (one configuration), or its rejected counts: a dict that refuses edits
    (``row["tp"] = 2``, ``update``, ``pop`` … raise ``TypeError``), so a result stays what the search found;
    ``dict(row)`` is an editable copy. Reads, ``==`` with a dict, JSON, pandas, copy and pickle take it as the dict
    it is."""

    __slots__ = ()

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _refuse

    def __reduce__(self) -> tuple[type[ReadOnlyDict], tuple[dict]]:
        """Copied and pickled from a plain dict of its items (unpickling a dict subclass would set them one by one)."""
        return ReadOnlyDict, (dict(self),)

    def __copy__(self) -> ReadOnlyDict:
        return self  # immutable: its own copy

    def __deepcopy__(self, memo: dict) -> ReadOnlyDict:
        import copy

        return ReadOnlyDict(copy.deepcopy(dict(self), memo))


class ReadOnlyList(list):
    """A list inside a row of a :class:`SearchResult` (a per-stage figure, say): refuses edits (``append``,
    ``row["stages"][0] = 2`` … raise ``TypeError``) as its row does; ``==`` with a list, JSON, pandas, copy and
    pickle take it as the list it is, and ``list(value)`` is an editable copy."""

    __slots__ = ()

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[type[ReadOnlyList], tuple[list]]:
        """Copied and pickled from a plain list of its items (unpickling a list subclass would append them)."""
        return ReadOnlyList, (list(self),)

    def __copy__(self) -> ReadOnlyList:
        return self  # immutable: its own copy

    def __deepcopy__(self, memo: dict) -> ReadOnlyList:
        import copy

        return ReadOnlyList(copy.deepcopy(list(self), memo))


def read_only(value: Any) -> Any:
    """``value`` with every dict and list in it, at any depth, a read-only copy (:class:`ReadOnlyDict`,
    :class:`ReadOnlyList`); anything else (numbers, text, tuples of them) as it is. Nested containers are frozen too:
    a row's ``compute_split_seconds`` left a plain dict was shared with the result's document, so editing it changed
    ``to_dict()``, ``to_frame()`` and the command's output."""
    if isinstance(value, dict):
        return ReadOnlyDict({key: read_only(item) for key, item in value.items()})
    if isinstance(value, list):
        return ReadOnlyList(read_only(item) for item in value)
    return value


def read_only_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[ReadOnlyDict, ...]:
    """``rows`` as a tuple of :class:`ReadOnlyDict`, each a copy of its row's items, nested dicts and lists read-only
    copies too (:func:`read_only`)."""
    return tuple(read_only(dict(row)) for row in rows)


@dataclass(frozen=True)
class SearchResult:
    rows: Sequence[dict]  # best first; held as a tuple of ReadOnlyDict (__post_init__ copies and freezes what is given)
    rejected: Mapping[str, int]  # reason → candidates; held as a ReadOnlyDict
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
    # to_dict returns; not compared, as it only restates the fields above
    document: dict | None = field(default=None, compare=False, repr=False)
    # what each row's command says beside the row (global batch, dtype, seq, the model's flags), set with document:
    # train_keywords' settings, the command's
    row_context: RowContext | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """The rows, the front and the rejected counts frozen, so that editing what a search returned is an error,
        not a result that no longer says what was found (``to_dict()`` is an editable copy)."""
        object.__setattr__(self, "rows", read_only_rows(self.rows))
        object.__setattr__(self, "pareto", read_only_rows(self.pareto))
        object.__setattr__(self, "rejected", ReadOnlyDict(self.rejected))

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
    def __getitem__(self, index: SupportsIndex) -> ReadOnlyDict: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ReadOnlyDict, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> ReadOnlyDict | tuple[ReadOnlyDict, ...]:
        """Row ``index`` (0: the best; a slice: a tuple of rows), read-only, as ``result.rows[index]``: a result
        that has a length is indexed as the sequence of its rows."""
        return cast("tuple[ReadOnlyDict, ...]", self.rows)[index]

    def __iter__(self) -> Iterator[ReadOnlyDict]:
        """The rows, best first, read-only (``for row in result``, ``list(result)``), as ``iter(result.rows)``."""
        return iter(cast("tuple[ReadOnlyDict, ...]", self.rows))

    def to_dict(self) -> dict:
        """The JSON document ``archsim search --format json`` prints for this search (``meta`` and the
        ranked ``rows``; NaN where the CLI prints null): a copy, JSON-safe, of a result of ``archsim.search``."""
        import copy

        if self.document is None:
            raise InputError("only archsim.search's result knows its model and cluster to make archsim search's "
                             "JSON; this one came from archsim.training.search.search", field="to_dict")
        return copy.deepcopy(self.document)

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


__all__ = ["EMPTY_COLUMNS", "ReadOnlyDict", "ReadOnlyList", "SearchResult", "ShardedFits", "read_only", "read_only_rows",
           "rows_frame", "text_meta"]
