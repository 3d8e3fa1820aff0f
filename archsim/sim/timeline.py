"""Simulator output: when each op ran on which processor stream, and each transfer on its link.

Times are in the problem's unit (cycles or seconds); bytes are bytes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from archsim.sim.problem import Problem

SLOT_COLUMNS = ("op", "processor", "stream", "start", "end")


@dataclass(frozen=True)
class Slot:
    """Op ``op`` ran on ``processor``'s stream ``stream`` over [start, end)."""

    op: str
    processor: str
    stream: int
    start: float
    end: float


@dataclass(frozen=True)
class Transfer:
    """The bytes of dependency ``src`` -> ``dst`` crossed ``link`` over [start, end)."""

    src: str
    dst: str
    link: str
    bytes: int
    start: float
    end: float


@dataclass(frozen=True)
class Timeline:
    """Slots in start order, transfers in start order, the problem they solve, the policy's name."""

    slots: tuple[Slot, ...]
    transfers: tuple[Transfer, ...]
    problem: Problem | None = None
    policy: str = ""

    @property
    def makespan(self) -> float:
        """The time the last op or transfer ends (0 for an empty timeline)."""
        ends = [s.end for s in self.slots] + [t.end for t in self.transfers]
        return max(ends, default=0.0)

    def busy_time(self, processor: str) -> float:
        """Σ durations of the ops run on ``processor``, over all its streams."""
        return sum(s.end - s.start for s in self.slots if s.processor == processor)

    def utilization(self) -> dict[str, float]:
        """Busy fraction per processor: Σ op durations / (makespan × streams).

        1.0 means every stream was busy the whole makespan; it does not credit two streams running
        at once with more than their share of a device (co-run slowdowns belong to durations).
        """
        span = self.makespan
        busy: dict[str, float] = defaultdict(float)
        for s in self.slots:
            busy[s.processor] += s.end - s.start
        streams = {p.name: p.streams for p in self.problem.processors} if self.problem is not None else {}
        names = list(streams) + sorted(set(busy) - set(streams))
        return {n: busy[n] / (span * streams.get(n, 1)) if span > 0 else 0.0 for n in names}

    def peak_memory(self) -> dict[str, int]:
        """Peak bytes held per processor under the ops' alloc/free accounting.

        An op adds ``alloc_bytes`` at its start and removes ``free_bytes`` at its end. Events at one
        instant apply frees first, then allocs (memory handed back at t is reusable at t), except a
        zero-length op's own free, which follows the allocs of that instant (it did hold its bytes).
        Processors that never allocate report 0. Needs the timeline's problem.
        """
        if self.problem is None:
            raise ValueError("peak_memory needs the Timeline's problem")
        ops = {op.id: op for op in self.problem.ops}
        events: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
        for s in self.slots:
            op = ops[s.op]
            if op.alloc_bytes:
                events[s.processor].append((s.start, 1, op.alloc_bytes))
            if op.free_bytes:
                events[s.processor].append((s.end, 2 if s.end == s.start else 0, -op.free_bytes))
        peaks = {p.name: 0 for p in self.problem.processors}
        for proc, items in events.items():
            level = peak = 0
            for _, _, delta in sorted(items):
                level += delta
                peak = max(peak, level)
            peaks[proc] = peak
        return peaks

    def to_frame(self) -> pd.DataFrame:
        """One row per slot: op, processor, stream, start, end, then one column per tag key."""
        ops = {op.id: op for op in self.problem.ops} if self.problem is not None else {}
        rows = []
        for s in self.slots:
            row: dict[str, object] = {"op": s.op, "processor": s.processor, "stream": s.stream,
                                      "start": s.start, "end": s.end}
            op = ops.get(s.op)
            if op is not None:
                for key, value in op.tags:  # type: ignore[misc]
                    row.setdefault(key, value)
            rows.append(row)
        frame = pd.DataFrame(rows)
        return frame if rows else pd.DataFrame(columns=list(SLOT_COLUMNS))

    def transfers_frame(self) -> pd.DataFrame:
        """One row per transfer: src, dst, link, bytes, start, end."""
        columns = ["src", "dst", "link", "bytes", "start", "end"]
        return pd.DataFrame([[getattr(t, c) for c in columns] for t in self.transfers], columns=columns)
