"""The tensor cores' energy per FLOP (the fp16/bf16 power cap), fitted on DeepBench's fp16 GEMMs.

A 70 W T4 cannot hold its 1,590 MHz boost clock in a tensor-core GEMM: DeepBench's large fp16 GEMMs
run at 37–46 of its 65 TFLOP/s, where a 300 W V100's run at the η of its peak. The kernel model caps
every path by the board's power, TDP / energy per FLOP (:func:`archsim.devices.kernel_constants.sustained_flops`);
this module fits the tensor cores' energy constant, ``KernelConstants.tensor_energy_pj``, by the rule
the fp32 one is fitted with (:func:`archsim.validation.neusight.fit_constants`): on a geometric grid,
the largest energy whose error ties the best (:func:`~archsim.validation.neusight.largest_tie`).
The error is the sum over the fitted GPUs of each one's MAPE of seconds over all its GEMMs, each
timed exactly as ``archsim validate-gpu`` times it; every other constant stays the tensor-core fit's.
Below the energy at which a fitted GPU's GEMMs are capped the error is flat; the T4's capped GEMMs
bound it from above. Units: pJ per FLOP of a 12 nm GPU rated at a 1 GHz boost clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from archsim.devices.gpu_lookup import find_whole_gpu
from archsim.devices.kernel_constants import KernelConstants
from archsim.validation.gpu import gpu_arrays, model_kernels
from archsim.validation.gpu_csv import KernelTable, read_kernel_csv
from archsim.validation.gpu_seconds import kernel_timer
from archsim.validation.gpu_study import table_element_bytes, table_gpu
from archsim.validation.neusight import largest_tie

FIT_FILES = ("deepbench_t4_gemm_kernels.csv", "deepbench_v100_gemm_kernels.csv")
"""DeepBench's fp16 tensor-core GEMMs (``benchmarks/results/``): the only data the constant sees."""
ENERGY_GRID_PJ = (0.1, 10.0, 201)  # geometric grid (first, last, points): 2.3% steps


@dataclass(frozen=True)
class TensorEnergyFit:
    """The fitted ``energy_pj`` and, per grid energy (pJ), the loss (sum of the GPUs' seconds MAPE, fractions)
    and each GPU's MAPE (``per_gpu``: GPU name → one value per grid point)."""

    energy_pj: float
    grid: tuple[float, ...]
    losses: tuple[float, ...]
    per_gpu: tuple[tuple[str, tuple[float, ...]], ...]


def fit_tables(folder: Path) -> list[KernelTable]:
    """The measured tables the fit reads, from ``folder`` (the repository's ``benchmarks/results``)."""
    return [read_kernel_csv(folder / name) for name in FIT_FILES]


def _constant(constants: KernelConstants) -> Callable[[str], KernelConstants]:
    """The same constants for every GPU name (what :func:`kernel_timer` asks for)."""
    return lambda _gpu: constants


def seconds_ratios(table: KernelTable, variants: Sequence[KernelConstants]) -> np.ndarray:
    """Predicted / measured seconds of every row of ``table`` (rows, in the table's order; NaN where a
    row is not timed) under each of ``variants`` (columns), the rows timed as ``validate-gpu`` times
    them (its default lowering, the launch of a kernel timed alone) with that variant as the tensor-core
    constants: the one evaluation every fit on DeepBench's fp16 GEMMs shares."""
    name, spec = table_gpu(table)
    arrays = gpu_arrays(spec, element_bytes=table_element_bytes(table))
    columns = []
    for constants in variants:
        timer = kernel_timer(spec, find_whole_gpu(name), table.meta.get("dtype", "fp16"), _constant(constants))
        frame = model_kernels(table, arrays, timer=timer)
        columns.append((frame["predicted_seconds"] / frame["measured_seconds"]).to_numpy(dtype=np.float64))
    return np.column_stack(columns)


def seconds_errors(table: KernelTable, constants: KernelConstants, energies: Sequence[float]) -> np.ndarray:
    """|predicted / measured − 1| of every timed row of ``table`` (rows) at each energy (columns), the
    rows timed as ``validate-gpu`` times them (its default lowering) with ``constants`` but for
    ``tensor_energy_pj``."""
    ratios = seconds_ratios(table, [replace(constants, tensor_energy_pj=float(e)) for e in energies])
    return np.abs(ratios[np.all(np.isfinite(ratios), axis=1)] - 1)


def fit_tensor_energy(tables: Sequence[KernelTable], constants: KernelConstants,
                      grid: tuple[float, float, int] = ENERGY_GRID_PJ) -> TensorEnergyFit:
    """``tensor_energy_pj`` fitted on ``tables`` (module docstring); ``constants``: the tensor-core fit
    the tables are timed with (:func:`archsim.training.fitted.kernels`, which this package may not import)."""
    energies = np.geomspace(grid[0], grid[1], int(grid[2]))
    per_gpu = [(str(table.meta.get("gpu", table.source)), seconds_errors(table, constants, energies.tolist()).mean(axis=0))
               for table in tables]
    losses = np.sum([mape for _, mape in per_gpu], axis=0)
    return TensorEnergyFit(largest_tie(energies, losses), tuple(energies.tolist()), tuple(losses.tolist()),
                           tuple((name, tuple(mape.tolist())) for name, mape in per_gpu))


__all__ = ["ENERGY_GRID_PJ", "FIT_FILES", "TensorEnergyFit", "fit_tables", "fit_tensor_energy", "seconds_errors",
           "seconds_ratios"]
