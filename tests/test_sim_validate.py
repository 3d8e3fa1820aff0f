"""The independent validator against planted bugs: each broken timeline must be caught.

The valid timeline (worked by hand): p has two streams, q one; link l carries p → q at 1 byte/unit
with latency 1.
  a (p, 2)  stream 0, 0..2
  b (p, 2)  after a: stream 0, 2..4       c (p, 3) stream 1, 0..3
  a → d: 3 bytes over l, 2..6 (1 + 3/1);  c → d: 1 byte over l, waits for the link: 6..8
  d (q, 1, pinned to stream 0) 8..9
"""

import dataclasses

import pytest

from archsim.sim import (
    Dep,
    Link,
    Op,
    Problem,
    Processor,
    Slot,
    Timeline,
    Transfer,
    assert_valid,
    simulate,
    validate_timeline,
)
from archsim.sim.timeline import SlotTable, TransferTable

PROBLEM = Problem(
    (Processor("p", 2), Processor("q")), (Link("l", "p", "q", bandwidth=1, latency=1),),
    (Op("a", "p", 2), Op("b", "p", 2), Op("c", "p", 3), Op("d", "q", 1, stream=0)),
    (Dep("a", "b"), Dep("a", "d", 3, "l"), Dep("c", "d", 1, "l")))

EXPECTED_SLOTS = {"a": ("p", 0, 0, 2), "b": ("p", 0, 2, 4), "c": ("p", 1, 0, 3), "d": ("q", 0, 8, 9)}
EXPECTED_TRANSFERS = {("a", "d"): (3, 2, 6), ("c", "d"): (1, 6, 8)}


@pytest.fixture
def valid():
    timeline = simulate(PROBLEM)
    assert {s.op: (s.processor, s.stream, s.start, s.end) for s in timeline.slots} == EXPECTED_SLOTS
    assert {(t.src, t.dst): (t.bytes, t.start, t.end) for t in timeline.transfers} == EXPECTED_TRANSFERS
    assert validate_timeline(PROBLEM, timeline) == []
    return timeline


def with_slot(timeline, op, **changes):
    slots = tuple(dataclasses.replace(s, **changes) if s.op == op else s for s in timeline.slots)
    return dataclasses.replace(timeline, slots=slots)


def with_transfer(timeline, src, **changes):
    transfers = tuple(dataclasses.replace(t, **changes) if t.src == src else t for t in timeline.transfers)
    return dataclasses.replace(timeline, transfers=transfers)


def drop_transfer(timeline, src):
    return dataclasses.replace(timeline, transfers=tuple(t for t in timeline.transfers if t.src != src))


@pytest.mark.parametrize("plant, needle", [
    (lambda t: with_slot(t, "b", start=1.0, end=3.0), "b started at 1.0 before a ended"),  # before its dependency
    (lambda t: with_slot(t, "b", stream=1), "overlap on p stream 1"),  # b 2..4 over c 0..3 on stream 1
    (lambda t: with_slot(t, "c", start=1.0, end=4.0, stream=0), "overlap on p stream 0"),  # over a and b
    (lambda t: with_transfer(t, "a", end=5.0), "took 3.0, expected 4.0"),  # a shortened transfer
    (lambda t: dataclasses.replace(t, slots=t.slots[1:]), "never ran"),  # a dropped op
    (lambda t: dataclasses.replace(t, slots=t.slots + t.slots[:1]), "appears twice"),
    (lambda t: with_slot(t, "d", processor="p"), "assigned to q"),  # wrong processor
    (lambda t: with_slot(t, "d", end=9.5), "lasted 1.5, expected 1"),  # wrong duration
    (lambda t: with_slot(t, "c", stream=2), "stream 2, which p lacks"),
    (lambda t: with_slot(t, "d", stream=1), "which q lacks"),
    (lambda t: Timeline(t.slots + (Slot("zz", "p", 0, 0, 1),), t.transfers, t.problem), "unknown op zz"),
    (lambda t: with_transfer(t, "c", start=5.0, end=7.0), "overlap on link l"),  # c's transfer over a's
    (lambda t: with_transfer(t, "a", start=1.0, end=5.0), "started at 1.0 before a ended"),
    (lambda t: with_transfer(t, "c", start=6.5, end=8.5), "arrived at 8.5 after d started"),
    (lambda t: with_transfer(t, "c", bytes=2), "moved 2 bytes, expected 1"),
    (lambda t: drop_transfer(t, "c"), "0 transfers, expected 1"),
    (lambda t: dataclasses.replace(t, transfers=t.transfers + (Transfer("a", "b", "l", 0, 2, 3),)),
     "no dependency asks for"),
    (lambda t: with_slot(with_slot(t, "a", start=-2.0, end=0.0), "b", start=0.0, end=2.0), "before time 0"),
])
def test_validator_catches_planted_bugs(valid, plant, needle):
    errors = validate_timeline(PROBLEM, plant(valid))
    assert any(needle in e for e in errors), errors
    with pytest.raises(AssertionError, match="invalid timeline"):
        assert_valid(PROBLEM, plant(valid))


def test_too_many_ops_at_once_on_a_processor_is_caught_even_with_distinct_streams():
    problem = Problem((Processor("p", 2),), (), (Op("a", "p", 2), Op("b", "p", 2), Op("c", "p", 2)), ())
    slots = (Slot("a", "p", 0, 0, 2), Slot("b", "p", 1, 0, 2), Slot("c", "p", 5, 1, 3))
    errors = validate_timeline(problem, Timeline(slots, (), problem))
    assert any("more than 2 ops at once on p" in e for e in errors), errors


def test_a_pinned_op_on_another_stream_is_caught():
    problem = Problem((Processor("p", 2),), (), (Op("a", "p", 1, stream=1),), ())
    errors = validate_timeline(problem, Timeline((Slot("a", "p", 0, 0, 1),), (), problem))
    assert errors == ["op a pinned to stream 1 ran on stream 0"]


def test_back_to_back_and_zero_length_ops_are_not_overlaps():
    problem = Problem((Processor("p"),), (), (Op("a", "p", 1), Op("z", "p", 0), Op("b", "p", 1)), ())
    slots = (Slot("a", "p", 0, 0, 1), Slot("z", "p", 0, 0.5, 0.5), Slot("b", "p", 0, 1, 2))
    assert validate_timeline(problem, Timeline(slots, (), problem)) == []


def test_duplicate_linked_deps_need_one_transfer_each():
    problem = Problem((Processor("p"), Processor("q")), (Link("l", "p", "q", 1),), (Op("a", "p", 1), Op("b", "q", 1)),
                      (Dep("a", "b", 2, "l"), Dep("a", "b", 1, "l")))
    timeline = simulate(problem)  # transfers 1..3 (2 bytes; first queued) and 3..4 (1 byte); b 4..5
    assert [(t.bytes, t.start, t.end) for t in timeline.transfers] == [(2, 1, 3), (1, 3, 4)]
    assert validate_timeline(problem, timeline) == []
    errors = validate_timeline(problem, dataclasses.replace(timeline, transfers=timeline.transfers[:1]))
    assert any("1 transfers, expected 2" in e for e in errors), errors


def test_every_simulation_in_the_tests_is_validated():
    """tests/conftest.py wraps the simulator; a run through a policy module must go through it."""
    from conftest import VALIDATED

    from archsim.partition import pipedream_partition, profile_from_costs
    from archsim.policies import pipeline

    before = VALIDATED["count"]
    profile = profile_from_costs(["a", "b"], [1, 1], [1, 1], [1, 1])
    pipeline.simulate_partition(pipedream_partition(profile, 2), profile, 2)
    assert VALIDATED["count"] == before + 1


def _tables(timeline, slots=None, transfers=None):
    """The timeline with its engine tables' columns replaced (the arrays the fast path reads)."""
    s, t = timeline.slots, timeline.transfers
    slot_columns = {"op": s.op, "processor": s.processor, "stream": s.stream, "start": s.start, "end": s.end}
    transfer_columns = {"dep": t.dep, "link": t.link, "start": t.start, "end": t.end}
    slot_columns.update(slots or {})
    transfer_columns.update(transfers or {})
    return Timeline(SlotTable(timeline.problem, **slot_columns), TransferTable(timeline.problem, **transfer_columns),
                    timeline.problem)


@pytest.mark.parametrize("plant, needle", [
    (lambda t: _tables(t, transfers={"start": t.transfers.start - 1, "end": t.transfers.end - 1}),
     "before a ended"),
    (lambda t: _tables(t, transfers={"dep": t.transfers.dep[[0, 0]]}), "0 transfers, expected 1"),
    (lambda t: _tables(t, transfers={"start": t.transfers.start[[0, 0]], "end": t.transfers.start[[0, 0]] + [4, 1]}),
     "overlap on link l"),
    (lambda t: _tables(t, slots={"start": t.slots.start + 0.5}), "lasted"),
])
def test_validator_reads_the_engine_tables_and_catches_planted_bugs(valid, plant, needle):
    from archsim.sim.validate import quick_check

    broken = plant(valid)
    assert quick_check(PROBLEM, _tables(valid)) and not quick_check(PROBLEM, broken)
    assert any(needle in line for line in validate_timeline(PROBLEM, broken))


# A late, fractional op: 47/3 units starting at 7e8, where doubles are 1.2e-7 apart, so end − start
# is 15.6666666269…, 4e-8 short of 47/3 (more than 1e-9 of the length) though the engine is exact to the
# rounding of the times. dp-* schedules on 3, 5, 6 … processors (a ring's 2(P−1)/P) gave such syncs late in
# resnet50's backward pass and stopped with the validator's AssertionError.
LATE = Problem((Processor("p"), Processor("q")), (Link("m", "p", "q", bandwidth=3, latency=0),),
               (Op("a", "p", 7e8), Op("b", "p", 47 / 3), Op("c", "q", 1)), (Dep("a", "b"), Dep("a", "c", 47, "m")))


def test_a_late_fractional_op_and_transfer_are_valid_up_to_the_rounding_of_their_times():
    timeline = simulate(LATE)
    slot = next(s for s in timeline.slots if s.op == "b")
    assert abs((slot.end - slot.start) - 47 / 3) > 1e-9 * (47 / 3)  # the rounding the old check refused
    assert validate_timeline(LATE, timeline) == []
    assert_valid(LATE, timeline)


@pytest.mark.parametrize("off", [1e-3, 1.0])
def test_a_late_op_that_runs_short_is_still_caught(off):
    """The tolerance at 7e8 is 0.7 units (1e-9 of the time): 1e-3 short passes as rounding, 1 short does not."""
    timeline = simulate(LATE)
    slot = next(s for s in timeline.slots if s.op == "b")
    short = dataclasses.replace(timeline, slots=tuple(
        dataclasses.replace(s, end=s.end - off) if s.op == "b" else s for s in timeline.slots))
    errors = validate_timeline(LATE, short)
    assert (errors == []) == (off * 1.0 <= 1e-9 * slot.end)
    assert not errors or errors == [f"op b lasted {slot.end - off - slot.start}, expected {47 / 3}"]
