"""1F1B and zero-bubble peers (B/W split) against the published figures for equal F = B = W."""

import pytest

from archsim.policies.stage_profile import StageProfile
from archsim.policies.zero_bubble import zb_schedule
from archsim.sim import validate_timeline

CASES = [(p, m) for p in (2, 3, 4, 6) for m in (2 * p, 3 * p)]


@pytest.mark.parametrize("stages, microbatches", CASES)
def test_1f1b_bubble_and_memory(stages, microbatches):
    """Bubble (p − 1)(T_F + T_B + T_W); the first stage holds p micro-batches' activations."""
    problem, timeline = zb_schedule(StageProfile.uniform(stages, 1.0, 1.0, 1.0), microbatches, "list-1f1b")
    assert validate_timeline(problem, timeline) == []
    assert timeline.makespan - 3 * microbatches == (stages - 1) * 3
    assert timeline.peak_memory()["s1"] == stages


@pytest.mark.parametrize("stages, microbatches", CASES)
def test_zb_h1_bubble_and_memory(stages, microbatches):
    """ZB-H1: bubble (p − 1)(T_F + T_B − T_W), memory as 1F1B's."""
    problem, timeline = zb_schedule(StageProfile.uniform(stages, 1.0, 1.0, 1.0), microbatches, "list-zb-h1")
    assert validate_timeline(problem, timeline) == []
    assert timeline.makespan - 3 * microbatches == (stages - 1) * (1 + 1 - 1)
    assert timeline.peak_memory()["s1"] == stages


@pytest.mark.parametrize("stages, microbatches", CASES)
def test_zb_h2_memory_and_its_makespan_bubble(stages, microbatches):
    """ZB-H2 holds 2p − 1 activations on the first stage as published. Its makespan bubble is
    (p − 1)·T_F, the least any schedule can have (the last stage gets its first input after
    (p − 1)·T_F and has 3m units of work); the published (p − 1)(T_F + T_B − 2T_W) = 0 does not
    measure the makespan."""
    problem, timeline = zb_schedule(StageProfile.uniform(stages, 1.0, 1.0, 1.0), microbatches, "list-zb-h2")
    assert validate_timeline(problem, timeline) == []
    assert timeline.peak_memory()["s1"] == 2 * stages - 1
    assert timeline.makespan - 3 * microbatches == stages - 1


def _greedy_list_makespan(f, i, w, m: int, limit, fused: bool) -> float:
    """From scratch, the list schedules' rules as archsim.policies.zero_bubble states them: F_s(b) after
    F_{s−1}(b), F_s(b − 1) and the backward of b − limit(p, s) (the in-flight limit of 0-based stage s); the backward (I, or B = I + W fused) after
    F_s(b) and stage s + 1's backward of b; W after I. Whenever a stage is free it starts its ready op of
    highest priority — backward, then F, then W — oldest micro-batch first; stages never preempt."""
    p, backward, rank = len(f), "B" if fused else "I", {"B": 0, "I": 0, "F": 1, "W": 2}
    cost = {"F": f, "I": i, "W": w, "B": [x + y for x, y in zip(i, w)]}
    pending = {(kind, s, b) for s in range(p) for b in range(m) for kind in ("F", *(("B",) if fused else ("I", "W")))}
    end: dict[tuple[str, int, int], float] = {}
    free, now = [0.0] * p, 0.0

    def ready(kind: str, s: int, b: int) -> bool:
        needs = {"F": [("F", s - 1, b)] * (s > 0) + [("F", s, b - 1)] * (b > 0)
                 + [(backward, s, b - limit(p, s))] * (b >= limit(p, s)),
                 "W": [("I", s, b)]}.get(kind, [("F", s, b)] + [(backward, s + 1, b)] * (s < p - 1))
        return all(need in end and end[need] <= now for need in needs)

    while pending:
        for s in range(p):
            choices = [op for op in pending if op[1] == s and free[s] <= now and ready(*op)]
            if choices:
                op = min(choices, key=lambda x: (rank[x[0]], x[2]))
                end[op] = free[s] = now + cost[op[0]][s]
                pending.discard(op)
        now = min(e for e in end.values() if e > now)
    return max(end.values())


def test_uneven_costs_order_the_schedules():
    """Each list schedule's makespan is the from-scratch greedy timing's (before, only their order was
    asserted): list-1f1b 69, list-zb-h1 53, list-zb-h2 52 time units."""
    costs = StageProfile((2.0, 1.0, 3.0), (2.0, 2.0, 1.0), (1.0, 3.0, 1.0), activation=(1, 1, 1))
    spans = {s: zb_schedule(costs, 8, s)[1].makespan for s in ("list-1f1b", "list-zb-h1", "list-zb-h2")}
    assert spans["list-zb-h2"] <= spans["list-zb-h1"] <= spans["list-1f1b"]
    args = (costs.forward, costs.backward_input, costs.backward_weight, 8)
    assert spans == {"list-1f1b": _greedy_list_makespan(*args, lambda p, s: p - s, fused=True),
                     "list-zb-h1": _greedy_list_makespan(*args, lambda p, s: p - s, fused=False),
                     "list-zb-h2": _greedy_list_makespan(*args, lambda p, s: 2 * (p - s) - 1, fused=False)}
    assert spans == {"list-1f1b": 69.0, "list-zb-h1": 53.0, "list-zb-h2": 52.0}


@pytest.mark.parametrize("stages, chunks, microbatches", [(p, v, m) for p in (2, 4) for v in (1, 2, 4)
                                                          for m in (p, 2 * p, 4 * p)])
def test_interleaved_1f1b_bubble_and_memory(stages, chunks, microbatches):
    """Bubble (p − 1)(T_F + T_B + T_W)/v; the first device holds p·(1 + (p − 1)/(p·v)) micro-batches of
    activations, i.e. p·v + p − 1 chunk activations (Narayanan et al., SC'21)."""
    problem, timeline = zb_schedule(StageProfile.uniform(stages, 1.0, 1.0, 1.0), microbatches, "interleaved-1f1b", chunks)
    assert validate_timeline(problem, timeline) == []
    assert timeline.makespan - 3 * microbatches == pytest.approx((stages - 1) * 3 / chunks)
    expected = min(stages * chunks + stages - 1, microbatches * chunks) / chunks  # in micro-batch activations
    assert timeline.peak_memory()["r0"] == pytest.approx(expected)
