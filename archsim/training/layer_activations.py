"""Activation bytes one transformer layer keeps for its backward, per micro-batch, on one GPU of its TP group.

In bytes, with s tokens per sequence, b sequences, h hidden, a heads, TP degree t (Korthikanti et al. 2022, §4,
Table 2):

=============  ==============================  ===========================
recompute      without sequence parallelism    with sequence parallelism
=============  ==============================  ===========================
none           s·b·h·(10 + 24/t + 5·a·s/(h·t))  s·b·h/t·(34 + 5·a·s/h)
selective      s·b·h·(10 + 24/t)               s·b·h/t · 34
full           2·s·b·h (the layer's input)     2·s·b·h/t
=============  ==============================  ===========================

The 24/t is a GPT layer's (4·h GELU MLP, as many KV heads as heads): each layer's is read off its widths
(:func:`split_activation_bytes`: grouped K and V, the MLP's width, SwiGLU's three kept tensors; MLA's Q and K of
qk_nope + qk_rope and V and the projection's input of v_head_dim per head). MLA keeps its q and kv latents too, each
before its norm (the norm's input) and after it (the up-projection's input): 2·2·(q_lora_rank + kv_lora_rank) bytes
a token, on the rank's own tokens (/t under sequence parallelism: the down-projections are duplicated, not split).

Recomputation rematerialises one layer at a time in the backward (:func:`layer_kept`'s working set): full
recompute adds one layer's ``none`` activations less the 2·s·b·h of its input — the checkpoint it reruns from,
which the first LayerNorm saves again as the same tensor and which is counted among the micro-batch's kept ones
already (until 2026-12-02 it was counted twice) — selective one layer's attention core (5·a·s²·b/t; 2·a·s²·b/t
without attention dropout: the softmax output alone, :func:`attention_core_per_score`). Without hidden dropout
(Llama) the two residual dropout masks are not kept: 8 + 24/t (32 with sequence parallelism) in place of
10 + 24/t (34), :func:`residual_mask_bytes`. In fp32 the 2-byte values double and the 1-byte dropout masks stay
1 byte (:func:`layer_mask_bytes`): a GPT layer without recompute keeps s·b·h·(66 + 9·a·s/h) bytes, not twice
34 + 5·a·s/h.

With FlashAttention (``attention = "flash"``) no s² tensor is kept: ``none`` keeps the selective row's activations
plus the fp32 log-sum-exp of every query row (4·a·s·b/t, 4 bytes in every dtype: :func:`layer_lse_bytes`), and
selective recompute has nothing left to recompute (it keeps what ``none`` keeps); the buffers its backward allocates
join one layer's working set (:func:`~archsim.training.flash_blocks.flash_backward_bytes`).

How many micro-batches' worth a stage holds, and its first and last stages' own terms (the embedding's dropout
mask, the logits), are :mod:`archsim.training.memory`'s.
"""

from __future__ import annotations

from functools import lru_cache

from archsim.training.flash_blocks import flash_backward_bytes
from archsim.training.moe_ops import mlp_activation_bytes, routing_tokens
from archsim.workload.transformer import TransformerConfig, layer_widths

LSE_BYTES = 4  # FlashAttention's fp32 log-sum-exp, per query row and head, in every dtype


@lru_cache(maxsize=4096)  # a planned search's rank sizing asks again and again for the same shapes
def layer_activation_bytes(c: TransformerConfig, micro_batch: int, tp: int, recompute: str,
                           sequence_parallel: bool, attention: str = "standard") -> float:
    """Korthikanti et al.'s per-layer activation bytes (table above), their 24/t read off the layer's widths
    (:func:`split_activation_bytes`: grouped K and V, the MLP's width and gate); FlashAttention's below it."""
    s, b, h, a, t = c.seq, micro_batch, c.hidden, c.heads, tp
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    if attention == "flash":
        return layer_activation_bytes(c, b, t, "selective", sequence_parallel) + layer_lse_bytes(c, b, t, recompute,
                                                                                                  attention)
    unsplit = (8 + residual_mask_bytes(c)) * sbh / (t if sequence_parallel else 1)
    kept = unsplit + s * b * split_activation_bytes(c, t, routing_tokens(c, b, t, sequence_parallel))
    if c.mla:  # the q and kv latents before and after their norms (duplicated modules: each rank's own tokens)
        kept += s * b * 2 * 2 * (c.q_lora_rank + c.kv_lora_rank) / (t if sequence_parallel else 1)
    if recompute == "selective":
        return kept
    return kept + attention_core_per_score(c) * a * s * s * b / t


def split_activation_bytes(c: TransformerConfig, tp: int, local: int) -> float:
    """Bytes per token a layer keeps of the tensors TP splits (fp16): Q, K and V for the scores' and
    context's backward, the projection's input, and the MLP's — a GELU MLP's activation input and fc2
    input (2 × ffn), a gated one's gate and up outputs and their product (3 × ffn; a mixture's experts' rows of the
    ``local`` tokens a rank routes: :func:`~archsim.training.moe_ops.mlp_activation_bytes`) — at their widths on one
    rank (:func:`~archsim.workload.transformer.layer_widths`: grouped K and V, KV heads replicated past TP): 24·h/t for GPT."""
    w = layer_widths(c, tp)
    qk_norm_inputs = (w.heads + w.kv_heads) * w.head_dim if c.qk_norm else 0  # a norm keeps its input, as the LNs
    return 2 * (w.qkv + qk_norm_inputs + w.attention) + mlp_activation_bytes(c, tp, local)


def residual_mask_bytes(c: TransformerConfig) -> int:
    """Bytes per s·b·h of a layer's two residual dropout masks (1 byte each: Korthikanti et al.'s table
    counts them in its 10, or 34 with sequence parallelism); 0 when the model does not drop hidden states
    (:attr:`~archsim.workload.transformer.TransformerConfig.drops_hidden`: no dropout, no mask)."""
    return 2 if c.drops_hidden else 0


def attention_core_per_score(c: TransformerConfig) -> int:
    """Bytes standard attention keeps per score (a·s²·b/t of them per layer and micro-batch) beyond Q, K and
    V: softmax output 2, dropout mask 1 and dropout output 2, Korthikanti et al.'s 5; without attention
    dropout (:attr:`~archsim.workload.transformer.TransformerConfig.drops_attention`) the softmax output's 2
    only, which softmax's backward and the P·V GEMM both read."""
    return 5 if c.drops_attention else 2


@lru_cache(maxsize=4096)  # as layer_activation_bytes
def layer_mask_bytes(c: TransformerConfig, micro_batch: int, tp: int, recompute: str, sequence_parallel: bool,
                     attention: str = "standard") -> float:
    """The 1-byte dropout masks among :func:`layer_activation_bytes`' bytes: Korthikanti et al.'s
    34·s·b·h + 5·a·s²·b splits into 2-byte values and the masks, the two residual dropouts' s·b·h each
    (:func:`residual_mask_bytes`) and the attention dropout's a·s²·b (/t with TP; none kept under full
    recompute, none s² with FlashAttention, which keeps no mask). A mask is 1 byte whatever the training
    dtype (PyTorch's dropout keeps a bool tensor), so fp32 doubles the rest only (:func:`~archsim.training.memory.stage_terms`)."""
    if recompute == "full":
        return 0.0
    s, b, h, t = c.seq, micro_batch, c.hidden, tp
    residual = residual_mask_bytes(c) * s * b * h / (t if sequence_parallel else 1)
    if recompute == "selective" or attention == "flash":
        return residual
    return residual + attention_mask_per_score(c) * c.heads * s * s * b / t


@lru_cache(maxsize=4096)  # as layer_activation_bytes
def layer_lse_bytes(c: TransformerConfig, micro_batch: int, tp: int, recompute: str, attention: str) -> float:
    """FlashAttention's log-sum-exp among :func:`layer_activation_bytes`' bytes: one fp32 value (4 bytes) per
    query row and head, a·s·b/t of them, in every dtype — FlashAttention-2's ``flash_api.cpp`` allocates
    ``softmax_lse`` as ``at::kFloat`` whatever q's dtype, so fp32 does not double it (:func:`~archsim.training.memory.stage_terms`);
    none with standard attention or under full recompute."""
    if attention != "flash" or recompute == "full":
        return 0.0
    return LSE_BYTES * c.heads * c.seq * micro_batch / tp


def attention_mask_per_score(c: TransformerConfig) -> int:
    """Bytes of attention-dropout mask per score among :func:`attention_core_per_score`'s: 1, none without dropout."""
    return 1 if c.drops_attention else 0


@lru_cache(maxsize=4096)  # a stage's per-layer figures in one look-up: a planner sizes ranks many times over
def layer_kept(c: TransformerConfig, b: int, t: int, recompute: str, sp: bool, attention: str,
               working: bool) -> tuple[float, float, tuple[float, float] | None]:
    """Bytes per layer and micro-batch a stage's memory reads (:func:`~archsim.training.memory.stage_terms`): the
    activations kept, of them the masks and log-sum-exp (the same width in every dtype), and the working set's (the
    same two) where ``working`` and there is one: the rerun layer's under recomputation, FlashAttention's buffers."""
    per_layer = layer_activation_bytes(c, b, t, recompute, sp, attention)
    unscaled = layer_mask_bytes(c, b, t, recompute, sp, attention) + layer_lse_bytes(c, b, t, recompute, attention)
    rerun = (0.0, 0.0)
    if recompute == "full":  # the rerun layer's input is its checkpoint, held already (per_layer)
        rerun = (layer_activation_bytes(c, b, t, "none", sp, attention) - per_layer,
                 layer_mask_bytes(c, b, t, "none", sp, attention) + layer_lse_bytes(c, b, t, "none", attention))
    elif recompute == "selective" and attention == "standard":
        rerun = (attention_core_per_score(c) * c.heads * c.seq**2 * b / t,
                 attention_mask_per_score(c) * c.heads * c.seq**2 * b / t)
    if attention == "flash":  # its backward's buffers, beside the rerun layer if any
        extra = flash_backward_bytes(c, b, t)
        rerun = (rerun[0] + extra[0], rerun[1] + extra[1])
    return per_layer, unscaled, rerun if working and any(rerun) else None


__all__ = ["LSE_BYTES", "attention_core_per_score", "attention_mask_per_score", "layer_activation_bytes", "layer_kept",
           "layer_lse_bytes", "layer_mask_bytes", "residual_mask_bytes", "split_activation_bytes"]
