"""Simulator output: when each op ran where, and each transfer on its link."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Slot:
    op: str
    processor: str
    stream: int
    start: float
    end: float


@dataclass(frozen=True)
class Transfer:
    src: str
    dst: str
    link: str
    bytes: int
    start: float
    end: float


@dataclass(frozen=True)
class Timeline:
    slots: tuple[Slot, ...]
    transfers: tuple[Transfer, ...]
    problem: object = None

    @property
    def makespan(self) -> float:
        ends = [s.end for s in self.slots] + [t.end for t in self.transfers]
        return max(ends, default=0.0)

    def busy_time(self, processor: str) -> float:
        return sum(s.end - s.start for s in self.slots if s.processor == processor)

    def utilization(self) -> dict[str, float]:
        """Busy fraction per processor: Σ op durations / (makespan × streams)."""
        span = self.makespan
        streams = {p.name: p.streams for p in self.problem.processors} if self.problem is not None else {}
        names = sorted({s.processor for s in self.slots} | set(streams))
        return {n: (self.busy_time(n) / (span * streams.get(n, 1)) if span > 0 else 0.0) for n in names}

    def peak_memory(self) -> dict[str, int]:
        """Peak of alloc/free accounting per processor (at equal times, frees before allocs)."""
        ops = {op.id: op for op in self.problem.ops} if self.problem is not None else {}
        events: dict[str, list[tuple[float, int, int]]] = {}
        for s in self.slots:
            op = ops.get(s.op)
            if op is None:
                continue
            if op.alloc_bytes:
                events.setdefault(s.processor, []).append((s.start, 1, op.alloc_bytes))
            if op.free_bytes:
                events.setdefault(s.processor, []).append((s.end, 0, -op.free_bytes))
        peaks = {}
        for proc, items in events.items():
            level = peak = 0
            for _, _, delta in sorted(items):
                level += delta
                peak = max(peak, level)
            peaks[proc] = peak
        return peaks

    def to_frame(self) -> pd.DataFrame:
        ops = {op.id: op for op in self.problem.ops} if self.problem is not None else {}
        rows = []
        for s in self.slots:
            row = {"op": s.op, "processor": s.processor, "stream": s.stream, "start": s.start, "end": s.end}
            if s.op in ops:
                row.update(dict(ops[s.op].tags))
            rows.append(row)
        return pd.DataFrame(rows)
