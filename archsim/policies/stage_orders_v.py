"""V-shaped schedules: two chunks per rank, stage r and stage 2p − 1 − r on rank r.

* ``zb-v``: the zero-bubble paper's handcrafted ZB-V (Qi et al., §6), as torch's
  ``ScheduleZBVZeroBubble`` orders it: rank r warms up with 2(p − r) − 1 chunk-0 forwards, then r
  pairs of chunk-1/chunk-0 forwards, then p − r rounds of chunk-1 F, I, W; the steady state runs
  chunk-0 F, I, W then chunk-1 F, I, W; the cool-down runs the input backwards first and the weight
  backwards last. It is computed for max(2p − 1, m) micro-batches and the extra ones are dropped.
  Zero bubble when T_F = T_B = T_W and T_comm = 0.
* ``dualpipev``: DeepSeek's DualPipe in its V form, as torch's ``ScheduleDualPipeV`` orders it
  (eight phases; needs m ≥ 2p). Its main phase pairs a forward of one chunk with a full backward of
  the other (torch's ``OVERLAP_F_B``); DualPipe overlaps one's computation with the other's
  communication. archsim runs the pair's two computations back to back on the rank (transfers
  already overlap computation), so the pair costs T_F + T_B + T_W.

Orders are :class:`~archsim.policies.actions.StageOrder` objects whose ``pairs`` mark the
overlapped F/B pairs (index of the pair's first action in its rank's list).
"""

from __future__ import annotations

from collections import defaultdict

from archsim.errors import InputError
from archsim.policies.actions import Action, StageOrder


def v_stages(p: int, rank: int) -> tuple[int, int]:
    """(chunk-0 stage, chunk-1 stage) of ``rank``: the V layout."""
    return rank, 2 * p - 1 - rank


def zb_v(p: int, m: int) -> StageOrder:
    n = max(2 * p - 1, m)
    ranks = [tuple(a for a in _zb_v_rank(p, n, r) if a.microbatch < m) for r in range(p)]
    return StageOrder("zb-v", tuple(ranks), 2 * p, m)


def _zb_v_rank(p: int, n: int, r: int) -> list[Action]:
    """Rank r's ZB-V actions over n micro-batches (torch's ScheduleZBVZeroBubble)."""
    first, second = v_stages(p, r)
    count: dict[tuple[int, str], int] = defaultdict(int)
    actions: list[Action] = []

    def add(stage: int, kind: str) -> None:
        actions.append(Action(stage, kind, count[(stage, kind)]))
        count[(stage, kind)] += 1

    for _ in range(2 * (p - r) - 1):
        add(first, "F")
    for _ in range(r):
        add(second, "F")
        add(first, "F")
    for _ in range(p - r):
        add(second, "F")
        add(second, "I")
        add(second, "W")
    while count[(second, "F")] < count[(first, "F")] or count[(first, "F")] < n:
        if count[(first, "F")] < n:
            add(first, "F")
        add(first, "I")
        add(first, "W")
        add(second, "F")
        add(second, "I")
        add(second, "W")
    weights = {first: count[(first, "I")], second: count[(second, "I")]}
    for _ in range(r):
        add(first, "I")
        add(second, "I")
    for _ in range(p - r):
        add(first, "I")
        actions.append(Action(first, "W", weights[first]))
        weights[first] += 1
    for stage in (second, first):
        actions += [Action(stage, "W", i) for i in range(weights[stage], count[(stage, "I")])]
    return actions


def dualpipe_v(p: int, m: int) -> StageOrder:
    if m < 2 * p:
        raise InputError(f"DualPipeV needs at least 2p = {2 * p} micro-batches, got {m}", field="microbatches")
    ranks, pairs = zip(*(_dualpipe_v_rank(p, m, r) for r in range(p)))
    return StageOrder("dualpipev", tuple(ranks), 2 * p, m, tuple(pairs))


def _dualpipe_v_rank(p: int, m: int, r: int) -> tuple[tuple[Action, ...], tuple[int, ...]]:
    """Rank r's DualPipeV actions and where its overlapped pairs start (torch's ScheduleDualPipeV)."""
    first, second = v_stages(p, r)
    forward: dict[int, int] = defaultdict(int)
    backward: dict[int, int] = defaultdict(int)
    pending: list[Action] = []  # weight backwards of split (I) backwards, oldest first
    actions: list[Action] = []
    paired: list[int] = []

    def add(stage: int, kind: str) -> None:
        if kind == "F":
            actions.append(Action(stage, "F", forward[stage]))
            forward[stage] += 1
            return
        actions.append(Action(stage, kind, backward[stage]))
        if kind == "I":
            pending.append(Action(stage, "W", backward[stage]))
        backward[stage] += 1

    def weight() -> None:
        if pending:
            actions.append(pending.pop(0))

    def overlap(forward_stage: int, backward_stage: int) -> None:
        paired.append(len(actions))
        add(forward_stage, "F")
        add(backward_stage, "B")

    for _ in range(2 * (p - r - 1)):
        add(first, "F")
    for _ in range(r + 1):
        add(first, "F")
        add(second, "F")
    for _ in range(p - r - 1):
        add(second, "I")
        weight()
        add(second, "F")
    for i in range(m - 2 * p + r + 1):
        if i == 0 and r == p - 1:  # not overlapped, to shorten the bubble
            add(first, "F")
            add(second, "B")
        else:
            overlap(first, second)
        overlap(second, first)
    for _ in range(p - r - 1):
        add(second, "B")
        overlap(second, first)
    split = False
    for i in range(r + 1):
        split = split or (i == (r + 1) // 2 and r % 2 == 1)
        add(second, "I" if split else "B")
        split = split or (i == (r + 1) // 2 and r % 2 == 0)
        add(first, "I" if split else "B")
    for _ in range(p - r - 1):
        weight()
        add(first, "I" if split else "B")
    for _ in range(r + 1):
        weight()
    return tuple(actions), tuple(paired)


__all__ = ["dualpipe_v", "v_stages", "zb_v"]
