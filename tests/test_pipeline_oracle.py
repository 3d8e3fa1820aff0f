"""A partition's 1F1B, LayerPipe and GPipe timelines (:func:`archsim.policies.pipeline.simulate_partition`)
over free links against the papers' closed forms on uniform stages and a from-scratch timing of each schedule's
per-stage action order on unequal stages: a chain of layers in contiguous stages, and a branching graph whose
stages still form a chain. The reference and the orders' definitions: tests/pipeline_oracle_timing.py; over
links of finite bandwidth: tests/test_pipeline_oracle_links.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_oracle_timing import SCHEDULES, archsim_pieces, check_against_reference, in_flight

# --- closed forms on uniform stages ------------------------------------------------------------

SHAPES = [(1, 1), (2, 1), (2, 4), (3, 2), (3, 6), (4, 3), (4, 8)]  # (S, m), m below and above S


@pytest.mark.parametrize("f, d, g", [(1.0, 1.0, 1.0), (2.0, 3.0, 1.0)])
@pytest.mark.parametrize("stages, m", SHAPES)
@pytest.mark.parametrize("schedule", ["1f1b", "1f1b-window", "gpipe"])
def test_uniform_stages_take_m_plus_s_minus_1_steps(schedule, stages, m, f, d, g):
    """Makespan (m + S − 1)(F + B) for 1F1B and GPipe alike (Narayanan et al. 2021, Huang et al. 2019)."""
    _, run, _ = archsim_pieces(schedule, stages, stages, m, [f] * stages, [d] * stages, [g] * stages)
    assert run.timeline.makespan == pytest.approx((m + stages - 1) * (f + d + g))


@pytest.mark.parametrize("stages, m", SHAPES)
@pytest.mark.parametrize("schedule, peak", [("1f1b", lambda S, m, s: min(S - s + 1, m)),
                                            ("1f1b-window", lambda S, m, s: min(S - s + 1, m)),
                                            ("layerpipe", lambda S, m, s: min(S - s + 1, m)),
                                            ("gpipe", lambda S, m, s: m)])
def test_peak_microbatches_in_flight_are_the_papers(schedule, peak, stages, m):
    """1F1B holds S − s + 1 micro-batches on 1-based stage s (S on the first), GPipe m on every
    stage: counted from the timeline's slots and from the stash memory (one byte per micro-batch,
    allocated by F, freed by G), both reaching the limit."""
    ones = [1.0] * stages
    pieces, run, _ = archsim_pieces(schedule, stages, stages, m, ones, [2.0] * stages, ones, memory=True)
    expected = [peak(stages, m, s) for s in range(1, stages + 1)]
    assert in_flight(pieces) == expected
    memory = run.timeline.peak_memory()
    assert [memory[f"p{s}"] for s in range(1, stages + 1)] == expected


# --- the reference on unequal stages -------------------------------------------------------------


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("layers, stages, m", [(3, 3, 3), (3, 3, 5), (5, 2, 4), (6, 4, 7), (4, 4, 2), (7, 3, 6)])
def test_unequal_stages_time_as_the_reference(schedule, layers, stages, m):
    f, d, g = [3, 1, 4, 1, 5, 9, 2][:layers], [2, 6, 5, 3, 5, 8, 9][:layers], [7, 9, 3, 2, 3, 8, 4][:layers]
    check_against_reference(schedule, layers, stages, m, f, d, g)


def test_hand_timed_three_stages():
    """The reference itself on a hand-timed case: stages F = 1, 2, 3, δ = 2, 1, 1, G = 1, 1, 2, m = 3.
    1F1B: stage 3 runs F0 3–6, B0 6–9, F1 9–12, B1 12–15, F2 15–18, B2 18–21; stage 2 B0 9–11,
    F2 11–13, B1 15–17, B2 21–23; stage 1 B0 11–14, B1 17–20, B2 23–26. LayerPipe sends δ before G:
    stage 3 δ0 6–7, stage 2 δ0 7–8, stage 1 δ0 8–10, ... stage 1 ends G2 at 23."""
    one = check_against_reference("1f1b", 3, 3, 3, [1, 2, 3], [2, 1, 1], [1, 1, 2])
    assert one[2] == [("F", 0, 3, 6), ("B", 0, 6, 9), ("F", 1, 9, 12), ("B", 1, 12, 15), ("F", 2, 15, 18),
                      ("B", 2, 18, 21)]
    assert [x for x in one[1] if x[0] == "B" or x[1] == 2] == [("B", 0, 9, 11), ("F", 2, 11, 13), ("B", 1, 15, 17),
                                                               ("B", 2, 21, 23)]
    assert [x for x in one[0] if x[0] == "B"] == [("B", 0, 11, 14), ("B", 1, 17, 20), ("B", 2, 23, 26)]
    layerpipe = check_against_reference("layerpipe", 3, 3, 3, [1, 2, 3], [2, 1, 1], [1, 1, 2])
    assert [x[1:] for stage in layerpipe for x in stage if x[:2] == ("D", 0)] == [(0, 8, 10), (0, 7, 8), (0, 6, 7)]
    assert layerpipe[0][-1] == ("G", 2, 22, 23)


def test_layerpipe_cool_down_runs_the_next_delta_between_weight_gradients():
    """Two stages of three and two layers, m = 4: stage 1's last window is free of admission, and the
    δ of micro-batch 3 arrives (stage 2 ends it at 116) while stage 1 runs G of micro-batch 2's last
    layer (115–118): it runs next, before the other two G ops of micro-batch 2."""
    layerpipe = check_against_reference("layerpipe", 5, 2, 4, [3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [7, 9, 3, 2, 3])
    assert [x[:2] for x in layerpipe[0][-4:]] == [("G", 2), ("D", 3), ("G", 2), ("G", 3)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("layers, stages, delta", [(3, 3, [1, 0, 1]), (4, 2, [2, 0, 3, 1]), (4, 2, [2, 3, 0, 1]),
                                                   (4, 4, [1, 0, 0, 2]), (5, 3, [1, 2, 0, 0, 4])])
def test_a_layer_whose_delta_costs_nothing_still_passes_the_gradient_on(schedule, layers, stages, delta):
    """A layer's δ may take no time (a reshape, a dropout: PipeDream's graph.txt profiles have many), but
    the gradient still flows through it: the stages before it wait for the backward of those after."""
    check_against_reference(schedule, layers, stages, 3, [2, 1, 3, 1, 2][:layers], delta, [1, 2, 1, 3, 1][:layers])


# x → a → {b, c} → d: over the stages x a | b c | d the stages still form a chain (b and c read a, the
# first stage's last layer; d reads both; a's δ waits for both of theirs, the second stage's whole δ),
# so the stage-level reference times it; the layers' graph decides only which ops wait for which.
BRANCHED = ((0, 1), (1, 2), (1, 3), (2, 4), (3, 4))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [1, 3, 5])
@pytest.mark.parametrize("f, d, g", [([3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [7, 9, 3, 2, 3]),
                                     ([1, 2, 9, 1, 2], [1, 1, 2, 8, 1], [2, 1, 1, 3, 2])])
def test_a_branching_graph_times_as_the_reference(schedule, m, f, d, g):
    check_against_reference(schedule, 5, 3, m, f, d, g, edges=BRANCHED)


@settings(max_examples=60)
@given(costs=st.lists(st.tuples(st.integers(1, 9), st.integers(0, 9), st.integers(1, 9)), min_size=1, max_size=6),
       stages=st.integers(1, 4), m=st.integers(1, 7), schedule=st.sampled_from(SCHEDULES))
def test_any_chain_times_as_the_reference(costs, stages, m, schedule):
    f, d, g = (list(x) for x in zip(*costs))
    check_against_reference(schedule, len(costs), min(stages, len(costs)), m, f, d, g)
