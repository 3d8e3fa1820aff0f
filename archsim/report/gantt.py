"""A timeline as a plotly Gantt chart: one row per processor (and stream), one bar per op.

Reads any frame with columns ``op, processor, start, end`` (+ optional ``stream``, ``kind``,
``microbatch``, ``layer``), so every simulator result — pipeline, out-of-order, SPP — draws the same.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from archsim.output_files import write_output
from archsim.report.export import ops_frame, timeline_unit
from archsim.report.style import KIND_COLORS, KIND_LABELS
from archsim.validate import is_nan

__all__ = ["BORROWED_LABEL", "gantt_figure", "write_gantt"]

BORROWED_LABEL = "borrowed (Algorithm 1)"
_HATCH = "/"


def gantt_figure(frame, title: str = "", unit: str | None = None,
                 borrowed: Collection[tuple[str, str]] = (), rows_title: str | None = None) -> go.Figure:
    """Horizontal bars from ``start`` to ``end`` per processor row, coloured by op kind; ``rows_title``: what
    the rows are where they are not processors (a plan's stages and channels), else processor (/ stream).
    ``frame``: a timeline's frame or the Timeline itself, as :func:`write_gantt` takes it; ``unit`` (the x axis's):
    None, the one it states (:func:`~archsim.report.export.timeline_unit`: a train timeline's seconds).

    ``borrowed``: (layer, kind) of ops a LayerPipe plan borrowed (:attr:`Partition.borrowed_ops`);
    their bars are hatched, with one legend entry saying so (the tables star the same ops)."""
    unit = timeline_unit(frame, unit)
    frame = ops_frame(frame)
    missing = {"op", "processor", "start", "end"} - set(frame.columns)
    if missing:
        raise ValueError(f"timeline frame lacks columns {sorted(missing)}")
    data = frame.copy()
    if "stream" in data.columns and data["stream"].nunique() > 1:
        data["row"] = data["processor"].astype(str) + "/s" + data["stream"].astype(str)
        rows_title = "processor / stream"
    else:
        data["row"] = data["processor"].astype(str)
        rows_title = rows_title or "processor"
    if "kind" in data.columns:  # a barrier (a flush: no kind, no duration) draws nothing, and no "nan" legend entry
        untagged = data["kind"].map(lambda kind: kind is None or is_nan(kind))
        data = data[~(untagged & (data["end"] <= data["start"]))]
        kinds = data["kind"].map(lambda kind: "op" if kind is None or is_nan(kind) else str(kind))
    else:
        kinds = pd.Series(["op"] * len(data), index=data.index)
    fig = go.Figure()
    hatched = _borrowed_rows(data, borrowed)
    for kind in sorted(kinds.unique(), key=lambda k: list(KIND_COLORS).index(k) if k in KIND_COLORS else 99):
        part = data[kinds == kind]
        marker: dict = {"color": KIND_COLORS.get(kind), "line": {"color": "white", "width": 0.5}}
        if hatched[kinds == kind].any():
            marker["pattern"] = {"shape": [_HATCH if h else "" for h in hatched[kinds == kind].tolist()]}
        fig.add_trace(go.Bar(
            y=part["row"], x=part["end"] - part["start"], base=part["start"], orientation="h",
            name=KIND_LABELS.get(kind, kind), marker=marker, hovertext=part["op"],
            hovertemplate=f"%{{hovertext}}<br>start %{{base:.4g}} {unit}<br>duration %{{x:.4g}} {unit}<extra></extra>"))
    if hatched.any():  # a legend entry only: no bar of its own
        fig.add_trace(go.Bar(y=[None], x=[None], orientation="h", name=BORROWED_LABEL, hoverinfo="skip",
                             marker={"color": "white", "line": {"color": "black", "width": 0.5},
                                     "pattern": {"shape": _HATCH, "fgcolor": "black"}}))
    rows = sorted(data["row"].unique(), key=_natural)
    # legend above the bars (never clipped, whatever the row count); height grows with the rows; the top margin
    # holds a title's lines where there is one (none where a page's heading says it)
    fig.update_layout(title=wrapped(title), barmode="overlay", xaxis_title=unit, yaxis_title=rows_title,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
                      yaxis={"categoryorder": "array", "categoryarray": rows[::-1]},
                      margin={"t": 110 if title else 60}, height=gantt_height(len(rows)))
    return fig


def _borrowed_rows(data: pd.DataFrame, borrowed: Collection[tuple[str, str]]) -> pd.Series:
    """Which rows of a timeline frame are borrowed ops (by their ``layer`` and ``kind`` tags)."""
    if not borrowed or not {"layer", "kind"} <= set(data.columns):
        return pd.Series(False, index=data.index)
    keys = set(borrowed)
    return pd.Series([(str(layer), str(kind)) in keys for layer, kind in zip(data["layer"], data["kind"])],
                     index=data.index)


def wrapped(title: str, width: int = 80) -> str:
    """A long title broken into lines (plotly clips a one-line title at the figure's edge)."""
    import textwrap

    return "\n".join(textwrap.wrap(title, width)) if title else title  # the page builder breaks lines at \n


def gantt_height(rows: int) -> int:
    """Pixels: 36 per processor row plus title, legend and axis (at least 320)."""
    return max(320, 36 * rows + 230)


def _natural(text: str) -> tuple:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(text)))


def write_gantt(timeline, path: str | Path, title: str = "", caption: str = "", unit: str | None = None,
                borrowed: Collection[tuple[str, str]] = (), rows_title: str | None = None) -> Path:
    """Write a self-contained HTML Gantt of ``timeline`` (a Timeline or its frame) atomically; ``unit``
    titles the x axis (None: the timeline's own, :func:`gantt_figure`); ``borrowed`` ops are hatched (:func:`gantt_figure`)."""
    from archsim.report.html_page import document, esc, figure

    frame = ops_frame(timeline)
    body = figure(gantt_figure(frame, title, timeline_unit(timeline, unit), borrowed, rows_title), first=True)
    note = f"<p>{esc(caption)}</p>" if caption else ""
    return write_output(path, document(title, [body, note], heading="",
                                            style="body{font-family:sans-serif;margin:1em}"))
