"""``--balance planned`` on a mixture of experts under ``--distributed-optimizer``: the planner sizes each rank's
experts' optimizer states sharded over their expert-DP group, as train holds them, not over DP. Against brute force
over every split with train's own memory per rank (``run.train``) and a hand count of the experts' bytes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.training.cluster_file import single_node
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.stage_split import planned_split, stage_layer_counts
from archsim.workload.transformer import TransformerConfig

H, F, E, L = 64, 128, 4, 6
MOE = TransformerConfig("small", "llama", L, H, 4, 256, 32, F, 2, False, experts=E, experts_per_token=2,
                        expert_ffn=F)
# EP 4 over DP 4: expert-DP 1, so the experts' states are not sharded at all (20 bytes a parameter in fp16) where
# the dense ones' are over DP 4 (4 + 16/4 = 8): 12 bytes an expert parameter apart
PAR = Parallelism(1, 2, 4, 8, 1, "none", ep=4, distributed_optimizer=True)
EXPERT_PARAMETERS = (E // 4) * 3 * H * F  # one local expert a layer: gate, up and down


def _trained(split):
    """Train's memory of each pipeline rank with ``split`` layers per stage, and its machine."""
    par = replace(PAR, stage_layers=split)
    machine = single_node("h100-80gb").machine(par)
    return [m.total for m in train(MOE, par, machine).memory], machine


def test_train_holds_the_experts_states_unsharded_at_expert_dp_1():
    # hand count: train's rank with one more layer holds 12 more bytes per expert parameter than at DP sharding
    (low, _), (high, _) = _trained((2, 4)), _trained((3, 3))
    par = replace(PAR, distributed_optimizer=False)  # 20 bytes a parameter, dense and experts alike
    machine = single_node("h100-80gb").machine(par)
    dense_low, dense_high = ([m.total for m in train(MOE, replace(par, stage_layers=s), machine).memory]
                             for s in ((2, 4), (3, 3)))
    # the distributed optimizer saves 12 bytes a dense parameter, none of an expert's (expert-DP 1)
    assert (dense_high[0] - dense_low[0]) - (high[0] - low[0]) == pytest.approx(
        12 * (_layer_parameters() - EXPERT_PARAMETERS), rel=1e-12)


def _layer_parameters() -> int:
    """A layer's parameters on one GPU at TP 1: attention (q, k, v of 4 and 2 heads of 16, o), two RMS norms, the
    router (h·E) and the rank's one expert."""
    d = H // 4
    return H * (4 * d + 2 * 2 * d) + 4 * d * H + 2 * H + H * E + EXPERT_PARAMETERS


def test_a_planned_split_near_the_limit_fits_what_train_measures():
    splits = [(n, L - n) for n in range(1, L)]
    measured = {s: _trained(s)[0] for s in splits}
    machine = _trained((3, 3))[1]
    unbounded = stage_layer_counts(planned_split(MOE, PAR, [machine] * 2, [float("inf")] * 2))
    # the first rank's GPU a byte short of what train holds there on the unbounded plan: the planner must move a
    # layer off it (until now it took the experts' states at DP sharding, 12 bytes an expert parameter low, and
    # kept the split train finds over the limit)
    capacities = [measured[unbounded][0] - 1.0, float("inf")]
    fitting = [s for s in splits if all(m <= cap for m, cap in zip(measured[s], capacities))]
    assert unbounded not in fitting and fitting
    plan = planned_split(MOE, PAR, [machine] * 2, capacities)
    assert plan is not None and stage_layer_counts(plan) in fitting
    assert stage_layer_counts(plan)[0] == unbounded[0] - 1 == max(s[0] for s in fitting)
    # at a byte above train's figure the unbounded plan fits again
    assert stage_layer_counts(planned_split(MOE, PAR, [machine] * 2, [capacities[0] + 2.0, float("inf")])) == unbounded
