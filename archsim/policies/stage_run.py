"""Time a per-rank action order (:mod:`archsim.policies.stage_orders`) in the event simulator.

Each rank runs its actions in the given order (a chain of dependencies), each action waits for its
data — F on stage s for F on s − 1, I/B on s for I/B on s + 1 (the last stage's for its own F), W
for its I — and data between ranks crosses a link: ``comm`` per hop (latency, the zero-bubble
paper's T_comm) plus bytes / bandwidth. Activation data and gradients use separate links per
direction and stage pair, each serial (FIFO); a transfer queues only when a stage emits two within
one transfer time, which needs an action shorter than T_comm.

Memory as the zero-bubble paper counts it (§3, Table 2): F holds M_B until its backward; I gives
back M_B − M_W, W the remaining M_W; a full backward B gives back all of M_B.

Times are in the caller's unit (the paper's profiled times are milliseconds); bytes are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from archsim.errors import InputError
from archsim.policies.stage_orders import StageOrder
from archsim.policies.stage_profile import StageProfile
from archsim.sim import Dep, Link, Op, Problem, Processor, simulate


@dataclass(frozen=True)
class StageRun:
    order: StageOrder
    problem: Problem
    timeline: object

    def spans(self) -> list[float]:
        """Per rank: end of its last action − start of its first (the zero-bubble paper's stage time)."""
        first: dict[str, float] = {}
        last: dict[str, float] = {}
        for slot in self.timeline.slots:  # type: ignore[attr-defined]
            first[slot.processor] = min(first.get(slot.processor, slot.start), slot.start)
            last[slot.processor] = max(last.get(slot.processor, slot.end), slot.end)
        return [last[p.name] - first[p.name] for p in self.problem.processors if p.name in first]

    def bubble_rate(self) -> float:
        """(cost − work)/cost, cost = the longest rank span, work = the busiest rank's compute time —
        m(T_F + T_B + T_W) for equal stages, as the zero-bubble paper defines it (§5.3)."""
        cost = max(self.spans(), default=0.0)
        work = max((self.timeline.busy_time(p.name) for p in self.problem.processors), default=0.0)  # type: ignore[attr-defined]
        return (cost - work) / cost if cost > 0 else 0.0

    def metrics(self) -> dict[str, object]:
        peaks = self.timeline.peak_memory()  # type: ignore[attr-defined]
        return {"makespan": self.timeline.makespan, "cost": max(self.spans(), default=0.0),  # type: ignore[attr-defined]
                "bubble_rate": self.bubble_rate(),
                "peak_memory": ";".join(f"{peaks[p.name]:g}" for p in self.problem.processors)}


def order_problem(order: StageOrder, profile: StageProfile) -> Problem:
    """The op DAG of ``order`` with ``profile``'s costs (one profile entry per virtual stage).

    Op ids are torch's action strings ("0F0", "3I2", …)."""
    if profile.stages != order.stages:
        raise InputError(f"schedule {order.name!r} has {order.stages} stages but the profile has {profile.stages}",
                         field="stages")
    rank_of = order.rank_of_stage()
    last = order.stages - 1
    full_backward = {(a.stage, a.microbatch) for actions in order.ranks for a in actions if a.kind == "B"}
    links: dict[tuple[int, int, str], Link] = {}
    deps: list[Dep] = []
    ops: list[Op] = []
    bandwidth = profile.bandwidth if profile.bandwidth is not None else 1.0

    def cross(src: int, src_id: str, dst: int, dst_id: str, kind: str) -> Dep:
        a, b = rank_of[src], rank_of[dst]
        if a == b:
            return Dep(src_id, dst_id)
        key = (src, dst, kind)
        if key not in links:
            links[key] = Link(f"{src}->{dst}:{kind}", f"r{a}", f"r{b}", bandwidth, profile.hop(src))
        boundary = min(src, dst)  # activations and their gradients cross the same stage boundary
        size = int(profile.send_bytes[boundary]) if profile.send_bytes and profile.bandwidth is not None else 0
        return Dep(src_id, dst_id, size, links[key].name)

    for rank, actions in enumerate(order.ranks):
        processor = f"r{rank}"
        ids = [f"{s}{k}{i}" for s, k, i in actions]
        for (s, kind, i), op_id in zip(actions, ids):
            held = profile.activation[s] if profile.activation else 0
            kept = min(profile.weight_memory[s], held) if profile.weight_memory else 0
            if kind == "F":
                cost, alloc, free = profile.forward[s], held, 0
            elif kind == "I":
                cost, alloc, free = profile.backward_input[s], 0, held - kept
            elif kind == "W":
                cost, alloc, free = profile.backward_weight[s], 0, kept
            else:
                cost, alloc, free = profile.backward_input[s] + profile.backward_weight[s], 0, held
            ops.append(Op(op_id, processor, cost, alloc_bytes=alloc, free_bytes=free,  # type: ignore[arg-type]
                          tags=(("stage", s), ("kind", kind), ("microbatch", i), ("rank", rank))))
            if kind == "F":
                if s > 0:
                    deps.append(cross(s - 1, f"{s - 1}F{i}", s, op_id, "act"))
            elif kind == "W":
                deps.append(Dep(f"{s}I{i}", op_id))
            else:
                deps.append(Dep(f"{s}F{i}", op_id))
                if s != last:
                    upstream = f"{s + 1}{'B' if (s + 1, i) in full_backward else 'I'}{i}"
                    deps.append(cross(s + 1, upstream, s, op_id, "grad"))
        deps += [Dep(x, y) for x, y in pairwise(ids)]
    processors = tuple(Processor(f"r{r}") for r in range(len(order.ranks)))
    return Problem(processors, tuple(links.values()), tuple(ops), tuple(deps))


def run_order(order: StageOrder, profile: StageProfile) -> StageRun:
    problem = order_problem(order, profile)
    return StageRun(order, problem, simulate(problem))


__all__ = ["StageRun", "order_problem", "run_order"]
