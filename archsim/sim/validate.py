"""An independent check of a Timeline against its Problem.

Written apart from the engine and sharing no code with it (it reads only the plain fields of the
problem and the timeline), so an engine bug cannot hide behind a matching validator bug. Checks:

* every op runs exactly once, for exactly its duration, from a time >= 0, on its processor, on a
  stream that exists there (and on its pinned stream, if pinned);
* no two ops overlap on one (processor, stream), and no more than ``streams`` ops overlap on a
  processor (zero-length ops occupy nothing);
* every dependency holds: dst starts after src ends; for a dep with a link, one transfer of its
  bytes on that link starts after src ends, ends before dst starts, and lasts
  latency + bytes / bandwidth; no transfer exists that no dependency asks for;
* no two transfers overlap on one link.

Times compare with an absolute tolerance ``tol`` scaled by max(1, |value|).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise


def validate_timeline(problem, timeline, tol: float = 1e-9) -> list[str]:
    """Every violation found, one line each (an empty list: the timeline is valid)."""
    errors: list[str] = []
    seen = _check_slots(problem, timeline.slots, tol, errors)
    _check_overlaps(problem, seen, tol, errors)
    _check_deps(problem, seen, timeline.transfers, tol, errors)
    return errors


def assert_valid(problem, timeline, tol: float = 1e-9) -> None:
    """Raise AssertionError listing the violations (the first 20) when the timeline is invalid."""
    errors = validate_timeline(problem, timeline, tol)
    if errors:
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise AssertionError(f"invalid timeline ({len(errors)} violations):\n" + "\n".join(errors[:20]) + more)


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


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
        if not _close(slot.end - slot.start, op.duration, tol):
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
    for proc, items in per_proc.items():
        # An end at t and a start at t do not overlap: ends sort first.
        points = sorted([(s + tol * max(1.0, abs(s)), 1) for s, _ in items] + [(e, -1) for _, e in items])
        level = 0
        for _, delta in points:
            level += delta
            if level > streams.get(proc, 1):
                errors.append(f"more than {streams.get(proc, 1)} ops at once on {proc}")
                break


def _check_deps(problem, seen: dict, transfers, tol: float, errors: list[str]) -> None:
    links = {link.name: link for link in problem.links}
    by_key = defaultdict(list)
    by_link = defaultdict(list)
    for t in transfers:
        by_key[(t.src, t.dst, t.link)].append(t)
        by_link[t.link].append(t)
    wanted = defaultdict(list)
    for dep in problem.deps:
        src, dst = seen.get(dep.src), seen.get(dep.dst)
        if dep.link is not None:
            wanted[(dep.src, dep.dst, dep.link)].append(dep)
        if src is not None and dst is not None and not _before(src.end, dst.start, tol):
            errors.append(f"{dep.dst} started at {dst.start} before {dep.src} ended at {src.end}")
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
                if not _close(t.end - t.start, expected, tol):
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
