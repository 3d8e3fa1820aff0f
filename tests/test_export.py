"""Exports: Chrome trace JSON and torch.distributed.pipelining-style schedule CSV."""

import json

from archsim.partition import pipedream_partition, profile_from_costs
from archsim.policies.pipeline import simulate_partition
from archsim.report.export import chrome_trace, pipeline_schedule_csv, write_chrome_trace


def two_stage_run():
    profile = profile_from_costs(["l0", "l1"], forward=[1, 1], weight_grad=[1, 1], delta=[1, 1])
    return simulate_partition(pipedream_partition(profile, 2), profile, 2, "layerpipe")


def test_chrome_trace_has_one_complete_event_per_op(tmp_path):
    run = two_stage_run()
    trace = chrome_trace(run.timeline)
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(run.problem.ops)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert names == {"p1", "p2"}
    first = min(events, key=lambda e: e["ts"])
    assert (first["name"], first["ts"], first["dur"]) == ("F:l0:0", 0.0, 1.0)
    path = write_chrome_trace(run.timeline, tmp_path / "trace.json")
    assert json.loads(path.read_text())["traceEvents"]


def test_schedule_csv_lists_each_rank_in_time_order():
    # From the hand-worked δ-first schedule (tests/test_pipeline_schedules.py): stage 2 runs
    # F1(0) D1(0) G1(0) F1(1) D1(1) G1(1); D is the input backward (I), G the weight backward (W).
    lines = pipeline_schedule_csv(two_stage_run().timeline).strip().splitlines()
    assert lines[1] == "1F0,1I0,1W0,1F1,1I1,1W1"
    assert lines[0].split(",")[:2] == ["0F0", "0F1"]


def test_a_timeline_in_seconds_is_written_in_chrome_traces_microseconds():
    """Chrome's trace format reads ``ts`` and ``dur`` in µs: a timeline in seconds (train's) written as is
    was drawn a million times too short (a 0.08 s iteration as 0.08 µs)."""
    run = two_stage_run()
    cycles = [e for e in chrome_trace(run.timeline)["traceEvents"] if e["ph"] == "X"]
    seconds = [e for e in chrome_trace(run.timeline, unit="seconds")["traceEvents"] if e["ph"] == "X"]
    assert [(e["ts"], e["dur"]) for e in seconds] == [(c["ts"] * 1e6, c["dur"] * 1e6) for c in cycles]
    assert max(e["ts"] + e["dur"] for e in cycles) == run.timeline.makespan  # cycles: one per µs, as before
    assert chrome_trace(run.timeline, unit="seconds")["otherData"]["time_unit"] == "microseconds"
    assert chrome_trace(run.timeline)["otherData"]["time_unit"] == "cycles, one written per microsecond"
