"""The columnar builders of the layer-wise schedules (mp, gpipe, ooo-pipe1/2) and of the list
schedules (list-1f1b, list-zb-h1/h2) against the original object builders (tests/ooo_reference.py,
tests/zb_list_reference.py): the same ops (ids, priorities, costs, memory, tags), dependencies in
the same order, arrays and timelines, with and without a flush, δ for the first layer or not, one
or many micro-batches, stash bytes or none."""

import pytest
from ooo_reference import LayerCosts as ReferenceLayerCosts
from ooo_reference import ooo_problem as reference_problem
from problem_equality import assert_same_problem
from zb_list_reference import StageCosts as ReferenceStageCosts
from zb_list_reference import zb_problem as reference_list_problem

from archsim.choices.schedules import LIST_SCHEDULES
from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.errors import InputError
from archsim.policies.ooo import layer_chain, ooo_problem, unit_costs
from archsim.policies.stage_profile import StageProfile
from archsim.policies.zero_bubble import zb_problem
from archsim.sim import simulate

# (layers, whether the first layer computes δ)
COSTS = [(unit_costs(4), False),
         (layer_chain((3.0, 1.0, 4.0, 1.5, 5.0), (2.0, 6.0, 5.0, 3.0, 5.0), (9.0, 7.0, 9.0, 3.0, 2.0),
                      stash_bytes=(10, 20, 30, 40, 50)), True),
         (layer_chain((1.0,), (2.0,), (3.0,), stash_bytes=(7,)), False)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("costs, first_delta", COSTS, ids=["unit", "unequal", "one-layer"])
@pytest.mark.parametrize("devices, microbatches, flush, group", [(2, 1, True, 1), (2, 3, False, 1), (3, 4, True, 2),
                                                                   (4, 5, False, 2)])
def test_columnar_problem_equals_the_object_built_one(policy, costs, first_delta, devices, microbatches, flush, group):
    if policy == "mp" and flush and microbatches > 1:  # refused, with the reason, rather than built
        with pytest.raises(InputError, match="cannot flush"):
            ooo_problem(costs, devices, microbatches, policy, flush=flush, group=group, first_layer_delta=first_delta)
        return
    if policy == "gpipe" and not flush and microbatches > 1:  # gpipe is the flush: refused without one
        with pytest.raises(InputError, match="cannot run without one"):
            ooo_problem(costs, devices, microbatches, policy, flush=flush, group=group, first_layer_delta=first_delta)
        return
    columnar = ooo_problem(costs, devices, microbatches, policy, flush=flush, group=group,
                           first_layer_delta=first_delta)
    # the frozen builder reads the record it was written for: the profile's F, δ, G and stash copied into it
    frozen_input = ReferenceLayerCosts(tuple(costs.forward), tuple(costs.delta), tuple(costs.weight_grad),
                                       first_delta, tuple(int(x) for x in costs.stash_bytes))
    expected = reference_problem(frozen_input, devices, microbatches, policy, flush=flush, group=group)
    assert_same_problem(columnar, expected)
    assert tuple(simulate(columnar).slots) == tuple(simulate(expected).slots)


@pytest.mark.parametrize("schedule", LIST_SCHEDULES)
@pytest.mark.parametrize("profile", [StageProfile.uniform(1, 1.0, 1.0, 1.0, activation=1),
                                     StageProfile.uniform(3, 1.0, 2.0, 0.5, activation=4),
                                     StageProfile((2.0, 1.0, 3.0, 1.0), (1.0, 2.0, 2.0, 1.0), (1.0, 1.0, 0.5, 2.0),
                                                  activation=(3, 5, 7, 9)),
                                     StageProfile((2.0, 1.0), (1.0, 2.0), (1.0, 1.0))],
                         ids=["p1", "p3", "p4", "p2-no-memory"])
@pytest.mark.parametrize("microbatches", [1, 2, 9])
def test_list_schedules_from_columns_equal_the_object_built_ones(schedule, profile, microbatches):
    columnar = zb_problem(profile, microbatches, schedule)
    # the frozen builder reads the record it was written for: the profile's F, I, W and M_B copied into it
    frozen_input = ReferenceStageCosts(profile.forward, profile.backward_input, profile.backward_weight,
                                       profile.activation)
    expected = reference_list_problem(frozen_input, microbatches, schedule)
    assert_same_problem(columnar, expected)
    assert tuple(simulate(columnar).slots) == tuple(simulate(expected).slots)
