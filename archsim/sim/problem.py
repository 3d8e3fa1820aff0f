"""Simulator input: processors (with streams), links, ops with durations, dependencies.

Everything here is unit-agnostic: durations and latencies are floats in one time unit of the
caller's choosing (cycles, seconds), bandwidth is bytes per that unit. A :class:`Problem` checks
itself when built, so the engine and every policy can trust it; a mistake raises
:class:`~archsim.errors.InputError` naming the field.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from archsim.errors import InputError
from archsim.read_only import read_only_array
from archsim.sim.arrays import ProblemArrays, paused_gc
from archsim.sim.columns import Column, DepColumns, OpColumns, check_columns, object_columns

Tags = tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Processor:
    """A compute resource running up to ``streams`` ops at once (e.g. a GPU's CUDA streams)."""

    name: str
    streams: int = 1


@dataclass(frozen=True)
class Link:
    """A serial channel from processor ``src`` to ``dst``: b bytes hold it for latency + b / bandwidth. ``blocking``:
    its sender waits for its send, the op that sends keeping its stream until the transfer ends (a rank whose next
    pass waits on the send's request, as Megatron-LM's non-interleaved 1F1B does); False: the stream is free when the
    op ends and the transfer runs beside what follows."""

    name: str
    src: str
    dst: str
    bandwidth: float
    latency: float = 0.0
    blocking: bool = False

    def transfer_time(self, size: int) -> float:
        return self.latency + size / self.bandwidth


@dataclass(frozen=True, slots=True)
class Op:
    """One unit of work on one processor.

    priority: the default policy's key — lower runs first; tuples compare lexicographically, so
        all ops of a problem need mutually comparable priorities (all numbers or all tuples).
    stream: pin to this stream of the processor; None runs on any free stream.
    alloc_bytes / free_bytes: memory taken on the processor when the op starts / given back when
        it ends (activation stashes); see :meth:`Timeline.peak_memory`.
    tags: labels for reports and policies (layer, kind F/G/D, microbatch, stage). A mapping is
        accepted and stored as a tuple of (key, value) pairs so the op stays hashable.
    """

    id: str
    processor: str
    duration: float
    priority: tuple | float = 0
    stream: int | None = None
    alloc_bytes: int = 0
    free_bytes: int = 0
    tags: Tags | Mapping[str, object] = ()

    def __post_init__(self) -> None:
        tags = self.tags
        if type(tags) is not tuple:  # the common case skips the (slow) ABC check
            if isinstance(tags, Mapping):
                object.__setattr__(self, "tags", tuple(tags.items()))
            elif not isinstance(tags, tuple):
                object.__setattr__(self, "tags", tuple(tuple(pair) for pair in tags))
        if type(self.priority) is not tuple and isinstance(self.priority, list):
            object.__setattr__(self, "priority", tuple(self.priority))

    def tag(self, key: str, default: object = None) -> object:
        for name, value in cast(Tags, self.tags):  # __post_init__ made them pairs
            if name == key:
                return value
        return default


@dataclass(frozen=True, slots=True)
class Dep:
    """``dst`` starts only after ``src`` ends; with a ``link``, ``bytes`` cross it in between.

    A dep without a link costs nothing, even between processors.
    """

    src: str
    dst: str
    bytes: int = 0
    link: str | None = None


class Problem:
    """A checked op DAG over processors and links (any iterables are stored as tuples).

    Built from Op and Dep objects, ``Problem(processors, links, ops, deps)``, or from columns,
    :meth:`from_arrays`, which is how policies of 10⁶ ops build theirs: both are checked by the
    same array rules (:mod:`archsim.sim.columns`), and a problem built from columns makes its
    ``ops`` and ``deps`` objects only when a caller reads them (reports, Gantt charts, tags).
    Immutable; equal problems have equal processors, links, ops and deps.
    """

    def __init__(self, processors: Iterable[Processor], links: Iterable[Link], ops: Iterable[Op],
                 deps: Iterable[Dep]) -> None:
        all_processors, all_links, all_ops, all_deps = tuple(processors), tuple(links), tuple(ops), tuple(deps)
        procs = _check_processors(all_processors)
        found = _check_links(all_links, procs)
        with paused_gc():
            op_columns, dep_columns = object_columns(all_processors, all_links, all_ops, all_deps)
            arrays = check_columns(all_processors, all_links, op_columns, dep_columns, named=(all_ops, all_deps))
        self._set(all_processors, all_links, procs, found, arrays, all_ops, all_deps, None)

    @classmethod
    def from_arrays(cls, processors: Iterable[Processor], links: Iterable[Link], ops: OpColumns,
                    deps: DepColumns) -> Problem:
        """A problem from columns (op and link positions as integers), checked by the same rules."""
        processors, links = tuple(processors), tuple(links)
        procs = _check_processors(processors)
        found = _check_links(links, procs)
        with paused_gc():
            arrays = check_columns(processors, links, ops, deps)
        self = cls.__new__(cls)
        self._set(processors, links, procs, found, arrays, None, None, ops)
        return self

    def _set(self, processors, links, procs, found, arrays, ops, deps, columns) -> None:
        for name, value in (("processors", processors), ("links", links), ("_procs", procs), ("_links", found),
                            ("_arrays", arrays), ("_ops", ops), ("_deps", deps), ("_columns", columns)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Problem is immutable; cannot set {name!r}")

    processors: tuple[Processor, ...]
    links: tuple[Link, ...]
    _procs: dict[str, Processor]
    _links: dict[str, Link]
    _arrays: ProblemArrays
    _ops: tuple[Op, ...] | None  # made from the columns on first use
    _deps: tuple[Dep, ...] | None
    _columns: OpColumns | None  # the columns it was built from (from_arrays)

    @property
    def ops(self) -> tuple[Op, ...]:
        """The ops as objects (made from the columns on first use when built by :meth:`from_arrays`)."""
        ops = self._ops
        if ops is None:
            ops = self._make_ops()
            object.__setattr__(self, "_ops", ops)
        return ops

    @property
    def deps(self) -> tuple[Dep, ...]:
        deps = self._deps
        if deps is None:
            a = self.arrays
            names = [link.name for link in self.links] + [None]
            ids = a.ids
            deps = tuple(Dep(ids[s], ids[d], size, names[link]) for s, d, size, link in
                         zip(a.dep_src.tolist(), a.dep_dst.tolist(), a.dep_bytes.tolist(), a.dep_link.tolist()))
            object.__setattr__(self, "_deps", deps)
        return deps

    @property
    def arrays(self) -> ProblemArrays:
        """The problem as integer-indexed numpy arrays (op i is ``ops[i]``), built once when checked."""
        return self._arrays

    @property
    def priorities(self) -> Column | None:
        """Each op's priority, in problem order; None when every op's is 0 (columns without priorities)."""
        if self._columns is not None:
            return _frozen(self._columns.priority)
        return [op.priority for op in self.ops]

    def tag_values(self, key: str, default: object = None) -> Column:
        """Each op's tag ``key`` (``default`` where it has none), in problem order, without making the ops."""
        if self._columns is not None and self._ops is None:
            for name, column in self._columns.tags:
                if name == key:
                    return _frozen(column) if default is None else [default if v is None else v for v in column]
            return [default] * len(self.arrays.ids)
        return [op.tag(key, default) for op in self.ops]

    def op(self, op_id: str) -> Op:
        return self.ops[self.arrays.index[op_id]]

    def processor(self, name: str) -> Processor:
        return self._procs[name]

    def link(self, name: str) -> Link:
        return self._links[name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return self is other or (self.processors, self.links, self.ops, self.deps) == (
            other.processors, other.links, other.ops, other.deps)

    def __hash__(self) -> int:
        return hash((self.processors, self.links, self.ops, self.deps))

    def __repr__(self) -> str:
        a = self.arrays
        return (f"Problem({len(self.processors)} processors, {len(self.links)} links, {len(a.ids)} ops, "
                f"{len(a.dep_src)} deps)")

    def _make_ops(self) -> tuple[Op, ...]:
        a, columns = self.arrays, self._columns
        assert columns is not None  # a problem built from objects has its ops already
        names = [p.name for p in self.processors]
        priority: Iterable[Any] = columns.priority if columns.priority is not None else itertools.repeat(0)
        if isinstance(priority, np.ndarray):  # rows of integer keys are tuples
            priority = map(tuple, priority.tolist()) if priority.ndim == 2 else priority.tolist()
        keys = [key for key, _ in columns.tags]
        rows = zip(*(_plain(column) for _, column in columns.tags)) if keys else itertools.repeat(())
        with paused_gc():
            return tuple(Op(i, names[p], d, pr, None if s < 0 else s, al, fr,
                            tuple((key, value) for key, value in zip(keys, tags) if value is not None))
                         for i, p, d, pr, s, al, fr, tags in
                         zip(a.ids, a.proc.tolist(), a.duration.tolist(), priority, a.pin.tolist(), a.alloc.tolist(),
                             a.free.tolist(), rows))


def _frozen(column):
    """A column the problem holds as it hands it out: a numpy one a read-only view (the problem's stays as built)."""
    return read_only_array(column) if isinstance(column, np.ndarray) else column


def _plain(column: Column) -> list:
    """A column as Python values (numpy scalars become ints, floats, strings)."""
    return column.tolist() if isinstance(column, np.ndarray) else list(column)


def _check_processors(processors: Iterable[Processor]) -> dict[str, Processor]:
    procs: dict[str, Processor] = {}
    for p in processors:
        if p.name in procs:
            raise InputError(f"duplicate processor name {p.name!r}", field="processors")
        if not isinstance(p.streams, int) or p.streams < 1:
            raise InputError(f"processor {p.name!r} needs at least one stream, got {p.streams!r}", field="streams")
        procs[p.name] = p
    return procs


def _check_links(links: Iterable[Link], procs: Mapping[str, Processor]) -> dict[str, Link]:
    found: dict[str, Link] = {}
    for link in links:
        if link.name in found:
            raise InputError(f"duplicate link name {link.name!r}", field="links")
        for end in (link.src, link.dst):
            if end not in procs:
                raise InputError(f"link {link.name!r} joins unknown processor {end!r}", field="links")
        if not (link.bandwidth > 0 and math.isfinite(link.latency) and link.latency >= 0):
            raise InputError(f"link {link.name!r} needs bandwidth > 0 and a finite latency >= 0, got "
                             f"{link.bandwidth!r} and {link.latency!r}", field="links")
        found[link.name] = link
    return found
