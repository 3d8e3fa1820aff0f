"""Activations a pipeline rank holds when the backward is split into I (input gradient) and W (weight gradient).

Zero-bubble orders (ZB-H1/H2, interleaved ZB, ZB-V, DualPipeV: any order with separate I and W actions)
free a micro-batch's activations in two steps (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", §2 and
Table 1): F adds M_B, I releases M_B − M_W and W releases the M_W its weight GEMMs still need; a fused B
(1F1B, GPipe, interleaved 1F1B) releases M_B at once. Units here are one layer's M_B
(:func:`~archsim.training.layer_activations.layer_activation_bytes`; M_W / M_B is
:func:`~archsim.training.pipeline_memory.held_fraction`), so a rank's peak is a float that
:func:`~archsim.training.memory.stage_memory` multiplies as it did the integer in-flight count.

M_W per layer and micro-batch, what W needs after I: each weight GEMM's input and the gradient of its
output, 2 bytes an element. A GPT layer: the QKV and fc1 GEMMs' inputs (the two LayerNorm outputs, 2·s·b·h
each, replicated over TP), the projection's and fc2's inputs (the attention context 2·s·b·h/t and the
GELU output 8·s·b·h/t), and the output gradients of QKV (6·s·b·h/t), projection (2·s·b·h), fc1
(8·s·b·h/t) and fc2 (2·s·b·h): s·b·h·(8 + 24/t), the paper's 32·b·s·h at t = 1. With sequence parallelism
the two norm outputs are held sequence-split (2·s·b·h/t each) and the two row-parallel output gradients whole
(the backward of the reduce-scatter all-gathers them): s·b·h·(4 + 28/t), more than M_B's 34/t from t = 2 (I then
adds memory). That is what the ZB authors' Megatron
(sail-sg/zero-bubble-pipeline-parallelism, ``megatron/core/tensor_parallel/layers.py``,
``LinearWithGradAccumulationAndAsyncCommunication.backward``) defers: ``WeightGradStore.put`` keeps each
linear's saved ``input`` (under SP the local shard, all-gathered again when W runs) and its ``grad_output``.
The 24/t (28/t) is read off the layer's widths (grouped K and V, SwiGLU's gate and up gradients and their
product): the norms' own γ and β are left out, as the paper leaves them. Masks and the attention core (no
weights) are released by I. Counted as a share of M_B, a micro-batch between I and W holds that share of the
layer's 1-byte masks too where they do not double (fp32: M_W short by the share × the masks' bytes). A mixture of experts'
MLP (:func:`~archsim.training.moe_ops.expert_weight_gradient_bytes`) holds the router's input and logits' gradient
and, per routed row, the experts' fc1 input and output gradient and fc2's input and output gradient. The first
stage's embedding mask counts in its rank's M_B, which W holds none of (:func:`rank_shares`; until 2026-12-02 it
was scaled by a layer's M_W / M_B, 16-fold under full recompute).

Recomputation: ``selective`` drops only the attention core, which no weight GEMM reads, so M_W is the
same. ``full`` keeps the layer's input alone (M_B = 2·s·b·h, /t with SP) and I rematerialises the layer from
it; the ZB authors' Megatron runs that rerun inside Megatron's reentrant ``CheckpointFunction.backward``,
whose inner backward hands each linear's rematerialised input and output gradient to ``WeightGradStore``
as it would without recompute: M_W is the same s·b·h·(8 + 24/t) bytes, held until W — 16 times M_B at t = 1,
so I adds memory. The checkpoint itself is the function's saved input, freed when its backward (I) returns;
no W reads it. Until 2026-12-02 I released it all under full recompute (M_W taken as 0)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

import numpy as np

from archsim.workload.transformer import TransformerConfig, layer_widths

SPLIT_SCHEDULES = ("zb-h1", "zb-h2", "interleaved-zb", "zb-v", "dualpipev")  # I and W apart
Front = tuple[tuple[int, int], ...]  # (M_B, M_W-only) counts of a walk's steps: step_front


@lru_cache(maxsize=4096)  # a planned search's rank sizing asks again and again for the same shapes
def weight_gradient_bytes(c: TransformerConfig, micro_batch: int, tp: int, sequence_parallel: bool,
                          etp: int | None = None, ep: int | None = None) -> float:
    """M_W: bytes one layer holds for one micro-batch between its I and its W (module docstring), in every
    recompute mode: s·b·(4·h + 4·h(/t with SP) + 2·(qkv + attention + 2 or 3 × ffn widths per rank)); a mixture's
    MLP at expert-TP ``etp`` (None: TP) and EP ``ep`` (None: a load imbalance not bounded by EP) as
    :func:`~archsim.training.moe_ops.expert_weight_gradient_bytes` counts it."""
    w = layer_widths(c, tp)
    if c.moe:  # the attention's half of the dense count: proj's output gradient, QKV's input, QKV's and proj's
        from archsim.training.moe_ops import expert_weight_gradient_bytes, routing_tokens  # moe_ops reads parallel

        attention = 2 * c.hidden + 2 * c.hidden / (tp if sequence_parallel else 1) + 2 * (w.qkv + w.attention)
        local = routing_tokens(c, micro_batch, tp, sequence_parallel)
        return c.seq * micro_batch * (attention + expert_weight_gradient_bytes(c, tp, sequence_parallel, local, etp, ep))
    # proj's and fc2's output gradients (whole) and QKV's and fc1's inputs (sequence-split under SP)
    replicated = 4 * c.hidden + 4 * c.hidden / (tp if sequence_parallel else 1)
    split = 2 * (w.qkv + w.attention + (3 if w.gated else 2) * w.ffn)
    return c.seq * micro_batch * (replicated + split)


def in_flight(order) -> list[int]:
    """Per rank: the most micro-batch chunks run forward and not yet backward (B or I) at once — the walk with
    I releasing all (read from the order's columns: no action objects made)."""
    return [int(x) for x in order_held_peaks(order, 0.0)]


def held_steps(kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """After each action of one rank (kind codes of :data:`archsim.sim.builder.CODE`): micro-batch chunks
    holding M_B (forward run, neither B nor I yet) and those holding M_W only (I run, W not yet)."""
    from archsim.sim.builder import CODE  # here: `search --help` imports this module, not the simulator

    forward = (kinds == CODE["F"]).astype(np.int64)
    i, w, b = (kinds == CODE[k] for k in "IWB")
    return np.cumsum(forward - b - i), np.cumsum(i.astype(np.int64) - w)


def order_held_peaks(order, held: float | Sequence[float]) -> list[float]:
    """Per rank of ``order``: the most held at once, in units of one micro-batch's M_B on that rank — F +1,
    I −(1 − ``held``), W −``held``, B −1; ``held`` one M_W / M_B for every rank or one per rank. Without I
    and W actions (or ``held`` 0) the in-flight count of :func:`in_flight`."""
    kinds = order.columns.kind
    bounds = order.columns.bounds.tolist()
    shares = [held] * (len(bounds) - 1) if isinstance(held, float | int) else list(held)
    out = []
    for (x, y), share in zip(pairwise(bounds), shares, strict=True):
        full, partial = held_steps(kinds[x:y])
        out.append(float(np.max(full + share * partial, initial=0.0)))
    return out


def walk_steps(kinds: np.ndarray) -> tuple[Front, Front, Front]:
    """What :func:`walk_peaks` reads of one rank's actions, whatever its M_W / M_B and gain: the chunks holding M_B
    and M_W only after each action (:func:`held_steps`), and the same just before each I and each B — each as its
    :func:`step_front`."""
    from archsim.sim.builder import CODE

    full, partial = held_steps(kinds)
    full_before, partial_before = np.concatenate(([0], full[:-1])), np.concatenate(([0], partial[:-1]))
    i, b = kinds == CODE["I"], kinds == CODE["B"]
    return step_front(full, partial), step_front(full_before[i], partial_before[i]), \
        step_front(full_before[b], partial_before[b])


def step_front(full: np.ndarray, partial: np.ndarray) -> Front:
    """The (M_B, M_W-only) counts of the steps no other step matches or exceeds in both: f + held·q peaks on one of
    them for every held ≥ 0, in floating point too (rounding is monotone), so a walk is read off a few pairs instead
    of all its steps — a planner sizing ranks reads each published order's walk many times."""
    front: list[tuple[int, int]] = []
    for f, q in sorted(set(zip(full.tolist(), partial.tolist(), strict=True)), reverse=True):
        if not front or q > front[-1][1]:  # f falls along the list; a pair is kept only with more q than any before
            front.append((f, q))
    return tuple(front)


def walk_peaks(kinds: np.ndarray, held: float, gain: float) -> tuple[float, float]:
    """One rank's (most held between actions, most held when a backward starts its last layer or first), in
    units of M_B: the walk of :func:`order_held_peaks`, and before each B or I the value there — plus ``gain``
    before an I, the M_W − M_B of all but the stage's last-run layer (:func:`rank_gains`). Recomputation's
    working set exists only in a backward, so it adds to the second alone. ``held`` ≥ 0 (a share of bytes)."""
    return front_peaks(walk_steps(kinds), held, gain)


def front_peaks(fronts: tuple[Front, Front, Front], held: float, gain: float) -> tuple[float, float]:
    """:func:`walk_peaks` read off a rank's :func:`walk_steps`."""
    between, before_i, before_b = fronts
    back = [0.0, *[f + held * q + gain for f, q in before_i], *[f + held * q for f, q in before_b]]
    return float(max([0.0, *[f + held * q for f, q in between]])), float(max(back))


def order_walk_peaks(order, held: Sequence[float], gains: Sequence[float]) -> list[tuple[float, float]]:
    """:func:`walk_peaks` of each rank of ``order`` (``held`` and ``gains`` one per rank)."""
    kinds = order.columns.kind
    bounds = order.columns.bounds.tolist()
    return [walk_peaks(kinds[x:y], f, g) for (x, y), f, g in zip(pairwise(bounds), held, gains, strict=True)]


def rank_gains(layer_held: float, layer_kept: float, edges: Sequence[float], counts: Sequence[int],
               ranks: Sequence[Sequence[int]]) -> list[float]:
    """Per rank, in its M_B: what an I has added when it reaches its stage's first layer (last run), the n − 1
    layers before it having traded M_B for M_W — (n − 1)·(M_W − M_B) of a chunk of n layers (the rank's mean), 0
    where M_W ≤ M_B (the peak is then the I's start). That layer's own M_W is made inside the working set, so
    not counted beside it. ``edges``: each rank's other bytes in its M_B (embedding, head), a micro-batch's."""
    return [rank_gain(layer_held, layer_kept, edge, sum(counts[j] for j in mine), max(len(mine), 1))
            for mine, edge in zip(ranks, edges, strict=True)]


def rank_gain(layer_held: float, layer_kept: float, edge: float, layers: int, chunks: int) -> float:
    """:func:`rank_gains` of one rank holding ``layers`` layers over ``chunks`` chunks, ``edge`` its other bytes."""
    kept = layers * layer_kept + edge
    return max(layers / chunks - 1, 0) * max(layer_held - layer_kept, 0.0) * chunks / kept if kept else 0.0


def published_held_peaks(schedule: str, p: int, m: int, v: int, held: float | Sequence[float]) -> list[float]:
    """:func:`order_held_peaks` of a published split order (:data:`SPLIT_SCHEDULES`) with ``p`` ranks, ``m``
    micro-batches and ``v`` chunks per rank, for searches: its walk, which stops growing by m = 3p (checked by
    brute force in the tests), read at min(m, 3p); ``held`` as there."""
    steps = _published_steps(schedule, p, min(m, 3 * p), v)
    shares = [held] * len(steps) if isinstance(held, float | int) else list(held)
    return [float(np.max(full + share * partial, initial=0.0)) for (full, partial), share in zip(steps, shares,
                                                                                                   strict=True)]


def published_walk_peaks(schedule: str, p: int, m: int, v: int, held: Sequence[float],
                         gains: Sequence[float], ranks: Sequence[int] | None = None) -> list[tuple[float, float]]:
    """:func:`order_walk_peaks` of a published split order, read at min(m, 3p) as :func:`published_held_peaks`;
    of ``ranks`` alone when given (``held`` and ``gains`` then one per rank listed)."""
    steps = published_walk_fronts(schedule, p, m, v)
    return [front_peaks(steps[r], f, g) for r, f, g in zip(range(p) if ranks is None else ranks, held, gains,
                                                            strict=True)]


def published_walk_fronts(schedule: str, p: int, m: int, v: int) -> tuple[tuple[Front, Front, Front], ...]:
    """:func:`walk_steps` of each rank of a published split order, read at min(m, 3p) as :func:`published_held_peaks`
    (for :func:`front_peaks`)."""
    return _published_walk_steps(schedule, p, min(m, 3 * p), v)


@lru_cache(maxsize=1024)  # a step front is a few pairs a rank
def _published_walk_steps(schedule: str, p: int, m: int, v: int) -> tuple[tuple[Front, Front, Front], ...]:
    """:func:`walk_steps` of each rank of a published order, kept: a planner sizing ranks walks one order many
    times with other shares."""
    order = _published_order(schedule, p, m, v)
    kinds = order.columns.kind
    return tuple(walk_steps(kinds[x:y]) for x, y in pairwise(order.columns.bounds.tolist()))


@lru_cache(maxsize=64)
def _published_order(schedule: str, p: int, m: int, v: int):
    from archsim.policies.stage_orders import published_order

    return published_order(schedule, p, m, v)


@lru_cache(maxsize=256)
def _published_steps(schedule: str, p: int, m: int, v: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    from archsim.policies.stage_orders import published_order

    order = published_order(schedule, p, m, v)
    kinds = order.columns.kind
    return tuple(held_steps(kinds[x:y]) for x, y in pairwise(order.columns.bounds.tolist()))


def chunk_in_flight(peak: float, chunks: int) -> float:
    """Micro-batches in flight on each of a rank's ``chunks`` model chunks when ``peak`` chunk-forwards
    await their backward: their mean (at least 1), so the rank's activations are ``peak`` chunks' under an
    even split — interleaved 1F1B's first rank holds (v − 1)p + 2(p − 1) + 1 chunks, Narayanan et al. 2021's
    and Korthikanti et al. 2022's 1 + (p − 1)/(pv) times 1F1B's p stages' worth, not the nearest multiple of v."""
    return max(peak / chunks, 1.0)


def rank_shares(share: float, layer_kept: float, first_kept: float, counts: Sequence[int],
                ranks: Sequence[Sequence[int]]) -> list[float]:
    """M_W / M_B of one micro-batch on each rank (``ranks`` listing its stages, ``counts[j]`` layers in stage j),
    bytes: ``share`` (a layer's M_W / M_B) of its layers' ``layer_kept`` each over those plus, with the first
    stage, ``first_kept`` that I frees and no W reads (the embedding's mask) — scaling that by a layer's share
    overcounted it (16-fold under full recompute at t = 1)."""
    return [rank_share(share, layer_kept, first_kept if 0 in mine else 0.0, sum(counts[j] for j in mine))
            for mine in ranks]


def rank_share(share: float, layer_kept: float, first_kept: float, layers: int) -> float:
    """:func:`rank_shares` of one rank holding ``layers`` layers (``first_kept``: 0 off the first stage)."""
    kept = layers * layer_kept
    return share * kept / (kept + first_kept) if kept else 0.0


__all__ = ["SPLIT_SCHEDULES", "chunk_in_flight", "front_peaks", "held_steps", "in_flight", "order_held_peaks", "order_walk_peaks",
           "published_held_peaks", "published_walk_fronts", "published_walk_peaks", "rank_gain", "rank_gains", "rank_share", "rank_shares", "step_front", "walk_peaks",
           "weight_gradient_bytes"]
