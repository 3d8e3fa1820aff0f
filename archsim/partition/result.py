"""The one plan type every planner returns (:mod:`archsim.planners`): which ops each stage runs,
on how many replicas and which devices, what it borrowed, what crosses boundaries, in one unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from archsim.partition.memo import per_profile

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used

    from archsim.partition.profile import LayerProfile
    from archsim.split_axis import SplitAxis


@dataclass(frozen=True, init=False)
class PlacedOp:
    """An op on a processor, costing ``cost`` in its plan's unit (:attr:`Partition.unit`: cycles or
    seconds). ``borrowed``: a δ (or a split part of it, δ″ or δ′) of a layer whose F/G live
    elsewhere; ``extra_bytes``: what it receives there (weights; partial sums). ``split_part``: of
    a split δ (D1, D2), the units of ``split_axis`` the split gives D2 (D1 has the rest)."""

    layer: str
    kind: str  # F, G, D, D1, D2
    cost: float
    borrowed: bool = False
    extra_bytes: int = 0
    split_axis: SplitAxis | None = None
    split_part: int = 0

    def __init__(self, layer: str, kind: str, cost: float, borrowed: bool = False, extra_bytes: int = 0,
                 split_axis: SplitAxis | None = None, split_part: int = 0) -> None:
        # Every partition places one op per F, G and δ: a sweep makes millions. The generated frozen
        # __init__ sets the seven fields one object.__setattr__ at a time (2x this one update's cost).
        self.__dict__.update(layer=layer, kind=kind, cost=cost, borrowed=borrowed, extra_bytes=extra_bytes,
                             split_axis=split_axis, split_part=split_part)


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: its processors (``replicas`` of them run data-parallel) and ops; every
    cost is in the plan's unit (:attr:`Partition.unit`)."""

    index: int
    layers: tuple[str, ...]
    ops: tuple[PlacedOp, ...]
    replicas: int = 1
    allreduce_cost: float = 0.0

    @property
    def assigned_cost(self) -> float:
        return sum(op.cost for op in self.ops if not op.borrowed) / self.replicas

    @property
    def borrowed_cost(self) -> float:
        return sum(op.cost for op in self.ops if op.borrowed) / self.replicas

    @property
    def total_cost(self) -> float:
        return self.assigned_cost + self.borrowed_cost + self.allreduce_cost


@dataclass(frozen=True)
class Partition:
    """A plan: stages in forward order plus communication — mandatory (activations after, δ before
    each boundary) and LayerPipe's additional bytes (weight slices, partial sums, δ″ results).

    ``unit``: of every cost in it ("cycles" from the array model, "seconds" from a profile in
    seconds). ``devices``: the cluster devices of each stage (empty:
    stage s on the next ``replicas`` processors in order). ``makespan``: the iteration's simulated
    time when the planner schedules too (SPP and its baselines run PE on the cluster's links)."""

    method: str
    stages: tuple[Stage, ...]
    mandatory_bytes: int
    additional_bytes: int
    boundary_costs: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()
    unit: str = "cycles"
    devices: tuple[tuple[int, ...], ...] = ()
    makespan: float | None = None

    def __repr__(self) -> str:
        """One line, not every placed op (a notebook shows a cell's value by its repr): ``.stages`` has them."""
        ops = sum(len(stage.ops) for stage in self.stages)
        # a planner that schedules (SPP, its baselines) has the iteration's time: the figure its command prints
        makespan = "" if self.makespan is None else f", makespan={self.makespan:g} {self.unit}"
        return (f"Partition(method={self.method!r}, {len(self.stages)} stages on {self.processors} processors, "
                f"{ops} ops, max_stage_cost={self.max_stage_cost:g} {self.unit}{makespan})")

    @property
    def processors(self) -> int:
        return sum(stage.replicas for stage in self.stages)

    @property
    def max_stage_cost(self) -> float:
        """Steady-state time per iteration in the plan's unit: the slowest stage (or boundary transfer)."""
        return max([stage.total_cost for stage in self.stages] + list(self.boundary_costs))

    def speedup(self, single_processor_cost: float) -> float:
        return single_processor_cost / self.max_stage_cost

    @property
    def borrowed_ops(self) -> frozenset[tuple[str, str]]:
        """(layer, kind) of every borrowed op: what tables star and timelines hatch."""
        return frozenset((op.layer, op.kind) for stage in self.stages for op in stage.ops if op.borrowed)

    def to_rows(self) -> list[dict]:
        """One record per processor (stage): its layers, replicas, costs and ops (``*``: borrowed); the costs'
        keys name the plan's :attr:`unit` (``assigned_cycles``, or ``assigned_seconds`` for a plan in seconds)."""
        unit = self.unit
        return [{
            "processor": stage.index + 1,
            "layers": " ".join(stage.layers),
            "replicas": stage.replicas,
            f"assigned_{unit}": stage.assigned_cost,
            f"borrowed_{unit}": stage.borrowed_cost,
            f"total_{unit}": stage.total_cost,
            "ops": " ".join(f"{op.kind}:{op.layer}" + ("*" if op.borrowed else "") for op in stage.ops),
        } for stage in self.stages]

    def to_frame(self) -> pd.DataFrame:
        """:meth:`to_rows` as a DataFrame (imports pandas)."""
        import pandas as pd

        return pd.DataFrame(self.to_rows())


@per_profile
def placed_ops(profile: LayerProfile) -> tuple[tuple[PlacedOp, ...], ...]:
    """Each layer's unsplit ops as its own stage runs them: F, G and (when it costs anything) δ,
    none borrowed. Built once per profile and shared by every partition of it (PlacedOp is
    frozen): a sweep places each layer hundreds of times."""
    forward, weight_grad, delta = (np.asarray(x, dtype=float).tolist()
                                   for x in (profile.forward, profile.weight_grad, profile.delta))
    return tuple((PlacedOp(name, "F", f), PlacedOp(name, "G", g)) + ((PlacedOp(name, "D", d),) if d > 0 else ())
                 for name, f, g, d in zip(profile.names, forward, weight_grad, delta))


@per_profile
def borrowed_deltas(profile: LayerProfile) -> tuple[PlacedOp, ...]:
    """Each layer's whole δ as another stage runs it (LayerPipe's borrowed δ), built once per
    profile; its ``extra_bytes`` are what it receives there, the layer's weights (in ``exact`` mode a non-GEMM
    layer's saved tensors; :func:`~archsim.partition.coster.borrowed_delta_bytes`)."""
    from archsim.partition.coster import borrowed_delta_bytes  # the lowering's counts, behind the coster

    return tuple(PlacedOp(name, "D", d, True, extra) for name, d, (_, extra)
                 in zip(profile.names, np.asarray(profile.delta, dtype=float).tolist(), borrowed_delta_bytes(profile)))


def mandatory_bytes(profile: LayerProfile, stage_of: dict[str, int]) -> int:
    """Bytes every pipeline with this layer→stage map must move: each tensor that crosses a stage
    boundary (an edge of the profile's DAG) goes forward as an activation and comes back as a δ
    of the same size."""
    names, activation = profile.names, profile.activation_bytes.tolist()
    return sum(2 * int(activation[producer]) for producer, consumer in profile.edge_pairs
               if stage_of[names[producer]] != stage_of[names[consumer]])
