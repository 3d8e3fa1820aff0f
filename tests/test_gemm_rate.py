"""η_gemm fitted on DeepBench's compute-bound fp16 GEMMs (archsim.validation.gemm_rate) and the vTrain
fit with it held (archsim.training.calibrate.fit_kernels).

References: DeepBench's published GEMM shapes and times read with the csv module, hand-built ratio
curves whose MAPE minimum is known in closed form, and the definition of a compute-bound time
(inversely proportional to the rate).
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from archsim.training import fitted
from archsim.validation.gemm_rate import TIE, compute_bound, fit_gemm_rate, gemm_grid, gemm_ratios
from archsim.validation.gpu_csv import read_kernel_csv

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def _shapes(gpu: str) -> list[tuple[int, int, int]]:
    with open(RESULTS / f"deepbench_{gpu}_gemm_kernels.csv", newline="") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        return [(int(r["batch"]), int(r["channels"]), int(r["filters"])) for r in rows]


@pytest.mark.parametrize("gpu", ["v100", "t4"])
def test_compute_bound_rows_are_the_large_gemms_of_every_dimension_at_least_512(gpu):
    table = read_kernel_csv(RESULTS / f"deepbench_{gpu}_gemm_kernels.csv")
    expected = [2 * n * k * m > 10e9 and min(n, k, m) >= 512 for n, k, m in _shapes(gpu)]
    assert compute_bound(table).tolist() == expected
    assert sum(expected) == 74  # the count docs/gpu-validation.md quotes for both GPUs


def test_the_fit_finds_the_rate_at_which_compute_bound_times_match():
    # times ∝ 1 / gemm: a row measured at rate 0.8 is predicted at ratio 0.8 / g; MAPE = mean |0.8/g − 1|
    gemms = gemm_grid()
    ratios = np.tile(0.8 / gemms, (5, 1))
    fit = fit_gemm_rate(ratios, gemms)
    assert fit.gemm == pytest.approx(0.8, abs=1e-12) and fit.loss == pytest.approx(0.0, abs=1e-12)
    # tied: |0.8/g − 1| ≤ TIE ⇔ 0.8/(1 + TIE) ≤ g ≤ 0.8/(1 − TIE): here one grid point each way is out
    assert fit.tied == (pytest.approx(0.8), pytest.approx(0.8))
    assert 0.8 / (1 + TIE) > 0.8 - 0.002 and 0.8 / (1 - TIE) < 0.8 + 0.002


def test_the_fit_reads_only_the_chosen_rows_and_a_flat_loss_ties_everything():
    gemms = gemm_grid()
    ratios = np.vstack([0.7 / gemms, 0.9 / gemms, np.full(len(gemms), 1.0)])  # the last: capped, flat
    assert fit_gemm_rate(ratios, gemms, np.array([True, False, False])).gemm == pytest.approx(0.7)
    assert fit_gemm_rate(ratios, gemms, np.array([False, True, False])).gemm == pytest.approx(0.9)
    flat = fit_gemm_rate(ratios, gemms, np.array([False, False, True]))
    assert flat.tied == (gemms[0], gemms[-1]) and flat.loss == 0.0


def test_a_v100_compute_bound_gemm_takes_time_inversely_proportional_to_the_rate():
    table = read_kernel_csv(RESULTS / "deepbench_v100_gemm_kernels.csv")
    large = compute_bound(table)
    ratios = gemm_ratios(table, fitted.A100_KERNELS, np.array([0.8, 0.9]))
    # the timed-alone launch (16 µs) is under 2% of these GEMMs' times; the rest scales as 1 / gemm
    assert ratios[large, 0] / ratios[large, 1] == pytest.approx(np.full(large.sum(), 0.9 / 0.8), rel=0.02)


@pytest.mark.slow
def test_fit_kernels_with_gemm_held_keeps_it_and_fits_the_rest():
    """About a minute: the held gemm comes back exactly, and the three fitted constants do at least as
    well on the 16-layer runs as the stored ones do with that gemm."""
    from archsim.training.calibrate import fast_seconds, fit_kernels
    from archsim.training.cluster_file import single_node
    from archsim.training.measured import read_measured

    runs = read_measured(Path(__file__).resolve().parent / "data" / "e2e" / "vtrain_single_node_shown.csv")
    efficiency, loss = fit_kernels(runs, gemm=0.85)
    assert efficiency.gemm == 0.85
    fit_runs = [r for r in runs if fitted.is_fit_run(r.layers)]
    held = replace(fitted.A100_KERNELS, gemm=0.85)
    base = single_node().machine(fit_runs[0].parallelism())
    start = np.mean([abs(fast_seconds(r, replace(base, efficiency=held)) / (r.milliseconds / 1e3) - 1) for r in fit_runs])
    assert loss <= start + 1e-12


@pytest.mark.slow
def test_the_stored_gemm_is_the_fit_on_deepbenchs_compute_bound_v100_gemms():
    """About 20 s: step 1 of the two-step kernel fit (archsim/training/fitted.py) gives the stored gemm,
    to the grid's step, at the stored other constants — and the V100's compute-bound GEMMs then run at
    a median predicted / measured within 2% of 1 (the joint fit's 0.911 left them at 0.90)."""
    from archsim.validation.gemm_rate import FIT_FILE, fit_on_deepbench

    stored = fitted.A100_KERNELS
    fit = fit_on_deepbench(RESULTS, stored)
    assert fit.gemm == pytest.approx(stored.gemm, abs=0.002 + 1e-9)
    table = read_kernel_csv(RESULTS / FIT_FILE)
    ratios = gemm_ratios(table, stored, np.array([stored.gemm]))[compute_bound(table), 0]
    assert np.median(ratios) == pytest.approx(1.0, abs=0.02)
