"""Per-layer profiles for SPP: PipeDream's ``graph.txt`` (seconds) or archsim's array model.

``graph.txt`` node lines read ``nodeN -- description -- forward_compute_time=F,
backward_compute_time=B, activation_size=A, parameter_size=P`` (times in milliseconds, sizes in
bytes; an optional ``-- stage_id=…`` is ignored) and edge lines ``<tab>nodeA -- nodeB``. SPP plans
chains: nodes are taken in topological order and a branching graph is treated as that chain (as
the SPP paper does with ResNet's shortcuts); the gradient sent back equals the activation sent.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx

from archsim.errors import InputError
from archsim.spp.prm import LayerProfileSPP

FIELDS = ("forward_compute_time", "backward_compute_time", "activation_size", "parameter_size")


def load_graph_txt(path: str | Path) -> tuple[LayerProfileSPP, tuple[str, ...]]:
    path = Path(path)
    file = str(path)
    if not path.is_file():
        raise InputError("profile file not found", file=file)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=file) from None
    nodes: dict[str, dict[str, float]] = {}
    graph = nx.DiGraph()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        parts = [p.strip() for p in raw.strip().split(" -- ")]
        if raw.startswith("\t") or (len(parts) == 2 and all(re.fullmatch(r"node\d+", p) for p in parts)):
            if len(parts) != 2:
                raise InputError("an edge line is 'nodeA -- nodeB'", file=file, line=number)
            graph.add_edge(parts[0], parts[1])
            continue
        if len(parts) < 3 or not re.fullmatch(r"node\d+", parts[0]):
            raise InputError("expected 'nodeN -- description -- forward_compute_time=…, …'", file=file, line=number)
        values: dict[str, float] = {}
        for item in parts[2].split(","):
            key, _, value = item.strip().partition("=")
            if key in FIELDS:
                try:
                    values[key] = float(value)
                except ValueError:
                    raise InputError(f"expected a number, got {value!r}", file=file, line=number, field=key) from None
                if values[key] < 0:
                    raise InputError("must be non-negative", file=file, line=number, field=key)
        missing = [f for f in FIELDS if f not in values]
        if missing:
            raise InputError("missing field", file=file, line=number, field=missing[0])
        nodes[parts[0]] = values
        graph.add_node(parts[0])
    if not nodes:
        raise InputError("no nodes", file=file)
    unknown = sorted(set(graph.nodes) - set(nodes))
    if unknown:
        raise InputError(f"edge names unknown node {unknown[0]}", file=file, field="edges")
    try:
        order = list(nx.lexicographical_topological_sort(graph, key=lambda n: int(n[4:])))
    except nx.NetworkXUnfeasible:
        raise InputError("the graph has a cycle", file=file, field="edges") from None
    ms = 1e-3
    profile = LayerProfileSPP(
        forward=tuple(nodes[n]["forward_compute_time"] * ms for n in order),
        backward=tuple(nodes[n]["backward_compute_time"] * ms for n in order),
        parameters=tuple(nodes[n]["parameter_size"] for n in order),
        activations=tuple(nodes[n]["activation_size"] for n in order),
        gradients=tuple(nodes[n]["activation_size"] for n in order),
    )
    return profile, tuple(order)


def profile_from_network(network, array, batch: int, mode: str = "exact", group=None
                         ) -> tuple[LayerProfileSPP, tuple[str, ...]]:
    """Array-model costs in seconds (cycles / clock): F, and G + D as the backward. ``group`` maps a
    layer name to a block name; consecutive layers of one block merge into one SPP layer (e.g. a
    BERT encoder layer), whose boundary tensor is its last layer's output."""
    from archsim.partition import build_profile

    p = build_profile(network, array, batch, mode)  # type: ignore[arg-type]
    from archsim.array.config import DEFAULT_CLOCK_HZ

    seconds = 1.0 / (array.clock_hz or DEFAULT_CLOCK_HZ)
    keys = [group(n) if group else n for n in p.names]
    blocks: list[list[int]] = []
    for index, key in enumerate(keys):
        if blocks and keys[blocks[-1][0]] == key:
            blocks[-1].append(index)
        else:
            blocks.append([index])
    total = lambda values, block: float(sum(values[i] for i in block))  # noqa: E731
    return LayerProfileSPP(
        forward=tuple(total(p.forward, b) * seconds for b in blocks),
        backward=tuple((total(p.weight_grad, b) + total(p.delta, b)) * seconds for b in blocks),
        parameters=tuple(total(p.weight_bytes, b) for b in blocks),
        activations=tuple(float(p.activation_bytes[b[-1]]) for b in blocks),
        gradients=tuple(float(p.activation_bytes[b[-1]]) for b in blocks),
    ), tuple(keys[b[0]] for b in blocks)
