"""Parameter counts of one transformer layer and of the pieces around it, as Megatron counts them (RMSNorm γ only,
LayerNorm γ and β; no padding), read by the model's totals (:attr:`~archsim.workload.transformer.TransformerConfig.parameter_count`)
and by each rank's share (:func:`archsim.training.memory.layer_parameters_per_gpu`)."""

from __future__ import annotations

from archsim.workload.mla import mla_parameters, mla_replicated_parameters
from archsim.workload.transformer import TransformerConfig, layer_widths


def switch_parameter_count(c: TransformerConfig) -> int:
    """Parameters of ``SwitchTransformersForConditionalGeneration``: the shared token table (tied to the
    LM head), per stack a relative-position bias table (buckets × heads) and a final RMS norm (h); per
    layer q, k, v, o (4·h·kv, no biases) and an RMS norm's γ per sub-layer; decoder layers add cross-
    attention; a dense FFN has wi, wo (2·h·f), a sparse one ``experts`` of them and the router (h·E)."""
    h, kv, f, e, step = c.hidden, c.kv_channels, c.ffn, c.experts, c.sparse_step
    attention = 4 * h * kv + h
    dense, sparse = 2 * h * f + h, e * 2 * h * f + h * e + h
    ffns = (step - 1) * dense + sparse
    encoder = c.layers * (step * attention + ffns)
    decoder = c.layers * (2 * step * attention + ffns)
    return c.vocab * h + 2 * (c.position_buckets * c.heads + h) + encoder + decoder


def layer_parameters(c: TransformerConfig) -> int:
    """Parameters of one transformer layer (weights and biases; norms' γ, β); MLA's attention
    :func:`~archsim.workload.mla.mla_parameters` in place of QKV and the projection."""
    w = layer_widths(c)
    h = w.hidden
    qkv, proj = (mla_parameters(c), 0) if c.mla else (h * w.qkv, w.attention * h)
    if w.gated:  # Llama: no biases but Qwen2's on q, k and v; the RMS norms' γ (Qwen3's q and k norms' too)
        return qkv + (w.qkv if c.qkv_bias else 0) + proj + mlp_parameters(c) + 2 * h + qk_norm_parameters(c)
    return qkv + w.qkv + proj + h + 2 * h * w.ffn + w.ffn + h + 4 * h


def mlp_parameters(c: TransformerConfig) -> int:
    """A gated layer's MLP parameters: SwiGLU's gate, up and down (3·h·f), or a mixture of experts' router
    (h·E) and E such MLPs of ``expert_ffn`` width (no biases), and its shared expert's (:func:`shared_expert_parameters`)."""
    if c.moe:
        return c.hidden * c.experts + c.experts * 3 * c.hidden * c.expert_ffn + shared_expert_parameters(c)
    return 3 * c.hidden * c.ffn


def shared_expert_parameters(c: TransformerConfig) -> int:
    """A mixture's shared expert: one SwiGLU MLP of ``shared_expert_ffn`` width (3·h·f_s, split over TP) and its
    gate's h → 1 weight (h, replicated: Megatron-Core's ``SharedExpertMLP.gate_weight``); 0 without one."""
    return 3 * c.hidden * c.shared_expert_ffn + shared_gate_parameters(c) if c.shared_expert_ffn else 0


def shared_gate_parameters(c: TransformerConfig) -> int:
    """The shared expert's gate, h → 1 (h, replicated over TP); 0 without a shared expert or ungated (DeepSeek's)."""
    return c.hidden if c.shared_expert_ffn and c.shared_expert_gate else 0


def qk_norm_parameters(c: TransformerConfig) -> int:
    """γ of Qwen3's query and key RMS norms (head_dim each, shared by every head: replicated over TP); 0 without."""
    return 2 * c.head_dim if c.qk_norm else 0


def replicated_parameters(c: TransformerConfig) -> int:
    """A layer's parameters every TP rank holds whole: norms' γ (β; Qwen3's q and k norms' γ), proj and fc2 biases,
    a mixture's router (h·E: Megatron-Core's ``TopKRouter.weight`` is not split) and shared expert's gate (h); MLA's
    down projections and latent norms (duplicated on every TP rank: :func:`~archsim.workload.mla.mla_replicated_parameters`)."""
    if c.family != "llama":
        return 6 * c.hidden
    return (2 * c.hidden + qk_norm_parameters(c) + c.hidden * c.experts * c.moe + shared_gate_parameters(c)
            + mla_replicated_parameters(c))


def outer_norm_parameters(c: TransformerConfig) -> int:
    """The one norm outside the layers (replicated over TP): the final norm (Llama's RMSNorm γ; GPT's and
    OPT's LayerNorm γ and β) or BERT's embedding LayerNorm (γ, β)."""
    return (1 if c.family == "llama" else 2) * c.hidden
