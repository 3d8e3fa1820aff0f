"""What partitioners read: per-layer op costs and tensor sizes.

A :class:`LayerProfile` is built once per (network, array, batch, mode) from the cost model (or
from given costs) and is plain data; partitioners never call the cost model except through a
:class:`~archsim.partition.coster.DeltaCoster`, which costs δ′/δ″ as real sub-GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from archsim.workload.layer import layer_edges

if TYPE_CHECKING:  # a profile read from a file (PipeDream's graph.txt) needs no cost model
    import pandas as pd

    from archsim.array.config import ArrayConfig
    from archsim.lowering import LoweredLayer, Mode
    from archsim.workload.layer import Network


# a profile's per-layer arrays: costs in its unit, then bytes
_ARRAYS = ("forward", "weight_grad", "delta", "activation_bytes", "delta_bytes", "weight_bytes", "stash_bytes")


@dataclass(frozen=True, eq=False)
class LayerProfile:
    """Per-layer costs in network order, in ``unit`` (cycles or seconds); fixed = F + G, flexible =
    D (LayerPipe §III-C). Plain data: ``lowered``, ``array``, ``engine``, ``mode`` and ``batch`` say
    where the costs came from; splitting δ is a :class:`~archsim.partition.coster.DeltaCoster`'s job,
    and what a planner derives from a profile it keeps itself (:mod:`archsim.partition.memo`).
    Profiles compare by identity (their arrays have no single truth value)."""

    names: tuple[str, ...]
    forward: np.ndarray
    weight_grad: np.ndarray
    delta: np.ndarray
    activation_bytes: np.ndarray
    delta_bytes: np.ndarray  # δ of each layer's input, sent back where a stage starts at it (0: no δ op)
    weight_bytes: np.ndarray
    # bytes of each layer's input kept from its F until its backward has read it: G reads it even where the
    # layer computes no δ (the first layer), so stash and δ bytes differ there (0: neither G nor δ)
    stash_bytes: np.ndarray
    lowered: tuple[LoweredLayer, ...] = field(repr=False)
    array: ArrayConfig | None = None
    mode: str = "paper"
    batch: int = 1
    engine: str = "analytic"  # the cost engine (archsim.choices.devices.ENGINES) the costs came from
    edges: tuple[tuple[int, int], ...] | None = None  # (producer, consumer), producer earlier; None: a chain
    unit: str = "cycles"  # of forward/weight_grad/delta: "cycles" (array model) or "seconds" (profiles)

    def __post_init__(self) -> None:
        """Each cost and size array the profile's own read-only copy (the caller's array stays theirs, writeable):
        planners keep what they derive from a profile by its identity (:mod:`archsim.partition.memo`), so an array
        changed in place planned on stale values, silently; a changed profile is
        ``dataclasses.replace(profile, forward=…)``."""
        for name in _ARRAYS:
            own = np.array(getattr(self, name))  # a copy (a few numbers per layer)
            own.flags.writeable = False
            object.__setattr__(self, name, own)

    def __setstate__(self, state: dict) -> None:
        """A pickled or deep-copied profile's arrays read-only again (numpy restores them writeable)."""
        self.__dict__.update(state)
        self.__post_init__()

    def __repr__(self) -> str:
        """One line, not every layer's costs (a notebook shows a cell's value by its repr): the arrays have them."""
        span = self.names[0] if len(self.names) == 1 else f"{self.names[0]} … {self.names[-1]}"
        array = "" if self.array is None else f"array={self.array.rows}x{self.array.cols}, "
        return (f"LayerProfile({len(self.names)} layers: {span}, {array}batch={self.batch}, mode={self.mode!r}, "
                f"engine={self.engine!r}, unit={self.unit!r}, total={float(self.total.sum()):g})")

    def to_frame(self) -> pd.DataFrame:
        """Per-layer costs named in the profile's unit as a plan's frame names them (``F_cycles``, ``G_cycles``,
        ``D_cycles``, ``total_cycles``, or ``_seconds``) and the bytes each layer moves and stashes, for a table or
        a plot (imports pandas)."""
        import pandas as pd

        unit = self.unit
        return pd.DataFrame({"layer": list(self.names), f"F_{unit}": self.forward, f"G_{unit}": self.weight_grad,
                             f"D_{unit}": self.delta, f"total_{unit}": self.total,
                             "activation_bytes": self.activation_bytes, "delta_bytes": self.delta_bytes,
                             "weight_bytes": self.weight_bytes, "stash_bytes": self.stash_bytes})

    @property
    def fixed(self) -> np.ndarray:
        return self.forward + self.weight_grad

    @property
    def total(self) -> np.ndarray:
        return self.forward + self.weight_grad + self.delta

    @property
    def backward(self) -> np.ndarray:
        """G + D: what a profile that does not split the backward (PipeDream's) measures as one."""
        return self.weight_grad + self.delta

    def producers(self, index: int) -> tuple[int, ...]:
        """Nodes whose output node ``index`` reads (the previous node, for a chain)."""
        return self._producers[index]

    def consumers(self, index: int) -> tuple[int, ...]:
        """Nodes that read node ``index``'s output, in the order of ``edges``."""
        return self._consumers[index]

    @cached_property
    def _producers(self) -> tuple[tuple[int, ...], ...]:
        return _neighbours(len(self.names), ((consumer, producer) for producer, consumer in self.edge_pairs))

    @cached_property
    def _consumers(self) -> tuple[tuple[int, ...], ...]:
        return _neighbours(len(self.names), self.edge_pairs)

    @cached_property
    def edge_pairs(self) -> tuple[tuple[int, int], ...]:
        """Every (producer, consumer) index pair: ``edges``, or consecutive layers for a chain."""
        if self.edges is None:
            return tuple((k - 1, k) for k in range(1, len(self.names)))
        return self.edges

    def __len__(self) -> int:
        return len(self.names)


def unstashed_layers(profile: LayerProfile) -> frozenset[str]:
    """Layers whose weights no backward op reads: those without δ (``exact`` lowering's first layer).
    A weight stash exists so a micro-batch's δ reads the weights its forward used; G reads δ and the
    layer's input, not W. A profile without lowered ops (built from costs) names none."""
    return frozenset(item.layer.name for item in profile.lowered if item.op("D") is None)


def _neighbours(nodes: int, pairs) -> tuple[tuple[int, ...], ...]:
    """Per node 0 … nodes − 1, the ``b`` of each (a, b) in ``pairs`` whose ``a`` it is, in ``pairs``' order:
    one grouping for a profile's producers (pairs turned round) and its consumers."""
    found: list[list[int]] = [[] for _ in range(nodes)]
    for node, other in pairs:
        found[node].append(other)
    return tuple(tuple(group) for group in found)


def build_profile(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact",
                  engine: str = "analytic", *, lowered: tuple[LoweredLayer, ...] | None = None) -> LayerProfile:
    """Lower and cost ``network``; one cost-model call for every op (``engine``: analytic or cycle).
    ``lowered``: ``lower_network(network, batch, mode, array.element_bytes)`` when the caller has it
    (a sweep lowers once for every array shape)."""
    from archsim.array.costing import op_cycles
    from archsim.lowering import lower_network

    if lowered is None:
        lowered = lower_network(network, batch, mode, array.element_bytes)
    cycles = op_cycles([op for item in lowered for op in item.ops], array, engine)
    return profile_of_lowered(lowered, cycles, array=array, mode=mode, batch=batch, engine=engine)


@dataclass(frozen=True)
class OpRates:
    """One array's cost of each layer's F, G and D (network order; 0 where a layer has no such op), by kind:
    ``cycles`` and ``utilization`` (the share of the array's PEs the op keeps busy alone, MACs / (cycles · PEs · the
    array's MACs per PE per cycle));
    ``input_bytes`` and ``output_bytes``: each layer's input activation (the size of δ of its input) and its
    output activation, bytes."""

    cycles: dict[str, tuple[float, ...]]
    utilization: dict[str, tuple[float, ...]]
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]


def op_rates(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact") -> OpRates:
    """Lower ``network`` and cost its ops on ``array`` with the analytic model (one cost-model call): what a
    schedule that shares one array between streams reads (:mod:`archsim.policies.multistream`), beside a
    profile's costs."""
    from archsim.array.costing import op_costs
    from archsim.lowering import lower_network

    lowered = lower_network(network, batch, mode, array.element_bytes)
    costs = op_costs([op for item in lowered for op in item.ops], array)
    found = {(row.layer, row.op): (float(row.cycles), float(row.utilization)) for row in costs.itertuples()}
    names = [item.layer.name for item in lowered]

    def column(kind: str, index: int) -> tuple[float, ...]:
        return tuple(found.get((name, kind), (0.0, 0.0))[index] for name in names)

    return OpRates({kind: column(kind, 0) for kind in "FGD"}, {kind: column(kind, 1) for kind in "FGD"},
                   tuple(item.tensors.delta_bytes for item in lowered),
                   tuple(item.tensors.activation_bytes for item in lowered))


def profile_of_lowered(lowered: tuple[LoweredLayer, ...], costs, *, array: ArrayConfig | None = None,
                       mode: str = "exact", batch: int = 1, engine: str = "analytic",
                       unit: str = "cycles") -> LayerProfile:
    """A profile of ``lowered`` whose ops (in order, every layer's ops one after another) cost ``costs``
    in ``unit``: the one place a lowered network's F, G and D costs and tensor sizes become a profile,
    whatever priced the ops (an array's cycles, a device's seconds)."""
    per_kind = {kind: np.zeros(len(lowered)) for kind in ("F", "G", "D")}
    position = 0
    for index, item in enumerate(lowered):
        for op in item.ops:
            per_kind[op.kind][index] = float(costs[position])
            position += 1
    edges = layer_edges(item.layer for item in lowered)
    return LayerProfile(
        names=tuple(item.layer.name for item in lowered),
        forward=per_kind["F"], weight_grad=per_kind["G"], delta=per_kind["D"],
        activation_bytes=np.array([item.tensors.activation_bytes for item in lowered], dtype=np.int64),
        delta_bytes=np.array([item.tensors.delta_bytes if item.op("D") else 0 for item in lowered], dtype=np.int64),
        weight_bytes=np.array([item.tensors.weight_bytes for item in lowered], dtype=np.int64),
        stash_bytes=np.array([item.tensors.delta_bytes if item.op("G") or item.op("D") else 0 for item in lowered],
                             dtype=np.int64),
        lowered=lowered, array=array, mode=mode, batch=batch, engine=engine, edges=edges, unit=unit,
    )


def profile_from_costs(names, forward, weight_grad, delta, activation_bytes=None, delta_bytes=None,
                       weight_bytes=None, *, stash_bytes=None, edges=None, unit: str = "cycles") -> LayerProfile:
    """A profile from given costs (tests, per-layer profiles in seconds); δ cannot be split.
    ``edges``: (producer, consumer) index pairs, producer earlier in ``names`` (None: a chain).
    ``stash_bytes``: each layer's kept input (None: ``delta_bytes``, given costs name no ops to tell
    a layer whose G alone reads its input)."""
    n = len(names)
    zeros = np.zeros(n, dtype=np.int64)
    as_float = lambda x: np.asarray(x, dtype=float)
    as_int = lambda x: zeros.copy() if x is None else np.asarray(x, dtype=np.int64)
    return LayerProfile(tuple(names), as_float(forward), as_float(weight_grad), as_float(delta),
                        as_int(activation_bytes), as_int(delta_bytes), as_int(weight_bytes),
                        as_int(delta_bytes if stash_bytes is None else stash_bytes), lowered=(),
                        edges=None if edges is None else tuple((int(a), int(b)) for a, b in edges), unit=unit)


def collapse_profile(profile: LayerProfile, groups) -> LayerProfile:
    """A chain profile with one layer per group of ``profile``'s layers (``groups``: (name, indices)
    pairs in chain order, e.g. a transformer's blocks): F, G and δ the sums of the group's layers' costs
    (same unit), as a paper that times a block as one layer sees it; weight and stash bytes summed (every
    op's input is held until the block's G), activation bytes the group's last layer's (the block's
    output, sent to the next device). No new cost: the per-layer costs are only added up."""
    index = [np.asarray(indices, dtype=np.int64) for _, indices in groups]
    total = lambda values: np.array([values[i].sum() for i in index], dtype=values.dtype)
    return LayerProfile(
        names=tuple(name for name, _ in groups), forward=total(profile.forward),
        weight_grad=total(profile.weight_grad), delta=total(profile.delta),
        activation_bytes=np.array([profile.activation_bytes[i[-1]] for i in index], dtype=np.int64),
        delta_bytes=total(profile.delta_bytes), weight_bytes=total(profile.weight_bytes),
        stash_bytes=total(profile.stash_bytes), lowered=(),
        array=profile.array, mode=profile.mode, batch=profile.batch, engine=profile.engine, edges=None,
        unit=profile.unit)


__all__ = ["LayerProfile", "OpRates", "build_profile", "collapse_profile", "op_rates", "profile_from_costs",
           "profile_of_lowered", "unstashed_layers"]
