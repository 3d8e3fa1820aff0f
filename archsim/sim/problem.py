"""Simulator input: processors (with streams), links, ops with durations, dependencies."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from archsim.errors import InputError


@dataclass(frozen=True)
class Processor:
    name: str
    streams: int = 1


@dataclass(frozen=True)
class Link:
    """A serial channel: a transfer of b bytes holds it for latency + b / bandwidth."""

    name: str
    src: str
    dst: str
    bandwidth: float
    latency: float = 0.0

    def transfer_time(self, size: int) -> float:
        return self.latency + size / self.bandwidth


@dataclass(frozen=True)
class Op:
    id: str
    processor: str
    duration: float
    priority: tuple | float = 0
    stream: int | None = None
    alloc_bytes: int = 0
    free_bytes: int = 0
    tags: tuple[tuple[str, object], ...] = ()

    def tag(self, key: str, default: object = None) -> object:
        return dict(self.tags).get(key, default)


@dataclass(frozen=True)
class Dep:
    src: str
    dst: str
    bytes: int = 0
    link: str | None = None


@dataclass(frozen=True)
class Problem:
    processors: tuple[Processor, ...]
    links: tuple[Link, ...]
    ops: tuple[Op, ...]
    deps: tuple[Dep, ...]
    _index: dict = field(default_factory=dict, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        procs = {p.name: p for p in self.processors}
        if len(procs) != len(self.processors):
            raise InputError("duplicate processor name", field="processors")
        for p in self.processors:
            if p.streams <= 0:
                raise InputError(f"processor {p.name!r} needs at least one stream", field="streams")
        links = {l.name: l for l in self.links}
        for l in self.links:
            if l.src not in procs or l.dst not in procs:
                raise InputError(f"link {l.name!r} joins unknown processors", field="links")
            if l.bandwidth <= 0 or l.latency < 0:
                raise InputError(f"link {l.name!r} needs bandwidth > 0 and latency >= 0", field="links")
        ops = {}
        for op in self.ops:
            if op.id in ops:
                raise InputError(f"duplicate op id {op.id!r}", field="ops")
            if op.processor not in procs:
                raise InputError(f"op {op.id!r} on unknown processor {op.processor!r}", field="ops")
            if op.duration < 0:
                raise InputError(f"op {op.id!r} has a negative duration", field="ops")
            if op.stream is not None and not 0 <= op.stream < procs[op.processor].streams:
                raise InputError(f"op {op.id!r} pinned to a stream its processor lacks", field="ops")
            ops[op.id] = op
        graph = nx.DiGraph()
        graph.add_nodes_from(ops)
        for dep in self.deps:
            if dep.src not in ops or dep.dst not in ops:
                raise InputError(f"dependency {dep.src!r} → {dep.dst!r} names an unknown op", field="deps")
            if dep.link is not None:
                link = links.get(dep.link)
                if link is None:
                    raise InputError(f"dependency uses unknown link {dep.link!r}", field="deps")
                if (link.src, link.dst) != (ops[dep.src].processor, ops[dep.dst].processor):
                    raise InputError(f"link {dep.link!r} does not join {dep.src!r}'s and {dep.dst!r}'s processors",
                                     field="deps")
            graph.add_edge(dep.src, dep.dst)
        if not nx.is_directed_acyclic_graph(graph):
            raise InputError("dependencies contain a cycle", field="deps")
        self._index.update(procs=procs, links=links, ops=ops)
