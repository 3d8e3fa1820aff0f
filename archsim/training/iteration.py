"""One training iteration on a GPU cluster: per-stage op times → pipeline schedule → DP all-reduce
and optimizer step.

1. Each pipeline (virtual) stage's forward F, input-backward I and weight-backward W per micro-batch
   are the sums of its ops' times on the GPU (:func:`archsim.devices.kernel_ops.op_seconds`) and of
   its tensor-parallel collectives (they run on the compute stream, between the GEMMs, as Megatron
   issues them; the sequence-parallel re-gather of a column-parallel GEMM's input runs under that GEMM's
   δ and adds only what outlasts it, the δ GEMM re-timed on the SMs NCCL leaves it: :func:`exposed_collective_seconds`,
   :mod:`archsim.training.comm_sms`). A pass is host-bound when its
   ops are issued slower than the GPU runs them: each pass (forward, recompute, backward) takes
   max(GPU time, ops × ``efficiency.host_s``), the ops counted in Megatron's list, the list ``host_s``
   was fitted per (:func:`host_issues`).
   Recomputation adds the forward again to I: all of a layer's forward (``full``) or
   its attention core (``selective``).
2. The stages' action order is the published schedule's (:func:`archsim.policies.stage_orders.training_order`:
   1F1B, interleaved with v chunks, zero-bubble…), timed in archsim's event simulator
   (:func:`archsim.policies.stage_run.run_order`) with a pipeline hop of s·b·h·2/t bytes (Megatron
   scatters the activation over the TP ranks) on the pipeline link.
3. After its last backward each stage all-reduces its gradients over DP (at the gradient buffer's width,
   :func:`archsim.training.memory.gradient_bytes`: fp32 in bf16; ``dp_overlap = "none"``, as
   vTrain's runs; ``"bucketed"``: Megatron's buckets under the last micro-batch's backward,
   :mod:`archsim.training.dp_overlap`; the distributed optimizer's and FSDP's collectives in its place, one
   dispatch by the sharding: :mod:`archsim.training.dp_sharding`), the first and last stage all-reduce the tied embedding's gradient, and
   the optimizer step reads and writes 32 bytes per parameter in fp16 and 34 in bf16
   (:func:`optimizer_step_bytes`; in fp32, 28: weight, gradient, momentum and variance read, all but
   the gradient written). The iteration ends when the slowest stage has stepped. Gradients summed over
   micro-batches by a separate pass (plain PyTorch, Megatron-LM without its fusion) are priced in each
   micro-batch's weight backward, where they run (:mod:`archsim.training.grad_accumulation`).

In fp32 (``Machine.dtype``) every fp16 byte count of the op lists, messages and activations doubles,
and on a catalog GPU each op is timed with the fp32 (SIMT) constants; each kernel family's constants
come from :attr:`~archsim.training.machine.Machine.kernels` (:func:`machine_op_seconds`).

This module holds the terms of one iteration that are priced on a machine: each model piece's F, I, W
per micro-batch (:func:`model_pieces`, step 1) and what follows the last backward (:func:`after_backward`,
step 3). The stages' sums and hops are :mod:`archsim.training.stages`, the machine
:mod:`archsim.training.machine`, memory :mod:`archsim.training.memory`, and the walk that puts them
together (step 2's schedule and simulation) :func:`archsim.training.run.train`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from functools import lru_cache

import numpy as np

from archsim.choices.devices import ELEMENT_BYTES
from archsim.collective_units import message_mib
from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.console import setting
from archsim.devices.kernel_ops import op_seconds
from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.comm_sms import hidden_seconds, share_of, slowed_seconds
from archsim.training.compute_classes import pass_families, piece_classes
from archsim.training.context_parallel import rank_config, with_exchange
from archsim.training.dp_sharding import dp_sync
from archsim.training.eager_ops import (
    check_dp_overlap,
    check_eager,
    check_one_gpu,
    check_sharding,
    eager_block_work,
    eager_embedding_work,
    eager_head_work,
    eager_optimizer_bytes,
)
from archsim.training.fp8_ops import check_fp8
from archsim.training.fp8_scaling import rank_fp8_weights, weight_cast_seconds
from archsim.training.layer_ops import block_work, embedding_work, head_work
from archsim.training.machine import Links, Machine
from archsim.training.memory import ADAM_STATE_BYTES, FP32_STATE_BYTES, gradient_bytes
from archsim.training.mla_ops import deepseek_problem
from archsim.training.moe_ops import check_moe, expert_shards, rank_expert_parameters
from archsim.training.moe_overlap import check_overlap, shared_overlap
from archsim.training.mtp import check_mtp, projection_work, with_mtp
from archsim.training.op_work import Collective, Work
from archsim.training.parallel import Parallelism, padded_vocab
from archsim.training.piece_cost import PieceCost
from archsim.workload.layer_kinds import LAYER, kind_configs
from archsim.workload.transformer import TransformerConfig, refuse_switch

FP32_OPTIMIZER_BYTES_PER_PARAMETER = FP32_STATE_BYTES + ADAM_STATE_BYTES  # fp32 Adam: its 16 read, 12 written: 28


def optimizer_step_bytes(dtype: str) -> int:
    """Bytes per parameter Megatron-LM's optimizer step reads and writes: fp32 master weight, momentum and
    variance read and written (24), the weight written in ``dtype``, and the gradient buffer
    (:func:`~archsim.training.memory.gradient_bytes`) read by Adam, by the gradient norm and — in fp16
    only — by the loss scaler's unscale and overflow check: 32 in fp16 (2-byte gradient read three
    times), 34 in bf16 (fp32 ``main_grad`` read twice: Megatron-LM builds no grad scaler for bf16 without
    ``--loss-scale``, ``megatron/core/optimizer/__init__.py``, and ``MixedPrecisionOptimizer`` unscales
    and checks for inf only ``if self.grad_scaler``, ``megatron/core/optimizer/optimizer.py``); fp32
    Adam's 28 in fp32."""
    if dtype == "fp32":
        return FP32_OPTIMIZER_BYTES_PER_PARAMETER
    gradient_reads = 3 if dtype == "fp16" else 2
    return 2 * ADAM_STATE_BYTES + ELEMENT_BYTES[dtype] + gradient_reads * gradient_bytes(dtype)


OPTIMIZER_BYTES_PER_PARAMETER = optimizer_step_bytes("fp16")  # 32


ATTENTION_CORE = ("scores", "softmax", "attn_dropout", "context", "softmax.to_fp32", "softmax.scale", "softmax.mask",
                  "softmax.to_fp16", "mask_fill")


def collective_group(c: Collective, par: Parallelism, links: Links) -> tuple[int, LinkClass | Spanning]:
    """(GPUs, link) of the group a piece's collective ``c`` runs over: a TP collective's, or a mixture of experts'
    over its EP or expert-TP group. The one rule its seconds and its bytes on the links (link_energy.py) read."""
    ranks, link = {"ep": (par.ep, links.ep), "etp": (par.expert_tp, links.etp)}.get(c.group, (par.tp, links.tp))
    assert link is not None  # a rank machine of an EP group has its link
    return ranks, link


def exposed_collective_seconds(colls: tuple[Collective, ...], par: Parallelism, links: Links, scale: float,
                               delta_seconds: dict[str, float],
                               slowed_deltas: dict[str, float] | None = None) -> np.ndarray:
    """Each TP collective's seconds on the pass's critical path: its whole time on the compute stream, or,
    issued asynchronously under δ ops (:attr:`~archsim.training.op_work.Collective.under`, Megatron's
    sequence-parallel re-gather), only what outlasts them, t_collective − hidden, the δ GEMMs running on the
    SMs NCCL leaves them (:func:`~archsim.training.comm_sms.hidden_seconds`); ``delta_seconds``: each backward
    δ op's GPU seconds by layer name, ``slowed_deltas`` the same on the SMs left (None: as ``delta_seconds``).
    NCCL's share of HBM bandwidth is not modelled."""
    slowed = delta_seconds if slowed_deltas is None else slowed_deltas
    out = np.empty(len(colls))
    for i, c in enumerate(colls):
        ranks, link = collective_group(c, par, links)
        seconds = float(collective_seconds(c.kind, c.bytes * scale, ranks, link))
        if c.under:
            delta = sum(delta_seconds[name] for name in c.under)
            share = share_of(delta, sum(slowed[name] for name in c.under))
            seconds -= hidden_seconds(seconds, delta, share)
        out[i] = seconds
    return out


def machine_op_seconds(ops: list[TrainingOp], machine: Machine) -> np.ndarray:
    """Each op's GPU seconds on ``machine`` by the one op-timing model (:func:`archsim.devices.kernel_ops.op_seconds`)
    with each kernel family's constants (:attr:`~archsim.training.machine.Machine.kernels`)."""
    return op_seconds(ops, machine.gpu, machine.kernels, machine.dtype)


def recounted_op_seconds(work: Work, machine: Machine, counted: Work) -> np.ndarray:
    """Each op's GPU seconds of ``work`` (forward, then backward), each pass's kernels paying the training
    fit's per-kernel gap (``launch_s``) as many times in all as ``counted``'s ops of that pass: the fit
    stated it per op of Megatron's list, like ``host_s`` (:func:`piece_cost`). PyTorch's fp32 kernels
    (no gap inside a step: :func:`archsim.devices.kernel_ops.queued`) are unchanged by it."""
    return np.concatenate([op_seconds(list(mine), machine.gpu, pass_families(machine.kernels, len(mine), len(theirs)),
                                      machine.dtype)
                           for mine, theirs in ((work.forward, counted.forward), (work.backward, counted.backward))])


def host_issues(work: Work) -> tuple[int, int]:
    """(forward, backward) ops and TP collectives the host issues for ``work``, as the host floor counts them
    (a collective hidden under a δ GEMM is issued all the same)."""
    return (len(work.forward) + len(work.forward_collectives), len(work.backward) + len(work.backward_collectives))


def piece_cost(work: Work, par: Parallelism, machine: Machine, recompute: str,
               counted: Work | None = None) -> PieceCost:
    """``work``'s :class:`PieceCost` on ``machine``. ``counted``: the same piece in the op list the
    training fit's per-op overheads — the host's time (``efficiency.host_s``) and the gap per kernel
    (``launch_s``) — were fitted per, Megatron's, when ``work`` is another list's. Why: a fit measures
    a pass's overheads and states them per op of its own list; another list of the same pass (eager
    PyTorch's, 1.5–1.8× as many ops) pays them in all as Megatron's ops do, not its own count × the
    constants (:func:`recounted_op_seconds`). A probe's host row is stated per Megatron op too
    (:func:`archsim.training.calibrate.fit_probe`)."""
    ops: list[TrainingOp] = [*work.forward, *work.backward]
    scale = machine.scale
    seconds = machine_op_seconds(ops, machine) if counted is None else recounted_op_seconds(work, machine, counted)
    rows = tuple((op.layer, op.kind, float(t)) for op, t in zip(ops, seconds))
    nf = len(work.forward)
    back = [(op, float(t)) for op, t in zip(work.backward, seconds[nf:])]
    slowed = slowed_seconds(ops, seconds, machine.gpu, machine.kernels.gemm, machine.dtype, machine.collective_sms)
    deltas: dict[str, float] = defaultdict(float)
    slowed_deltas: dict[str, float] = defaultdict(float)
    for op, t, t_slow in zip(work.backward, seconds[nf:], slowed[nf:]):
        if op.kind == "D":
            deltas[op.layer] += float(t)
            slowed_deltas[op.layer] += float(t_slow)
    coll_f = exposed_collective_seconds(work.forward_collectives, par, machine.links, scale, deltas, slowed_deltas)
    coll_b = exposed_collective_seconds(work.backward_collectives, par, machine.links, scale, deltas, slowed_deltas)
    rows += tuple((f"{c.name} ({c.kind}, {message_mib(c.bytes * scale)}"
                   + (f", exposed beyond {' + '.join(c.under)} δ)" if c.under else ")"), c.phase, float(t))
                  for c, t in zip((*work.forward_collectives, *work.backward_collectives), (*coll_f, *coll_b)))
    host = machine.efficiency.host_s
    issued_f = host_issues(work)[0]
    fitted_f, fitted_b = host_issues(counted or work)
    on_ep = [np.array([c.group == "ep" for c in colls], dtype=bool)
             for colls in (work.forward_collectives, work.backward_collectives)]
    ep_f, ep_b = float(coll_f[on_ep[0]].sum()), float(coll_b[on_ep[1]].sum())
    tp_f, tp_b = float(coll_f.sum()) - ep_f, float(coll_b.sum()) - ep_b
    # a pass takes max(GPU time, host issue time); the host-bound excess is charged to its compute, and kept
    gpu_forward = float(seconds[:nf].sum())
    forward = max(gpu_forward, host * fitted_f - tp_f - ep_f)
    weight = sum(t for op, t in back if op.kind == "G")
    gpu_delta = sum(t for _, t in back) - weight
    delta = max(gpu_delta, host * fitted_b - tp_b - ep_b - weight)
    if recompute == "full":
        redo, host_redo = forward + tp_f + ep_f, forward - gpu_forward
    elif recompute == "selective":
        core = float(sum(t for op, t in zip(work.forward, seconds[:nf]) if op.layer in ATTENTION_CORE))
        cores = sum(op.layer in ATTENTION_CORE for op in work.forward)
        redo = max(core, host * cores * fitted_f / max(issued_f, 1))
        host_redo = redo - core
    else:
        redo = host_redo = 0.0
    gemms = (*(op.gemms for op in ops), *((),) * (len(rows) - len(ops)))  # the collectives' rows run none
    return PieceCost(forward, delta, weight, redo, tp_f, tp_b, rows, ep_forward=ep_f, ep_backward=ep_b, gemms=gemms,
                     host_forward=forward - gpu_forward, host_backward=delta - gpu_delta, host_recompute=host_redo,
                     slowed=tuple(float(t) for t in slowed),
                     classes=piece_classes(work, machine, counted, recompute, ATTENTION_CORE),
                     recompute_communication=tp_f + ep_f if recompute == "full" else 0.0)


def model_pieces(c: TransformerConfig, par: Parallelism, machine: Machine) -> dict[str, PieceCost]:
    """Per micro-batch costs of one transformer layer (each kind's, :mod:`~archsim.workload.layer_kinds`: ``layer`` and
    a mixture's ``dense_layer``), the embedding and the head on ``machine``. They do
    not depend on PP, DP, the global batch, the schedule or the stage split, so they are computed once
    per distinct rest (``par`` with those reset, and ``machine``'s links between stages, DP and expert-DP ranks, by
    which one rank's machine differs from another's) and shared: a runs file, a sweep and each rank's
    :func:`after_backward` repeat them often."""
    check_moe(c, par, machine.implementation)  # before DP is reset below
    check_overlap(c, par, machine.dtype)  # and PP, the schedule
    problem = deepseek_problem(c, par, machine.implementation)
    if problem:
        raise InputError(problem, field="model")
    check_fp8(par.fp8, machine.gpu, machine.dtype, machine.implementation, par.fsdp, par.fp8_param_gather,
              par.distributed_optimizer)
    check_mtp(c, par.cp, par.fp8)
    if machine.implementation == "pytorch-eager":
        check_one_gpu(par)  # before PP and DP are reset below
        check_sharding(machine.implementation, par.distributed_optimizer, par.fsdp)
        check_dp_overlap(machine.implementation, par.dp_overlap)
    dp = par.ep * (1 if par.etp is None else par.etp)  # a layout that holds the expert groups (ETP·EP | TP·DP)
    same = replace(par, pp=1, dp=dp, global_batch=par.micro_batch * dp, interleave=1, schedule="1f1b", stage_layers=None,
                   dp_overlap="none", grad_accumulation=None, distributed_optimizer=False, fsdp=False,
                   fsdp_reshard="after-forward", fsdp_grad_sync="micro-batch", fp8_param_gather=False)
    links = replace(machine.links, pp=machine.links.tp, dp=machine.links.tp, pp_hops=(), embedding=None, expert_dp=None)
    return dict(_model_pieces(c, same, replace(machine, links=links)))


def clear_model_cache() -> None:
    """Forget the per-piece costs :func:`model_pieces` keeps: they are priced by this module's op-timing
    functions once per distinct (config, layout, machine), so whoever swaps those functions (a test's
    what-if timing) clears them before and after, lest one pricing serve for the other."""
    _model_pieces.cache_clear()


def piece_works(c: TransformerConfig, micro_batch: int, tp: int, sequence_parallel: bool, attention: str,
                implementation: str, dtype: str, cp: int = 1, cp_comm: str = "p2p",
                cp_hierarchy: tuple[int, int] | None = None, ep: int = 1, etp: int | None = None,
                fp8: str | None = None) -> tuple[tuple[Work, Work, Work], tuple[Work, Work, Work]]:
    """The op lists of one micro-batch's layer, embedding and head that ``implementation`` runs in
    ``dtype``, and Megatron's lists of the same pieces (the host floor is counted per their ops; another
    implementation's, per Megatron's mixed-precision list, the one the fits state their per-op overheads
    in): the one choice the iteration's time and its energy (:mod:`archsim.training.energy`) both read; ``fp8``: the
    layer's linear layers in Transformer Engine's fp8 (Megatron's list only:
    :func:`~archsim.training.fp8_ops.check_fp8`)."""
    b, t, sp = micro_batch, tp, sequence_parallel
    if c.family == "switch":
        from archsim.training.hf_ops import check_hf  # Hugging Face's op lists: only the runs that take them
        from archsim.training.hf_switch_ops import (
            megatron_counterparts,
            switch_block_work,
            switch_embedding_work,
            switch_head_work,
        )
        if implementation != "pytorch-eager" or dtype != "fp32":
            refuse_switch(c, f"{setting('implementation', implementation)} in {dtype}")
        check_hf(c, t, sp, attention)
        return ((switch_block_work(c, b), switch_embedding_work(c, b), switch_head_work(c, b)),
                megatron_counterparts(c, b))

    def megatron(in_dtype: str = "fp16", low: str | None = None) -> tuple[Work, Work, Work]:
        local = rank_config(c, cp)  # a CP rank's s/CP tokens (CP > 1 is Megatron's list only: check_fits)
        return (block_work(c, b, t, sp, attention, in_dtype, cp, cp_comm, cp_hierarchy, ep, etp, low),
                embedding_work(local, b, t, sp, in_dtype), head_work(local, b, t, sp, in_dtype))

    if implementation == "pytorch-eager" and dtype == "fp32":  # Hugging Face's modules, no AMP
        from archsim.training.hf_ops import check_hf, hf_block_work, hf_embedding_work, hf_head_work

        check_hf(c, t, sp, attention)
        return (hf_block_work(c, b), hf_embedding_work(c, b), hf_head_work(c, b)), megatron()
    if implementation == "pytorch-eager":
        check_eager(c, t, sp)  # standard or flash (F.scaled_dot_product_attention's): eager_ops.eager_flash_core
        return (eager_block_work(c, b, attention, dtype), eager_embedding_work(c, b), eager_head_work(c, b)), megatron()
    own = megatron(dtype, fp8)
    return own, own


@lru_cache(maxsize=4096)
def _model_pieces(c: TransformerConfig, par: Parallelism, machine: Machine) -> dict[str, PieceCost]:
    lists, megatron = piece_works(c, par.micro_batch, par.tp, par.sequence_parallel, par.attention,
                                  machine.implementation, machine.dtype, par.cp, par.cp_comm, par.cp_hierarchy, par.ep,
                                  par.etp, par.fp8)
    if c.family == "switch" and par.recompute != "none":
        raise InputError("Switch Transformers' op list is Hugging Face's without gradient checkpointing: "
                         f"{setting('recompute', 'none')} only", field="recompute")
    layer, embedding, head = (piece_cost(work, par, machine, recompute, None if counted is work else counted)
                              for work, counted, recompute in zip(lists, megatron, (par.recompute, "none", "none")))
    layer = with_exchange(layer, c, par, machine)
    if c.moe_shared_expert_overlap:  # the forward's all-to-alls under the shared expert (moe_overlap.py)
        layer = shared_overlap(layer)
    pieces = {LAYER: layer, "embedding": embedding, "head": head}
    for kind, config in kind_configs(c).items():  # a mixture's dense layers: their own op list (layer_kinds.py)
        if kind != LAYER:
            (own, _, _), (counted, _, _) = piece_works(config, par.micro_batch, par.tp, par.sequence_parallel,
                                                       par.attention, machine.implementation, machine.dtype, par.cp,
                                                       par.cp_comm, par.cp_hierarchy, par.ep, par.etp, par.fp8)
            piece = piece_cost(own, par, machine, par.recompute, None if counted is own else counted)
            pieces[kind] = with_exchange(piece, config, par, machine)
    if c.mtp_layers:  # the MTP modules run in the head's place on the last stage (mtp.py)
        projection = projection_work(c, par.micro_batch, par.tp, par.sequence_parallel)
        pieces = with_mtp(c, pieces, piece_cost(projection, par, machine, par.recompute))
    return pieces


def after_backward(c: TransformerConfig, par: Parallelism, machine: Machine, rank: int,
                   parameters: float, tied_ranks: tuple[int, int] | None = None,
                   backward_s: float = 0.0, forward_s: float = 0.0,
                   drains: tuple[float, ...] = ()) -> dict[str, float]:
    """Seconds each rank spends after its last backward: its DP group's collectives by ``par.sharding``
    (:func:`archsim.training.dp_sharding.dp_sync`: the all-reduce; the distributed optimizer's reduce-scatter
    before the step and all-gather after it; FSDP's exposed collectives), the embedding all-reduce and the
    optimizer step on the rank's 1/``par.optimizer_shards`` of ``parameters``.
    ``tied_ranks``: the ranks of the first and last stage (default 0 and PP − 1; every published order's
    when they differ); when they differ and embeddings are tied, both all-reduce the token table's
    gradient over the link between their GPUs (:attr:`~archsim.training.machine.Links.embedding`).
    ``backward_s``: the rank's last micro-batch backward, under which ``par.dp_overlap = "bucketed"``
    runs the DP buckets; ``forward_s`` and ``backward_s``: one micro-batch's, under which FSDP prefetches;
    ``drains``: per model chunk of the rank, seconds from its last backward to the rank's last action (what FSDP's
    once-a-step reduce-scatters run under, :func:`archsim.training.fsdp.step_exposed_seconds`). With ``par.fp8`` the
    rank's fp8 weight casts of the iteration too (:func:`~archsim.training.fp8_scaling.weight_cast_seconds`)."""
    experts = rank_expert_parameters(c, par, rank) if par.experts_apart else 0  # theirs over their expert-DP ranks
    fp8 = rank_fp8_weights(c, par, rank)[1] if par.fp8_param_gather else 0.0  # gathered in fp8 (fp8_memory.py)
    overlapped = par.dp_overlap != "none" or par.fsdp  # a collective beside the compute: its SMs (comm_sms.py)
    layer = model_pieces(c, par, machine)[LAYER] if overlapped else None
    share = layer.backward_share if layer else 1.0
    ahead = layer.forward_share if layer and par.fsdp else 1.0  # FSDP's prefetched all-gathers beside the forward
    before, after = dp_sync(c, par, machine, parameters - experts, forward_s, backward_s, rank, drains,
                            fp8 - experts if fp8 else 0.0, share, ahead)  # by sharding; experts apart: all fp8
    if experts and par.expert_replicas > 1:  # in series after the dense ones (moe_ops' docstring)
        # CP is in the expert-DP count; the batch scaled with it (only a valid layout's: the collectives ignore it)
        group = replace(par, dp=par.expert_replicas, cp=1, cp_comm="p2p", cp_hierarchy=None, ep=1, etp=None,
                        global_batch=par.global_batch * par.expert_replicas)
        link = machine.links.expert_dp
        assert link is not None  # a rank machine of an expert-DP group of more than one has its link
        more = dp_sync(c, group, replace(machine, links=replace(machine.links, dp=link)), experts,
                       forward_s, backward_s, rank, drains, experts if fp8 else 0.0, share, ahead)
        before, after = ({k: v + extra.get(k, 0.0) for k, v in part.items()} for part, extra in zip((before, after), more))
    grad = gradient_bytes(machine.dtype)  # the gradient buffer's width: fp32 in bf16, as Megatron reduces it
    tied = 0.0
    ends = (0, par.pp - 1) if tied_ranks is None else tied_ranks
    if ends[0] != ends[1] and (c.tied_embeddings or c.mtp_layers) and rank in ends:  # MTP's lookup: mtp.py
        table = padded_vocab(c.vocab, par.tp) // par.tp * c.hidden * grad
        links = machine.links  # the two ends' own GPUs' link, not a hop's: they may sit servers apart
        tied = float(collective_seconds("all-reduce", table, 2, links.pp if links.embedding is None
                                        else links.embedding))
    hbm = machine.gpu.hbm_bytes_per_s
    if machine.implementation == "pytorch-eager" and machine.dtype == "fp32":  # fp32 Adam
        moved = FP32_OPTIMIZER_BYTES_PER_PARAMETER * parameters
        optimizer = float(stream_seconds(moved, hbm, machine.kernels.memory_bound, kernels=4))
    elif machine.implementation == "pytorch-eager":  # its step (the gradients' sum ran after each backward)
        # Its bytes, and the fit's per-kernel gap as often as Megatron's fused step (4 kernels) pays it, not once
        # per eager kernel (a copy per tensor, then four multi-tensor ones): the fit stated its gap per op of
        # Megatron's list (iteration.recounted_op_seconds), the rule every pass follows.
        moved = eager_optimizer_bytes(machine.dtype) * parameters  # 52 in fp16, 40 in bf16 (no loss scale)
        optimizer = float(stream_seconds(moved, hbm, machine.kernels.memory_bound, kernels=4))
    else:  # Megatron's fused Adam in every dtype: the training fit's kernels, not PyTorch's; on its 1/DP shard
        shards = (parameters - experts) / par.optimizer_shards + experts / expert_shards(par)  # the distributed one's
        moved = optimizer_step_bytes(machine.dtype) * shards
        optimizer = float(stream_seconds(moved, hbm, machine.efficiency, kernels=4))
    cast = {"fp8_weight_cast": weight_cast_seconds(c, par, machine, rank)} if par.fp8 else {}  # fp8_scaling.py
    return {**before, "embedding_allreduce": tied, "optimizer": optimizer, **cast, **after}


__all__ = [
    "ATTENTION_CORE",
    "FP32_OPTIMIZER_BYTES_PER_PARAMETER",
    "OPTIMIZER_BYTES_PER_PARAMETER",
    "after_backward",
    "clear_model_cache",
    "collective_group",
    "exposed_collective_seconds",
    "host_issues",
    "machine_op_seconds",
    "model_pieces",
    "optimizer_step_bytes",
    "piece_cost",
    "piece_works",
    "recounted_op_seconds",
]
