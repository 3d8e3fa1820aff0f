"""SCALE-Sim 3.0.0's sparse compute in closed form: N:M weight sparsity, its two mappings and the
compressed filter storage of its three representations.

Derived from, and tested against, the ``scalesim`` package (``compute/operand_matrix.py``
``create_filter_matrix``/``create_ifmap_matrix``, ``systolic_compute_ws.py``,
``compute/compression.py``, ``single_layer_sim.calculate_filter_metadata_storage``). A layer is
SCALE-Sim's GEMM: T ofmap pixels × a K-word convolution window × N filters (its filter matrix is
K × N). With ``SparsitySupport`` on, SCALE-Sim does this to the filter matrix:

* **Layer-wise N:M** (``OptimizedMapping : false``, the topology's ``Sparsity`` column N:M): the
  same row pattern — N ones then M − N zeros, repeated down the K rows — zeroes whole rows; each
  block of M rows is condensed to its N kept rows, so the array sees a dense GEMM with
  K' = N·⌊K/M⌋ + min(K mod M, N) rows, for every dataflow (the ifmap loses the same columns).
  Weight stationary reads each ifmap word M/N times ("a block of input is shared among M/N rows",
  ``systolic_compute_ws.create_ifmap_demand_mat``), so its ifmap SRAM reads are scaled by M/N.
* **Row-wise** (``OptimizedMapping : true``, ``BlockSize`` B): each filter column draws its own
  n_j ∈ 1…⌊B/2⌋ (``numpy.random.seed(RandomNumberGeneratorSeed)`` then one ``randint(1, B//2 + 1)``
  per column, in column order — reproduced here with the same legacy generator), and every B rows
  of it are packed into ⌊B/2⌋ slots: K_c = B·⌈K/2B⌉ rows. Only weight stationary maps it: the
  ifmap keeps all K columns and streams 2R of them per fold, each B-wide block repeated ⌊B/2⌋
  times, so a fold reads (T + R − 1)·2R·⌊B/2⌋ ifmap words. Output and input stationary refuse it
  (SCALE-Sim's "Dimension mismatch between operands") unless K_c = K.

Storage (words; ``SPARSE_REPORT.csv``): the original filter is K·N. With nnz the kept weights of the
K × N pattern, CSR stores 2·nnz + (K + 1) words of which nnz + K + 1 are metadata, CSC
2·nnz + (N + 1) and nnz + N + 1, blocked ELLPACK the condensed matrix plus ⌈log₂ M⌉ bits per entry,
(rows·N)·⌈log₂ M⌉/32 words of metadata (M from the topology row, also under row-wise mapping).
SCALE-Sim adds the metadata words to the layer's "metadata reads".

Cycles are SCALE-Sim's stall-free "Compute cycles" (its CALC bandwidth mode): memory stalls of a
sparse layer are not modelled (see :func:`sparse_layer_cost`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from archsim.array.analytic import gemm_cost
from archsim.errors import InputError
from archsim.validate import SEED_MAX

REPRESENTATIONS = ("csr", "csc", "ellpack_block")


@dataclass(frozen=True)
class SparsityConfig:
    """SCALE-Sim's ``[sparsity]`` section (read only when ``SparsitySupport`` is true).

    representation: ``SparseRep`` (csr, csc or ellpack_block). optimized_mapping: ``OptimizedMapping``
    (row-wise N:M with per-column ratios). block_size: ``BlockSize`` B (read only with optimized
    mapping, as SCALE-Sim reads it; 4 otherwise). seed: ``RandomNumberGeneratorSeed``.
    """

    representation: str = "ellpack_block"
    optimized_mapping: bool = False
    block_size: int = 4
    seed: int = 40

    def __post_init__(self) -> None:
        if self.representation not in REPRESENTATIONS:
            raise InputError(f"unknown representation {self.representation!r}; SCALE-Sim knows "
                             f"{', '.join(REPRESENTATIONS)}", field="SparseRep")
        if not isinstance(self.block_size, int) or self.block_size < 1:
            raise InputError(f"must be a positive integer, got {self.block_size!r}", field="BlockSize")
        if self.optimized_mapping and self.block_size < 2:
            raise InputError("row-wise mapping draws 1…BlockSize/2 kept weights per block, so BlockSize must be "
                             "at least 2", field="BlockSize")
        if not isinstance(self.seed, int) or not 0 <= self.seed <= SEED_MAX:
            raise InputError(f"must be an integer in 0…{SEED_MAX}, got {self.seed!r}",
                             field="RandomNumberGeneratorSeed")


@dataclass(frozen=True)
class SparseCost:
    """One sparse layer on one array, in SCALE-Sim's units (words; ratios as fractions).

    cycles: compute cycles (stall-free). folds: tiles of the condensed GEMM. filter_rows: rows of the
    condensed filter matrix the array sees (K' or K_c). ifmap_sram_reads is a float where SCALE-Sim's
    is (weight stationary scales it by M/N). original/new/metadata_storage: SPARSE_REPORT's columns.
    mapping_efficiency: mean over folds of PEs holding a weight. utilization: dense MACs (T·K·N, what
    SCALE-Sim counts) / (cycles · PEs). kept_weights: nnz of the K×N weight pattern.
    """

    cycles: int
    folds: int
    filter_rows: int
    ifmap_sram_reads: float
    filter_sram_reads: int
    ofmap_sram_writes: int
    mapping_efficiency: float
    compute_utilization: float
    utilization: float
    original_storage: int
    new_storage: float
    metadata_storage: float
    macs: int
    kept_weights: int


MAX_BLOCK = 2**20  # M of an N:M ratio: archsim's δ pattern walks one period of M rows
MAX_ROW_WISE_FILTERS = 2**24  # row-wise mapping draws one ratio per filter


def check_ratio(ratio: tuple[int, int], *, field: str = "Sparsity") -> tuple[int, int]:
    """A topology N:M ratio SCALE-Sim can run: 1 ≤ N ≤ M (N = 0 leaves no filter; N > M has no pattern),
    and M ≤ 2²⁰ (archsim's limit)."""
    n, m = ratio
    if not (isinstance(n, int) and isinstance(m, int)) or not 1 <= n <= m:
        raise InputError(f"expected N:M with 1 ≤ N ≤ M, got {n}:{m}", field=field)
    if m > MAX_BLOCK:
        raise InputError(f"M of N:M must be at most {MAX_BLOCK:,}, got {m:,}", field=field)
    return n, m


def kept_rows(k: int, n: int, m: int) -> int:
    """Rows of a K-row filter left by the layer-wise N:M pattern: N·⌊K/M⌋ + min(K mod M, N)."""
    return n * (k // m) + min(k % m, n)


def column_ratios(filters: int, block_size: int, seed: int) -> np.ndarray:
    """The kept weights per B-block of each filter column under row-wise mapping, drawn exactly as
    SCALE-Sim draws them (legacy numpy generator, one ``randint(1, B//2 + 1)`` per column in order)."""
    return np.random.RandomState(seed).randint(1, block_size // 2 + 1, size=filters)


@lru_cache(maxsize=4096)
def row_wise_kept(k: int, filters: int, block_size: int, seed: int) -> int:
    """Kept weights (nnz) of a K×N filter under row-wise mapping: Σ_j n_j·⌊K/B⌋ + min(K mod B, n_j)."""
    per_column = column_ratios(filters, block_size, seed)
    return int(np.sum(per_column * (k // block_size) + np.minimum(k % block_size, per_column)))


def packed_rows(k: int, block_size: int) -> int:
    """Rows of the filter after row-wise packing: K padded to 2B, halved: B·⌈K/2B⌉."""
    return block_size * -(-k // (2 * block_size))


def _storage(representation: str, k: int, filters: int, nnz: int, condensed_rows: int,
             ratio_m: int) -> tuple[int, float, float]:
    original = k * filters
    if representation == "csr":
        return original, float(2 * nnz + k + 1), float(nnz + k + 1)
    if representation == "csc":
        return original, float(2 * nnz + filters + 1), float(nnz + filters + 1)
    metadata = ((condensed_rows * filters) * math.ceil(math.log2(ratio_m))) / 32
    return original, condensed_rows * filters + metadata, metadata


def _scaled_ifmap_reads(t: int, condensed: int, rows: int, col_folds: int, ratio_m: int, ratio_n: int) -> float:
    """Weight stationary's ifmap reads under layer-wise N:M, summed as SCALE-Sim sums them: one float
    T·(fold width)·(M/N) per fold, column folds outer, added in order (``np.cumsum`` adds sequentially),
    so the float is bit-identical; where M/N is a binary fraction every term and partial sum is exact
    (below 2⁵³), so any order gives the same sum."""
    denominator = ratio_n // math.gcd(ratio_m, ratio_n)
    if denominator & (denominator - 1) == 0:  # M/N is a binary fraction: every partial sum is exact
        return t * condensed * col_folds * ratio_m / ratio_n
    scale = ratio_m / ratio_n
    widths = np.minimum(rows, condensed - rows * np.arange(-(-condensed // rows)))
    per_fold = (t * np.tile(widths, col_folds)).astype(np.float64) * scale
    return float(np.cumsum(per_fold)[-1])


def sparse_layer_cost(t: int, k: int, filters: int, rows: int, cols: int, dataflow: str,
                      ratio: tuple[int, int], sparsity: SparsityConfig) -> SparseCost:
    """SCALE-Sim's compute report, SRAM counts and sparse report for one layer with sparsity on.

    t: ofmap pixels (SCALE-Sim's T; M of a GEMM), k: window words (K), filters: N, on a rows×cols
    array. ``ratio``: the layer's N:M from the topology (1:1 when the column is absent). Raises
    :class:`InputError` where SCALE-Sim cannot run the layer.
    """
    ratio_n, ratio_m = check_ratio(ratio)
    for name, value in (("t", t), ("k", k), ("filters", filters), ("rows", rows), ("cols", cols)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"must be a positive integer, got {value!r}", field=name)
    t, k, filters, rows, cols = (int(x) for x in (t, k, filters, rows, cols))
    block = sparsity.block_size
    if not sparsity.optimized_mapping:
        condensed = kept_rows(k, ratio_n, ratio_m)
        nnz = condensed * filters
    else:
        if block > MAX_BLOCK or filters > MAX_ROW_WISE_FILTERS:
            raise InputError(f"row-wise mapping takes BlockSize ≤ {MAX_BLOCK:,} and ≤ {MAX_ROW_WISE_FILTERS:,} filters "
                             f"(one drawn ratio each), got {block:,} and {filters:,}", field="BlockSize")
        if block > rows:
            raise InputError(f"BlockSize {block} exceeds the array's {rows} rows (SCALE-Sim asserts "
                             "BlockSize ≤ ArrayHeight)", field="BlockSize")
        if (2 * rows) % block:
            raise InputError(f"row-wise mapping splits 2×{rows} array rows into blocks of {block}, which does not "
                             "divide them (SCALE-Sim's skew fails)", field="BlockSize")
        condensed = packed_rows(k, block)
        if dataflow != "ws" and condensed != k:
            raise InputError(f"row-wise sparse mapping (OptimizedMapping) runs only on the ws dataflow in "
                             f"SCALE-Sim; {dataflow} refuses a {condensed}-row packed filter for a {k}-word "
                             "window", field="OptimizedMapping")
        nnz = row_wise_kept(k, filters, block, sparsity.seed)
    cost = gemm_cost(t, condensed, filters, rows, cols, dataflow)
    folds = int(cost.folds)
    ifmap_reads: float = int(cost.ifmap_sram_reads)
    mapping = float(cost.mapping_efficiency)
    if dataflow == "ws" and sparsity.optimized_mapping:
        ifmap_reads = folds * (t + rows - 1) * 2 * rows * (block // 2)
        mapping = nnz / (rows * cols * folds)  # unfilled packing slots are idle PEs
    elif dataflow == "ws":
        ifmap_reads = _scaled_ifmap_reads(t, condensed, rows, int(cost.col_folds), ratio_m, ratio_n)
    original, new, metadata = _storage(sparsity.representation, k, filters, nnz, condensed, ratio_m)
    cycles = int(cost.cycles)
    macs = t * k * filters
    return SparseCost(
        cycles=cycles, folds=folds, filter_rows=condensed, ifmap_sram_reads=ifmap_reads,
        filter_sram_reads=int(cost.filter_sram_reads), ofmap_sram_writes=int(cost.ofmap_sram_writes),
        mapping_efficiency=mapping, compute_utilization=float(cost.compute_utilization),
        utilization=macs / (max(cycles, 1) * rows * cols), original_storage=original, new_storage=new,
        metadata_storage=metadata, macs=macs, kept_weights=nnz,
    )
