"""A checked problem as integer-indexed numpy arrays: what the engine and the fast paths read.

Op i is ``problem.ops[i]``, dependency d is ``problem.deps[d]``, processor p is
``problem.processors[p]``, link l is ``problem.links[l]``. :func:`index_problem` builds the arrays
in a few list comprehensions and vectorized checks (no per-op Python objects besides the id
index) and answers None when any op or dependency is malformed, so that the caller's slower
per-item checks can name the first mistake; a cycle is reported by ``acyclic`` (Kahn's pass).
Times are in the problem's unit, bytes are bytes.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from archsim.numba_cache import njit


@dataclass(frozen=True, eq=False)
class ProblemArrays:
    index: dict            # op id → position
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


def _number_array(values: list, kinds: str = "iuf") -> np.ndarray | None:
    """int64 when every value is an integer, float64 when some are floats; None otherwise."""
    try:
        array = np.array(values) if values else np.zeros(0, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None
    if array.ndim != 1 or array.dtype.kind not in kinds:
        return None
    return array.astype(np.int64 if array.dtype.kind in "iu" else np.float64, copy=False)


def index_problem(processors, links, ops, deps) -> ProblemArrays | None:
    """The arrays of a problem whose processors and links are already checked, or None when an op
    or dependency breaks a rule of :class:`~archsim.sim.problem.Problem` (its checks say which)."""
    proc_index = {p.name: i for i, p in enumerate(processors)}
    link_index = {link.name: i for i, link in enumerate(links)}
    streams = np.array([p.streams for p in processors], dtype=np.int64)
    ids = [op.id for op in ops]
    index = {op_id: i for i, op_id in enumerate(ids)}
    if len(index) != len(ids):
        return None
    try:
        proc = np.array([proc_index[op.processor] for op in ops], dtype=np.int64)
        duration = np.array([op.duration for op in ops], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return None
    if duration.size and not (np.isfinite(duration).all() and (duration >= 0).all()):
        return None
    pins = [op.stream for op in ops]
    pin = _number_array([-1 if s is None else s for s in pins], "iu")
    alloc = _number_array([op.alloc_bytes for op in ops])
    free = _number_array([op.free_bytes for op in ops])
    if pin is None or alloc is None or free is None:
        return None
    n = len(ids)
    if n and ((pin < -1).any() or int((pin == -1).sum()) != pins.count(None) or (pin >= streams[proc]).any()
              or (alloc < 0).any() or (free < 0).any()):
        return None
    try:
        dep_src = np.array([index[dep.src] for dep in deps], dtype=np.int64)
        dep_dst = np.array([index[dep.dst] for dep in deps], dtype=np.int64)
    except (KeyError, TypeError):
        return None
    dep_bytes = _number_array([dep.bytes for dep in deps])
    if dep_bytes is None or (dep_bytes < 0).any():
        return None
    try:
        dep_link = np.array([-1 if dep.link is None else link_index[dep.link] for dep in deps], dtype=np.int64)
    except (KeyError, TypeError):
        return None
    dep_time = np.zeros(len(deps))
    linked = np.flatnonzero(dep_link >= 0)
    if linked.size:
        link_src = np.array([proc_index[link.src] for link in links], dtype=np.int64)
        link_dst = np.array([proc_index[link.dst] for link in links], dtype=np.int64)
        lk = dep_link[linked]
        if (link_src[lk] != proc[dep_src[linked]]).any() or (link_dst[lk] != proc[dep_dst[linked]]).any():
            return None
        for d in linked.tolist():  # Link.transfer_time itself, so the arithmetic is the one documented there
            dep_time[d] = links[dep_link[d]].transfer_time(deps[d].bytes)
    acyclic = _acyclic(n, dep_src, dep_dst)
    return ProblemArrays(index, proc, duration, pin, alloc, free, streams, dep_src, dep_dst, dep_link, dep_bytes,
                         dep_time, acyclic)


def out_edges(n: int, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of dependencies by source op, in problem order: (ptr[n + 1], dependency positions)."""
    order = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, order


def _acyclic(n: int, src: np.ndarray, dst: np.ndarray) -> bool:
    if src.size == 0:
        return True
    from archsim.jit import announce_compile

    ptr, order = out_edges(n, src)
    announce_compile(_kahn, "the event simulator")
    return _kahn(n, ptr, dst[order])


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


__all__ = ["ProblemArrays", "index_problem", "out_edges"]
