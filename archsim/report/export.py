"""Timelines in other tools' formats.

* Chrome trace event JSON (opens in Perfetto / chrome://tracing): one complete event ("ph": "X")
  per op, ``pid`` = processor, ``tid`` = stream, times in microseconds of the timeline's unit
  (1 cycle or 1 second → 1 µs, so the viewer's scale reads in the timeline's own unit); transfers
  appear on a process of their link.
* A pipeline-schedule CSV in the layout of ``torch.distributed.pipelining``'s schedule dumps: one
  line per rank (processor), its actions in time order as ``{stage}{type}{microbatch}`` with type
  F (forward), I (backward of the input, archsim's D/D1/D2), W (backward of the weights, G) — the
  zero-bubble split's notation; consecutive ops of one stage and kind (its several layers) form one
  action. Ops without a micro-batch tag are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

from archsim.outputs import atomic_write_text

ACTION = {"F": "F", "D": "I", "D1": "I", "D2": "I", "G": "W", "B": "B", "W": "W", "I": "I"}


def chrome_trace(timeline) -> dict:
    events = []
    names = {}
    frame = timeline.to_frame()
    for row in frame.itertuples(index=False):
        data = row._asdict()
        pid = names.setdefault(str(data["processor"]), len(names) + 1)
        args = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in data.items()
                if k not in ("op", "processor", "stream", "start", "end") and v == v}
        events.append({"name": str(data["op"]), "cat": str(data.get("kind", "op")), "ph": "X", "ts": float(data["start"]),
                       "dur": float(data["end"] - data["start"]), "pid": pid, "tid": int(data["stream"]), "args": args})
    for transfer in timeline.transfers:
        pid = names.setdefault(f"link {transfer.link}", len(names) + 1)
        events.append({"name": f"{transfer.src}->{transfer.dst}", "cat": "comm", "ph": "X", "ts": transfer.start,
                       "dur": transfer.end - transfer.start, "pid": pid, "tid": 0, "args": {"bytes": transfer.bytes}})
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}} for name, pid in names.items()]
    return {"traceEvents": meta + events, "displayTimeUnit": "ns"}


def write_chrome_trace(timeline, path: str | Path) -> Path:
    return atomic_write_text(path, json.dumps(chrome_trace(timeline)))


def pipeline_schedule_csv(timeline) -> str:
    frame = timeline.to_frame()
    if "microbatch" not in frame.columns:
        return ""
    lines = []
    processors = sorted(frame["processor"].unique(), key=lambda p: (len(str(p)), str(p)))
    for rank, processor in enumerate(processors):
        part = frame[(frame.processor == processor) & frame.microbatch.notna()].sort_values(["start", "end"])
        actions = []
        for row in part.itertuples(index=False):
            data = row._asdict()
            kind = ACTION.get(str(data.get("kind")), None)
            if kind is None:
                continue
            stage = int(data["stage"]) - 1 if "stage" in data and data["stage"] == data["stage"] else rank
            action = f"{stage}{kind}{int(data['microbatch'])}"
            if not actions or actions[-1] != action:  # a stage's several layers form one action
                actions.append(action)
        lines.append(",".join(actions))
    return "\n".join(lines) + "\n"


def write_pipeline_schedule_csv(timeline, path: str | Path) -> Path:
    return atomic_write_text(path, pipeline_schedule_csv(timeline))
