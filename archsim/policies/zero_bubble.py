"""Stage-level pipeline schedules with the backward split into B (input gradient, archsim's D) and
W (weight gradient, G) (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024).

The published schedules (``SCHEDULES``: 1F1B, interleaved 1F1B, ZB-H1, ZB-H2, ZB-1p, ZB-2p and
torch's interleaved zero bubble) run the fixed per-rank orders their authors build
(:mod:`archsim.policies.stage_orders`, :mod:`archsim.policies.zb_auto`), timed with per-hop
communication by :mod:`archsim.policies.stage_run`.

archsim's own list schedules (``LIST_SCHEDULES``, named ``list-…``) are kept as variants: they are
not the published orders but greedy list schedules with the published in-flight limits (W fills
any idle slot), without communication; they can beat the published orders they are named after:

p stages, m micro-batches; per stage and micro-batch: F, B, W. F_s needs F_{s−1}; B_s needs B_{s+1}
(the last stage's B needs its F); W_s needs B_s. Stage s admits micro-batch b only after the
backward of b − N_s, where N_s is the schedule's in-flight limit, and the priority on a stage is
B, then F, then W (W fills bubbles):

* ``list-1f1b``: B and W run as one backward (B immediately followed by W), N_s = p − s + 1;
* ``list-zb-h1``: B and W separate, N_s = p − s + 1 — 1F1B's activation memory, bubble
  (p − 1)(T_F + T_B − T_W);
* ``list-zb-h2``: N_s = 2(p − s) + 1 — more warm-up forwards fill the drain, 2p − 1 in flight on the
  first stage, bubble (p − 1)(T_F + T_B − 2T_W) (zero when F = B = W).

Activation memory is counted as the zero-bubble paper counts it: a micro-batch's activation is
held from its F to its backward — to W when B and W are fused, to B when they are split (W keeps
only its smaller weight-gradient inputs, not counted here).
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.errors import InputError
from archsim.policies.stage_orders import StageOrder, published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import StageRun, order_problem, run_order
from archsim.policies.zb_auto import zb_auto_order
from archsim.sim import Dep, Op, Problem, Processor, simulate

SCHEDULES = ("1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p", "interleaved-zb", "zb-v", "dualpipev")
LIST_SCHEDULES = ("list-1f1b", "list-zb-h1", "list-zb-h2")


@dataclass(frozen=True)
class StageCosts:
    forward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]
    activation_bytes: tuple[int, ...] = ()
    send_bytes: tuple[int, ...] = ()  # bytes from stage s to s + 1 (activation; its gradient comes back)

    @classmethod
    def equal(cls, stages: int, f: float = 1.0, b: float = 1.0, w: float = 1.0, activation: int = 1) -> "StageCosts":
        return cls((f,) * stages, (b,) * stages, (w,) * stages, (activation,) * stages)


def op_count(schedule: str, processors: int, microbatches: int, chunks: int = 2) -> int:
    """The ops a schedule's problem has (dualpipev: at most; its main phase fuses some backwards):
    per (virtual) stage and micro-batch one F and one B, or F, I and W when the backward is split."""
    stages = processors * (chunks if schedule.startswith("interleaved") else 2 if schedule in ("zb-v", "dualpipev")
                           else 1)
    fused = schedule in ("1f1b", "interleaved-1f1b")
    return stages * microbatches * (2 if fused else 3)


def in_flight(schedule: str, stages: int, stage: int) -> int:
    """N_s for 1-based stage s."""
    return 2 * (stages - stage) + 1 if schedule.endswith("zb-h2") else stages - stage + 1


def zb_problem(costs: StageCosts, microbatches: int, schedule: str) -> Problem:
    """The list-schedule variant ``list-1f1b``, ``list-zb-h1`` or ``list-zb-h2``."""
    if schedule not in LIST_SCHEDULES:
        raise InputError(f"unknown list schedule {schedule!r}; choose one of {', '.join(LIST_SCHEDULES)}",
                         field="policy")
    p = len(costs.forward)
    ops: list[Op] = []
    deps: list[Dep] = []
    rank = {"B": 0, "F": 1, "W": 2}
    for b in range(microbatches):
        for s in range(1, p + 1):
            memory = costs.activation_bytes[s - 1] if costs.activation_bytes else 0
            tags = (("stage", s), ("microbatch", b))
            fused = schedule == "list-1f1b"
            ops.append(Op(f"F{s}:{b}", f"s{s}", costs.forward[s - 1], (rank["F"], b), alloc_bytes=memory,
                          tags=(*tags, ("kind", "F"))))
            ops.append(Op(f"B{s}:{b}", f"s{s}", costs.backward_input[s - 1], (rank["B"], b),
                          free_bytes=0 if fused else memory, tags=(*tags, ("kind", "D"))))
            ops.append(Op(f"W{s}:{b}", f"s{s}", costs.backward_weight[s - 1], (-1, b) if fused else (rank["W"], b),
                          free_bytes=memory if fused else 0, tags=(*tags, ("kind", "G"))))
            if s > 1:
                deps.append(Dep(f"F{s - 1}:{b}", f"F{s}:{b}"))
            upstream = "W" if fused else "B"  # a fused backward sends δ only after its W
            deps.append(Dep(f"{upstream}{s + 1}:{b}" if s < p else f"F{s}:{b}", f"B{s}:{b}"))
            deps.append(Dep(f"B{s}:{b}", f"W{s}:{b}"))
            window = in_flight(schedule, p, s)
            if b - window >= 0:  # admission: the backward of b − N_s has freed its activation
                deps.append(Dep(f"{'W' if fused else 'B'}{s}:{b - window}", f"F{s}:{b}"))
            if fused and b > 0:  # W right after its B: the next B waits for this W
                deps.append(Dep(f"W{s}:{b - 1}", f"B{s}:{b}"))
    return Problem(tuple(Processor(f"s{s}") for s in range(1, p + 1)), (), tuple(ops), tuple(deps))


def stage_profile(costs: StageCosts, comm: float = 0.0, weight_memory: tuple[float, ...] = (),
                  bandwidth: float | None = None) -> StageProfile:
    """Per-stage costs as a profile; with ``bandwidth`` (bytes per time unit) hops also move send_bytes."""
    activation = costs.activation_bytes or (1,) * len(costs.forward)
    return StageProfile(costs.forward, costs.backward_input, costs.backward_weight, comm, tuple(activation),
                        weight_memory, costs.send_bytes if bandwidth is not None else (), bandwidth)


def published_run(profile: StageProfile, microbatches: int, schedule: str, chunks: int = 2) -> StageRun:
    """A published schedule (``SCHEDULES``) over one profile entry per device."""
    return run_order(*_published(profile, microbatches, schedule, chunks))


def _published(profile: StageProfile, microbatches: int, schedule: str, chunks: int) -> tuple[StageOrder, StageProfile]:
    """The order of a published schedule and the profile of its virtual stages."""
    p = profile.stages
    if schedule in ("zb-1p", "zb-2p"):
        hops = set(profile.comm) if isinstance(profile.comm, tuple) else {profile.comm}
        if len(hops) > 1:
            raise InputError(f"{schedule}: the automatic scheduler takes one T_comm for every hop, got "
                             f"{sorted(hops)}", field="comm")
        order = zb_auto_order(profile.forward, profile.backward_input, profile.backward_weight, hops.pop(),
                              microbatches, 1 if schedule == "zb-1p" else 2, profile.activation,
                              profile.weight_memory)
        return order, profile
    if schedule in ("interleaved-1f1b", "interleaved-zb"):
        return published_order(schedule, p, microbatches, chunks), profile.chunked(chunks)
    if schedule not in SCHEDULES:
        raise InputError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}", field="policy")
    order = published_order(schedule, p, microbatches)
    return order, profile.on_ranks(order.rank_of_stage()) if order.stages != p else profile


def zb_build(costs: StageCosts, microbatches: int, schedule: str, chunks: int = 2, comm: float = 0.0,
             bandwidth: float | None = None) -> Problem:
    """The problem of a published schedule or a ``list-…`` variant (these have no transfers)."""
    if schedule in SCHEDULES:
        return order_problem(*_published(stage_profile(costs, comm, bandwidth=bandwidth), microbatches, schedule,
                                         chunks))
    return zb_problem(costs, microbatches, schedule)


def zb_schedule(costs: StageCosts, microbatches: int, schedule: str, chunks: int = 2, comm: float = 0.0,
                bandwidth: float | None = None):
    """(problem, timeline) of a published schedule or a ``list-…`` variant (these have no transfers)."""
    problem = zb_build(costs, microbatches, schedule, chunks, comm, bandwidth)
    return problem, simulate(problem)


def bubble_time(problem: Problem, timeline) -> float:
    """Idle time of the busiest-then-idle pattern: per stage, makespan − its busy time; the maximum."""
    span = timeline.makespan
    busy: dict[int, float] = {}
    a = problem.arrays
    for processor, duration in zip(a.proc.tolist(), a.duration.tolist()):  # the ops' columns, in problem order
        busy[processor] = busy.get(processor, 0.0) + duration
    return max(span - b for b in busy.values())


__all__ = ["LIST_SCHEDULES", "SCHEDULES", "StageCosts", "bubble_time", "in_flight", "op_count", "published_run",
           "stage_profile", "zb_build", "zb_problem", "zb_schedule"]
