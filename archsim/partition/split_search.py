"""Algorithm 1's δ-split searches: budget → (part, D1 cycles, D2 cycles) for one layer and axis.

:meth:`archsim.partition.coster.DeltaCoster.fitting_split` builds one search per (layer, axis)
and caches it. With the analytic engine: a channels or reduction split of a δ that is one GEMM
(nearly every layer) inverts the closed form in the split dimension (:class:`AxisSplits`); one of a
δ made of several GEMMs is a table of D2 cycles for every part (one vectorized closed-form call for
a batch of layers) searched by bisection; rows splits are found by arithmetic on whole GEMM copies
plus the inverted closed form for the partial copy. Other engines binary-search the coster's own
split costs. Cycles are integers.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from archsim.array.analytic import form_cycles, form_within, gemm_cycles, gemm_cycles_form
from archsim.array.config import ArrayConfig
from archsim.lowering import Gemm, LoweredLayer
from archsim.split_axis import SplitAxis
from archsim.workload.layer import Layer

if TYPE_CHECKING:
    from archsim.partition.coster import DeltaCoster

_NOTHING = (0, 0, 0)  # no positive part fits


@dataclass(frozen=True)
class TableSplits:
    """Channels or reduction split of one layer's δ: D2 cycles of every part 0..units (D1 of a part
    is D2 of the rest, the same sub-GEMM shape), searched by bisection."""

    units: int
    d2: list[int]  # bisected with a float budget: Python compares int and float exactly

    def cycles(self, part: int) -> int:
        """D2's cycles when it takes ``part`` units (D1's: the rest)."""
        return self.d2[part]

    def __call__(self, budget: float) -> tuple[int, int, int]:
        units = self.units
        if units <= 1 or not budget >= 0:  # part 0 costs nothing; no part fits a negative budget
            return _NOTHING
        part = min(bisect_right(self.d2, budget) - 1, units - 1)
        return (part, self.d2[units - part], self.d2[part]) if part > 0 else _NOTHING


def split_gemm(layer: Layer, gemm: Gemm, axis: str) -> tuple[str, int]:
    """Which dimension of one δ GEMM a channels or reduction split cuts, and how much of it one
    unit is: channels cut n (δ's output channels; an fc layer's n holds several per channel),
    reduction cuts k (the layer's output channels; a conv's k holds its filter window per channel)."""
    if axis == "channels":
        return "n", gemm.n // layer.channels if layer.kind == "fc" else 1
    return "k", 1 if layer.kind == "fc" else gemm.k // layer.filters


def one_gemm(lowered: LoweredLayer) -> bool:
    """Whether the layer's δ is a single GEMM shape (its channels and reduction splits invert the closed form)."""
    delta = lowered.op("D")
    return delta is not None and len(delta.gemms) == 1


@dataclass(frozen=True)
class AxisSplits:
    """Channels or reduction split of a δ that is one GEMM shape (``count`` copies): D2 of part p
    is count · ((⌈per·p/q⌉ + b) · a − 1) (:func:`~archsim.array.analytic.gemm_cycles_form` in the cut
    dimension), so the largest fitting part is that form inverted — the same integers as a table
    of every part, without building it (tested against the tables and a binary search over costed
    sub-GEMMs). ``free``: a zero dimension or count, so every part costs 0."""

    units: int
    per: int  # of the cut dimension per unit
    count: int
    q: int
    b: int
    a: int
    free: bool

    @classmethod
    def of(cls, lowered: LoweredLayer, axis: str, units: int, array: ArrayConfig) -> AxisSplits:
        (gemm,) = lowered.required_op("D").gemms
        dim, per = split_gemm(lowered.layer, gemm, axis)
        fixed = [size for name, size in (("m", gemm.m), ("k", gemm.k), ("n", gemm.n)) if name != dim]
        free = gemm.count <= 0 or per <= 0 or min(fixed) <= 0
        q, b, a = (1, 0, 1) if free else gemm_cycles_form(dim, gemm.m, gemm.k, gemm.n, array.rows, array.cols,
                                                          array.dataflow)
        return cls(units, per, gemm.count, q, b, a, free)

    def cycles(self, part: int) -> int:
        """D2's cycles when it takes ``part`` units (D1's: the rest)."""
        return 0 if self.free else self.count * form_cycles(self.per * part, self.q, self.b, self.a)

    def __call__(self, budget: float) -> tuple[int, int, int]:
        units = self.units
        if units <= 1 or not budget >= 0:  # part 0 costs nothing; no part fits a negative budget
            return _NOTHING
        if self.free or budget == math.inf:
            part = units - 1
        else:  # count · cycles ≤ budget ⇔ cycles ≤ ⌊budget⌋ // count (integers)
            extent = form_within(math.floor(budget) // self.count, self.q, self.b, self.a)
            part = min(units - 1, extent // self.per)
        return (part, self.cycles(units - part), self.cycles(part)) if part > 0 else _NOTHING


_TABLE_BATCH = 1 << 16  # table entries per vectorized call: amortizes numpy's per-call cost, bounds memory


def table_splits(coster: DeltaCoster, index: int) -> dict[tuple[int, str], TableSplits]:
    """Channels and reduction tables of layer ``index`` and of the layers before it (Algorithm 1
    walks backwards) not built yet, up to _TABLE_BATCH entries: D2 cycles of every part of every
    δ GEMM from one closed-form call, summed per layer and axis. Earlier layers whose δ is one GEMM
    are left to :class:`AxisSplits`; ``index`` itself is always tabulated (the tests compare)."""
    wanted: list[tuple[int, str, int]] = []
    size = 0
    for layer in range(index, -1, -1):
        if layer != index and one_gemm(coster.lowered[layer]):
            continue  # its searches are AxisSplits, built when the walk asks
        for axis in ("channels", "reduction"):
            if not coster.has_search(layer, axis):
                units = coster.split_units(layer, axis)
                wanted.append((layer, axis, units))
                delta = coster.lowered[layer].op("D")
                size += (units + 1) * len(delta.gemms) if units > 1 and delta is not None else 0
        if size >= _TABLE_BATCH:
            break
    shapes: list[tuple[int, int]] = []  # (slot in wanted, table length) of each δ GEMM, in order
    m_all, k_all, n_all, count_all = [], [], [], []
    for slot, (layer_index, axis, units) in enumerate(wanted):
        if units <= 1:
            continue
        lowered = coster.lowered[layer_index]
        delta = lowered.op("D")
        parts = np.arange(units + 1, dtype=np.int64)
        for g in delta.gemms if delta is not None else ():
            dim, per = split_gemm(lowered.layer, g, axis)
            m, k, n = (per * parts if dim == name else np.full_like(parts, size)
                       for name, size in (("m", g.m), ("k", g.k), ("n", g.n)))
            m_all.append(m)
            k_all.append(k)
            n_all.append(n)
            count_all.append(np.full_like(parts, g.count))
            shapes.append((slot, units + 1))
    tables = [np.zeros(units + 1 if units > 1 else 0, dtype=np.int64) for _, _, units in wanted]
    if shapes:
        array = coster.array
        m, k, n, count = (np.concatenate(x) for x in (m_all, k_all, n_all, count_all))
        cycles = count * np.where((m > 0) & (k > 0) & (n > 0),
                                  gemm_cycles(m, k, n, array.rows, array.cols, array.dataflow), 0)
        start = 0
        for slot, length in shapes:
            tables[slot] += cycles[start:start + length]
            start += length
    return {(layer, axis): TableSplits(units, table.tolist())
            for (layer, axis, units), table in zip(wanted, tables)}


@dataclass(frozen=True)
class RowSplits:
    """Rows split of one layer's δ: D2 takes the first rows in GEMM order (whole copies, then part
    of one). Per GEMM: (m, copies, cycles per copy, its cycles' form in m — see
    :func:`~archsim.array.analytic.gemm_cycles_form`); D2 cycles before each GEMM (and the total),
    rows before each GEMM, and D1 cycles of the GEMMs after each."""

    units: int
    gemms: tuple[tuple[int, int, int, tuple[int, int, int]], ...]
    starts: list[int]
    rows_at: list[int]
    after: list[int]

    @classmethod
    def of(cls, lowered: LoweredLayer, units: int, array: ArrayConfig) -> RowSplits:
        delta = lowered.op("D")
        R, C, df = array.rows, array.cols, array.dataflow
        gemms = tuple((g.m, g.count, gemm_cycles(g.m, g.k, g.n, R, C, df),
                       gemm_cycles_form("m", g.m, g.k, g.n, R, C, df))
                      if g.m > 0 and g.k > 0 and g.n > 0 else (g.m, g.count, 0, (1, 0, 1))
                      for g in (delta.gemms if delta is not None else ()))
        starts, rows_at = [0], [0]
        for m, copies, cycles, _ in gemms:
            starts.append(starts[-1] + copies * cycles)
            rows_at.append(rows_at[-1] + copies * m)
        after = [starts[-1] - end for end in starts[1:]]
        return cls(units, gemms, starts, rows_at, after)

    def __call__(self, budget: float) -> tuple[int, int, int] | None:
        """(part, D1, D2); None when the budget covers every GEMM (the caller costs units − 1)."""
        if self.units <= 1 or not budget >= 0:
            return _NOTHING
        j = bisect_right(self.starts, budget) - 1  # the GEMM whose copies the budget ends in
        if j == len(self.gemms):
            return None
        m, copies, cycles, form = self.gemms[j]  # cycles > 0: else the next start would fit too
        limit = math.floor(budget)  # cycles are integers: ≤ budget ⇔ ≤ ⌊budget⌋
        whole = (limit - self.starts[j]) // cycles  # < copies, as the next start exceeds the budget
        base = self.starts[j] + whole * cycles
        rows = min(m - 1, form_within(limit - base, *form))  # of the partial copy
        part = self.rows_at[j] + whole * m + rows
        if part == 0:
            return _NOTHING
        if rows == 0:
            return part, (copies - whole) * cycles + self.after[j], base
        return (part, (copies - whole - 1) * cycles + form_cycles(m - rows, *form) + self.after[j],
                base + form_cycles(rows, *form))


@dataclass(frozen=True)
class BinarySplits:
    """Any engine: binary search over :meth:`DeltaCoster.split_cycles` (D2 is monotone in the part)."""

    coster: DeltaCoster
    index: int
    axis: SplitAxis
    units: int

    def __call__(self, budget: float) -> tuple[int, int, int]:
        if self.units <= 1 or not budget >= 0:
            return _NOTHING
        low, high = 0, self.units - 1
        while low < high:
            mid = (low + high + 1) // 2
            if self.coster.split_cycles(self.index, self.axis, mid)[1] <= budget:
                low = mid
            else:
                high = mid - 1
        return (low, *self.coster.split_cycles(self.index, self.axis, low)) if low else _NOTHING


__all__ = ["AxisSplits", "BinarySplits", "RowSplits", "TableSplits", "one_gemm", "split_gemm", "table_splits"]
