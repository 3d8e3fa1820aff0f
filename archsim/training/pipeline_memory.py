"""Memory of each pipeline rank: its chunks' :func:`~archsim.training.memory.stage_memory` at the in-flight count
its schedule's order holds, the walk of :mod:`archsim.training.held_memory` (W's inputs held from I to W), and
recomputation's working set where it coexists with what is held — at a backward's start, or when an I reaches
its stage's last-run layer (:func:`~archsim.training.held_memory.walk_peaks`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from archsim.errors import InputError
from archsim.training.held_memory import (
    chunk_in_flight,
    order_walk_peaks,
    rank_gains,
    rank_shares,
    weight_gradient_bytes,
)
from archsim.training.hf_memory import hf_rank_fractions, hf_rank_gains
from archsim.training.in_flight import in_flight_peaks
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.memory import (
    STATE_BYTES_PER_PARAMETER,
    StageMemory,
    StageTerms,
    embedding_mask_bytes,
    stage_terms,
)
from archsim.training.moe_ops import etp_kept, expert_parameters
from archsim.training.mtp import mtp_kind
from archsim.training.parallel import Parallelism, layers_per_stage
from archsim.workload.layer_kinds import DENSE, LAYER, kind_configs, part_counts
from archsim.workload.transformer import TransformerConfig


def held_fraction(c: TransformerConfig, par: Parallelism) -> float:
    """M_W / M_B of a Megatron layer: the share of a micro-batch's activations a split backward's I leaves for
    its W (:func:`~archsim.training.held_memory.weight_gradient_bytes`; above 1 under full recompute); 0 for
    Switch's (I frees all; Hugging Face's: :func:`~archsim.training.hf_memory.hf_held_fraction`)."""
    figures = layer_held_figures(c, par)
    return 0.0 if figures is None else figures[2]


def layer_held_figures(c: TransformerConfig, par: Parallelism) -> tuple[float, float, float, float] | None:
    """A Megatron layer's M_W, M_B, their ratio and the first stage's embedding mask (bytes, :func:`_layer_held`);
    None for Switch's (I frees all). M_W and M_B at ``par``'s ETP, M_B as the activations count it
    (:func:`~archsim.training.moe_ops.etp_kept`: the experts' rows at ETP ≠ TP, or under a load imbalance at EP)."""
    if c.family == "switch":
        return None
    figures = _layer_held(c, par.micro_batch, par.tp, par.recompute, par.sequence_parallel, par.attention)
    if not c.moe or (par.expert_tp == par.tp and c.moe_load_imbalance is None):
        return figures
    _, kept, _, mask = figures
    held = weight_gradient_bytes(c, par.micro_batch, par.tp, par.sequence_parallel, par.expert_tp, par.ep)
    kept = etp_kept(c, par, kept, 0.0, None)[0]
    return held, kept, held / kept, mask


@lru_cache(maxsize=4096)  # a planner sizing ranks asks each probe for the same layer's figures
def _layer_held(c: TransformerConfig, b: int, t: int, recompute: str, sp: bool,
                attention: str) -> tuple[float, float, float, float]:
    """Bytes of a Megatron layer a micro-batch's W reads (M_W) and its forward keeps (M_B), their ratio
    (:func:`held_fraction`), and the first stage's embedding mask (:func:`embedding_mask_bytes`)."""
    held, kept = weight_gradient_bytes(c, b, t, sp), layer_activation_bytes(c, b, t, recompute, sp, attention)
    return held, kept, held / kept, embedding_mask_bytes(c, b, t, sp)


def rank_held_fractions(c: TransformerConfig, par: Parallelism, counts: Sequence[int], ranks) -> list[float]:
    """:func:`held_fraction` of each rank (``ranks`` its stages, ``counts[j]`` layers in stage j), the first stage's
    embedding mask (:func:`embedding_mask_bytes`) in its M_B (:func:`~archsim.training.held_memory.rank_shares`)."""
    figures = layer_held_figures(c, par)
    if figures is None:
        return [0.0] * len(ranks)
    _, kept, share, mask = figures
    return rank_shares(share, kept, mask, counts, ranks)


def rank_held_gains(c: TransformerConfig, par: Parallelism, counts: Sequence[int], ranks) -> list[float]:
    """:func:`~archsim.training.held_memory.rank_gains` of Megatron's layers (0 for Switch's: I frees all)."""
    figures = layer_held_figures(c, par)
    if figures is None:
        return [0.0] * len(ranks)
    held, kept, _, mask = figures
    return rank_gains(held, kept, [mask if 0 in mine else 0.0 for mine in ranks], counts, ranks)


def memories(c: TransformerConfig, par: Parallelism, order=None, scale: float = 1.0,
             states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0,
             hf: bool = False, expert_states: float | None = None) -> list[StageMemory]:
    """Memory of one GPU of each pipeline rank (chunks of a rank summed). Without ``order``, plain 1F1B's
    in-flight counts min(p − r, m) (:func:`~archsim.training.in_flight.in_flight_peaks`) — no schedule built, for
    searches over many configurations; with it, the held peaks of
    :func:`~archsim.training.held_memory.order_held_peaks` (W's inputs held from I to W). ``scale``: bytes per
    element over fp16's (2 in fp32: the activations double, their 1-byte masks do not: :func:`stage_memory`);
    ``states``: model-state bytes per parameter (:func:`state_bytes`: 20 in fp16, 18 in bf16, 16 in fp32);
    ``unit``, ``hf``: as :func:`stage_memory`'s; ``expert_states``: as :func:`rank_terms`'."""
    chunks = par.pp * par.chunks
    counts = layers_per_stage(c.layers, chunks, par.stage_layers)
    if order is None:
        if par.schedule_name != "1f1b":
            raise InputError("memory without a schedule's order is 1F1B's only", field="schedule")
        peaks = in_flight_peaks("1f1b", par.pp, par.microbatches)
        rank_of = {j: j for j in range(par.pp)}
    else:
        rank_of = order.rank_of_stage()
    ranks = [[j for j in range(chunks) if rank_of[j] == rank] for rank in range(par.pp)]
    backs = peaks if order is None else []  # 1F1B: its peak is a B's start
    if order is not None:  # I and W apart: W's inputs held until W (Hugging Face's edges apart, rank by rank)
        eager = hf and c.family != "switch"
        shares = hf_rank_fractions(c, par.micro_batch, par.recompute, counts, ranks) if eager else \
            rank_held_fractions(c, par, counts, ranks)
        gains = hf_rank_gains(c, par.micro_batch, par.recompute, counts, ranks) if eager else \
            rank_held_gains(c, par, counts, ranks)
        peaks, backs = (list(x) for x in zip(*order_walk_peaks(order, shares, gains), strict=True))
    apart = rank_of[0] != rank_of[chunks - 1]
    return [peak_rank_memory(c, par, part_counts(c, counts, mine), mine, peaks[rank], backs[rank], apart, states, unit,
                             scale, hf, expert_states) for rank, mine in enumerate(ranks)]


def peak_rank_memory(c: TransformerConfig, par: Parallelism, layers: Sequence[int], stages: Sequence[int],
                     peak: float, back: float, apart: bool, states: float = STATE_BYTES_PER_PARAMETER,
                     unit: float = 0.0, scale: float = 1.0, hf: bool = False,
                     expert_states: float | None = None) -> StageMemory:
    """:func:`rank_memory` (``layers``: per part, :func:`~archsim.workload.layer_kinds.part_counts`) at the larger of
    the walk's ``peak`` (no working set: between actions) and ``back``, the
    most held while a backward reruns a layer, with the working set (:func:`~archsim.training.held_memory.walk_peaks`;
    chunk-forwards in M_B units, :func:`~archsim.training.held_memory.chunk_in_flight` of them per chunk)."""
    return rank_terms(c, par, stages, apart, states, unit, scale, hf, expert_states).peak(layers, peak, back)


def rank_memory(c: TransformerConfig, par: Parallelism, layers: Sequence[int], stages: Sequence[int],
                in_flight: float, apart: bool, states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0,
                scale: float = 1.0, hf: bool = False, working: bool = True) -> StageMemory:
    """Memory of one GPU of a rank running virtual ``stages`` (``layers`` each part of them,
    :func:`~archsim.workload.layer_kinds.part_counts`; ``in_flight`` micro-batches on each): its chunks' :func:`stage_memory` summed, the recomputation working set once — the rank rematerialises
    one layer at a time, whichever chunk it belongs to (before, each chunk added it)."""
    terms = rank_terms(c, par, stages, apart, states, unit, scale, hf)
    return _summed(terms.rerun if working else terms.held, layers, in_flight)


def _summed(terms: Sequence[StageTerms], layers: Sequence[int], in_flight: float) -> StageMemory:
    parts = [t.memory(n, in_flight) for t, n in zip(terms, layers)]
    if len(parts) == 1:  # sum() of one is 0 + it: itself, these figures being ≥ 0 (no −0.0)
        return parts[0]
    return StageMemory(sum([p.parameters for p in parts]), sum([p.states for p in parts]),
                       sum([p.activations for p in parts]))


@dataclass(frozen=True)
class RankTerms:
    """What :func:`peak_rank_memory` reads of a rank's chunks but their layers and the walk's counts: each chunk's
    :class:`~archsim.training.memory.StageTerms` without the working set (``held``) and with it on the first
    (``rerun``), ``chunks`` of them — read once for a planner sizing the rank at many counts; ``experts``: the
    state bytes a layer's experts hold beyond ``states`` per parameter (:func:`rank_terms`' ``expert_states``)."""

    chunks: int
    held: tuple[StageTerms, ...]
    rerun: tuple[StageTerms, ...]
    experts: float = 0.0
    kinds: tuple[str, ...] = ()  # each part's kind where a chunk has parts of several (layer_kinds.py); () one kind
    dense_rerun: tuple[StageTerms, ...] = ()  # ``rerun`` with the working set a dense layer's (a rank of dense alone)
    mtp: int = 0  # MoE layers of the MTP modules the rank holds beside its own (training/mtp.py): their experts' states

    def peak(self, layers: Sequence[int], peak: float, back: float) -> StageMemory:
        """:func:`peak_rank_memory` of ``layers`` layers per part (per chunk for a model of one kind)."""
        held = _summed(self.held, layers, chunk_in_flight(peak, self.chunks))
        mine = sum(layers) if not self.kinds else sum(n for n, kind in zip(layers, self.kinds) if kind == LAYER)
        if self.experts:
            held = StageMemory(held.parameters, held.states + self.experts * (mine + self.mtp), held.activations)
        rerun = chunk_in_flight(back, self.chunks)  # the same parameters and states: the activations alone, once each
        terms = self.dense_rerun if self.kinds and not mine else self.rerun  # the working set of a layer it has
        rerun_bytes = terms[0].activations(layers[0], rerun) if len(terms) == 1 else \
            sum([t.activations(n, rerun) for t, n in zip(terms, layers)])  # as _summed
        return StageMemory(held.parameters, held.states, rerun_bytes) if rerun_bytes > held.activations else held


def rank_terms(c: TransformerConfig, par: Parallelism, stages: Sequence[int], apart: bool,
               states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0, scale: float = 1.0,
               hf: bool = False, expert_states: float | None = None) -> RankTerms:
    """:class:`RankTerms` of a rank running virtual ``stages`` (the other arguments as :func:`peak_rank_memory`'s);
    ``expert_states``: bytes per expert parameter where they differ from ``states``
    (:func:`~archsim.training.fsdp.expert_state_bytes`: the distributed optimizer shards the experts' over their
    expert-DP group), None where they do not — the one place a rank's memory counts them, train's and the
    search's and the planner's alike."""
    last = par.pp * par.chunks - 1
    experts = 0.0 if expert_states is None else expert_parameters(c, par) * (expert_states - states)
    mtp = c.mtp_layers if last in stages and c.moe and mtp_kind(c) == LAYER else 0
    configs = kind_configs(c)
    if len(configs) == 1:
        held = tuple(stage_terms(c, par, j == 0, j == last, apart, states, unit, scale, hf, False) for j in stages)
        rerun = stage_terms(c, par, stages[0] == 0, stages[0] == last, apart, states, unit, scale, hf, True)
        return RankTerms(par.chunks, held, (rerun, *held[1:]), experts, mtp=mtp)  # the working set on the first chunk alone
    # a part per chunk and kind (part_counts' order), the chunk's embedding and head with its main kind's part
    def part(kind: str, j: int, working: bool) -> StageTerms:
        edge = kind == LAYER
        return stage_terms(configs[kind], par, edge and j == 0, edge and j == last, apart, states, unit, scale, hf,
                           working)

    keys = tuple(kind for _ in stages for kind in configs)
    held = tuple(part(kind, j, False) for j in stages for kind in configs)
    reruns = [tuple(part(kind, j, index == 0 and kind == chosen) for index, j in enumerate(stages)
                    for kind in configs) for chosen in (LAYER, DENSE)]
    return RankTerms(par.chunks, held, reruns[0], experts, keys, reruns[1], mtp)


__all__ = ["RankTerms", "held_fraction", "layer_held_figures", "memories", "peak_rank_memory", "rank_held_fractions",
           "rank_held_gains", "rank_memory", "rank_terms"]
