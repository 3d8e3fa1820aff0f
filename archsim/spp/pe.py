"""SPP's pipeline execution scheduler PE (001_655b4b8cd650573f.txt §IV-A, Alg. 1), in the simulator:
its timeline (to draw, validate, export). Its makespan alone is :func:`~archsim.spp.pe_order.pe_finish_time`.

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

from archsim.sim import Problem, Processor, Timeline, simulate
from archsim.sim.builder import build, from_rows
from archsim.spp.pe_order import (  # the ordering lives with the simulator-free makespan; exported here
    StagePlan,
    pe_rows,
)

__all__ = ["lemma1_bound", "pe_makespan", "pe_problem"]


def pe_problem(plans: list[StagePlan], microbatches: int, order: str = "pe") -> Problem:
    """PE's problem (:func:`~archsim.spp.pe_order.pe_rows`) as actions: each stage runs U_s in
    sequence; a channel's blocks go by priority (the visit)."""
    rows = pe_rows(plans, microbatches, order)
    resources = sorted({op[1] for op in rows.ops})
    where = {r: i for i, r in enumerate(resources)}
    actions, deps = from_rows([(i, where[r], d, p, t) for i, r, d, p, t in rows.ops], rows.flow)
    chains = [np.array(chain, dtype=np.int64) for chain in rows.chains]
    return build(tuple(Processor(r) for r in resources), actions, deps, sequences=chains)


def pe_makespan(plans: list[StagePlan], microbatches: int, order: str = "pe") -> tuple[float, Timeline]:
    problem = pe_problem(plans, microbatches, order)
    timeline = simulate(problem)
    return timeline.makespan, timeline


def lemma1_bound(plans: list[StagePlan], microbatches: int) -> float:
    """(1 + (4|S| − 4)/M) · M · C + max A_s, C the slowest stage (F + B) or channel (c^f + c^b)."""
    c = max([p.forward + p.backward for p in plans] + [p.comm_forward + p.comm_backward for p in plans[:-1]])
    stages = len(plans)
    return (1 + (4 * stages - 4) / microbatches) * microbatches * c + max((p.allreduce for p in plans), default=0.0)
