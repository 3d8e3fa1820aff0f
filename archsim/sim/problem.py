"""Simulator input: processors (with streams), links, ops with durations, dependencies.

Everything here is unit-agnostic: durations and latencies are floats in one time unit of the
caller's choosing (cycles, seconds), bandwidth is bytes per that unit. A :class:`Problem` checks
itself when built, so the engine and every policy can trust it; a mistake raises
:class:`~archsim.errors.InputError` naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from archsim.errors import InputError
from archsim.sim.arrays import ProblemArrays, index_problem, paused_gc

Tags = tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Processor:
    """A compute resource running up to ``streams`` ops at once (e.g. a GPU's CUDA streams)."""

    name: str
    streams: int = 1


@dataclass(frozen=True)
class Link:
    """A serial channel from processor ``src`` to ``dst``: b bytes hold it for latency + b / bandwidth."""

    name: str
    src: str
    dst: str
    bandwidth: float
    latency: float = 0.0

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
        for name, value in self.tags:  # type: ignore[misc]
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


@dataclass(frozen=True)
class Problem:
    """A checked op DAG over processors and links (any iterables are stored as tuples)."""

    processors: tuple[Processor, ...]
    links: tuple[Link, ...]
    ops: tuple[Op, ...]
    deps: tuple[Dep, ...]

    def __post_init__(self) -> None:
        for name in ("processors", "links", "ops", "deps"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        procs = _check_processors(self.processors)
        links = _check_links(self.links, procs)
        with paused_gc():
            arrays = index_problem(self.processors, self.links, self.ops, self.deps)
        if arrays is None:  # something is wrong: the checks below name the first mistake
            ops = _check_ops(self.ops, procs)
            _check_deps(self.deps, ops, links)
            raise AssertionError("index_problem rejected a problem the checks accept")  # pragma: no cover
        if not arrays.acyclic:
            _raise_cycle(arrays)
        object.__setattr__(self, "_procs", procs)
        object.__setattr__(self, "_links", links)
        object.__setattr__(self, "_arrays", arrays)

    @property
    def arrays(self) -> ProblemArrays:
        """The problem as integer-indexed numpy arrays (op i is ``ops[i]``), built once when checked."""
        return self._arrays  # type: ignore[attr-defined]

    def op(self, op_id: str) -> Op:
        return self.ops[self.arrays.index[op_id]]

    def processor(self, name: str) -> Processor:
        return self._procs[name]  # type: ignore[attr-defined]

    def link(self, name: str) -> Link:
        return self._links[name]  # type: ignore[attr-defined]


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


def _check_ops(ops: Iterable[Op], procs: Mapping[str, Processor]) -> dict[str, Op]:
    found: dict[str, Op] = {}
    for op in ops:
        if op.id in found:
            raise InputError(f"duplicate op id {op.id!r}", field="ops")
        proc = procs.get(op.processor)
        if proc is None:
            raise InputError(f"op {op.id!r} on unknown processor {op.processor!r}", field="processor")
        if not (math.isfinite(op.duration) and op.duration >= 0):
            raise InputError(f"op {op.id!r} needs a finite duration >= 0, got {op.duration!r}", field="duration")
        if op.stream is not None and not 0 <= op.stream < proc.streams:
            raise InputError(f"op {op.id!r} pinned to stream {op.stream}, but {op.processor!r} has "
                             f"{proc.streams}", field="stream")
        if op.alloc_bytes < 0 or op.free_bytes < 0:
            raise InputError(f"op {op.id!r} allocates or frees a negative number of bytes", field="alloc_bytes")
        found[op.id] = op
    return found


def _check_deps(deps: Iterable[Dep], ops: Mapping[str, Op], links: Mapping[str, Link]) -> None:
    for dep in deps:
        for end in (dep.src, dep.dst):
            if end not in ops:
                raise InputError(f"dependency {dep.src!r} -> {dep.dst!r} names unknown op {end!r}", field="deps")
        if dep.bytes < 0:
            raise InputError(f"dependency {dep.src!r} -> {dep.dst!r} moves negative bytes", field="bytes")
        if dep.link is not None:
            link = links.get(dep.link)
            if link is None:
                raise InputError(f"dependency {dep.src!r} -> {dep.dst!r} uses unknown link {dep.link!r}",
                                 field="link")
            src, dst = ops[dep.src].processor, ops[dep.dst].processor
            if (link.src, link.dst) != (src, dst):
                raise InputError(f"link {dep.link!r} runs {link.src!r} -> {link.dst!r}, but dependency "
                                 f"{dep.src!r} -> {dep.dst!r} runs {src!r} -> {dst!r}", field="link")


def _raise_cycle(arrays: ProblemArrays) -> None:
    """Name one cycle, as networkx finds it (only on this error path; the check itself is Kahn's)."""
    import networkx as nx

    ids = list(arrays.index)
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((ids[a], ids[b]) for a, b in zip(arrays.dep_src.tolist(), arrays.dep_dst.tolist()))
    cycle = " -> ".join(u for u, _ in nx.find_cycle(graph))
    raise InputError(f"dependencies contain a cycle: {cycle}", field="deps")
