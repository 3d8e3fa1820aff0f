"""The reference for :func:`archsim.policies.zero_bubble.zb_problem`: archsim's original builder,
which made one Op and Dep object per op and dependency, kept unchanged as the oracle the columnar
builder must equal (tests/test_ooo_columns.py). Its op ids now spell the input gradient I, torch's
name (the original spelled it B, which torch and archsim keep for the full backward)."""

from dataclasses import dataclass

from archsim.choices.schedules import LIST_SCHEDULES
from archsim.errors import InputError
from archsim.policies.zero_bubble import in_flight
from archsim.sim import Dep, Op, Problem, Processor


@dataclass(frozen=True)
class StageCosts:
    """The per-stage record this builder was frozen with (archsim's own was replaced by
    :class:`~archsim.policies.stage_profile.StageProfile`, which the test copies into this one):
    an empty ``activation_bytes`` counts no memory."""

    forward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]
    activation_bytes: tuple[float, ...] = ()


def zb_problem(costs: StageCosts, microbatches: int, schedule: str) -> Problem:
    """The list-schedule variant ``list-1f1b``, ``list-zb-h1`` or ``list-zb-h2``."""
    if schedule not in LIST_SCHEDULES:
        raise InputError(f"unknown list schedule {schedule!r}; choose one of {', '.join(LIST_SCHEDULES)}",
                         field="policy")
    p = len(costs.forward)
    ops: list[Op] = []
    deps: list[Dep] = []
    rank = {"I": 0, "F": 1, "W": 2}
    for b in range(microbatches):
        for s in range(1, p + 1):
            memory = costs.activation_bytes[s - 1] if costs.activation_bytes else 0
            tags = (("stage", s), ("microbatch", b))
            fused = schedule == "list-1f1b"
            ops.append(Op(f"F{s}:{b}", f"s{s}", costs.forward[s - 1], (rank["F"], b), alloc_bytes=memory,
                          tags=(*tags, ("kind", "F"))))
            ops.append(Op(f"I{s}:{b}", f"s{s}", costs.backward_input[s - 1], (rank["I"], b),
                          free_bytes=0 if fused else memory, tags=(*tags, ("kind", "D"))))
            ops.append(Op(f"W{s}:{b}", f"s{s}", costs.backward_weight[s - 1], (-1, b) if fused else (rank["W"], b),
                          free_bytes=memory if fused else 0, tags=(*tags, ("kind", "G"))))
            if s > 1:
                deps.append(Dep(f"F{s - 1}:{b}", f"F{s}:{b}"))
            upstream = "W" if fused else "I"  # a fused backward sends δ only after its W
            deps.append(Dep(f"{upstream}{s + 1}:{b}" if s < p else f"F{s}:{b}", f"I{s}:{b}"))
            deps.append(Dep(f"I{s}:{b}", f"W{s}:{b}"))
            window = in_flight(schedule, p, s)
            if b - window >= 0:  # admission: the backward of b − N_s has freed its activation
                deps.append(Dep(f"{'W' if fused else 'I'}{s}:{b - window}", f"F{s}:{b}"))
            if fused and b > 0:  # W right after its B: the next B waits for this W
                deps.append(Dep(f"W{s}:{b - 1}", f"I{s}:{b}"))
    return Problem(tuple(Processor(f"s{s}") for s in range(1, p + 1)), (), tuple(ops), tuple(deps))

