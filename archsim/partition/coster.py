"""The δ-split coster a partitioner is handed: the cost of δ′/δ″ sub-GEMMs of a profile's layers.

LayerPipe's Algorithm 1 splits a layer's δ by operational parallelism; each half is a real
sub-GEMM costed by the cost model, never a linear share. :class:`DeltaCoster` is the one narrow
door from a partitioner to lowering and the array model: the profile it serves stays plain data
(:class:`~archsim.partition.profile.LayerProfile`), and a partitioner given no coster cannot split
δ (profiles in seconds from ``graph.txt`` or a measured run have no sub-GEMMs to cost). The coster
caches what it computed — sub-GEMMs, costs and the per-layer split searches
(:mod:`archsim.partition.split_search`) — because a sweep asks for the same splits thousands of times.
The lowering's byte counts of a borrowed δ or split piece (:func:`borrowed_delta_bytes`,
      :func:`op_weight_bytes`) come through this module too, so the plan types and the communication
count read a profile's shapes without importing the lowering.
"""

from __future__ import annotations

import numpy as np

from archsim.array.analytic import gemm_cycles
from archsim.array.config import ArrayConfig
from archsim.array.costing import op_cycles, rated_k
from archsim.lowering import (
    DeltaSplit,
    LoweredLayer,
    delta_split_units,
    piece_weight_bytes,
    split_d1_bytes,
    split_d2_bytes,
    split_delta,
    split_row_gemms,
    whole_delta_bytes,
    whole_delta_weight_bytes,
)
from archsim.partition.memo import per_profile
from archsim.partition.split_search import AxisSplits, BinarySplits, RowSplits, one_gemm, split_gemm, table_splits
from archsim.split_axis import SplitAxis
from archsim.workload.layer_types import FILTER_KINDS


class DeltaCoster:
    """Costs δ splits of ``lowered`` (a network's lowered layers, in profile order) on ``array``
    with ``engine`` (analytic or cycle, :data:`archsim.choices.devices.ENGINES`). Cycles are integers."""

    def __init__(self, lowered: tuple[LoweredLayer, ...], array: ArrayConfig, engine: str = "analytic") -> None:
        self.lowered = lowered
        self.array = array
        self.engine = engine
        # The split searches invert SCALE-Sim's closed form in a cut dimension: the analytic engine at one MAC per PE
        # per cycle; a packed reduction (array.mac_rate) and the cycle engine bisect split_cycles instead.
        self._closed_form = engine == "analytic" and array.mac_rate == 1
        self._cache: dict = {}

    @staticmethod
    def of(profile) -> DeltaCoster | None:
        """The array model's coster of a profile built by :func:`~archsim.partition.profile.build_profile`
        (one per profile, shared by every partition of it); None for a profile with no sub-GEMMs or
        with costs in seconds (the coster's are cycles)."""
        return _coster_of(profile)

    def split_cost(self, index: int, axis: SplitAxis, part: int) -> tuple[DeltaSplit, float, float]:
        """Split layer ``index``'s δ giving ``part`` units to D2; returns (split, D1 cycles, D2 cycles)."""
        key = (index, axis, part)
        if key in self._cache:
            return self._cache[key]
        split = self.split_ops(index, axis, part)
        ops = [op for op in (split.d1, split.d2) if op is not None]
        cycles = op_cycles(ops, self.array, self.engine) if ops else np.zeros(0)
        values = iter(cycles.tolist())
        d1 = float(next(values)) if split.d1 is not None else 0.0
        d2 = float(next(values)) if split.d2 is not None else 0.0
        self._cache[key] = (split, d1, d2)
        return split, d1, d2

    def split_ops(self, index: int, axis: SplitAxis, part: int) -> DeltaSplit:
        """The δ′/δ″ sub-GEMMs and bytes of a split, without costing them (cached)."""
        key = ("ops", index, axis, part)
        if key not in self._cache:
            self._cache[key] = split_delta(self.lowered[index], part, axis,
                                           self.array.element_bytes)
        return self._cache[key]

    def split_bytes(self, index: int, axis: SplitAxis, part: int) -> tuple[int, int]:
        """D2's (out_bytes, extra_bytes) of a split, without building its sub-GEMMs (equal to
        :meth:`split_ops`'s, tested)."""
        return split_d2_bytes(self.lowered[index], part, axis, self.array.element_bytes)

    def split_d1_bytes(self, index: int, axis: SplitAxis, part: int) -> tuple[int, int]:
        """D1's (out_bytes, extra_bytes) of the same split (D2 takes ``part`` units, D1 the rest)
        when D1 runs away from its layer's weights: Algorithm 1 can strand δ′ (module
        :mod:`archsim.partition.layerpipe`)."""
        return split_d1_bytes(self.lowered[index], part, axis, self.array.element_bytes)

    def split_cycles(self, index: int, axis: SplitAxis, part: int) -> tuple[int, int]:
        """(D1, D2) cycles of a split, from integer arithmetic alone: the hot path of Algorithm 1's
        split search. Equal to :meth:`split_cost`'s cycles (tested) without building any op."""
        array = self.array
        if self._closed_form and axis != "rows":  # both halves from the axis's search
            search = self._fit_search(index, axis)
            if search.units > 1:
                return search.cycles(search.units - part), search.cycles(part)
        layer = self.lowered[index].layer
        gemms = self.lowered[index].required_op("D").gemms
        R, C, df = array.rows, array.cols, array.dataflow

        def cyc(m: int, k: int, n: int) -> int:
            if m <= 0 or k <= 0 or n <= 0:
                return 0
            k = int(rated_k(np.int64(k), array))  # packed at the array's MACs per PE per cycle, as op_cycles times it
            if self.engine == "cycle":
                from archsim.array.cycle import simulate_cached  # numba loads only for the cycle engine

                return simulate_cached(m, k, n, array).cycles
            return gemm_cycles(m, k, n, R, C, df)

        if axis == "rows":
            first, rest = split_row_gemms(gemms, part)
            return sum(g.count * cyc(g.m, g.k, g.n) for g in rest), sum(g.count * cyc(g.m, g.k, g.n) for g in first)
        d1 = d2 = 0
        total = layer.channels if axis == "channels" else layer.filters
        for g in gemms:
            dim, per = split_gemm(layer, g, axis)
            shape = (("m", g.m), ("k", g.k), ("n", g.n))
            d2 += g.count * cyc(*(per * part if name == dim else size for name, size in shape))
            d1 += g.count * cyc(*(per * (total - part) if name == dim else size for name, size in shape))
        return d1, d2

    def fitting_split(self, index: int, axis: SplitAxis, budget: float) -> tuple[int, int, int]:
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
        search = self._cache.get(("fit", index, axis)) or self._fit_search(index, axis)
        found = search(budget)
        if found is None:  # the budget covers all of δ: hand out all but one unit
            part = self.split_units(index, axis) - 1
            return (part, *self.split_cycles(index, axis, part))
        return found

    def has_search(self, index: int, axis: SplitAxis) -> bool:
        """Whether the budget search of this layer and axis is built (:func:`table_splits` skips it)."""
        return ("fit", index, axis) in self._cache

    def _fit_search(self, index: int, axis: SplitAxis):
        """The budget → (part, D1, D2) search of one layer and axis (cached; see :meth:`fitting_split`)."""
        key = ("fit", index, axis)
        search = self._cache.get(key)
        if search is not None:
            return search
        units = self.split_units(index, axis)
        if not self._closed_form:
            search = BinarySplits(self, index, axis, units)
        elif axis == "rows":
            search = RowSplits.of(self.lowered[index], units, self.array)
        elif one_gemm(self.lowered[index]):
            search = AxisSplits.of(self.lowered[index], axis, units, self.array)
        else:  # with the tables of the layers the walk reaches next, in one vectorized call
            for (layer, table_axis), table in table_splits(self, index).items():
                self._cache[("fit", layer, table_axis)] = table
            return self._cache[key]
        self._cache[key] = search
        return search

    def split_units(self, index: int, axis: SplitAxis) -> int:
        """How many units layer ``index``'s δ splits into along ``axis`` (0: it cannot split so)."""
        layer = self.lowered[index].layer
        if axis != "rows" and layer.kind not in FILTER_KINDS:
            return 0
        return delta_split_units(self.lowered[index], axis)


@per_profile
def borrowed_delta_bytes(profile) -> tuple[tuple[int, int], ...]:
    """Each layer's (out_bytes, extra_bytes) when its whole δ runs on another stage (LayerPipe's
    borrowed δ): the result it sends back (δ of the layer's input) and the weights it receives.
    One source, the lowering, as for every split piece (:func:`~archsim.lowering.whole_delta_bytes`,
    a rows split moving every row; in ``exact`` mode a non-GEMM δ's result and saved tensors too,
    :func:`~archsim.lowering.vector_delta_bytes`); a profile without lowered layers (costs in seconds)
    has no shapes: its own record of δ's size and no weights."""
    if not profile.lowered:
        return tuple((int(size), 0) for size in profile.delta_bytes.tolist())
    element_bytes = profile.array.element_bytes if profile.array is not None else 1
    return tuple(whole_delta_bytes(item, element_bytes, profile.mode) for item in profile.lowered)


def op_weight_bytes(profile, index: int, kind: str, axis: SplitAxis | None = None, part: int = 0) -> int:
    """Bytes of weights that layer ``index``'s borrowed δ (``kind`` D: :func:`~archsim.lowering.whole_delta_weight_bytes`)
    or split piece (D2 with ``part`` units of ``axis``, D1 with the rest: :func:`~archsim.lowering.piece_weight_bytes`)
    receives where it runs; 0 for a profile without lowered layers, or a piece of no units."""
    if not profile.lowered:
        return 0
    lowered = profile.lowered[index]
    element_bytes = profile.array.element_bytes if profile.array is not None else 1
    if kind == "D":
        return whole_delta_weight_bytes(lowered, element_bytes, profile.mode)
    if axis is None:
        return 0
    units = part if kind == "D2" else delta_split_units(lowered, axis) - part
    return piece_weight_bytes(lowered, axis, units, element_bytes) if units > 0 else 0


@per_profile
def _coster_of(profile) -> DeltaCoster | None:
    if profile.array is None or not profile.lowered or profile.unit != "cycles":
        return None  # nothing to split, or costs in seconds a coster in cycles cannot match
    return DeltaCoster(profile.lowered, profile.array, profile.engine)


__all__ = ["DeltaCoster", "borrowed_delta_bytes", "op_weight_bytes"]
