"""The planner's split of a model whose layers are of two kinds (dense first layers, then MoE: DeepSeek-V2/V3)
against brute force over every contiguous split, each stage priced by its own layers' kinds (stage_times) and sized
by train's memory (its published order); and its refusal over several chunks a rank."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from archsim.errors import InputError
from archsim.policies.stage_orders import published_order
from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import memories
from archsim.training.stage_split import planned_split, stage_layer_counts
from archsim.training.stages import rank_stage_times
from archsim.workload.layer_kinds import DENSE, LAYER
from archsim.workload.transformer import TransformerConfig

# a small DeepSeek: MLA, three dense SwiGLU layers of width 1,024 first, then layers of 16 experts (top 4 and a
# shared one, width 2,048): a dense layer takes about 0.7 of an MoE layer's forward (fewer ops)
MIXED = TransformerConfig("small_mixed", "llama", 8, 1024, 8, 512, 1024, 1024, 8, False, experts=16,
                          experts_per_token=4, expert_ffn=2048, shared_expert_ffn=2048, shared_expert_gate=False,
                          dense_layers=(0, 1, 2), q_lora_rank=256, kv_lora_rank=128, qk_nope_head_dim=64,
                          qk_rope_head_dim=32, v_head_dim=64)


def _splits(layers: int, p: int):
    for cuts in itertools.combinations(range(1, layers), p - 1):
        yield tuple(b - a for a, b in itertools.pairwise((0, *cuts, layers)))


def _slowest(c, par, split, machines) -> float:
    times = rank_stage_times(c, Parallelism(par.tp, par.pp, par.dp, par.global_batch, par.micro_batch, par.recompute,
                                            stage_layers=split), machines)
    return float(max(np.add(np.add(times.forward, times.backward_input), times.backward_weight)))


def _brute(c, par, machines, capacities):
    """(slowest stage's F + I + W, its splits) over the splits whose every rank fits, by enumeration."""
    order = published_order(par.schedule_name, par.pp, par.microbatches, 1)
    fitting = [split for split in _splits(c.layers, par.pp)
               if all(m.total <= cap for m, cap in zip(memories(c, Parallelism(
                   par.tp, par.pp, par.dp, par.global_batch, par.micro_batch, par.recompute, stage_layers=split),
                   order), capacities))]
    if not fitting:
        return None, ()
    best = min(_slowest(c, par, split, machines) for split in fitting)
    return best, tuple(s for s in fitting if _slowest(c, par, s, machines) <= best * (1 + 1e-12))


@pytest.mark.parametrize(("p", "recompute"), [(2, "none"), (3, "none"), (3, "full"), (4, "none")])
def test_planned_split_of_two_layer_kinds_is_the_best_contiguous_split(p, recompute):
    par = Parallelism(1, p, 1, 8, 1, recompute)
    machine = single_node("h100-80gb-sxm", p).machine(par)
    pieces = model_pieces(MIXED, par, machine)
    assert pieces[DENSE].forward < pieces[LAYER].forward  # the dense layers are the cheaper kind here
    best, splits = _brute(MIXED, par, [machine] * p, [np.inf] * p)
    split = stage_layer_counts(planned_split(MIXED, par, [machine] * p, [np.inf] * p))
    assert split in splits, (split, splits)
    assert _slowest(MIXED, par, split, [machine] * p) == pytest.approx(best, rel=1e-12)
    if p == 2:  # the stage of the cheaper dense layers takes no fewer layers than the MoE one (at this size each
        assert split[0] >= split[1]  # layer's ops are near their launch floor: 4,4 and 5,3 within 2%)


def test_planned_split_of_two_layer_kinds_under_a_memory_limit_is_the_best_that_fits():
    par = Parallelism(1, 3, 1, 12, 1, "none")
    machine = single_node("h100-80gb-sxm", 3).machine(par)
    order = published_order("1f1b", 3, par.microbatches, 1)
    sizes = sorted({m.total for split in _splits(MIXED.layers, 3)
                    for m in memories(MIXED, Parallelism(1, 3, 1, 12, 1, "none", stage_layers=split), order)})
    tested = 0
    for capacity in sizes[::4]:
        best, splits = _brute(MIXED, par, [machine] * 3, [capacity] * 3)
        plan = planned_split(MIXED, par, [machine] * 3, [capacity] * 3)
        assert (plan is None) == (best is None), capacity
        if plan is not None:
            tested += 1
            assert stage_layer_counts(plan) in splits, (capacity, stage_layer_counts(plan), splits)
    assert tested >= 3


def test_planning_two_layer_kinds_over_interleaved_chunks_is_refused_in_one_line():
    par = Parallelism(1, 2, 1, 8, 1, "none", interleave=2)
    machine = single_node("h100-80gb-sxm", 2).machine(par)
    with pytest.raises(InputError, match="one model chunk a rank") as caught:
        planned_split(MIXED, par, [machine] * 2, [np.inf] * 2)
    assert "\n" not in str(caught.value)
