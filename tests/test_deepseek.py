"""DeepSeek-V2/V3 (multi-head latent attention, dense first layers, ungated shared experts) against independent
references: the papers' parameter counts, MLA's GEMM shapes and FLOPs counted by hand on a tiny config, a pipeline
whose stages hold different layer kinds priced as the sum of its kinds' layers, and one-line refusals."""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.layer_ops import block_work
from archsim.training.parallel import Parallelism
from archsim.training.stages import stage_times
from archsim.training.throughput import model_flops
from archsim.workload.layer_kinds import DENSE, LAYER, held_kinds, stage_kinds
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

# hidden, heads, q latent, kv latent, nope, rope, v, seq, dense ffn, experts, top-k, expert ffn, shared
H, A, DQ, DC, N, R, V, S, F, E, K, FE = 64, 4, 32, 16, 8, 4, 8, 16, 96, 8, 2, 16


def _tiny(layers: int = 4, dense: tuple[int, ...] = (0,), q_lora: int = DQ) -> TransformerConfig:
    return TransformerConfig("tiny_mla", "llama", layers, H, A, 256, S, F, A, False, experts=E, experts_per_token=K,
                             expert_ffn=FE, shared_expert_ffn=2 * FE, shared_expert_gate=False, dense_layers=dense,
                             q_lora_rank=q_lora, kv_lora_rank=DC, qk_nope_head_dim=N, qk_rope_head_dim=R, v_head_dim=V)


def test_deepseek_v3_and_v2_have_their_published_parameter_counts():
    v3, v2 = load_transformer("deepseek_v3"), load_transformer("deepseek_v2")
    # DeepSeek-V3 (arXiv 2412.19437, §1 and §4.2): 671B total, 37B activated a token, without the 14B MTP module;
    # its README_WEIGHTS.md: 36.6B activated, counting the output head (0.9B) but not the input embedding
    assert round(v3.parameter_count / 1e9) == 671
    assert round((v3.active_parameter_count - v3.vocab * v3.hidden) / 1e9, 1) == 36.6
    assert round((v3.active_parameter_count - v3.vocab * v3.hidden) / 1e9) == 37
    # DeepSeek-V2 (arXiv 2405.04434, §1): 236B total, 21B activated
    assert round(v2.parameter_count / 1e9) == 236 and round(v2.active_parameter_count / 1e9) == 21
    assert (v3.dense_layers, v2.dense_layers, v3.router_score, v2.router_score) == ((0, 1, 2), (0,), "sigmoid", "softmax")


def test_mla_gemms_and_kv_widths_by_hand():
    work = block_work(_tiny(), 1, tp=2, sequence_parallel=True)
    shapes = {op.layer: [(g.m, g.k, g.n, g.count) for g in op.gemms] for op in work.forward if op.gemms}
    # TP 2: 8 of 16 tokens local; the down projections duplicated (local tokens, whole widths), the up ones
    # column-parallel on all tokens (2 heads a rank), the core at q/k 8 + 4 = 12 and v 8, proj 2·8 → 64
    assert shapes["q_down"] == [(8, 64, 32, 1)] and shapes["q_up"] == [(16, 32, 2 * 12, 1)]
    assert shapes["kv_down"] == [(8, 64, 16 + 4, 1)] and shapes["kv_up"] == [(16, 16, 2 * (8 + 8), 1)]
    assert shapes["scores"] == [(16, 12, 16, 2)] and shapes["context"] == [(16, 16, 8, 2)]
    assert shapes["proj"] == [(16, 2 * 8, 64, 1)]
    gathered = {x.name: x.bytes for x in work.forward_collectives if x.name.startswith("attn.")}
    assert gathered == {"attn.q_up.all-gather": 16 * 32 * 2, "attn.kv_up.all-gather": 16 * 16 * 2,
                        "attn.k_pos.all-gather": 16 * 4 * 2, "attn.reduce-scatter": 16 * 64 * 2}
    no_q_latent = {op.layer for op in block_work(_tiny(q_lora=0), 1).forward if op.gemms}
    assert "q_proj" in no_q_latent and "q_down" not in no_q_latent


def test_mla_model_flops_by_hand():
    c = _tiny(layers=2, dense=(0,))
    # GEMM weights and the norms' γ (two per layer, the q and kv latents'), 6 FLOPs each a token (archsim's count)
    attention = H * DQ + DQ * A * (N + R) + H * (DC + R) + DC * A * (N + V) + A * V * H + 2 * H + DQ + DC
    dense, moe = attention + 3 * H * F, attention + (K + 2) * 3 * H * FE  # k routed, 2 shared; no router (Megatron's)
    per_token = 6 * (dense + moe + 256 * H)
    core = 2 * 6 * A * (N + R + V) * S * S  # two layers, the whole square: 3 × (QKᵀ at 12 + PV at 8) × 2 FLOPs
    assert model_flops(c, 3) == 3 * (S * per_token + core)


def test_a_pipeline_of_dense_and_moe_stages_is_the_sum_of_its_kinds_layers():
    c = _tiny(layers=4, dense=(0, 1, 2))
    assert stage_kinds(c, (2, 2)) == (((LAYER, 0), (DENSE, 2)), ((LAYER, 1), (DENSE, 1)))
    # interleaved: virtual stages 0, 1, 2, 3 of one layer each on ranks 0, 1, 0, 1; layers 0-2 dense, 3 MoE
    assert held_kinds(c, (1, 1, 1, 1), (0, 1, 0, 1), (0,)) == (0, 2)  # (MoE, dense): layers 0 and 2
    assert held_kinds(c, (1, 1, 1, 1), (0, 1, 0, 1), (1,)) == (1, 1)  # layers 1 and 3
    assert held_kinds(c, (1, 1, 1, 1), (0, 1, 0, 1)) == (1, 3)
    par = Parallelism(1, 2, 1, 4, 1, "none")
    machine = single_node("h100-80gb-sxm", 2).machine(par)
    pieces = model_pieces(c, par, machine)
    times = stage_times(c, par, machine, pieces)
    moe, dense, emb, head = pieces[LAYER], pieces[DENSE], pieces["embedding"], pieces["head"]
    assert moe.forward > dense.forward > 0
    assert times.forward[0] == pytest.approx(2 * dense.forward + emb.forward, rel=1e-12)
    assert times.forward[1] == pytest.approx(moe.forward + dense.forward + head.forward, rel=1e-12)
    assert times.backward_weight[1] == pytest.approx(moe.backward_weight + dense.backward_weight
                                                     + head.backward_weight, rel=1e-12)


def test_what_is_not_modelled_is_refused_in_one_line():
    c = _tiny()
    machine = single_node("h100-80gb-sxm", 1)
    par = Parallelism(1, 1, 1, 1, 1, "none")
    with pytest.raises(InputError, match="latent attention|mixture of experts") as caught:
        model_pieces(c, par, replace(machine.machine(par), implementation="pytorch-eager"))
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match="dense layers"):
        _tiny(dense=(0, 1, 2, 3))
    with pytest.raises(InputError, match="kv_lora_rank"):
        TransformerConfig("x", "llama", 1, H, A, 256, S, F, A, kv_lora_rank=DC)
