"""Energy of training a SCALE-Sim sparse layer: compressed weights and their metadata counted.

The same event counts and per-event energies as :mod:`archsim.energy.model`, on the GEMMs the array
really runs (:mod:`archsim.array.sparsity`, :mod:`archsim.array.sparse_training`). For F, the
condensed GEMM's counts change where sparsity changes the events:

* ``macs`` = T·nnz: only kept weights multiply (row-wise mapping's unfilled packing slots are idle PEs);
* ``ifmap_sram_reads``: SCALE-Sim's count (weight stationary re-reads each ifmap word M/N times);
* ``filter_sram_reads``: the condensed filter plus the metadata words (SCALE-Sim's "metadata reads":
  the index of every weight is read with it);
* ``filter_dram_reads`` and ``filter_sram_writes``: the compressed storage (weights + metadata, words),
  SPARSE_REPORT's "New Storage", instead of the dense K·N.

δ and G are dense GEMMs of the shapes the named options give (their weight operand is read as the
dense K_kept × N it is after decompression; the dense gradient G writes is K×N unless masked).
Counts that are fractions in SCALE-Sim (ELLPACK's metadata bits / 32, ifmap M/N re-reads) stay floats.
"""

from __future__ import annotations

import pandas as pd

from archsim.array.analytic import gemm_cycles
from archsim.array.config import ArrayConfig
from archsim.array.sparse_training import SparseTraining, backward_gemms
from archsim.array.sparsity import SparsityConfig, sparse_layer_cost
from archsim.energy.model import COUNTS, energy_of, gemm_counts
from archsim.energy.table import AccessEnergies, access_energies


def sparse_layer_counts(t: int, k: int, filters: int, array: ArrayConfig, ratio: tuple[int, int],
                        sparsity: SparsityConfig, options: SparseTraining = SparseTraining(),
                        with_delta: bool = True) -> pd.DataFrame:
    """One row per op (F, D, G) of a sparse layer: cycles and every count of :data:`COUNTS`."""
    cost = sparse_layer_cost(t, k, filters, array.rows, array.cols, array.dataflow, ratio, sparsity)
    forward = {name: float(value[0]) for name, value in
               gemm_counts([t], [cost.filter_rows], [filters], array).items()}
    kept = cost.kept_weights
    # register words are 2·MACs + the stationary operand's words: only the MAC term changes
    forward.update(macs=float(t * kept), register_words=forward["register_words"] + 2 * (t * kept - forward["macs"]),
                   ifmap_sram_reads=cost.ifmap_sram_reads,
                   filter_sram_reads=cost.filter_sram_reads + cost.metadata_storage,
                   filter_dram_reads=cost.new_storage, filter_sram_writes=cost.new_storage)
    rows = [{"op": "F", "cycles": cost.cycles, **forward}]
    backward = backward_gemms(t, k, filters, ratio, sparsity, options)
    for op in ("D", "G"):
        if op == "D" and not with_delta:
            continue
        m, kk, n = backward[op]
        counts = {name: float(value[0]) for name, value in gemm_counts([m], [kk], [n], array).items()}
        rows.append({"op": op, "cycles": gemm_cycles(m, kk, n, array.rows, array.cols, array.dataflow), **counts})
    frame = pd.DataFrame(rows)
    frame["vector_elements"] = 0.0
    return frame[["op", "cycles", *COUNTS]]


def sparse_layer_energy(t: int, k: int, filters: int, array: ArrayConfig, ratio: tuple[int, int],
                        sparsity: SparsityConfig, options: SparseTraining = SparseTraining(),
                        energies: AccessEnergies | None = None, with_delta: bool = True) -> pd.DataFrame:
    """Per op (F, D, G): the counts of :func:`sparse_layer_counts` and their energy by part (pJ)."""
    counts = sparse_layer_counts(t, k, filters, array, ratio, sparsity, options, with_delta)
    return pd.concat([counts, energy_of(counts, energies or access_energies(array), array)], axis=1)


def dense_layer_counts(t: int, k: int, filters: int, array: ArrayConfig, with_delta: bool = True) -> pd.DataFrame:
    """The same rows for the unpruned layer (F = T×K×N, δ = T×N×K, G = K×T×N), for comparison."""
    shapes = {"F": (t, k, filters), "D": (t, filters, k), "G": (k, t, filters)}
    rows = []
    for op, (m, kk, n) in shapes.items():
        if op == "D" and not with_delta:
            continue
        counts = {name: float(value[0]) for name, value in gemm_counts([m], [kk], [n], array).items()}
        rows.append({"op": op, "cycles": gemm_cycles(m, kk, n, array.rows, array.cols, array.dataflow), **counts})
    frame = pd.DataFrame(rows)
    frame["vector_elements"] = 0.0
    return frame[["op", "cycles", *COUNTS]]


def with_energy(counts: pd.DataFrame, array: ArrayConfig, energies: AccessEnergies | None = None) -> float:
    """Total energy (pJ) of the ops in ``counts`` on ``array`` (default energy table)."""
    return float(energy_of(counts, energies or access_energies(array), array)["energy_pj"].sum())
