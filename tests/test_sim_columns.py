"""Problems built from columns (``Problem.from_arrays``) against the same problems built from Op
and Dep objects: equal problems, equal timelines, and the same error for the same mistake (the
rules are checked once, over the columns, for both)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from test_sim_properties import problems

from archsim.errors import InputError
from archsim.sim import Dep, KeyPolicy, Link, Op, Problem, Processor, simulate
from archsim.sim.columns import DepColumns, OpColumns

P, Q = Processor("p", 2), Processor("q")
LINKS = (Link("pq", "p", "q", 2.0, 0.5), Link("qp", "q", "p", 4.0))


def columns_of(problem: Problem) -> Problem:
    """``problem`` rebuilt from columns written out independently of Problem's own conversion."""
    procs = {p.name: i for i, p in enumerate(problem.processors)}
    links = {link.name: i for i, link in enumerate(problem.links)}
    ids = [op.id for op in problem.ops]
    where = {op_id: i for i, op_id in enumerate(ids)}
    tag_keys = list(dict.fromkeys(key for op in problem.ops for key, _ in op.tags))
    ops = OpColumns(ids, np.array([procs[op.processor] for op in problem.ops]),
                    np.array([float(op.duration) for op in problem.ops]),
                    np.array([-1 if op.stream is None else op.stream for op in problem.ops]),
                    np.array([op.alloc_bytes for op in problem.ops]), np.array([op.free_bytes for op in problem.ops]),
                    [op.priority for op in problem.ops],
                    tuple((key, [op.tag(key) for op in problem.ops]) for key in tag_keys))
    deps = DepColumns(np.array([where[d.src] for d in problem.deps], dtype=np.int64),
                      np.array([where[d.dst] for d in problem.deps], dtype=np.int64),
                      np.array([d.bytes for d in problem.deps]),
                      np.array([-1 if d.link is None else links[d.link] for d in problem.deps], dtype=np.int64))
    return Problem.from_arrays(problem.processors, problem.links, ops, deps)


@pytest.mark.long
@settings(max_examples=150, deadline=None)
@given(problem=problems(max_ops=30))
def test_random_problems_from_columns_equal_their_objects(problem):
    rebuilt = columns_of(problem)
    assert rebuilt.processors == problem.processors and rebuilt.links == problem.links
    assert [(op.id, op.processor, op.duration, op.priority, op.stream, op.alloc_bytes, op.free_bytes)
            for op in rebuilt.ops] == [(op.id, op.processor, op.duration, op.priority, op.stream, op.alloc_bytes,
                                        op.free_bytes) for op in problem.ops]
    assert rebuilt.deps == problem.deps
    assert tuple(simulate(rebuilt).slots) == tuple(simulate(problem).slots)
    policy = KeyPolicy("by duration", lambda op: (-op.duration, op.id))
    assert tuple(simulate(rebuilt, policy).slots) == tuple(simulate(problem, policy).slots)


def test_integer_priority_rows_rank_as_tuples():
    ops = OpColumns(["a", "b", "c", "d"], np.array([0, 0, 0, 1]), np.ones(4),
                    priority=np.array([[1, 0, 5], [0, 2, 1], [0, 2, 0], [3, 3, 3]]))
    problem = Problem.from_arrays((P, Q), (), ops, DepColumns(np.zeros(0, np.int64), np.zeros(0, np.int64)))
    assert [op.priority for op in problem.ops] == [(1, 0, 5), (0, 2, 1), (0, 2, 0), (3, 3, 3)]
    objects = Problem((P, Q), (), problem.ops, ())
    assert tuple(simulate(problem).slots) == tuple(simulate(objects).slots)


BAD = [  # (ops, deps, the message both ways)
    ((Op("a", "p", 1.0), Op("a", "p", 1.0)), (), "duplicate op id 'a'"),
    ((Op("a", "p", -1.0),), (), "op 'a' needs a finite duration >= 0, got -1.0"),
    ((Op("a", "p", math.inf),), (), "op 'a' needs a finite duration >= 0, got inf"),
    ((Op("a", "p", 1.0), Op("b", "q", 1.0, stream=1)), (), "op 'b' pinned to stream 1, but 'q' has 1"),
    ((Op("a", "p", 1.0, alloc_bytes=-2),), (), "op 'a' allocates or frees a negative number of bytes"),
    ((Op("a", "p", 1.0), Op("b", "q", 1.0)), (Dep("a", "b", -3, "pq"),), "dependency 'a' -> 'b' moves negative bytes"),
    ((Op("a", "p", 1.0), Op("b", "q", 1.0)), (Dep("a", "b", math.nan, "pq"),), "dependency 'a' -> 'b' moves NaN bytes"),
    ((Op("a", "p", 1.0), Op("b", "q", 1.0)), (Dep("a", "b", math.inf, "pq"),),
     "dependency 'a' -> 'b' moves infinite bytes"),
    ((Op("a", "p", 1.0), Op("b", "q", 1.0)), (Dep("a", "b", 3, "qp"),),
     "link 'qp' runs 'q' -> 'p', but dependency 'a' -> 'b' runs 'p' -> 'q'"),
    ((Op("a", "p", 1.0), Op("b", "p", 1.0)), (Dep("a", "b"), Dep("b", "a")), "dependencies contain a cycle"),
    # the first op with a mistake is named, by its first mistake
    ((Op("a", "p", 1.0), Op("b", "p", -1.0, alloc_bytes=-1), Op("b", "p", 1.0)), (), "op 'b' needs a finite"),
]


def _raw_columns(ops, deps):
    names = {"p": 0, "q": 1}
    where = {op.id: i for i, op in enumerate(ops)}
    return (OpColumns([op.id for op in ops], np.array([names[op.processor] for op in ops]),
                      np.array([op.duration for op in ops]),
                      np.array([-1 if op.stream is None else op.stream for op in ops]),
                      np.array([op.alloc_bytes for op in ops])),
            DepColumns(np.array([where[d.src] for d in deps], dtype=np.int64),
                       np.array([where[d.dst] for d in deps], dtype=np.int64), np.array([d.bytes for d in deps]),
                       np.array([-1 if d.link is None else ("pq", "qp").index(d.link) for d in deps],
                                dtype=np.int64)))


@pytest.mark.parametrize("ops, deps, message", BAD)
def test_the_same_mistake_gives_the_same_error_both_ways(ops, deps, message):
    with pytest.raises(InputError) as from_objects:
        Problem((P, Q), LINKS, ops, deps)
    with pytest.raises(InputError) as from_columns:
        Problem.from_arrays((P, Q), LINKS, *_raw_columns(ops, deps))
    assert message in str(from_objects.value) and str(from_columns.value) == str(from_objects.value)


def test_columns_name_out_of_range_positions():
    ops = OpColumns(["a"], np.array([2]), np.ones(1))
    with pytest.raises(InputError, match="op 'a' on unknown processor '#2'"):
        Problem.from_arrays((P, Q), (), ops, DepColumns(np.zeros(0, np.int64), np.zeros(0, np.int64)))
    ops = OpColumns(["a"], np.array([0]), np.ones(1))
    with pytest.raises(InputError, match="names unknown op '#4'"):
        Problem.from_arrays((P, Q), (), ops, DepColumns(np.array([0]), np.array([4])))
    with pytest.raises(InputError, match="uses unknown link '#7'"):
        Problem.from_arrays((P, Q), (), ops, DepColumns(np.array([0]), np.array([0]), link=np.array([7])))
    with pytest.raises(InputError, match="differ in length"):
        Problem.from_arrays((P, Q), (), OpColumns(["a", "b"], np.array([0]), np.ones(2)),
                            DepColumns(np.zeros(0, np.int64), np.zeros(0, np.int64)))


def test_infinite_bytes_are_no_transfer_even_over_an_infinitely_fast_link():
    """∞ bytes / ∞ bytes per unit would time as NaN: refused as the problem is built, both ways; finite bytes
    over an infinitely fast link take its latency alone (b / ∞ = 0), in the engine and the reference alike."""
    from conftest import assert_same_as_reference

    fast = (Link("pq", "p", "q", math.inf, 0.25), Link("qp", "q", "p", math.inf))
    ops = (Op("a", "p", 1.0), Op("b", "q", 1.0))
    for build in (lambda deps: Problem((P, Q), fast, ops, deps),
                  lambda deps: Problem.from_arrays((P, Q), fast, *_raw_columns(ops, deps))):
        with pytest.raises(InputError, match="dependency 'a' -> 'b' moves infinite bytes"):
            build((Dep("a", "b", math.inf, "pq"),))
        problem = build((Dep("a", "b", 10**9, "pq"),))
        timeline = simulate(problem)
        assert timeline.makespan == 1.0 + 0.25 + 1.0  # a, the latency, b
        assert_same_as_reference(problem, None, timeline)
