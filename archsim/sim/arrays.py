"""A checked problem as integer-indexed numpy arrays: what the engine and the fast paths read.

Op i is ``problem.ops[i]``, dependency d is ``problem.deps[d]``, processor p is
``problem.processors[p]``, link l is ``problem.links[l]``. :mod:`archsim.sim.columns` checks a
problem's columns and builds these; a cycle is found by :func:`acyclic` (Kahn's pass). Times are
in the problem's unit, bytes are bytes.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from archsim.numba_cache import njit, small_in_python
from archsim.read_only import ResultDict, read_only_array
from archsim.sim.lists import on_lists

# Ops + dependencies up to which a kernel call in a process that has not loaded the kernel runs
# uncompiled: plain Python takes about as long for this many as loading numba and the cached kernel.
PYTHON_WORK = 20_000


@dataclass(frozen=True, eq=False)
class ProblemArrays:
    ids: Sequence[str]     # op i's id (unique)
    proc: np.ndarray       # int64[ops]: processor index
    duration: np.ndarray   # float64[ops]
    pin: np.ndarray        # int64[ops]: pinned stream, -1 when free to run on any
    alloc: np.ndarray      # int64[ops] (float64 when some op allocates a fractional byte count)
    free: np.ndarray       # int64[ops] (likewise)
    streams: np.ndarray    # int64[processors]
    dep_src: np.ndarray    # int64[deps]: op index
    dep_dst: np.ndarray    # int64[deps]: op index
    dep_link: np.ndarray   # int64[deps]: link index, -1 for a free dependency
    dep_bytes: np.ndarray  # int64[deps] (float64 when fractional)
    dep_time: np.ndarray   # float64[deps]: latency + bytes / bandwidth on its link (0 without one)
    acyclic: bool
    edges: tuple[np.ndarray, np.ndarray] | None = None  # out_edges(ops, dep_src) when the cycle check made it

    def __post_init__(self) -> None:
        """Every array a read-only view, the ids a tuple where given as a list: a result's problem keeps saying what
        ran (:mod:`archsim.read_only`'s rule), and the columns it was built from stay the caller's, writeable."""
        for name in _ARRAY_FIELDS:
            object.__setattr__(self, name, read_only_array(getattr(self, name)))
        if self.edges is not None:
            object.__setattr__(self, "edges", tuple(read_only_array(edge) for edge in self.edges))
        if isinstance(self.ids, list):
            object.__setattr__(self, "ids", tuple(self.ids))

    def __reduce__(self) -> tuple:
        """Copied and pickled through the constructor, so a copy's arrays are read-only again (numpy unpickles an
        array writeable)."""
        return ProblemArrays, tuple(getattr(self, f) for f in _FIELDS)

    def out_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """:func:`out_edges` of these dependencies (the cycle check's, reused by the kernel)."""
        return self.edges if self.edges is not None else out_edges(len(self.proc), self.dep_src)

    @cached_property
    def index(self) -> dict[str, int]:
        """Op id → position, made on first use (a problem of 10⁶ ops needs it only for lookups by id); read-only
        (:class:`~archsim.read_only.ResultDict`), as the arrays are."""
        return ResultDict(zip(self.ids, range(len(self.ids))))


_FIELDS = ("ids", "proc", "duration", "pin", "alloc", "free", "streams", "dep_src", "dep_dst", "dep_link", "dep_bytes",
           "dep_time", "acyclic", "edges")
_ARRAY_FIELDS = _FIELDS[1:-2]


@contextmanager
def paused_gc():
    """No cyclic garbage collection inside: passes over 10⁶ objects that create no cycles would
    otherwise trigger collections that re-scan every live object, many times over."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def out_edges(n: int, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of dependencies by source op, in problem order: (ptr[n + 1], dependency positions)."""
    order = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, order


def acyclic(n: int, src: np.ndarray, dst: np.ndarray, edges: tuple[np.ndarray, np.ndarray] | None = None) -> bool:
    """True when the dependencies src[d] → dst[d] over n ops have no cycle (``edges``: their
    :func:`out_edges`, when the caller has it)."""
    if src.size == 0:
        return True
    from archsim.jit import announce_compile

    ptr, order = edges if edges is not None else out_edges(n, src)
    targets = dst[order]
    with small_in_python(_kahn, n + len(src), PYTHON_WORK) as python:
        announce_compile(_kahn, "the event simulator")
        return bool(_kahn_on_lists()(n, ptr.tolist(), targets.tolist()) if python else _kahn(n, ptr, targets))


@functools.cache
def _kahn_on_lists():
    """``_kahn``'s Python code run on lists (:mod:`archsim.sim.lists`)."""
    return on_lists(globals(), ("_kahn",), "_kahn")


@njit(cache=True)
def _kahn(n, ptr, targets):  # pragma: no cover - compiled
    """Kahn's topological pass: True when every op gets removed (no cycle)."""
    indegree = np.zeros(n, dtype=np.int64)
    for t in targets:
        indegree[t] += 1
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for i in range(n):
        if indegree[i] == 0:
            stack[top] = i
            top += 1
    removed = 0
    while top > 0:
        top -= 1
        i = stack[top]
        removed += 1
        for e in range(ptr[i], ptr[i + 1]):
            t = targets[e]
            indegree[t] -= 1
            if indegree[t] == 0:
                stack[top] = t
                top += 1
    return removed == n


__all__ = ["ProblemArrays", "acyclic", "out_edges", "paused_gc"]
