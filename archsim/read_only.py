"""The API results' one rule: what ``archsim.train``, ``train_runs``, ``train_sweep``, ``search``, ``schedule`` and
the table jobs (``cost``, ``gemm``, ``sparse``, ``plan``, ``cluster_jobs``: a ``TableResult``) return is read-only all
the way down, so a result keeps saying what was computed and its ``to_dict()`` / ``to_frame()``, made from the
document saved when it ran, cannot change behind the caller's back. Its dicts and lists are :class:`ResultDict` and
:class:`ResultList`: they read, compare, print as JSON, copy, deep-copy and pickle as the plain containers they are
(a ``types.MappingProxyType`` can be neither pickled nor deep-copied), refuse every edit with a ``TypeError``, and
``dict(x)`` / ``list(x)`` copy one level, :func:`plain` (``to_dict()``) every level. ``archsim.search``'s result
(its rows, front, rejected counts and document: :mod:`archsim.training.search_result`) is held in the same classes."""

from __future__ import annotations

from typing import Any, NoReturn


def refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError("an archsim result is read-only: dict(…) or list(…) is an editable copy of one level, "
                    "to_dict() of the whole document")


class ResultDict(dict):
    """A dict of a result (a row, a meta, a breakdown) that refuses edits (``d["k"] = v``, ``update``, ``pop`` …
    raise ``TypeError``); reads, ``==``, JSON, pandas, copy and pickle take it as the dict it is."""

    __slots__ = ()

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = refuse

    def __reduce__(self) -> tuple[type[ResultDict], tuple[dict]]:
        """Copied and pickled from a plain dict of its items (unpickling a dict subclass would set them one by one)."""
        return ResultDict, (dict(self),)

    def __copy__(self) -> ResultDict:
        return self  # immutable: its own copy

    def __deepcopy__(self, memo: dict) -> ResultDict:
        import copy

        return ResultDict(copy.deepcopy(dict(self), memo))


class ResultList(list):
    """A list of a result (its rows, a per-stage figure) that refuses edits (``append``, ``x[0] = 2``, ``+=`` …
    raise ``TypeError``); reads, ``==`` with a list, JSON, pandas, copy and pickle take it as the list it is."""

    __slots__ = ()

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = refuse
    __iadd__ = __imul__ = refuse

    def __reduce__(self) -> tuple[type[ResultList], tuple[list]]:
        """Copied and pickled from a plain list of its items (unpickling a list subclass would append them)."""
        return ResultList, (list(self),)

    def __copy__(self) -> ResultList:
        return self

    def __deepcopy__(self, memo: dict) -> ResultList:
        import copy

        return ResultList(copy.deepcopy(list(self), memo))


def read_only(value: Any) -> Any:
    """``value`` with every dict and list in it, at any depth, a read-only copy (tuples of them too, kept tuples);
    anything else (numbers, text, frozen dataclasses) as it is. A value already frozen here is returned as is."""
    if isinstance(value, (ResultDict, ResultList)):
        return value  # made by this function: frozen all the way down
    if isinstance(value, dict):
        return ResultDict({key: read_only(item) for key, item in value.items()})
    if isinstance(value, list):
        return ResultList(read_only(item) for item in value)
    if type(value) is tuple:
        return tuple(read_only(item) for item in value)
    return value


def read_only_array(values: Any, dtype: Any = None) -> Any:
    """``values`` as a numpy array (of ``dtype`` where given) that refuses edits: a read-only view, so the array it
    views (a caller's column, the engine's own) is left as it is and nothing is copied where no conversion is needed
    (numpy's ``ValueError: assignment destination is read-only`` on ``column[0] = 0``)."""
    import numpy as np

    column = np.asarray(values, dtype=dtype).view()
    column.flags.writeable = False
    return column


def plain(value: Any) -> Any:
    """``value`` as plain, editable dicts and lists at every depth (``to_dict()``'s copy of a frozen document)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if type(value) is tuple:
        return tuple(plain(item) for item in value)
    if value is None or isinstance(value, (str, int, float)):
        return value
    import copy

    return copy.deepcopy(value)  # anything else a document holds, copied as to_dict() always copied it


__all__ = ["ResultDict", "ResultList", "plain", "read_only", "read_only_array", "refuse"]
