"""PipeDream's per-layer profile (``graph.txt``) → a :class:`LayerProfile` DAG in seconds.

A node line reads ``nodeN -- description -- forward_compute_time=F, backward_compute_time=B,
activation_size=A, parameter_size=P`` (times in milliseconds, sizes in bytes; ``A`` may be a list
``[a; b; …]`` for a node with several outputs, which PipeDream's ``graph.py`` sums; a fourth part
``stage_id=…`` is ignored); an edge line is ``<tab>nodeA -- nodeB``.

Read as PipeDream's optimizer reads it (``optimizer_graph_hierarchical.py``): source nodes whose
description starts with ``Input`` are dropped (data loading, which the optimizer zeroes and
removes), and so are sinks whose description starts with ``__getitem__``. Nodes are numbered in a
topological order that breaks ties by file position, so the first source is the file's first.

The backward time is one number in these profiles; archsim books it as the node's δ (``delta``)
with ``weight_grad`` zero, so ``backward`` (G + D) and ``total`` are PipeDream's.
"""

from __future__ import annotations

import heapq
import math
import re
from pathlib import Path

from archsim.errors import InputError
from archsim.partition.profile import LayerProfile, profile_from_costs
from archsim.validate import read_text

FIELDS = ("forward_compute_time", "backward_compute_time", "activation_size", "parameter_size")
NODE_ID = re.compile(r"node[0-9]{1,9}")
MS = 1e-3


def load_graph_txt(path: str | Path) -> LayerProfile:
    """The profile of ``path``; one-line :class:`InputError` (file, line, field) on anything malformed."""
    text = read_text(path, "profile file")  # as written: Path drops a trailing "/"
    path = Path(path)
    file = str(path)
    nodes: dict[str, tuple[str, dict[str, float]]] = {}
    edges: list[tuple[str, str, int]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        parts = [p.strip() for p in raw.strip().split(" -- ")]
        if raw.startswith("\t") or (len(parts) == 2 and all(NODE_ID.fullmatch(p) for p in parts)):
            if len(parts) != 2 or not all(NODE_ID.fullmatch(p) for p in parts):
                raise InputError("an edge line is '<tab>nodeA -- nodeB'", file=file, line=number)
            edges.append((parts[0], parts[1], number))
            continue
        if len(parts) < 3 or not NODE_ID.fullmatch(parts[0]):
            raise InputError("expected 'nodeN -- description -- forward_compute_time=…, …'", file=file, line=number)
        if parts[0] in nodes:
            raise InputError(f"node {parts[0]} is defined twice", file=file, line=number)
        nodes[parts[0]] = (parts[1], _fields(parts[2], file, number))
    if not nodes:
        raise InputError("no nodes", file=file)
    for source, target, number in edges:
        for end in (source, target):
            if end not in nodes:
                raise InputError(f"edge names unknown node {end}", file=file, line=number)
    return _profile(nodes, edges, file)


def _fields(metadata: str, file: str, number: int) -> dict[str, float]:
    values: dict[str, float] = {}
    for item in metadata.split(", "):
        key, sep, value = item.strip().partition("=")
        if not sep or key not in FIELDS:
            raise InputError(f"unknown field {key!r}; expected {', '.join(FIELDS)}", file=file, line=number)
        if key in values:
            raise InputError("given twice", file=file, line=number, field=key)
        items = value[1:-1].split(";") if key == "activation_size" and value.startswith("[") and value.endswith("]") \
            else [value]
        total = 0.0
        for part in items:
            try:
                amount = float(part.strip())
            except ValueError:
                raise InputError(f"expected a number, got {value!r}", file=file, line=number, field=key) from None
            if not math.isfinite(amount) or amount < 0:
                raise InputError(f"must be a finite non-negative number, got {value!r}", file=file, line=number,
                                 field=key)
            if key.endswith("_size") and (amount != int(amount) or amount >= 2**53):
                raise InputError(f"a size in bytes is a whole number below 2^53, got {value!r}", file=file,
                                 line=number, field=key)
            total += amount
        values[key] = total
    missing = [f for f in FIELDS if f not in values]
    if missing:
        raise InputError("missing field", file=file, line=number, field=missing[0], missing=True)
    return values


def _profile(nodes: dict[str, tuple[str, dict[str, float]]], edges: list[tuple[str, str, int]], file: str
             ) -> LayerProfile:
    outs: dict[str, list[str]] = {name: [] for name in nodes}
    ins: dict[str, list[str]] = {name: [] for name in nodes}
    for source, target, _ in edges:
        outs[source].append(target)
        ins[target].append(source)
    dropped = {n for n in nodes if not ins[n] and nodes[n][0].startswith("Input")}
    dropped |= {n for n in nodes if not outs[n] and nodes[n][0].startswith("__getitem__")}
    kept = [n for n in nodes if n not in dropped]
    if not kept:
        raise InputError("no nodes besides inputs and __getitem__ sinks", file=file)
    position = {name: k for k, name in enumerate(nodes)}
    preds = {n: [p for p in ins[n] if p not in dropped] for n in kept}
    order = _topological(kept, preds, position, file)
    index = {name: k for k, name in enumerate(order)}
    values = [nodes[n][1] for n in order]
    if not any(v["forward_compute_time"] or v["backward_compute_time"] for v in values):  # a plan of 0 s, 0/0 shares
        raise InputError("every node's forward_compute_time and backward_compute_time is 0: there is no compute to "
                         "plan", file=file, field="forward_compute_time")
    # δ of a node's input: the gradients of its inputs, each the size of its producer's activation
    # (the profiles' convention, lowering.TensorBytes.delta_bytes; 0 for a source)
    delta_bytes = [sum(int(nodes[p][1]["activation_size"]) for p in preds[n]) for n in order]
    # Edges keep the file's order: PipeDream walks a node's out-edges in it.
    return profile_from_costs(
        order,
        forward=[v["forward_compute_time"] * MS for v in values],
        weight_grad=[0.0] * len(order),
        delta=[v["backward_compute_time"] * MS for v in values],
        activation_bytes=[int(v["activation_size"]) for v in values],
        delta_bytes=delta_bytes,
        weight_bytes=[int(v["parameter_size"]) for v in values],
        edges=[(index[a], index[b]) for a, b, _ in edges if a in index and b in index],
        unit="seconds",
    )


def _topological(kept: list[str], preds: dict[str, list[str]], position: dict[str, int], file: str) -> list[str]:
    """Kahn's order, ties broken by file position (so the first source is the file's first)."""
    waiting = {n: len(set(preds[n])) for n in kept}
    succ: dict[str, set[str]] = {n: set() for n in kept}
    for n in kept:
        for p in preds[n]:
            succ[p].add(n)
    ready = [(position[n], n) for n in kept if waiting[n] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for nxt in succ[name]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (position[nxt], nxt))
    if len(order) != len(kept):
        stuck = min((n for n in kept if waiting[n] > 0), key=position.__getitem__)
        raise InputError(f"the graph has a cycle through {stuck}", file=file, field="edges")
    return order


__all__ = ["load_graph_txt"]
