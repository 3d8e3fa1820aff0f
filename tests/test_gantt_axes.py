"""Gantt charts say what both axes hold: time in the plan's unit across, the processor (and stream) down."""

from __future__ import annotations

import pandas as pd

from archsim.report.gantt import gantt_figure


def _frame(streams: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"op": [f"F:l{i}:0" for i in range(len(streams))], "processor": ["p1"] * len(streams),
                         "start": [0.0] * len(streams), "end": [5.0] * len(streams), "stream": streams})


def test_the_rows_axis_is_titled():
    """The report's LayerPipe timeline and `pipeline --gantt` once left the rows (p1, p2, …) untitled: the y axis
    had no title at all (fails before the fix)."""
    fig = gantt_figure(_frame([0, 0]), "t")
    assert fig.layout.xaxis.title.text == "cycles"
    assert fig.layout.yaxis.title.text == "processor"


def test_stream_rows_say_so():
    """Rows of several streams read "p1/s0", "p1/s1": the title names both parts (fails before the fix)."""
    assert gantt_figure(_frame([0, 1]), "t", unit="s").layout.yaxis.title.text == "processor / stream"
