"""The reference engine: archsim's original pure-Python list scheduler, kept unchanged as the oracle.

``archsim.sim.engine`` runs the same rules over integer arrays in a numba kernel; the tests
(conftest.py, test_sim_engine_equal.py) require its timelines to equal this one's slot for slot.
The policy classes (what a rank is asked of, not how ops are scheduled) come from the library.

Event-driven, non-delay list scheduling over an op DAG with processors, streams and links, by
the rules stated once in ``archsim.sim.engine``'s docstring (DESIGN.md, "Simulator").

One rule added since (2026-12-05): a :attr:`~archsim.sim.problem.Link.blocking` link's sender keeps its stream
until every transfer it sent on such links has ended (``_held``).

Deterministic: no dict or set order and no clocks matter. Cost: O((ops + deps) log ops), plus
O(streams) per start for pinned ops.
"""

from __future__ import annotations

import heapq

from archsim.errors import InputError
from archsim.sim.engine import Policy, PriorityPolicy
from archsim.sim.problem import Op, Problem
from archsim.sim.timeline import Slot, Timeline, Transfer

_OP_END, _TRANSFER_END = 0, 1


def simulate(problem: Problem, policy: Policy | None = None) -> Timeline:
    """Run ``problem`` under ``policy`` (default :class:`PriorityPolicy`) and return its Timeline."""
    policy = policy if policy is not None else PriorityPolicy()
    ops = problem.ops
    rank = _ranks(ops, policy)
    return _Run(problem, rank).run(getattr(policy, "name", type(policy).__name__))


def _ranks(ops: tuple[Op, ...], policy: Policy) -> list[int]:
    """Each op's place in the policy's order among its processor's ops (0 first), ties by position.

    Keys are compared only among ops of one processor — the only ops that ever compete, for a
    stream or (as consumers) for a link into that processor — so processors may use unlike keys.
    """
    groups: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        groups.setdefault(op.processor, []).append(i)
    rank = [0] * len(ops)
    for processor, members in groups.items():
        keys = {i: policy.key(ops[i]) for i in members}
        try:
            order = sorted(members, key=keys.__getitem__)  # stable: ties keep problem order
        except TypeError as error:
            raise InputError(f"policy {getattr(policy, 'name', policy)!r} gave keys on {processor!r} that do not "
                             f"compare with each other ({error}); use all numbers or all tuples",
                             field="priority") from None
        for place, i in enumerate(order):
            rank[i] = place
    return rank


class _Run:
    """The state of one simulation; integers index ops, processors and links throughout."""

    def __init__(self, problem: Problem, rank: list[int]) -> None:
        self.problem = problem
        self.rank = rank
        proc_index = {p.name: i for i, p in enumerate(problem.processors)}
        link_index = {link.name: i for i, link in enumerate(problem.links)}
        op_index = {op.id: i for i, op in enumerate(problem.ops)}
        self.proc_of = [proc_index[op.processor] for op in problem.ops]
        self.pin = [op.stream for op in problem.ops]
        self.duration = [float(op.duration) for op in problem.ops]
        self.waiting = [0] * len(problem.ops)
        self.consumer = [op_index[dep.dst] for dep in problem.deps]
        # out[i]: (dep position, consumer, link index or -1, transfer time)
        self.out: list[list[tuple[int, int, int, float]]] = [[] for _ in problem.ops]
        for d, dep in enumerate(problem.deps):
            dst = op_index[dep.dst]
            self.waiting[dst] += 1
            if dep.link is None:
                self.out[op_index[dep.src]].append((d, dst, -1, 0.0))
            else:
                link = problem.links[link_index[dep.link]]
                self.out[op_index[dep.src]].append((d, dst, link_index[dep.link], link.transfer_time(dep.bytes)))
        self.streams = [p.streams for p in problem.processors]
        self.free = [list(range(p.streams)) for p in problem.processors]  # kept sorted
        self.ready: list[list[tuple[int, int]]] = [[] for _ in problem.processors]  # (rank, op)
        self.pinned: list[list[list[tuple[int, int]]]] = [[[] for _ in range(p.streams)] for p in problem.processors]
        self.link_queue: list[list[tuple[float, int, int, int, float]]] = [[] for _ in problem.links]
        self.link_busy = [False] * len(problem.links)
        self.events: list[tuple[float, int, int, int, int]] = []  # (time, seq, kind, a, b)
        self.seq = 0
        self.slots: list[tuple[int, int, int, float, float]] = []
        self.transfers: list[tuple[int, int, float, float]] = []  # (dep position, link, start, end)
        self.dirty_procs: set[int] = set()
        self.dirty_links: set[int] = set()
        blocking = [link.blocking for link in problem.links]
        # op → [its transfers on blocking links not yet ended, the stream it keeps meanwhile]
        self._held: dict[int, list[int]] = {}
        for i, out in enumerate(self.out):
            sends = sum(1 for _, _, link, _ in out if link >= 0 and blocking[link])
            if sends:
                self._held[i] = [sends, -1]

    def run(self, policy_name: str) -> Timeline:
        for i, count in enumerate(self.waiting):
            if count == 0:
                self._make_ready(i)
        now = 0.0
        events = self.events
        while True:
            for link in sorted(self.dirty_links):
                self._start_transfer(link, now)
            self.dirty_links.clear()
            for proc in sorted(self.dirty_procs):
                self._dispatch(proc, now)
            self.dirty_procs.clear()
            if not events:
                break
            now = events[0][0]
            while events and events[0][0] <= now:
                _, _, kind, a, b = heapq.heappop(events)
                if kind == _OP_END:
                    self._op_ended(a, b, now)
                else:
                    self.link_busy[b] = False
                    self.dirty_links.add(b)
                    sender = self._sender[a]
                    if sender in self._held:
                        self._release(sender)
                    self._arrived(self.consumer[a])
        if len(self.slots) != len(self.problem.ops):  # pragma: no cover - Problem rejects cycles
            raise RuntimeError("simulation stalled: some ops never became ready")
        return self._timeline(policy_name)

    def _make_ready(self, i: int) -> None:
        proc, pin = self.proc_of[i], self.pin[i]
        queue = self.ready[proc] if pin is None else self.pinned[proc][pin]
        heapq.heappush(queue, (self.rank[i], i))
        self.dirty_procs.add(proc)

    def _arrived(self, consumer: int) -> None:
        self.waiting[consumer] -= 1
        if self.waiting[consumer] == 0:
            self._make_ready(consumer)

    @property
    def _sender(self) -> list[int]:
        """Dependency position → its source op."""
        if not hasattr(self, "_senders"):
            index = {op.id: i for i, op in enumerate(self.problem.ops)}
            self._senders = [index[dep.src] for dep in self.problem.deps]
        return self._senders

    def _release(self, i: int) -> None:
        """One of op i's blocking transfers ended: after the last, its stream is free."""
        held = self._held[i]
        held[0] -= 1
        if held[0] == 0:
            self._free_stream(self.proc_of[i], held[1])

    def _free_stream(self, proc: int, stream: int) -> None:
        free = self.free[proc]
        free.append(stream)
        free.sort()
        self.dirty_procs.add(proc)

    def _op_ended(self, i: int, stream: int, now: float) -> None:
        proc = self.proc_of[i]
        if i in self._held:
            self._held[i][1] = stream  # kept until its blocking sends end
        else:
            self._free_stream(proc, stream)
        for d, consumer, link, seconds in self.out[i]:
            if link < 0:
                self._arrived(consumer)
            else:
                self.seq += 1
                heapq.heappush(self.link_queue[link], (now, self.rank[consumer], self.seq, d, seconds))
                self.dirty_links.add(link)

    def _start_transfer(self, link: int, now: float) -> None:
        queue = self.link_queue[link]
        if self.link_busy[link] or not queue:
            return
        _, _, _, d, seconds = heapq.heappop(queue)
        end = now + seconds
        self.link_busy[link] = True
        self.transfers.append((d, link, now, end))
        self._push(end, _TRANSFER_END, d, link)

    def _dispatch(self, proc: int, now: float) -> None:
        free, ready, pinned = self.free[proc], self.ready[proc], self.pinned[proc]
        while free:
            best, stream = (ready[0][0], -1) if ready else (None, -1)
            for s in free:
                if pinned[s] and (best is None or pinned[s][0][0] < best):
                    best, stream = pinned[s][0][0], s
            if best is None:
                return
            if stream < 0:
                _, i = heapq.heappop(ready)
                stream = next((s for s in free if not pinned[s]), free[0])
            else:
                _, i = heapq.heappop(pinned[stream])
            free.remove(stream)
            end = now + self.duration[i]
            self.slots.append((i, proc, stream, now, end))
            self._push(end, _OP_END, i, stream)

    def _push(self, time: float, kind: int, a: int, b: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (time, self.seq, kind, a, b))

    def _timeline(self, policy_name: str) -> Timeline:
        problem = self.problem
        ids = [op.id for op in problem.ops]
        procs = [p.name for p in problem.processors]
        links = [link.name for link in problem.links]
        deps = problem.deps
        slots = tuple(Slot(ids[i], procs[p], s, start, end) for i, p, s, start, end in self.slots)
        transfers = tuple(Transfer(deps[d].src, deps[d].dst, links[link], deps[d].bytes, start, end)
                          for d, link, start, end in self.transfers)
        return Timeline(slots, transfers, problem, policy_name)
