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

δ and G are the dense GEMMs of archsim's lowering, shrunk as the named options say
(:func:`~archsim.array.sparse_training.backward_gemms`; their weight operand is read as the dense
matrix it is after decompression; G writes a dense K×N gradient unless masked).
Counts that are fractions in SCALE-Sim (ELLPACK's metadata bits / 32, ifmap M/N re-reads) stay floats.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from archsim.array.config import ArrayConfig
from archsim.array.sparse_training import SparseTraining, backward_gemms, gemms_cycles
from archsim.array.sparsity import SparsityConfig, sparse_layer_cost
from archsim.energy.model import COUNTS, energy_of, gemm_counts
from archsim.energy.table import AccessEnergies, access_energies
from archsim.lowering import Gemm, LoweredLayer


def _gemm_rows(op: str, gemms, array: ArrayConfig) -> dict:
    """One op's counts: :func:`~archsim.energy.model.gemm_counts` summed over its GEMMs (× count)."""
    total = {name: 0.0 for name in COUNTS if name != "vector_elements"}
    for g in gemms:
        for name, value in gemm_counts(np.array([g.m]), np.array([g.k]), np.array([g.n]), array).items():
            total[name] += float(value[0]) * g.count
    return {"op": op, "cycles": gemms_cycles(gemms, array.rows, array.cols, array.dataflow), **total}


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["vector_elements"] = 0.0
    return frame[["op", "cycles", *COUNTS]]


def sparse_layer_counts(lowered: LoweredLayer, array: ArrayConfig, ratio: tuple[int, int],
                        sparsity: SparsityConfig, options: SparseTraining = SparseTraining()) -> pd.DataFrame:
    """One row per op (F, then G and δ as the lowering has them) of a pruned conv/fc layer: cycles and
    every count of :data:`COUNTS`."""
    (gemm,) = lowered.required_op("F").gemms
    t, k, filters = gemm.m, gemm.k, gemm.n
    cost = sparse_layer_cost(t, k, filters, array.rows, array.cols, array.dataflow, ratio, sparsity)
    forward = _gemm_rows("F", (Gemm(t, cost.filter_rows, filters),), array)
    kept = cost.kept_weights
    # register words are 2·MACs + the stationary operand's words: only the MAC term changes, and with it the
    # partial sums' (one a MAC but on os, whose M·N drained outputs stay)
    fewer = t * kept - forward["macs"]
    forward.update(cycles=cost.cycles, macs=float(t * kept),
                   register_words=forward["register_words"] + 2 * fewer,
                   psum_register_words=forward["psum_register_words"] + (fewer if array.dataflow != "os" else 0),
                   ifmap_sram_reads=cost.ifmap_sram_reads,
                   filter_sram_reads=cost.filter_sram_reads + cost.metadata_storage,
                   filter_dram_reads=cost.new_storage, filter_sram_writes=cost.new_storage)
    forward = {name: value * gemm.count if name not in ("op",) else value for name, value in forward.items()}
    back = backward_gemms(lowered, ratio, sparsity, options)
    return _frame([forward] + [_gemm_rows(op, gemms, array) for op, gemms in back.items()])


def dense_layer_counts(lowered: LoweredLayer, array: ArrayConfig) -> pd.DataFrame:
    """The same rows for the unpruned layer (archsim's lowering as it is), for comparison."""
    return _frame([_gemm_rows(op.kind, op.gemms, array) for op in lowered.ops])


def with_energy(counts: pd.DataFrame, array: ArrayConfig, energies: AccessEnergies | None = None) -> float:
    """Total energy (pJ) of the ops in ``counts`` on ``array`` (default energy table)."""
    return float(energy_of(counts, energies or access_energies(array), array)["energy_pj"].sum())
