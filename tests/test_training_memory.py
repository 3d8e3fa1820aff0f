"""Memory per GPU against hand sums: Korthikanti et al. 2022 §4 per-layer activations for each
recompute mode, and a stage's total = 16 bytes × parameters + in-flight activations."""

import pytest

from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.memory import stage_memory
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

# s = 2048, b = 1, h = 12288, a = 96 (GPT-3 175B's layer), t = 8
GPT3 = TransformerConfig("gpt3", "gpt", 96, 12288, 96, 51200, 2048, 4 * 12288, 96, True, 2048)
SBH = 2048 * 1 * 12288


@pytest.mark.parametrize("recompute, sp, expected", [
    ("none", False, SBH * (10 + 24 / 8 + 5 * 96 * 2048 / (12288 * 8))),  # 34sbh + 5as²b at t = 1
    ("none", True, SBH / 8 * (34 + 5 * 96 * 2048 / 12288)),
    ("selective", False, SBH * (10 + 24 / 8)),
    ("selective", True, SBH * 34 / 8),
    ("full", False, 2 * SBH),
    ("full", True, 2 * SBH / 8),
])
def test_korthikanti_per_layer(recompute, sp, expected):
    assert layer_activation_bytes(GPT3, 1, 8, recompute, sp) == pytest.approx(expected)


def test_no_tp_is_34sbh_plus_5as2b():
    assert layer_activation_bytes(GPT3, 1, 1, "none", False) == pytest.approx(34 * SBH + 5 * 96 * 2048**2)


TINY = TransformerConfig("tiny", "gpt", 4, 64, 4, 100, 16, 256, 4, True, 16)
LAYER_PARAMS = 12 * 64 * 64 + 13 * 64  # 49,984
SBH_T = 16 * 2 * 64


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_stage_total_by_hand(recompute):
    """First of 2 stages (2 layers, embedding), 1F1B holding 2 micro-batches of b = 2, TP 1. Full recompute's
    working set is the rerun layer's 34·s·b·h + 5·a·s²·b less its input's 2·s·b·h (Korthikanti et al. §4.1: the
    first LayerNorm stores its input, which is the checkpoint the layer reruns from, counted in the 2·2 held)."""
    par = Parallelism(1, 2, 1, 8, 2, recompute)
    memory = stage_memory(TINY, par, layers=2, in_flight=2, first=True, last=False)
    params = 2 * LAYER_PARAMS + 128 * 64 + 16 * 64  # layers, padded token table, positions
    per_layer = {"none": SBH_T * 34 + 5 * 4 * 16 * 16 * 2, "selective": SBH_T * 34, "full": 2 * SBH_T}[recompute]
    working = {"none": 0, "selective": 5 * 4 * 16 * 16 * 2, "full": SBH_T * 32 + 5 * 4 * 16 * 16 * 2}[recompute]
    activations = 2 * 2 * per_layer + working + 2 * SBH_T  # + the embedding dropout mask per micro-batch
    assert memory.parameters == params
    states = 2 + 2 + 4 + 4 + 8  # fp16 (the default): weight, buffer, fp32 main weight, the step's fp32 gradient, m, v
    assert memory.states == states * params
    assert memory.activations == pytest.approx(activations)
    assert memory.total == pytest.approx(states * params + activations)


@pytest.mark.parametrize("pp, m", [(1, 3), (2, 1), (4, 8), (4, 2)])
def test_1f1b_memory_without_building_the_order(pp, m):
    from archsim.policies.stage_orders import published_order
    from archsim.training.pipeline_memory import memories

    par = Parallelism(1, pp, 1, 2 * m, 2, "full")
    assert memories(TINY, par) == memories(TINY, par, published_order("1f1b", pp, m))
