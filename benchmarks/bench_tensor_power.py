"""Refit the tensor cores' energy per FLOP (the fp16/bf16 power cap) on DeepBench's fp16 GEMMs and print its figures.

    .venv/bin/python benchmarks/bench_tensor_power.py      # about 15 s

Prints the fitted ``tensor_energy_pj`` (:func:`archsim.validation.tensor_power.fit_tensor_energy` on the
T4's and V100's GEMMs, the rule and grid of the fp32 fit) beside the stored one
(:data:`archsim.devices.kernel_constants.TENSOR_ENERGY_PJ`); the loss around it; per GPU the seconds MAPE and
the predicted / measured range and median and the measured and predicted TFLOP/s of the
compute-bound GEMMs (above 10 GFLOP, every dimension at least 512), without and with the cap; and
the sustained fp16 TFLOP/s the cap gives each catalog board beside η · peak (η: the vTrain fit's
``gemm``). Nothing here is fitted on any H100 or H200 data.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from archsim.devices.catalog import GPUS
from archsim.devices.kernel_constants import TENSOR_ENERGY_PJ
from archsim.devices.kernel_ops import gemm_path
from archsim.training.fitted import kernels
from archsim.validation.gemm_rate import compute_bound
from archsim.validation.gpu_study import run_study
from archsim.validation.tensor_power import fit_tables, fit_tensor_energy

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
BOARDS = ("a100-80gb", "h100-80gb-sxm", "h200-141gb", "l4-24gb", "t4-16gb", "v100-32gb", "v100-pcie-32gb",
          "a100-80gb-pcie", "a100-40gb", "a100-40gb-pcie", "h100-80gb-pcie")


def main() -> int:
    tables = fit_tables(RESULTS)
    tensor = kernels("A100")
    fit = fit_tensor_energy(tables, tensor)
    grid, losses = np.asarray(fit.grid), np.asarray(fit.losses)
    print(f"fitted tensor_energy_pj {fit.energy_pj:.4g} pJ (stored {TENSOR_ENERGY_PJ:.4g}); loss (sum of the GPUs' "
          f"seconds MAPE) {losses.min():.4f}, uncapped {losses[0]:.4f}")
    at = int(np.searchsorted(grid, fit.energy_pj))
    for i in range(max(0, at - 4), min(len(grid), at + 5)):
        mapes = ", ".join(f"{name} {values[i]:.4f}" for name, values in fit.per_gpu)
        print(f"  {grid[i]:7.4f} pJ: loss {losses[i]:.4f} ({mapes})")
    for table in tables:
        flop = (2.0 * table.frame["batch"] * table.frame["channels"] * table.frame["filters"]).to_numpy()
        large = compute_bound(table)
        measured = table.frame["measured_ms"].to_numpy() / 1e3
        for label, energy in (("uncapped", 1e-9), ("capped", fit.energy_pj)):
            constants = replace(tensor, tensor_energy_pj=energy)
            joined = run_study([table], tensor_constants=lambda _name, c=constants: c).joined
            predicted = joined["predicted_seconds"].to_numpy()
            ratio = predicted / measured
            print(f"{table.meta['gpu']} {label:8s}: seconds MAPE {np.mean(np.abs(ratio - 1)):.3f}, median "
                  f"{np.median(ratio):.3f}; {large.sum()} GEMMs > 10 GFLOP of every dimension ≥ 512: predicted / measured "
                  f"{ratio[large].min():.2f}–{ratio[large].max():.2f} (median {np.median(ratio[large]):.3f}), "
                  f"measured {np.min(flop[large] / measured[large]) / 1e12:.1f}–"
                  f"{np.max(flop[large] / measured[large]) / 1e12:.1f} TFLOP/s, predicted "
                  f"{np.min(flop[large] / predicted[large]) / 1e12:.1f}–{np.max(flop[large] / predicted[large]) / 1e12:.1f}")
    print("sustained fp16 TFLOP/s (board watts / energy per FLOP) beside η · peak:")
    for name in BOARDS:
        device = GPUS[name]
        constants = replace(kernels(device.name), tensor_energy_pj=fit.energy_pj)
        path = gemm_path(device, "fp16", constants)
        assert path is not None
        eta_peak = constants.gemm * device.peak("fp16")
        print(f"  {name:15s} {device.board_watts:5.0f} W: {path.sustained_flops / 1e12:7.1f} vs {eta_peak / 1e12:6.1f}"
              f" ({'capped' if path.sustained_flops < eta_peak else 'not capped'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
