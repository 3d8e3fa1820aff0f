"""The event simulator against hand-worked schedules, and the validator against planted bugs."""

import dataclasses

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.errors import InputError
from archsim.sim import Dep, Link, Op, Problem, Processor, Timeline, simulate, validate_timeline


def starts(timeline):
    return {s.op: (s.start, s.end) for s in timeline.slots}


def test_chain_on_one_processor_runs_back_to_back():
    problem = Problem((Processor("p"),), (), (Op("a", "p", 2), Op("b", "p", 3), Op("c", "p", 1)),
                      (Dep("a", "b"), Dep("b", "c")))
    assert starts(simulate(problem)) == {"a": (0, 2), "b": (2, 5), "c": (5, 6)}


def test_transfer_on_a_link_delays_the_consumer():
    # a on p ends at 2; 12 bytes at 4 bytes/unit + latency 1 → transfer 2..6; b on q runs 6..7.
    link = Link("p->q", "p", "q", bandwidth=4, latency=1)
    problem = Problem((Processor("p"), Processor("q")), (link,), (Op("a", "p", 2), Op("b", "q", 1)),
                      (Dep("a", "b", bytes=12, link="p->q"),))
    timeline = simulate(problem)
    assert starts(timeline) == {"a": (0, 2), "b": (6, 7)}
    assert [(t.start, t.end) for t in timeline.transfers] == [(2, 6)]
    assert validate_timeline(problem, timeline) == []


def test_priority_decides_among_ready_ops():
    ops = (Op("x", "p", 1, priority=2), Op("y", "p", 1, priority=1), Op("z", "p", 1, priority=3))
    assert starts(simulate(Problem((Processor("p"),), (), ops, ()))) == {"y": (0, 1), "x": (1, 2), "z": (2, 3)}


def test_two_streams_run_in_parallel_and_pins_are_honoured():
    ops = (Op("a", "p", 4), Op("b", "p", 4), Op("c", "p", 1, stream=1))
    timeline = simulate(Problem((Processor("p", streams=2),), (), ops, ()))
    slots = {s.op: s for s in timeline.slots}
    # a takes stream 0 at 0, b stream 1 at 0; c is pinned to stream 1 and waits for b: 4..5.
    assert (slots["a"].start, slots["b"].start, slots["c"].start, slots["c"].stream) == (0, 0, 4, 1)
    assert timeline.makespan == 5


def test_peak_memory_frees_before_allocs_at_the_same_instant():
    ops = (Op("f1", "p", 1, alloc_bytes=10), Op("f2", "p", 1, alloc_bytes=5), Op("g1", "p", 1, free_bytes=10),
           Op("f3", "p", 1, alloc_bytes=7))
    deps = (Dep("f1", "f2"), Dep("f2", "g1"), Dep("g1", "f3"))
    timeline = simulate(Problem((Processor("p"),), (), ops, deps))
    assert timeline.peak_memory() == {"p": 15}  # 10 + 5, then g1 frees 10 before f3 adds 7 → 12


@pytest.mark.parametrize("build", [
    lambda: Problem((Processor("p"),), (), (Op("a", "p", 1), Op("b", "p", 1)), (Dep("a", "b"), Dep("b", "a"))),
    lambda: Problem((Processor("p"),), (), (Op("a", "q", 1),), ()),
    lambda: Problem((Processor("p"), Processor("q")), (Link("l", "q", "p", 1),),
                    (Op("a", "p", 1), Op("b", "q", 1)), (Dep("a", "b", 1, "l"),)),
    lambda: Problem((Processor("p"),), (), (Op("a", "p", -1),), ()),
    lambda: Problem((Processor("p"),), (), (Op("a", "p", 1), Op("a", "p", 1)), ()),
])
def test_bad_problems_are_input_errors(build):
    with pytest.raises(InputError):
        build()


def random_problem(draw_ops, procs, streams, deps_mask, with_links):
    processors = tuple(Processor(f"p{i}", streams) for i in range(procs))
    ops = tuple(Op(f"o{i}", f"p{proc % procs}", float(dur), priority=prio) for i, (dur, proc, prio) in enumerate(draw_ops))
    links = []
    deps = []
    names = {}
    pairs = [(i, j) for j in range(len(ops)) for i in range(j)]
    for (i, j), on in zip(pairs, deps_mask):
        if not on:
            continue
        a, b = ops[i], ops[j]
        link = None
        if with_links and a.processor != b.processor:
            key = (a.processor, b.processor)
            if key not in names:
                names[key] = f"{a.processor}->{b.processor}"
                links.append(Link(names[key], *key, bandwidth=2.0, latency=0.5))
            link = names[key]
        deps.append(Dep(a.id, b.id, bytes=3, link=link))
    return Problem(processors, tuple(links), ops, tuple(deps))


problems = st.builds(
    random_problem,
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=25),
    st.integers(1, 4), st.integers(1, 2), st.lists(st.booleans(), max_size=300), st.booleans())


@settings(max_examples=150, deadline=None)
@given(problem=problems)
def test_random_dags_give_valid_timelines_within_list_scheduling_bounds(problem):
    timeline = simulate(problem)
    assert validate_timeline(problem, timeline) == []
    graph = nx.DiGraph()
    durations = {op.id: op.duration for op in problem.ops}
    graph.add_nodes_from(durations)
    links = {l.name: l for l in problem.links}
    for dep in problem.deps:
        graph.add_edge(dep.src, dep.dst, w=links[dep.link].transfer_time(dep.bytes) if dep.link else 0.0)
    longest = {}
    for node in nx.topological_sort(graph):
        longest[node] = durations[node] + max((longest[u] + graph[u][node]["w"] for u in graph.predecessors(node)),
                                              default=0.0)
    streams = {p.name: p.streams for p in problem.processors}
    work = {}
    for op in problem.ops:
        work[op.processor] = work.get(op.processor, 0.0) + op.duration
    span = timeline.makespan
    assert span >= max(longest.values()) - 1e-9
    assert span >= max(w / streams[p] for p, w in work.items()) - 1e-9
    transfer_total = sum(t.end - t.start for t in timeline.transfers)
    assert span <= sum(durations.values()) + transfer_total + 1e-9


def brute_force_one_stream(problem):
    """Independent reference: repeatedly start the best-ranked op whose predecessors are done."""
    ops = {op.id: op for op in problem.ops}
    order = {op.id: i for i, op in enumerate(problem.ops)}
    preds = {op_id: {d.src for d in problem.deps if d.dst == op_id} for op_id in ops}
    done, time, result = set(), 0.0, {}
    while len(done) < len(ops):
        ready = [o for o in ops if o not in done and preds[o] <= done]
        best = min(ready, key=lambda o: (ops[o].priority, order[o]))
        result[best] = (time, time + ops[best].duration)
        time += ops[best].duration
        done.add(best)
    return result


@settings(max_examples=100, deadline=None)
@given(problem=st.builds(random_problem, st.lists(st.tuples(st.integers(0, 5), st.just(0), st.integers(0, 3)),
                                                  min_size=1, max_size=6),
                         st.just(1), st.just(1), st.lists(st.booleans(), max_size=15), st.just(False)))
def test_one_processor_schedule_equals_brute_force_priority_order(problem):
    assert starts(simulate(problem)) == brute_force_one_stream(problem)


@pytest.fixture
def valid():
    link = Link("p->q", "p", "q", bandwidth=1, latency=0)
    problem = Problem((Processor("p"), Processor("q")), (link,),
                      (Op("a", "p", 2), Op("b", "p", 2), Op("c", "q", 1)),
                      (Dep("a", "b"), Dep("a", "c", bytes=3, link="p->q")))
    timeline = simulate(problem)
    assert validate_timeline(problem, timeline) == []
    return problem, timeline


def replace_slot(timeline, op, **changes):
    slots = tuple(dataclasses.replace(s, **changes) if s.op == op else s for s in timeline.slots)
    return Timeline(slots, timeline.transfers, timeline.problem)


@pytest.mark.parametrize("plant, needle", [
    (lambda t: replace_slot(t, "b", start=1.0, end=3.0), "before"),          # b before its dependency a ends
    (lambda t: replace_slot(t, "b", start=1.5, end=3.5), "overlap"),         # b overlaps a on the one stream
    (lambda t: Timeline(t.slots, tuple(dataclasses.replace(x, end=x.end - 1) for x in t.transfers), t.problem),
     "took"),                                                                 # a shortened transfer
    (lambda t: Timeline(t.slots[:-1], t.transfers, t.problem), "never ran"),  # a dropped op
    (lambda t: replace_slot(t, "c", processor="p"), "assigned"),             # op on the wrong processor
    (lambda t: replace_slot(t, "c", end=9.0), "lasted"),                     # wrong duration
])
def test_validator_catches_planted_bugs(valid, plant, needle):
    problem, timeline = valid
    errors = validate_timeline(problem, plant(timeline))
    assert errors and any(needle in e for e in errors), errors


def test_every_simulation_in_the_tests_is_validated():
    """tests/conftest.py wraps the simulator; a run through a policy module must go through it."""
    from conftest import VALIDATED

    from archsim.partition import pipedream_partition, profile_from_costs
    from archsim.policies import pipeline

    before = VALIDATED["count"]
    profile = profile_from_costs(["a", "b"], [1, 1], [1, 1], [1, 1])
    pipeline.simulate_partition(pipedream_partition(profile, 2), profile, 2)
    assert VALIDATED["count"] == before + 1
