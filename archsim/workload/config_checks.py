"""Checks of a :class:`~archsim.workload.transformer.TransformerConfig`'s fields that read several of them together:
Megatron-Core's capacity settings, multi-head latent attention's widths (DeepSeek-V2/V3) and which layers are dense.
Kept apart from the shapes so that the config class stays readable; each raises one line naming its field."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import shown

if TYPE_CHECKING:
    from archsim.workload.transformer import TransformerConfig

ROUTER_SCORES = ("softmax", "sigmoid")  # Megatron-Core's --moe-router-score-function values archsim prices
MLA_FIELDS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")  # all set, or none (q_lora_rank 0 or set)


def probability(value: object) -> bool:
    """Whether ``value`` is a dropout probability in [0, 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1


def check_moe_capacity(c: TransformerConfig) -> None:
    """Megatron-Core's capacity settings: a factor above 0 on a mixture of experts, padding only with a factor
    (``TransformerConfig.__post_init__`` raises without one; a negative factor it reads as dropless: refused here);
    a load imbalance (training/moe_ops.py's routed_rows) at least 1, on a mixture of experts."""
    factor, pad, imbalance = c.moe_expert_capacity_factor, c.moe_pad_expert_input_to_capacity, c.moe_load_imbalance
    if imbalance is not None and not c.moe:
        raise InputError(f"weighs a mixture of experts' busiest EP rank; {c.name} is dense", field="moe-load-imbalance")
    if imbalance is not None and (isinstance(imbalance, bool) or not isinstance(imbalance, (int, float))
                                  or not math.isfinite(imbalance) or imbalance < 1):
        raise InputError(f"expected a ratio >= 1, got {shown(imbalance)}", field="moe-load-imbalance")
    if not isinstance(pad, bool):
        raise InputError(f"expected true or false, got {shown(pad)}", field="moe-pad-expert-input-to-capacity")
    if factor is None and not pad:
        return
    flag = "moe-expert-capacity-factor" if factor is not None else "moe-pad-expert-input-to-capacity"
    if not c.moe:
        raise InputError(f"caps a mixture of experts' expert inputs; {c.name} is dense", field=flag)
    if factor is None:
        raise InputError(f"pads each expert's input to its capacity: give {setting('moe_expert_capacity_factor', placeholder='C')} "
                         "too (Megatron-Core raises without one)", field=flag)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
        raise InputError(f"expected a capacity factor above 0, got {shown(factor)}", field=flag)


def check_deepseek(c: TransformerConfig) -> None:
    """Multi-head latent attention's widths (all of kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, or
    none; q_lora_rank only with them; a llama-family layer without grouped K/V heads, head_dim or Qwen's norms), the
    dense layers of a mixture (distinct indices below ``layers``, not all of them), the shared expert's gate and the
    router's score function."""
    mla = [getattr(c, key) for key in MLA_FIELDS]
    if any(mla) and not all(mla) or c.q_lora_rank and not all(mla):
        raise InputError(f"multi-head latent attention sets kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and "
                         f"v_head_dim together (q_lora_rank optional), got {dict(zip(MLA_FIELDS, mla))}",
                         field="kv_lora_rank")
    if c.mla and (c.family != "llama" or c.kv_heads != c.heads or c.kv_channels or c.qk_norm or c.qkv_bias
                  or c.qk_rope_head_dim % 2):
        raise InputError("multi-head latent attention is modelled on a llama-family layer with one key and value "
                         "head per query head, no head_dim, q/k norms or biases, and an even rotary width "
                         f"(got {c.family}, kv_heads {c.kv_heads} of {c.heads}, rope {c.qk_rope_head_dim})",
                         field="kv_lora_rank")
    dense = c.dense_layers
    if not isinstance(dense, tuple) or any(not isinstance(i, int) or isinstance(i, bool) for i in dense):
        raise InputError(f"expected a tuple of layer indices, got {shown(dense)}", field="dense_layers")
    if dense and (not c.moe or len(set(dense)) != len(dense) or min(dense) < 0 or max(dense) >= c.layers
                  or len(dense) == c.layers):
        raise InputError(f"dense layers {list(dense)} must be distinct indices below {c.layers}, some layers left "
                         "to a mixture of experts (set experts too)", field="dense_layers")
    if not isinstance(c.shared_expert_gate, bool):
        raise InputError(f"expected true or false, got {shown(c.shared_expert_gate)}", field="shared_expert_gate")
    scale = c.routed_scaling_factor
    if c.router_score not in ROUTER_SCORES or (c.router_score != "softmax" and not c.moe):
        raise InputError(f"expected one of {', '.join(ROUTER_SCORES)} (sigmoid on a mixture of experts), got "
                         f"{shown(c.router_score)}", field="router_score")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise InputError(f"expected a factor above 0, got {shown(scale)}", field="routed_scaling_factor")
