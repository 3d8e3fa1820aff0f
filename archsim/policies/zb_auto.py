"""The zero-bubble paper's automatic scheduler: ZB-1p and ZB-2p (Qi et al., ICLR'24, §3.1).

A greedy heuristic places F, B (backward of the input, torch's ``I``) and W per stage under a
memory limit of k·p·M_B (k = 1: ZB-1p, k = 2: ZB-2p), as the authors' released heuristic does
(sail-sg/zero-bubble-pipeline-parallelism, ``auto_schedule.py``, which produced the paper's
Table 5):

1. Warm-up: every stage runs micro-batch 0's F; then stage j (from the last backwards) adds the
   forwards that fit — in memory and, depending on one switch, either before or just past the time
   the first gradient reaches it — each stage fewer than the stage before it; then micro-batch
   0's B runs from the last stage to the first.
2. Steady state, per micro-batch i: a stage runs its next F unless (one switch) it is already two
   ahead of the next stage and that F would delay the next stage's B; a stage runs F only if its
   successor does. Before an F or B that must wait for its input, pending Ws fill the wait — all
   that fit, plus (the other switch) one more if the resulting idle time stays within the largest
   idle time any stage has so far. The first stage runs all pending Ws once its forwards are done.
3. Every stage ends with its remaining Ws.

Each of the 2³ switch settings is tried; the order whose longest stage span is shortest wins
(ties: the first tried). Dependencies are timed with T_comm per hop, as in the paper. Arithmetic
is exact (times are scaled to integers when their decimals allow), so ties break as the authors'
integer profiles break them. The ILP refinement of §3.2 is not implemented
(:mod:`archsim.policies.zb_exact` finds the exact optimum of tiny instances instead).

Unequal memory: with per-stage memory limits that differ, the heuristic can place a stage's
forward before the previous stage has placed the same micro-batch's. The authors' code then times
it as if its input had arrived (unplaced end times read as 0) and fills no W before it; archsim
keeps those decisions, and the simulation of the resulting order, which enforces every
dependency, gives the true times. On unequal stage times the heuristic can also skip a forward
it never places again, or reach a backward before its forward; archsim drops such a switch
setting (as it drops one that runs out of memory) and refuses when all eight fail. On equal
stages neither happens.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from archsim.errors import InputError
from archsim.policies.actions import Action, StageOrder

F, B, W = 0, 1, 2
_NAMES = "FIW"


class _Infeasible(Exception):
    """This switch setting fails: memory does not fit, or (unequal stages) the order is incomplete."""


def _exact(values: list) -> tuple[list, float]:
    """Values (floats or Fractions) as integers over a common denominator (exact comparisons), else floats."""
    fractions = [v if isinstance(v, Fraction) else Fraction(repr(float(v))) for v in values]
    scale = 1
    for f in fractions:
        scale = scale * f.denominator // _gcd(scale, f.denominator)
    if scale <= 10**12:
        return [int(f * scale) for f in fractions], float(scale)
    return [float(v) for v in values], 1.0


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


class _Greedy:
    """One run of the heuristic under one switch setting; ``t[kind][stage][mb]`` are end times."""

    def __init__(self, p: int, m: int, cost: list[list], mem: list[list], limit: list, comm) -> None:
        self.p, self.m, self.cost, self.mem, self.limit, self.comm = p, m, cost, mem, limit, comm
        self.count = [[0] * p for _ in range(3)]
        self.end = [0] * p
        self.held = [0] * p
        self.idle = [0] * p
        self.max_idle = 0  # the largest idle time of any stage (idle times only grow)
        self.t: list[list[list]] = [[[None] * m for _ in range(p)] for _ in range(3)]
        self.order: list[list[Action]] = [[] for _ in range(p)]

    def ready_at(self, kind: int, j: int, i: int):
        """When the input of (kind, j, i) arrives from the neighbouring stage, or None if local."""
        if kind == F and j > 0:
            source = self.t[F][j - 1][i]
        elif kind == B and j < self.p - 1:
            source = self.t[B][j + 1][i]
        else:
            return None
        if source is None:  # see "unequal memory" in the module docstring
            return None
        return source + self.comm

    def put(self, j: int, kind: int) -> None:
        counts = self.count[kind]
        i = counts[j]
        memory = self.mem[kind][j]
        if self.held[j] + memory > self.limit[j] or (kind == B and self.count[F][j] <= i):
            raise _Infeasible
        cost = self.cost[kind][j]
        earliest = self.end[j] + cost
        arrival = self.ready_at(kind, j, i)
        finish = earliest if arrival is None or arrival + cost <= earliest else arrival + cost
        if finish > earliest and self.count[F][j] > 0:  # idle time after the stage's first forward
            self.idle[j] += finish - earliest
            self.max_idle = max(self.max_idle, self.idle[j])
        self.end[j] = finish
        self.t[kind][j][i] = finish
        self.held[j] += memory
        counts[j] = i + 1
        self.order[j].append(Action(j, _NAMES[kind], i))

    def pending_w(self, j: int) -> bool:
        return self.count[W][j] < self.count[B][j]

    def fill(self, j: int, arrival, greedy: bool) -> None:
        """Run pending Ws while the stage waits for an input arriving at ``arrival``."""
        if arrival is None:
            return
        while self.pending_w(j) and self.end[j] + self.cost[W][j] <= arrival:
            self.put(j, W)
        if self.pending_w(j) and self.end[j] < arrival and (arrival - self.end[j] > self.max_idle - self.idle[j]
                                                             or greedy):
            self.put(j, W)

    def make_room(self, j: int, kind: int) -> None:
        while self.held[j] + self.mem[kind][j] > self.limit[j]:
            if not self.pending_w(j):
                raise _Infeasible
            self.put(j, W)

    def warm_up(self, late_first_b: bool) -> None:
        p, cost, comm = self.p, self.cost, self.comm
        for j in range(p):
            self.put(j, F)
        extra = [0] * p
        last = self.t[F][p - 1][0] + cost[B][p - 1]
        for j in range(p - 2, -1, -1):
            held, busy = self.held[j], self.end[j]
            while self.count[F][j] + extra[j] < self.m and held + self.mem[F][j] <= self.limit[j]:
                if (busy + cost[F][j] > last + comm) if late_first_b else (busy >= last + comm):
                    break
                held += self.mem[F][j]
                busy += cost[F][j]
                extra[j] += 1
            last = max(busy, last + comm) + cost[B][j]
        for j in range(1, p):
            while extra[j] > 0 and extra[j] >= extra[j - 1] and self.count[F][j] + extra[j] < self.m:
                extra[j] -= 1
        for j in range(p):
            for _ in range(extra[j]):
                self.put(j, F)
        for j in range(p - 1, -1, -1):
            self.put(j, B)

    def wants_forward(self, j: int, prioritize_b: bool) -> bool:
        if self.count[F][j] >= self.m:
            return False
        if not (prioritize_b and j + 1 < self.p and self.count[F][j] >= self.count[F][j + 1] + 2):
            return True
        cost = self.cost
        successor_b = self.end[j + 1] + cost[F][j + 1] + cost[B][j + 1] + self.comm
        if self.end[j] >= successor_b:
            return False
        held, w_time, w_done = self.held[j] + self.mem[F][j], 0, 0
        while held > self.limit[j] and self.count[W][j] + w_done < self.count[B][j]:
            w_time += cost[W][j]
            held += self.mem[W][j]
            w_done += 1
        if self.end[j] + cost[F][j] + w_time <= successor_b:
            return True
        return successor_b - self.end[j] > self.max_idle - self.idle[j]

    def step(self, i: int, prioritize_b: bool, greedy: bool) -> None:
        p = self.p
        wanted = [self.wants_forward(j, prioritize_b) for j in range(p)]
        for j in range(p - 2, -1, -1):
            wanted[j] = wanted[j] and wanted[j + 1]
        for j in range(p):
            if wanted[j]:
                self.make_room(j, F)
                if j > 0:
                    self.fill(j, self.ready_at(F, j, self.count[F][j]), greedy)
                self.put(j, F)
        for j in range(p - 1, -1, -1):
            self.make_room(j, B)
            if j + 1 < p:
                self.fill(j, self.ready_at(B, j, i), greedy)
            if j == 0 and self.count[F][j] == self.m:
                while self.pending_w(j):
                    self.put(j, W)
            self.put(j, B)

    def run(self, late_first_b: bool, prioritize_b: bool, greedy: bool):
        self.warm_up(late_first_b)
        for i in range(1, self.m):
            self.step(i, prioritize_b, greedy)
        for j in range(self.p):
            if self.count[F][j] < self.m:
                raise _Infeasible
            while self.count[W][j] < self.m:
                self.put(j, W)
        return max(self.t[W][j][self.m - 1] - self.t[F][j][0] + self.cost[F][j] for j in range(self.p))


def zb_auto_order(forward, backward_input, backward_weight, comm: float, microbatches: int, memory_factor: float,
                  activation=None, weight_memory=None) -> StageOrder:
    """ZB-1p (memory_factor = 1) or ZB-2p (2) for per-stage costs; memory M_B, M_W per stage (default
    M_B = 1, M_W = 0). Every device gets the same limit, memory_factor · p · max M_B."""
    p, m = len(forward), microbatches
    if p <= 0 or m <= 0:
        raise InputError("the automatic schedule needs stages and micro-batches", field="stages")
    activation = list(activation) if activation else [1.0] * p
    weight_memory = list(weight_memory) if weight_memory else [0.0] * p
    values, _ = _exact([*forward, *backward_input, *backward_weight, comm])
    cost = [values[0:p], values[p:2 * p], values[2 * p:3 * p]]
    budget = Fraction(repr(float(memory_factor))) * p * max(Fraction(repr(float(a))) for a in activation)
    limits = [budget] * p  # one device budget, as the authors set max_mem
    mem_values, _ = _exact([*activation, *weight_memory, *limits])
    mb, mw, limit = mem_values[:p], mem_values[p:2 * p], mem_values[2 * p:]
    mem = [mb, [w - a for a, w in zip(mb, mw)], [-w for w in mw]]  # F holds M_B; B frees M_B − M_W; W the rest
    best = None
    for late_first_b, prioritize_b, greedy in itertools.product((True, False), repeat=3):
        run = _Greedy(p, m, cost, mem, limit, values[3 * p])
        try:
            span = run.run(late_first_b, prioritize_b, greedy)
        except _Infeasible:
            continue
        if best is None or span < best[0]:
            best = (span, run.order)
    if best is None:
        raise InputError(f"the zero-bubble heuristic finds no complete order within {memory_factor:g}·p·M_B for "
                         "these stages (it is built for equal stages); try zb-h1, zb-h2 or the exact search",
                         field="memory")
    published: dict[float, str] = {1: "zb-1p", 2: "zb-2p"}  # the paper's names (1.0 finds 1)
    name = published.get(memory_factor, f"zb-{memory_factor:g}p")
    return StageOrder(name, tuple(tuple(r) for r in best[1]), p, m)


__all__ = ["zb_auto_order"]
