"""DeepSeek's multi-head latent attention (MLA: DeepSeek-V2, arXiv 2405.04434 §2.1; DeepSeek-V3, arXiv 2412.19437
§2.1.1) as Megatron-Core builds it (``megatron/core/transformer/multi_latent_attention.py``, ``MLASelfAttention``;
``megatron/core/models/gpt/gpt_layer_specs.py``, the Transformer Engine spec; Megatron-LM commit d98e8a6):

=====================  ==========================================  ==============================================
module                 shape (h hidden, a heads, d_c kv_lora_rank,  TP
                       d_q q_lora_rank, n nope, r rope, v value)
=====================  ==========================================  ==============================================
linear_q_down_proj     h → d_q (without d_q: linear_q_proj,         ``TELinear`` ``parallel_mode="duplicated"``:
                       h → a·(n + r), column-parallel)              whole on every rank, on its own tokens
q_layernorm            RMSNorm γ over d_q                           duplicated (fused into linear_q_up_proj)
linear_q_up_proj       d_q → a·(n + r)                              column-parallel
linear_kv_down_proj    h → d_c + r                                  duplicated
kv_layernorm           RMSNorm γ over d_c                           duplicated (fused into linear_kv_up_proj)
linear_kv_up_proj      d_c → a·(n + v)                              column-parallel
core attention         scores over n + r, context over v            a/t heads a rank
linear_proj            a·v → h                                      row-parallel
=====================  ==========================================  ==============================================

No biases. The key's rotary part (r, from the kv down-projection) is one per token, shared by every head.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archsim.workload.transformer import TransformerConfig


def mla_replicated_parameters(c: TransformerConfig) -> int:
    """MLA's weights every TP rank holds whole: the q and kv down-projections (h·d_q, h·(d_c + r)) and the latent
    norms' γ (d_q, d_c); 0 without MLA."""
    if not c.mla:
        return 0
    h, dq = c.hidden, c.q_lora_rank
    return h * dq + dq + h * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank


def mla_split_parameters(c: TransformerConfig) -> int:
    """MLA's weights TP splits: q's up-projection d_q → a·(n + r) (or, without d_q, h → a·(n + r)), kv's
    d_c → a·(n + v) and the output projection a·v → h."""
    a, q_in = c.heads, c.q_lora_rank or c.hidden
    return q_in * a * c.qk_head_dim + c.kv_lora_rank * a * (c.qk_nope_head_dim + c.v_head_dim) \
        + a * c.v_head_dim * c.hidden


def mla_parameters(c: TransformerConfig) -> int:
    """An MLA layer's attention parameters (its projections and latent norms, not the layer's input norm)."""
    return mla_split_parameters(c) + mla_replicated_parameters(c)


__all__ = ["mla_parameters", "mla_replicated_parameters", "mla_split_parameters"]
