"""The event simulator against hand-worked schedules; Problem's checks; Timeline's accounting.

Random DAGs, brute-force references and the validator's planted bugs are in test_sim_properties.py
and test_sim_validate.py.
"""

import math

import pytest

from archsim.errors import InputError
from archsim.sim import (
    Dep,
    KeyPolicy,
    Link,
    Op,
    Policy,
    PriorityPolicy,
    Problem,
    Processor,
    simulate,
    validate_timeline,
)


def times(timeline):
    return {s.op: (s.start, s.end) for s in timeline.slots}


def streams_of(timeline):
    return {s.op: s.stream for s in timeline.slots}


def one_processor(*ops, deps=(), streams=1):
    return Problem((Processor("p", streams),), (), ops, deps)


def test_chain_on_one_processor_runs_back_to_back():
    # a 0..2, b waits for a: 2..5, c waits for b: 5..6.
    problem = one_processor(Op("a", "p", 2), Op("b", "p", 3), Op("c", "p", 1), deps=(Dep("a", "b"), Dep("b", "c")))
    timeline = simulate(problem)
    assert times(timeline) == {"a": (0, 2), "b": (2, 5), "c": (5, 6)}
    assert timeline.makespan == 6


def test_transfer_on_a_link_delays_the_consumer():
    # a on p ends at 2; 12 bytes at 4 bytes/unit + latency 1 → transfer 2..6; b on q runs 6..7.
    link = Link("p->q", "p", "q", bandwidth=4, latency=1)
    problem = Problem((Processor("p"), Processor("q")), (link,), (Op("a", "p", 2), Op("b", "q", 1)),
                      (Dep("a", "b", bytes=12, link="p->q"),))
    timeline = simulate(problem)
    assert times(timeline) == {"a": (0, 2), "b": (6, 7)}
    assert [(t.src, t.dst, t.link, t.bytes, t.start, t.end) for t in timeline.transfers] == [
        ("a", "b", "p->q", 12, 2, 6)]


def test_a_link_is_fifo_by_producer_end():
    # p runs a 0..1, b 1..2, c 2..3 (priorities 0, 1, 2); l carries 1 byte/unit to q.
    # a's 4 bytes: 1..5. b's byte is ready at 2 and c's at 3; both wait for the link and go in the
    # order they became ready, though c's consumer z outranks b's consumer y: b's 5..6, c's 6..7.
    # On q: x 5..6, y 6..7, z 7..8.
    link = Link("l", "p", "q", bandwidth=1)
    ops = (Op("a", "p", 1, 0), Op("b", "p", 1, 1), Op("c", "p", 1, 2),
           Op("x", "q", 1, 0), Op("y", "q", 1, 9), Op("z", "q", 1, 0))
    deps = (Dep("a", "x", 4, "l"), Dep("b", "y", 1, "l"), Dep("c", "z", 1, "l"))
    timeline = simulate(Problem((Processor("p"), Processor("q")), (link,), ops, deps))
    assert {t.dst: (t.start, t.end) for t in timeline.transfers} == {"x": (1, 5), "y": (5, 6), "z": (6, 7)}
    assert times(timeline) == {"a": (0, 1), "b": (1, 2), "c": (2, 3), "x": (5, 6), "y": (6, 7), "z": (7, 8)}


def test_transfers_ready_together_go_in_consumer_priority_order():
    # a and b end together at 1 on two streams of p; both send 1 byte (1 unit) over l.
    # y's consumer priority 0 beats x's 5: y's data 1..2, x's 2..3; q runs y 2..3, x 3..4.
    link = Link("l", "p", "q", bandwidth=1)
    ops = (Op("a", "p", 1), Op("b", "p", 1), Op("x", "q", 1, 5), Op("y", "q", 1, 0))
    deps = (Dep("a", "x", 1, "l"), Dep("b", "y", 1, "l"))
    timeline = simulate(Problem((Processor("p", 2), Processor("q")), (link,), ops, deps))
    assert {t.dst: (t.start, t.end) for t in timeline.transfers} == {"y": (1, 2), "x": (2, 3)}
    assert times(timeline)["y"] == (2, 3) and times(timeline)["x"] == (3, 4)


def test_priority_decides_among_ready_ops_and_ties_go_by_position():
    ops = (Op("x", "p", 1, priority=2), Op("y", "p", 1, priority=1), Op("z", "p", 1, priority=3),
           Op("w", "p", 1, priority=1))
    # y and w tie at 1: y comes first in the problem. Then x (2), then z (3).
    assert times(simulate(one_processor(*ops))) == {"y": (0, 1), "w": (1, 2), "x": (2, 3), "z": (3, 4)}


def test_tuple_priorities_compare_lexicographically():
    ops = (Op("a", "p", 1, (1, 0)), Op("b", "p", 1, (0, 5)), Op("c", "p", 1, (0, 2)))
    assert times(simulate(one_processor(*ops))) == {"c": (0, 1), "b": (1, 2), "a": (2, 3)}


def test_non_delay_a_free_stream_never_idles_while_an_op_is_ready():
    # On q, y (priority 0) waits for a (p, 0..1); x (priority 9) is ready at 0, so x runs 0..3
    # and y must wait for it: 3..4. A delay schedule would hold q for y; list scheduling does not.
    ops = (Op("a", "p", 1), Op("x", "q", 3, 9), Op("y", "q", 1, 0))
    problem = Problem((Processor("p"), Processor("q")), (), ops, (Dep("a", "y"),))
    assert times(simulate(problem)) == {"a": (0, 1), "x": (0, 3), "y": (3, 4)}


def test_ops_ready_at_the_same_instant_compete_by_priority():
    # a ends at 2 on p and frees b (priority 0) and c (priority 1), which both become ready at 2: b first.
    ops = (Op("a", "p", 2), Op("c", "p", 1, 1), Op("b", "p", 1, 0))
    problem = one_processor(*ops, deps=(Dep("a", "b"), Dep("a", "c")))
    assert times(simulate(problem)) == {"a": (0, 2), "b": (2, 3), "c": (3, 4)}


def test_two_streams_run_in_parallel():
    # a takes stream 0 at 0, b stream 1 at 0; c waits for the first free stream: 4..5 on stream 0.
    timeline = simulate(one_processor(Op("a", "p", 4), Op("b", "p", 4), Op("c", "p", 1), streams=2))
    assert times(timeline) == {"a": (0, 4), "b": (0, 4), "c": (4, 5)}
    assert streams_of(timeline) == {"a": 0, "b": 1, "c": 0}
    assert timeline.makespan == 5
    assert timeline.utilization() == {"p": pytest.approx(9 / 10)}  # (4 + 4 + 1) / (5 × 2)


def test_a_pinned_op_waits_for_its_own_stream():
    # a on stream 0 (0..4), b on stream 1 (0..4); c is pinned to stream 1 and waits for b: 4..5,
    # although stream 0 frees at the same time.
    ops = (Op("a", "p", 4), Op("b", "p", 4), Op("c", "p", 1, stream=1))
    timeline = simulate(one_processor(*ops, streams=2))
    assert times(timeline)["c"] == (4, 5) and streams_of(timeline)["c"] == 1


def test_an_unpinned_op_leaves_a_stream_its_pinned_rival_needs():
    # u (priority 0, any stream) and v (priority 1, pinned to stream 0) are both ready at 0.
    # u goes first but takes stream 1, so v starts at 0 on stream 0 instead of waiting 3 units.
    ops = (Op("u", "p", 3, 0), Op("v", "p", 2, 1, stream=0))
    timeline = simulate(one_processor(*ops, streams=2))
    assert times(timeline) == {"u": (0, 3), "v": (0, 2)}
    assert streams_of(timeline) == {"u": 1, "v": 0}


def test_zero_length_ops_and_transfers():
    # z lasts 0 and sends 0 bytes over a link with latency 2: transfer 1..3, w runs 3..4.
    link = Link("l", "p", "q", bandwidth=1, latency=2)
    ops = (Op("a", "p", 1), Op("z", "p", 0), Op("w", "q", 1))
    problem = Problem((Processor("p"), Processor("q")), (link,), ops, (Dep("a", "z"), Dep("z", "w", 0, "l")))
    timeline = simulate(problem)
    assert times(timeline) == {"a": (0, 1), "z": (1, 1), "w": (3, 4)}
    assert [(t.start, t.end) for t in timeline.transfers] == [(1, 3)]


def test_a_custom_policy_is_a_key_function():
    reverse = KeyPolicy("reverse", lambda op: -op.priority)
    assert isinstance(reverse, Policy) and isinstance(PriorityPolicy(), Policy)
    ops = (Op("a", "p", 1, 1), Op("b", "p", 1, 2), Op("c", "p", 1, 3))
    timeline = simulate(one_processor(*ops), reverse)
    assert times(timeline) == {"c": (0, 1), "b": (1, 2), "a": (2, 3)}
    assert timeline.policy == "reverse" and simulate(one_processor(*ops)).policy == "priority"


def test_processors_may_use_unlike_keys_but_one_processor_may_not():
    mixed = Problem((Processor("p"), Processor("q")), (), (Op("a", "p", 1, (0, 1)), Op("b", "q", 1, 3)), ())
    assert times(simulate(mixed)) == {"a": (0, 1), "b": (0, 1)}
    with pytest.raises(InputError, match="compare"):
        simulate(one_processor(Op("a", "p", 1, (0, 1)), Op("b", "p", 1, 3)))


def test_simulation_is_deterministic():
    link = Link("l", "p", "q", bandwidth=3, latency=0.25)
    ops = tuple(Op(f"o{i}", "pq"[i % 2], 1 + (i * 7) % 5 / 2, (i * 3) % 4) for i in range(40))
    deps = tuple(Dep(f"o{i}", f"o{j}", 2, "l" if (i % 2, j % 2) == (0, 1) else None)
                 for i in range(40) for j in range(i + 1, min(40, i + 4)) if (i % 2, j % 2) != (1, 0))
    problem = Problem((Processor("p", 2), Processor("q")), (link,), ops, deps)
    first, second = simulate(problem), simulate(problem)
    assert first == second
    assert validate_timeline(problem, first) == []


def test_peak_memory_frees_before_allocs_at_the_same_instant():
    # f1 0..1 holds 10, f2 1..2 adds 5 (15), g1 2..3 frees 10 at 3, f3 3..4 adds 7 at 3:
    # the free at 3 applies first, so 5 + 7 = 12 < 15. Peak 15.
    ops = (Op("f1", "p", 1, alloc_bytes=10), Op("f2", "p", 1, alloc_bytes=5), Op("g1", "p", 1, free_bytes=10),
           Op("f3", "p", 1, alloc_bytes=7))
    deps = (Dep("f1", "f2"), Dep("f2", "g1"), Dep("g1", "f3"))
    timeline = simulate(Problem((Processor("p"), Processor("q")), (), ops, deps))
    assert timeline.peak_memory() == {"p": 15, "q": 0}


def test_peak_memory_counts_what_runs_at_once_on_streams():
    # Two streams: a (alloc 4) 0..2 and b (alloc 6) 0..3 together hold 10; c frees 4 at its end (3),
    # d (after c, alloc 1) starts at 3: 10 - 4 + 1 = 7. A zero-length op z (alloc 8, free 8) at 3
    # held its bytes for an instant: 10 - 4 + 1 + 8 = 15 at 3.
    ops = (Op("a", "p", 2, alloc_bytes=4), Op("b", "p", 3, alloc_bytes=6), Op("c", "p", 1, free_bytes=4),
           Op("d", "p", 1, alloc_bytes=1), Op("z", "p", 0, alloc_bytes=8, free_bytes=8))
    deps = (Dep("a", "c"), Dep("c", "d"), Dep("c", "z"))
    timeline = simulate(one_processor(*ops, deps=deps, streams=2))
    assert times(timeline)["c"] == (2, 3) and times(timeline)["d"] == (3, 4) and times(timeline)["z"] == (3, 3)
    assert timeline.peak_memory() == {"p": 15}
    without_z = simulate(one_processor(*ops[:4], deps=deps[:2], streams=2))
    assert without_z.peak_memory() == {"p": 10}


def test_frame_has_slot_columns_and_tags():
    ops = (Op("a", "p", 2, tags={"layer": "l1", "kind": "F"}), Op("b", "p", 1, tags=(("kind", "G"),)))
    timeline = simulate(one_processor(*ops, deps=(Dep("a", "b"),)))
    frame = timeline.to_frame()
    assert list(frame.columns[:5]) == ["op", "processor", "stream", "start", "end"]
    assert frame.set_index("op").loc["a", "layer"] == "l1" and frame.set_index("op").loc["b", "kind"] == "G"
    assert math.isnan(frame.set_index("op").loc["b", "layer"])
    assert timeline.busy_time("p") == 3 and hash(ops[0]) == hash(Op("a", "p", 2, tags={"layer": "l1", "kind": "F"}))
    assert list(simulate(one_processor()).to_frame().columns) == ["op", "processor", "stream", "start", "end"]


def test_problem_stores_tuples_and_looks_up_by_name():
    problem = Problem([Processor("p")], [], [Op("a", "p", 1)], [])
    assert isinstance(problem.ops, tuple) and problem.op("a").duration == 1 and problem.processor("p").streams == 1
    assert hash(problem) == hash(Problem((Processor("p"),), (), (Op("a", "p", 1),), ()))


P, Q = Processor("p"), Processor("q")


@pytest.mark.parametrize("build, needle", [
    (lambda: Problem((P,), (), (Op("a", "p", 1), Op("b", "p", 1)), (Dep("a", "b"), Dep("b", "a"))), "cycle"),
    (lambda: Problem((P,), (), (Op("a", "p", 1),), (Dep("a", "a"),)), "cycle"),
    (lambda: Problem((P,), (), (Op("a", "q", 1),), ()), "unknown processor"),
    (lambda: Problem((P, Q), (Link("l", "q", "p", 1),), (Op("a", "p", 1), Op("b", "q", 1)), (Dep("a", "b", 1, "l"),)),
     "runs 'q' -> 'p'"),
    (lambda: Problem((P, Q), (), (Op("a", "p", 1), Op("b", "q", 1)), (Dep("a", "b", 1, "l"),)), "unknown link"),
    (lambda: Problem((P,), (Link("l", "p", "r", 1),), (), ()), "unknown processor 'r'"),
    (lambda: Problem((P,), (Link("l", "p", "p", 0),), (), ()), "bandwidth"),
    (lambda: Problem((P,), (), (Op("a", "p", -1),), ()), "duration"),
    (lambda: Problem((P,), (), (Op("a", "p", math.nan),), ()), "duration"),
    (lambda: Problem((P,), (), (Op("a", "p", 1), Op("a", "p", 1)), ()), "duplicate op"),
    (lambda: Problem((P, P), (), (), ()), "duplicate processor"),
    (lambda: Problem((Processor("p", 0),), (), (), ()), "stream"),
    (lambda: Problem((P,), (), (Op("a", "p", 1, stream=1),), ()), "pinned"),
    (lambda: Problem((P,), (), (Op("a", "p", 1),), (Dep("a", "b"),)), "unknown op 'b'"),
    (lambda: Problem((P,), (), (Op("a", "p", 1), Op("b", "p", 1)), (Dep("a", "b", -1),)), "negative"),
])
def test_bad_problems_are_input_errors(build, needle):
    with pytest.raises(InputError, match=needle):
        build()
