"""A DeepSeek-like model of dense and MoE layers through search's default even split and train's refusals:
the planner is asked only where it may split the model (search.md, uneven_gain), and a refusal names the reason
that applies (mla_ops.deepseek_rule)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from test_deepseek_search_rules import MIXED, train_refusal

from archsim import search
from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.search_space import Candidate

PLAIN_MOE = replace(MIXED, name="tiny_mixed_mha", q_lora_rank=0, kv_lora_rank=0, qk_nope_head_dim=0,
                    qk_rope_head_dim=0, v_head_dim=0)


@pytest.mark.parametrize("c", [MIXED, PLAIN_MOE])
def test_an_even_search_over_interleaved_chunks_of_two_kinds_ranks_its_rows(c):
    """Megatron's even split runs 8 layers as 4 chunks of 2 (PP 2, V 2); the planner does not split two kinds over
    chunks, so such a row's uneven_gain is NaN (no planned split to compare), not a refusal of the whole search."""
    cluster = single_node("h100-80gb-sxm", 4)
    rows = search(c, cluster=cluster, gpus=4, global_batch=8, seq=16, schedule=["interleaved-1f1b"],
                  chunks=[2], top=50).rows
    interleaved = [r for r in rows if r["pp"] == 2 and r["interleave"] == 2]
    assert interleaved, "the even split of 8 layers over 2 ranks × 2 chunks runs"
    assert all(math.isnan(r["uneven_gain"]) for r in interleaved)
    assert all(r["stage_layers"] in ("", "2,2,2,2") for r in interleaved)  # Megatron's even split


@pytest.mark.parametrize("k", [Candidate(1, 2, 2, 1, "none", "zb-h1", 1, False),
                               Candidate(1, 2, 2, 1, "none", "1f1b", 1, False, fsdp=True)])
def test_a_refusal_for_mixed_kinds_names_the_kinds_not_mla(k):
    """FSDP and the split backward are refused for dense beside MoE layers, whatever the attention: the MLA-only
    model trains under them, so the reason must name the kinds."""
    reason = train_refusal(MIXED, k.parallelism(8))
    assert "dense and MoE layers" in reason
    assert "latent" not in reason


GATED = replace(PLAIN_MOE, name="tiny_gated", dense_layers=(), shared_expert_gate=True)  # Qwen2-MoE's shared expert
UNGATED = replace(GATED, name="tiny_ungated", shared_expert_gate=False)  # DeepSeek's (DeepseekV3MoE.shared_experts)


def test_an_ungated_shared_expert_runs_no_gate():
    """DeepSeek's shared experts are added ungated: no h → 1 GEMM, no sigmoid multiply, in either direction."""
    from archsim.training.moe_ops import moe_work

    gated = {op.layer for op in moe_work(GATED, 32, 16, 2, 1).forward}
    names = {op.layer for op in (*moe_work(UNGATED, 32, 16, 2, 1).forward, *moe_work(UNGATED, 32, 16, 2, 1).backward)}
    assert {"shared_expert.gate", "shared_expert.gate_mul"} <= gated  # the gated one keeps them
    assert "shared_expert.fc1" in names
    assert not any(name.startswith("shared_expert.gate") for name in names)


def test_an_ungated_shared_expert_keeps_no_gate_activations():
    """Hand count, TP 2, h 64: the gate's output and sigmoid's (2·(h + 1)/t bytes a token) kept for the multiply,
    and the gate's output gradient (2/t under SP) held from I to W, only where there is a gate."""
    from archsim.training.moe_ops import expert_weight_gradient_bytes, mlp_activation_bytes

    h, t = 64, 2
    assert mlp_activation_bytes(GATED, t, 16) - mlp_activation_bytes(UNGATED, t, 16) == 2 * (h + 1) / t
    assert (expert_weight_gradient_bytes(GATED, t, True, 16) - expert_weight_gradient_bytes(UNGATED, t, True, 16)
            == 2 / t)


@pytest.mark.parametrize("change", [{"first_k_dense_replace": 4}, {"first_k_dense_replace": 9},
                                    {"n_routed_experts": None}])
def test_a_deepseek_config_of_no_moe_layer_reads_as_a_dense_mla_model(tmp_path, change):
    """HF's DeepseekV3Model builds every layer dense where first_k_dense_replace ≥ the layers or n_routed_experts is
    null; its parameters by hand: embedding and head 2·V·h, the final norm h, and per layer MLA (q down h·dq, its norm
    dq, q up dq·H·(n + r), kv down h·(dc + r), its norm dc, kv up dc·H·(n + v), output H·v·h), two norms 2h and a
    SwiGLU MLP 3·h·f."""
    import json

    from archsim.workload.model_files import load_transformer

    h, heads, dq, dc, n, r, v, f, vocab, layers = 64, 4, 32, 16, 8, 4, 8, 96, 256, 4
    config = {"model_type": "deepseek_v3", "hidden_size": h, "num_attention_heads": heads, "num_key_value_heads": heads,
              "num_hidden_layers": layers, "intermediate_size": f, "vocab_size": vocab, "max_position_embeddings": 64,
              "q_lora_rank": dq, "kv_lora_rank": dc, "qk_nope_head_dim": n, "qk_rope_head_dim": r, "v_head_dim": v,
              "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "n_shared_experts": 1,
              "first_k_dense_replace": 1, "moe_layer_freq": 1, "hidden_act": "silu", "tie_word_embeddings": False}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, **change}))
    c = load_transformer(path)
    mla = h * dq + dq + dq * heads * (n + r) + h * (dc + r) + dc + dc * heads * (n + v) + heads * v * h
    assert c.parameter_count == 2 * vocab * h + h + layers * (mla + 2 * h + 3 * h * f)
    assert not c.moe and c.mla


def test_a_router_score_archsim_does_not_price_is_refused_naming_the_field(tmp_path):
    """Megatron-Core also takes sqrtsoftplus (--moe-router-score-function); archsim prices softmax and sigmoid."""
    import json

    from archsim.workload.model_files import load_transformer

    config = {"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
              "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": 256, "max_position_embeddings": 64,
              "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
              "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "n_shared_experts": 1,
              "first_k_dense_replace": 1, "moe_layer_freq": 1, "hidden_act": "silu", "scoring_func": "sqrtsoftplus"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(InputError) as caught:
        load_transformer(path)
    text = str(caught.value)
    assert "\n" not in text and "scoring_func" in text and "softmax and sigmoid" in text, text
