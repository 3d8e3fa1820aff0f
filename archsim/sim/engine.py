"""Event-driven, non-delay list scheduling over an op DAG with processors, streams and links.

Whenever a stream of a processor is free and ops assigned there are ready, the one the policy
ranks first starts (lowest key; ties by the op's position in the problem). A dependency with a
link becomes a transfer that starts when its producer ends and the link is free (links serve
transfers in the order they became ready, ties by the consumer's rank). Deterministic.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Protocol

from archsim.sim.problem import Problem
from archsim.sim.timeline import Slot, Timeline, Transfer


class Policy(Protocol):
    name: str

    def key(self, op) -> object: ...


class PriorityPolicy:
    """Rank by ``op.priority`` (tuples compare lexicographically)."""

    name = "priority"

    def key(self, op) -> object:
        return op.priority


def simulate(problem: Problem, policy: Policy | None = None) -> Timeline:
    policy = policy or PriorityPolicy()
    ops = problem.ops
    position = {op.id: i for i, op in enumerate(ops)}
    rank = {op.id: (policy.key(op), position[op.id]) for op in ops}
    streams = {p.name: p.streams for p in problem.processors}
    links = {l.name: l for l in problem.links}
    waiting = defaultdict(int)
    out_deps = defaultdict(list)
    for dep in problem.deps:
        waiting[dep.dst] += 1
        out_deps[dep.src].append(dep)
    free_streams = {name: list(range(count)) for name, count in streams.items()}
    for name in free_streams:
        heapq.heapify(free_streams[name])
    ready_any = defaultdict(list)  # processor → heap of (rank, op id)
    ready_pinned = defaultdict(list)  # (processor, stream) → heap
    link_queue = defaultdict(list)  # link → heap of (ready time, consumer rank, seq, dep)
    link_free = {name: True for name in links}
    events: list = []  # (time, seq, kind, payload)
    seq = 0
    slots: list[Slot] = []
    transfers: list[Transfer] = []

    def make_ready(op_id: str) -> None:
        op = ops[position[op_id]]
        if op.stream is None:
            heapq.heappush(ready_any[op.processor], (rank[op_id], op_id))
        else:
            heapq.heappush(ready_pinned[(op.processor, op.stream)], (rank[op_id], op_id))

    for op in ops:
        if waiting[op.id] == 0:
            make_ready(op.id)

    now = 0.0
    while True:
        # start transfers on idle links
        for name, queue in link_queue.items():
            if link_free[name] and queue:
                _, _, _, dep = heapq.heappop(queue)
                link = links[name]
                end = now + link.transfer_time(dep.bytes)
                link_free[name] = False
                transfers.append(Transfer(dep.src, dep.dst, name, dep.bytes, now, end))
                seq += 1
                heapq.heappush(events, (end, seq, "transfer", dep))
        # dispatch ready ops onto free streams
        for proc, free in free_streams.items():
            while free:
                candidates = []
                if ready_any[proc]:
                    candidates.append((ready_any[proc][0], None))
                for stream in free:
                    if ready_pinned[(proc, stream)]:
                        candidates.append((ready_pinned[(proc, stream)][0], stream))
                if not candidates:
                    break
                (_, op_id), pinned = min(candidates)
                if pinned is None:
                    heapq.heappop(ready_any[proc])
                    stream = heapq.heappop(free)
                else:
                    heapq.heappop(ready_pinned[(proc, pinned)])
                    free.remove(pinned)
                    heapq.heapify(free)
                    stream = pinned
                op = ops[position[op_id]]
                end = now + op.duration
                slots.append(Slot(op_id, proc, stream, now, end))
                seq += 1
                heapq.heappush(events, (end, seq, "op", (op_id, stream)))
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] <= now:
            _, _, kind, payload = heapq.heappop(events)
            if kind == "op":
                op_id, stream = payload
                heapq.heappush(free_streams[ops[position[op_id]].processor], stream)
                for dep in out_deps[op_id]:
                    if dep.link is None:
                        waiting[dep.dst] -= 1
                        if waiting[dep.dst] == 0:
                            make_ready(dep.dst)
                    else:
                        seq += 1
                        heapq.heappush(link_queue[dep.link], (now, rank[dep.dst], seq, dep))
            else:
                dep = payload
                link_free[dep.link] = True
                waiting[dep.dst] -= 1
                if waiting[dep.dst] == 0:
                    make_ready(dep.dst)
    if len(slots) != len(ops):  # pragma: no cover - Problem rejects cycles, so this cannot happen
        raise RuntimeError("simulation stalled: some ops never became ready")
    return Timeline(tuple(slots), tuple(transfers), problem)
