"""The configurations a training search enumerates, the rules that rule them out, and the memory each
needs — without building a schedule.

A candidate is TP × CP × PP × DP (= the GPUs searched) × micro-batch × recompute × schedule (with its chunks
per rank) × sequence parallelism. :func:`rejection` says why a candidate cannot run (the first rule it
breaks, in :data:`REASONS`' order) or ``None``; :func:`peak_memory_bytes` is the largest GPU's memory
under the schedule, from the closed forms of :func:`~archsim.training.in_flight.in_flight_peaks`
(micro-batches forward and not yet backward on a rank), which equal
:func:`archsim.training.held_memory.in_flight` of the published orders (checked by brute force in the tests)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from math import isqrt

from archsim.choices.devices import ELEMENT_BYTES
from archsim.choices.training import DEFAULT_P2P
from archsim.training.context_parallel import rank_config, received_bytes
from archsim.training.fsdp import expert_state_bytes, held_state_bytes
from archsim.training.held_memory import (
    SPLIT_SCHEDULES,
    front_peaks,
    published_walk_fronts,
    rank_gain,
    rank_share,
)
from archsim.training.in_flight import in_flight_peaks
from archsim.training.layout_problems import cp_problem, ep_layout_problem, tp_split_problem
from archsim.training.memory import StageMemory
from archsim.training.mla_ops import deepseek_rule
from archsim.training.moe_ops import moe_rule
from archsim.training.moe_overlap import overlap_rule
from archsim.training.mtp import mtp_rule
from archsim.training.parallel import (
    V_SCHEDULES,
    Parallelism,
    chunks_run,
    layers_per_stage,
    rank_stages,
    schedule_name,
    schedule_rejection,
    tp_straddles,
)
from archsim.training.pipeline_memory import RankTerms, layer_held_figures, rank_terms
from archsim.workload.layer_kinds import part_counts
from archsim.workload.transformer import TransformerConfig

CHUNKED = ("interleaved-1f1b", "interleaved-zb", "looped-bfs")  # v > 1 chunks per rank, chunk j on rank j mod p
DEFAULT_CHUNKS = (2, 4)  # what search tries for them when --chunks is not given
REASONS = ("tp-divides-heads", "cp-splits-sequence", "cp-divides-heads", "tp-straddles-servers", "pp-divides-layers", "dp-divides-batch",
           "micro-batch-divides-batch", "sequence-parallel-needs-tp", "ep-divides-experts", "etp-divides-expert-ffn", "moe-needs-sequence-parallel",
           "ep-divides-dp", "etp-ep-divides-tp-cp-dp", "ep-beside-fsdp", "a2a-overlap-needs-ep", "a2a-overlap-needs-interleaving",
           "a2a-overlap-beside-full-recompute", "mla-beside-cp", "deepseek-beside-fp8", "mtp-beside-cp", "mtp-beside-fp8",
           "layer-kinds-beside-fsdp", "layer-kinds-beside-split-backward", "schedule-needs-pp",
           "interleave-needs-pp-microbatches", "interleave-needs-microbatches-multiple-of-pp",
           "dualpipev-needs-2p-microbatches", "stage-mixes-gpu-types",
           "out-of-memory")  # in the order checked; ep-divides-dp: EP ∤ CP × DP at ETP = TP (a name older than CP beside EP)
# Configurations one search may enumerate (× server orders under a planned placement): refused above it
# before any is built. Measured: 496,800 (gpt_1024h_24l on 8 A100s, --max-micro-batch 690, --refine 0)
# took 5.5 s and peaked at 233 MB; the 1T GPT on 3,072 GPUs enumerates 114,048 (docs/search.md).
MAX_CANDIDATES = 500_000


@dataclass(frozen=True)
class Candidate:
    tp: int
    pp: int
    dp: int
    micro_batch: int
    recompute: str
    schedule: str
    interleave: int
    sequence_parallel: bool
    stage_layers: tuple[int, ...] | None = None  # None: Megatron's even split
    placement: tuple[int, ...] | None = None  # the servers' order (archsim.training.placement); None: the file's
    attention: str = "standard"  # attention's kernels (Parallelism.attention), one for the whole search
    dp_overlap: str = "none"  # the DP all-reduce after the backward or bucketed under it, one for the search
    grad_accumulation: str = "fused"  # Parallelism.grad_accumulation, one for the search (Megatron's lists only)
    distributed_optimizer: bool = False  # Parallelism.distributed_optimizer, one for the search
    fsdp: bool = False  # Parallelism.fsdp, one for the search
    cp: int = 1  # Parallelism.cp: the context-parallel degree
    cp_comm: str = "p2p"  # Parallelism.cp_comm: how CP exchanges K/V (p2p at CP 1, where nothing is exchanged)
    fsdp_reshard: str = "after-forward"  # Parallelism.fsdp_reshard, one for the search (with fsdp)
    fsdp_grad_sync: str = "micro-batch"  # Parallelism.fsdp_grad_sync, one for the search (with fsdp)
    cp_hierarchy: tuple[int, int] | None = None  # Parallelism.cp_hierarchy: a2a+p2p's (A, P)
    ep: int = 1  # Parallelism.ep: the expert-parallel degree (a mixture of experts' only)
    etp: int | None = None  # Parallelism.etp: the experts' tensor-parallel degree, None: TP (:func:`etp_options`)
    fp8: str | None = None  # Parallelism.fp8: Transformer Engine's recipe, one for the search (None: off)
    fp8_param_gather: bool = False  # Parallelism.fp8_param_gather: fp8 weights, one for the search
    p2p: str = DEFAULT_P2P  # Parallelism.p2p: whether a rank's next pass waits for its pipeline sends, one for the search

    def parallelism(self, global_batch: int) -> Parallelism:
        return Parallelism(self.tp, self.pp, self.dp, global_batch, self.micro_batch, self.recompute,
                           self.sequence_parallel, self.interleave, self.schedule, self.stage_layers, self.attention,
                           self.dp_overlap, self.grad_accumulation, self.distributed_optimizer, self.fsdp, self.cp,
                           self.cp_comm, self.fsdp_reshard, self.fsdp_grad_sync, self.cp_hierarchy, ep=self.ep,
                           etp=self.etp, fp8=self.fp8, fp8_param_gather=self.fp8_param_gather, p2p=self.p2p)

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def plannable(self) -> bool:
        """Whether a planner may split its layers unevenly: more than one rank (one chunk per rank or
        several, :mod:`archsim.training.stage_split`)."""
        return self.pp > 1


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending, in O(√n) (``n`` may be large: a library caller's GPU count, a global
    batch)."""
    low = [d for d in range(1, isqrt(n) + 1) if n % d == 0]
    return low + [n // d for d in reversed(low) if d * d != n]


@lru_cache(maxsize=4096)
def factorization_count(gpus: int, etps: tuple[int | None, ...] = (None,), tps: tuple[int, ...] | None = None,
                        pps: tuple[int, ...] | None = None) -> int:
    """How many (tp, pp, dp) :func:`factorizations` yields with TP in ``tps`` and PP in ``pps`` (None: any), each once
    per ETP it tries of ``etps`` (:func:`etp_options`): the sum of those PPs dividing gpus / tp × those ETPs over the
    divisors tp."""
    return sum(sum(1 for pp in divisors(gpus // tp) if pps is None or pp in pps) * len(etp_options(tp, etps))
               for tp in divisors(gpus) if tps is None or tp in tps)


def etp_options(tp: int, etps=(None,)) -> tuple[int | None, ...]:
    """The experts' tensor-parallel degrees a candidate at TP ``tp`` tries of ``etps`` (None: its TP), each once:
    an ETP equal to TP is None, Megatron-LM's default, which the row and its ``archsim train`` line leave unsaid."""
    return tuple(dict.fromkeys(None if etp == tp else etp for etp in etps))


def candidate_count(counts, micro_batches, recomputes, schedules, chunks, sequence_parallel, cps=(1,),
                    cp_comms=("p2p",), eps=(1,), etps=(None,), tps=None, pps=None) -> int:
    """How many candidates :func:`candidates` yields over the GPU ``counts``, without building one:
    the size a search checks against :data:`MAX_CANDIDATES` before it starts."""
    per_factorization = len(micro_batches) * len(recomputes) * len(sequence_parallel) * len(eps) * \
        sum(len(chunks) if s in CHUNKED else 1 for s in schedules)
    tps, pps = (None if given is None else tuple(given) for given in (tps, pps))
    return sum(factorization_count(n // cp, tuple(etps), tps, pps) * (sum(len(cp_levels(cp, comm)) for comm in cp_comms) if cp > 1 else 1)
               for n in counts for cp in cps if n % cp == 0) * per_factorization


def cp_levels(cp: int, cp_comm: str) -> tuple[tuple[int, int] | None, ...]:
    """The hierarchies a search tries for ``cp_comm`` at CP ``cp``: a2a+p2p's every (A, P), A·P = CP, with A and P
    above 1 (TransformerEngine runs A = 1 as p2p and P = 1 as a2a: tried by naming those); None for the others."""
    return tuple((a, cp // a) for a in divisors(cp) if 1 < a < cp) if cp_comm == "a2a+p2p" else (None,)


def factorizations(gpus: int, tps=None, pps=None) -> Iterator[tuple[int, int, int]]:
    """Every (tp, pp, dp) with tp·pp·dp = gpus, TP in ``tps`` and PP in ``pps`` (None: any)."""
    for tp in divisors(gpus):
        if tps is not None and tp not in tps:
            continue
        for pp in divisors(gpus // tp):
            if pps is None or pp in pps:
                yield tp, pp, gpus // (tp * pp)


def candidates(gpus: int, micro_batches, recomputes, schedules, chunks, sequence_parallel,
               attention: str = "standard", dp_overlap: str = "none",
               grad_accumulation: str = "fused", distributed_optimizer: bool = False,
               fsdp: bool = False, cps=(1,), cp_comms=("p2p",), fsdp_reshard: str = "after-forward",
               fsdp_grad_sync: str = "micro-batch", eps=(1,), etps=(None,),
               fp8: str | None = None, fp8_param_gather: bool = False,
               p2p: str = DEFAULT_P2P, tps=None, pps=None) -> Iterator[Candidate]:
    """The whole grid, before any rule: ``schedules`` names from :data:`SCHEDULES`; interleaved ones take
    each of ``chunks`` (v) per rank, the others v = 1; ``sequence_parallel``: the values to try;
    ``attention``, ``dp_overlap``, ``grad_accumulation``, ``distributed_optimizer``, ``fsdp``, ``fp8``,
    ``fp8_param_gather``, ``p2p``: every
    candidate's
    (``fsdp`` at every PP, each pipeline rank sharding its own stages, ``fsdp_reshard`` and ``fsdp_grad_sync`` beside it); ``cps``: the CP degrees, each
    dividing ``gpus`` taking the factorizations of gpus / CP; ``cp_comms``: the K/V exchanges each CP above 1
    tries (CP 1 exchanges nothing: one candidate, p2p); ``eps``: the EP degrees, each tried at every layout
    (:func:`rejection` drops those Megatron-Core or archsim refuse), each at the ETPs of ``etps`` (None: TP) that
    :func:`etp_options` keeps; ``tps``, ``pps``: the TPs and PPs tried (None: every divisor)."""
    for cp, (tp, pp, dp) in ((n, f) for n in cps if gpus % n == 0 for f in factorizations(gpus // n, tps, pps)):
        for b, comm, levels in ((b, kind, levels) for b in micro_batches for kind in (cp_comms if cp > 1 else ("p2p",))
                                for levels in cp_levels(cp, kind)):
            for r in recomputes:
                for s in schedules:
                    for v in (chunks if s in CHUNKED else (1,)):
                        for sp, ep, etp in ((sp, ep, etp) for sp in sequence_parallel for ep in eps
                                            for etp in etp_options(tp, etps)):
                            yield Candidate(tp, pp, dp, b, r, s, v, sp, attention=attention, dp_overlap=dp_overlap,
                                            grad_accumulation=grad_accumulation,
                                            distributed_optimizer=distributed_optimizer, fsdp=fsdp, cp=cp,
                                            cp_comm=comm, fsdp_reshard=fsdp_reshard,
                                            fsdp_grad_sync=fsdp_grad_sync, cp_hierarchy=levels, ep=ep, etp=etp,
                                            fp8=fp8, fp8_param_gather=fp8_param_gather, p2p=p2p)


def rejection(c: TransformerConfig, k: Candidate, global_batch: int, gpus_per_server: int,
              uneven: bool = False) -> str | None:
    """The first rule of :data:`REASONS` (but GPU types and memory) that ``k`` breaks, or None;
    ``uneven``: a planner splits the layers of :attr:`Candidate.plannable` ones (several layer kinds over several
    chunks a rank: Megatron's split nearest to even), which then need only as many layers as model chunks (PP ×
    chunks per rank)."""
    if tp_split_problem(c, k.tp):
        return "tp-divides-heads"
    if cp_problem(c, k.cp, k.attention, k.tp):
        return "cp-splits-sequence"
    if cp_problem(c, k.cp, k.attention, k.tp, k.cp_comm, k.cp_hierarchy):  # the exchange's: a2a's heads over CP
        return "cp-divides-heads"
    if tp_straddles(k.tp, k.gpus, gpus_per_server):  # part of one server or whole servers, as train
        return "tp-straddles-servers"
    stages = k.pp * chunks_run(k.schedule, k.interleave)
    if (c.layers < stages) if uneven and k.plannable else c.layers % stages:
        return "pp-divides-layers"
    if global_batch % k.dp:
        return "dp-divides-batch"
    if (global_batch // k.dp) % k.micro_batch:
        return "micro-batch-divides-batch"
    if k.sequence_parallel and k.tp == 1:
        return "sequence-parallel-needs-tp"
    rule = moe_rule(c, k.tp, k.ep, k.sequence_parallel, etp=k.etp)  # train's refusals (archsim.training.moe_ops), one each
    if rule is not None:
        return rule[0]
    if ep_layout_problem(k.dp, k.ep, k.cp, k.fsdp, k.tp, k.etp):  # EP or ETP ≠ TP beside FSDP, or ETP·EP ∤ TP·CP·DP
        return "ep-beside-fsdp" if k.fsdp else "ep-divides-dp" if k.etp is None else "etp-ep-divides-tp-cp-dp"
    overlap = overlap_rule(c, k.ep, k.pp, schedule_name(k.schedule, k.interleave), k.recompute)  # train's (moe_overlap)
    if overlap is not None:
        return overlap[0]
    # train's (mla_ops), but its refusal of --balance planned over several chunks of several layer kinds: there the
    # search writes out Megatron's split nearest to even, which train runs as --stage-layers (search_fit.plan_candidate)
    model_rule = deepseek_rule(c, k.cp, k.fp8, k.fsdp, schedule_name(k.schedule, k.interleave),
                               chunks_run(k.schedule, k.interleave))
    if model_rule is not None:
        return model_rule[0]
    mtp = mtp_rule(c, k.cp, k.fp8)  # train's (mtp.py)
    if mtp is not None:
        return mtp[0]
    # the schedule's rules, the ones train refuses by (archsim.training.parallel)
    return schedule_rejection(schedule_name(k.schedule, k.interleave), k.pp, global_batch // (k.dp * k.micro_batch))


@lru_cache(maxsize=4096)
def _in_flight_counts(schedule: str, p: int, m: int, v: int) -> tuple[float, ...]:
    """:func:`in_flight_peaks` of every rank, kept: a planner sizing ranks reads them once a probe."""
    return tuple(in_flight_peaks(schedule, p, m, v))


def rank_memories(c: TransformerConfig, par: Parallelism, ranks=None, dtype: str = "fp16") -> list[StageMemory]:
    """Memory of one GPU of each pipeline rank in ``ranks`` (default all), as
    :func:`archsim.training.pipeline_memory.memories` but with the in-flight counts in closed form, and a
    V-shaped schedule's first and last chunk (embedding and LM head) both on rank 0; model states at
    ``dtype``'s bytes per parameter (:func:`~archsim.training.memory.state_bytes`, sharded over DP with the
    distributed optimizer; a mixture's experts' over their expert-DP ranks, as train shards them) and activations at its
    bytes per element over fp16's (fp32's double, the 1-byte masks apart, as ``archsim train`` counts Megatron's)."""
    counts = layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers)
    (states, unit), scale = held_state_bytes(dtype, "megatron", par), ELEMENT_BYTES[dtype] / 2
    return counted_rank_memories(c, par, counts, range(par.pp) if ranks is None else ranks, states, unit, scale,
                                 expert_state_bytes(dtype, "megatron", par))


def counted_rank_memories(c: TransformerConfig, par: Parallelism, counts: Sequence[int], ranks: Iterable[int],
                          states: float, unit: float = 0.0, scale: float = 1.0,
                          expert_states: float | None = None) -> list[StageMemory]:
    """:func:`rank_memories` of ``ranks`` with ``counts[j]`` layers in virtual stage j (any counts ≥ 0: a rank's
    memory reads its own chunks' alone, so the planner sizes a rank before the split is known), ``states`` bytes
    per parameter, ``unit`` and ``scale`` as :func:`~archsim.training.memory.stage_memory`'s, ``expert_states``
    as :func:`~archsim.training.pipeline_memory.rank_terms`'."""
    sizers = [rank_sizer(rank_config(c, par.cp), par, rank, states, unit, scale, expert_states)  # s/CP tokens
              for rank in ranks]
    shares = [sizer.share(counts) for sizer in sizers]
    walk = any(shares)  # the working set where it meets the held (train's); else a fused B's in-flight count
    kv = received_bytes(c, par, scale)  # a CP rank's K/V received (train's, run.train)
    out = [sizer.memory(counts, share, walk) for sizer, share in zip(sizers, shares, strict=True)]
    return [replace(m, activations=m.activations + kv) for m in out] if kv else out


@dataclass(frozen=True)
class RankSizer:
    """One pipeline rank's memory as the layer counts vary (:func:`counted_rank_memories`), its shape read once
    (:func:`rank_sizer`): the planner sizes each rank at many counts. ``chunks``: its virtual stages; ``held``: a
    layer's M_W / M_B figures (:func:`~archsim.training.pipeline_memory.layer_held_figures`) where the schedule
    splits the backward (None: a fused B reads no shares, none worked out for it; Switch's I frees all)."""

    rank: int
    chunks: tuple[int, ...]
    held: tuple[float, float, float, float] | None
    edge: float  # the rank's bytes in its M_B besides its layers' (the embedding's mask on the first)
    schedule: str  # the order's name, ranks, micro-batches and chunks per rank (its walk's or in-flight count's)
    p: int
    m: int
    v: int
    terms: RankTerms
    config: TransformerConfig  # the model its layers' kinds are read from (layer_kinds.part_counts)

    def share(self, counts: Sequence[int]) -> float:
        """The rank's M_W / M_B with ``counts[j]`` layers in virtual stage j (0 under a fused B)."""
        if self.held is None:
            return 0.0
        return rank_share(self.held[2], self.held[1], self.edge, sum([counts[j] for j in self.chunks]))

    def memory(self, counts: Sequence[int], share: float, walk: bool) -> StageMemory:
        """The rank's memory with ``counts[j]`` layers in virtual stage j at its ``share``: its order's walk when
        ``walk`` (any rank sized beside it has a share), else the in-flight count, where a fused B's walk peaks."""
        if walk:
            assert self.held is not None  # a share above 0 is a split backward's
            gain = rank_gain(self.held[0], self.held[1], self.edge, sum([counts[j] for j in self.chunks]),
                             len(self.chunks))
            peak, back = front_peaks(published_walk_fronts(self.schedule, self.p, self.m, self.v)[self.rank], share,
                                     gain)
        else:
            peak = back = _in_flight_counts(self.schedule, self.p, self.m, self.v)[self.rank]
        return self.terms.peak(part_counts(self.config, counts, self.chunks), peak, back)

    def of_parts(self, parts: Sequence[int]) -> StageMemory:
        """The rank's memory under a fused B with ``parts[i]`` layers in its i-th part (a chunk's layers of one kind,
        :func:`~archsim.workload.layer_kinds.part_counts`' order): the planner's probe of a rank's kinds' counts."""
        peak = _in_flight_counts(self.schedule, self.p, self.m, self.v)[self.rank]
        return self.terms.peak(parts, peak, peak)

    def __call__(self, counts: Sequence[int]) -> StageMemory:
        """:func:`counted_rank_memories` of this rank alone."""
        share = self.share(counts)
        return self.memory(counts, share, bool(share))


def rank_sizer(c: TransformerConfig, par: Parallelism, rank: int, states: float, unit: float = 0.0,
               scale: float = 1.0, expert_states: float | None = None) -> RankSizer:
    """:class:`RankSizer` of pipeline ``rank`` (the other arguments as :func:`counted_rank_memories`')."""
    chunks = tuple(rank_stages(par.schedule, par.pp, par.chunks, rank))
    held = layer_held_figures(c, par) if par.schedule_name in SPLIT_SCHEDULES else None
    apart = par.schedule not in V_SCHEDULES and par.pp > 1  # first and last chunk on different ranks
    return RankSizer(rank, chunks, held, held[3] if held is not None and 0 in chunks else 0.0, par.schedule_name,
                     par.pp, par.microbatches, par.chunks, rank_terms(c, par, chunks, apart, states, unit, scale, expert_states=expert_states), c)


def peak_memory_bytes(c: TransformerConfig, par: Parallelism, dtype: str = "fp16") -> float:
    """The largest GPU's bytes. In-flight counts fall with the rank and only the first rank holds the
    embedding, the last the LM head, so under an even split the peak is on the first or the last rank
    (an uneven split: every rank is looked at)."""
    ranks = None if par.stage_layers is not None else sorted({0, par.pp - 1})
    return max(m.total for m in rank_memories(c, par, ranks, dtype))


__all__ = ["CHUNKED", "DEFAULT_CHUNKS", "MAX_CANDIDATES", "REASONS", "Candidate", "RankSizer",
           "candidate_count", "candidates", "counted_rank_memories", "divisors",
           "etp_options", "factorization_count", "factorizations", "peak_memory_bytes",
           "rank_memories", "rank_sizer", "rejection"]
