"""Fitting the GPU kernel efficiencies to measured iterations — on the fit part only.

:func:`fast_seconds` predicts a measured run's iteration with 1F1B's closed form
(:func:`~archsim.training.iteration.one_f_one_b_seconds`), equal to the event simulator on every
measured run (the benchmark reports the largest difference), so a fit can evaluate hundreds of
candidate constants in seconds. :func:`fit_kernels` minimises the mean absolute percentage error over
the runs :func:`archsim.training.fitted.is_fit_run` selects (Nelder–Mead, from a wide start: the
host-issue term is flat until it binds)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from archsim.devices.gpu_cost import Efficiency
from archsim.training import fitted
from archsim.training.cluster import single_node
from archsim.training.iteration import Machine, after_backward, model_pieces, one_f_one_b_seconds, stage_times
from archsim.training.measured import MeasuredRun
from archsim.training.memory import stage_parameters
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig


def fast_seconds(run: MeasuredRun, machine: Machine) -> float:
    """A measured run's predicted iteration seconds by the closed form."""
    return fast_iteration_seconds(run.config(), run.parallelism(), machine)


def fast_iteration_seconds(c: TransformerConfig, par: Parallelism, machine: Machine) -> float:
    """Iteration seconds of plain 1F1B (one chunk per rank) by its closed form, without building the
    schedule: what a search over many configurations can afford per point."""
    times = stage_times(c, par, machine, model_pieces(c, par, machine))
    span = one_f_one_b_seconds(times, par.microbatches)
    per = c.layers // par.pp
    post = max(sum(after_backward(c, par, machine, r, stage_parameters(c, par, per, r == 0, r == par.pp - 1)).values())
               for r in range(par.pp))
    return span + post


def _efficiency(x) -> Efficiency:
    return Efficiency(gemm=min(float(x[0]), 1.0), memory=min(float(x[1]), 1.0), kernel_s=float(x[2]) * 1e-6,
                      host_s=float(x[3]) * 1e-6)


def fit_kernels(runs: list[MeasuredRun]) -> tuple[Efficiency, float]:
    """(efficiencies, fit MAPE) fitted on the fit part of ``runs`` (the others are not read)."""
    from scipy.optimize import minimize

    fit_runs = [r for r in runs if fitted.is_fit_run(r.layers)]
    base = single_node().machine(fit_runs[0].parallelism())
    measured = np.array([r.milliseconds / 1e3 for r in fit_runs])

    def loss(x) -> float:
        if np.any(np.asarray(x) <= 0) or x[0] > 1 or x[1] > 1:
            return 1e9
        machine = replace(base, efficiency=_efficiency(x))
        predicted = np.array([fast_seconds(r, machine) for r in fit_runs])
        return float(np.mean(np.abs(predicted / measured - 1)))

    start = np.array([0.7, 0.8, 5.0, 60.0])  # GEMM and HBM efficiency, µs per kernel, µs per op issued
    simplex = np.vstack([start, *(start * np.where(np.arange(4) == i, 0.7, 1.0) for i in range(4))])
    best = minimize(loss, x0=start, method="Nelder-Mead",
                    options={"xatol": 1e-3, "fatol": 1e-4, "maxiter": 250, "initial_simplex": simplex})
    return _efficiency(best.x), float(best.fun)


__all__ = ["fast_iteration_seconds", "fast_seconds", "fit_kernels"]
