"""The time Transformer Engine's delayed scaling adds under ``--fp8`` beside a layer's ops (those are
:mod:`~archsim.training.fp8_ops`'): the amax reduction and scale update of a model chunk once a micro-batch each way
(:func:`scaling_seconds`, in the stage's F and I), and the weights' cast once an iteration (:func:`weight_cast_seconds`,
among what follows the last backward). Read from NVIDIA/TransformerEngine (commit d0067d0d) and NVIDIA/Megatron-LM
(commit d98e8a6).

**Amax and scale.** Every quantize kernel records its tensor's amax. ``TransformerBlock.forward`` runs a model chunk's
layers under one ``fp8_autocast`` (the delayed recipe's outer context, Megatron's ``get_fp8_context``); on its exit
(``FP8GlobalStateManager.autocast_exit``) and after the chunk's backward (``reduce_and_update_bwd_fp8_tensors``) TE
concatenates the amaxes of the region (``torch.cat``: one kernel), all-reduces them with MAX over the amax group —
TP × CP × DP, Megatron's ``get_amax_reduction_group(with_context_parallel=True)``, ``async_op=False``: in series — and
runs one fused update (``fused_amax_and_scale_update_after_reduction``: per tensor its amax read, the history of
L values read and written rolled, the scale read and written; L = ``--fp8-amax-history-len``, Megatron's default 1).
A GEMM's forward has three fp8 tensors (input, weight, output: TE's meta keeps an output slot), its backward two
(output and input gradient), 4 bytes an amax. The all-reduce is priced on the widest of the stage's groups' links
(DP's, else CP's, else TP's) over all TP·CP·DP ranks; at a few KB it is latency-bound.

**The weights' cast.** Megatron passes ``is_first_microbatch`` (``TELinear.forward``), so TE casts and transposes
each fp8 weight (read x, write 1 + 1 bytes a parameter) on each model chunk's first micro-batch and keeps the copies
(``_fp8_workspaces``) for the rest. archsim prices it once per iteration per rank, after the last backward beside the
optimizer step; it runs in the first micro-batch's forward, inside the pipeline's fill, which a schedule of stages
that each take the same time per micro-batch cannot hold.
"""

from __future__ import annotations

from archsim.choices.devices import ELEMENT_BYTES
from archsim.collectives import collective_seconds
from archsim.devices.kernels import stream_seconds
from archsim.training.fp8_ops import fp8_gemms, fp8_weight_parameters
from archsim.training.machine import Machine
from archsim.training.moe_ops import expert_parameters, expert_shards
from archsim.training.parallel import Parallelism, layers_per_stage, rank_of_stages
from archsim.workload.transformer import TransformerConfig

AMAX_BYTES = 4  # one fp32 amax (and scale) per fp8 tensor
MAIN_WEIGHT_BYTES = 4  # the distributed optimizer's fp32 main weight, which --fp8-param-gather's step casts to fp8
HISTORY = 1  # Megatron-LM's --fp8-amax-history-len default
TENSORS = (3, 2)  # fp8 tensors per GEMM: forward (input, weight, output), backward (output and input gradient)


def scaling_seconds(c: TransformerConfig, par: Parallelism, machine: Machine, layers: int) -> tuple[float, float]:
    """(forward, backward) seconds a model chunk of ``layers`` layers spends per micro-batch on delayed scaling
    (module docstring): the amaxes concatenated, all-reduced over TP·CP·DP ranks and one fused update; 0 without
    ``par.fp8`` or layers."""
    if par.fp8 is None or not layers:
        return 0.0, 0.0
    links = machine.links
    link = links.dp if par.dp > 1 else links.cp if par.cp > 1 and links.cp is not None else links.tp
    gemms = fp8_gemms(c, par.ep) * layers
    out = []
    for per_gemm in TENSORS:
        amaxes = AMAX_BYTES * per_gemm * gemms
        reduce = float(collective_seconds("all-reduce", amaxes, par.tp * par.cp * par.dp, link))
        moved = 2 * amaxes + amaxes + 2 * HISTORY * amaxes + 2 * amaxes  # cat; update: amax, history, scale
        out.append(reduce + float(stream_seconds(moved, machine.gpu.hbm_bytes_per_s, machine.kernels.memory_bound,
                                                 kernels=2)))
    return out[0], out[1]


def rank_fp8_weights(c: TransformerConfig, par: Parallelism, rank: int) -> tuple[int, float]:
    """(layers, fp8 weights) of pipeline rank ``rank``: its stages' layers and
    :func:`~archsim.training.fp8_ops.fp8_weight_parameters` of each, whether or not ``par.fp8``."""
    counts = layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers)
    layers = sum(n for n, r in zip(counts, rank_of_stages(par), strict=True) if r == rank)
    return layers, fp8_weight_parameters(c, par.tp, par.ep, par.etp) * layers


def weight_cast_seconds(c: TransformerConfig, par: Parallelism, machine: Machine, rank: int) -> float:
    """Seconds pipeline rank ``rank`` spends once an iteration casting and transposing its layers' fp8 weights
    (:func:`rank_fp8_weights`; read x, write 2 bytes a parameter), one kernel a GEMM's weight; 0 without ``par.fp8``.
    With ``par.fp8_param_gather`` the step casts its fp32 main shard instead (read 4, write 1 on the rank's
    1/shards: Megatron-LM's ``quantize_param_shard``) and TE transposes the gathered weights (read 1, write 1)."""
    if par.fp8 is None:
        return 0.0
    layers, weights = rank_fp8_weights(c, par, rank)
    moved = (ELEMENT_BYTES[machine.dtype] + 2) * weights
    if par.fp8_param_gather:
        experts = expert_parameters(c, par) * layers if par.experts_apart else 0  # sharded over their expert-DP ranks
        shard = (weights - experts) / par.optimizer_shards + experts / expert_shards(par)
        moved = (MAIN_WEIGHT_BYTES + 1) * shard + 2 * weights
    return float(stream_seconds(moved, machine.gpu.hbm_bytes_per_s, machine.kernels.memory_bound,
                                kernels=fp8_gemms(c, par.ep) * layers))


__all__ = ["AMAX_BYTES", "HISTORY", "MAIN_WEIGHT_BYTES", "rank_fp8_weights", "scaling_seconds", "weight_cast_seconds"]
