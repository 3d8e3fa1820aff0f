"""The figures people quote for a training run: MFU, model and hardware TFLOP/s per GPU, tokens/s.

Model FLOPs count one forward and one backward (Narayanan et al. 2021, eq. 3 without the recompute;
Chowdhery et al. 2022's MFU); hardware FLOPs add what the run recomputes (Korthikanti et al. 2022,
§6: full recompute reruns each layer's forward, selective only attention's scores and context), so
full recompute gives Narayanan et al.'s 96·B·s·l·h²·(1 + s/6h + V/16lh) for a GPT. FlashAttention
adds its backward's recompute of the scores, one QKᵀ GEMM per head (Dao 2023, Algorithm 2).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from archsim.training.mtp import flops_parameters, mtp_config
from archsim.workload.layer_kinds import kind_counts
from archsim.workload.layer_parameters import layer_parameters, mlp_parameters
from archsim.workload.transformer import TransformerConfig


def active_layer_parameters(c: TransformerConfig) -> int:
    """A layer's parameters each token's GEMMs run through: a mixture of experts' k routed experts (3·h·f each) and
    its shared expert (3·h·f_s), not its other experts, its router nor the shared expert's gate, as Megatron-LM's
    ``num_floating_point_operations`` (``megatron/training/training.py``, ``moe_layer_flops``: routed and shared
    FLOPs) counts an MoE layer's MLP; a dense layer's all."""
    if not c.moe:
        return layer_parameters(c)
    routed = c.experts_per_token * 3 * c.hidden * c.expert_ffn
    return layer_parameters(c) - mlp_parameters(c) + routed + 3 * c.hidden * c.shared_expert_ffn


def model_flops(c: TransformerConfig, global_batch: int) -> float:
    """FLOPs of one iteration without recomputation (PaLM's MFU count, Chowdhery et al. 2022 App. B):
    6 per parameter per token (the layers' — a mixture's active ones, :func:`active_layer_parameters`, each layer its
    kind's, :mod:`~archsim.workload.layer_kinds` — and the LM head's) plus 12·layers·heads·head_dim per query-key product
    (MLA: 6·layers·heads·(qk_nope + qk_rope + v_head_dim), scores and context at their own head widths)
    of attention's scores and context (:func:`attended_pairs`: s² per sequence without a window). For a
    GPT this is Narayanan et al.'s 72·B·s·l·h²(1 + s/6h + V/12lh). Multi-token prediction
    (:mod:`~archsim.training.mtp`) as Megatron-LM's ``num_floating_point_operations`` counts it: each module a layer
    of the last layer's kind (its attention too), its norms and projection (3h + 2h²) and the LM head again."""
    if c.family == "switch":  # encoder–decoder with experts: its op list's GEMMs
        from archsim.training.hf_switch_ops import switch_model_flops

        return switch_model_flops(c, global_batch)
    tokens = global_batch * c.seq
    params = sum(n * active_layer_parameters(kind) for kind, n in kind_counts(c)) + c.vocab * c.hidden
    width = c.heads * (c.qk_head_dim + c.head_dim)  # 2·heads·head_dim; MLA's scores over qk, context over v
    flops = tokens * 6 * params + global_batch * 6 * c.layers * width * attended_pairs(c)
    if not c.mtp_layers:
        return flops
    mtp = c.mtp_layers * (active_layer_parameters(mtp_config(c)) + c.vocab * c.hidden) + flops_parameters(c)
    return flops + tokens * 6 * mtp + global_batch * 6 * c.mtp_layers * width * attended_pairs(c)


def attended_pairs(c: TransformerConfig) -> int:
    """Query-key products of one sequence's attention that the FLOPs count, per head and head dimension:
    s² (the whole square, as papers count causal attention: Narayanan et al. 2021, PaLM's MFU), though
    FlashAttention's kernel computes about half of it (its time counts the blocks it computes:
    :mod:`archsim.training.flash_blocks`). Kept under a sliding window w < s, the convention counts each
    kept causal pair off the diagonal twice and the diagonal once: 2·pairs_w − s = (s − w)(2w − 1) + w²;
    a window of s or more changes nothing."""
    s, w = c.seq, c.sliding_window
    if w is None or w >= s:
        return s * s
    return (s - w) * (2 * w - 1) + w * w


def recomputed_flops(c: TransformerConfig, global_batch: int, recompute: str, attention: str = "standard") -> float:
    """FLOPs run again in the backward: a layer's forward (2 per parameter per token and 4·heads·head_dim·seq
    per token for scores and context) under full recompute, the scores and context under selective; with
    FlashAttention the backward also recomputes QKᵀ from Q and K (2·heads·head_dim·seq per token per layer), and
    selective recompute reruns nothing (there is no s² tensor to rebuild). Scores and context count
    :func:`attended_pairs` (a sliding window's fewer)."""
    if c.family == "switch" and recompute == "none":  # nothing rerun (other recompute modes are refused)
        return 0.0
    tokens = global_batch * c.seq
    scores = 2 * c.heads * c.qk_head_dim * attended_pairs(c) / c.seq  # one QKᵀ per token per layer, FLOPs
    context = 2 * c.attention_width * attended_pairs(c) / c.seq  # one P·V (MLA's over v_head_dim: fewer)
    core = scores + context
    out = 0.0
    for kind, n in kind_counts(c):
        per_layer = {"none": 0.0, "selective": core, "full": 2.0 * active_layer_parameters(kind) + core}[recompute]
        if attention == "flash":  # selective has nothing to rerun: flash keeps no s² tensor (archsim.training.memory)
            per_layer = (per_layer if recompute == "full" else 0.0) + scores
        out += tokens * n * per_layer
        if c.mtp_layers and kind == mtp_config(c):  # each MTP module's layer reruns as the last layer (mtp.py)
            out += tokens * c.mtp_layers * per_layer
    if c.mtp_layers and recompute == "full":  # and its 2h → h projection, checkpointed with it
        out += tokens * c.mtp_layers * 2.0 * 2 * c.hidden * c.hidden
    return out


def mean_peak(machines) -> float:
    """MFU's peak per GPU, FLOP/s: the mean of the pipeline ranks' devices' dense peaks at the dtype they
    train in (fp32: the FP32 lanes' peak, not the tensor cores'). Every rank holds TP × DP GPUs, so this is
    the mean over the run's GPUs too; ``train``, its sweep and ``search`` all divide by it."""
    return sum(m.gpu.peak(m.dtype) for m in machines) / len(machines)


@dataclass(frozen=True)
class Throughput:
    """mfu: model FLOP/s over the GPUs' summed peak; tflops_per_gpu: model TFLOP/s per GPU;
    hardware_tflops_per_gpu: with the recomputed FLOPs; tokens_per_second: the whole cluster's."""

    mfu: float
    tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    tokens_per_second: float

    def to_dict(self) -> dict[str, float]:
        """The rates under the names ``archsim train --format json``'s meta and search's rows give them (``mfu``
        a fraction 0–1, TFLOP/s per GPU, tokens/s), as Python floats: JSON-safe, as the results' ``to_dict``."""
        return {field.name: float(getattr(self, field.name)) for field in fields(self)}


def throughput(c: TransformerConfig, global_batch: int, recompute: str, seconds: float, gpus: int,
               peak_flops: float, attention: str = "standard") -> Throughput:
    """One iteration of ``global_batch`` samples in ``seconds`` on ``gpus`` GPUs of ``peak_flops`` FLOP/s
    each (the mean over the GPUs on a mixed cluster)."""
    model = model_flops(c, global_batch)
    hardware = model + recomputed_flops(c, global_batch, recompute, attention)
    return Throughput(model / (seconds * gpus * peak_flops), model / (seconds * gpus) / 1e12,
                      hardware / (seconds * gpus) / 1e12, global_batch * c.seq / seconds)


__all__ = ["Throughput", "attended_pairs", "mean_peak", "model_flops", "recomputed_flops", "throughput"]
