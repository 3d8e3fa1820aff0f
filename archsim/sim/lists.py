"""A numba kernel's very code run uncompiled over Python lists (below a kernel's ``PYTHON_WORK``).

Uncompiled, a list's items read and write 3-4× faster than an array's (numpy boxes every scalar),
with the same IEEE doubles. :func:`on_lists` rebinds a kernel and the kernels it calls to a
namespace whose ``np`` is :class:`ListNumpy`; a few helpers may be swapped for list versions
that give the same results faster (:mod:`archsim.sim.kernel`'s heaps on the C ``heapq``).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable


class ListNumpy:
    """The numpy names the kernels use, over Python lists."""

    int64, float64, bool_ = int, float, bool

    @staticmethod
    def empty(n: int, dtype: type = float) -> list:
        return [dtype()] * n

    zeros = empty

    @staticmethod
    def ones(n: int, dtype: type = float) -> list:
        return [dtype(1)] * n


def on_lists(namespace: dict, kernels: Iterable[str], entry: str, **swapped: Callable) -> Callable:
    """``namespace[entry]``'s Python code over lists: each of ``kernels`` (numba's dispatcher or a lazy
    kernel, both holding ``py_func``) rebound to a copy of ``namespace`` whose ``np`` is
    :class:`ListNumpy`, and ``swapped`` replacing the named helpers there."""
    names = dict(namespace, np=ListNumpy)
    for name in kernels:
        code = namespace[name].py_func.__code__
        names[name] = types.FunctionType(code, names, name)
    names.update(swapped)
    return names[entry]


__all__ = ["ListNumpy", "on_lists"]
