"""Training on a SCALE-Sim sparse layer: which of F, δ and G a weight-sparsity pattern speeds up.

A layer's three GEMMs (archsim's lowering, K = window words, N = filters, M = ofmap pixels × batch):
F out[M×N] = A[M×K]·W[K×N]; δ dA[M×K] = dout[M×N]·Wᵀ[N×K]; G dW[K×N] = Aᵀ[K×M]·dout[M×N].

* **F** runs as SCALE-Sim runs it (:func:`~archsim.array.sparsity.sparse_layer_cost`): the N:M
  pattern runs down K, F's reduction dimension, so the array streams only the kept rows.
* **δ** uses Wᵀ, whose rows are the N filters: the N:M pattern now runs along δ's *output* columns,
  not its reduction (N), so nothing is compressed along the reduction. What it does give: a row of
  W that is zero in every filter is a column of dA that is zero — not computed. Layer-wise N:M
  zeroes the same rows in every filter (K' of K kept); row-wise mapping keeps, in each block of B
  rows, the first max_j n_j rows in some filter (``delta="transposed"``: δ is M×N×K_kept). With
  ``delta="dense"`` δ is the dense M×N×K GEMM (an array that does not look at the pattern).
* **G** produces every weight's gradient, a dense K×N dW, pruned positions included
  (``gradient="dense"``, K×M×N). ``gradient="masked"`` computes only the rows of dW that hold a kept
  weight (the same K_kept rows as δ) — the pruned weights' gradients are masked to zero anyway when
  the mask is re-applied after the update, so only masked training may skip them.

Only the ws/os/is GEMM costs of :mod:`archsim.array.analytic` are used for δ and G: SCALE-Sim has no
backward pass, so these are archsim's reading of the pattern, not SCALE-Sim's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.array.analytic import gemm_cycles
from archsim.array.sparsity import SparsityConfig, column_ratios, kept_rows
from archsim.errors import InputError

DELTA_OPTIONS = ("transposed", "dense")
GRADIENT_OPTIONS = ("dense", "masked")


@dataclass(frozen=True)
class SparseTraining:
    """How δ and G treat the weight pattern (named options; see the module docstring)."""

    delta: str = "transposed"
    gradient: str = "dense"

    def __post_init__(self) -> None:
        if self.delta not in DELTA_OPTIONS:
            raise InputError(f"unknown delta option {self.delta!r}; choose {', '.join(DELTA_OPTIONS)}", field="delta")
        if self.gradient not in GRADIENT_OPTIONS:
            raise InputError(f"unknown gradient option {self.gradient!r}; choose {', '.join(GRADIENT_OPTIONS)}",
                             field="gradient")


def nonzero_weight_rows(k: int, filters: int, ratio: tuple[int, int], sparsity: SparsityConfig) -> int:
    """Rows of the K×N weight matrix that hold a kept weight in at least one filter."""
    if not sparsity.optimized_mapping:
        return kept_rows(k, *ratio)
    widest = int(np.max(column_ratios(filters, sparsity.block_size, sparsity.seed)))
    return kept_rows(k, widest, sparsity.block_size)


def backward_gemms(m: int, k: int, filters: int, ratio: tuple[int, int], sparsity: SparsityConfig,
                   options: SparseTraining) -> dict[str, tuple[int, int, int]]:
    """(m, k, n) of δ ("D") and G under ``options``: the GEMMs the array runs."""
    kept = nonzero_weight_rows(k, filters, ratio, sparsity)
    delta_out = kept if options.delta == "transposed" else k
    grad_rows = kept if options.gradient == "masked" else k
    return {"D": (m, filters, delta_out), "G": (grad_rows, m, filters)}


def backward_cycles(m: int, k: int, filters: int, rows: int, cols: int, dataflow: str, ratio: tuple[int, int],
                    sparsity: SparsityConfig, options: SparseTraining) -> dict[str, int]:
    """Compute cycles of δ and G (analytic, stall-free) under ``options``."""
    return {op: gemm_cycles(*shape, rows, cols, dataflow)
            for op, shape in backward_gemms(m, k, filters, ratio, sparsity, options).items()}
