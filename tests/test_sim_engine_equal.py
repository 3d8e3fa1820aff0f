"""The array engine against the reference engine (tests/sim_reference.py, the original pure-Python
list scheduler): identical slots, transfers and summaries on random DAGs with streams, pins and
links, under the default and a custom policy, and on the larger ring problems of test_sim_scale.

(Every timeline any other test simulates is compared too, by the conftest fixture.)
"""

import pytest
from conftest import assert_same_as_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sim_properties import problems
from test_sim_scale import ring_problem

from archsim.sim import Dep, KeyPolicy, Link, Op, Problem, Processor, simulate


@pytest.mark.long
@settings(max_examples=400, deadline=None)
@given(problem=problems(max_ops=40))
def test_random_dags_equal_the_reference(problem):
    assert_same_as_reference(problem, None, simulate(problem))


@pytest.mark.long
@settings(max_examples=150, deadline=None)
@given(problem=problems(max_ops=25), salt=st.integers(0, 7))
def test_a_custom_policy_equals_the_reference(problem, salt):
    policy = KeyPolicy("hashed", lambda op: ((len(op.id) * 7 + salt) % 5, -op.duration))
    assert_same_as_reference(problem, policy, simulate(problem, policy))


@settings(max_examples=150, deadline=None)
@given(durations=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5]), min_size=2, max_size=30),
       allocs=st.lists(st.sampled_from([0, 1, 2.5, 7]), min_size=30, max_size=30),
       streams=st.integers(1, 3), fan=st.integers(1, 4))
def test_ties_zero_lengths_and_fractional_memory_equal_the_reference(durations, allocs, streams, fan):
    """Many equal times (events at one instant, zero-length ops and transfers) and float bytes."""
    procs = (Processor("a", streams), Processor("b", 1))
    links = (Link("ab", "a", "b", 4.0, 0.0), Link("ba", "b", "a", 1.0, 0.5))
    ops = tuple(Op(f"o{i}", "ab"[i % 2], d, priority=(i % 3, -i), alloc_bytes=allocs[i], free_bytes=allocs[i - 1],
                   stream=(i % streams) if i % 4 == 0 and i % 2 == 0 else None)
                for i, d in enumerate(durations))
    deps = []
    for i in range(len(ops)):
        for j in range(max(0, i - fan), i):
            link = None if i % 2 == j % 2 else ("ab" if j % 2 == 0 else "ba")
            deps.append(Dep(ops[j].id, ops[i].id, (i * j) % 3, link))
    problem = Problem(procs, links, ops, tuple(deps))
    assert_same_as_reference(problem, None, simulate(problem))


@pytest.mark.parametrize("processors, streams", [(8, 1), (3, 2), (300, 1)])
def test_ring_problems_equal_the_reference(processors, streams):
    problem = ring_problem(5_000, processors, streams, seed=processors)
    assert_same_as_reference(problem, None, simulate(problem))
