"""Every schedule generator through the one builder (``stage_run.order_problem``) and the independent
validator (``archsim.sim.validate``); the layer-wise GPipe and 1F1B run their processors in the one
GPipe's and the one 1F1B's action order (the orders torch's schedules produce, see
tests/test_torch_pipelining.py); the list schedules (actions by priority, through the same builder)
pass the validator too (tests/test_one_builder.py runs every planner and schedule)."""

from itertools import pairwise

import numpy as np
import pytest

from archsim.array.config import ArrayConfig
from archsim.choices.schedules import LIST_SCHEDULES
from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.partition import build_profile, profile_from_costs
from archsim.planners import partition
from archsim.policies import stage_orders as so
from archsim.policies.actions import StageOrder
from archsim.policies.ooo import layer_chain, ooo_problem
from archsim.policies.pipeline import simulate_partition
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import order_problem
from archsim.policies.torch_csv import order_csv, parse_order_csv
from archsim.policies.zb_auto import zb_auto_order
from archsim.policies.zb_exact import zb_optimal_order
from archsim.policies.zero_bubble import zb_problem
from archsim.sim import simulate, validate_timeline
from archsim.sim.builder import KINDS
from archsim.spp.pe import pe_problem
from archsim.spp.pe_order import StagePlan
from archsim.workload import load_network


def _generated():
    for name in so.ORDERS:
        for p, m, chunks in ((1, 1, 2), (2, 4, 2), (3, 6, 3), (4, 8, 2), (4, 13, 2)):
            if (name == "dualpipev" and m < 2 * p) or (name.startswith("interleaved") and m % max(1, m // p)):
                continue
            yield pytest.param(so.published_order(name, p, m, chunks), id=f"{name}-p{p}-m{m}-v{chunks}")
    costs = ((2.0, 3.0, 2.0), (2.0, 3.0, 2.5), (1.0, 1.0, 1.5))
    for k in (1, 2):
        yield pytest.param(zb_auto_order(*costs, 0.5, 5, k), id=f"zb-{k}p")
    yield pytest.param(zb_optimal_order((1.0, 1.0), (1.0, 1.0), (1.0, 1.0), 0.0, 3, 1), id="zb-1p-exact")
    yield pytest.param(parse_order_csv(order_csv(so.published_order("dualpipev", 2, 4))), id="csv")


@pytest.mark.parametrize("order", list(_generated()))
def test_every_generator_builds_a_problem_the_validator_accepts(order):
    rank_of = order.rank_of_stage()
    profile = StageProfile(tuple(1.0 + s % 3 for s in range(order.stages)), (1.5,) * order.stages,
                           (0.5,) * order.stages, 0.25, (4.0,) * order.stages, (1.0,) * order.stages,
                           (64.0,) * order.stages, 32.0)
    problem = order_problem(order, profile)
    timeline = simulate(problem)
    assert validate_timeline(problem, timeline) == []
    # each rank ran its actions exactly in the order's sequence
    for rank, actions in enumerate(order.ranks):
        mine = sorted((s.start, s.op) for s in timeline.slots if s.processor == f"r{rank}")
        assert [op for _, op in mine] == [str(a) for a in actions]
    assert set(rank_of.values()) <= set(range(len(order.ranks)))


def test_columns_and_actions_are_one_order():
    """An order built as numpy columns reads back as the same actions, and the reverse."""
    built = so.one_f_one_b(3, 5)
    again = StageOrder("1f1b", built.ranks, built.stages, built.microbatches)
    assert again == built
    assert np.array_equal(again.columns.kind, built.columns.kind)
    # hand-written 1F1B for rank 0 of 3 with 5 micro-batches: 2 warm-up forwards, then F/B pairs
    assert [str(a) for a in built.ranks[0]] == ["0F0", "0F1", "0F2", "0B0", "0F3", "0B1", "0F4", "0B2", "0B3", "0B4"]
    assert KINDS == ("F", "I", "W", "B")


def _blocks(run, processor):
    """A processor's actions as torch names them (F or B of a micro-batch), in the order they ran,
    and whether each started only after the previous one ended (a receive op, of no time, belongs
    to the action it feeds)."""
    spans: dict[tuple[str, int], list[float]] = {}
    for slot, kind, mb in zip(run.timeline.slots, *_tags(run, ("kind", "microbatch"))):
        if slot.processor == processor:
            span = spans.setdefault(("F" if kind in ("F", "RECV_F") else "B", mb), [slot.start, slot.end])
            span[0], span[1] = min(span[0], slot.start), max(span[1], slot.end)
    ordered = sorted(spans.items(), key=lambda item: item[1][0])
    serial = all(b[1][0] >= a[1][1] - 1e-9 for a, b in pairwise(ordered))
    return [f"{kind}{mb}" for (kind, mb), _ in ordered], serial


def _tags(run, keys):
    ops = {op.id: op for op in run.problem.ops}
    return [[ops[s.op].tag(key) for s in run.timeline.slots] for key in keys]


@pytest.mark.parametrize("schedule, generator", [("gpipe", so.gpipe), ("1f1b", so.one_f_one_b)])
@pytest.mark.parametrize("method", ["pipedream", "gpipe", "layerpipe"])
def test_layerwise_gpipe_and_1f1b_follow_the_one_order(schedule, generator, method):
    profile = build_profile(load_network("layerpipe_sample"), ArrayConfig(16, 16, "ws"), 4, "paper")
    plan = partition(profile, 3, method)
    for m, bandwidth in ((1, None), (5, None), (6, 3.0)):
        run = simulate_partition(plan, profile, m, schedule, bandwidth=bandwidth)
        assert validate_timeline(run.problem, run.timeline) == []
        order = generator(len(plan.stages), m)
        for r, actions in enumerate(order.ranks):
            ran, serial = _blocks(run, f"p{r + 1}")
            expected = [f"{'F' if a.kind == 'F' else 'B'}{a.microbatch}" for a in actions]
            families = {x[0] for x in ran}  # a processor holding only borrowed δ″ work has no forwards
            assert ran == [x for x in expected if x[0] in families] and serial


def test_the_other_schedule_builders_pass_the_validator():
    """The list schedules: actions by priority among the ready ones, through the one builder."""
    layers = layer_chain((3.0, 1.0, 4.0, 1.5), (2.0, 6.0, 5.0, 3.0), (9.0, 7.0, 9.0, 3.0), stash_bytes=(1, 2, 3, 4))
    problems = [ooo_problem(layers, 2, 3, policy, flush=policy != "mp") for policy in POLICIES]
    problems += [zb_problem(StageProfile((2.0, 1.0, 3.0), (1.0, 2.0, 2.0), (1.0, 1.0, 0.5)), 5, s) for s in LIST_SCHEDULES]
    plans = [StagePlan(2.0, 3.0, 1.0, 0.5, 0.5), StagePlan(1.0, 2.0, 0.0, 0.25, 0.25), StagePlan(3.0, 1.0)]
    problems += [pe_problem(plans, 4, order) for order in ("pe", "gpipe")]
    chain = profile_from_costs(["a", "b", "c", "d"], [1, 2, 3, 1], [2, 1, 1, 2], [1, 1, 2, 2])
    problems += [simulate_partition(partition(chain, 2, "pipedream"), chain, 4, s).problem
                 for s in ("gpipe-newest-first", "1f1b-window", "layerpipe")]
    for problem in problems:
        assert validate_timeline(problem, simulate(problem)) == []
