"""Data-parallel backprop with per-layer gradient synchronization (000_0084ae54373056ee.txt §5.1).

One device's view of an iteration window: the forward F_1..F_L, the backward (δ ops D_L..D_2 and
weight-gradient ops G_L..G_1 in some order on the device), the synchronization S_l of each G_l's
gradient on the network (one transfer at a time; a ring all-reduce or parameter-server push/pull
of the layer's weight bytes), and the next iteration's forward, whose F_l needs S_l. The makespan
of that window is the figure of merit (Fig. 4). Policies:

* ``dp-wfbp``: wait-free backprop — conventional order (G_l, then D_l, layer L down to 1), each
  synchronization sent as soon as its gradient exists (FIFO on the network);
* ``dp-priority``: the same computation order, the network serving earlier layers first (BytePS);
* ``dp-reverse-k``: Algorithm 2 — conventional order except that G_1..G_k are postponed to the end
  and run in forward order, so δW_1's synchronization starts first; prioritized network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations

import numpy as np

from archsim.choices.schedules import DP_POLICIES as POLICIES
from archsim.errors import InputError
from archsim.ring_allreduce import ring_allreduce_time
from archsim.sim import Problem, Processor, simulate
from archsim.sim.builder import build, from_rows


@dataclass(frozen=True)
class SyncModel:
    """Gradient synchronization time for ``bytes`` over ``workers`` (ring all-reduce or PS)."""

    workers: int
    bandwidth: float  # bytes per time unit per link
    latency: float = 0.0
    kind: str = "ring"

    def time(self, size: float) -> float:
        if self.workers <= 1:
            return 0.0
        if self.kind == "ring":  # 2(N−1) steps of size/N each
            return ring_allreduce_time(size, self.workers, self.bandwidth, self.latency)
        if self.kind == "ps":  # push and pull through one server link
            return 2 * (self.latency + size / self.bandwidth)
        raise InputError(f"unknown synchronization {self.kind!r}; choose ring or ps", field="sync")


def conventional_order(layers: int) -> list[tuple[str, int]]:
    """G_l then D_l from layer L down to 1 (no D for layer 1)."""
    order: list[tuple[str, int]] = []
    for layer in range(layers, 0, -1):
        order.append(("G", layer))
        if layer > 1:
            order.append(("D", layer))
    return order


def max_k_for_memory(forward_memory: float, delta_memory: Sequence[float], weight_grad_memory: Sequence[float],
                     max_memory: float) -> int:
    """Algorithm 2 line 1: the largest j with M_fwd − Σ_{i>j} M(δO_i) + Σ_{i≤j} M(δW_i) < MXM."""
    layers = len(delta_memory)
    best = 0
    for j in range(1, layers + 1):
        used = forward_memory - sum(delta_memory[j:]) + sum(weight_grad_memory[:j])
        if used < max_memory:
            best = j
    return best


def reverse_first_k_order(layers: int, k: int) -> list[tuple[str, int]]:
    """Algorithm 2 lines 3–6."""
    if not 0 <= k <= layers:
        raise InputError(f"k must be within 0..{layers}, got {k}", field="k")
    order = [op for op in conventional_order(layers) if not (op[0] == "G" and op[1] <= k)]
    return order + [("G", layer) for layer in range(1, k + 1)]


def dp_problem(forward: Sequence[float], delta: Sequence[float], weight_grad: Sequence[float],
               sync: Sequence[float], order: Sequence[tuple[str, int]], *, prioritized: bool,
               names: Sequence[str] | None = None) -> Problem:
    """The iteration window for a given backward computation order, as actions on two ranks: the
    device (F, the backward in exactly ``order``'s sequence, then the next iteration's F′ by data
    flow) and the network (S by priority: layer number, or FIFO in gradient order). ``names``: the
    layers' names its ops' ``layer`` tags carry (None: l1 … lL)."""
    layers = len(forward)
    name = list(names) if names is not None else [f"l{l}" for l in range(1, layers + 1)]
    expected = set(conventional_order(layers))
    if sorted(order) != sorted(expected) or len(order) != len(expected):
        raise InputError("the backward order must contain each G_l and D_l (l > 1) exactly once", field="order")
    ops: list[tuple] = []  # id, rank (0 device, 1 network), duration, priority, tags
    flow: list[tuple[str, str]] = []
    position = {op: i for i, op in enumerate(order)}
    for l in range(1, layers + 1):
        ops.append((f"F{l}", 0, forward[l - 1], (0, l), (("kind", "F"), ("layer", name[l - 1]))))
        ops.append((f"F{l}'", 0, forward[l - 1], (2, l), (("kind", "F"), ("layer", name[l - 1]))))
        ops.append((f"S{l}", 1, sync[l - 1], l if prioritized else position[("G", l)], (("kind", "S"), ("layer", name[l - 1]))))
        flow += [(f"G{l}", f"S{l}"), (f"S{l}", f"F{l}'")]
        if l > 1:
            flow += [(f"F{l - 1}", f"F{l}"), (f"F{l - 1}'", f"F{l}'")]
    for kind, l in order:
        duration = weight_grad[l - 1] if kind == "G" else delta[l - 1]
        ops.append((f"{kind}{l}", 0, duration, (1, position[(kind, l)]), (("kind", kind), ("layer", name[l - 1]))))
        flow.append((f"F{layers}" if l == layers else f"D{l + 1}", f"{kind}{l}"))
    index = {op[0]: i for i, op in enumerate(ops)}
    actions, deps = from_rows(ops, [(index[a], index[b]) for a, b in flow])
    sequence = np.array([index[f"{kind}{l}"] for kind, l in order] + [index["F1'"]], dtype=np.int64)
    return build((Processor("gpu"), Processor("net")), actions, deps, sequences=(sequence,))


def window_time(forward, delta, weight_grad, sync, order, *, prioritized: bool = True) -> float:
    return simulate(dp_problem(forward, delta, weight_grad, sync, order, prioritized=prioritized)).makespan


def policy_order(policy: str, layers: int, k: int = 0) -> tuple[list[tuple[str, int]], bool]:
    if policy == "dp-wfbp":
        return conventional_order(layers), False
    if policy == "dp-priority":
        return conventional_order(layers), True
    if policy == "dp-reverse-k":
        return reverse_first_k_order(layers, k), True
    raise InputError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}", field="policy")


# windows whose makespans differ by less than this fraction are one makespan: a sum of float sync times
# taken in another order differs in its last bits (resnet50's 862299836.142857 against …6.1428567)
TIE = 1e-9


def fastest(candidates, evaluate) -> int:
    """The smallest k among ``candidates`` whose window is fastest, makespans within :data:`TIE` of each
    other counted equal (the fewest layers reversed, not the one float rounding favours)."""
    times = {k: evaluate(k) for k in candidates}
    best = min(times.values())
    return min(k for k, t in times.items() if t <= best + TIE * abs(best))


def search_k(evaluate, layers: int) -> int:
    """The paper's k search (§5.1, the text after Algorithm 2): k from 0 in steps of Δk = L/10 (an integer,
    at least 1) "for all k < L"; then, around the best k, every k in the open range (k − Δk, k + Δk) in steps
    of the halved Δk, repeated until Δk is 1. The open range is searched whole, so an odd Δk skips no
    multiple of its half there (Δk 3 halves to 1: k − 2 … k + 2); k = L is never tried by the search
    (``--reverse-k L`` still runs it)."""
    if layers <= 0:
        return 0
    step = max(1, layers // 10)
    best = fastest(range(0, layers, step), evaluate)
    while step > 1:
        half = step // 2
        reach = (step - 1) // half  # multiples of the half strictly inside (best − step, best + step)
        best = fastest([best + j * half for j in range(-reach, reach + 1) if 0 <= best + j * half < layers],
                       evaluate)
        step = half
    return best


def backward_orders(layers: int):
    """Every device order of the backward ops that respects δ's chain (exhaustive search)."""
    ops = conventional_order(layers)
    for candidate in permutations(ops):
        done: set[tuple[str, int]] = set()
        ok = True
        for kind, l in candidate:
            if l < layers and ("D", l + 1) not in done:
                ok = False
                break
            done.add((kind, l))
        if ok:
            yield list(candidate)


__all__ = ["SyncModel", "backward_orders", "conventional_order", "dp_problem", "fastest", "max_k_for_memory",
           "policy_order", "reverse_first_k_order", "search_k", "window_time"]
