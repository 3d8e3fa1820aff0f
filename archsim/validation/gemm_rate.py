"""The tensor cores' GEMM rate (``KernelConstants.gemm``, η_gemm) fitted on large GEMMs timed alone.

η_gemm is the fraction of the tensor peak a compute-bound GEMM reaches. The vTrain A100 runs fit it
together with the memory, launch and host constants on GEMMs of hidden ≤ 2,048, many of them in
host-bound iterations, where the fit can trade GEMM time against host time. A GEMM of more than
10 GFLOP whose every dimension is at least 512 (:func:`compute_bound`) is limited by the tensor rate
alone, so DeepBench's fp16 GEMMs of that size (``benchmarks/results/deepbench_*_gemm_kernels.csv``)
tell η_gemm apart from the rest. :func:`fit_gemm_rate` chooses it on a grid by the seconds MAPE of
the chosen rows, each timed as ``validate-gpu`` times it (the launch of a kernel timed alone), every
other constant as given. A power-capped board (the T4) runs those GEMMs at its cap whatever η_gemm
is above cap / peak, so its loss is flat there: :attr:`GemmRateFit.tied` says how wide the tie is.
Units: fractions of the datasheet tensor peak.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from archsim.devices.kernel_constants import KernelConstants
from archsim.validation.gpu_csv import KernelTable, read_kernel_csv
from archsim.validation.tensor_power import seconds_ratios

FIT_FILE = "deepbench_v100_gemm_kernels.csv"
"""The table η_gemm is fitted on (``benchmarks/results/``): the V100 is never power-capped on it."""
LARGE_FLOP = 10e9  # GEMMs above this, with every dimension at least LARGE_DIM, are compute-bound
LARGE_DIM = 512
GEMM_GRID = (0.5, 1.0, 251)  # linear grid (first, last, points): steps of 0.002
TIE = 1e-3  # losses within this of the best (MAPE, a fraction) tie


@dataclass(frozen=True)
class GemmRateFit:
    """The fitted ``gemm`` (the grid's best; the smallest of equal bests), its seconds MAPE (a
    fraction), the grid and its losses, and ``tied``: the (smallest, largest) grid gemm whose loss is
    within :data:`TIE` of the best — one grid step wide where the data identify η_gemm."""

    gemm: float
    loss: float
    grid: tuple[float, ...]
    losses: tuple[float, ...]
    tied: tuple[float, float]


def compute_bound(table: KernelTable) -> np.ndarray:
    """Which rows of a DeepBench GEMM table (``batch`` × ``channels`` × ``filters``: N, K, M) are
    compute-bound: more than :data:`LARGE_FLOP` FLOPs and every dimension at least :data:`LARGE_DIM`."""
    dims = table.frame[["batch", "channels", "filters"]].to_numpy(dtype=np.float64)
    return (2.0 * dims.prod(axis=1) > LARGE_FLOP) & (dims.min(axis=1) >= LARGE_DIM)


def gemm_grid(grid: tuple[float, float, int] = GEMM_GRID) -> np.ndarray:
    """The candidate η_gemm values, ascending."""
    return np.linspace(grid[0], grid[1], int(grid[2]))


def gemm_ratios(table: KernelTable, constants: KernelConstants, gemms: np.ndarray) -> np.ndarray:
    """Predicted / measured seconds of every row (rows) at each ``gemms`` value (columns), every other
    constant ``constants``'."""
    return seconds_ratios(table, [replace(constants, gemm=float(g)) for g in gemms])


def fit_gemm_rate(ratios: np.ndarray, gemms: np.ndarray, rows: np.ndarray | None = None) -> GemmRateFit:
    """η_gemm chosen on ``gemms`` by the seconds MAPE of ``rows`` (a mask; all timed rows if None) of
    ``ratios`` (:func:`gemm_ratios` on that grid)."""
    pick = np.all(np.isfinite(ratios), axis=1) if rows is None else np.asarray(rows, dtype=bool)
    losses = np.mean(np.abs(ratios[pick] - 1), axis=0)
    best = int(np.argmin(losses))
    tied = np.flatnonzero(losses <= losses[best] + TIE)
    return GemmRateFit(float(gemms[best]), float(losses[best]), tuple(gemms.tolist()), tuple(losses.tolist()),
                       (float(gemms[tied[0]]), float(gemms[tied[-1]])))


def fit_on_deepbench(folder: Path, constants: KernelConstants) -> GemmRateFit:
    """η_gemm fitted on the compute-bound GEMMs of :data:`FIT_FILE` in ``folder`` (the repository's
    ``benchmarks/results``), every other constant ``constants``' (the stored tensor-core fit's): step 1
    of the two-step kernel fit (docs/accuracy.md)."""
    table = read_kernel_csv(folder / FIT_FILE)
    gemms = gemm_grid()
    return fit_gemm_rate(gemm_ratios(table, constants, gemms), gemms, compute_bound(table))


__all__ = ["FIT_FILE", "GEMM_GRID", "LARGE_DIM", "LARGE_FLOP", "TIE", "GemmRateFit", "compute_bound", "fit_gemm_rate",
           "fit_on_deepbench", "gemm_grid", "gemm_ratios"]
