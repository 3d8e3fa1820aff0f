"""The reference for :func:`archsim.policies.stage_run.order_problem`: archsim's original builder,
which made one Op and Dep object per action and dependency, kept unchanged as the oracle the
columnar builder must equal (tests/test_stage_run_columns.py)."""

from itertools import pairwise

from archsim.errors import InputError
from archsim.policies.actions import StageOrder
from archsim.policies.stage_profile import StageProfile
from archsim.sim import Dep, Link, Op, Problem, Processor


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
    chains: list[Dep] = []
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
        chains += [Dep(x, y) for x, y in pairwise(ids)]
    deps += chains  # each rank's sequence after every data dependency (the builder's layout)
    processors = tuple(Processor(f"r{r}") for r in range(len(order.ranks)))
    return Problem(processors, tuple(links.values()), tuple(ops), tuple(deps))


