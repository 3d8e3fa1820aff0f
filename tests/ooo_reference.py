"""The reference for :func:`archsim.policies.ooo.ooo_problem`: archsim's original builder, which
made one Op and Dep object per op and dependency, kept unchanged as the oracle the columnar
builder must equal (tests/test_ooo_columns.py)."""

from dataclasses import dataclass

from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.errors import InputError
from archsim.partition.ooo_allocation import device_of
from archsim.policies.ooo import ALLOCATION
from archsim.sim import Dep, Op, Problem, Processor


@dataclass(frozen=True)
class LayerCosts:
    """The per-layer record this builder was frozen with (archsim's own was replaced by a
    :class:`~archsim.partition.profile.LayerProfile` and a ``first_layer_delta`` argument, which the
    test copies into this one); an empty ``stash_bytes`` stashes nothing."""

    forward: tuple[float, ...]
    delta: tuple[float, ...]
    weight_grad: tuple[float, ...]
    first_layer_delta: bool = False
    stash_bytes: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.forward)


def ooo_problem(costs: LayerCosts, devices: int, microbatches: int, policy: str, *, flush: bool = True,
                group: int = 1) -> Problem:
    if policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}", field="policy")
    if devices <= 0 or microbatches <= 0 or group <= 0:
        raise InputError("devices, microbatches and group must be positive", field="devices")
    if policy == "mp" and flush and microbatches > 1:
        raise InputError("mp runs one micro-batch at a time, so it cannot flush (all forwards before any "
                         "backward) over several micro-batches; use it without a flush", field="flush")
    n = len(costs)
    where = [device_of(l, n, devices, ALLOCATION[policy], group) for l in range(n)]
    ops: list[Op] = []
    deps: list[Dep] = []

    def rank(kind: str, mb: int, layer: int) -> tuple:
        backward_layer = n - 1 - layer  # deeper layers first in the backward pass
        if policy in ("mp", "gpipe"):  # conventional: a layer's G then D, then the previous layer's
            return (0, mb, layer) if kind == "F" else (1, mb, backward_layer, kind == "D")
        if policy == "ooo-pipe1" or flush:
            return (0, mb, layer) if kind == "F" else ((1, mb, backward_layer) if kind == "D" else (2, mb, backward_layer))
        return {"D": (0, mb, backward_layer), "F": (1, mb, layer), "G": (2, mb, backward_layer)}[kind]

    def oid(kind: str, layer: int, mb: int) -> str:
        return f"{kind}{layer + 1}:{mb}"

    has_delta = [l > 0 or costs.first_layer_delta for l in range(n)]
    for mb in range(microbatches):
        for l in range(n):
            tags = (("layer", f"l{l + 1}"), ("microbatch", mb))
            stash = costs.stash_bytes[l] if costs.stash_bytes else 0
            ops.append(Op(oid("F", l, mb), f"d{where[l] + 1}", costs.forward[l], rank("F", mb, l),
                          alloc_bytes=stash, tags=(*tags, ("kind", "F"))))
            ops.append(Op(oid("G", l, mb), f"d{where[l] + 1}", costs.weight_grad[l], rank("G", mb, l),
                          free_bytes=stash, tags=(*tags, ("kind", "G"))))
            if has_delta[l]:
                ops.append(Op(oid("D", l, mb), f"d{where[l] + 1}", costs.delta[l], rank("D", mb, l),
                              tags=(*tags, ("kind", "D"))))
            if l:
                deps.append(Dep(oid("F", l - 1, mb), oid("F", l, mb)))
            source = oid("F", n - 1, mb) if l == n - 1 else oid("D", l + 1, mb)
            deps.append(Dep(source, oid("G", l, mb)))
            if has_delta[l]:
                deps.append(Dep(source, oid("D", l, mb)))
        if policy == "mp" and mb:  # one micro-batch at a time: no pipelining across devices
            deps.append(Dep(oid("G", 0, mb - 1), oid("F", 0, mb)))
    if flush and microbatches > 1:
        ops.append(Op("flush", "d1", 0.0, (-1,)))
        for mb in range(microbatches):
            deps.append(Dep(oid("F", n - 1, mb), "flush"))
            for l in range(n):
                deps.append(Dep("flush", oid("G", l, mb)))
                if has_delta[l]:
                    deps.append(Dep("flush", oid("D", l, mb)))
    processors = tuple(Processor(f"d{i + 1}") for i in range(devices))
    return Problem(processors, (), tuple(ops), tuple(deps))

