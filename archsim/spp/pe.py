"""SPP's pipeline execution scheduler PE (001_655b4b8cd650573f.txt §IV-A, Alg. 1), in the simulator.

Blocks, in dependency order (|J| = 4|S| − 3): F_1, c^f_1, F_2, …, c^f_{S−1}, FB_S (the last stage's
forward and backward merged), c^b_{S−1}, B_{S−1}, …, c^b_1, B_1. Ordering: available-micro-batch
queues Q_j, swept over J repeatedly, give each stage its execution order U_s. Scheduling: each
stage runs U_s strictly in order as soon as the head is ready; a channel (one resource per stage
pair, both directions) sends a block as soon as it is ready and the channel is idle — archsim
ranks a channel's ready blocks by their position in the ordering sweep; a replicated stage's ring
AllReduce starts when its last backward ends, on its own links. T_PE = max(end of the last B_1,
end of every AllReduce).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from archsim.errors import InputError
from archsim.sim import Problem, Processor, simulate
from archsim.sim.builder import build, from_rows


@dataclass(frozen=True)
class StagePlan:
    """A stage's per-micro-batch forward and backward time (already divided by its replicas),
    its AllReduce time (0 if not replicated), and the channel times to the next stage."""

    forward: float
    backward: float
    allreduce: float = 0.0
    comm_forward: float = 0.0  # c^f to the next stage
    comm_backward: float = 0.0  # c^b from the next stage


def blocks(stages: int) -> list[tuple[str, int]]:
    """J in dependency order: ("F", n), ("cf", n), …, ("FB", S), ("cb", n), ("B", n) (1-based n)."""
    order: list[tuple[str, int]] = []
    for n in range(1, stages):
        order += [("F", n), ("cf", n)]
    order.append(("FB", stages))
    for n in range(stages - 1, 0, -1):
        order += [("cb", n), ("B", n)]
    return order


def execution_order(stages: int, microbatches: int) -> tuple[list[tuple[tuple[str, int], int]], dict]:
    """The ordering sweep (Alg. 1 lines 1–8): the global visit order and U_s per stage."""
    J = blocks(stages)
    queues: list[deque[int]] = [deque() for _ in J]  # micro-batches waiting at each block
    queues[0].extend(range(microbatches))
    visits: list[tuple[tuple[str, int], int]] = []
    per_stage: dict[int, list[tuple[tuple[str, int], int]]] = {n: [] for n in range(1, stages + 1)}
    while any(queues):
        moved = [(j, queues[j].popleft()) for j in range(len(J)) if queues[j]]
        for j, m in moved:
            if j + 1 < len(J):
                queues[j + 1].append(m)
            visits.append((J[j], m))
            if J[j][0] in ("F", "FB", "B"):
                per_stage[J[j][1]].append((J[j], m))
    return visits, per_stage


def gpipe_newest_first_order(stages: int, microbatches: int) -> tuple[list, dict]:
    """archsim's GPipe baseline for SPP (``order="gpipe-newest-first"``): every forward, then every
    backward, newest micro-batch first. Not torch's ``ScheduleGPipe`` (oldest first,
    :func:`archsim.policies.stage_orders.gpipe`); the SPP baseline numbers (tests/test_spp.py's
    hand-worked 7 s) use this one."""
    visits, per_stage = execution_order(stages, microbatches)
    for n in range(1, stages + 1):
        forward = sorted((x for x in per_stage[n] if x[0][0] in ("F", "FB")), key=lambda x: x[1])
        backward = sorted((x for x in per_stage[n] if x[0][0] == "B"), key=lambda x: -x[1])
        per_stage[n] = forward + backward
    return visits, per_stage


gpipe_order = gpipe_newest_first_order  # the name the SPP baselines call
ORDERS = {"pe": execution_order, "gpipe-newest-first": gpipe_newest_first_order,
          "gpipe": gpipe_newest_first_order}  # "gpipe": the baselines' name for the newest-first variant


def pe_problem(plans: list[StagePlan], microbatches: int, order: str = "pe") -> Problem:
    """``order``: PE's ordering sweep (``pe``) or the ``gpipe-newest-first`` variant (alias ``gpipe``).
    As actions: each stage runs U_s in sequence; a channel's blocks go by priority (the visit)."""
    stages = len(plans)
    if stages == 0 or microbatches <= 0:
        raise InputError("need at least one stage and one micro-batch", field="stages")
    if order not in ORDERS:
        raise InputError(f"unknown PE order {order!r}; choose one of {', '.join(ORDERS)}", field="order")
    visits, per_stage = ORDERS[order](stages, microbatches)
    rank = {visit: i for i, visit in enumerate(visits)}
    J = blocks(stages)
    ops: list[tuple] = []  # id, resource, duration, priority (the visit), tags
    flow: list[tuple[str, str]] = []

    def oid(block: tuple[str, int], m: int) -> str:
        return f"{block[0]}{block[1]}:{m}"

    def duration(block: tuple[str, int]) -> float:
        kind, n = block
        plan = plans[n - 1]
        return {"F": plan.forward, "B": plan.backward, "FB": plan.forward + plan.backward,
                "cf": plan.comm_forward, "cb": plan.comm_backward}[kind]

    def resource(block: tuple[str, int]) -> str:
        kind, n = block
        return f"s{n}" if kind in ("F", "B", "FB") else f"ch{n}"

    for m in range(microbatches):
        for j, block in enumerate(J):
            ops.append((oid(block, m), resource(block), duration(block), rank[(block, m)],
                        (("kind", block[0]), ("microbatch", m), ("stage", block[1]))))
            if j:
                flow.append((oid(J[j - 1], m), oid(block, m)))
    for n, plan in enumerate(plans, start=1):
        if plan.allreduce > 0:
            ops.append((f"A{n}", f"ar{n}", plan.allreduce, 0, (("kind", "A"), ("stage", n))))
            last_block = ("FB", n) if n == stages else ("B", n)
            flow += [(oid(last_block, m), f"A{n}") for m in range(microbatches)]
    resources = sorted({op[1] for op in ops})
    where = {r: i for i, r in enumerate(resources)}
    index = {op[0]: i for i, op in enumerate(ops)}
    actions, deps = from_rows([(i, where[r], d, p, t) for i, r, d, p, t in ops],
                            [(index[a], index[b]) for a, b in flow])
    chains = [np.array([index[oid(block, m)] for block, m in seq], dtype=np.int64) for seq in per_stage.values()]
    return build(tuple(Processor(r) for r in resources), actions, deps, sequences=chains)


def pe_makespan(plans: list[StagePlan], microbatches: int, order: str = "pe") -> tuple[float, object]:
    problem = pe_problem(plans, microbatches, order)
    timeline = simulate(problem)
    return timeline.makespan, timeline


def lemma1_bound(plans: list[StagePlan], microbatches: int) -> float:
    """(1 + (4|S| − 4)/M) · M · C + max A_s, C the slowest stage (F + B) or channel (c^f + c^b)."""
    c = max([p.forward + p.backward for p in plans] + [p.comm_forward + p.comm_backward for p in plans[:-1]])
    stages = len(plans)
    return (1 + (4 * stages - 4) / microbatches) * microbatches * c + max((p.allreduce for p in plans), default=0.0)
