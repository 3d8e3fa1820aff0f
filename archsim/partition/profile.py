"""What partitioners read: per-layer op costs and tensor sizes, plus a way to cost δ splits.

A :class:`LayerProfile` is built once per (network, array, batch, mode) from the cost model and
is all a partitioner needs — so partitioners never call the cost model except through
:meth:`LayerProfile.split_cost`, which costs δ′/δ″ as real sub-GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from archsim.array.analytic import gemm_cycles
from archsim.array.config import ArrayConfig
from archsim.array.costing import op_cycles
from archsim.lowering import (SPLIT_AXES, DeltaSplit, LoweredLayer, Mode, delta_split_units, lower_network,
                              split_d2_bytes, split_delta)
from archsim.partition.result import PlacedOp
from archsim.partition.split_search import AxisSplits, BinarySplits, RowSplits, one_gemm, split_gemm, table_splits
from archsim.workload.layer import Network


@dataclass(frozen=True)
class LayerProfile:
    """Per-layer costs (cycles) in network order; fixed = F + G, flexible = D (LayerPipe §III-C)."""

    names: tuple[str, ...]
    forward: np.ndarray
    weight_grad: np.ndarray
    delta: np.ndarray
    activation_bytes: np.ndarray
    delta_bytes: np.ndarray
    weight_bytes: np.ndarray
    lowered: tuple[LoweredLayer, ...] = field(repr=False)
    array: ArrayConfig | None = None
    mode: str = "paper"
    batch: int = 1
    engine: str = "analytic"  # the cost engine (archsim.array.costing.ENGINES) splits are costed with
    edges: tuple[tuple[int, int], ...] | None = None  # (producer, consumer), producer earlier; None: a chain
    unit: str = "cycles"  # of forward/weight_grad/delta: "cycles" (array model) or "seconds" (profiles)
    _split_cache: dict = field(default_factory=dict, repr=False, compare=False, hash=False)

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

    @cached_property
    def layer_cycles(self) -> tuple[list[float], list[float], list[float], list[float]]:
        """forward, weight_grad, delta and fixed as lists of floats: what Algorithm 1's walks read
        per layer, converted once per profile (not once per walk)."""
        return tuple(np.asarray(x, dtype=float).tolist()  # type: ignore[return-value]
                     for x in (self.forward, self.weight_grad, self.delta, self.fixed))

    @cached_property
    def placed_ops(self) -> tuple[tuple[PlacedOp, ...], ...]:
        """Each layer's unsplit ops as its own stage runs them: F, G and (when it costs anything) δ,
        none borrowed. Built once per profile and shared by every partition of it (PlacedOp is
        frozen): a sweep places each layer hundreds of times."""
        forward, weight_grad, delta, _ = self.layer_cycles
        return tuple((PlacedOp(name, "F", f), PlacedOp(name, "G", g)) + ((PlacedOp(name, "D", d),) if d > 0 else ())
                     for name, f, g, d in zip(self.names, forward, weight_grad, delta))

    @cached_property
    def borrowed_deltas(self) -> tuple[PlacedOp, ...]:
        """Each layer's whole δ as another stage runs it (LayerPipe's borrowed δ), built once per profile."""
        return tuple(PlacedOp(name, "D", d, True) for name, d in zip(self.names, self.layer_cycles[2]))

    def producers(self, index: int) -> tuple[int, ...]:
        """Nodes whose output node ``index`` reads (the previous node, for a chain)."""
        return self._producers[index]

    def consumers(self, index: int) -> tuple[int, ...]:
        """Nodes that read node ``index``'s output, in the order of ``edges``."""
        return self._consumers[index]

    @cached_property
    def _producers(self) -> tuple[tuple[int, ...], ...]:
        found: list[list[int]] = [[] for _ in self.names]
        for producer, consumer in self.edge_pairs:
            found[consumer].append(producer)
        return tuple(tuple(p) for p in found)

    @cached_property
    def _consumers(self) -> tuple[tuple[int, ...], ...]:
        found: list[list[int]] = [[] for _ in self.names]
        for producer, consumer in self.edge_pairs:
            found[producer].append(consumer)
        return tuple(tuple(c) for c in found)

    @cached_property
    def antichain_states(self):
        """PipeDream's states of this profile's DAG (:mod:`archsim.partition.antichain`), built once
        per profile: every machine count and level of a sweep reads the same states."""
        from archsim.partition.antichain import antichain_states

        return antichain_states(self)

    @cached_property
    def edge_pairs(self) -> tuple[tuple[int, int], ...]:
        """Every (producer, consumer) index pair: ``edges``, or consecutive layers for a chain."""
        if self.edges is None:
            return tuple((k - 1, k) for k in range(1, len(self.names)))
        return self.edges

    def __len__(self) -> int:
        return len(self.names)

    def split_cost(self, index: int, axis: str, part: int) -> tuple[DeltaSplit, float, float]:
        """Split layer ``index``'s δ giving ``part`` units to D2; returns (split, D1 cycles, D2 cycles)."""
        if self.array is None:
            raise ValueError("this profile has no array: δ splits cannot be costed")
        key = (index, axis, part)
        if key in self._split_cache:
            return self._split_cache[key]
        split = self.split_ops(index, axis, part)
        ops = [op for op in (split.d1, split.d2) if op is not None]
        cycles = op_cycles(ops, self.array, self.engine) if ops else np.zeros(0)
        values = iter(cycles.tolist())
        d1 = float(next(values)) if split.d1 is not None else 0.0
        d2 = float(next(values)) if split.d2 is not None else 0.0
        self._split_cache[key] = (split, d1, d2)
        return split, d1, d2

    def split_ops(self, index: int, axis: str, part: int) -> DeltaSplit:
        """The δ′/δ″ sub-GEMMs and bytes of a split, without costing them (cached)."""
        if self.array is None:
            raise ValueError("this profile has no array: δ splits cannot be costed")
        key = ("ops", index, axis, part)
        if key not in self._split_cache:
            self._split_cache[key] = split_delta(self.lowered[index], part, axis,  # type: ignore[arg-type]
                                                 self.array.element_bytes)
        return self._split_cache[key]

    def split_bytes(self, index: int, axis: str, part: int) -> tuple[int, int]:
        """D2's (out_bytes, extra_bytes) of a split, without building its sub-GEMMs (equal to
        :meth:`split_ops`'s, tested)."""
        if self.array is None:
            raise ValueError("this profile has no array: δ splits cannot be costed")
        return split_d2_bytes(self.lowered[index], part, axis, self.array.element_bytes)  # type: ignore[arg-type]

    def split_cycles(self, index: int, axis: str, part: int) -> tuple[int, int]:
        """(D1, D2) cycles of a split, from integer arithmetic alone: the hot path of Algorithm 1's
        split search. Equal to :meth:`split_cost`'s cycles (tested) without building any op."""
        array = self.array
        if array is None:
            raise ValueError("this profile has no array: δ splits cannot be costed")
        if self.engine == "analytic" and axis != "rows":  # both halves from the axis's search
            search = self._fit_search(index, axis)
            if search.units > 1:
                return search.cycles(search.units - part), search.cycles(part)
        layer = self.lowered[index].layer
        gemms = self.lowered[index].op("D").gemms  # type: ignore[union-attr]
        R, C, df = array.rows, array.cols, array.dataflow

        def cyc(m: int, k: int, n: int) -> int:
            if m <= 0 or k <= 0 or n <= 0:
                return 0
            if self.engine == "cycle":
                from archsim.array.cycle import simulate_cached  # numba loads only for the cycle engine

                return simulate_cached(m, k, n, array).cycles
            return gemm_cycles(m, k, n, R, C, df)

        d1 = d2 = 0
        if axis == "rows":
            need = part
            for g in gemms:
                whole = min(g.count, need // g.m)
                need -= whole * g.m
                d2 += whole * cyc(g.m, g.k, g.n)
                left = g.count - whole
                if left and need:
                    d2 += cyc(need, g.k, g.n)
                    d1 += cyc(g.m - need, g.k, g.n)
                    left -= 1
                    need = 0
                d1 += left * cyc(g.m, g.k, g.n)
            return d1, d2
        total = layer.channels if axis == "channels" else layer.filters
        for g in gemms:
            dim, per = split_gemm(layer, g, axis)

            def cut(units: int) -> list[int]:  # the GEMM with `units` of the axis
                return [per * units if name == dim else size for name, size in (("m", g.m), ("k", g.k), ("n", g.n))]

            d2 += g.count * cyc(*cut(part))
            d1 += g.count * cyc(*cut(total - part))
        return d1, d2

    def fitting_split(self, index: int, axis: str, budget: float) -> tuple[int, int, int]:
        """(part, D1 cycles, D2 cycles) for the largest part in 0..units − 1 whose D2 cycles are
        ≤ ``budget``; (0, 0, 0) when no positive part fits. Algorithm 1's split search.

        D2 cycles grow monotonically with the part. With the analytic engine the search is built
        once per layer and axis (:meth:`_fit_search`, :mod:`archsim.partition.split_search`): the
        closed form inverted in the cut dimension (:func:`~archsim.array.analytic.form_within`)
        for channels and reduction of a one-GEMM δ, and for the partial copy of a rows split after
        whole copies by arithmetic; a table of every part, bisected, for channels and reduction of a
        δ of several GEMMs. Other engines binary-search :meth:`split_cycles`. All give the binary
        search's answer on the same integers (tested).
        """
        search = self._split_cache.get(("fit", index, axis)) or self._fit_search(index, axis)
        found = search(budget)
        if found is None:  # the budget covers all of δ: hand out all but one unit
            part = self.split_units(index, axis) - 1
            return (part, *self.split_cycles(index, axis, part))
        return found

    def largest_fitting_part(self, index: int, axis: str, budget: float) -> int:
        """The largest part in 0..units − 1 whose D2 cycles are ≤ ``budget`` (0 when none is)."""
        return self.fitting_split(index, axis, budget)[0]

    def _fit_search(self, index: int, axis: str):
        """The budget → (part, D1, D2) search of one layer and axis (cached; see :meth:`fitting_split`)."""
        key = ("fit", index, axis)
        search = self._split_cache.get(key)
        if search is not None:
            return search
        if self.array is None:
            raise ValueError("this profile has no array: δ splits cannot be costed")
        units = self.split_units(index, axis)
        if self.engine != "analytic":
            search = BinarySplits(self, index, axis, units)
        elif axis == "rows":
            search = RowSplits.of(self.lowered[index], units, self.array)
        elif one_gemm(self.lowered[index]):
            search = AxisSplits.of(self.lowered[index], axis, units, self.array)
        else:  # with the tables of the layers the walk reaches next, in one vectorized call
            for (layer, table_axis), table in table_splits(self, index).items():
                self._split_cache[("fit", layer, table_axis)] = table
            return self._split_cache[key]
        self._split_cache[key] = search
        return search

    def split_units(self, index: int, axis: str) -> int:
        layer = self.lowered[index].layer
        if axis != "rows" and (not layer.is_gemm or layer.kind == "matmul"):
            return 0
        return delta_split_units(self.lowered[index], axis)  # type: ignore[arg-type]


def build_profile(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact",
                  engine: str = "analytic", *, lowered: tuple[LoweredLayer, ...] | None = None) -> LayerProfile:
    """Lower and cost ``network``; one cost-model call for every op (``engine``: analytic or cycle).
    ``lowered``: ``lower_network(network, batch, mode, array.element_bytes)`` when the caller has it
    (a sweep lowers once for every array shape)."""
    if lowered is None:
        lowered = lower_network(network, batch, mode, array.element_bytes)
    ops = [op for item in lowered for op in item.ops]
    cycles = op_cycles(ops, array, engine)
    per_kind = {kind: np.zeros(len(lowered)) for kind in ("F", "G", "D")}
    position = 0
    for index, item in enumerate(lowered):
        for op in item.ops:
            per_kind[op.kind][index] = float(cycles[position])
            position += 1
    position_of = {item.layer.name: k for k, item in enumerate(lowered)}
    edges = tuple((position_of[p], k) for k, item in enumerate(lowered) for p in item.layer.inputs if p in position_of)
    return LayerProfile(
        names=tuple(item.layer.name for item in lowered),
        forward=per_kind["F"], weight_grad=per_kind["G"], delta=per_kind["D"],
        activation_bytes=np.array([item.tensors.activation_bytes for item in lowered], dtype=np.int64),
        delta_bytes=np.array([item.tensors.delta_bytes if item.op("D") else 0 for item in lowered], dtype=np.int64),
        weight_bytes=np.array([item.tensors.weight_bytes for item in lowered], dtype=np.int64),
        lowered=lowered, array=array, mode=mode, batch=batch, engine=engine, edges=edges,
    )


def profile_from_costs(names, forward, weight_grad, delta, activation_bytes=None, delta_bytes=None,
                       weight_bytes=None, *, edges=None, unit: str = "cycles") -> LayerProfile:
    """A profile from given costs (tests, per-layer profiles in seconds); δ cannot be split.
    ``edges``: (producer, consumer) index pairs, producer earlier in ``names`` (None: a chain)."""
    n = len(names)
    zeros = np.zeros(n, dtype=np.int64)
    as_float = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    as_int = lambda x: zeros.copy() if x is None else np.asarray(x, dtype=np.int64)  # noqa: E731
    return LayerProfile(tuple(names), as_float(forward), as_float(weight_grad), as_float(delta),
                        as_int(activation_bytes), as_int(delta_bytes), as_int(weight_bytes), lowered=(),
                        edges=None if edges is None else tuple((int(a), int(b)) for a, b in edges), unit=unit)


__all__ = ["SPLIT_AXES", "LayerProfile", "build_profile", "profile_from_costs"]
