"""Stage-level pipeline peers with the backward split into B (input gradient, archsim's D) and
W (weight gradient, G): 1F1B, ZB-H1 and ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism",
ICLR 2024), in the event simulator.

p stages, m micro-batches; per stage and micro-batch: F, B, W. F_s needs F_{s−1}; B_s needs B_{s+1}
(the last stage's B needs its F); W_s needs B_s. Stage s admits micro-batch b only after the
backward of b − N_s, where N_s is the schedule's in-flight limit, and the priority on a stage is
B, then F, then W (W fills bubbles):

* ``1f1b``: B and W run as one backward (B immediately followed by W), N_s = p − s + 1;
* ``zb-h1``: B and W separate, N_s = p − s + 1 — 1F1B's activation memory, bubble
  (p − 1)(T_F + T_B − T_W);
* ``zb-h2``: N_s = 2(p − s) + 1 — more warm-up forwards fill the drain, 2p − 1 in flight on the
  first stage, bubble (p − 1)(T_F + T_B − 2T_W) (zero when F = B = W).

Activation memory is counted as the zero-bubble paper counts it: a micro-batch's activation is
held from its F to its backward — to W when B and W are fused, to B when they are split (W keeps
only its smaller weight-gradient inputs, not counted here).
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.errors import InputError
from archsim.sim import Dep, Op, Problem, Processor, simulate

SCHEDULES = ("1f1b", "interleaved-1f1b", "zb-h1", "zb-h2")


@dataclass(frozen=True)
class StageCosts:
    forward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]
    activation_bytes: tuple[int, ...] = ()

    @classmethod
    def equal(cls, stages: int, f: float = 1.0, b: float = 1.0, w: float = 1.0, activation: int = 1) -> "StageCosts":
        return cls((f,) * stages, (b,) * stages, (w,) * stages, (activation,) * stages)


def in_flight(schedule: str, stages: int, stage: int) -> int:
    """N_s for 1-based stage s."""
    return 2 * (stages - stage) + 1 if schedule == "zb-h2" else stages - stage + 1


def zb_problem(costs: StageCosts, microbatches: int, schedule: str) -> Problem:
    if schedule not in SCHEDULES:
        raise InputError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}", field="policy")
    p = len(costs.forward)
    ops: list[Op] = []
    deps: list[Dep] = []
    rank = {"B": 0, "F": 1, "W": 2}
    for b in range(microbatches):
        for s in range(1, p + 1):
            memory = costs.activation_bytes[s - 1] if costs.activation_bytes else 0
            tags = (("stage", s), ("microbatch", b))
            fused = schedule == "1f1b"
            ops.append(Op(f"F{s}:{b}", f"s{s}", costs.forward[s - 1], (rank["F"], b), alloc_bytes=memory,
                          tags=(*tags, ("kind", "F"))))
            ops.append(Op(f"B{s}:{b}", f"s{s}", costs.backward_input[s - 1], (rank["B"], b),
                          free_bytes=0 if fused else memory, tags=(*tags, ("kind", "B"))))
            ops.append(Op(f"W{s}:{b}", f"s{s}", costs.backward_weight[s - 1], (-1, b) if fused else (rank["W"], b),
                          free_bytes=memory if fused else 0, tags=(*tags, ("kind", "W"))))
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


def interleaved_problem(costs: StageCosts, microbatches: int, chunks: int) -> Problem:
    """Interleaved 1F1B (Narayanan et al., SC'21): each of the p devices holds ``chunks`` model chunks
    (virtual stage j on device j mod p), each chunk costing 1/chunks of its stage. Each device runs
    Megatron's static order — (p − r − 1)·2 + (v − 1)·p warm-up chunk-forwards, then one forward,
    one backward — and the simulator enforces the data dependencies between virtual stages. B and
    W are fused (backward = B + W). A chunk's activation is 1/v of its stage's."""
    p, v = len(costs.forward), chunks
    if v <= 0:
        raise InputError(f"chunks must be positive, got {chunks}", field="chunks")
    virtual = p * v
    ops: list[Op] = []
    deps: list[Dep] = []
    for b in range(microbatches):
        for j in range(virtual):
            device = j % p
            tags = (("stage", device + 1), ("chunk", j // p), ("microbatch", b))
            share = (costs.activation_bytes[device] if costs.activation_bytes else 1) / v
            ops.append(Op(f"F{j}:{b}", f"s{device + 1}", costs.forward[device] / v, alloc_bytes=share,  # type: ignore[arg-type]
                          tags=(*tags, ("kind", "F"))))
            ops.append(Op(f"B{j}:{b}", f"s{device + 1}",
                          (costs.backward_input[device] + costs.backward_weight[device]) / v, free_bytes=share,  # type: ignore[arg-type]
                          tags=(*tags, ("kind", "B"))))
            if j:
                deps.append(Dep(f"F{j - 1}:{b}", f"F{j}:{b}"))
            deps.append(Dep(f"B{j + 1}:{b}" if j < virtual - 1 else f"F{j}:{b}", f"B{j}:{b}"))
    total = microbatches * v
    for rank in range(p):
        def unit(k: int, backward: bool, rank: int = rank) -> tuple[int, int]:
            chunk = (k // p) % v
            chunk = v - 1 - chunk if backward else chunk
            return chunk * p + rank, (k // (p * v)) * p + k % p

        warm = min((p - rank - 1) * 2 + (v - 1) * p, total)
        order = [("F", *unit(k, False)) for k in range(warm)]
        for i in range(total - warm):
            order += [("F", *unit(warm + i, False)), ("B", *unit(i, True))]
        order += [("B", *unit(i, True)) for i in range(total - warm, total)]
        for a, c in zip(order, order[1:]):
            deps.append(Dep(f"{a[0]}{a[1]}:{a[2]}", f"{c[0]}{c[1]}:{c[2]}"))
    return Problem(tuple(Processor(f"s{s}") for s in range(1, p + 1)), (), tuple(ops), tuple(deps))


def zb_schedule(costs: StageCosts, microbatches: int, schedule: str, chunks: int = 2):
    if schedule == "interleaved-1f1b":
        if microbatches % len(costs.forward):
            raise InputError("interleaved 1F1B needs micro-batches in multiples of the devices", field="microbatches")
        problem = interleaved_problem(costs, microbatches, chunks)
    else:
        problem = zb_problem(costs, microbatches, schedule)
    return problem, simulate(problem)


def bubble_time(problem: Problem, timeline) -> float:
    """Idle time of the busiest-then-idle pattern: per stage, makespan − its busy time; the maximum."""
    span = timeline.makespan
    busy: dict[str, float] = {}
    for op in problem.ops:
        busy[op.processor] = busy.get(op.processor, 0.0) + op.duration
    return max(span - b for b in busy.values())


__all__ = ["SCHEDULES", "StageCosts", "bubble_time", "in_flight", "zb_problem", "zb_schedule"]
