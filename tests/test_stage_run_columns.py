"""The columnar builder of a stage order's problem against the original object builder
(tests/stage_run_reference.py): the same processors, links, ops (ids, costs, memory, tags) and
dependencies in the same order, the same arrays, the same timeline — on every published order,
several stage and micro-batch counts, with and without communication, bandwidth and memory —
and the same error on a malformed order."""

import pytest
from problem_equality import assert_same_problem
from stage_run_reference import order_problem as reference_problem

from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.choices.schedules import ZB_SCHEDULES as SCHEDULES
from archsim.cli import main
from archsim.errors import InputError
from archsim.policies.actions import Action, StageOrder
from archsim.policies.ooo import layer_chain, ooo_problem, schedule_metrics
from archsim.policies.ooo import op_count as ooo_op_count
from archsim.policies.stage_orders import ORDERS, published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import StageRun, order_problem
from archsim.policies.torch_csv import order_csv, parse_order_csv
from archsim.policies.zb_auto import zb_auto_order
from archsim.policies.zero_bubble import op_count, zb_schedule
from archsim.sim import simulate, validate_timeline


def _profiles(stages: int):
    """Profiles over ``stages`` virtual stages: unequal integer and float costs, memory as ints
    and as floats, comm as one value and per stage, bytes over links of a given bandwidth."""
    f = tuple(3 + (s % 3) for s in range(stages))
    b = tuple(2.5 + s for s in range(stages))
    w = tuple(1 + (s % 2) for s in range(stages))
    yield StageProfile(f, b, w)
    yield StageProfile(f, b, w, 0.75, tuple(10 + s for s in range(stages)), tuple(4 for _ in range(stages)))
    yield StageProfile(f, b, w, tuple(0.1 * s for s in range(stages)), tuple(1.5 * (s + 1) for s in range(stages)),
                       tuple(0.5 for _ in range(stages)), tuple(100 * (s + 1) for s in range(stages)), 8.0)
    yield StageProfile(f, f, f, 1.0, (), (), tuple(64 for _ in range(stages)), 16)


def _orders():
    for name in ORDERS:
        for p, m, chunks in ((1, 1, 2), (2, 4, 2), (3, 6, 2), (4, 8, 3), (4, 12, 2)):
            if name == "dualpipev" and m < 2 * p:
                continue
            if name.startswith("interleaved") and m % max(1, m // p):
                continue
            yield pytest.param(published_order(name, p, m, chunks), id=f"{name}-p{p}-m{m}-v{chunks}")
    for k in (1, 2):
        order = zb_auto_order((2.0, 3.0, 2.0), (2.0, 3.0, 2.5), (1.0, 1.0, 1.5), 0.5, 5, k)
        yield pytest.param(order, id=f"zb-{k}p")
    dualpipe = published_order("dualpipev", 2, 4)
    yield pytest.param(parse_order_csv(order_csv(dualpipe)), id="dualpipev-csv")


@pytest.mark.parametrize("order", list(_orders()))
def test_columnar_problem_equals_the_object_built_one(order):
    for profile in _profiles(order.stages):
        columnar, expected = order_problem(order, profile), reference_problem(order, profile)
        assert_same_problem(columnar, expected)
        timeline, reference = simulate(columnar), simulate(expected)
        assert tuple(timeline.slots) == tuple(reference.slots)
        assert tuple(timeline.transfers) == tuple(reference.transfers)
        assert timeline.peak_memory() == reference.peak_memory()


def test_simulating_validating_and_measuring_make_no_op_objects():
    from conftest import _ORIGINAL as engine_simulate  # the engine itself, not the tests' comparing wrapper

    profile = StageProfile((1.0, 2.0, 1.5), (2.0, 2.0, 2.0), (1.0, 1.0, 1.0), 0.5, (3, 3, 3), (), (8, 8, 8), 4.0)
    problem = order_problem(published_order("zb-h1", 3, 6), profile)
    timeline = engine_simulate(problem)
    assert validate_timeline(problem, timeline) == []
    metrics = schedule_metrics(problem, timeline)
    run = StageRun(published_order("zb-h1", 3, 6), problem, timeline)
    run.metrics()
    assert problem._ops is None and problem._deps is None and "index" not in vars(problem.arrays)  # nor an id index
    expected = reference_problem(published_order("zb-h1", 3, 6), profile)
    assert metrics == schedule_metrics(expected, engine_simulate(expected))
    assert run.metrics() == StageRun(run.order, expected, engine_simulate(expected)).metrics()


def _malformed():
    good = published_order("1f1b", 2, 2)
    ranks = [list(r) for r in good.ranks]
    missing = [list(r) for r in ranks]
    missing[0] = [a for a in missing[0] if a != Action(0, "F", 1)]
    yield StageOrder("missing-forward", tuple(map(tuple, missing)), 2, 2)
    upstream = [list(r) for r in ranks]
    upstream[1] = [a for a in upstream[1] if a != Action(1, "B", 0)]
    yield StageOrder("missing-upstream", tuple(map(tuple, upstream)), 2, 2)
    twice = [list(r) for r in ranks]
    twice[1].append(Action(1, "F", 0))
    missing_and_twice = [list(r) for r in twice]
    missing_and_twice[0] = [a for a in missing_and_twice[0] if a != Action(0, "F", 1)]
    yield StageOrder("twice", tuple(map(tuple, twice)), 2, 2)
    yield StageOrder("missing-and-twice", tuple(map(tuple, missing_and_twice)), 2, 2)


@pytest.mark.parametrize("order", list(_malformed()), ids=lambda o: o.name)
def test_malformed_orders_fail_as_before(order):
    profile = StageProfile.uniform(2, 1, 1, 1)
    with pytest.raises(InputError) as expected:
        reference_problem(order, profile)
    with pytest.raises(InputError) as got:
        order_problem(order, profile)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("p, m, chunks", [(1, 2, 2), (2, 4, 2), (3, 6, 3), (4, 8, 2)])
def test_job_size_counts_the_ops_a_published_schedule_builds(schedule, p, m, chunks):
    if schedule.startswith("interleaved") and m % max(1, m // p):
        pytest.skip("interleaved schedules need whole rounds")
    problem, _ = zb_schedule(StageProfile.uniform(p, 1.0, 1.0, 1.0), m, schedule, chunks)
    if schedule == "dualpipev":  # a bound: its main phase fuses some backwards
        assert len(problem.ops) <= op_count(schedule, p, m, chunks)
    else:
        assert len(problem.ops) == op_count(schedule, p, m, chunks)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("flush, first_layer_delta, m", [(True, False, 3), (False, True, 3), (True, True, 1)])
def test_job_size_counts_the_ops_of_a_layer_schedule(policy, flush, first_layer_delta, m):
    costs = layer_chain((1.0,) * 5, (1.0,) * 5, (1.0,) * 5)
    if policy == "mp" and flush and m > 1:  # refused, with the reason, rather than built
        with pytest.raises(InputError, match="cannot flush"):
            ooo_problem(costs, 2, m, policy, flush=flush, first_layer_delta=first_layer_delta)
        return
    if policy == "gpipe" and not flush and m > 1:  # gpipe is the flush: refused without one
        with pytest.raises(InputError, match="cannot run without one"):
            ooo_problem(costs, 2, m, policy, flush=flush, first_layer_delta=first_layer_delta)
        return
    problem = ooo_problem(costs, 2, m, policy, flush=flush, first_layer_delta=first_layer_delta)
    assert len(problem.ops) == ooo_op_count(5, m, first_layer_delta=first_layer_delta, flush=flush)


def test_the_command_line_refuses_by_the_exact_count(capsys):
    """VGG16 on 8 stages, 10 micro-batches of 1F1B: 2 · 8 · 10 = 160 ops, run at --max-ops 160."""
    command = ["schedule", "vgg16", "--policy", "1f1b", "--processors", "8", "--microbatches", "10", "--max-ops"]
    assert main([*command, "160"]) == 0
    capsys.readouterr()
    assert main([*command, "159"]) == 2
    assert "about 160 ops" in capsys.readouterr().err
