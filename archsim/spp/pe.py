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

import numpy as np

from archsim.sim import Problem, Processor, simulate
from archsim.sim.builder import build, from_rows
from archsim.spp.pe_order import (  # the ordering lives with the simulator-free makespan; exported here
    ORDERS,
    StagePlan,
    blocks,
    check_pe_input,
    execution_order,
    gpipe_newest_first_order,
    gpipe_order,
)

__all__ = ["ORDERS", "StagePlan", "blocks", "execution_order", "gpipe_newest_first_order", "gpipe_order",
           "lemma1_bound", "pe_makespan", "pe_problem"]


def pe_problem(plans: list[StagePlan], microbatches: int, order: str = "pe") -> Problem:
    """``order``: PE's ordering sweep (``pe``) or the ``gpipe-newest-first`` variant (alias ``gpipe``).
    As actions: each stage runs U_s in sequence; a channel's blocks go by priority (the visit)."""
    stages = len(plans)
    check_pe_input(stages, microbatches, order)
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
