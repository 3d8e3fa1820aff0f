"""Where archsim's largest misses on NeuSight's fp32 GEMMs come from: the evidence behind
docs/gpu-validation.md's "The largest GEMM misses, diagnosed".

    .venv/bin/python benchmarks/bench_neusight_gemm_misses.py [--data ../shared/gpu_kernels]

Reads only each row's shape (B, M, N, K in archsim's names: output rows, output columns, reduction),
GPU and measured latency — never the observed kernel name, grid or blocks. Rate = 2·B·M·N·K / latency.
Four tables:

* **Reduction length** (linear): per GPU, the median rate of the large outputs (M·N ≥ 2^21) with a
  reduction K ≤ 4,096 (the GPU's own reference), then the median rate of longer reductions as a
  fraction of it, and the shipped constants' MAPE (%) on every linear row of each band.
* **x-operand footprint** (linear, P100 and P4): the same fraction by reduction length (rows) and by
  the bytes of the M × K input, M·K·4 (columns) — what the slowdown grows with.
* **Narrow outputs** (bmm): median rate of the outputs with 64, 80, 96 and 128 columns (M ≥ 512,
  K ≥ 256), and that rate × 128 / N: constant where a 128-column tile runs half-empty.
* **Same shape, other batch** (bmm): rows of one (M, N, K) differ only in the batch; with at least
  2^22 outputs each, every row is many full waves, so a model whose rate ignores the batch can do no
  better than these rows' spread: |rate / its shape's median rate − 1| (%), its median and its mean (the
  MAPE of a prediction at each shape's median rate).

Writes benchmarks/results/neusight_gemm_misses.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np
import pandas as pd
from bench_neusight_kernels import page_main

from archsim.devices.kernel_constants import FITTED
from archsim.validation.neusight import predict, read_neusight_csv

LARGE_OUTPUTS = 2**21  # M·N at or above which a linear's output is many waves on every GPU here
REFERENCE_K = 4096  # reductions up to this long are each GPU's reference rate
BANDS = ((REFERENCE_K, 8192), (8192, 16384), (16384, 2**31))  # longer reductions, (lo, hi]
FOOTPRINT_MIB = ((0, 64), (64, 256), (256, 1024), (1024, 2**31))  # x operand M·K·4 bytes, (lo, hi] MiB
FOOTPRINT_K = (("4,608–7,680", 4096, 8191), ("8,192", 8192, 8192), ("10,240–16,384", 8193, 16384),
               ("≥ 30,522", 16385, 2**31))  # rows of the footprint table: K in [lo, hi]
FOOTPRINT_GPUS = ("p100-pcie-16gb", "p4-8gb")
NARROW = (64, 80, 96, 128)  # output columns of the narrow-output table
SPREAD_OUTPUTS = 2**22  # B·M·N at or above which a batched GEMM is many full waves on every GPU here
SPREAD_MIN_ROWS = 3


def with_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (a NeuSight file read by archsim) predicted with the shipped constants, plus
    ``tflops`` (measured rate) and ``x_mib`` (the M × K input's MiB)."""
    out = predict(frame.reset_index(drop=True), FITTED)
    flops = 2.0 * out.B * out.M * out.N * out.K
    return out.assign(tflops=flops / out.measured_seconds / 1e12, x_mib=out.M * out.K * 4 / 2**20)


def _reference(rows: pd.DataFrame) -> float:
    large = rows[(rows.M * rows.N >= LARGE_OUTPUTS) & (rows.K <= REFERENCE_K)]
    return float(large.tflops.median()) if len(large) else float("nan")


def _cell(value: float, digits: int = 2) -> str:
    return "—" if not np.isfinite(value) else f"{value:.{digits}f}"


def reduction_table(linear: pd.DataFrame) -> list[str]:
    """Per GPU: reference rate, rate fraction per longer-reduction band, shipped MAPE per band."""
    head = " | ".join(f"{lo + 1:,}–{hi:,}" if hi < 2**31 else f"> {lo:,}" for lo, hi in BANDS)
    lines = [(f"| GPU | TFLOP/s at K ≤ {REFERENCE_K:,} | fraction of it at K = {head} "
             f"| MAPE % at K ≤ {REFERENCE_K:,} | MAPE % at K > {REFERENCE_K:,} |"),
             "|---|---:|" + "---:|" * len(BANDS) + "---:|---:|"]
    for gpu, rows in linear.groupby("gpu", sort=True):
        reference = _reference(rows)
        large = rows[rows.M * rows.N >= LARGE_OUTPUTS]
        cells = []
        for lo, hi in BANDS:
            band = large[(large.K > lo) & (large.K <= hi)].tflops
            cells.append(f"{_cell(band.median() / reference)} ({band.size})" if band.size else "—")
        short = rows[rows.K <= REFERENCE_K].error.abs().mean() * 100
        long = rows[rows.K > REFERENCE_K].error.abs().mean() * 100
        lines.append(f"| {gpu} | {_cell(reference)} | " + " | ".join(cells) + f" | {_cell(short, 1)} | {_cell(long, 1)} |")
    return lines


def footprint_table(linear: pd.DataFrame, gpu: str) -> list[str]:
    """One GPU's rate fraction (of its reference) by reduction length and x-operand footprint."""
    rows = linear[linear.gpu == gpu]
    reference = _reference(rows)
    large = rows[rows.M * rows.N >= LARGE_OUTPUTS]
    head = " | ".join(f"{lo}–{hi} MiB" if hi < 2**31 else f"> {lo} MiB" for lo, hi in FOOTPRINT_MIB)
    lines = [f"{gpu} (reference {_cell(reference)} TFLOP/s):", "",
             f"| K | x operand M·K·4 = {head} |", "|---|" + "---:|" * len(FOOTPRINT_MIB)]
    for name, k_lo, k_hi in FOOTPRINT_K:
        at_k = large[(large.K >= k_lo) & (large.K <= k_hi)]
        cells = []
        for lo, hi in FOOTPRINT_MIB:
            cell = at_k[(at_k.x_mib > lo) & (at_k.x_mib <= hi)].tflops
            cells.append(f"{_cell(cell.median() / reference)} ({cell.size})" if cell.size else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def narrow_table(bmm: pd.DataFrame) -> list[str]:
    """Per GPU: median rate at 64…128 output columns, and that rate × 128 / N."""
    lines = ["| GPU | " + " | ".join(f"N = {n}" for n in NARROW) + " | "
             + " | ".join(f"× 128/{n}" for n in NARROW[:-1]) + " |",
             "|---|" + "---:|" * (2 * len(NARROW) - 1)]
    for gpu, rows in bmm.groupby("gpu", sort=True):
        sel = rows[(rows.M >= 512) & (rows.K >= 256)]
        medians = [sel[sel.N == n].tflops.median() if (sel.N == n).any() else float("nan") for n in NARROW]
        scaled = [m * NARROW[-1] / n for m, n in zip(medians[:-1], NARROW[:-1], strict=True)]
        lines.append(f"| {gpu} | " + " | ".join(_cell(m) for m in medians) + " | "
                     + " | ".join(_cell(s) for s in scaled) + " |")
    return lines


def spread_table(bmm: pd.DataFrame) -> list[str]:
    """Per GPU: the rows' |rate / their shape's median − 1| (%), median and mean, over shapes run at ≥ 3
    batches; the mean is the MAPE of predicting each row at its shape's median rate."""
    lines = [("| GPU | shapes | rows | median deviation % | mean deviation % | rows off by > 25 % "
             "| MAPE % of these rows (shipped) |"), "|---|---:|---:|---:|---:|---:|---:|"]
    for gpu, rows in bmm.groupby("gpu", sort=True):
        big = rows[rows.B * rows.M * rows.N >= SPREAD_OUTPUTS]
        groups = big.groupby(["M", "N", "K"]).filter(lambda g: len(g) >= SPREAD_MIN_ROWS)
        if groups.empty:
            lines.append(f"| {gpu} | 0 | 0 | — | — | — | — |")
            continue
        median = groups.groupby(["M", "N", "K"]).tflops.transform("median")
        deviation = (groups.tflops / median - 1).abs() * 100
        shapes = groups.groupby(["M", "N", "K"]).ngroups
        lines.append(f"| {gpu} | {shapes} | {len(groups)} | {deviation.median():.1f} | {deviation.mean():.1f} | "
                     f"{(deviation > 25).mean() * 100:.0f} % | {groups.error.abs().mean() * 100:.1f} |")
    return lines


def report(data: Path) -> str:
    """The four tables as a markdown page."""
    linear = with_rates(read_neusight_csv(data / "linear.csv").frame)
    bmm = with_rates(read_neusight_csv(data / "bmm.csv").frame)
    lines = ["# Where the largest misses on NeuSight's fp32 GEMMs come from", "",
             ("`python benchmarks/bench_neusight_gemm_misses.py` (shapes and latencies only; archsim's M, N, K: "
             "output rows, output columns, reduction; rows in brackets)"), "",
             f"## Reduction length (linear; rate fractions over outputs M·N ≥ 2^{int(np.log2(LARGE_OUTPUTS))})", "",
             *reduction_table(linear), "", "## x-operand footprint (linear)", ""]
    for gpu in FOOTPRINT_GPUS:
        lines += [*footprint_table(linear, gpu), ""]
    lines += ["## Narrow outputs (bmm, M ≥ 512, K ≥ 256; median TFLOP/s)", "", *narrow_table(bmm), "",
              (f"## Same shape, other batch (bmm, B·M·N ≥ 2^{int(np.log2(SPREAD_OUTPUTS))}, "
              f"shapes run at ≥ {SPREAD_MIN_ROWS} batches)"), "", *spread_table(bmm)]
    return "\n".join(lines) + "\n"


def main() -> None:
    page_main(__doc__, report, "neusight_gemm_misses.md")


if __name__ == "__main__":
    main()
