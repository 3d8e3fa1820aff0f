"""The simulator's event loop as a numba kernel over integer arrays (rules: :mod:`archsim.sim.engine`).

Every queue is a binary heap in a preallocated array region: one ready heap per processor, one per
pinned (processor, stream), one FIFO-by-key queue per link and one event heap. All keys are
unique — ranks are a permutation within a processor, events and link entries carry a sequence
number — so the pop order, and hence the timeline, does not depend on the heap's layout (times
are never NaN: :func:`archsim.sim.columns.check_columns` rejects NaN durations and bytes).
Compiled once per machine (numba's cache next to this file); the first call after an install
says so on stderr. Uncompiled (small problems), the same ``_run`` runs over lists
(:mod:`archsim.sim.lists`) with its keyed heaps on Python's C ``heapq``, which pops the same
entries in the same order since every key is unique.
"""

from __future__ import annotations

import functools
from heapq import heappop, heappush

import numpy as np

from archsim.jit import announce_compile
from archsim.numba_cache import njit, small_in_python
from archsim.sim.arrays import PYTHON_WORK, ProblemArrays
from archsim.sim.lists import on_lists

_OP_END, _TRANSFER_END = 0, 1


def run_arrays(arrays: ProblemArrays, rank: np.ndarray, n_links: int, blocking: np.ndarray | None = None):
    """Slots (op, processor, stream, start, end) in start order and transfers (dep, link, start,
    end) in start order, as arrays. ``blocking`` (bool per link, None: none) marks the links whose
    sender waits for its send: an op with a transfer on one keeps its stream until its last such
    transfer ends (:attr:`archsim.sim.problem.Link.blocking`)."""
    n = len(arrays.proc)
    holds = np.zeros(n, dtype=np.int64)  # per op: its transfers on blocking links, which hold its stream
    if blocking is not None and n and len(arrays.dep_link):
        flags = np.append(np.asarray(blocking, dtype=bool), False)  # index -1 (no link): not blocking
        held = flags[arrays.dep_link]
        holds = np.bincount(arrays.dep_src[held], minlength=n).astype(np.int64)
    ptr, order = arrays.out_edges()
    waiting = np.bincount(arrays.dep_dst, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    stream_base = np.zeros(len(arrays.streams) + 1, dtype=np.int64)
    np.cumsum(arrays.streams, out=stream_base[1:])
    pinned = arrays.pin >= 0
    ready_base = _bases(arrays.proc[~pinned], len(arrays.streams))
    pin_base = _bases(stream_base[arrays.proc[pinned]] + arrays.pin[pinned], int(stream_base[-1]))
    linked = arrays.dep_link >= 0
    link_base = _bases(arrays.dep_link[linked], n_links)
    inputs = (arrays.proc, arrays.pin, arrays.duration, rank, waiting, ptr, order, arrays.dep_src, arrays.dep_dst,
              arrays.dep_link, arrays.dep_time, stream_base, ready_base, pin_base, link_base, holds)
    with small_in_python(_run, n + len(arrays.dep_dst), PYTHON_WORK) as python:
        announce_compile(_run, "the event simulator")
        result = _on_lists()(*(a.tolist() for a in inputs)) if python else _run(*inputs)
    count, s_op, s_proc, s_stream, s_start, s_end, t_count, t_dep, t_link, t_start, t_end = result
    if count != n:  # pragma: no cover - Problem rejects cycles
        raise RuntimeError("simulation stalled: some ops never became ready")
    ints, floats = (lambda a: np.asarray(a, dtype=np.int64)), (lambda a: np.asarray(a, dtype=np.float64))
    return ((ints(s_op), ints(s_proc), ints(s_stream), floats(s_start), floats(s_end)),
            (ints(t_dep[:t_count]), ints(t_link[:t_count]), floats(t_start[:t_count]), floats(t_end[:t_count])))


_KERNELS = ("_rank_push", "_rank_pop", "_less", "_key_push", "_key_pop", "_sort_head", "_mark", "_arrive",
            "_make_ready", "_run")


@functools.cache
def _on_lists():
    """``_run``'s very Python code (and its helpers'), run on lists, its keyed heaps and its sorts on
    Python's C ``heapq`` and ``sorted`` (the same order: every key is unique)."""
    return on_lists(globals(), _KERNELS, "_run", _key_push=_key_push_list, _key_pop=_key_pop_list,
                    _sort_head=_sort_head_list)


def _key_push_list(time, key, seq, a, b, base, size, t, k, s, va, vb):
    """:func:`_key_push` on lists: the region's entries are (t, k, s, va, vb) tuples in one ``heapq``
    list kept at ``key[base]``; ``time``, ``a`` and ``b`` at ``base`` mirror the least entry, all that
    ``_run`` reads (``seq`` stays unused). Keys are unique, so tuples never compare payloads."""
    entry = (t, k, s, va, vb)
    if size == 0:
        key[base] = [entry]
    else:
        heap = key[base]
        heappush(heap, entry)
        if heap[0] is not entry:
            return
    time[base], a[base], b[base] = t, va, vb


def _key_pop_list(time, key, seq, a, b, base, size):
    """:func:`_key_pop` on lists (see :func:`_key_push_list`)."""
    heap = key[base]
    heappop(heap)
    if size > 1:
        t, _, _, va, vb = heap[0]
        time[base], a[base], b[base] = t, va, vb


def _sort_head_list(a, n):
    """:func:`_sort_head` on lists."""
    if n > 1:
        a[:n] = sorted(a[:n])


def _bases(groups: np.ndarray, count: int) -> np.ndarray:
    """Region starts of a flat array holding one heap per group (sized by the group's members)."""
    base = np.zeros(count + 1, dtype=np.int64)
    if count:
        np.cumsum(np.bincount(groups, minlength=count), out=base[1:])
    return base


# --- heaps: parallel key arrays, region [base, base + size) ---------------------------------------

@njit(cache=True, inline="always")
def _rank_push(heap, base, size, op, rank):  # pragma: no cover - compiled
    j = size
    heap[base + j] = op
    while j > 0:
        parent = (j - 1) >> 1
        if rank[heap[base + parent]] <= rank[op]:
            break
        heap[base + j] = heap[base + parent]
        j = parent
    heap[base + j] = op


@njit(cache=True, inline="always")
def _rank_pop(heap, base, size, rank):  # pragma: no cover - compiled
    top = heap[base]
    size -= 1
    last = heap[base + size]
    j = 0
    while True:
        child = 2 * j + 1
        if child >= size:
            break
        if child + 1 < size and rank[heap[base + child + 1]] < rank[heap[base + child]]:
            child += 1
        if rank[last] <= rank[heap[base + child]]:
            break
        heap[base + j] = heap[base + child]
        j = child
    if size > 0:
        heap[base + j] = last
    return top


@njit(cache=True, inline="always")
def _less(t1, k1, s1, t2, k2, s2):  # pragma: no cover - compiled
    if t1 != t2:
        return t1 < t2
    if k1 != k2:
        return k1 < k2
    return s1 < s2


@njit(cache=True, inline="always")
def _key_push(time, key, seq, a, b, base, size, t, k, s, va, vb):  # pragma: no cover - compiled
    """Push (t, k, s) with payload (va, vb) onto the heap keyed by (time, key, seq)."""
    j = size
    while j > 0:
        parent = (j - 1) >> 1
        p = base + parent
        if not _less(t, k, s, time[p], key[p], seq[p]):
            break
        q = base + j
        time[q], key[q], seq[q], a[q], b[q] = time[p], key[p], seq[p], a[p], b[p]
        j = parent
    q = base + j
    time[q], key[q], seq[q], a[q], b[q] = t, k, s, va, vb


@njit(cache=True, inline="always")
def _key_pop(time, key, seq, a, b, base, size):  # pragma: no cover - compiled
    """Remove the least entry (the caller reads it at ``base`` first)."""
    size -= 1
    last = base + size
    t, k, s, va, vb = time[last], key[last], seq[last], a[last], b[last]
    j = 0
    while True:
        child = 2 * j + 1
        if child >= size:
            break
        c = base + child
        if child + 1 < size and _less(time[c + 1], key[c + 1], seq[c + 1], time[c], key[c], seq[c]):
            child += 1
            c += 1
        if not _less(time[c], key[c], seq[c], t, k, s):
            break
        q = base + j
        time[q], key[q], seq[q], a[q], b[q] = time[c], key[c], seq[c], a[c], b[c]
        j = child
    if size > 0:
        q = base + j
        time[q], key[q], seq[q], a[q], b[q] = t, k, s, va, vb


@njit(cache=True, inline="always")
def _sort_head(a, n):  # pragma: no cover - compiled
    """Sort ``a[:n]`` in place (insertion sort: n is a few marked processors or links, and the
    kernel's loop then allocates nothing)."""
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, inline="always")
def _mark(dirty, listed, n, x):  # pragma: no cover - compiled
    """Processor or link ``x`` marked for a look once (``dirty``, listed in ``listed``); the new count of marked."""
    if not dirty[x]:
        dirty[x] = True
        listed[n] = x
        n += 1
    return n


@njit(cache=True, inline="always")
def _arrive(c, waiting, proc_of, pin, rank, ready, ready_base, ready_size, pinned, pin_base, pinned_size, stream_base,
            dirty_proc, dirty_procs, n_dirty_procs):  # pragma: no cover - compiled
    """One dependency of op c is met: when it was the last, c becomes ready (:func:`_make_ready`).
    Returns the new count of marked processors."""
    waiting[c] -= 1
    if waiting[c] == 0:
        n_dirty_procs = _make_ready(c, proc_of, pin, rank, ready, ready_base, ready_size, pinned, pin_base, pinned_size,
                                    stream_base, dirty_proc, dirty_procs, n_dirty_procs)
    return n_dirty_procs


@njit(cache=True, inline="always")
def _make_ready(c, proc_of, pin, rank, ready, ready_base, ready_size, pinned, pin_base, pinned_size, stream_base,
                dirty_proc, dirty_procs, n_dirty_procs):  # pragma: no cover - compiled
    """Op c, its dependencies all met (at the start, or by :func:`_arrive`), joins its processor's ready
    heap (or its pinned stream's) and the processor is marked for a look. Returns the new count of
    marked processors."""
    cp = proc_of[c]
    if pin[c] < 0:
        _rank_push(ready, ready_base[cp], ready_size[cp], c, rank)
        ready_size[cp] += 1
    else:
        g = stream_base[cp] + pin[c]
        _rank_push(pinned, pin_base[g], pinned_size[g], c, rank)
        pinned_size[g] += 1
    n_dirty_procs = _mark(dirty_proc, dirty_procs, n_dirty_procs, cp)
    return n_dirty_procs


@njit(cache=True)
def _run(proc_of, pin, duration, rank, waiting, ptr, out_dep, dep_src, dep_dst, dep_link, dep_time, stream_base,
         ready_base, pin_base, link_base, holds):  # pragma: no cover - compiled
    n = len(proc_of)
    held_stream = np.zeros(max(n, 1), dtype=np.int64)  # the stream an op holding on (holds > 0) ran on
    n_procs = len(stream_base) - 1
    n_links = len(link_base) - 1
    ready = np.empty(max(ready_base[-1], 1), dtype=np.int64)
    ready_size = np.zeros(n_procs, dtype=np.int64)
    pinned = np.empty(max(pin_base[-1], 1), dtype=np.int64)
    pinned_size = np.zeros(max(stream_base[-1], 1), dtype=np.int64)
    free = np.ones(max(stream_base[-1], 1), dtype=np.bool_)
    n_free = np.zeros(n_procs, np.int64)
    for p in range(n_procs):
        n_free[p] = stream_base[p + 1] - stream_base[p]
    m = max(link_base[-1], 1)
    q_time, q_key, q_seq = np.empty(m), np.empty(m, np.int64), np.empty(m, np.int64)
    q_dep, q_dep2 = np.empty(m, np.int64), np.empty(m, np.int64)  # payload: the dependency (twice)
    q_size = np.zeros(max(n_links, 1), dtype=np.int64)
    busy = np.zeros(max(n_links, 1), dtype=np.bool_)
    e_cap = n + link_base[-1] + 1
    e_time, e_kind, e_seq = np.empty(e_cap), np.empty(e_cap, np.int64), np.empty(e_cap, np.int64)
    e_a, e_b = np.empty(e_cap, np.int64), np.empty(e_cap, np.int64)
    e_size = 0
    seq = 0
    s_op, s_proc, s_stream = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    s_start, s_end = np.empty(n), np.empty(n)
    count = 0
    t_cap = max(link_base[-1], 1)
    t_dep, t_link, t_start, t_end = np.empty(t_cap, np.int64), np.empty(t_cap, np.int64), np.empty(t_cap), np.empty(t_cap)
    t_count = 0
    dirty_proc = np.zeros(max(n_procs, 1), dtype=np.bool_)
    dirty_procs = np.empty(max(n_procs, 1), dtype=np.int64)
    n_dirty_procs = 0
    dirty_link = np.zeros(max(n_links, 1), dtype=np.bool_)
    dirty_links = np.empty(max(n_links, 1), dtype=np.int64)
    n_dirty_links = 0

    for i in range(n):
        if waiting[i] == 0:
            n_dirty_procs = _make_ready(i, proc_of, pin, rank, ready, ready_base, ready_size, pinned, pin_base,
                                        pinned_size, stream_base, dirty_proc, dirty_procs, n_dirty_procs)
    now = 0.0
    while True:
        if n_dirty_links:
            _sort_head(dirty_links, n_dirty_links)
            for j in range(n_dirty_links):
                l = dirty_links[j]
                dirty_link[l] = False
                if busy[l] or q_size[l] == 0:
                    continue
                base = link_base[l]
                d = q_dep[base]
                _key_pop(q_time, q_key, q_seq, q_dep, q_dep2, base, q_size[l])
                q_size[l] -= 1
                end = now + dep_time[d]
                busy[l] = True
                t_dep[t_count], t_link[t_count], t_start[t_count], t_end[t_count] = d, l, now, end
                t_count += 1
                seq += 1
                _key_push(e_time, e_kind, e_seq, e_a, e_b, 0, e_size, end, 0, seq, d, l)  # b >= 0: a transfer
                e_size += 1
            n_dirty_links = 0
        if n_dirty_procs:
            _sort_head(dirty_procs, n_dirty_procs)
            for j in range(n_dirty_procs):
                p = dirty_procs[j]
                dirty_proc[p] = False
                sb = stream_base[p]
                while n_free[p] > 0:
                    has_best = ready_size[p] > 0
                    best = rank[ready[ready_base[p]]] if has_best else 0
                    stream = -1
                    for s in range(stream_base[p + 1] - sb):
                        g = sb + s
                        if free[g] and pinned_size[g] > 0:
                            r = rank[pinned[pin_base[g]]]
                            if not has_best or r < best:
                                best, stream, has_best = r, s, True
                    if not has_best:
                        break
                    if stream < 0:
                        i = _rank_pop(ready, ready_base[p], ready_size[p], rank)
                        ready_size[p] -= 1
                        first = -1
                        for s in range(stream_base[p + 1] - sb):
                            if free[sb + s]:
                                if first < 0:
                                    first = s
                                if pinned_size[sb + s] == 0:
                                    stream = s
                                    break
                        if stream < 0:
                            stream = first
                    else:
                        g = sb + stream
                        i = _rank_pop(pinned, pin_base[g], pinned_size[g], rank)
                        pinned_size[g] -= 1
                    free[sb + stream] = False
                    n_free[p] -= 1
                    end = now + duration[i]
                    s_op[count], s_proc[count], s_stream[count], s_start[count], s_end[count] = i, p, stream, now, end
                    count += 1
                    seq += 1
                    _key_push(e_time, e_kind, e_seq, e_a, e_b, 0, e_size, end, 0, seq, i, -1 - stream)  # b < 0: an op
                    e_size += 1
            n_dirty_procs = 0
        if e_size == 0:
            break
        now = e_time[0]
        while e_size > 0 and e_time[0] <= now:
            a, b = e_a[0], e_b[0]
            _key_pop(e_time, e_kind, e_seq, e_a, e_b, 0, e_size)
            e_size -= 1
            if b < 0:  # an op ended on stream -1 - b
                i = a
                p = proc_of[i]
                held_stream[i] = -1 - b
                if holds[i] == 0:  # else a blocking send: the stream stays taken until its transfers end
                    free[stream_base[p] - 1 - b] = True
                    n_free[p] += 1
                    n_dirty_procs = _mark(dirty_proc, dirty_procs, n_dirty_procs, p)
                for e in range(ptr[i], ptr[i + 1]):
                    d = out_dep[e]
                    c = dep_dst[d]
                    l = dep_link[d]
                    if l < 0:
                        n_dirty_procs = _arrive(c, waiting, proc_of, pin, rank, ready, ready_base, ready_size, pinned,
                                                pin_base, pinned_size, stream_base, dirty_proc, dirty_procs,
                                                n_dirty_procs)
                    else:
                        seq += 1
                        _key_push(q_time, q_key, q_seq, q_dep, q_dep2, link_base[l], q_size[l], now, rank[c], seq,
                                  d, d)
                        q_size[l] += 1
                        n_dirty_links = _mark(dirty_link, dirty_links, n_dirty_links, l)
            else:  # a transfer of dependency a ended on link b
                busy[b] = False
                n_dirty_links = _mark(dirty_link, dirty_links, n_dirty_links, b)
                i = dep_src[a]
                if holds[i] > 0:  # a blocking send's transfer: its sender's stream is free after its last one
                    holds[i] -= 1
                    if holds[i] == 0:
                        p = proc_of[i]
                        free[stream_base[p] + held_stream[i]] = True
                        n_free[p] += 1
                        n_dirty_procs = _mark(dirty_proc, dirty_procs, n_dirty_procs, p)
                n_dirty_procs = _arrive(dep_dst[a], waiting, proc_of, pin, rank, ready, ready_base, ready_size, pinned,
                                        pin_base, pinned_size, stream_base, dirty_proc, dirty_procs, n_dirty_procs)
    return count, s_op, s_proc, s_stream, s_start, s_end, t_count, t_dep, t_link, t_start, t_end
