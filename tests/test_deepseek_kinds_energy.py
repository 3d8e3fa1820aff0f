"""Per layer kind (dense first layers, then MoE): a stage's parameters for unfused gradient accumulation counted by
hand, and an array device's energy of a pipeline rank equal to that of the uniform model of its own layers' kind."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.devices.device_file import load_device
from archsim.training.energy import array_iteration_joules
from archsim.training.memory import stage_parameters
from archsim.training.parallel import Parallelism
from archsim.workload.layer_kinds import dense_config
from archsim.workload.transformer import TransformerConfig

# hidden, heads, q latent, kv latent, nope, rope, v, dense ffn, experts, top-k, expert ffn, shared ffn
H, A, DQ, DC, N, R, V, F, E, K, FE, SE = 64, 4, 32, 16, 8, 4, 8, 96, 8, 2, 16, 32
MIXED = TransformerConfig("tiny_mixed", "llama", 4, H, A, 256, 16, F, A, False, experts=E, experts_per_token=K,
                          expert_ffn=FE, shared_expert_ffn=SE, shared_expert_gate=False, dense_layers=(0, 1),
                          q_lora_rank=DQ, kv_lora_rank=DC, qk_nope_head_dim=N, qk_rope_head_dim=R, v_head_dim=V)
ROOT = Path(__file__).resolve().parents[1]


def test_a_middle_stage_of_both_kinds_holds_each_kinds_parameters_by_hand():
    # MLA: q down/up, kv down/up, output projection and the two latent norms' γ; two RMSNorms a layer
    attention = H * DQ + DQ * A * (N + R) + H * (DC + R) + DC * A * (N + V) + A * V * H + DQ + DC
    dense = attention + 3 * H * F + 2 * H
    moe = attention + H * E + E * 3 * H * FE + 3 * H * SE + 2 * H  # router, experts, the ungated shared expert
    par = Parallelism(1, 3, 1, 8, 1, "none")
    assert stage_parameters(MIXED, par, 3, False, False, dense=1) == dense + 2 * moe
    assert stage_parameters(MIXED, par, 3, False, False) == 3 * moe  # every layer the model's own kind
    assert stage_parameters(MIXED, par, 2, False, False, dense=2) == 2 * dense


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_an_array_ranks_energy_is_its_own_layers_kinds(recompute):
    device = load_device(ROOT / "configs" / "devices" / "tpu_v4_like.toml")
    par = Parallelism(1, 2, 1, 4, 1, recompute)  # rank 0: the two dense layers; rank 1: the two MoE layers
    moe_only = replace(MIXED, dense_layers=())
    first = array_iteration_joules(MIXED, par, device, "fp16", ranks=[0])
    last = array_iteration_joules(MIXED, par, device, "fp16", ranks=[1])
    assert first == pytest.approx(array_iteration_joules(dense_config(MIXED), par, device, "fp16", ranks=[0]), rel=1e-12)
    assert last == pytest.approx(array_iteration_joules(moe_only, par, device, "fp16", ranks=[1]), rel=1e-12)
    assert first < last
    assert array_iteration_joules(MIXED, par, device, "fp16") == pytest.approx(first + last, rel=1e-12)
