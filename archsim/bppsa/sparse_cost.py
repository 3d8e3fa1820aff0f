"""FLOPs of each scan step from sparsity patterns alone — a symbolic CSR product (BPPSA §3.3, §4.3).

The patterns of the transposed Jacobians are fixed by the architecture (and the pruning mask), so
the index work of a CSR·CSR product can be done before training and only the arithmetic remains
(§3.3). This module counts that arithmetic exactly, by static analysis as §4.3 does, never by timing:

* C = X·Y with both sparse (Gustavson): every stored X[i,k] meets every stored Y[k,j], so
  ``multiplies = Σ_k colnnz(X)[k]·rownnz(Y)[k]``; each of C's ``nnz(C)`` entries takes one add less
  than its terms, ``adds = multiplies − nnz(C)``.
* y = X·v with v a dense gradient vector: ``multiplies = nnz(X)``, ``adds = nnz(X) − (rows with an entry)``.

FLOPs = multiplies + adds. The *dense* figure (Fig. 10's x-axis) is the same product with every
entry stored: r·c·(2k − 1) for (r×k)·(k×c). Gradient vectors are taken as dense.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from archsim.bppsa.scan import IDENTITY, ScanRun, Step, blelloch_scan, linear_scan

if TYPE_CHECKING:
    import scipy.sparse as sp  # annotations only: loaded where used


@dataclass(frozen=True, eq=False)
class Pattern:
    """A symbolic scan operand: a CSR pattern (all stored entries 1) or a dense vector of ``length``."""

    matrix: sp.csr_array | None = None
    length: int = 0

    @property
    def ndim(self) -> int:
        return 1 if self.matrix is None else 2


def pattern_of(value) -> Pattern:
    """The pattern of a CSR matrix (explicitly stored zeros count as pattern) or of a vector."""
    import scipy.sparse as sp

    if np.ndim(value) == 1:
        return Pattern(length=int(np.size(value)))
    m = sp.csr_array(value)
    return Pattern(sp.csr_array((np.ones(m.nnz, dtype=np.float32), m.indices, m.indptr), shape=m.shape))


def _binary(m: sp.csr_array) -> sp.csr_array:
    m.data[:] = 1.0  # all entries of a product of positive patterns are positive: no cancellation
    return m


PART_MULTIPLIES = 20_000_000  # a product's row block where progress is reported: about 0.1–0.5 s of scipy's work


def product_flops(x: Pattern, y: Pattern, on_part: Callable[[float], object] | None = None
                  ) -> tuple[int, int, Pattern]:
    """(sparse FLOPs, dense FLOPs, pattern of X·Y) for a matrix X and a matrix or vector Y. ``on_part(f)``, if
    given, is called as the product's row blocks of about PART_MULTIPLIES multiplies each end, f the fraction of
    them done (one product of dense fill-in can take most of a run; the same pattern either way)."""
    import scipy.sparse as sp

    assert x.matrix is not None, "X is a matrix"
    rows, inner = x.matrix.shape
    if y.matrix is None:
        nnz = x.matrix.nnz
        nonempty = int(np.count_nonzero(np.diff(x.matrix.indptr)))
        return 2 * nnz - nonempty, rows * (2 * inner - 1), Pattern(length=rows)
    col_nnz = np.bincount(x.matrix.indices, minlength=inner).astype(np.int64)
    row_nnz = np.diff(y.matrix.indptr).astype(np.int64)
    multiplies = int(col_nnz @ row_nnz)
    whole = x.matrix @ y.matrix if on_part is None else _in_row_blocks(x.matrix, y.matrix, multiplies, on_part)
    product = _binary(sp.csr_array(whole))
    cols = y.matrix.shape[1]
    return 2 * multiplies - product.nnz, rows * cols * (2 * inner - 1), Pattern(product)


def _in_row_blocks(x: sp.csr_array, y: sp.csr_array, multiplies: int, on_part: Callable[[float], object]):
    """X·Y's pattern in row blocks of about PART_MULTIPLIES multiplies each (row i of X·Y takes Σ nnz(Y[k, :]) over
    X[i, k] stored), ``on_part(f)`` called as each ends; one product where there are fewer than two blocks. Only
    the blocks' column indices are kept, their values dropped as they come (the pattern's are ones): memory as
    one product's, not twice."""
    import scipy.sparse as sp

    blocks = multiplies // PART_MULTIPLIES
    if blocks < 2:
        return x @ y
    before = np.concatenate(([0], np.cumsum(np.diff(y.indptr)[x.indices])))[x.indptr]  # multiplies before each row
    inner = np.searchsorted(before, np.linspace(0, multiplies, blocks + 1)[1:-1])
    cuts = sorted({0, x.shape[0], *(int(c) for c in inner)})
    indices, ends, stored = [], [np.zeros(1, np.int64)], 0
    for block, (first, last) in enumerate(pairwise(cuts), 1):
        part = x[first:last] @ y
        indices.append(part.indices)
        ends.append(part.indptr[1:].astype(np.int64) + stored)
        stored += part.nnz
        del part
        on_part(block / (len(cuts) - 1))
    index = np.concatenate(indices)
    del indices
    indptr = np.concatenate(ends).astype(index.dtype if stored < np.iinfo(index.dtype).max else np.int64)
    return sp.csr_array((np.ones(stored, np.float32), index, indptr), shape=(x.shape[0], y.shape[1]))


def product_multiplies(x: Pattern, y: Pattern) -> int:
    """The multiplies of X·Y (:func:`product_flops`'s count) before the product is formed: a budget's check."""
    assert x.matrix is not None, "X is a matrix"
    if y.matrix is None:
        return int(x.matrix.nnz)
    col_nnz = np.bincount(x.matrix.indices, minlength=x.matrix.shape[1]).astype(np.int64)
    return int(col_nnz @ np.diff(y.matrix.indptr).astype(np.int64))


def product_entries_bound(x: Pattern, y: Pattern, multiplies: int) -> int:
    """An upper bound on the entries X·Y stores, before it is formed: each entry takes at least one of its
    ``multiplies``, and there are at most rows·cols of them (a vector: its rows). scipy sizes a product by its
    entries, so this, not the multiplies, is what forming it holds (two dense 1024 × 1024 Jacobians: 1,074 M
    multiplies, 1 M entries)."""
    assert x.matrix is not None, "X is a matrix"
    rows = x.matrix.shape[0]
    return rows if y.matrix is None else min(multiplies, rows * y.matrix.shape[1])


class FlopCounter:
    """A ◇ on patterns that logs (sparse, dense) FLOPs per call, in call order; ``on_step()``, if given, is
    called after each, and ``on_part(f)`` within a product (:func:`product_flops`): a progress bar's.
    ``budget(multiplies, entries)``, if given, is called before each product with the multiplies it will take and
    the bound on the entries it will hold (:func:`product_entries_bound`); it may raise: a run stopped before a
    product too large to form."""

    def __init__(self, on_step: Callable[[], object] | None = None,
                 on_part: Callable[[float], object] | None = None,
                 budget: Callable[[int, int], object] | None = None) -> None:
        self.log: list[tuple[int, int]] = []
        self.on_step, self.on_part, self.budget = on_step, on_part, budget

    def __call__(self, a, b):
        if a is IDENTITY or b is IDENTITY:
            self.log.append((0, 0))
            out = b if a is IDENTITY else a
        else:
            if self.budget is not None:
                multiplies = product_multiplies(b, a)
                self.budget(multiplies, product_entries_bound(b, a, multiplies))
            flops, dense, out = product_flops(b, a, self.on_part)  # A ◇ B = B·A
            self.log.append((flops, dense))
        if self.on_step is not None:
            self.on_step()
        return out


@dataclass(frozen=True)
class _Extent:
    """A scan operand's shape alone: ``rows`` × ``cols``, or a vector of ``rows`` (``cols`` 0)."""

    rows: int
    cols: int

    @property
    def ndim(self) -> int:
        return 1 if self.cols == 0 else 2


def dense_multiplies(elements: Sequence, up_levels: int | None = None) -> int:
    """The multiplies BPPSA's scan (``up_levels`` deep) and BP's together would take were every product dense,
    from the operands' shapes alone (nothing formed): a bound on the sum of :func:`product_multiplies` over
    :func:`count_flops`'s two runs, which only a product's stored entries can lower (r·k·c for (r×k)·(k×c), r·k
    for a vector)."""
    total = [0]

    def op(a, b):  # A ◇ B = B·A, as FlopCounter
        if a is IDENTITY or b is IDENTITY:
            return b if a is IDENTITY else a
        total[0] += b.rows * b.cols * max(a.cols, 1)
        return _Extent(b.rows, a.cols)

    extents = [_Extent(*np.shape(e)) if np.ndim(e) == 2 else _Extent(int(np.size(e)), 0) for e in elements]
    blelloch_scan(extents, op=op, up_levels=up_levels)
    linear_scan(extents, op=op)
    return total[0]


@dataclass(frozen=True)
class CountedStep:
    """One scan step with its FLOPs."""

    step: Step
    flops: int
    dense_flops: int


def count_flops(elements: Sequence, *, method: str = "bppsa", up_levels: int | None = None,
                on_step: Callable[[], object] | None = None,
                on_part: Callable[[float], object] | None = None,
                budget: Callable[[int, int], object] | None = None) -> tuple[CountedStep, ...]:
    """Run the scan (``bppsa``: :func:`blelloch_scan`; ``bp``: :func:`linear_scan`) on patterns, counting FLOPs;
    ``on_step()`` is called after each ◇ (:func:`archsim.bppsa.steps.level_census` counts them beforehand),
    ``on_part(f)`` within a long product (:func:`product_flops`), ``budget(multiplies, entries)`` before each
    product (:class:`FlopCounter`)."""
    counter = FlopCounter(on_step, on_part, budget)
    patterns = [pattern_of(e) for e in elements]
    run: ScanRun = (linear_scan(patterns, op=counter) if method == "bp"
                    else blelloch_scan(patterns, op=counter, up_levels=up_levels))
    return tuple(CountedStep(s, f, d) for s, (f, d) in zip(run.steps, counter.log, strict=True))
