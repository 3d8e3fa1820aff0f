"""A flushed pipeline's barrier (the ``flush`` op: no duration, no kind tag) is neither a legend entry
named "nan" in the Gantt nor a trace event of category "nan" (``archsim schedule ffnn8 --unit-costs
--processors 2 --microbatches 2 --policy gpipe --gantt g.html --chrome-trace t.json`` showed both)."""

import archsim
from archsim.report.export import chrome_trace
from archsim.report.gantt import gantt_figure


def _gpipe():
    return archsim.schedule("ffnn8", policy="gpipe", processors=2, microbatches=2, unit_costs=True)


def test_gantt_has_no_nan_legend_entry_and_keeps_every_op_kind():
    result = _gpipe()
    assert "flush" in set(result.timeline.to_frame()["op"])  # the barrier is in the timeline
    names = [trace.name for trace in gantt_figure(result.timeline).data]
    assert "nan" not in names and "None" not in names
    # F, G and D of 8 layers × 2 micro-batches (layer 1 computes no δ): 16 + 16 + 14 bars, the barrier none
    assert sorted(len(trace.y) for trace in gantt_figure(result.timeline).data) == [14, 16, 16]


def test_chrome_trace_category_of_an_untagged_op_is_op():
    events = [e for e in chrome_trace(_gpipe().timeline)["traceEvents"] if e["ph"] == "X"]
    flush = [e for e in events if e["name"] == "flush"]
    assert len(flush) == 1 and flush[0]["cat"] == "op"
    assert {e["cat"] for e in events} == {"F", "G", "D", "op"}
