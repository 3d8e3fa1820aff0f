"""Uneven pipeline stages: which transformer layers each pipeline rank runs, chosen by a planner
instead of Megatron's equal counts.

The model is a chain of real nodes — the embedding, the ``L`` transformer layers, the LM head (final
norm, logits and loss) — each with its own per-micro-batch forward, input-backward (with any
recomputation), weight-backward and TP-collective seconds on each rank's GPU
(:func:`archsim.training.iteration.model_pieces`). PipeDream's dynamic program (Narayanan et al.,
SOSP'19 §3.1) restricted to a straight pipeline (one replica per stage, what ``straight_pipeline``
gives in :mod:`archsim.partition.pipedream`) splits the chain into ``p`` contiguous stages::

    A(r, j) = min_{i < j}  max( A(r − 1, i), T_r(i..j) )     (stage r holds nodes i … j − 1)

where ``T_r`` is the nodes' F + I + W on rank r's GPU — each rank its own GPU, so a heterogeneous
cluster's speeds enter here — and a stage is allowed only when it holds at least one transformer
layer and its memory (:func:`archsim.training.search_space.counted_rank_memories`, the figure ``archsim train``
and ``archsim search`` report for the rank under the schedule) fits that rank's GPU. The embedding can only land on the first stage and the head on the last: the stages
are contiguous. The result minimises the slowest stage's F + I + W — for 1F1B and GPipe on one GPU
type this also minimises the iteration (the sum of the stages' work does not depend on the split,
:func:`~archsim.training.stages.one_f_one_b_seconds`; checked by brute force in the tests).

The plan is the project's one plan type, :class:`archsim.partition.result.Partition` (each
virtual stage's nodes on the rank that runs it, each node with its F, W (``G``) and I (``D``) seconds
on that rank's GPU); the layer counts a :class:`~archsim.training.parallel.Parallelism` carries are
:func:`stage_layer_counts` of it.

Schedules with several model chunks per rank (interleaved 1F1B with V chunks: virtual stage c·PP + r
on rank r; ZB-V and DualPipeV: stages r and 2·PP − 1 − r on rank r) are planned by the same DP over
the ranks: what bounds their iteration is each *rank's* work summed over its chunks (their closed
forms in :func:`archsim.training.search_cost.pipeline_seconds` scale the busiest rank's by the
micro-batches) and each rank's memory, not a chunk's; every chunk keeps at least one layer. The
brute force over every composition of the layers into PP·V chunks checks this in the tests.

A model of several layer kinds (:mod:`archsim.workload.layer_kinds`: DeepSeek's dense first layers, then MoE) prices
each layer node by its own kind's piece, and a stage fits when its rank's memory at the stage's count of each kind
fits (:func:`_most_beside_dense`); it is planned over one chunk a rank (over several, a rank's layers are not one
run of the chain: ``train --balance planned`` refuses it, :func:`~archsim.training.mla_ops.deepseek_rule`, and the
search writes out :func:`nearest_even_split` there instead, which train runs as ``--stage-layers``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeVar

import numpy as np

from archsim.console import job, setting
from archsim.partition.result import Partition, PlacedOp, Stage
from archsim.training.fsdp import expert_state_bytes, held_state_bytes
from archsim.training.held_memory import SPLIT_SCHEDULES
from archsim.training.iteration import model_pieces
from archsim.training.machine import Machine
from archsim.training.memory import STATE_BYTES_PER_PARAMETER
from archsim.training.mla_ops import deepseek_rule, refuse_deepseek
from archsim.training.parallel import Parallelism, rank_of_stages
from archsim.training.piece_cost import PieceCost
from archsim.training.search_space import rank_sizer
from archsim.training.stages import hop_bytes
from archsim.workload.layer_kinds import DENSE, kind_configs, layer_kinds
from archsim.workload.transformer import TransformerConfig

# Cells (PP × (layers + 3)²) the planner's dynamic program may fill: measured about 43 ns a cell and 1.2 GB
# for 4,096 layers (train --pp 16 --balance planned: 2.7·10⁸ cells, 11.6 s), so at most ~4 s.
MAX_PLAN_CELLS = 100_000_000
T = TypeVar("T")
U = TypeVar("U")
LAYER = "layer"  # the chain's transformer layers are named layer1 … layerL, between "embedding" and "head"


def piece_seconds(piece: PieceCost, recompute: bool = True) -> float:
    """One node's F + I + W per micro-batch, TP collectives (and the recompute) included."""
    return (piece.forward + piece.tp_forward + piece.cp_forward + piece.ep_forward + piece.backward_input
            + piece.tp_backward + piece.cp_backward + piece.ep_backward + piece.backward_weight + (piece.recompute if recompute else 0.0))


def node_seconds(c: TransformerConfig, pieces: dict[str, PieceCost]) -> np.ndarray:
    """The chain's nodes in order — embedding, the layers (each its kind's piece,
    :func:`~archsim.workload.layer_kinds.layer_kinds`), the LM head — each one's F + I + W."""
    layer = {kind: piece_seconds(pieces[kind]) for kind in kind_configs(c)}
    return np.array([piece_seconds(pieces["embedding"], False), *[layer[kind] for kind in layer_kinds(c)],
                     piece_seconds(pieces["head"])])  # its MTP modules' recompute (mtp.py)


def node_names(c: TransformerConfig) -> tuple[str, ...]:
    """The chain's nodes in order: ``embedding``, ``layer1`` … ``layerL``, ``head``."""
    return ("embedding", *(f"{LAYER}{k}" for k in range(1, c.layers + 1)), "head")


def node_ops(name: str, pieces: dict[str, PieceCost], kind: str = LAYER) -> tuple[PlacedOp, ...]:
    """A node's F, W (``G``) and I (``D``) seconds per micro-batch, TP collectives included and the
    recompute in a layer's I: together :func:`piece_seconds`; a layer's from its ``kind``'s piece."""
    piece = pieces[kind if name.startswith(LAYER) else name]
    redo = piece.recompute  # the head's: its MTP modules' (mtp.py); the embedding's none
    return (PlacedOp(name, "F", piece.stage_forward),
            PlacedOp(name, "G", piece.backward_weight),
            PlacedOp(name, "D", piece.backward_input + piece.tp_backward + piece.cp_backward + piece.ep_backward
                     + redo))


def chain_partition(c: TransformerConfig, par: Parallelism, counts: Sequence[int],
                    rank_pieces: Sequence[dict[str, PieceCost]], method: str = "planned") -> Partition:
    """Layer counts per virtual stage (model chunk, pipeline order) as the one plan type: stage s holds
    its layers (the embedding joins the first, the LM head the last) and runs on rank
    ``rank_of_stages(par)[s]`` (its ``devices``), each node's ops costed on that rank's GPU
    (``rank_pieces[r]``), in seconds; the mandatory bytes are each boundary's hop
    (:func:`~archsim.training.stages.hop_bytes`, per TP rank) forward and its gradient back, per
    micro-batch."""
    names, kinds = node_names(c), (LAYER, *layer_kinds(c), LAYER)
    rank = rank_of_stages(par)
    bounds = np.concatenate(([0], np.cumsum(counts))) + 1
    bounds[0], bounds[-1] = 0, len(names)
    stages = tuple(Stage(s, names[a:b], tuple(op for name, kind in zip(names[a:b], kinds[a:b])
                                              for op in node_ops(name, rank_pieces[rank[s]], kind)))
                   for s, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())))
    return Partition(method, stages, int(2 * hop_bytes(c, par) * (len(stages) - 1)), 0, unit="seconds",
                     devices=tuple((rank[s],) for s in range(len(stages))))


def stage_layer_counts(partition: Partition) -> tuple[int, ...]:
    """The transformer layers of each stage of a chain plan (what ``Parallelism.stage_layers`` holds)."""
    return tuple(sum(name.startswith(LAYER) for name in stage.layers) for stage in partition.stages)


def _most_layers(c: TransformerConfig, par: Parallelism, rank: int, chunks: Sequence[int], capacity: float,
                 states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0,
                 expert_states: float | None = None) -> int:
    """The most layers ``rank`` (running virtual stages ``chunks``) fits in ``capacity`` bytes (−1: not even none): the largest count whose memory,
    :func:`~archsim.training.search_space.counted_rank_memories` — train's and the search's figure for the rank,
    its own share of M_W / M_B and its working set where it meets the held — fits. That memory is affine in the
    layers under a fused B; under a split backward it grows but not affinely (the rank's share and gain move with
    its count): searched from where the chord from no layers to all meets ``capacity``, then bisected.
    Until 2026-12-02 the planner took a layer's M_W / M_B on every rank and the working set beside the walk's
    peak, up to one layer's M_W − M_B above train's figure."""
    sizer = rank_sizer(c, par, rank, states, unit, expert_states=expert_states)  # the rank's shape read once, its memory at each count probed

    def total(layers: int) -> float:
        counts = [0] * (par.pp * par.chunks)
        counts[chunks[0]] = layers  # a rank's memory reads its layer total, whichever of its chunks holds them
        return sizer(counts).total

    zero = total(0)
    if zero > capacity:
        return -1
    if par.schedule_name not in SPLIT_SCHEDULES:  # a fused B: affine in the layers (each costs the same)
        per_layer = total(1) - zero
        return c.layers if per_layer <= 0 or capacity - zero >= per_layer * c.layers else \
            int((capacity - zero) // per_layer)
    low, high = 0, c.layers  # total(low) fits, total(high) does not
    top = total(high)
    if top <= capacity:
        return high
    # first the count where the chord from none to all meets the capacity, then steps doubling out from it until
    # the boundary is bracketed: the largest count that fits is near it, a few probes instead of log2(layers)
    guess = min(max(int((capacity - zero) / (top - zero) * high), 1), high - 1)
    step, outward = 1, total(guess) <= capacity
    low, high = (guess, high) if outward else (low, guess)
    while high - low > 1 and step < high - low:
        probe = low + step if outward else high - step
        fits = total(probe) <= capacity
        low, high = (probe, high) if fits else (low, probe)
        if fits != outward:
            break
        step *= 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if total(mid) <= capacity else (low, mid)
    return low


def _most_beside_dense(c: TransformerConfig, par: Parallelism, rank: int, capacity: float,
                       states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0,
                       expert_states: float | None = None) -> np.ndarray:
    """For a model of several layer kinds (:mod:`~archsim.workload.layer_kinds`; one chunk a rank, a fused B): per
    count d of dense layers (0 … the model's), the most of its main kind's layers ``rank`` fits beside them in
    ``capacity`` bytes (−1: not even none). The rank's memory (the sizer's, train's figure) grows with each kind's
    count: bisected."""
    sizer = rank_sizer(c, par, rank, states, unit, expert_states=expert_states)
    dense = len(c.dense_layers)
    out = []
    for d in range(dense + 1):
        def fits(main: int, d: int = d) -> bool:
            return sizer.of_parts((main, d)).total <= capacity

        low, high = 0, c.layers - dense  # fits(low), not fits(high)
        if not fits(low) or fits(high):
            out.append(high if fits(low) else -1)
            continue
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if fits(mid) else (low, mid)
        out.append(low)
    return np.array(out)


def spread(total: int, fixed: Sequence[float], layer: float) -> list[int]:
    """A rank's ``total`` layers over its chunks (at least one each) so that its slowest chunk is as fast
    as can be: each further layer to the chunk that is then fastest (earlier first on a tie), where
    chunk k takes ``fixed[k]`` (its embedding or head) + its layers × ``layer`` seconds — the water-filling
    that is optimal for alike layers."""
    counts = [1] * len(fixed)
    for _ in range(total - len(fixed)):
        k = min(range(len(fixed)), key=lambda k: (fixed[k] + counts[k] * layer, k))
        counts[k] += 1
    return counts


def _level(chain: Sequence[np.ndarray], most: Sequence[int], v: int, layers: int, bound: float) -> list[int] | None:
    """Among the ranks' layer totals whose busiest rank takes at most ``bound`` (the DP's optimum), the
    water-filled one: from v layers a rank, each further layer to the rank then least busy, earlier
    first. The DP's backtrack would pile its ties on the last ranks; the event simulator of the
    interleaved and V-shaped orders runs the levelled totals faster (GPT-3 1.3B at PP 4 in
    docs/search.md's uneven stages). None if rounding leaves a layer nowhere to go."""
    p = len(chain)
    fixed = [chain[r][0] * (r == 0) + chain[r][-1] * (r == p - 1) for r in range(p)]
    counts = [v] * p
    for _ in range(layers - v * p):
        options = [(fixed[r] + (counts[r] + 1) * chain[r][1], r) for r in range(p) if counts[r] < most[r]]
        options = [o for o in options if o[0] <= bound * (1 + 1e-12)]
        if not options:
            return None
        counts[min(options)[1]] += 1
    return counts


@lru_cache(maxsize=64)
def _stage_shapes(n: int, v: int) -> tuple[np.ndarray, ...]:
    """The DP's candidate stages of an ``n``-node chain, nodes i … j − 1 (``v`` chunks a rank, each a layer at
    least): i, j, whether it starts at the embedding and ends at the head, its transformer layers, whether it is a
    stage at all and whether one in the middle — alike for every plan of that chain and chunk count."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    first, last = i == 0, j == n
    count = j - i - first - last  # transformer layers in the stage
    shape_ok = (j > i) & (count >= v)
    return i, j, first, last, count, shape_ok, shape_ok & ~first & ~last


def _stage_costs(chain: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Each candidate stage's F + I + W on one rank's GPU (``chain``: its node seconds), seconds."""
    prefix = np.concatenate(([0.0], np.cumsum(chain)))
    return prefix[j] - prefix[i]


def plan_stage_layers(c: TransformerConfig, par: Parallelism, node_times: Sequence[np.ndarray],
                      capacities: Sequence[float], states: float = STATE_BYTES_PER_PARAMETER,
                      unit: float = 0.0, expert_states: float | None = None) -> tuple[int, ...] | None:
    """Layers per virtual stage (model chunk), in pipeline order, minimising the busiest rank's F + I + W
    over its chunks (module docstring); ``node_times[r]``: the chain's node seconds on rank r's GPU,
    ``capacities[r]``: its bytes, the model states at ``states`` bytes per parameter
    (:func:`~archsim.training.memory.state_bytes`; ``unit``: FSDP's, :func:`~archsim.training.memory.fsdp_unit_bytes`;
    ``expert_states``: the experts', :func:`~archsim.training.fsdp.expert_state_bytes`). None when no split fits memory (the layers are alike, so one fits
    exactly when every rank holds at least one layer per chunk and together they hold them all).

    The DP runs over the ranks in rank order: a rank's work depends only on how many layers it holds
    (and on the embedding and head it holds), so with several chunks per rank the chain is the ranks'
    totals — the embedding first (virtual stage 0 is on rank 0), the head last (interleaved: the last
    stage is on rank PP − 1) or with the embedding (V-shaped: on rank 0); among the totals that reach
    its optimum the water-filled ones are taken (:func:`_level`), and each rank's total is spread over
    its chunks so that its slowest chunk is as fast as it can be (:func:`spread`)."""
    p, layers, v = par.pp, c.layers, par.chunks
    n = layers + 2
    if p * v > layers:
        return None
    if p * (n + 1) ** 2 > MAX_PLAN_CELLS:  # before the (n + 1)² tables are allocated
        from archsim.errors import InputError

        raise InputError(f"planning the split of {layers:,} layers over {p:,} pipeline stages fills {p * (n + 1) ** 2:,} "
                         f"table cells, above {MAX_PLAN_CELLS:,}; use {setting('balance', 'even')}, {setting('stage-layers')}, "
                         "or fewer stages",
                         field="balance")
    rank_of = rank_of_stages(par)
    owned: list[list[int]] = [[] for _ in range(p)]
    for s, r in enumerate(rank_of):  # one pass: PP × chunks stages, not PP² × chunks
        owned[r].append(s)
    if c.dense_layers:  # layers of several kinds: a stage's memory by its own kinds' counts, one chunk a rank
        refuse_deepseek(deepseek_rule(c, par.cp, par.fp8, par.fsdp, par.schedule_name, par.chunks, planned=True))
        beside = [_most_beside_dense(c, par, r, capacities[r], states, unit, expert_states) for r in range(p)]
        most = [int(b.max()) for b in beside]
    else:
        most = [_most_layers(c, par, r, owned[r], capacities[r], states, unit, expert_states) for r in range(p)]
        if min(most) < v or sum(most) < layers:
            return None
    chain = list(node_times)
    if rank_of[-1] == 0 and p > 1:  # V-shaped: embedding and head both rank 0's, a zero-cost node closes it
        chain = each_once(node_times, lambda t: np.concatenate(([t[0] + t[-1]], t[1:-1], [0.0])))
    i, j, first, last, count, shape_ok, middle = _stage_shapes(n, v)
    if c.dense_layers:  # each candidate stage's dense layers, and its main kind's beside them
        dense = np.concatenate(([0], np.cumsum([0, *(kind == DENSE for kind in layer_kinds(c)), 0])))
        held = np.clip(dense[j] - dense[i], 0, len(c.dense_layers))
        main = count - held
    costs = each_once(chain, lambda t: _stage_costs(t, i, j))  # ranks on alike GPUs share one
    allowed: dict[tuple[bool, bool, int | tuple[int, ...]], np.ndarray] = {}  # by the rank's place and most layers
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    choice = np.zeros((p, n + 1), dtype=int)
    for r in range(p):
        key = (r == 0, r == p - 1, most[r] if not c.dense_layers else tuple(beside[r].tolist()))
        if key not in allowed:
            ends = shape_ok & (first == (r == 0)) & (last == (r == p - 1)) if r in (0, p - 1) else middle
            allowed[key] = ends & (count <= most[r] if not c.dense_layers else main <= beside[r][held])
        value = np.where(allowed[key], np.maximum(best[:, None], costs[r]), np.inf)
        choice[r] = np.argmin(value, axis=0)
        best = value[choice[r], np.arange(n + 1)]
    if not np.isfinite(best[n]):
        return None
    totals, end = [], n
    for r in range(p - 1, -1, -1):
        start = int(choice[r, end])
        totals.append(end - start - (start == 0) - (end == n))
        end = start
    totals.reverse()
    if v == 1:
        return tuple(totals)
    totals = _level(chain, most, v, layers, float(best[n])) or totals
    split = [0] * (p * v)
    for r in range(p):
        fixed = [node_times[r][0] * (s == 0) + node_times[r][-1] * (s == p * v - 1) for s in owned[r]]
        for s, k in zip(owned[r], spread(totals[r], fixed, float(node_times[r][1]))):
            split[s] = k
    return tuple(split)


def refuse_planned_fp32(dtype: str) -> None:
    """The planner sizes activations at 2 bytes per element: ``--balance planned`` in fp32 is refused
    (by ``archsim train`` and ``archsim search`` alike) rather than planned on memory it undercounts."""
    if dtype == "fp32":
        from archsim.errors import InputError

        raise InputError(f"{setting('balance', 'planned')} sizes activations at 2 bytes per element: with "
                         f"{setting('dtype', 'fp32')} give {setting('stage-layers')} ({job('train')}) or the even split",
                         field="balance")


def each_once(items: Sequence[T], of: Callable[[T], U]) -> list[U]:
    """``of(item)`` of each item, asked once per distinct object (a homogeneous cluster's ranks share a machine,
    and their pieces)."""
    seen: dict[int, U] = {}
    for item in items:
        if id(item) not in seen:
            seen[id(item)] = of(item)
    return [seen[id(item)] for item in items]


def planned_split(c: TransformerConfig, par: Parallelism, machines: Sequence[Machine],
                  capacities: Sequence[float],
                  pieces: Sequence[dict[str, PieceCost]] | None = None) -> Partition | None:
    """The plan of :func:`plan_stage_layers` with each rank's nodes costed on its own machine (from
    ``pieces[r]`` when given, e.g. a search's cached ones), as a
    :class:`~archsim.partition.result.Partition` (:func:`chain_partition`); None when none fits."""
    if pieces is None:
        pieces = each_once(machines, lambda machine: model_pieces(c, par, machine))
    dtype, implementation = machines[0].dtype, machines[0].implementation
    counts = plan_stage_layers(c, par, each_once(pieces, lambda own: node_seconds(c, own)), capacities,
                               *held_state_bytes(dtype, implementation, par),
                               expert_states=expert_state_bytes(dtype, implementation, par))
    return None if counts is None else chain_partition(c, par, counts, pieces)


def nearest_even_split(layers: int, stages: int) -> tuple[int, ...]:
    """Megatron's even split where ``stages`` (PP × chunks) divides ``layers``, else the nearest to it, in pipeline
    order: every virtual stage ⌈L/S⌉ layers but the last S·⌈L/S⌉ − L, one fewer each — the lighter stages at the end,
    where the last holds the LM head, as Megatron-LM lightens it (``--decoder-last-pipeline-num-layers``; DeepSeek-V3's
    61 layers at PP 16 × 2 chunks: 29 stages of 2, then 3 of 1, a ``--pipeline-model-parallel-layout``). Each stage
    needs a layer: ``layers`` ≥ ``stages``."""
    high = -(-layers // stages)
    short = stages * high - layers
    return (high,) * (stages - short) + (high - 1,) * short


__all__ = ["chain_partition", "each_once", "nearest_even_split", "node_names", "node_ops", "node_seconds",
           "piece_seconds", "plan_stage_layers", "planned_split", "spread",
           "stage_layer_counts"]
