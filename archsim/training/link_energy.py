"""Bytes each GPU of an iteration sends on its links, and their energy: a device file's ``[links] pj_per_bit``
(:attr:`~archsim.devices.device.Device.link_pj_per_bit`, pJ per bit sent) × 8 × those bytes, summed over the
iteration and the chips, train's ``links`` energy part (:mod:`archsim.training.energy`; absent without the key).

The bytes are the collectives' own wire terms (:func:`~archsim.collective_bytes.sent_bytes`: a ring all-reduce's
2(n − 1)/n · S per GPU, the algorithm :func:`~archsim.collectives.collective_algorithm` picks) on the collectives the
iteration is timed on (:mod:`archsim.training.iteration`), each on its own group and link:

* per micro-batch, each model piece's TP and expert collectives (:class:`~archsim.training.op_work.Work`; a layer's
  forward ones again under full recompute), for the layers, embedding and head the rank runs, and on the head's
  rank each MTP module's pieces' (:func:`~archsim.training.mtp.module_parts`: the embedding, the projection, the
  last layer's kind, the head);
* per micro-batch, each layer's K/V exchange under context parallelism
  (:func:`~archsim.training.context_parallel.exchange_sent_bytes`: p2p's ring, the all-to-alls, all_gather's
  all-gathers and reduce-scatters; the forward's again under full recompute), on every layer of every kind (each
  kind's config: :func:`~archsim.training.iteration.model_pieces` times the exchange on each layer piece);
* per micro-batch, each pipeline hop the rank sends (the activation forward, its gradient back:
  :func:`~archsim.training.stages.hop_bytes` each, p2p), where a stage's neighbour sits on another rank;
* once, the DP group's gradient collectives (:func:`~archsim.training.dp_sharding.dp_sync`'s: the all-reduce in
  Megatron's buckets, or the distributed optimizer's reduce-scatter and all-gather), the experts' over their
  expert-DP group, and the tied embedding's all-reduce between the first and last stage; under FSDP instead of the
  DP sync, its units' all-gathers (again before the backward where resharded) and reduce-scatters, per micro-batch
  or once a step (:func:`~archsim.training.fsdp.sent_unit_bytes` on the units
  :func:`~archsim.training.fsdp.fsdp_sync` times).
"""

from __future__ import annotations

import math
from dataclasses import replace

from archsim.choices.devices import ELEMENT_BYTES
from archsim.collective_bytes import sent_bytes
from archsim.collectives import LinkClass, Spanning
from archsim.training.context_parallel import exchange_sent_bytes
from archsim.training.dp_overlap import bucket_parameters
from archsim.training.fp8_memory import gathered_parameter_bytes
from archsim.training.fp8_scaling import rank_fp8_weights
from archsim.training.fsdp import machine_units, sent_unit_bytes
from archsim.training.machine import Machine
from archsim.training.memory import gradient_bytes
from archsim.training.moe_ops import rank_expert_parameters
from archsim.training.mtp import PROJECTION, module_parts, projection_work
from archsim.training.op_work import Work
from archsim.training.parallel import Parallelism, padded_vocab, rank_of_stages
from archsim.training.stages import hop_bytes
from archsim.workload.layer_kinds import kind_configs
from archsim.workload.transformer import TransformerConfig

BITS_PER_BYTE = 8


def work_bytes(work: Work, par: Parallelism, machine: Machine, recompute: str = "none") -> float:
    """Bytes one GPU sends for one micro-batch of ``work``'s collectives, each on its group's link
    (:func:`~archsim.training.iteration.collective_group`); under full recompute the forward's again."""
    from archsim.training.iteration import collective_group

    def total(colls) -> float:
        return sum(sent_bytes(col.kind, col.bytes * machine.scale, *collective_group(col, par, machine.links))
                   for col in colls)

    forward = total(work.forward_collectives)
    return forward * (2 if recompute == "full" else 1) + total(work.backward_collectives)


def microbatch_bytes(c: TransformerConfig, par: Parallelism, machine: Machine, rank: int) -> float:
    """Bytes one GPU of pipeline rank ``rank`` sends per micro-batch: its pieces' collectives (its layers of each
    kind, the embedding on the first stage's rank, the head and the MTP modules on the last's), its layers' K/V
    exchange under CP and its pipeline hops."""
    from archsim.training.iteration import piece_works
    from archsim.training.stages import rank_pieces

    def lists(config: TransformerConfig) -> tuple[Work, Work, Work]:
        return piece_works(config, par.micro_batch, par.tp, par.sequence_parallel, par.attention,
                           machine.implementation, machine.dtype, par.cp, par.cp_comm, par.cp_hierarchy, par.ep,
                           par.etp, par.fp8)[0]

    layers, embeddings, heads = rank_pieces(c, par, (rank,))
    own = lists(c)
    works = {kind: lists(config)[0] for kind, config in kind_configs(c).items()}
    out = sum(count * work_bytes(works[kind], par, machine, par.recompute)
              for kind, count in zip(works, layers, strict=True))
    out += embeddings * work_bytes(own[1], par, machine) + heads * work_bytes(own[2], par, machine)
    if par.cp > 1:  # every layer kind's exchange, on its own config (iteration.model_pieces times each)
        for config, count in zip(kind_configs(c).values(), layers, strict=True):
            forward, backward = exchange_sent_bytes(config, par, machine)
            out += count * (forward * (2 if par.recompute == "full" else 1) + backward)
    if heads and c.mtp_layers:  # each module's pieces, recomputed as model_pieces times them
        parts = {**works, "embedding": own[1], "head": own[2],
                 PROJECTION: projection_work(c, par.micro_batch, par.tp, par.sequence_parallel)}
        out += heads * c.mtp_layers * sum(
            work_bytes(parts[name], par, machine, "none" if name in ("embedding", "head") else par.recompute)
            for name in module_parts(c))
    rank_of = rank_of_stages(par)
    hops = sum((rank_of[j] == rank) + (rank_of[j + 1] == rank)  # the activation forward, its gradient back
               for j in range(len(rank_of) - 1) if rank_of[j] != rank_of[j + 1])
    return out + hops * sent_bytes("p2p", hop_bytes(c, par) * machine.scale, 2, machine.links.pp)


def dp_bytes(parameters: float, fp8_parameters: float, replicas: int, link: LinkClass | Spanning, par: Parallelism,
             dtype: str) -> float:
    """Bytes one GPU sends syncing ``parameters`` over ``replicas`` GPUs on ``link`` by ``par``'s sharding
    (:func:`~archsim.training.dp_sharding.dp_sync`): the gradients' all-reduce (in Megatron's buckets where
    ``dp_overlap`` buckets it, :func:`~archsim.training.dp_overlap.dp_allreduce_seconds`), or the distributed
    optimizer's reduce-scatter and all-gather (``fp8_parameters`` of them gathered in fp8)."""
    if replicas <= 1 or not parameters:
        return 0.0
    grads = parameters * gradient_bytes(dtype)
    if par.distributed_optimizer:
        width = gathered_parameter_bytes(parameters, fp8_parameters, ELEMENT_BYTES[dtype])
        return (sent_bytes("reduce-scatter", grads, replicas, link)
                + sent_bytes("all-gather", parameters * width, replicas, link))
    buckets = 1 if par.dp_overlap == "none" else max(1, math.ceil(parameters / bucket_parameters(replicas)))
    return buckets * sent_bytes("all-reduce", grads / buckets, replicas, link)


def step_bytes(c: TransformerConfig, par: Parallelism, machine: Machine, rank: int, parameters: float) -> float:
    """Bytes one GPU of pipeline rank ``rank`` holding ``parameters`` sends once an iteration, after its last
    backward (:func:`~archsim.training.iteration.after_backward`'s collectives): its DP sync (under FSDP its units'
    collectives of the whole iteration, micro-batches included), the experts' over their expert-DP group, the tied
    embedding's all-reduce on the first and last stage's ranks."""
    experts = rank_expert_parameters(c, par, rank) if par.experts_apart else 0
    fp8 = rank_fp8_weights(c, par, rank)[1] if par.fp8_param_gather else 0.0
    links = machine.links
    if par.fsdp:  # its units' collectives in the DP sync's place (dp_sharding.dp_sync); no experts apart with FSDP
        out = sent_unit_bytes(machine_units(c, par, machine, parameters, rank=rank), par, links.dp)
    else:
        out = dp_bytes(parameters - experts, fp8 - experts if fp8 else 0.0, par.replicas, links.dp, par, machine.dtype)
    if experts and par.expert_replicas > 1:
        assert links.expert_dp is not None  # a rank machine of an expert-DP group of more than one has its link
        group = replace(par, dp=par.expert_replicas, cp=1, cp_comm="p2p", cp_hierarchy=None, ep=1, etp=None,
                        global_batch=par.global_batch * par.expert_replicas)
        out += dp_bytes(experts, experts if fp8 else 0.0, par.expert_replicas, links.expert_dp, group, machine.dtype)
    rank_of = rank_of_stages(par)
    ends = (rank_of[0], rank_of[-1])
    if ends[0] != ends[1] and (c.tied_embeddings or c.mtp_layers) and rank in ends:
        table = padded_vocab(c.vocab, par.tp) // par.tp * c.hidden * gradient_bytes(machine.dtype)
        out += sent_bytes("all-reduce", table, 2, links.pp if links.embedding is None else links.embedding)
    return out


def rank_link_bytes(c: TransformerConfig, par: Parallelism, machine: Machine, rank: int, parameters: float) -> float:
    """Bytes one GPU of pipeline rank ``rank`` (on ``machine``, holding ``parameters``) sends in one iteration: its
    micro-batches' (:func:`microbatch_bytes`) and its step's (:func:`step_bytes`)."""
    return par.microbatches * microbatch_bytes(c, par, machine, rank) + step_bytes(c, par, machine, rank, parameters)


def link_joules(nbytes: float, pj_per_bit: float) -> float:
    """Joules of ``nbytes`` sent at ``pj_per_bit`` (pJ per bit)."""
    return nbytes * BITS_PER_BYTE * pj_per_bit * 1e-12


__all__ = ["BITS_PER_BYTE", "dp_bytes", "link_joules", "microbatch_bytes",
           "rank_link_bytes", "step_bytes", "work_bytes"]
