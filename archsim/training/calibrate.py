"""Fitting the GPU kernel efficiencies to measured iterations — on the fit part only.

:func:`fast_seconds` predicts a measured run's iteration with 1F1B's closed form
(:func:`~archsim.training.stages.one_f_one_b_seconds`), equal to the event simulator on every
measured run (the benchmark reports the largest difference), so a fit can evaluate hundreds of
candidate constants in seconds. :func:`fit_kernels` minimises the mean absolute percentage error over
the runs :func:`archsim.training.fitted.is_fit_run` selects (Nelder–Mead, from a wide start: the
host-issue term is flat until it binds).

:func:`fit_probe` instead measures the four constants on one GPU from microbenchmarks
(``benchmarks/gpu_efficiency_probe.py``, read by :func:`read_probe`), vTrain's method: profile the
kernels, then predict whole iterations — so no measured iteration is fitted on."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from archsim.choices.training import DEFAULT_P2P
from archsim.devices.device import Device
from archsim.devices.kernel_constants import KernelConstants, one_fraction
from archsim.devices.kernel_ops import device_gemm_seconds
from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.training import fitted
from archsim.training.cluster_file import single_node
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.machine import Machine
from archsim.training.measured import MeasuredRun, blank_row, split_meta
from archsim.training.memory import stage_parameters
from archsim.training.parallel import Parallelism
from archsim.training.stages import one_f_one_b_seconds, stage_times
from archsim.workload.transformer import TransformerConfig


def fast_seconds(run: MeasuredRun, machine: Machine, p2p: str = DEFAULT_P2P) -> float:
    """A measured run's predicted iteration seconds by the closed form (``p2p``: its pipeline sends, ``--p2p``)."""
    return fast_iteration_seconds(run.config(), replace(run.parallelism(), p2p=p2p), machine)


def fast_iteration_seconds(c: TransformerConfig, par: Parallelism, machine: Machine) -> float:
    """Iteration seconds of plain 1F1B (one chunk per rank) by its closed form, without building the
    schedule: what a search over many configurations can afford per point; with blocking sends
    (:attr:`~archsim.training.parallel.Parallelism.p2p_blocking`) 1F1B's exact recurrence instead
    (:func:`~archsim.policies.held_span.one_f_one_b_held`)."""
    from archsim.policies.held_span import one_f_one_b_held

    times = stage_times(c, par, machine, model_pieces(c, par, machine))
    span = one_f_one_b_held(times, par.microbatches) if par.p2p_blocking else one_f_one_b_seconds(times, par.microbatches)
    per = c.layers // par.pp
    post = max(sum(after_backward(c, par, machine, r, stage_parameters(c, par, per, r == 0, r == par.pp - 1)).values())
               for r in range(par.pp))
    return span + post


def _efficiency(x) -> KernelConstants:
    return one_fraction(gemm=min(float(x[0]), 1.0), memory=min(float(x[1]), 1.0), launch_s=float(x[2]) * 1e-6,
                        host_s=float(x[3]) * 1e-6)


def fit_kernels(runs: list[MeasuredRun], gemm: float | None = None) -> tuple[KernelConstants, float]:
    """(efficiencies, fit MAPE) fitted on the fit part of ``runs`` (the others are not read). ``gemm``:
    η_gemm held at this value (fitted elsewhere, e.g. on large GEMMs timed alone:
    :mod:`archsim.validation.gemm_rate`) while memory, launch_s and host_s are fitted; None fits all four."""
    from scipy.optimize import minimize

    fit_runs = [r for r in runs if fitted.is_fit_run(r.layers)]
    base = single_node().machine(fit_runs[0].parallelism())
    measured = np.array([r.milliseconds / 1e3 for r in fit_runs])
    held = [] if gemm is None else [gemm]

    def full(x) -> np.ndarray:
        return np.concatenate([held, np.asarray(x, dtype=np.float64)])

    def loss(x) -> float:
        x = full(x)
        if np.any(x <= 0) or x[0] > 1 or x[1] > 1:
            return 1e9
        machine = replace(base, efficiency=_efficiency(x))
        predicted = np.array([fast_seconds(r, machine) for r in fit_runs])
        return float(np.mean(np.abs(predicted / measured - 1)))

    start = np.array([0.7, 0.8, 5.0, 60.0])[len(held):]  # GEMM and HBM efficiency, µs per kernel, µs per op issued
    simplex = np.vstack([start, *(start * np.where(np.arange(len(start)) == i, 0.7, 1.0) for i in range(len(start)))])
    best = minimize(loss, x0=start, method="Nelder-Mead",
                    options={"xatol": 1e-3, "fatol": 1e-4, "maxiter": 250, "initial_simplex": simplex})
    return _efficiency(full(best.x)), float(best.fun)


PROBE_COLUMNS = ("section", "name", "m", "k", "n", "count", "bytes", "ops", "seconds")
PROBE_SECTIONS = ("gemm", "memory", "kernel", "host", "launches")  # what benchmarks/gpu_efficiency_probe.py writes
HOST_ROW = "tiny_gpt.fwd_bwd.recompute_none"  # the host row host_s is read from (seconds / archsim ops)


@dataclass(frozen=True)
class ProbeRow:
    """One probe measurement: section gemm | memory | kernel | host; GEMM shape (m, k, n, count);
    bytes the kernel moves; archsim ops issued (host, kernel rows); median seconds."""

    section: str
    name: str
    m: int
    k: int
    n: int
    count: int
    bytes: float
    ops: int
    seconds: float


@dataclass(frozen=True)
class ProbeFit:
    """Probe-fitted constants and how well archsim's model fits each section: RMS relative error of
    the GEMM and memory rows, how many rows each section had, and the kernels PyTorch launches per
    archsim op (``launch_s`` = the per-kernel overhead × it; 1 where the probe could not count)."""

    efficiency: KernelConstants
    gemm_rms: float
    memory_rms: float
    rows: dict[str, int]
    kernels_per_op: float = 1.0


def read_probe(path: str | Path) -> tuple[dict[str, str], list[ProbeRow]]:
    """A probe CSV's ``# key: value`` metadata and rows; errors name the file and line."""
    from archsim.csv_lines import choice_cell
    from archsim.validate import check_name, read_text
    from archsim.value_parsers import parse_float, parse_integer_cell

    file = str(path)
    lines = read_text(path, "probe", encoding="utf-8-sig").splitlines()
    meta, first = split_meta(lines)
    names = lines[first].split(",") if first < len(lines) else []
    if missing := [c for c in PROBE_COLUMNS if c not in names]:
        raise InputError(f"missing the probe columns {', '.join(missing)}", file=file, line=first + 1, missing=True)
    where = {c: names.index(c) for c in PROBE_COLUMNS}
    rows = []
    for number, line in enumerate(lines[first + 1:], start=first + 2):
        if blank_row(line):
            continue
        cells = line.split(",")
        if len(cells) < len(names):
            raise InputError(f"expected {len(names)} cells, got {len(cells)}", file=file, line=number)
        try:  # counts: integers ≥ 0 (blank: 0); bytes ≥ 0 and seconds > 0: finite, no subnormal
            ints = [parse_integer_cell(cells[where[c]] or 0, low=0, what=f"an integer ≥ 0 in {c}")
                    for c in ("m", "k", "n", "count", "ops")]
            moved = parse_float(cells[where["bytes"]] or 0, what="a byte count ≥ 0")
            seconds = parse_float(cells[where["seconds"]], low=0.0, low_open=True, what="a positive number of seconds")
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=number) from None
        section = choice_cell(cells[where["section"]], PROBE_SECTIONS, file=file, line=number, field="section")
        check_name(cells[where["name"]], "name", file=file, line=number)
        m, k, n, count, ops = ints
        rows.append(ProbeRow(section, cells[where["name"]], m, k, n, count, moved, ops, seconds))
    return meta, rows


# the tiny GPT whose forward + backward the probe's host rows time (gpu_efficiency_probe.py's host_64h_4l)
HOST_CONFIG = TransformerConfig("host_64h_4l", "gpt", 4, 64, 4, 1000, 32, 256, 4, True, 32)


def iteration_ops(c: TransformerConfig, implementation: str = "megatron", recompute: str = "none") -> int:
    """Ops archsim issues for one forward + backward of ``c`` at micro-batch 1 on one GPU (the
    recomputed forward added under ``full``): what the probe's host and launch rows divide by."""
    from archsim.training.eager_ops import eager_block_work, eager_embedding_work, eager_head_work
    from archsim.training.layer_ops import block_work, embedding_work, head_work

    eager = implementation == "pytorch-eager"
    layer = eager_block_work(c, 1) if eager else block_work(c, 1)
    ends = (eager_embedding_work(c, 1), eager_head_work(c, 1)) if eager else (embedding_work(c, 1), head_work(c, 1))
    ops = c.layers * (len(layer.forward) + len(layer.backward)) + sum(len(w.forward) + len(w.backward) for w in ends)
    return ops + (c.layers * len(layer.forward) if recompute == "full" else 0)


def fit_probe(rows: list[ProbeRow], device: Device) -> ProbeFit:
    """The four constants from a probe on ``device``: ``launch_s`` = the median kernel row × the
    kernels launched per archsim op (the :data:`HOST_ROW` iteration's ``launches`` row; archsim charges
    one overhead per op, plain PyTorch launches several), ``host_s`` = the :data:`HOST_ROW` seconds per
    archsim op, ``memory`` and ``gemm`` by least squares of the
    relative error of archsim's own :func:`~archsim.devices.kernels.stream_seconds` and
    :func:`~archsim.devices.kernel_ops.device_gemm_seconds` (the memory one
    in closed form, linear in 1 / memory; the GEMM one over a 0.001 grid, its model being stepwise).
    Both overheads are per op of Megatron's list (the probe wrote Megatron's count of
    :data:`HOST_CONFIG`'s iteration), whatever list the constants then time: the training model counts
    them in Megatron's ops of each pass (:func:`archsim.training.iteration.piece_cost`)."""
    by = {s: [r for r in rows if r.section == s] for s in ("gemm", "memory", "kernel", "host")}
    if missing := [s for s, rs in by.items() if not rs]:
        raise InputError(f"the probe has no {', '.join(missing)} rows", field="section")
    kernel_s = float(np.median([r.seconds for r in by["kernel"]]))
    host = [r for r in by["host"] if r.name == HOST_ROW and r.ops > 0]
    if not host:
        raise InputError(f"the probe has no {HOST_ROW} row", field="name")
    synced = [r for r in by["host"] if r.name == HOST_ROW + ".synchronized" and r.ops > 0]
    # host and launch stay per Megatron op whatever list runs: the training model counts a fit's per-op
    # overheads in Megatron's ops (archsim.training.iteration.piece_cost); a queued time above the
    # synchronized one hid a sync
    host_s = min(r.seconds / r.ops for r in host + synced)
    t = np.array([r.seconds for r in by["memory"]])
    moved = np.array([r.bytes for r in by["memory"]])
    a = moved / (device.hbm_bytes_per_s * t)  # seconds at full HBM bandwidth / measured seconds
    inverse = float(np.sum(a * (1 - kernel_s / t)) / np.sum(a * a))  # min Σ (a·y + kernel_s/t − 1)², y = 1/memory
    memory = min(1.0, 1.0 / inverse)
    probe = one_fraction(1.0, memory, kernel_s, host_s)
    memory_rms = float(np.sqrt(np.mean((stream_seconds(moved, device.hbm_bytes_per_s, probe) / t - 1) ** 2)))
    m, k, n, count = np.array([(r.m, r.k, r.n, r.count) for r in by["gemm"]], dtype=np.float64).T
    measured = np.array([r.seconds for r in by["gemm"]])
    grid = np.linspace(0.05, 1.0, 951)
    errors = [float(np.mean((device_gemm_seconds(m, k, n, count, device, replace(probe, gemm=float(g))) / measured - 1) ** 2))
              for g in grid]
    best = int(np.argmin(errors))
    sizes = {s: len(rs) for s, rs in by.items()}
    launches = [r for r in rows if r.section == "launches" and r.name == HOST_ROW and r.ops > 0 and r.count > 0]
    per_op = launches[0].count / launches[0].ops if launches else 1.0
    fitted = replace(probe, gemm=float(round(grid[best], 3)), launch_s=kernel_s * per_op)
    return ProbeFit(fitted, float(np.sqrt(errors[best])), memory_rms, sizes, per_op)


__all__ = ["HOST_CONFIG", "HOST_ROW", "PROBE_COLUMNS", "ProbeFit", "ProbeRow", "fast_iteration_seconds", "fast_seconds",
           "fit_kernels", "fit_probe", "iteration_ops", "read_probe"]
