"""An independent check of a Timeline against its Problem.

Written apart from the engine and sharing no code with it (it reads only the problem's checked
columns, ``problem.arrays``, and links, and the timeline), so an engine bug cannot hide behind a
matching validator bug. Checks:

* every op runs exactly once, for exactly its duration, from a time >= 0, on its processor, on a
  stream that exists there (and on its pinned stream, if pinned);
* no two ops overlap on one (processor, stream), and no more than ``streams`` ops overlap on a
  processor (zero-length ops occupy nothing);
* every dependency holds: dst starts after src ends; for a dep with a link, one transfer of its
  bytes on that link starts after src ends, ends before dst starts, and lasts
  latency + bytes / bandwidth; no transfer exists that no dependency asks for;
* no two transfers overlap on one link.

Times compare with an absolute tolerance ``tol`` scaled by max(1, |value|); a duration (end − start) by the
largest of its start, end and expected length, as the difference of two times late in a run carries their
rounding (a 47/3-cycle op starting at 7e8 lasts 15.6666666269…, 4e-8 short).

Two passes: :func:`quick_check` runs every rule as numpy array operations and, when it finds
nothing, the timeline is valid; otherwise the per-item checks below run and name every
violation. quick_check accepts exactly what the per-item checks accept (tested on mutated
timelines).
"""

from __future__ import annotations

import gc
from collections import defaultdict
from itertools import pairwise

import numpy as np


def validate_timeline(problem, timeline, tol: float = 1e-9) -> list[str]:
    """Every violation found, one line each (an empty list: the timeline is valid)."""
    enabled = gc.isenabled()
    gc.disable()  # passes over every op create no cycles (see archsim.sim.arrays.paused_gc)
    try:
        if quick_check(problem, timeline, tol):
            return []
    finally:
        if enabled:
            gc.enable()
    return full_check(problem, timeline, tol)


def full_check(problem, timeline, tol: float = 1e-9) -> list[str]:
    """The per-item checks: every violation, one line each."""
    errors: list[str] = []
    seen = _check_slots(problem, timeline.slots, tol, errors)
    _check_overlaps(problem, seen, tol, errors)
    _check_dep_order(problem, seen, tol, errors)
    _check_transfers(problem, seen, timeline.transfers, tol, errors)
    return errors


def quick_check(problem, timeline, tol: float = 1e-9) -> bool:
    """True when the timeline breaks no rule, decided over arrays (no message on failure)."""
    a = problem.arrays  # the problem's own columns, as checked when it was built
    procs = {p.name: i for i, p in enumerate(problem.processors)}
    streams = np.append(a.streams, 0)
    slots = timeline.slots
    if _is_table(slots, problem):
        op, proc, stream = slots.op, slots.processor, slots.stream
        start, end = slots.start, slots.end
    else:
        index = a.index
        op = np.array([index.get(s.op, -1) for s in slots], dtype=np.int64)
        proc = np.array([procs.get(s.processor, -1) for s in slots], dtype=np.int64)
        try:
            stream = np.array([s.stream for s in slots], dtype=np.int64)
            start = np.array([s.start for s in slots], dtype=np.float64)
            end = np.array([s.end for s in slots], dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            return False
    n = len(a.ids)
    if len(op) != n or (n and ((op < 0).any() or (proc < 0).any() or (np.bincount(op, minlength=n) != 1).any())):
        return False
    if n == 0:
        return len(timeline.transfers) == 0
    op_proc, duration, pin = a.proc, a.duration, a.pin
    length = end - start
    if ((op_proc[op] != proc).any() or (stream < 0).any() or (stream >= streams[proc]).any()
            or ((pin[op] >= 0) & (pin[op] != stream)).any()
            or not _spans_close(start, end, duration[op], tol) or not _all_before(np.zeros_like(start), start, tol)):
        return False
    busy = length > tol
    if not _lanes_ok(proc[busy], stream[busy], start[busy], end[busy], tol):
        return False
    if not concurrency_ok(proc[busy], start[busy], end[busy], streams, tol):
        return False
    src, dst = a.dep_src, a.dep_dst
    slot_of = np.empty(n, dtype=np.int64)
    slot_of[op] = np.arange(n)
    if not _all_before(end[slot_of[src]], start[slot_of[dst]], tol):
        return False
    return _transfers_quick(problem, timeline, start[slot_of], end[slot_of], tol)


def _transfers_quick(problem, timeline, op_start, op_end, tol: float) -> bool:
    """The transfer rules over arrays: the transfers, sorted by (src, dst, link, bytes, start), pair
    one to one with the link dependencies sorted by (src, dst, link, bytes) — the pairing the
    per-item checks make — and each pair is on time and lasts latency + bytes / bandwidth; no two
    transfers of non-zero length overlap on a link."""
    a = problem.arrays
    links = {link.name: i for i, link in enumerate(problem.links)}
    latency = np.array([link.latency for link in problem.links] + [0.0], dtype=np.float64)
    bandwidth = np.array([link.bandwidth for link in problem.links] + [1.0], dtype=np.float64)
    linked = np.flatnonzero(a.dep_link >= 0)
    transfers = timeline.transfers
    if not len(linked) and not len(transfers):
        return True
    want = (a.dep_src[linked], a.dep_dst[linked], a.dep_link[linked])
    want_bytes = a.dep_bytes[linked].astype(np.float64)
    if getattr(transfers, "problem", None) is problem and hasattr(transfers, "dep"):
        # the engine's table: a transfer names its dependency, whose ends and bytes are read from the problem
        d = transfers.dep
        if len(d) and ((d < 0).any() or (d >= len(a.dep_link)).any()):
            return False
        got = (a.dep_src[d], a.dep_dst[d], transfers.link)
        got_bytes, start, end = a.dep_bytes[d].astype(np.float64), transfers.start, transfers.end
    else:
        index = a.index
        try:
            found = np.array([(index.get(t.src, -1), index.get(t.dst, -1), links.get(t.link, -1), t.bytes, t.start,
                               t.end) for t in transfers], dtype=np.float64).reshape(-1, 6)
        except (TypeError, ValueError):
            return False
        if (np.abs(found[:, :3]) > 2**62).any():
            return False
        got = (found[:, 0].astype(np.int64), found[:, 1].astype(np.int64), found[:, 2].astype(np.int64))
        got_bytes, start, end = found[:, 3], found[:, 4], found[:, 5]
    if len(want[0]) != len(got[0]) or any((column < 0).any() for column in got):
        return False
    if (np.abs(want_bytes) > 2**53).any() or (np.abs(got_bytes) > 2**53).any():  # bytes not exact as floats
        return False
    mine, theirs = _row_order(want, (want_bytes,)), _row_order(got, (got_bytes, start))
    if not (all((w[mine] == g[theirs]).all() for w, g in zip(want, got))
            and (want_bytes[mine] == got_bytes[theirs]).all()):
        return False
    src, dst, link = (column[mine] for column in want)
    start, end = start[theirs], end[theirs]
    expected = latency[link] + want_bytes[mine] / bandwidth[link]
    if not (_spans_close(start, end, expected, tol) and _all_before(op_end[src], start, tol)
            and _all_before(end, op_start[dst], tol)):
        return False
    order = np.lexsort((end, start, link))
    link, start, end = link[order], start[order], end[order]
    both = (link[1:] == link[:-1]) & (end[:-1] - start[:-1] > tol) & (end[1:] - start[1:] > tol)
    return _all_before(end[:-1][both], start[1:][both], tol)


def _row_order(ids: tuple[np.ndarray, ...], rest: tuple[np.ndarray, ...]) -> np.ndarray:
    """The rows' lexicographic order over the non-negative integer columns ``ids``, then ``rest``: the
    id columns packed into one integer key when it fits in 62 bits (one sort key instead of three:
    the same order, a third of the work on 10⁶ transfers)."""
    spans = [int(column.max()) + 1 if len(column) else 1 for column in ids]
    if float(np.prod(np.array(spans, dtype=np.float64))) < 2.0**62:
        key = np.zeros(len(ids[0]), dtype=np.int64)
        for column, span in zip(ids, spans):
            key = key * span + column
        return np.lexsort((*rest[::-1], key))
    return np.lexsort((*rest[::-1], *ids[::-1]))


def _is_table(slots, problem) -> bool:
    return getattr(slots, "problem", None) is problem and hasattr(slots, "op") and hasattr(slots, "start")


def _scale(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))


def _spans_close(start: np.ndarray, end: np.ndarray, expected: np.ndarray, tol: float) -> bool:
    """Each [start, end) lasts ``expected`` up to ``tol`` scaled by the largest of |start|, |end| and the length
    (:func:`_span_close` over arrays)."""
    scale = np.maximum(_scale(end - start, expected), np.maximum(np.abs(start), np.abs(end)))
    return bool((np.abs((end - start) - expected) <= tol * scale).all())


def _all_before(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    return bool((a <= b + tol * _scale(a, b)).all())


def _lanes_ok(proc, stream, start, end, tol: float) -> bool:
    """No two busy slots overlap on one (processor, stream): sorted by start, each ends in time."""
    order = _row_order((proc, stream), (start, end))
    proc, stream, start, end = proc[order], stream[order], start[order], end[order]
    same = (proc[1:] == proc[:-1]) & (stream[1:] == stream[:-1])
    a, b = end[:-1][same], start[1:][same]
    return _all_before(a, b, tol)


def concurrency_ok(proc, start, end, streams, tol: float) -> bool:
    """At most ``streams`` busy slots at once per processor (an end at t and a start at t do not
    overlap: starts are nudged by the tolerance). With each processor's nudged starts A and ends B
    sorted apart, more than k slots are ever open exactly when A[i + k] < B[i] for some i — the
    sweep over start and end points that the per-item check runs, without sorting the 2n points.
    Times in the timeline's unit (seconds); ``tol`` relative. Public: a test checks it equals that sweep."""
    if proc.size == 0:
        return True
    nudged = start + tol * np.maximum(1.0, np.abs(start))
    by_start = np.lexsort((nudged, proc))
    proc, nudged, ends = proc[by_start], nudged[by_start], end[np.lexsort((end, proc))]
    first = np.flatnonzero(np.concatenate(([True], proc[1:] != proc[:-1])))  # each processor's first slot
    size = np.diff(np.append(first, proc.size))
    k = streams[proc[first]]
    local = np.arange(proc.size) - np.repeat(first, size)
    group_k, group_size = np.repeat(k, size), np.repeat(size, size)
    check = np.flatnonzero(local + group_k < group_size)  # slots with a (k)-th successor on their processor
    return bool((nudged[check + group_k[check]] >= ends[check]).all())


def assert_valid(problem, timeline, tol: float = 1e-9) -> None:
    """Raise AssertionError listing the violations (the first 20) when the timeline is invalid."""
    errors = validate_timeline(problem, timeline, tol)
    if errors:
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise AssertionError(f"invalid timeline ({len(errors)} violations):\n" + "\n".join(errors[:20]) + more)


def _span_close(start: float, end: float, expected: float, tol: float) -> bool:
    """[start, end) lasts ``expected`` up to ``tol`` scaled by the largest of |start|, |end| and the length: end −
    start carries the rounding of times late in a run, whatever the length."""
    return abs((end - start) - expected) <= tol * max(1.0, abs(start), abs(end), abs(end - start), abs(expected))


def _before(a: float, b: float, tol: float) -> bool:
    """a <= b up to the tolerance."""
    return a <= b + tol * max(1.0, abs(a), abs(b))


def _check_slots(problem, slots, tol: float, errors: list[str]) -> dict:
    ops = {op.id: op for op in problem.ops}
    streams = {p.name: p.streams for p in problem.processors}
    seen: dict = {}
    for slot in slots:
        op = ops.get(slot.op)
        if op is None:
            errors.append(f"slot for unknown op {slot.op}")
            continue
        if slot.op in seen:
            errors.append(f"op {slot.op} appears twice")
            continue
        seen[slot.op] = slot
        if slot.processor != op.processor:
            errors.append(f"op {slot.op} ran on {slot.processor}, assigned to {op.processor}")
        if not 0 <= slot.stream < streams.get(slot.processor, 0):
            errors.append(f"op {slot.op} ran on stream {slot.stream}, which {slot.processor} lacks")
        if op.stream is not None and slot.stream != op.stream:
            errors.append(f"op {slot.op} pinned to stream {op.stream} ran on stream {slot.stream}")
        if not _span_close(slot.start, slot.end, op.duration, tol):
            errors.append(f"op {slot.op} lasted {slot.end - slot.start}, expected {op.duration}")
        if not _before(0.0, slot.start, tol):
            errors.append(f"op {slot.op} started at {slot.start}, before time 0")
    errors.extend(f"op {op_id} never ran" for op_id in ops if op_id not in seen)
    return seen


def _check_overlaps(problem, seen: dict, tol: float, errors: list[str]) -> None:
    streams = {p.name: p.streams for p in problem.processors}
    lanes = defaultdict(list)
    per_proc = defaultdict(list)
    for slot in seen.values():
        if slot.end - slot.start <= tol:
            continue
        lanes[(slot.processor, slot.stream)].append((slot.start, slot.end, slot.op))
        per_proc[slot.processor].append((slot.start, slot.end))
    for (proc, stream), items in lanes.items():
        items.sort()
        for (_, end, a), (start, _, b) in pairwise(items):
            if not _before(end, start, tol):
                errors.append(f"ops {a} and {b} overlap on {proc} stream {stream}")
    for proc, spans in per_proc.items():
        # An end at t and a start at t do not overlap: ends sort first.
        marks = sorted([(s + tol * max(1.0, abs(s)), 1) for s, _ in spans] + [(e, -1) for _, e in spans])
        level = 0
        for _, delta in marks:
            level += delta
            if level > streams.get(proc, 1):
                errors.append(f"more than {streams.get(proc, 1)} ops at once on {proc}")
                break


def _check_dep_order(problem, seen: dict, tol: float, errors: list[str]) -> None:
    for dep in problem.deps:
        src, dst = seen.get(dep.src), seen.get(dep.dst)
        if src is not None and dst is not None and not _before(src.end, dst.start, tol):
            errors.append(f"{dep.dst} started at {dst.start} before {dep.src} ended at {src.end}")


def _check_transfers(problem, seen: dict, transfers, tol: float, errors: list[str]) -> None:
    links = {link.name: link for link in problem.links}
    by_key = defaultdict(list)
    by_link = defaultdict(list)
    for t in transfers:
        by_key[(t.src, t.dst, t.link)].append(t)
        by_link[t.link].append(t)
    wanted = defaultdict(list)
    for dep in problem.deps:
        if dep.link is not None:
            wanted[(dep.src, dep.dst, dep.link)].append(dep)
    for key in sorted(set(by_key) - set(wanted)):
        errors.append(f"transfer {key[0]}->{key[1]} on {key[2]} that no dependency asks for")
    for key, deps in wanted.items():
        found = sorted(by_key.get(key, []), key=lambda t: (t.bytes, t.start))
        deps = sorted(deps, key=lambda d: d.bytes)
        src_id, dst_id, link_name = key
        if len(found) != len(deps):
            errors.append(f"dependency {src_id}->{dst_id} on {link_name}: {len(found)} transfers, "
                          f"expected {len(deps)}")
            continue
        link = links.get(link_name)
        src, dst = seen.get(src_id), seen.get(dst_id)
        for dep, t in zip(deps, found):
            if t.bytes != dep.bytes:
                errors.append(f"transfer {src_id}->{dst_id} moved {t.bytes} bytes, expected {dep.bytes}")
            if link is not None:
                expected = link.latency + dep.bytes / link.bandwidth
                if not _span_close(t.start, t.end, expected, tol):
                    errors.append(f"transfer {src_id}->{dst_id} took {t.end - t.start}, expected {expected}")
            if src is not None and not _before(src.end, t.start, tol):
                errors.append(f"transfer {src_id}->{dst_id} started at {t.start} before {src_id} ended")
            if dst is not None and not _before(t.end, dst.start, tol):
                errors.append(f"transfer {src_id}->{dst_id} arrived at {t.end} after {dst_id} started")
    for name, items in by_link.items():
        if name not in links:
            errors.append(f"transfer on unknown link {name}")
            continue
        items = sorted(items, key=lambda t: (t.start, t.end))
        for a, b in pairwise(items):
            if a.end - a.start > tol and b.end - b.start > tol and not _before(a.end, b.start, tol):
                errors.append(f"transfers {a.src}->{a.dst} and {b.src}->{b.dst} overlap on link {name}")
