"""Out-of-order backprop's schedules (mp, gpipe, ooo-pipe1/2) against what the paper's allocation
rules alone imply, shared with neither the builder nor its frozen copy (tests/ooo_reference.py):
each device does exactly the work of the layers the rules put on it (000_… §5: contiguous blocks,
or layer l on device ⌊l / group⌋ mod P under modulo allocation), F, δ (none for the first layer
unless asked) and G once per micro-batch; no schedule beats that work or one micro-batch's chain
of forwards and δs; and one device never idles (the list scheduler is non-delay). The paper's own
worked examples (Figs. 5–6) and exact optima are tests/test_ooo.py's."""

from __future__ import annotations

import math

import pytest

from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.errors import InputError
from archsim.policies.ooo import layer_chain, ooo_problem, unit_costs
from archsim.sim import simulate

# (layers, whether the first layer computes δ)
COSTS = {"unit": (unit_costs(4), False),
         "unequal": (layer_chain((3.0, 1.0, 4.0, 1.5, 5.0), (2.0, 6.0, 5.0, 3.0, 5.0), (9.0, 7.0, 9.0, 3.0, 2.0)),
                     True),
         "one-layer": (layer_chain((1.0,), (2.0,), (3.0,)), False),
         "eight": (unit_costs(8), False)}


def device(policy: str, layer: int, layers: int, devices: int, group: int) -> int:
    if policy == "ooo-pipe2":
        return (layer // group) % devices
    return layer // math.ceil(layers / devices)  # contiguous blocks of ⌈L/P⌉ layers


def layer_work(costs, layer: int, first_layer_delta: bool) -> float:
    delta = costs.delta[layer] if layer > 0 or first_layer_delta else 0.0
    return costs.forward[layer] + delta + costs.weight_grad[layer]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("costs", COSTS)
@pytest.mark.parametrize("devices, microbatches, flush, group", [(1, 3, False, 1), (2, 1, True, 1), (2, 3, False, 1),
                                                                   (3, 4, True, 2), (4, 5, False, 2)])
def test_each_device_does_its_layers_work_and_no_less_time(policy, costs, devices, microbatches, flush, group):
    cost, first_delta = COSTS[costs]
    layers = len(cost)
    try:
        problem = ooo_problem(cost, devices, microbatches, policy, flush=flush, group=group,
                              first_layer_delta=first_delta)
    except InputError:
        assert microbatches > 1 and ((policy == "mp" and flush) or (policy == "gpipe" and not flush))
        return
    timeline = simulate(problem)
    work = [0.0] * devices
    for layer in range(layers):
        work[device(policy, layer, layers, devices, group)] += microbatches * layer_work(cost, layer, first_delta)
    busy = [timeline.busy_time(f"d{d + 1}") if any(p.name == f"d{d + 1}" for p in problem.processors) else 0.0
            for d in range(devices)]
    assert busy == pytest.approx(work)
    chain = sum(cost.forward) + sum(cost.delta[1:]) + (cost.delta[0] if first_delta else 0.0)
    chain += cost.weight_grad[0]  # layer 0's G waits for δ of layer 1 (and its own δ if any)
    assert timeline.makespan >= max(max(work), chain) - 1e-9
    if devices == 1:
        assert timeline.makespan == pytest.approx(sum(work))
