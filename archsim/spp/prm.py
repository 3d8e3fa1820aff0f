"""Partition, replication and mapping by dynamic programming (SPP §IV-B), exactly the recurrence

    W(l, ξ, r, i) = min_{l′ < l, 1 ≤ r′ ≤ i − r} max{ W(l′, ξ − 1, r′, i − r),
                                                  M (d^f_{l′,l′+1} + d^b_{l′+1,l′}) / (r′ r b_{r′r}),
                                                  M Σ_{o=l′+1..l} (p^f_o + p^b_o) / r + A_{l′+1→l}(v_{i−r+1} → v_i) }

over devices v_1..v_V in a given order: the first l layers in ξ stages on v_1..v_i, the last stage
on the r devices v_{i−r+1}..v_i. A stage replicated on k devices pays a ring all-reduce
A = 2(k − 1) Σα / (k · min bandwidth among its devices); the channel between consecutive stages is
split across r′·r replica pairs at the least bandwidth between the two blocks, each pair a link of its own (the
paper's graph: an edge per GPU pair, §III-A). Times are in the
profile's unit (seconds or cycles), sizes in bytes, bandwidth in bytes per time unit.

``latency`` (a (V, V) matrix or one figure, in the time unit; 0, the default, is the paper's model): what each
send pays beside its bytes (``plan --links exact``, :func:`archsim.spp.topology.build_topology`). A channel's
micro-batch is then its forward and its backward send (each whose bytes are not 0), each paying the
largest latency between the two blocks, as the replica pairs send at once. ``links``
(:class:`~archsim.collectives.PairLinks`, ``plan --links exact``; None, the default, is the paper's A and b_{r′r}): a
stage's all-reduce is then :func:`~archsim.matrix_collectives.ring_allreduce_on` with them, train's collective price, in the
search as in the plan it reports — the search's tables hold that price of every stage's parameter bytes on
each distinct link a block of devices all-reduces over (:func:`_exact_allreduce`); and a channel's b_{r′r} is what
its replica pairs, sending at once, leave each other of the NICs and GPU links they share
(:meth:`~archsim.collectives.PairLinks.channel_bandwidth`), where the paper gives every pair its link whole.

``samples`` (the m samples of a micro-batch; None, the default, is the paper's model, ``plan --replication paper``):
each of a stage's r replicas takes whole samples (``plan --replication exact``, :func:`replica_seconds`), so a
stage's time is the micro-batch's × ⌈m/r⌉/m, and the search offers no stage more than m replicas (one more would
get no sample).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import numpy as np

from archsim.collectives import PairLinks
from archsim.errors import InputError
from archsim.jit import announce_compile
from archsim.matrix_collectives import channel_link, pair_latency, ring_allreduce_on
from archsim.numba_cache import njit, small_in_python
from archsim.partition.memo import per_profile
from archsim.partition.profile import LayerProfile
from archsim.ring_allreduce import ring_allreduce_time

# Inner steps of all levels up to which a process that has not loaded the kernel runs it as plain
# Python (numpy scalars; IEEE division as the kernel's error_model="numpy"): about as long as loading numba.
PYTHON_WORK = 500_000


@per_profile  # read by every PE schedule's stage_plans (plan --objective exact schedules hundreds)
def boundary_directions(profile: LayerProfile) -> tuple[np.ndarray, np.ndarray]:
    """Per layer l, the bytes crossing a cut between layers l and l + 1 in one micro-batch forward (d^f) and back
    (d^b); both 0 after the last layer. On a chain, d^f is l's activation and d^b the δ layer l + 1 sends. On a
    branching profile (``edges``) the layers are cut in their node order and every tensor a layer at or before
    l sends to a layer after l crosses the cut too (a residual's skip): d^f adds each such earlier producer's
    activation once, and d^b the gradient of each such tensor that layer l + 1 does not read (whose gradient
    its δ already holds), the tensor's size. Why: a skip cut by a stage boundary is sent like any other tensor."""
    activation = np.asarray(profile.activation_bytes, dtype=float)
    back = np.append(np.asarray(profile.delta_bytes[1:], dtype=float), 0.0)
    forward = activation.copy()
    if profile.edges is not None and len(activation) > 1:
        last_reader: dict[int, int] = {}
        for producer, consumer in profile.edge_pairs:
            last_reader[producer] = max(consumer, last_reader.get(producer, consumer))
        crossing = np.zeros(len(activation) + 1)  # Σ activations of the producers p ≤ l read after l
        for producer, reader in last_reader.items():
            crossing[producer] += activation[producer]
            crossing[reader] -= activation[producer]
        crossing = np.cumsum(crossing)[:-1]
        own = np.array([activation[l] if last_reader.get(l, l) > l else 0.0 for l in range(len(activation))])
        forward += crossing - own  # the earlier producers' tensors beside l's own
        read_next = np.array([sum(activation[p] for p in set(profile.producers(l + 1)))
                              for l in range(len(activation) - 1)] + [0.0])
        back[:-1] += (crossing - read_next)[:-1]  # crossing tensors layer l + 1 does not read
    forward[-1] = 0.0
    forward.flags.writeable = back.flags.writeable = False  # kept for the profile's life: no caller may change it
    return forward, back


def boundary_bytes(profile: LayerProfile) -> np.ndarray:
    """Per layer l, the bytes crossing between layers l and l + 1 in one micro-batch, both ways (d^f + d^b);
    0 after the last layer. A branching profile is cut in its (topological) node order, skips included
    (:func:`boundary_directions`)."""
    forward, back = boundary_directions(profile)
    return forward + back


def boundary_sends(profile: LayerProfile) -> np.ndarray:
    """Per layer l, the sends crossing between layers l and l + 1 in one micro-batch: one for d^f and one for
    d^b where their bytes are not 0 (0 after the last layer); each pays a link's latency."""
    forward, back = boundary_directions(profile)
    return (forward > 0).astype(float) + (back > 0)


def replica_seconds(seconds: float, replicas: int, samples: int | None = None) -> float:
    """What each of a stage's ``replicas`` runs of a micro-batch's ``seconds`` (any time unit): the SPP paper's
    seconds / r (§III-B, "evenly dividing input data"; ``samples`` None), or, each replica taking whole samples of
    the micro-batch's m ``samples``, seconds × ⌈m/r⌉ / m (cost linear in samples, as the paper's 1/r assumes); inf
    past m replicas, where one would get no sample (at most m replicas work)."""
    if samples is None:
        return seconds / replicas
    return seconds * math.ceil(samples / replicas) / samples if replicas <= samples else math.inf


def most_replicas(devices: int, samples: int | None = None) -> int:
    """The most replicas PRM offers a stage on ``devices`` GPUs: all of them (the paper), or m ``samples``."""
    return devices if samples is None else min(devices, samples)


@dataclass(frozen=True)
class PRMPlan:
    value: float
    stages: tuple[tuple[int, int], ...]  # (first layer, last layer + 1), 0-based
    replicas: tuple[int, ...]
    devices: tuple[tuple[int, ...], ...]  # device ids of each stage, in the given order


def stage_time(profile: LayerProfile, microbatches: int, first: int, last: int, devices: Sequence[int],
               bandwidth: np.ndarray, links: PairLinks | None = None, samples: int | None = None) -> float:
    """M Σ (p^f + p^b) / r + A for layers first..last−1 on ``devices`` (``links``: A as train prices it;
    ``samples``: / r is :func:`replica_seconds`' × ⌈m/r⌉/m, inf past m replicas)."""
    r = len(devices)
    compute = replica_seconds(microbatches * float(sum(profile.forward[first:last])), r, samples) \
        + replica_seconds(microbatches * float(sum(profile.backward[first:last])), r, samples)
    if r == 1:
        return compute
    return compute + ring_allreduce_on(float(sum(profile.weight_bytes[first:last])), devices, bandwidth, links)


def channel_time(profile: LayerProfile, microbatches: int, boundary: int, before: Sequence[int],
                 after: Sequence[int], bandwidth: np.ndarray, latency=0.0, links: PairLinks | None = None) -> float:
    """M (d^f + d^b) / (r′ r b_{r′r}) between the stage ending at layer ``boundary`` and the next, plus M times
    each send's latency (module docstring); ``links``: b_{r′r} is what the replica pairs sharing a NIC or a GPU's
    link leave each other (:func:`~archsim.matrix_collectives.channel_link`), not the slowest pair's whole link."""
    slowest = channel_link(bandwidth, before, after, links)
    size = boundary_bytes(profile)[boundary - 1]
    sends = boundary_sends(profile)[boundary - 1]
    return microbatches * size / (len(before) * len(after) * slowest) \
        + microbatches * sends * pair_latency(latency, before, after)


def prm(profile: LayerProfile, order: Sequence[int], bandwidth: np.ndarray, microbatches: int,
        stages: int, latency=0.0, links: PairLinks | None = None, samples: int | None = None) -> PRMPlan:
    """𝒲(|S|) = min_r W(L, |S|, r, V) with its partition, replication and mapping."""
    n_layers, n_devices = len(profile), len(order)
    if not 1 <= stages <= min(n_layers, n_devices):
        raise InputError(f"stages must be within 1..{min(n_layers, n_devices)}, got {stages}", field="stages")
    order = tuple(order)

    @cache
    def W(l: int, xi: int, r: int, i: int) -> tuple[float, tuple]:
        block = order[i - r:i]
        if xi == 1:
            if r != i:
                return math.inf, ()
            return stage_time(profile, microbatches, 0, l, block, bandwidth, links, samples), (((0, l), r),)
        best: tuple[float, tuple] = (math.inf, ())
        for lp in range(xi - 1, l):
            tail = stage_time(profile, microbatches, lp, l, block, bandwidth, links, samples)
            if tail >= best[0]:
                continue
            for rp in range(1, i - r + 1):
                head, plan = W(lp, xi - 1, rp, i - r)
                if head >= best[0]:
                    continue
                comm = channel_time(profile, microbatches, lp, order[i - r - rp:i - r], block, bandwidth, latency,
                                    links)
                value = max(head, comm, tail)
                if value < best[0]:
                    best = (value, plan + (((lp, l), r),))
        return best

    value, plan = min((W(n_layers, stages, r, n_devices) for r in range(1, most_replicas(n_devices, samples) + 1)),
                      key=lambda x: x[0])
    W.cache_clear()
    if not plan:
        raise InputError("no feasible plan", field="stages")
    ends = np.cumsum([0, *(r for _, r in plan)])
    return PRMPlan(value, tuple(s for s, _ in plan), tuple(r for _, r in plan),
                   tuple(order[a:b] for a, b in pairwise(ends)))


def plan_value(profile: LayerProfile, microbatches: int, stages: Sequence[tuple[int, int]],
               devices: Sequence[Sequence[int]], bandwidth: np.ndarray, latency=0.0,
               links: PairLinks | None = None, samples: int | None = None) -> float:
    """𝒲 of an explicit plan (the objective PRM minimizes), for brute-force checks."""
    terms = [stage_time(profile, microbatches, a, b, d, bandwidth, links, samples)
             for (a, b), d in zip(stages, devices)]
    for n in range(len(stages) - 1):
        terms.append(channel_time(profile, microbatches, stages[n][1], devices[n], devices[n + 1], bandwidth,
                                  latency, links))
    return max(terms)


def phi(profile: LayerProfile, bandwidth: np.ndarray) -> float:
    """Lemma 2's Φ = max{p_max b_max, d_max} / Γ · (1/b_min − 1/b_max)."""
    links = bandwidth[~np.eye(len(bandwidth), dtype=bool)]
    b_min, b_max = float(links.min()), float(links.max())
    p_max, d_max = float(max(profile.total)), float(max(boundary_bytes(profile)[:-1], default=0.0))
    gamma = float(sum(profile.forward) + sum(profile.backward)) / len(bandwidth)
    return max(p_max * b_max, d_max) / gamma * (1 / b_min - 1 / b_max)


def prm_search_parts(layers: int, devices: int, max_stages: int,
                     links: PairLinks | None = None) -> dict[str, int]:
    """Bytes of every array :func:`prm_inputs` and :func:`prm_tables` hold on ``layers`` × ``devices`` up to
    ``max_stages`` stages, by part, known before any is built (``links``: the exact all-reduce's tables, else the
    paper's A). The levels' tables: W[ξ] (L+1)(V+1)² values of 8 B for each ξ ≤ S, and their choices (l′, r′)
    of 16 B for each ξ ≥ 2; the blocks' slowest links and largest latencies, two (V+1)³ tables of 8 B; the
    all-reduce tables exact[group, l′, l], 8 (L+1)² B per group — the paper's one group of zeros, else twice that
    at their peak (np.stack copies the list) and an upper bound, as the groups are only known once priced: group
    0 and one per block of 2 or more devices, V(V−1)/2 + 1; and the rest (8 B an entry): the (V+1)² tables group, inside, allreduce
    (twice with ``links``), the (L+1)² segment sums, the V² bandwidths and latencies in order, the vectors."""
    L, V, S = layers, devices, max_stages
    groups = V * (V - 1) // 2 + 1 if links is not None else 1
    square = (V + 1) ** 2
    return {
        "the levels' tables of values and choices": 8 * S * (L + 1) * square + 16 * (S - 1) * (L + 1) * square,
        "the links and latencies between blocks": 2 * 8 * (V + 1) ** 3,
        "the all-reduce tables": (2 if links is not None else 1) * 8 * groups * (L + 1) ** 2,
        "the other inputs": 8 * ((4 if links is not None else 3) * square + 2 * (L + 1) ** 2 + 2 * V * V
                                 + 2 * (L + 1) + 2 * L + (V + 1)),
    }


def prm_search_size(layers: int, devices: int, max_stages: int,
                    links: PairLinks | None = None) -> tuple[int, int]:
    """(inner steps, bytes) of :func:`prm_tables` on ``layers`` × ``devices`` up to ``max_stages`` stages, known
    before any table is built: each level ξ ≥ 2 tries (l′ < l) × (r, r′ ≤ i), about L²V³/4 steps; the bytes are
    every array's, :func:`prm_search_parts` summed (an upper bound with ``links``)."""
    L, V, S = layers, devices, max_stages
    return (S - 1) * L * L * V * V * V // 4, sum(prm_search_parts(L, V, S, links).values())


def prm_tables(profile: LayerProfile, order: Sequence[int], bandwidth: np.ndarray, microbatches: int,
               max_stages: int, latency=0.0, links: PairLinks | None = None,
               samples: int | None = None, on_level=None) -> list[PRMPlan]:
    """PRM for every stage count 1..max_stages at once (the same recurrence as :func:`prm`, tested equal). Tables
    W[ξ][l, r, i] over l ≤ L, r ≤ V (≤ m ``samples``), i ≤ V; each level is one numba kernel call. A stage count no
    plan reaches (every GPU a replica of at most m samples) is left out. ``on_level(ξ)``, if given, is called after
    each level ξ ≥ 2 is built (progress: each level is the same L²V³/4 steps, all built before any plan is read)."""
    return prm_plans(*prm_search(profile, order, bandwidth, microbatches, max_stages, latency, links, samples,
                                 on_level)[:2], order)


def prm_search(profile: LayerProfile, order: Sequence[int], bandwidth: np.ndarray, microbatches: int,
               max_stages: int, latency=0.0, links: PairLinks | None = None, samples: int | None = None,
               on_level=None) -> tuple[list[np.ndarray], list[np.ndarray], tuple]:
    """:func:`prm_tables`' levels W[ξ], their choices (l′, r′) and :func:`prm_inputs` (W[1] first)."""
    inputs = prm_inputs(profile, order, bandwidth, microbatches, latency, links, samples)
    tables, choice = [inputs[0]], list[np.ndarray]()  # W[ξ] and the (l′, r′) chosen at each level ξ ≥ 2
    inner, V = prm_search_size(len(profile), len(order), max_stages, links)[0], len(order)
    with small_in_python(prm_level, inner, PYTHON_WORK), np.errstate(divide="ignore", invalid="ignore"):
        if max_stages >= 2:
            announce_compile(prm_level, "SPP's PRM tables")
        for _xi in range(2, max_stages + 1):
            new, pick = prm_level(tables[-1], *inputs[1:], microbatches, most_replicas(V, samples))
            tables, choice = [*tables, new], [*choice, pick]
            if on_level is not None:
                on_level(_xi)
    return tables, choice, inputs


def prm_inputs(profile: LayerProfile, order: Sequence[int], bandwidth: np.ndarray, microbatches: int,
               latency=0.0, links: PairLinks | None = None, samples: int | None = None):
    """What every level of :func:`prm_tables` reads, and its first level W[1][l, r, i] (one stage):
    (W1, compute[r], seg_work[l′, l], seg_par[l′, l], allreduce[r, i] per parameter byte (the paper's A; 0 with
    ``links``), boundary bytes, between[r′, r, i] the slowest link between adjacent blocks (with ``links``: the bandwidth
    a split channel between them gets, :meth:`~archsim.collectives.PairLinks.channel_bandwidth`), boundary sends,
    lag[r′, r, i] the largest latency between adjacent blocks, group[r, i] and exact[group, l′, l], the
    all-reduce with ``links`` (:func:`_exact_allreduce`)); times in the profile's unit, bandwidths in bytes
    per that unit."""
    L, V = len(profile), len(order)
    b = bandwidth[np.ix_(order, order)]
    shared = links if links is not None and links.sends_on is not None else None  # a split channel's shared links
    lat = np.broadcast_to(np.asarray(latency, dtype=float), bandwidth.shape)[np.ix_(order, order)]
    work = np.concatenate([[0.0], np.cumsum(np.add(profile.forward, profile.backward))])
    params = np.concatenate([[0.0], np.cumsum(np.asarray(profile.weight_bytes, dtype=float))])
    size = boundary_bytes(profile)
    # slowest link inside the block of r devices ending at position i (1-based i), and between the
    # block of r' ending at i − r and the block of r ending at i.
    inside = np.full((V + 1, V + 1), np.inf)
    for i in range(1, V + 1):
        for r in range(1, i + 1):
            block = b[i - r:i, i - r:i]
            inside[r, i] = np.inf if r == 1 else block[~np.eye(r, dtype=bool)].min()
    between = np.full((V + 1, V + 1, V + 1), np.inf)  # [r', r, i]
    lag = np.zeros((V + 1, V + 1, V + 1))  # [r', r, i]
    for i in range(1, V + 1):
        for r in range(1, i):
            for rp in range(1, i - r + 1):
                between[rp, r, i] = b[i - r - rp:i - r, i - r:i].min()
                lag[rp, r, i] = lat[i - r - rp:i - r, i - r:i].max()
            if shared is not None:  # every block of senders ending at i − r at once
                between[1:i - r + 1, r, i] = shared.channel_bandwidths(order[:i - r][::-1], order[i - r:i], bandwidth)
    r_idx = np.arange(V + 1)
    # tail[l', l, r, i]: M Σ p / r + A for layers l'..l−1 on the r devices ending at i.
    seg_work = work[None, :] - work[:, None]  # [l', l]
    seg_par = params[None, :] - params[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        allreduce = np.where(r_idx[:, None] > 1, ring_allreduce_time(1.0, np.maximum(r_idx[:, None], 1), inside),
                             0.0)  # [r, i] per parameter byte
        compute = np.array([replica_seconds(microbatches, max(r, 1), samples) for r in range(V + 1)])  # [r]
    group, exact = _exact_allreduce(order, bandwidth, seg_par, links)
    if links is not None:
        allreduce = np.zeros_like(allreduce)  # the exact price replaces the paper's
    W = np.full((L + 1, V + 1, V + 1), np.inf)  # ξ = 1
    for l in range(1, L + 1):
        for r in range(1, most_replicas(V, samples) + 1):
            W[l, r, r] = compute[r] * work[l] + allreduce[r, r] * params[l] + exact[group[r, r], 0, l]
    return W, compute, seg_work, seg_par, allreduce, size, between, boundary_sends(profile), lag, group, exact


def _exact_allreduce(order: Sequence[int], bandwidth: np.ndarray, seg_par: np.ndarray,
                     links: PairLinks | None) -> tuple[np.ndarray, np.ndarray]:
    """group[r, i]: which all-reduce the block of r devices ending at position i pays, and exact[group, l′, l]
    its price of layers l′..l−1's parameter bytes: :func:`~archsim.matrix_collectives.ring_allreduce_on` with ``links``,
    the one price the plan reports, evaluated once per distinct (GPU count, link) of the blocks (a cluster has
    few); group 0 costs nothing (one device, or the paper's model, whose A stays allreduce[r, i] per byte)."""
    V = len(order)
    group = np.zeros((V + 1, V + 1), dtype=np.int64)
    tables = [np.zeros(seg_par.shape)]
    if links is None:
        return group, tables[0][None]
    seen: dict = {}
    for i in range(1, V + 1):
        for r in range(2, i + 1):
            block = order[i - r:i]
            key = (r, links.allreduce_link(block, bandwidth))
            if key not in seen:
                seen[key] = len(tables)
                tables.append(np.asarray(ring_allreduce_on(seg_par, block, bandwidth, links), dtype=float))
            group[r, i] = seen[key]
    return group, np.stack(tables)


def prm_plans(tables: Sequence[np.ndarray], choice: Sequence[np.ndarray], order: Sequence[int]) -> list[PRMPlan]:
    """The best plan of every stage count whose table reaches the last layer on the last device,
    read back from the levels' tables W[ξ] and their choices (l′, r′)."""
    L, V = tables[0].shape[0] - 1, len(order)
    plans: list[PRMPlan] = []
    for xi in range(1, len(tables) + 1):
        final = tables[xi - 1][L, :, V]
        r = int(np.argmin(final))
        value = float(final[r])
        if np.isfinite(value):
            plans.append(plan_at(choice, order, xi, L, r, V, value))
    return plans


def plan_at(choice: Sequence[np.ndarray], order: Sequence[int], xi: int, l: int, r: int, i: int,
            value: float) -> PRMPlan:
    """The plan W[ξ][l, r, i] holds (layers 0..l−1 in ξ stages on the first i devices, the last stage on r),
    read back from the levels' choices (l′, r′); ``value`` is its 𝒲."""
    stages, reps = list[tuple[int, int]](), list[int]()
    for level in range(xi, 1, -1):
        lp, rp = (int(x) for x in choice[level - 2][l, r, i])
        stages, reps, l, i, r = [*stages, (lp, l)], [*reps, r], lp, i - r, rp
    stages, reps = [(0, l), *stages[::-1]], [r, *reps[::-1]]
    ends = np.cumsum([0, *reps])
    return PRMPlan(value, tuple(stages), tuple(reps), tuple(tuple(order[a:b]) for a, b in pairwise(ends)))


@njit(cache=True, error_model="numpy")  # IEEE division: x / 0 is inf, as numpy gives
def prm_level(prev, compute, seg_work, seg_par, allreduce, size, between, sends, lag, group, exact,
              microbatches, most):  # pragma: no cover
    """One level ξ of the recurrence: for each (l, r, i), the least max(head, comm, tail) over
    l′ < l and r′ ≤ i − r, r and r′ at most ``most`` (:func:`most_replicas`), and its (l′, r′) — the first least in (l′, r′) row-major order, NaN
    first, as numpy's argmin picks; the arithmetic is written as the numpy expressions were."""
    n_l, n_v = prev.shape[0], prev.shape[1]
    new = np.full(prev.shape, np.inf)
    pick = np.zeros((n_l, n_v, n_v, 2), dtype=np.int64)
    for l in range(1, n_l):
        for r in range(1, min(n_v, most + 1)):
            for i in range(r + 1, n_v):
                if l < 2:
                    continue
                best = np.inf
                found = False
                best_lp, best_rp = 0, 0
                for lp in range(1, l):
                    tail = compute[r] * seg_work[lp, l] + allreduce[r, i] * seg_par[lp, l] \
                        + exact[group[r, i], lp, l]
                    for rp in range(1, min(i - r, most) + 1):
                        head = prev[lp, rp, i - r]
                        comm = microbatches * size[lp - 1] / (rp * r * between[rp, r, i]) \
                            + microbatches * sends[lp - 1] * lag[rp, r, i]
                        value = head if (head >= comm or math.isnan(head)) else comm
                        value = value if (value >= tail or math.isnan(value)) else tail
                        if not found or value < best or (math.isnan(value) and not math.isnan(best)):
                            best, best_lp, best_rp, found = value, lp, rp, True
                new[l, r, i] = best
                pick[l, r, i, 0] = best_lp
                pick[l, r, i, 1] = best_rp
    return new, pick
