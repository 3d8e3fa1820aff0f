"""torch.distributed.pipelining's dry-run step model, in archsim's simulator.

torch's ``_simulate_comms_compute`` counts steps over a schedule that includes its communication
actions (``_add_send_recv``): in each step a rank runs its next action if it is ready — a compute
action (F, I, W, B) or a SEND/RECV — so every action takes one step, and a RECV may run in the
same step as its SEND. archsim reproduces that with unit-time ops in each rank's order, a RECV
depending on the op its rank's SEND follows (so it can start with the SEND), and the data
dependencies torch checks: F after its RECV_F (or the previous stage's F on the same rank), I/B
after its RECV_B (or the next stage's I/B on the same rank), a SEND after the compute it sends.
The makespan is then torch's step count (tests compare them on every torch schedule). Each rank's
actions are a sequence for the one builder (:mod:`archsim.sim.builder`).

torch's simulator has no rule for UNSHARD, RESHARD or REDUCE_GRAD; they are left out here too.
"""

from __future__ import annotations

import numpy as np

from archsim.errors import InputError
from archsim.policies.torch_csv import parse_cells
from archsim.sim import Problem, Processor, simulate
from archsim.sim.builder import build, from_rows


def parse_comm_schedule(text: str, source: str = "schedule csv") -> list[list[tuple[int, str, int]]]:
    """Per rank, (stage, type, micro-batch) of torch's compute_comms CSV (``_dump_csv`` of a runtime schedule)."""
    ranks = parse_cells(text, source)[0]
    if not ranks:  # nothing to count: 0 steps would read as a result
        raise InputError("no actions", file=source, field="action")
    return ranks


def step_problem(ranks: list[list[tuple[int, str, int]]]) -> Problem:
    """Unit-step op DAG of a schedule with communication actions (see the module docstring)."""
    ids = [[f"{s}{t}{i}" for s, t, i in actions] for actions in ranks]
    where = {op_id: (r, k) for r, row in enumerate(ids) for k, op_id in enumerate(row)}
    if len(where) != sum(len(row) for row in ids):
        raise InputError("an action appears twice", field="action")
    index = {op_id: k for k, op_id in enumerate(op_id for row in ids for op_id in row)}
    ops = [(op_id, r, 1.0, 0, (("kind", t),)) for r, (row, actions) in enumerate(zip(ids, ranks))
           for op_id, (_, t, _) in zip(row, actions)]
    deps: list[tuple[int, int]] = []

    def first(*candidates: str) -> str | None:
        return next((c for c in candidates if c in where), None)

    for r, actions in enumerate(ranks):
        for (s, t, i), me in zip(actions, ids[r]):
            if t == "F":
                source = first(f"{s}RECV_F{i}", f"{s - 1}F{i}") if s > 0 else None
            elif t in ("I", "B"):
                source = first(f"{s}RECV_B{i}", f"{s + 1}I{i}", f"{s + 1}B{i}")
            elif t == "W":
                source = first(f"{s}I{i}")
            elif t in ("SEND_F", "SEND_B"):
                source = first(f"{s}F{i}") if t == "SEND_F" else first(f"{s}I{i}", f"{s}B{i}")
            else:  # a RECV may run in the step its SEND runs: it waits for what precedes the SEND
                send = f"{s - 1}SEND_F{i}" if t == "RECV_F" else f"{s + 1}SEND_B{i}"
                if send not in where:
                    raise InputError(f"{me} on rank {r} has no matching {send}", field="action")
                sender, position = where[send]
                source = ids[sender][position - 1] if position else None
            if source is not None and source != me:
                deps.append((index[source], index[me]))
    columns, flow = from_rows(ops, deps)
    sequences = [np.array([index[op_id] for op_id in row], dtype=np.int64) for row in ids]
    return build(tuple(Processor(f"r{r}") for r in range(len(ranks))), columns, flow, sequences=sequences)


def torch_steps(ranks: list[list[tuple[int, str, int]]]) -> int:
    """The number of steps torch's dry-run simulator takes for this schedule."""
    return int(simulate(step_problem(ranks)).makespan)


__all__ = ["parse_comm_schedule", "step_problem", "torch_steps"]
