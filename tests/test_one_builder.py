"""One schedule representation: every planner and every schedule goes through the one builder
(``archsim.sim.builder.build``) and the independent validator (``archsim.sim.validate``); the
docs' vocabulary table is the code's; nothing but the builder makes a simulator problem.

References: the glossary's table (docs), the validator (written apart from the engine), hand
counts (the OOO paper's 3/3/3/1 allocation of 10 layers on 4 devices)."""

import re
from pathlib import Path

import numpy as np
import pytest

from archsim.choices.schedules import DP_POLICIES, LIST_SCHEDULES
from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.errors import InputError
from archsim.partition import profile_from_costs
from archsim.partition.ooo_allocation import device_of, ooo_partition
from archsim.planners import PLANNERS
from archsim.policies import data_parallel as dp
from archsim.policies import stage_orders as so
from archsim.policies.ooo import ALLOCATION, default_flush, layer_chain, ooo_problem, unit_costs
from archsim.policies.pipeline import SCHEDULES, simulate_partition
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import order_problem
from archsim.policies.torch_steps import parse_comm_schedule, step_problem
from archsim.policies.zero_bubble import zb_problem
from archsim.sim import Link, Processor, simulate, validate_timeline
from archsim.sim.builder import VOCABULARY, build, sub_problem
from archsim.sim.columns import DepColumns, OpColumns
from archsim.spp.pe import pe_problem
from archsim.spp.pe_order import ORDERS as PE_ORDERS
from archsim.spp.pe_order import StagePlan
from archsim.spp.topology import Topology

ROOT = Path(__file__).resolve().parents[1]


def _valid(problem):
    kinds = set(problem.tag_values("kind"))
    assert kinds - {None} <= set(VOCABULARY), kinds
    timeline = simulate(problem)
    assert validate_timeline(problem, timeline) == []
    return timeline


def test_the_glossary_table_is_the_vocabulary():
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    table = text[text.index("## Schedule actions"):].split("\n\n")[2]
    kinds = set()
    for row in table.splitlines()[2:]:
        cell = row.split("|")[1]
        if "OVERLAP_F_B" in cell:  # a pairing of two actions, not a kind
            continue
        kinds |= set(re.findall(r"`([^`]+)`", cell))
    assert kinds == set(VOCABULARY)


def test_the_builder_rejects_a_kind_outside_the_vocabulary():
    def one(kind, duration=1.0):
        ops = OpColumns(["x"], np.zeros(1, np.int64), np.array([duration]), tags=(("kind", [kind]),))
        return build((Processor("p"),), ops, DepColumns(np.zeros(0, np.int64), np.zeros(0, np.int64)))

    assert one("D1").arrays.duration.tolist() == [1.0]
    with pytest.raises(InputError, match="unknown action kind 'Q'"):
        one("Q")
    with pytest.raises(InputError, match="zero-length barrier"):
        one(None)
    assert one(None, 0.0) is not None


def test_ooo_contiguous_allocation_is_a_plan():
    names = [f"l{i}" for i in range(10)]
    profile = profile_from_costs(names, [1.0] * 10, [1.0] * 10, [1.0] * 10)
    plan = ooo_partition(profile, 4)
    assert [len(stage.layers) for stage in plan.stages] == [3, 3, 3, 1]  # the paper's 3/3/3/1
    assert plan.devices == ((0,), (1,), (2,), (3,))
    six = ooo_partition(profile, 6)  # ⌈10/6⌉ = 2 per device: device 5 gets none
    assert [len(stage.layers) for stage in six.stages] == [2] * 5 and six.devices == tuple((d,) for d in range(5))
    # the OOO policies place layers by the same rule
    problem = ooo_problem(unit_costs(10), 4, 1, "gpipe", flush=False)
    placed = {op.tag("layer"): op.processor for op in problem.ops if op.tag("kind") == "F"}
    stage_of = {layer: f"d{plan.devices[s.index][0] + 1}" for s in plan.stages for layer in s.layers}
    assert {f"l{int(k[1:])}": v for k, v in placed.items()} == {f"l{int(n[1:]) + 1}": d for n, d in stage_of.items()}
    assert [device_of(layer, 10, 4, ALLOCATION["ooo-pipe2"], 2) for layer in range(10)] == [0, 0, 1, 1, 2, 2, 3, 3, 0, 0]


def _profile():
    costs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0]
    n = len(costs)
    return profile_from_costs([f"l{i}" for i in range(n)], costs, [2.0] * n, [1.0] * n, activation_bytes=[8] * n,
                              delta_bytes=[8] * n, weight_bytes=[100] * n, unit="seconds")


@pytest.mark.parametrize("name", list(PLANNERS))
def test_every_planner_under_every_partition_schedule(name):
    planner, profile = PLANNERS[name], _profile()
    link = np.full((4, 4), 100.0)
    np.fill_diagonal(link, 0.0)
    cluster = Topology("two-by-two", (0, 0, 1, 1), link)
    plans = [planner.partition(profile, Topology.flat(3)) if planner.partition else None,
             planner.on_cluster(profile, cluster, 4) if planner.on_cluster else None]
    for plan in filter(None, plans):
        for schedule in SCHEDULES:
            for bandwidth in (None, 50.0):
                run = simulate_partition(plan, profile, 4, schedule, bandwidth=bandwidth)
                _valid(run.problem)


def _every_schedule():
    costs = (2.0, 3.0, 2.0), (2.0, 3.0, 2.5), (1.0, 1.0, 1.5)
    def stage_order(name):
        order = so.published_order(name, 2, 4)
        v = order.stages
        return order_problem(order, StageProfile((1.0,) * v, (1.5,) * v, (0.5,) * v, 0.25, (4.0,) * v, (1.0,) * v,
                                                 (64.0,) * v, 32.0))

    for name in so.ORDERS:
        yield f"order-{name}", lambda name=name: stage_order(name)
    layers = layer_chain((3.0, 1.0, 4.0, 1.5), (2.0, 6.0, 5.0, 3.0), (9.0, 7.0, 9.0, 3.0), stash_bytes=(1, 2, 3, 4))
    for policy in POLICIES:
        yield f"ooo-{policy}", lambda policy=policy: ooo_problem(layers, 2, 3, policy, flush=default_flush(policy))
    for schedule in LIST_SCHEDULES:
        yield schedule, lambda schedule=schedule: zb_problem(StageProfile(*costs), 5, schedule)
    plans = [StagePlan(2.0, 3.0, 1.0, 0.5, 0.5), StagePlan(1.0, 2.0, 0.0, 0.25, 0.25), StagePlan(3.0, 1.0)]
    for order in PE_ORDERS:
        yield f"pe-{order}", lambda order=order: pe_problem(plans, 4, order)
    for policy in DP_POLICIES:
        def window(policy=policy):
            order, prioritized = dp.policy_order(policy, 4, 2)
            return dp.dp_problem([1.0] * 4, [2.0] * 4, [1.5] * 4, [2.5] * 4, order, prioritized=prioritized)
        yield policy, window
    steps = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n"
    yield "torch-steps", lambda: step_problem(parse_comm_schedule(steps))


@pytest.mark.parametrize("make", [pytest.param(make, id=name) for name, make in _every_schedule()])
def test_every_schedule_through_the_builder_and_the_validator(make):
    _valid(make())


def test_nothing_but_the_builder_makes_a_problem():
    """Outside the simulator only the builder constructs a Problem (ooo.flush_phases cuts its two phases
    out with the builder's ``sub_problem``, not by constructing one itself)."""
    found = []
    for path in sorted((ROOT / "archsim").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("archsim/sim/"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"\bProblem(\.from_arrays)?\(", line):
                found.append(f"{relative}:{number}")
    assert found == []


def test_sub_problem_keeps_the_chosen_actions_and_the_dependencies_between_them():
    """Hand count: a → b → c → d on two ranks with bytes on b → c; keeping b, c, d keeps b → c (its bytes
    and link) and c → d, drops a → b, and renumbers the kept actions 0, 1, 2."""
    ranks = (Processor("p0"), Processor("p1"))
    link = Link("l", "p0", "p1", bandwidth=2.0)
    ops = OpColumns(["a", "b", "c", "d"], np.array([0, 0, 1, 1]), np.array([1.0, 2.0, 3.0, 4.0]),
                    alloc=np.array([0, 5, 0, 0]), free=np.array([0, 0, 0, 5]), priority=[(3,), (2,), (1,), (0,)],
                    tags=(("kind", ["F", "F", "G", "D"]), ("layer", ["x", None, "y", "z"])))
    whole = build(ranks, ops, DepColumns(np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([0, 8, 0]),
                                         np.array([-1, 0, -1])), (link,))
    part = sub_problem(whole, [False, True, True, True])
    assert [op.id for op in part.ops] == ["b", "c", "d"]
    assert [(op.processor, op.duration, op.alloc_bytes, op.free_bytes, op.priority) for op in part.ops] == [
        ("p0", 2.0, 5, 0, (2,)), ("p1", 3.0, 0, 0, (1,)), ("p1", 4.0, 0, 5, (0,))]
    assert [op.tags for op in part.ops] == [(("kind", "F"),), (("kind", "G"), ("layer", "y")),
                                            (("kind", "D"), ("layer", "z"))]
    assert [(d.src, d.dst, d.bytes, d.link) for d in part.deps] == [("b", "c", 8, "l"), ("c", "d", 0, None)]
    assert simulate(part).makespan == 2.0 + 4.0 + 3.0 + 4.0  # b, 8 bytes at 2 per unit, c, d
    with pytest.raises(InputError, match="one keep flag per action"):
        sub_problem(whole, [True])
