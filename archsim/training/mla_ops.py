"""Multi-head latent attention's ops on one rank (:mod:`archsim.workload.mla`: DeepSeek-V2/V3), as Megatron-Core runs
``MLASelfAttention`` with Transformer Engine (``megatron/core/transformer/multi_latent_attention.py``,
Megatron-LM commit d98e8a6): the projections, latent norms and RoPE before the attention core; the core
(:func:`~archsim.training.layer_ops.block_work`: scores over qk_nope + qk_rope, context over v_head_dim) and the
row-parallel output projection follow as a standard layer's.

Per micro-batch of T tokens on one of t TP ranks (``local`` = T/t under sequence parallelism, else T), a = heads/t:

=================  =============================  ============================================================
op                 GEMM / elements                 TP (``_qkv_down_projection``, ``get_query_key_value_tensors``)
=================  =============================  ============================================================
q_down             local × h → d_q                 duplicated: every rank its own tokens
q_norm             RMSNorm on local × d_q          (Transformer Engine fuses it into q_up's LayerNormLinear)
q_up               T × d_q → a·(n + r)              column-parallel: SP all-gathers its input, T·d_q
(q_proj, no d_q)   T × h → a·(n + r)                column-parallel: SP all-gathers its input, T·h
kv_down            local × h → d_c + r             duplicated
kv_norm            RMSNorm on local × d_c          fused as q_norm
kv_up              T × d_c → a·(n + v)              column-parallel: SP all-gathers its input, T·d_c
k_pos (SP only)    —                               ``gather_from_sequence_parallel_region``: T·r
rope_q             read q, write query, fp32       ``fused_apply_mla_rope_for_q`` (``apply_rope_fusion``)
                   angles: T·a·(n + r)·2 + T·r
rope_kv            read kv and k_pos, write key     ``fused_apply_mla_rope_for_kv``
                   and value, angles
=================  =============================  ============================================================

Backward: each GEMM's δ and weight gradient; under SP q_up's and kv_up's inputs regathered for the weight gradient
(under their δ, :data:`~archsim.training.layer_ops.SP_REGATHER`) and their input gradients reduce-scattered, k_pos's
gradient reduce-scattered; without SP their input gradients all-reduced. The duplicated down-projections' weight
gradients are partial sums over the TP group's tokens under SP, all-reduced once a step with the norms' γ
(``finalize_model_grads``' ``_allreduce_non_tensor_model_parallel_grads``): left out, as archsim leaves out the
norms' (h·(d_q + d_c + r) values a layer).
"""

from __future__ import annotations

from archsim.console import setting
from archsim.lowering.streamed import streamed_elements
from archsim.training.held_memory import SPLIT_SCHEDULES
from archsim.training.kernel_bytes import dtype_elements
from archsim.training.op_work import Collective, Work, gemm_ops, memory_op
from archsim.workload.transformer import TransformerConfig


def mla_work(c: TransformerConfig, tokens: int, local: int, tp: int, sequence_parallel: bool, dtype: str) -> Work:
    """MLA's ops before the attention core on one of ``tp`` ranks for ``tokens`` tokens (``local`` of them the rank's
    under sequence parallelism), both ways in forward order (the caller reverses the backward), and their TP
    collectives (module docstring)."""
    h, a, r, dq, dc = c.hidden, c.heads // tp, c.qk_rope_head_dim, c.q_lora_rank, c.kv_lora_rank
    qk, kv_up = c.qk_head_dim, c.qk_nope_head_dim + c.v_head_dim
    forward: list = []
    backward: list = []

    def gemm(name: str, m: int, k: int, n: int) -> None:
        f, d, g = gemm_ops(name, m, k, n)
        forward.append(f)
        backward.extend((d, g))

    def norm(name: str, width: int) -> None:
        f, d = memory_op(name, *streamed_elements("norm", local * width), ("ln", local, width))
        forward.append(f)
        backward.append(d)

    if dq:
        gemm("q_down", local, h, dq)
        norm("q_norm", dq)
        gemm("q_up", tokens, dq, a * qk)
    else:
        gemm("q_proj", tokens, h, a * qk)
    gemm("kv_down", local, h, dc + r)
    norm("kv_norm", dc)
    gemm("kv_up", tokens, dc, a * kv_up)
    angles = dtype_elements(4, dtype) * tokens * r  # the fp32 cos and sin rows read, as rope_elements counts them
    rope_q = 2 * tokens * a * qk + angles
    rope_kv = tokens * a * kv_up + tokens * r + tokens * a * (qk + c.v_head_dim) + angles
    for name, moved in (("rope_q", rope_q), ("rope_kv", rope_kv)):
        f, d = memory_op(name, moved, moved)
        forward.append(f)
        backward.append(d)
    return Work(tuple(forward), tuple(backward), *_collectives(c, tokens, tp, sequence_parallel))


def _collectives(c: TransformerConfig, tokens: int, tp: int,
                 sequence_parallel: bool) -> tuple[tuple[Collective, ...], tuple[Collective, ...]]:
    """MLA's TP collectives before the core (the output projection's are the layer's ``attn.`` ones), 2 bytes an
    element: the column-parallel up-projections' inputs (``q_up``: T·d_q, or ``q_proj``: T·h; ``kv_up``: T·d_c) and,
    under SP, the key's rotary part T·r."""
    if tp == 1:
        return (), ()
    q_name = "q_up" if c.q_lora_rank else "q_proj"
    inputs = ((q_name, tokens * (c.q_lora_rank or c.hidden) * 2), ("kv_up", tokens * c.kv_lora_rank * 2))
    rope = tokens * c.qk_rope_head_dim * 2
    if sequence_parallel:
        fwd = (*(Collective(f"attn.{name}.all-gather", "all-gather", "tp", size, "F") for name, size in inputs),
               Collective("attn.k_pos.all-gather", "all-gather", "tp", rope, "F"),
               Collective("attn.reduce-scatter", "reduce-scatter", "tp", tokens * c.hidden * 2, "F"))
        bwd = (Collective("attn.all-gather", "all-gather", "tp", tokens * c.hidden * 2, "B"),
               Collective("attn.k_pos.reduce-scatter", "reduce-scatter", "tp", rope, "B"),
               *(collective for name, size in inputs
                 for collective in (Collective(f"attn.{name}.input-regather", "all-gather", "tp", size, "B", (name,)),
                                    Collective(f"attn.{name}.reduce-scatter", "reduce-scatter", "tp", size, "B"))))
        return fwd, bwd
    return ((Collective("attn.all-reduce", "all-reduce", "tp", tokens * c.hidden * 2, "F"),),
            tuple(Collective(f"attn.{name}.all-reduce", "all-reduce", "tp", size, "B") for name, size in inputs))


def deepseek_rule(c: TransformerConfig, cp: int = 1, fp8: str | None = None, fsdp: bool = False,
                  schedule: str = "1f1b", chunks: int = 1, implementation: str = "megatron",
                  planned: bool = False) -> tuple[str, str] | None:
    """(search's rejection code, train's one-line reason) why a layout cannot train ``c``'s MLA or its layers of
    several kinds as archsim models them, or None — one rule for both: the eager op lists, context parallelism's
    exchange and fp8 are written for the standard layer; FSDP's units and the zero-bubble split's held bytes for
    layers of one kind; the planner (``planned``: ``--balance planned``) splits layers of several kinds over one
    chunk a rank only (``chunks``: model chunks per rank; ``schedule``: the schedule's name)."""
    mixed = bool(c.dense_layers)
    if not (c.mla or mixed):
        return None
    what = "multi-head latent attention" if c.mla else "a model with dense and MoE layers"
    kinds = "a model with dense and MoE layers"  # the rules below are the kinds', whatever the attention
    if implementation != "megatron":
        return "deepseek-needs-megatron", f"{what} is modelled on Megatron-Core's op list only, not {implementation}'s"
    if c.mla and cp > 1:
        return "mla-beside-cp", f"{what} with context parallelism (CP {cp}) is not modelled: give {setting('cp', 1)}"
    if fp8:
        return "deepseek-beside-fp8", f"{what} in fp8 is not modelled: leave out {setting('fp8')}"
    if mixed and fsdp:
        return "layer-kinds-beside-fsdp", f"FSDP's units on {kinds} are not modelled: leave out {setting('fsdp')}"
    if mixed and schedule in SPLIT_SCHEDULES:  # their held bytes are written for layers of one kind
        return ("layer-kinds-beside-split-backward",
                f"{schedule}'s split backward on {kinds} is not modelled: give a fused-backward schedule (1f1b)")
    if mixed and planned and chunks > 1:
        return ("layer-kinds-planned-over-chunks",
                (f"{setting('balance', 'planned')} splits {kinds} over one model chunk a rank only, not {chunks}: "
                 f"give {setting('stage-layers')}, or a schedule of one chunk a rank (1f1b, gpipe)"))
    return None


def deepseek_problem(c: TransformerConfig, par, implementation: str = "megatron") -> str | None:
    """:func:`deepseek_rule`'s reason for ``par`` (a :class:`~archsim.training.parallel.Parallelism`), or None."""
    rule = deepseek_rule(c, par.cp, par.fp8, par.fsdp, par.schedule_name, par.chunks, implementation)
    return None if rule is None else rule[1]


def refuse_deepseek(rule: tuple[str, str] | None) -> None:
    """Raise :func:`deepseek_rule`'s reason as a one-line input error (on the model), if any."""
    if rule is not None:
        from archsim.errors import InputError

        raise InputError(rule[1], field="model")


__all__ = ["deepseek_problem", "deepseek_rule", "mla_work", "refuse_deepseek"]
