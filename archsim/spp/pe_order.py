"""SPP's PE (001_655b4b8cd650573f.txt §IV-A, Alg. 1) without the simulator: its blocks, its ordering
sweep, its problem (:func:`pe_rows`, the one statement of it) and the makespan of its schedule; and
GPipe's fill-drain on the same blocks, the last stage's F and B apart (the ``gpipe`` baseline's order:
:func:`archsim.rank_orders.fill_drain`'s per-rank order, translated into PE's block visits).

:func:`pe_finish_time` is PE's makespan wherever only the makespan is needed — SPP's search ranking
its stage counts, its four baselines, ``archsim plan --method pipedream``: it runs the simulator's
rules (:mod:`archsim.sim.engine`: non-delay list scheduling, every event of an instant applied
before anything starts, the lowest rank first) on this one class of problem — one stream per
resource, no links — in plain Python, without importing numpy or the simulator. The event simulator
(:func:`archsim.spp.pe.pe_makespan`, the same rows through the builder) runs only where a timeline is
wanted. Measured (benchmarks/bench_pe_makespan.py): 4.2× less CPU than the simulator on the 24 plans
of SPP's BERT-large study; the simulator would make ``plan --method pipedream`` 1.1–1.3× slower, 4.2×
at 2,000 micro-batches (numba's load). tests/test_pe_finish_time.py checks the two equal, float for
float, on drawn plans up to SPP's study's size.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from itertools import pairwise

from archsim.errors import InputError
from archsim.rank_orders import actions, fill_drain


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


def fill_drain_blocks(stages: int) -> list[tuple[str, int]]:
    """GPipe's J: :func:`blocks` with the last stage's forward and backward apart — ("F", S), ("B", S)
    — so that it too runs every forward before any backward (all FP before any BP, §II)."""
    forward = [block for n in range(1, stages) for block in (("F", n), ("cf", n))]
    backward = [block for n in range(stages - 1, 0, -1) for block in (("cb", n), ("B", n))]
    return [*forward, ("F", stages), ("B", stages), *backward]


def _fill_drain(stages: int, microbatches: int, newest_first: bool) -> tuple[list, dict]:
    """The one fill-drain (:func:`archsim.rank_orders.fill_drain`) as PE's blocks: stage n (1-based) runs
    rank n − 1's actions; the visits (a channel's ranks) take the forward blocks micro-batch by
    micro-batch, then the backward ones, in the order the stages run them, so a channel sends what its
    receiving stage runs next."""
    J = fill_drain_blocks(stages)
    forward, backward = J[:stages * 2 - 1], J[stages * 2 - 1:]
    per_stage = {n: [((kind, n), m) for _, kind, m in actions(fill_drain([n - 1], microbatches, newest_first))]
                 for n in range(1, stages + 1)}
    visits = [(block, m) for (kind, _), m in per_stage[1] for block in (forward if kind == "F" else backward)]
    return visits, per_stage


def gpipe_order(stages: int, microbatches: int) -> tuple[list, dict]:
    """GPipe's fill-drain, the one GPipe (torch's ``ScheduleGPipe``,
    :func:`archsim.policies.stage_orders.gpipe`): every stage, the last too, runs every forward, then
    every backward, oldest micro-batch first. The ``gpipe`` baseline's order (docs/papers/spp.md)."""
    return _fill_drain(stages, microbatches, newest_first=False)


def gpipe_newest_first_order(stages: int, microbatches: int) -> tuple[list, dict]:
    """GPipe's fill-drain with every stage's backwards newest micro-batch first, as GPipe's paper draws
    it (Huang et al. 2019, Fig. 2c: B3, B2, B1, B0), the last stage too: the one fill-drain's
    ``newest_first``. A named variant: its makespan is :func:`gpipe_order`'s (the micro-batches' costs
    are equal, and every backward waits for the last stage's last forward), its timeline the figure's
    (tests/test_spp_gpipe.py)."""
    return _fill_drain(stages, microbatches, newest_first=True)


ORDERS = {"pe": (blocks, execution_order), "gpipe": (fill_drain_blocks, gpipe_order),
          "gpipe-newest-first": (fill_drain_blocks, gpipe_newest_first_order)}  # name → (J, U_s per stage)


@dataclass(frozen=True)
class PERows:
    """PE's problem as plain rows, the one statement of it that both timings read (the simulator's
    :func:`archsim.spp.pe.pe_problem` and :func:`pe_finish_time`). ``ops``: (id, resource, seconds,
    priority — the op's visit in the ordering sweep, 0 for an AllReduce —, tags); ``flow``: (before,
    after) op indices — each block of each micro-batch after the block before it, each AllReduce after
    its stage's last backward of every micro-batch; ``chains``: each stage's ops in its order U_s."""

    ops: list[tuple[str, str, float, int, tuple]]
    flow: list[tuple[int, int]]
    chains: list[list[int]]


def pe_rows(plans: list[StagePlan], microbatches: int, order: str = "pe") -> PERows:
    """``order``: PE's ordering sweep (``pe``, the last stage's F and B one block FB) or GPipe's
    fill-drain (``gpipe``, oldest first; ``gpipe-newest-first``), whose last stage runs F and B apart.
    Resources: a stage ``s<n>`` runs F/B/FB, a channel ``ch<n>`` c^f/c^b, ``ar<n>`` an AllReduce."""
    stages = len(plans)
    check_pe_input(stages, microbatches, order)
    block_list, stage_sequences = ORDERS[order]
    visits, per_stage = stage_sequences(stages, microbatches)
    rank = {visit: i for i, visit in enumerate(visits)}
    J = block_list(stages)
    ops: list[tuple[str, str, float, int, tuple]] = []
    index: dict[str, int] = {}
    flow: list[tuple[int, int]] = []

    def oid(block: tuple[str, int], m: int) -> str:
        return f"{block[0]}{block[1]}:{m}"

    def add(name: str, resource: str, seconds: float, priority: int, tags: tuple) -> None:
        index[name] = len(ops)
        ops.append((name, resource, seconds, priority, tags))

    for m in range(microbatches):
        for j, (kind, n) in enumerate(J):
            plan = plans[n - 1]
            seconds = {"F": plan.forward, "B": plan.backward, "FB": plan.forward + plan.backward,
                       "cf": plan.comm_forward, "cb": plan.comm_backward}[kind]
            add(oid((kind, n), m), f"s{n}" if kind in ("F", "B", "FB") else f"ch{n}", seconds, rank[((kind, n), m)],
                (("kind", kind), ("microbatch", m), ("stage", n)))
            if j:
                flow.append((index[oid(J[j - 1], m)], index[oid((kind, n), m)]))
    for n, plan in enumerate(plans, start=1):
        if plan.allreduce > 0:
            add(f"A{n}", f"ar{n}", plan.allreduce, 0, (("kind", "A"), ("stage", n)))
            last_block = ("FB", n) if ("FB", n) in J else ("B", n)
            flow += [(index[oid(last_block, m)], index[f"A{n}"]) for m in range(microbatches)]
    chains = [[index[oid(block, m)] for block, m in sequence] for sequence in per_stage.values()]
    return PERows(ops, flow, chains)


def pe_finish_time(plans: list[StagePlan], microbatches: int, order: str = "pe") -> float:
    """The makespan (seconds) of :func:`archsim.spp.pe.pe_makespan`'s timeline, without building it:
    :func:`pe_rows` under the simulator's rules for this class of problem — one stream per resource,
    no links, a stage's ops chained in U_s — where a resource runs one op at a time, its ready op of
    lowest priority first, and every op end of an instant is applied before anything starts."""
    rows = pe_rows(plans, microbatches, order)
    resource_of = {name: i for i, name in enumerate(sorted({op[1] for op in rows.ops}))}
    resource = [resource_of[op[1]] for op in rows.ops]
    seconds = [op[2] for op in rows.ops]
    priority = [op[3] for op in rows.ops]
    succ: list[list[int]] = [[] for _ in rows.ops]
    for before, after in rows.flow:
        succ[before].append(after)
    for chain in rows.chains:
        for before, after in pairwise(chain):
            succ[before].append(after)
    waiting = [0] * len(rows.ops)
    for outs in succ:
        for op in outs:
            waiting[op] += 1
    ready: dict[int, list[tuple[int, int]]] = {}  # resource → heap of (priority, op)
    for op, count in enumerate(waiting):
        if not count:
            heapq.heappush(ready.setdefault(resource[op], []), (priority[op], op))
    busy: set[int] = set()
    events: list[tuple[float, int, int]] = []  # (end, sequence, op)
    now = finish = 0.0
    sequence = 0
    while True:
        for r in sorted(ready):
            if r not in busy and ready[r]:
                _, op = heapq.heappop(ready[r])
                busy.add(r)
                sequence += 1
                end = now + seconds[op]
                finish = max(finish, end)
                heapq.heappush(events, (end, sequence, op))
        if not events:
            return finish
        now = events[0][0]
        while events and events[0][0] <= now:
            _, _, op = heapq.heappop(events)
            busy.discard(resource[op])
            for after in succ[op]:
                waiting[after] -= 1
                if not waiting[after]:
                    heapq.heappush(ready.setdefault(resource[after], []), (priority[after], after))


def check_pe_input(stages: int, microbatches: int, order: str) -> None:
    if stages == 0 or microbatches <= 0:
        raise InputError("need at least one stage and one micro-batch", field="stages")
    if order not in ORDERS:
        raise InputError(f"unknown PE order {order!r}; choose one of {', '.join(ORDERS)}", field="order")
