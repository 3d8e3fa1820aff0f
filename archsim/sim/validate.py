"""An independent check of a Timeline against its Problem (shares no code with the engine)."""

from __future__ import annotations

from collections import defaultdict


def validate_timeline(problem, timeline, tol: float = 1e-9) -> list[str]:
    errors: list[str] = []
    ops = {op.id: op for op in problem.ops}
    streams = {p.name: p.streams for p in problem.processors}
    links = {l.name: l for l in problem.links}
    seen: dict[str, object] = {}
    for slot in timeline.slots:
        if slot.op in seen:
            errors.append(f"op {slot.op} appears twice")
            continue
        seen[slot.op] = slot
        op = ops.get(slot.op)
        if op is None:
            errors.append(f"unknown op {slot.op}")
            continue
        if slot.processor != op.processor:
            errors.append(f"op {slot.op} ran on {slot.processor}, assigned to {op.processor}")
        if not 0 <= slot.stream < streams.get(slot.processor, 0):
            errors.append(f"op {slot.op} on stream {slot.stream} its processor lacks")
        if op.stream is not None and slot.stream != op.stream:
            errors.append(f"op {slot.op} pinned to stream {op.stream} ran on {slot.stream}")
        if abs((slot.end - slot.start) - op.duration) > tol * max(1.0, op.duration) or slot.start < -tol:
            errors.append(f"op {slot.op} lasted {slot.end - slot.start}, expected {op.duration}")
    for op_id in ops:
        if op_id not in seen:
            errors.append(f"op {op_id} never ran")
    lanes = defaultdict(list)
    per_proc = defaultdict(list)
    for slot in seen.values():
        lanes[(slot.processor, slot.stream)].append((slot.start, slot.end, slot.op))
        per_proc[slot.processor].append((slot.start, slot.end))
    for lane, items in lanes.items():
        items.sort()
        for (s1, e1, a), (s2, e2, b) in zip(items, items[1:]):
            if s2 < e1 - tol and e1 - s1 > tol and e2 - s2 > tol:
                errors.append(f"{a} and {b} overlap on {lane[0]} stream {lane[1]}")
    for proc, items in per_proc.items():
        points = sorted([(s, 1) for s, e in items if e - s > tol] + [(e, -1) for s, e in items if e - s > tol],
                        key=lambda x: (x[0], x[1]))
        level = 0
        for _, delta in points:
            level += delta
            if level > streams.get(proc, 1):
                errors.append(f"more than {streams.get(proc, 1)} ops at once on {proc}")
                break
    transfers = defaultdict(list)
    for t in timeline.transfers:
        transfers[(t.src, t.dst, t.link)].append(t)
    by_link = defaultdict(list)
    for t in timeline.transfers:
        by_link[t.link].append((t.start, t.end, f"{t.src}->{t.dst}"))
    for link, items in by_link.items():
        items.sort()
        for (_, e1, a), (s2, _, b) in zip(items, items[1:]):
            if s2 < e1 - tol:
                errors.append(f"transfers {a} and {b} overlap on link {link}")
    for dep in problem.deps:
        src, dst = seen.get(dep.src), seen.get(dep.dst)
        if src is None or dst is None:
            continue
        if dep.link is None:
            if dst.start < src.end - tol:
                errors.append(f"{dep.dst} started at {dst.start} before {dep.src} ended at {src.end}")
            continue
        matches = transfers.get((dep.src, dep.dst, dep.link), [])
        if len(matches) != 1:
            errors.append(f"dependency {dep.src}->{dep.dst} has {len(matches)} transfers on {dep.link}")
            continue
        t = matches[0]
        link = links[dep.link]
        expected = link.latency + dep.bytes / link.bandwidth
        if t.start < src.end - tol or dst.start < t.end - tol:
            errors.append(f"transfer {dep.src}->{dep.dst} not between producer end and consumer start")
        if abs((t.end - t.start) - expected) > tol * max(1.0, expected) or t.bytes != dep.bytes:
            errors.append(f"transfer {dep.src}->{dep.dst} took {t.end - t.start}, expected {expected}")
    return errors


def assert_valid(problem, timeline) -> None:
    errors = validate_timeline(problem, timeline)
    if errors:
        raise AssertionError("invalid timeline:\n" + "\n".join(errors[:20]))
