"""Timelines in other tools' formats.

* Chrome trace event JSON (opens in Perfetto / chrome://tracing): one complete event ("ph": "X")
  per op, ``pid`` = processor, ``tid`` = stream, times in microseconds of the timeline's unit
  (a cycle → 1 µs, a second → 10⁶ µs); transfers appear on a process of their link, named with the
  processors it joins where the link's own name does not say them.
* A pipeline-schedule CSV in torch.distributed.pipelining's compute-only layout (``_dump_csv`` /
  ``_load_csv``): one line per rank, its actions in time order as ``{stage}{type}{microbatch}``
  with type F (forward), I (backward of the input: archsim's D, D1, D2), W (backward of the
  weights: G) or B (full backward). Stage ids are virtual stages: the layers in forward order,
  cut wherever the processor changes (so interleaved and modulo allocations get one stage per
  block of layers), numbered from 0; ops without layer tags use their ``stage`` tag. A stage's
  several layer ops form one action, placed at the end of its last op. A stage's backward is one
  B when its input gradient is finished no earlier than its weight gradient (the gradient leaves
  with the full backward), else I then W. δ″ ops run on another processor (LayerPipe's split) are
  folded into their layer's stage: torch's format has no op split across ranks. SPP's fused
  ``FB`` block is F then B. Ops without a micro-batch tag (flush, all-reduce, channels) are left out.
"""

from __future__ import annotations

from pathlib import Path

from archsim.json_text import dumps
from archsim.output_files import write_output
from archsim.validate import is_nan

# archsim / zero-bubble / SPP op kind → the action families it belongs to
FAMILY = {"F": ("F",), "D": ("I",), "D1": ("I",), "D2": ("I",), "I": ("I",), "G": ("W",), "W": ("W",),
          "B": ("B",), "FB": ("F", "B")}


def ops_frame(timeline):
    """The ops frame (op, processor, start, end, …) of a Timeline, of a result that holds one in ``timeline``
    (``archsim.schedule``'s, whose own ``to_frame()`` is the command's CSV row), or a frame given as is."""
    held = getattr(timeline, "timeline", timeline)
    if held is None:
        raise ValueError("this result has no timeline (multistream's totals, torch_steps' count): nothing to draw")
    return held.to_frame() if hasattr(held, "to_frame") else held


def timeline_unit(timeline, unit: str | None = None) -> str:
    """``unit`` where given, else the one ``timeline`` states (a Timeline's ``unit``, a result's timeline's, a
    frame's ``attrs["unit"]``: train's and search's ``seconds``, a schedule's ``units``), else cycles: a notebook's
    ``gantt_figure(result.timeline)`` labels and scales the times as they are, not as cycles."""
    if unit is not None:
        return unit
    held = getattr(timeline, "timeline", timeline)
    stated = held.attrs.get("unit") if hasattr(held, "attrs") else getattr(held, "unit", None)  # a frame's column
    return str(stated) if stated else "cycles"


def chrome_trace(timeline, unit: str | None = None) -> dict:
    """``timeline`` as Chrome's trace events. The format reads ``ts`` and ``dur`` in microseconds, so a
    timeline in seconds (``unit="seconds"``, or None: the timeline's own, :func:`timeline_unit`; train's, search's,
    a plan on measured profiles) is written in µs
    (else Perfetto draws a 0.08 s iteration as 0.08 µs); a timeline in any other unit (cycles, a stage's
    time unit) has no clock here and is written one unit per µs, as ``otherData.time_unit`` says.
    ``displayTimeUnit`` ("ms" or "ns", the format's two) only sets how the viewer labels its axis: "ms", so a
    seconds-long GPU iteration reads 80 ms, not 80,000,000 ns."""
    unit = timeline_unit(timeline, unit)
    scale = 1e6 if unit == "seconds" else 1.0
    events = []
    names: dict[str, int] = {}
    frame = ops_frame(timeline)
    for row in frame.itertuples(index=False):
        data = row._asdict()
        pid = names.setdefault(str(data["processor"]), len(names) + 1)
        args = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in data.items()
                if k not in ("op", "processor", "stream", "start", "end") and not is_nan(v)}
        events.append({"name": str(data["op"]), "cat": _category(data.get("kind")), "ph": "X",
                       "ts": float(data["start"]) * scale, "dur": float(data["end"] - data["start"]) * scale,
                       "pid": pid, "tid": int(data["stream"]), "args": args})
    held = getattr(timeline, "timeline", timeline)  # a result's, as ops_frame reads it (a frame: no transfers)
    ends = {link.name: (link.src, link.dst) for link in getattr(getattr(held, "problem", None), "links", ())}
    for transfer in getattr(held, "transfers", ()):
        pid = names.setdefault(_link_name(transfer.link, ends.get(transfer.link)), len(names) + 1)
        events.append({"name": f"{transfer.src}->{transfer.dst}", "cat": "comm", "ph": "X",
                       "ts": transfer.start * scale, "dur": (transfer.end - transfer.start) * scale, "pid": pid,
                       "tid": 0, "args": {"bytes": transfer.bytes}})
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}} for name, pid in names.items()]
    shown = "microseconds" if unit == "seconds" else f"{unit}, one written per microsecond"
    return {"traceEvents": meta + events, "displayTimeUnit": "ms", "otherData": {"time_unit": shown}}


def _category(kind) -> str:
    """An op's trace category: its kind, or ``op`` where it has none (a flush barrier's tag is None, NaN in a frame)."""
    return "op" if kind is None or is_nan(kind) else str(kind)


def _link_name(link: str, ends: tuple[str, str] | None) -> str:
    """A link's process name, with the processors it joins where its own name does not say them (a pipeline's
    links are named by virtual stage, ``8->9:act``, whose ranks a V or interleaved schedule maps elsewhere)."""
    if ends is None or (ends[0] in link and ends[1] in link):
        return f"link {link}"
    return f"link {link} ({ends[0]}->{ends[1]})"


def write_chrome_trace(timeline, path: str | Path, unit: str | None = None) -> Path:
    return write_output(path, dumps(chrome_trace(timeline, unit)))


def _virtual_stages(problem, ops) -> dict[object, int]:
    """Layer → virtual stage: the first micro-batch's forwards in dependency order, cut at processor changes."""
    import networkx as nx

    first = min(op.tag("microbatch") for op in ops)
    forwards = {op.id: op for op in ops if op.tag("kind") in ("F", "FB") and op.tag("microbatch") == first}
    position = {op_id: i for i, op_id in enumerate(forwards)}
    graph = nx.DiGraph()
    graph.add_nodes_from(forwards)
    graph.add_edges_from((d.src, d.dst) for d in problem.deps if d.src in forwards and d.dst in forwards)
    stages: dict[object, int] = {}
    previous, stage = None, -1
    for op_id in nx.lexicographical_topological_sort(graph, key=position.__getitem__):
        op = forwards[op_id]
        if op.processor != previous:
            stage, previous = stage + 1, op.processor
        stages[op.tag("layer")] = stage
    return stages


def schedule_actions(timeline) -> list[list[str]]:
    """Per rank (processors that run actions, in the problem's order), torch action strings in time order."""
    problem = timeline.problem
    by_id = {op.id: op for op in problem.ops}
    slots = [(s, by_id[s.op]) for s in timeline.slots]
    slots = [(s, op) for s, op in slots if op.tag("microbatch") is not None and op.tag("kind") in FAMILY]
    if not slots:
        return []
    ops = [op for _, op in slots]
    if all(op.tag("layer") is not None for op in ops):
        layer_stage = _virtual_stages(problem, ops)
        stage_of = {op.id: layer_stage[op.tag("layer")] for op in ops}
    else:
        tags = sorted({op.tag("stage") for op in ops})
        stage_of = {op.id: tags.index(op.tag("stage")) for op in ops}
    home: dict[int, str] = {}
    ends: dict[tuple[int, str, int], float] = {}
    for slot, op in slots:
        stage, mb = stage_of[op.id], int(op.tag("microbatch"))
        for family in FAMILY[str(op.tag("kind"))]:
            if family == "F":
                home.setdefault(stage, op.processor)
            key = (stage, family, mb)
            ends[key] = max(ends.get(key, slot.end), slot.end)
    actions: dict[str, list[tuple[float, int, str]]] = {}
    for (stage, family, mb), end in ends.items():
        kind = family
        if family in ("I", "W"):
            i_end, w_end = ends.get((stage, "I", mb)), ends.get((stage, "W", mb))
            split = i_end is not None and w_end is not None and i_end < w_end
            if not split and family == "W" and i_end is not None:
                continue  # the weight gradient is part of the full backward placed at the I's end
            kind = family if split else "B"
        order = {"F": 0, "I": 1, "B": 1, "W": 2}[kind]
        actions.setdefault(home.get(stage, ""), []).append((end, order, f"{stage}{kind}{mb}"))
    ranks = [p.name for p in problem.processors if p.name in actions]
    return [[a for *_, a in sorted(actions[name])] for name in ranks]


def pipeline_schedule_csv(timeline) -> str:
    """The timeline's actions in torch's CSV layout (empty when no op has a micro-batch); ``timeline`` a Timeline or
    a result that holds one in ``timeline`` (train's, a plan's, a schedule's), as :func:`ops_frame` reads it."""
    from archsim.policies.torch_csv import format_rows

    held = getattr(timeline, "timeline", timeline)
    if held is None:
        ops_frame(timeline)  # its one line: this result has no timeline
    return format_rows(schedule_actions(held))


def write_pipeline_schedule_csv(timeline, path: str | Path) -> Path:
    from archsim.errors import InputError

    text = pipeline_schedule_csv(timeline)
    if not text:
        raise InputError("--schedule-csv needs a pipeline schedule: no op of this one belongs to a micro-batch",
                         field="schedule-csv")
    return write_output(path, text)
