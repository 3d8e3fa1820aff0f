"""Pipeline schedules against oracles that share no code with archsim's builders, simulator or their
frozen copies (tests/stage_run_reference.py, zb_list_reference.py, sim_reference.py): the papers'
closed forms on uniform stages, and a from-scratch timing of an order on unequal stages.

With no communication, an order fixes each rank's sequence, so its timing is a recurrence: an
action starts when its rank's previous action and its data dependencies have ended — forward after
the previous stage's forward, a backward (I, or B = I + W fused) after its own forward and the next
stage's backward, W after its I. ``timed`` evaluates it directly; the simulator must agree action
for action on every published order. The closed forms (time units of F, I, W per stage):

* GPipe and 1F1B: makespan (m + p − 1)(F + I + W) (Huang et al. 2019; Narayanan et al. 2021), so
  the idle share of the p ranks is GPipe's bubble fraction (p − 1)/(m + p − 1);
* ZB-H1: m(F + I + W) + (p − 1)(F + I − W) (Qi et al., ICLR'24, §2.2: the bubble (p − 1)(T_F + T_B − T_W));
  ZB-H2: m(F + I + W) + (p − 1)(F + I − 2W) where I ≥ 2W. Below that the paper's bubble is smaller
  than the last rank's start-up, (p − 1)F, which no order can beat (its first input arrives then and
  it has m(F + I + W) of work), so the makespan is that bound: the paper's figure, with equal F, I
  and W, draws a zero bubble that timed with every dependency is (p − 1)F;
* peak activations, in micro-batches held (each held from F to the backward that frees it, or to W
  when W keeps it): GPipe m on every rank; 1F1B p − r on rank r; ZB-H1 p − r if I frees the
  activation, p on every rank if W keeps it all; ZB-H2 2(p − r) − 1 and 2p − 1 (Qi et al., Table 1:
  1F1B and ZB-H1 pM_B, ZB-H2 (2p − 1)M_B); the list schedules hold at most their published limits
  p − s + 1 (1F1B, ZB-H1) and 2(p − s) + 1 (ZB-H2) on 1-based stage s, and reach them;
* interleaved 1F1B's peak chunk activations: Megatron-LM's warm-up count plus one (its test).
* interleaved 1F1B with v chunks of 1/v of a stage each and m a multiple of p:
  m(F + I + W) + (p − 1)(F + I + W)/v (Narayanan et al., SC'21, §2.2: the bubble shrinks by v).
"""

from __future__ import annotations

import itertools
import random

import pytest

from archsim.policies.stage_orders import ORDERS, published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import run_order
from archsim.policies.zero_bubble import zb_problem
from archsim.sim import simulate
from archsim.sim.bubble import bubble

SHAPES = [(1, 1), (2, 4), (3, 6), (4, 8), (4, 12), (3, 9)]
COSTS = [(1.0, 1.0, 1.0), (2.0, 3.0, 1.0), (1.0, 2.5, 0.5)]


def timed(order, forward, backward_input, backward_weight) -> dict[str, tuple[float, float]]:
    """(start, end) of every action, action id ``{stage}{kind}{micro-batch}``, by the recurrence above."""
    last = order.stages - 1
    fused = {(a.stage, a.microbatch) for actions in order.ranks for a in actions if a.kind == "B"}
    cost = {"F": forward, "I": backward_input, "W": backward_weight}
    ends: dict[str, float] = {}
    times: dict[str, tuple[float, float]] = {}
    position, clock = [0] * len(order.ranks), [0.0] * len(order.ranks)
    progress = True
    while progress:  # advance any rank whose next action's inputs have ended; a cycle stops advancing
        progress = False
        for rank, actions in enumerate(order.ranks):
            while position[rank] < len(actions):
                s, kind, i = actions[position[rank]]
                needs = []
                if kind == "F" and s > 0:
                    needs.append(f"{s - 1}F{i}")
                if kind in "IB":
                    needs.append(f"{s}F{i}")
                    if s < last:
                        needs.append(f"{s + 1}{'B' if (s + 1, i) in fused else 'I'}{i}")
                if kind == "W":
                    needs.append(f"{s}I{i}")
                if any(need not in ends for need in needs):
                    break
                start = max([clock[rank]] + [ends[need] for need in needs])
                length = cost["I"][s] + cost["W"][s] if kind == "B" else cost[kind][s]
                ends[f"{s}{kind}{i}"] = clock[rank] = start + length
                times[f"{s}{kind}{i}"] = (start, start + length)
                position[rank] += 1
                progress = True
    assert all(p == len(a) for p, a in zip(position, order.ranks)), "the order deadlocks"
    return times


def uniform(order, p: int, f: float, i: float, w: float) -> StageProfile:
    """Each rank's stage split evenly over its virtual stages (v chunks: 1/v of F, I, W each)."""
    per = order.stages // p
    return StageProfile((f / per,) * order.stages, (i / per,) * order.stages, (w / per,) * order.stages)


def cases(names):
    for name, (p, m), chunks in itertools.product(names, SHAPES, (2, 3)):
        if name == "dualpipev" and m < 2 * p or name.startswith("interleaved") and m % max(1, m // p):
            continue
        if chunks == 3 and not (name.startswith("interleaved") or name == "looped-bfs"):
            continue
        yield pytest.param(name, p, m, chunks, id=f"{name}-p{p}-m{m}-v{chunks}")


@pytest.mark.parametrize("name, p, m, chunks", list(cases(ORDERS)))
def test_every_order_times_as_the_recurrence_says(name, p, m, chunks):
    order = published_order(name, p, m, chunks)
    draw = random.Random(f"{name}{p}{m}{chunks}")
    costs = [tuple(draw.choice((0.5, 1.0, 1.5, 2.0, 3.0)) for _ in range(order.stages)) for _ in range(3)]
    expected = timed(order, *costs)
    run = run_order(order, StageProfile(*costs))
    got = {slot.op: (slot.start, slot.end) for slot in run.timeline.slots}
    assert got.keys() == expected.keys()
    for action, (start, end) in expected.items():
        assert got[action] == pytest.approx((start, end), abs=1e-9), action
    assert run.timeline.makespan == pytest.approx(max(end for _, end in expected.values()))


@pytest.mark.parametrize("f, i, w", COSTS)
@pytest.mark.parametrize("p, m", SHAPES)
@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
def test_gpipe_and_1f1b_take_m_plus_p_minus_1_steps(name, p, m, f, i, w):
    timeline = run_order(published_order(name, p, m), StageProfile((f,) * p, (i,) * p, (w,) * p)).timeline
    assert timeline.makespan == pytest.approx((m + p - 1) * (f + i + w))
    assert bubble(timeline, "idle-share") == pytest.approx((p - 1) / (m + p - 1))


@pytest.mark.parametrize("f, i, w", COSTS)
@pytest.mark.parametrize("p, m", SHAPES)
def test_zb_h1_has_the_papers_bubble(p, m, f, i, w):
    timeline = run_order(published_order("zb-h1", p, m), StageProfile((f,) * p, (i,) * p, (w,) * p)).timeline
    assert timeline.makespan == pytest.approx(m * (f + i + w) + (p - 1) * (f + i - w))


@pytest.mark.parametrize("f, i, w", COSTS)
@pytest.mark.parametrize("chunks", [2, 3])
@pytest.mark.parametrize("p, m", [(2, 4), (3, 6), (4, 8), (4, 12), (2, 8)])
def test_interleaved_1f1b_divides_the_bubble_by_the_chunks(p, m, chunks, f, i, w):
    order = published_order("interleaved-1f1b", p, m, chunks)
    timeline = run_order(order, uniform(order, p, f, i, w)).timeline
    assert timeline.makespan == pytest.approx(m * (f + i + w) + (p - 1) * (f + i + w) / chunks)


@pytest.mark.parametrize("f, i, w", COSTS)
@pytest.mark.parametrize("p, m", [(2, 4), (3, 6), (4, 8), (3, 9)])
def test_the_list_schedules_closed_forms(p, m, f, i, w):
    """list-1f1b is 1F1B's closed form at any costs; list-zb-h1 meets ZB-H1's at the paper's equal
    F, I and W (Fig. 3); with W smaller it may do better than the handcrafted order, never worse."""
    one = simulate(zb_problem(StageProfile.uniform(p, f, i, w), m, "list-1f1b"))
    assert one.makespan == pytest.approx((m + p - 1) * (f + i + w))
    h1 = simulate(zb_problem(StageProfile.uniform(p, f, i, w), m, "list-zb-h1"))
    bound = m * (f + i + w) + (p - 1) * (f + i - w)
    assert h1.makespan == pytest.approx(bound) if f == i == w else h1.makespan <= bound + 1e-9


@pytest.mark.parametrize("f, i, w", COSTS + [(1.0, 2.0, 1.0)])
@pytest.mark.parametrize("p, m", SHAPES)
def test_zb_h2_has_the_papers_bubble_where_it_can(p, m, f, i, w):
    timeline = run_order(published_order("zb-h2", p, m), StageProfile((f,) * p, (i,) * p, (w,) * p)).timeline
    paper, start_up = m * (f + i + w) + (p - 1) * (f + i - 2 * w), (p - 1) * f + m * (f + i + w)
    assert timeline.makespan == pytest.approx(paper if i >= 2 * w else start_up)


PEAKS = {"gpipe": (lambda p, m, r: m, lambda p, m, r: m), "1f1b": (lambda p, m, r: p - r, lambda p, m, r: p - r),
         "zb-h1": (lambda p, m, r: p - r, lambda p, m, r: p),
         "zb-h2": (lambda p, m, r: 2 * (p - r) - 1, lambda p, m, r: 2 * p - 1)}


@pytest.mark.parametrize("keeps", [0, 1], ids=["I-frees", "W-keeps"])
@pytest.mark.parametrize("p, m", [(2, 4), (3, 6), (4, 8), (4, 12)])
@pytest.mark.parametrize("name", PEAKS)
def test_peak_activations_are_the_papers(name, p, m, keeps):
    profile = StageProfile((2.0,) * p, (3.0,) * p, (1.0,) * p, 0.0, (1,) * p, (keeps,) * p)
    peaks = run_order(published_order(name, p, m), profile).timeline.peak_memory()
    assert [peaks[f"r{r}"] for r in range(p)] == [PEAKS[name][keeps](p, m, r) for r in range(p)]


@pytest.mark.parametrize("f, i, w", COSTS)
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 12)])
@pytest.mark.parametrize("schedule, limit", [("list-1f1b", lambda p, s: p - s + 1),
                                             ("list-zb-h1", lambda p, s: p - s + 1),
                                             ("list-zb-h2", lambda p, s: 2 * (p - s) + 1)])
def test_list_schedules_hold_their_published_limits(schedule, limit, p, m, f, i, w):
    peaks = simulate(zb_problem(StageProfile.uniform(p, f, i, w), m, schedule)).peak_memory()
    assert [peaks[f"s{s}"] for s in range(1, p + 1)] == [limit(p, s) for s in range(1, p + 1)]


@pytest.mark.parametrize("f, d, g", [(1.0, 1.0, 1.0), (2.0, 3.0, 1.0)])
@pytest.mark.parametrize("m", [1, 2, 5, 8])
@pytest.mark.parametrize("layers, p", [(6, 3), (4, 2), (8, 4), (4, 4)])
@pytest.mark.parametrize("method", ["gpipe", "pipedream", "layerpipe"])
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_a_partition_of_equal_layers_pipelines_in_m_plus_p_minus_1_steps(schedule, method, layers, p, m, f, d, g):
    """Equal layers split into equal stages of layers/p each (the balanced split every partitioner
    must find), then GPipe's and 1F1B's closed form over the stages' F and backward (δ + G)."""
    from archsim.partition import profile_from_costs
    from archsim.planners import partition
    from archsim.policies.pipeline import simulate_partition

    profile = profile_from_costs([f"l{x}" for x in range(layers)], [f] * layers, [d] * layers, [g] * layers)
    plan = partition(profile, p, method)
    assert [len(stage.layers) for stage in plan.stages] == [layers // p] * p
    timeline = simulate_partition(plan, profile, m, schedule).timeline
    assert timeline.makespan == pytest.approx((m + p - 1) * (layers // p) * (f + d + g))


@pytest.mark.parametrize("p, m, chunks", [(2, 4, 2), (4, 8, 2), (4, 12, 2), (4, 8, 3), (3, 6, 3), (2, 8, 2), (4, 4, 2)])
def test_interleaved_1f1b_holds_megatrons_warm_up(p, m, chunks):
    """Peak chunk activations on rank r: Megatron-LM's warm-up count (p − r − 1)·2 + (v − 1)·p
    (its ``num_warmup_microbatches``, m a multiple of p), plus the first steady forward, at most m·v."""
    order = published_order("interleaved-1f1b", p, m, chunks)
    ones = (1.0,) * order.stages
    peaks = run_order(order, StageProfile(ones, ones, ones, 0.0, (1,) * order.stages, (0,) * order.stages)
                      ).timeline.peak_memory()
    assert [peaks[f"r{r}"] for r in range(p)] == [min(2 * (p - 1 - r) + (chunks - 1) * p + 1, m * chunks)
                                                   for r in range(p)]
