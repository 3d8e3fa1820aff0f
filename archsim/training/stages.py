"""Per virtual stage of a pipeline: each stage's F, I, W seconds per micro-batch (its pieces summed,
:func:`archsim.training.iteration.model_pieces`) and the hops between stages, as the schedules' one
per-stage record, :class:`~archsim.policies.stage_profile.StageProfile`; and 1F1B's closed form over it.
An unfused gradient accumulation (:mod:`archsim.training.grad_accumulation`) joins each stage's W.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from archsim.collectives import collective_seconds
from archsim.policies.stage_profile import StageProfile
from archsim.training.fp8_scaling import scaling_seconds
from archsim.training.grad_accumulation import per_microbatch_seconds
from archsim.training.iteration import model_pieces
from archsim.training.machine import Links, Machine
from archsim.training.parallel import Parallelism, layers_per_stage, rank_of_stages
from archsim.training.piece_cost import PieceCost
from archsim.workload.layer_kinds import DENSE, held_kinds, stage_kinds
from archsim.workload.transformer import TransformerConfig


def stage_times(c: TransformerConfig, par: Parallelism, machine: Machine,
                pieces: dict[str, PieceCost]) -> StageProfile:
    """Each virtual stage's F, I, W seconds per micro-batch on ``machine`` (its layers' pieces, each its kind's, the
    embedding on the first, the head on the last; each piece's :attr:`~PieceCost.stage_forward`,
    :attr:`~PieceCost.stage_backward_input` and ``backward_weight``: its collectives and recompute included), as the
    schedules' one per-stage record: ``comm`` the slowest hop, ``boundary_comm`` each boundary's. W
    includes the stage's share of an unfused gradient accumulation
    (:func:`~archsim.training.grad_accumulation.per_microbatch_seconds`); with fp8 F and I the chunk's delayed
    scaling (:func:`~archsim.training.fp8_scaling.scaling_seconds`). ``send_bytes`` are the bytes
    each hop is priced from, carried over an infinite ``bandwidth`` so that transfers report them while a
    hop still takes its ``comm`` seconds alone."""
    chunks = par.pp * par.chunks
    counts = layers_per_stage(c.layers, chunks, par.stage_layers)
    emb, head = pieces["embedding"], pieces["head"]
    fwd, bin_, bw = [], [], []
    for j, (n, kinds) in enumerate(zip(counts, stage_kinds(c, counts), strict=True)):  # each layer its kind's piece
        f = i = w = 0.0
        for kind, k in kinds:
            layer = pieces[kind]
            f += k * layer.stage_forward
            i += k * layer.stage_backward_input
            w += k * layer.backward_weight
        w += per_microbatch_seconds(c, par, machine, n, j == 0, j == chunks - 1, dict(kinds).get(DENSE, 0))
        scale_f, scale_b = scaling_seconds(c, par, machine, n)  # fp8's amax reduction and scale update, per chunk
        f, i = f + scale_f, i + scale_b
        for piece, on in ((emb, j == 0), (head, j == chunks - 1)):
            if on:  # the head's MTP modules (mtp.py) recompute and run all-to-alls as the layers do
                f += piece.stage_forward
                i += piece.stage_backward_input
                w += piece.backward_weight
        fwd.append(f)
        bin_.append(i)
        bw.append(w)
    nbytes = hop_bytes(c, par) * machine.scale
    hop = float(collective_seconds("p2p", nbytes, 2, machine.links.pp)) if par.pp > 1 else 0.0
    return StageProfile(tuple(fwd), tuple(bin_), tuple(bw), hop, send_bytes=(nbytes,) * chunks, bandwidth=math.inf,
                        boundary_comm=boundary_hops(par, machine.links, nbytes))


def hop_bytes(c: TransformerConfig, par: Parallelism) -> float:
    """Bytes one pipeline hop sends per micro-batch and TP rank: the s·b·h fp16 activation over TP (and CP: each
    CP rank sends its s/CP tokens)."""
    return c.seq * par.micro_batch * c.hidden * 2 / (par.tp * par.cp)


def boundary_hops(par: Parallelism, links: Links, nbytes: float) -> tuple[float, ...]:
    """Seconds of each virtual-stage boundary's hop of ``nbytes`` (virtual stage j on rank
    :func:`~archsim.training.parallel.rank_of_stages`): 0 where both stages sit on one rank, else
    the link between the two ranks (:attr:`Links.pp_hops`); empty without per-hop links."""
    if not links.pp_hops or par.pp == 1:
        return ()
    rank = rank_of_stages(par)
    out = []
    for j in range(par.pp * par.chunks - 1):
        a, b = rank[j], rank[j + 1]
        link = None if a == b else links.pp_hops[a] if b == (a + 1) % par.pp else links.pp_hops[b]
        out.append(0.0 if link is None else float(collective_seconds("p2p", nbytes, 2, link)))
    return tuple(out)


def rank_stage_times(c: TransformerConfig, par: Parallelism, machines: Sequence[Machine],
                     pieces: Sequence[dict[str, PieceCost]] | None = None, hop: float | None = None) -> StageProfile:
    """Each (virtual) stage's F, I, W on the GPU of the rank that runs it (stage mod PP; the V-shaped
    schedules' stage s and 2·PP − 1 − s on rank s), from :func:`stage_times` per distinct machine; the
    hop is the slowest rank's unless given; each stage's send bytes its own rank's."""
    per_machine: dict[int, StageProfile] = {}
    for k, machine in enumerate(machines):
        if id(machine) not in per_machine:
            own = pieces[k] if pieces is not None else model_pieces(c, par, machine)
            per_machine[id(machine)] = stage_times(c, par, machine, own)
    stages = par.pp * par.chunks
    rank = rank_of_stages(par)
    rows = [per_machine[id(machines[rank[s]])] for s in range(stages)]
    return StageProfile(tuple(t.forward[s] for s, t in enumerate(rows)),
                        tuple(t.backward_input[s] for s, t in enumerate(rows)),
                        tuple(t.backward_weight[s] for s, t in enumerate(rows)),
                        max(t.hop(0) for t in per_machine.values()) if hop is None else hop,
                        send_bytes=tuple(t.send_bytes[s] for s, t in enumerate(rows)), bandwidth=math.inf,
                        boundary_comm=per_machine[id(machines[0])].boundary_comm if hop is None else ())

def one_f_one_b_seconds(times: StageProfile, microbatches: int) -> float:
    """A closed form of 1F1B's pipeline span (one chunk per rank): the first micro-batch's forward
    through every stage, m − 1 steady steps of the slowest stage's F + B, the last backward back
    through every stage, and a hop each way between stages. Used to fit constants quickly; the
    benchmark reports how far it is from the event simulator."""
    f, b = np.asarray(times.forward), np.asarray(times.backward_input) + np.asarray(times.backward_weight)
    p = len(f)
    return float(f.sum() + b.sum() + (microbatches - 1) * (f + b).max() + 2 * times.path(p))


def piece_runs(c: TransformerConfig, par: Parallelism, stages: Sequence[int]) -> dict[str, int]:
    """How many times each model piece runs per micro-batch on one pipeline rank's (virtual) ``stages``: each layer
    kind's layers, the embedding on the first stage and the head on the last. The multiplicities of the rank's
    compute and recompute (:mod:`archsim.training.run`'s breakdown), for the sums of its parts below."""
    chunks = par.pp * par.chunks
    kinds = stage_kinds(c, layers_per_stage(c.layers, chunks, par.stage_layers))
    runs: dict[str, int] = {}
    for j in stages:
        for kind, layers in kinds[j]:  # each layer its kind's piece
            runs[kind] = runs.get(kind, 0) + layers
        for piece, on in (("embedding", j == 0), ("head", j == chunks - 1)):
            if on:
                runs[piece] = runs.get(piece, 0) + 1
    return runs


def host_bound_seconds(c: TransformerConfig, par: Parallelism, pieces: dict[str, PieceCost],
                       stages: Sequence[int]) -> float:
    """Seconds of one pipeline rank's compute and recompute over the iteration that are the host issuing ops beyond
    the GPU's work: each of its (virtual) ``stages``' layers' and its embedding's and head's host-bound excess
    (:class:`~archsim.training.piece_cost.PieceCost`'s ``host_*``, already in their F and I) × the micro-batches.
    One sum for ``archsim train``'s meta (:mod:`archsim.training.run`) and the search's rows
    (:mod:`archsim.training.search_cost`), so a row's figure is train's for its command."""
    host = 0.0
    for name, runs in piece_runs(c, par, stages).items():
        host += runs * (pieces[name].host_bound + pieces[name].host_recompute)
    return host * par.microbatches


def rank_compute_seconds(c: TransformerConfig, par: Parallelism, pieces: dict[str, PieceCost],
                    stages: Sequence[int]) -> tuple[float, float]:
    """One pipeline rank's compute (its passes' F, I and W) and recompute seconds over the iteration: each of its
    (virtual) ``stages``' pieces as often as it runs (:func:`piece_runs`) × the micro-batches. One sum for ``archsim
    train``'s breakdown (:mod:`archsim.training.run`) and the search's closed-form rows' compute split
    (:mod:`archsim.training.search_cost`), so a row's split is train's for its command."""
    compute = recompute = 0.0
    for name, runs in piece_runs(c, par, stages).items():
        piece = pieces[name]
        compute += runs * (piece.forward + piece.backward_input + piece.backward_weight)
        recompute += runs * piece.recompute
    return compute * par.microbatches, recompute * par.microbatches


def rank_pieces(c: TransformerConfig, par: Parallelism, ranks) -> tuple[tuple[int, ...], int, int]:
    """How many layers of each kind (:func:`~archsim.workload.layer_kinds.kind_configs`' order), embeddings and heads
    pipeline ``ranks`` (None: every rank) run per micro-batch (each rank its stages' layers,
    :func:`~archsim.training.parallel.layers_per_stage`; the embedding with stage 0, the head with the last)."""
    rank_of = rank_of_stages(par)
    layers = held_kinds(c, layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers), rank_of, ranks)
    return layers, int(ranks is None or rank_of[0] in ranks), int(ranks is None or rank_of[-1] in ranks)


__all__ = [
    "boundary_hops",
    "hop_bytes",
    "host_bound_seconds",
    "one_f_one_b_seconds",
    "piece_runs",
    "rank_compute_seconds",
    "rank_pieces",
    "rank_stage_times",
    "stage_times",
]
