"""A plan's DFG as a file: a JSON document (every node, edge, retiming value and per-layer count) or
Graphviz DOT (the retimed graph, one cluster per stage), chosen by the file's suffix. Plain data and
text only: the caller writes it (``archsim pipeline --dfg``, :func:`archsim.api.pipeline_dfg`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from archsim.dfg.graph import Node
from archsim.dfg.of_plan import PlanDFG
from archsim.dfg.pipelining import SLOTS_PER_MICROBATCH

DOT_SUFFIXES = (".dot", ".gv")  # Graphviz's; any other name gets the JSON document


def dfg_document(result: PlanDFG, meta: Mapping[str, object] | None = None) -> dict[str, object]:
    """The JSON document: ``meta`` (the run's settings) first, then the graph. Edge delays are given
    three ways: ``delays`` of the training DFG (micro-batches), ``delays_inserted`` (slots: P times
    those plus the DLMS delayed gradients, before retiming) and ``delays_retimed`` (after)."""
    pipelined, p = result.pipelined, SLOTS_PER_MICROBATCH
    lag = dict(pipelined.retiming)
    costs = pipelined.original
    nodes = [{"id": str(node), "layer": node.layer or None, "kind": node.kind,
              "stage": pipelined.stage_of_node(node) or _host_stage(result, node),
              "processor": result.processor(node), "cost": costs.cost(node), "retiming": lag[node]}
             for node in pipelined.original.nodes]
    edges = [{"src": str(e.src), "dst": str(e.dst), "tensor": e.tensor, "delays": e.delays,
              "delays_inserted": f.delays, "delays_retimed": g.delays, "boundary": bool(req)}
             for e, f, g, req in zip(pipelined.original.edges, pipelined.inserted.edges, pipelined.retimed.edges,
                                     pipelined.required)]
    parts = dict(result.delta_processors)
    layers = [{"layer": item.layer, "stage": item.stage, "processor": result.processor_of_stage[item.stage - 1],
               "retiming": {kind: lag[Node(item.layer, kind)] for kind in ("F", "G", "D", "D1", "D2", "U")
                            if Node(item.layer, kind) in lag},
               "delayed_gradients": item.gradient_delays, "delayed_gradient_slots": item.gradient_delay_slots,
               "weight_loop_delays": item.loop_delays, "weight_versions_needed": item.weight_versions,
               "activation_stash": item.activation_stash, "delta_processors": list(parts.get(item.layer, ()))}
              for item in pipelined.layers]
    bound = result.bound
    per_slot = None if math.isinf(bound.bound) else bound.bound
    return {
        **dict(meta or {}),
        "unit": result.unit, "slots_per_microbatch": p, "dfg_stages": result.stages,
        "processor_of_stage": list(result.processor_of_stage),
        "borrowed_only_processors": list(result.borrowed_only),
        "stage_weight_versions_needed": list(result.stage_weight_versions_needed()),
        "latency_slots": pipelined.latency,
        "iteration_bound": {"per_slot": per_slot, "per_microbatch": None if per_slot is None else p * per_slot,
                            "critical_loop": [str(node) for node in bound.loop], "loop_cost": bound.cost,
                            "loop_delays": bound.delays},
        "layers": layers, "nodes": nodes, "edges": edges,
    }


def dfg_dot(result: PlanDFG, title: str) -> str:
    """Graphviz DOT of the retimed DFG: a cluster per stage, each node with its cost and retiming value,
    each edge labelled with its delays after retiming (``nD``; none drawn for 0), the critical loop in red."""
    pipelined = result.pipelined
    lag = dict(pipelined.retiming)
    critical = set(zip(result.bound.loop, result.bound.loop[1:] + result.bound.loop[:1]))
    lines = ["digraph training_dfg {", f"  label={_quoted(title)};", "  labelloc=t;", "  rankdir=LR;",
             "  node [shape=box, fontname=Helvetica];"]
    for s in range(1, result.stages + 1):
        lines.append(f"  subgraph cluster_{s} {{")
        lines.append(f"    label={_quoted(f'stage {s}: processor {result.processor_of_stage[s - 1]}')};")
        for node in pipelined.original.nodes:
            if node.layer and pipelined.stage_of_node(node) == s:
                lines.append(f"    {_node_line(result, node, lag[node])}")
        lines.append("  }")
    for node in pipelined.original.nodes:
        if not node.layer:
            lines.append(f"  {_node_line(result, node, lag[node])}")
    for e in pipelined.retimed.edges:
        label = f"{e.delays}D" if e.delays else ""
        style = ", color=red, penwidth=2" if (e.src, e.dst) in critical else ""
        lines.append(f"  {_quoted(str(e.src))} -> {_quoted(str(e.dst))} [label={_quoted(label)}, "
                     f"tooltip={_quoted(e.tensor)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dfg_text(result: PlanDFG, path: str | Path, meta: Mapping[str, object], title: str) -> str:
    """What ``path`` gets: DOT where its suffix is Graphviz's, else the JSON document (one encoder)."""
    from archsim.json_text import dumps

    if Path(path).suffix.lower() in DOT_SUFFIXES:
        return dfg_dot(result, title)
    return dumps(dfg_document(result, meta), indent=1) + "\n"


def _host_stage(result: PlanDFG, node: Node) -> int:
    processor = result.processor(node)
    return result.processor_of_stage.index(processor) + 1 if processor is not None else 1


def _node_line(result: PlanDFG, node: Node, lag: int) -> str:
    cost = result.pipelined.original.cost(node)
    label = "\\n".join(_escaped(part) for part in (str(node), f"cost {cost:g} {result.unit}", f"r = {lag}"))
    return f'{_quoted(str(node))} [label="{label}"];'


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quoted(text: str) -> str:
    return f'"{_escaped(text)}"'


__all__ = ["DOT_SUFFIXES", "dfg_document", "dfg_dot", "dfg_text"]
