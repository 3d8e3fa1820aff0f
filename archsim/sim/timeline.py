"""Simulator output: when each op ran on which processor stream, and each transfer on its link.

Times are in the problem's unit (cycles or seconds); bytes are bytes. The engine hands back its
slots and transfers as :class:`SlotTable` / :class:`TransferTable` — sequences of :class:`Slot`
and :class:`Transfer` kept as integer-indexed arrays, made into objects only when read one by
one — so a timeline of 10⁶ ops costs arrays, not 10⁶ objects; the summaries below read the arrays.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np

from archsim.read_only import read_only_array

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used

    from archsim.sim.problem import Problem, Tags

SLOT_COLUMNS = ("op", "processor", "stream", "start", "end")


@dataclass(frozen=True, slots=True)
class Slot:
    """Op ``op`` ran on ``processor``'s stream ``stream`` over [start, end)."""

    op: str
    processor: str
    stream: int
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Transfer:
    """The bytes of dependency ``src`` -> ``dst`` crossed ``link`` over [start, end)."""

    src: str
    dst: str
    link: str
    bytes: int
    start: float
    end: float


Record = TypeVar("Record")


class _Table(Sequence[Record]):
    """A read-only sequence of records stored as columns; equal to the tuple of its records. Its columns are
    read-only arrays and it is immutable (``slots.start[0] = 0`` and ``slots.start = …`` are refused), as a
    :class:`~archsim.sim.problem.Problem` is, also once copied or unpickled."""

    problem: Problem
    _names: tuple[str, ...]  # its columns' attribute names, in _columns' order
    _columns: tuple[np.ndarray, ...]

    def _set_columns(self, columns: dict[str, np.ndarray]) -> None:
        for name in self._names:
            object.__setattr__(self, name, columns[name])
        object.__setattr__(self, "_columns", tuple(columns[name] for name in self._names))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __setstate__(self, state: dict) -> None:
        """Copied or unpickled with its columns read-only again (numpy restores an unpickled array writeable)."""
        object.__setattr__(self, "problem", state["problem"])
        self._set_columns({name: read_only_array(state[name], state[name].dtype) for name in self._names})

    def __len__(self) -> int:
        return len(self._columns[0])

    def _make(self, row: tuple) -> Record:  # pragma: no cover - overridden
        raise NotImplementedError

    def __getitem__(self, item):
        if isinstance(item, slice):
            return tuple(self._make(row) for row in zip(*(c[item].tolist() for c in self._columns)))
        return self._make(tuple(c[item].item() for c in self._columns))

    def __iter__(self):
        return (self._make(row) for row in zip(*(c.tolist() for c in self._columns)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, _Table)):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other):
        return tuple(self) + tuple(other)

    def __radd__(self, other):
        return tuple(other) + tuple(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"


class SlotTable(_Table[Slot]):
    """Slots as arrays: op index, processor index, stream, start, end (in the problem's order)."""

    _names = SLOT_COLUMNS
    op: np.ndarray
    processor: np.ndarray
    stream: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __init__(self, problem: Problem, op, processor, stream, start, end) -> None:
        object.__setattr__(self, "problem", problem)
        self._set_columns({"op": read_only_array(op, np.int64), "processor": read_only_array(processor, np.int64),
                           "stream": read_only_array(stream, np.int64), "start": read_only_array(start, np.float64),
                           "end": read_only_array(end, np.float64)})

    def _make(self, row: tuple) -> Slot:
        i, p, stream, start, end = row
        return Slot(self.problem.arrays.ids[i], self.problem.processors[p].name, stream, start, end)


class TransferTable(_Table[Transfer]):
    """Transfers as arrays: dependency index, link index, start, end (in the problem's order)."""

    _names = ("dep", "link", "start", "end")
    dep: np.ndarray
    link: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __init__(self, problem: Problem, dep, link, start, end) -> None:
        object.__setattr__(self, "problem", problem)
        self._set_columns({"dep": read_only_array(dep, np.int64), "link": read_only_array(link, np.int64),
                           "start": read_only_array(start, np.float64), "end": read_only_array(end, np.float64)})

    def _make(self, row: tuple) -> Transfer:
        d, link, start, end = row
        a = self.problem.arrays
        return Transfer(a.ids[a.dep_src[d]], a.ids[a.dep_dst[d]], self.problem.links[link].name, a.dep_bytes[d].item(),
                        start, end)


@dataclass(frozen=True)
class Timeline:
    """Slots in start order, transfers in start order, the problem they solve, the policy's name and the times'
    unit where the caller knows it (``cycles``, ``seconds``, ``units``; "" where not: the engine is unit-agnostic);
    ``processor_layers``: a schedule's (``archsim.schedule``) network layers each processor holds, comma-joined, in
    the problem's processor order (None for one not known: unit-cost or per-stage stages, a network), which makes
    :meth:`to_frame` add the columns every schedule family shares (None: not a schedule's timeline)."""

    slots: Sequence[Slot]  # a tuple, or the engine's SlotTable
    transfers: Sequence[Transfer]  # a tuple, or the engine's TransferTable
    problem: Problem | None = None
    policy: str = ""
    unit: str = ""
    processor_layers: tuple[str | None, ...] | None = None

    def _tables(self) -> tuple[SlotTable, TransferTable, Problem] | None:
        """Slots, transfers and problem when slots and transfers are the engine's arrays, of this
        timeline's problem (the fast paths read them); None otherwise."""
        slots, transfers, problem = self.slots, self.transfers, self.problem
        if (isinstance(slots, SlotTable) and isinstance(transfers, TransferTable) and problem is not None
                and slots.problem is problem and transfers.problem is problem):
            return slots, transfers, problem
        return None

    def __repr__(self) -> str:
        """One line: the policy, the slots, transfers and processors counted and the makespan in the timeline's
        unit (the dataclass's repr named neither the makespan nor, on tuples of slots, stayed short)."""
        processors = "" if self.problem is None else f" on {len(self.problem.processors)} processors"
        unit = f" {self.unit}" if self.unit else " (unit not stated)"
        end = self.makespan
        shown = f"{end:,.0f}" if float(end).is_integer() and abs(end) < 1e15 else f"{end:.6g}"  # cycles: whole
        return (f"Timeline({self.policy or 'unnamed'}: {len(self.slots)} slots, {len(self.transfers)} transfers"
                f"{processors}; makespan {shown}{unit})")

    @property
    def makespan(self) -> float:
        """The time the last op or transfer ends (0 for an empty timeline), in the timeline's ``unit``."""
        tables = self._tables()
        if tables is not None:
            ends = [float(t.end.max()) for t in tables[:2] if len(t)]
            return max(ends, default=0.0)
        ends = [s.end for s in self.slots] + [t.end for t in self.transfers]
        return max(ends, default=0.0)

    def busy_time(self, processor: str) -> float:
        """Σ durations of the ops run on ``processor``, over all its streams."""
        tables = self._tables()
        if tables is not None:  # the same sum, in slot order, over the arrays
            slots, _, problem = tables
            names = [p.name for p in problem.processors]
            if processor not in names:
                return 0
            mine = slots.processor == names.index(processor)
            return sum((slots.end[mine] - slots.start[mine]).tolist())
        return sum(s.end - s.start for s in self.slots if s.processor == processor)

    def utilization(self) -> dict[str, float]:
        """Busy fraction per processor: Σ op durations / (makespan × streams).

        1.0 means every stream was busy the whole makespan; it does not credit two streams running
        at once with more than their share of a device (co-run slowdowns belong to durations).
        """
        span = self.makespan
        busy: dict[str, float] = defaultdict(float)
        tables = self._tables()
        if tables is not None:  # bincount adds in slot order, as the loop below does
            slots, _, problem = tables
            names = [p.name for p in problem.processors]
            sums = np.bincount(slots.processor, weights=slots.end - slots.start, minlength=len(names))
            busy.update({names[p]: float(sums[p]) for p in np.unique(slots.processor).tolist()})
        else:
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
        tables = self._tables()
        if tables is not None:
            return _peak_memory(tables[2], tables[0])
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
        """One row per slot: op, processor, stream, start, end, then one column per tag key; ``attrs["unit"]``: the
        times' unit where the timeline knows it (the columns keep their names, which callers index). A schedule's
        timeline (``processor_layers`` given) adds ``device`` and ``layers`` (:func:`schedule_labels`), so the
        layer-wise and the stage schedules' frames share op, kind, microbatch, device, layers, start and end."""
        import pandas as pd

        ops = {op.id: op for op in self.problem.ops} if self.problem is not None else {}
        labels = schedule_labels(self.problem, self.processor_layers) \
            if self.processor_layers is not None and self.problem is not None else None
        rows = []
        for s in self.slots:
            row: dict[str, object] = {"op": s.op, "processor": s.processor, "stream": s.stream,
                                      "start": s.start, "end": s.end}
            op = ops.get(s.op)
            if op is not None:
                for key, value in cast("Tags", op.tags):  # Op.__post_init__ made them pairs
                    row.setdefault(key, value)
            if labels is not None:
                device, layers = labels[s.processor]
                row["device"] = device
                row["layers"] = row["layer"] if row.get("layer") is not None else (
                    layers if row.get("stage") is not None else None)
            rows.append(row)
        frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(SLOT_COLUMNS))
        if self.unit:
            frame.attrs["unit"] = self.unit
        return frame

    def transfers_frame(self) -> pd.DataFrame:
        """One row per transfer: src, dst, link, bytes, start, end; ``attrs["unit"]``: the times' unit where the
        timeline knows it, as :meth:`to_frame`'s."""
        import pandas as pd

        columns = ["src", "dst", "link", "bytes", "start", "end"]
        frame = pd.DataFrame([[getattr(t, c) for c in columns] for t in self.transfers], columns=columns)
        if self.unit:
            frame.attrs["unit"] = self.unit
        return frame


def schedule_labels(problem: Problem, processor_layers: Sequence[str | None]) -> dict[str, tuple[int | None, str | None]]:
    """Per processor name, its ``device`` (0-based, in the problem's order, counting devices only: a processor that
    runs ops of kind ``S``, data parallel's network, is none, as :func:`archsim.sim.bubble.bubble` counts) and the
    layers it holds (``processor_layers``, by processor index). Why: the layer-wise schedules name devices d1 …,
    the published stage schedules ranks r0 …, their ``list-*`` versions stages s1 …; one 0-based index compares them.
    An op's ``layers`` (:meth:`Timeline.to_frame`) is its own ``layer`` tag where it has one (a layer-wise op), else
    its processor's layers where it is a stage's (a ``stage`` tag; a chunk of an interleaved or V schedule is an
    equal share of its device's stage), else None (a flush barrier)."""
    kinds = problem.tag_values("kind")
    networks = {problem.processors[p].name for p, kind in zip(problem.arrays.proc.tolist(), kinds) if kind == "S"}
    labels: dict[str, tuple[int | None, str | None]] = {}
    device = 0
    for index, processor in enumerate(problem.processors):
        layers = processor_layers[index] if index < len(processor_layers) else None
        if processor.name in networks:
            labels[processor.name] = (None, layers)
        else:
            labels[processor.name] = (device, layers)
            device += 1
    return labels


def _peak_memory(problem: Problem, slots: SlotTable) -> dict[str, int]:
    """Timeline.peak_memory over arrays: the same events, sorted the same way, summed in order."""
    arrays = problem.arrays
    i = slots.op
    alloc, free = arrays.alloc[i], arrays.free[i]
    a, f = alloc != 0, free != 0
    proc = np.concatenate([slots.processor[a], slots.processor[f]])
    time = np.concatenate([slots.start[a], slots.end[f]])
    code = np.concatenate([np.ones(int(a.sum()), dtype=np.int64), np.where(slots.end[f] == slots.start[f], 2, 0)])
    delta = np.concatenate([alloc[a], -free[f]])
    order = np.lexsort((delta, code, time, proc))
    proc, delta = proc[order], delta[order]
    bounds = np.searchsorted(proc, np.arange(len(problem.processors) + 1))
    peaks = {p.name: 0 for p in problem.processors}
    for p, name in enumerate(peaks):
        if bounds[p + 1] > bounds[p]:
            top = np.cumsum(delta[bounds[p]:bounds[p + 1]]).max()
            if top > 0:
                peaks[name] = top.item()
    return peaks
