"""LayerPipe Algorithm 1 (004_2cd4e01df0d40184.txt, §III-C): balanced stages by borrowing δ.

Each layer's work splits into a fixed part (F + G, immovable) and a flexible part (δ, which may
run on the processor of layer l + 1, where its input δˡ is produced). Layers are visited in
reverse; each processor is filled up to the target T_p = T_tot / N_p. When a δ does not fit in
the current processor's idle time it is split by operational parallelism into δ″ (stays on the
current processor, "borrowed") and δ′ (goes to the next processor, normally with the layer's
fixed part; see the third note).
δ′ and δ″ are real sub-GEMMs costed by the cost model: the split searches every split axis
(δ's output channels, its reduction over the layer's output channels, and its rows — the batch's
input pixels) for the largest δ″ that fits, so a fold that only partly fits is never counted as a
linear share. If more than N_p processors would be needed, T_p grows by α and the walk restarts.

Two corrections to the printed pseudocode, both documented:
* when a fixed part moves to a new processor (line 27), T_idle is reset to T_p before the fixed
  part is subtracted (line 30); the printed code keeps the old processor's idle time;
* processors are counted from 0, so the restart test is p_idx ≥ N_p (line 32 reads p_idx > N_p).

A third note, on accounting (the walk's placement is the paper's): δ′ opens the next processor
(T_idle = T_p − δ′), and if the fixed part then does not fit in that idle time it opens yet
another one, so δ′ runs on a processor without its layer's weights. Such a δ′ is borrowed like a
δ″: marked so, and its bytes — its own part of the split, the complement of δ″'s
(:meth:`DeltaCoster.split_d1_bytes`) — counted as additional communication the same way. A piece
split along the reduction yields partial sums of all of δ: they cross once, counted in its
``extra_bytes`` only (never again as a result sent to the producer). When both pieces are
borrowed (a stranded δ′ and its δ″, on two processors), one piece's partial sums cross (δ″'s, to
δ′'s processor) and the sum is a borrowed δ's result (sent back only to a producer sitting with
the layer); on one processor, none cross. A whole δ
borrowed by the next processor receives its layer's weights likewise, and its result's bytes come from
the same lowering (:func:`borrowed_delta_bytes`). A δ without GEMMs (elementwise, pool, batch-norm) moves
nothing in ``paper`` mode, as LayerPipe counts only conv/fc δs; in ``exact`` mode the same rule counts its
result and the saved tensors it reads (:func:`archsim.lowering.vector_delta_bytes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from archsim.choices.partitions import BORROW_PAPER, LAYERPIPE_ALPHA, LAYERPIPE_BORROW, MAX_ALPHA
from archsim.errors import InputError
from archsim.partition.coster import DeltaCoster, borrowed_delta_bytes
from archsim.partition.memo import per_profile
from archsim.partition.profile import LayerProfile
from archsim.partition.result import (
    Partition,
    PlacedOp,
    Stage,
    borrowed_deltas,
    mandatory_bytes,
    placed_ops,
)
from archsim.split_axis import SPLIT_AXES, SplitAxis, split_axes


@dataclass(frozen=True)
class _Split:
    d1: float
    d2: float
    axis: SplitAxis
    part: int


def best_split(coster: DeltaCoster, index: int, budget: float, axes=SPLIT_AXES) -> _Split | None:
    """The δ split with the smallest δ′ among those whose δ″ fits in ``budget`` cycles.

    Along each axis δ″'s cycles grow monotonically with its share, so the largest share that fits
    is a search (:meth:`DeltaCoster.fitting_split`: a bisection of per-axis cost tables or the
    closed form inverted, built once per layer and axis, with the analytic engine; a binary search
    otherwise); the axes are then compared by δ′ cycles (ties: the first axis in ``axes``). Costs
    come from integer arithmetic; the split's ops and bytes are built only for the final placement.
    """
    found = _best_split(coster, index, budget, axes)
    return None if found is None else _Split(*found)


def _best_split(coster: DeltaCoster, index: int, budget: float, axes) -> tuple[float, float, SplitAxis, int] | None:
    """:func:`best_split` as a plain (δ′ cycles, δ″ cycles, axis, part) tuple: the walks' hot path."""
    best: tuple[int, int, SplitAxis, int] | None = None
    for axis in axes:
        part, d1, d2 = coster.fitting_split(index, axis, budget)
        if part and (best is None or d1 < best[0]):
            best = (d1, d2, axis, part)
    if best is None:
        return None
    return float(best[0]), float(best[1]), best[2], best[3]


def layerpipe_partition(profile: LayerProfile, processors: int, *, coster: DeltaCoster | None = None,
                        alpha: float = LAYERPIPE_ALPHA, max_rounds: int = 100_000, axes=SPLIT_AXES,
                        search: str = "gallop", borrow: str = BORROW_PAPER) -> Partition:
    """Run Algorithm 1 (with the two corrections in the module docstring) on ``processors``.

    ``borrow="paper"`` (default) keeps every δ move the walk makes; ``"gainful"`` then sends a moved δ
    back whole to its layer's processor wherever that does not raise the iteration (:func:`keep_gainful`).

    ``coster`` costs δ splits; None: the array model's coster of the profile's own lowered layers
    (:meth:`DeltaCoster.of`), and no splits for a profile without them (costs in seconds).

    The paper relaxes T_p ← α·T_p until the walk fits, i.e. it finds the least k with
    T_p = α^k·T_tot/N_p feasible. ``search="linear"`` steps k = 0, 1, 2, … as printed;
    ``"gallop"`` (default) finds the same k with O(log k) walks — k = 1, 2, 4, … then bisection —
    which is exact because a larger target never needs more processors (tested against linear).
    """
    if processors <= 0:
        raise InputError(f"processors must be positive, got {processors}", field="processors")
    if not 1.0 < alpha <= MAX_ALPHA:  # NaN too
        raise InputError(f"alpha must be > 1 and <= {MAX_ALPHA:g}, got {alpha}", field="alpha")
    if search not in ("gallop", "linear"):
        raise InputError(f"unknown search {search!r}; choose gallop or linear", field="search")
    if borrow not in LAYERPIPE_BORROW:
        raise InputError(f"unknown borrow {borrow!r}; choose {' or '.join(LAYERPIPE_BORROW)}", field="borrow")
    axes = split_axes(axes)  # "channels,rows" as --split-axes gives it, or names
    if coster is None:
        coster = DeltaCoster.of(profile)
    base = float(profile.total.sum()) / processors
    walks: dict[int, bool] = {}  # relaxation k → whether its walk needs at most `processors`

    def fits(k: int) -> bool:
        if k > max_rounds:
            raise InputError(f"no balanced schedule after {max_rounds} relaxations", field="alpha")
        if k not in walks:
            walks[k] = walk(profile, coster, base * alpha**k, axes, place=False, limit=processors)[1] <= processors
        return walks[k]

    if search == "linear":
        rounds = 0
        while not fits(rounds):
            rounds += 1
    elif fits(0):
        rounds = 0
    else:
        low, high = 0, 1  # invariant: low infeasible
        while not fits(high):
            low, high = high, high * 2
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if fits(mid) else (mid, high)
        rounds = high
    target = base * alpha**rounds
    notes = (f"target T_p = {target:.6g} {profile.unit} after {rounds} relaxation(s) by alpha = {alpha}",)
    placed = walk(profile, coster, target, axes)[0]
    plan = to_partition(profile, coster, placed, notes)
    if borrow == BORROW_PAPER:
        return plan
    kept, returned = keep_gainful(profile, placed)
    if not returned:
        return plan
    gainful = to_partition(profile, coster, kept, notes + (
        f"borrow gainful: the δ of {', '.join(profile.names[k] for k in returned)} back on its layer's processor",))
    # the loads compared in keep_gainful are the stages' op sums; a plan whose stage totals round otherwise
    # (costs in seconds) must still never be slower than the paper's
    return gainful if gainful.max_stage_cost <= plan.max_stage_cost else plan


@per_profile
def _layer_costs(profile: LayerProfile) -> tuple[list[float], list[float], list[float], list[float]]:
    """forward, weight_grad, delta and fixed as lists of floats: what the walks read per layer,
    converted once per profile (not once per walk)."""
    return tuple(np.asarray(x, dtype=float).tolist()
                 for x in (profile.forward, profile.weight_grad, profile.delta, profile.fixed))


class OpRank:
    """An op's place in a stage's order, as the walk's tuples carry it: its layer's fixed part (F, G), then its
    δ, whole (D) or split (D1, D2). From D on (rank ≥ OpRank.D) an op is a δ, the part Algorithm 1 may move.
    Plain ints, not an IntEnum, which made a partition ~30% slower (its tuples are sorted and compared)."""

    F, G, D, D1, D2 = range(5)


# An op as the walk places it: (layer index, OpRank, kind, cycles, split axis, split part); to_partition
# makes PlacedOps of them once the processors are known.
_Placed = tuple[int, int, str, float, "SplitAxis | None", int]


def walk(profile: LayerProfile, coster: DeltaCoster | None, target: float, axes, place: bool = True,
         limit: int | None = None) -> tuple[list[list[_Placed]], int]:
    """One pass of step 3: returns ops per processor (processor 0 holds the last layers) and their
    count; with ``place`` False only the count (the relaxation search needs nothing else), and
    with a ``limit`` the walk stops once the count exceeds it. ``target``: T_p in the profile's cycles.
    Public: the counting and placing walks are checked to agree."""
    procs: list[list[_Placed]] = [[]]
    count, used = 1, False  # processors opened; whether the latest one holds an op yet
    stop = math.inf if limit is None or place else limit  # counts only grow: one above `stop` is final
    idle = target
    forward, weight_grad, delta, fixed_of = _layer_costs(profile)
    for index, flex, fixed in zip(range(len(delta) - 1, -1, -1), reversed(delta), reversed(fixed_of)):
        if flex > 0:
            if flex < idle:
                if place:
                    procs[-1].append((index, OpRank.D, "D", flex, None, 0))
                used = True
                idle -= flex
            else:
                split = _best_split(coster, index, idle, axes) if coster is not None else None
                if split is not None:
                    d1, d2, axis, part = split
                    if place:
                        procs[-1].append((index, OpRank.D2, "D2", d2, axis, part))
                        procs.append([(index, OpRank.D1, "D1", d1, axis, part)])
                    count += 1  # δ″ fills the current processor, δ′ opens the next
                    idle = target - d1
                else:
                    if place:
                        procs.append([(index, OpRank.D, "D", flex, None, 0)])
                    count += 1 if used else 0  # an empty processor is dropped at the end
                    idle = target - flex
                used = True
        if fixed > idle:
            if place:
                procs.append([])
            count += 1 if used else 0
            idle = target  # correction: a new processor starts with its whole target idle
            if count > stop:
                break
        if place:
            procs[-1] += ((index, OpRank.F, "F", forward[index], None, 0),
                          (index, OpRank.G, "G", weight_grad[index], None, 0))
        used = True
        idle -= fixed
    if not place:
        return [], count
    procs = [ops for ops in procs if ops]
    return procs, len(procs)


def keep_gainful(profile: LayerProfile, placed: list[list[_Placed]]) -> tuple[list[list[_Placed]], tuple[int, ...]]:
    """``placed`` (as :func:`walk` returns it) with moved δs sent back whole to their layer's processor
    where that leaves the slowest processor's load (the iteration, in the profile's unit) no higher, and
    the indices of the layers whose δ went back.

    Algorithm 1 places a δ (lines 15–17) before it knows whether the layer's fixed part fits (line 26);
    when the fixed part then opens the next processor, the δ stays behind, borrowed, whether or not the
    move shortens the slowest processor. Here the lending processors are visited in forward order
    (the first layers' first); each one's moved δs go home together, or else one by one, each kept only
    if the largest load does not grow. A δ split in two (δ′, δ″) goes home as the whole δ. Guarantees:
    the layers' processors (so the mandatory traffic) are the walk's; the iteration is at most the
    walk's, and at most that of the walk's layer split with every δ at home (borrowing only runs from a
    processor to the next, so the forward visit can always send everything home until the iteration
    is that low); the additional traffic never grows (a layer with its whole δ at home adds none).
    A processor left with nothing is dropped."""
    procs = [list(ops) for ops in placed]
    home = layer_processors(procs)
    delta = _layer_costs(profile)[2]
    lent: dict[int, set[int]] = {}
    for p, ops in enumerate(procs):
        for op in ops:
            if op[1] >= OpRank.D and home[op[0]] != p:
                lent.setdefault(home[op[0]], set()).add(op[0])

    def peak(trial: list[list[_Placed]]) -> float:
        return max(math.fsum(op[3] for op in ops) for ops in trial)

    def sent_home(trial: list[list[_Placed]], layers: set[int]) -> list[list[_Placed]]:
        out = [[op for op in ops if not (op[1] >= OpRank.D and op[0] in layers)] for ops in trial]
        for k in layers:
            out[home[k]].append((k, OpRank.D, "D", delta[k], None, 0))
        return out

    returned: list[int] = []
    for lender in sorted(lent, reverse=True):  # the walk's last processor holds the first layers
        layers = sorted(lent[lender])
        for group in [set(layers)] + ([{k} for k in layers] if len(layers) > 1 else []):
            if group <= set(returned):
                continue
            trial = sent_home(procs, group)
            if peak(trial) <= peak(procs):
                procs, returned = trial, returned + sorted(group - set(returned))
                if set(layers) <= set(returned):
                    break
    return [ops for ops in procs if ops], tuple(sorted(returned))


def layer_processors(placed: list[list[_Placed]]) -> dict[int, int]:
    """Layer index → its processor, as a position in ``placed``: the one holding its fixed part (F, G, its
    weights), wherever its δ runs. The one map :func:`keep_gainful` and :func:`to_partition` read."""
    return {op[0]: p for p, ops in enumerate(placed) for op in ops if op[2] == "F"}


def to_partition(profile: LayerProfile, coster: DeltaCoster | None, placed: list[list[_Placed]],
                 notes) -> Partition:
    """The Partition of ``placed`` (ops per processor as :func:`walk` returns them, processor 0 holding the
    last layers; cycles): stages, their ops and the mandatory and additional traffic in bytes. Kept apart
    from the walk so the traffic count can be checked on placements the walk itself never makes."""
    forward_order = list(reversed(placed))
    names = profile.names
    home = {names[k]: proc for k, proc in layer_processors(forward_order).items()}  # layer name → processor
    index = {name: k for k, name in enumerate(names)}
    layers_of: list[list[str]] = [[] for _ in forward_order]
    for name in names:
        if name in home:
            layers_of[home[name]].append(name)
    stages = []
    unsplit, borrowed_delta = placed_ops(profile), borrowed_deltas(profile)  # shared: most ops are unsplit
    for proc, ops in enumerate(forward_order):
        marked = []
        for k, rank, kind, cycles, axis, part in sorted(ops, key=itemgetter(0, 1)):
            name = names[k]
            if rank < OpRank.D:  # F, G
                marked.append(unsplit[k][rank])
            elif kind == "D":
                marked.append(borrowed_delta[k] if home[name] != proc else unsplit[k][OpRank.D])
            else:  # D1, D2: borrowed off the processor of the layer's fixed part (D1 when stranded)
                borrowed = home[name] != proc
                extra = _split_bytes(coster, k, kind, axis, part)[1] if borrowed else 0
                marked.append(PlacedOp(name, kind, cycles, borrowed, extra, axis, part))  # positional: a hot loop
        stages.append(Stage(proc, tuple(layers_of[proc]), tuple(marked)))
    stage_of = dict(home)

    def with_producer(k: int) -> bool:
        """Whether a layer feeding layer k sits with k's fixed part: a δ result made elsewhere must then
        come back, beyond the mandatory traffic (which carries it wherever the producer sits apart)."""
        producers = [p for p in (profile.lowered[k].layer.inputs if profile.lowered else
                                 ((profile.names[k - 1],) if k else ())) if p in index]
        return any(stage_of[p] == stage_of[names[k]] for p in producers)

    # stages of each layer's borrowed reduction pieces: both borrowed means neither is home to merge them
    reduction_stages: dict[str, dict[str, int]] = {}
    for stage in stages:
        for op in stage.ops:
            if op.borrowed and op.split_axis == "reduction":
                reduction_stages.setdefault(op.layer, {})[op.kind] = stage.index
    additional = 0
    for stage in stages:
        for op in stage.ops:
            if not op.borrowed:
                continue
            additional += op.extra_bytes
            k = index[op.layer]
            if op.split_axis == "reduction":
                # A reduction piece's result is partial sums of all of δ^{l-1}. One borrowed piece's travel
                # once, to the other's on the layer's stage, where l-1 reads the sum (mandatory traffic
                # carries it on if l-1 sits apart): its extra_bytes count them. With both pieces borrowed
                # (D1 stranded), D2's cross to D1's stage (in D2's extra_bytes), D1's stay there, and the
                # sum is a borrowed δ's result: it comes back only to a producer sitting with layer l.
                where = reduction_stages[op.layer]
                if op.kind == "D1" and "D2" in where:
                    out = _split_bytes(coster, k, op.kind, op.split_axis, op.split_part)[0]
                    additional -= out  # D1's partial sums stay: D2's are added to them here
                    if where["D2"] == stage.index:
                        additional -= out  # D2's too: both pieces run here, nothing crosses to merge
                    if with_producer(k):
                        additional += out  # the sum goes back to the producer on the layer's stage
                continue
            # A borrowed δ's (or split part's) result, part of δ^{l-1}, must reach the layer feeding
            # this one. If that layer sits with layer l, nothing else crosses there: additional traffic.
            if with_producer(k):
                additional += (borrowed_delta_bytes(profile)[k][0] if op.kind == "D" else
                               _split_bytes(coster, k, op.kind, op.split_axis, op.split_part)[0])
    return Partition("layerpipe", tuple(stages), mandatory_bytes(profile, stage_of), additional, notes=notes,
                     unit=profile.unit)


def _split_bytes(coster: DeltaCoster | None, index: int, kind: str, axis: SplitAxis | None,
                 part: int) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of a borrowed split piece (``kind`` D1 or D2) of the split giving
    ``part`` units to D2: each piece's own bytes, D1's the complement of D2's."""
    if axis is None or coster is None:
        return 0, 0
    return (coster.split_bytes if kind == "D2" else coster.split_d1_bytes)(index, axis, part)
