"""Micro-batch schedules in the simulator: hand-worked makespans, steady state, validity."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_layerpipe_split_oracle import SAMPLE_MAKESPANS

from archsim.array.config import ArrayConfig
from archsim.partition import build_profile, pipedream_partition, profile_from_costs
from archsim.planners import partition
from archsim.policies.pipeline import simulate_partition
from archsim.sim import validate_timeline
from archsim.workload import load_network


def two_layer_unit_profile():
    return profile_from_costs(["l0", "l1"], forward=[1, 1], weight_grad=[1, 1], delta=[1, 1])


@pytest.mark.parametrize("schedule, makespan", [
    # Two layers on two processors, F = G = D = 1, two micro-batches (derivations in comments):
    # 1f1b: p1 F0(0) 0-1, F0(1) 1-2; p2 F1(0) 1-2, then B of mb 0 (G1, D1) 2-4; stage 2 admits mb 1
    #       only after that: F1(1) 4-5, B 5-7; p1 B of mb 0 4-6, B of mb 1 7-9 → 9.
    ("1f1b", 9),
    # layerpipe: as 1f1b but D before G: p2 D1(0) 2-3 lets p1 start D0(0) at 3 while p2 runs
    #       G1(0) 3-4; F1(1) 4-5, D1(1) 5-6, G1(1) 6-7; p1 D0(0) 3-4, G0(0) 4-5, D0(1) 6-7, G0(1) 7-8 → 8.
    ("layerpipe", 8),
    # gpipe: all forwards (p2 F1 1-2, 2-3), backward of mb 1 first on p2 3-5 then mb 0 5-7;
    #       p1 mb 1 5-7, mb 0 7-9 → 9.
    ("gpipe", 9),
])
def test_hand_worked_two_stage_makespans(schedule, makespan):
    profile = two_layer_unit_profile()
    plan = pipedream_partition(profile, 2)
    run = simulate_partition(plan, profile, 2, schedule)
    assert validate_timeline(run.problem, run.timeline) == []
    assert run.timeline.makespan == makespan


@pytest.fixture(scope="module")
def sample():
    return build_profile(load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws"), 32, "paper")


@pytest.mark.parametrize("method", ["layerpipe", "pipedream", "gpipe"])
def test_many_microbatches_converge_to_the_steady_state(sample, method):
    plan = partition(sample, 3, method)
    m = 400
    run = simulate_partition(plan, sample, m, "1f1b" if method != "layerpipe" else "layerpipe")
    per_microbatch = run.timeline.makespan / m
    assert plan.max_stage_cost <= per_microbatch <= plan.max_stage_cost * 1.02


def test_delta_first_beats_1f1b_on_the_same_partition(sample):
    """Both makespans are the from-scratch δ′/δ″ timing's (test_layerpipe_split_oracle.py), not only
    their order: δ-first 2.890e8 cycles, 1F1B 3.006e8."""
    plan = partition(sample, 3, "layerpipe")
    one_f = simulate_partition(plan, sample, 8, "1f1b").timeline.makespan
    delta_first = simulate_partition(plan, sample, 8, "layerpipe").timeline.makespan
    assert (delta_first, one_f) == (SAMPLE_MAKESPANS["layerpipe"], SAMPLE_MAKESPANS["1f1b"])
    assert delta_first < one_f


def test_1f1b_stashes_less_than_gpipe(sample):
    plan = partition(sample, 3, "pipedream")
    gpipe = simulate_partition(plan, sample, 8, "gpipe").timeline.peak_memory()
    one_f = simulate_partition(plan, sample, 8, "1f1b").timeline.peak_memory()
    assert all(one_f[p] < gpipe[p] for p in gpipe if p != "p3") and one_f["p3"] <= gpipe["p3"]


@settings(max_examples=30, deadline=None)
@given(costs=st.lists(st.tuples(st.integers(1, 9), st.integers(0, 9), st.integers(0, 9)), min_size=2, max_size=6),
       processors=st.integers(1, 4), microbatches=st.integers(1, 6),
       schedule=st.sampled_from(["gpipe", "1f1b", "layerpipe"]), bandwidth=st.sampled_from([None, 3.0]))
def test_every_schedule_timeline_is_valid(costs, processors, microbatches, schedule, bandwidth):
    f, g, d = (list(x) for x in zip(*costs))
    n = len(costs)
    profile = profile_from_costs([f"l{i}" for i in range(n)], f, g, d, activation_bytes=[5] * n,
                                 delta_bytes=[5] * n)
    plan = pipedream_partition(profile, min(processors, n))  # PipeDream's plans use every machine
    run = simulate_partition(plan, profile, microbatches, schedule, bandwidth=bandwidth)
    assert validate_timeline(run.problem, run.timeline) == []
    work = sum(f) + sum(g) + sum(d)
    assert run.timeline.makespan >= work * microbatches / max(len(plan.stages), 1) - 1e-9
