"""Where the shipped kernel model's error on NeuSight's batched GEMMs (bmm) sits, from shapes and latencies only.

    .venv/bin/python benchmarks/bench_neusight_bmm_structure.py [--data ../shared/gpu_kernels]

Per GPU, the bmm rows of ``bmm.csv`` timed with ``kernels.FITTED`` (in sample), split two ways:

* **narrow**: an output side under 128 (min(M, N) < 128, archsim's M, N: attention's scores × values with a
  head dimension of 64–96) against the rest;
* **traffic ratio** (the rest only): the seconds of the kernel's A, B and C bytes at the datasheet HBM
  bandwidth over the seconds of its FLOPs at the SMs' peak × ``FITTED.gemm`` (power-capped), binned by
  log2 in half steps. A model that hides all operand traffic behind the main loop has a signed error that
  does not depend on this ratio.

Signed error = predicted / measured − 1 (negative: the model is too fast). Writes
benchmarks/results/neusight_bmm_structure.md. Nothing here is fitted.
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

from archsim.devices.kernel_constants import FITTED, sm_flops, sustained_flops
from archsim.validation.neusight import device_spec, predict, read_neusight_csv

TILE_WIDTH = 128  # the widest SIMT sgemm tile side (kernels.TILES); a narrower output leaves part of it idle


def traffic_ratio(rows: pd.DataFrame) -> np.ndarray:
    """HBM seconds of A, B and C at datasheet bandwidth ÷ main-loop seconds at peak × gemm (capped)."""
    spec = device_spec(rows["device"].iloc[0])
    peak = min(sm_flops(spec) * spec.sm_count * FITTED.gemm, sustained_flops(spec))
    b, m, n, k = (rows[c].to_numpy(dtype=float) for c in ("B", "M", "N", "K"))
    memory = 4.0 * b * (m * k + k * n + m * n) / spec.memory_bytes_per_s
    return np.asarray(memory / (2.0 * b * m * n * k / peak))


def summary(errors: pd.Series) -> str:
    return f"{len(errors)} | {errors.abs().mean():.1f} | {errors.median():+.1f}"


def report(frame: pd.DataFrame) -> str:
    predicted = predict(frame, FITTED)
    predicted["err"] = (predicted["predicted_seconds"] / predicted["measured_seconds"] - 1.0) * 100.0
    lines = ["# Where the bmm error sits (shipped constants, in sample)", "",
             "`python benchmarks/bench_neusight_bmm_structure.py`", "",
             ("MAPE and signed median error in % (negative: the model is too fast); narrow: an output side "
             "under 128 (min(M, N) < 128)."), "",
             "| GPU | rows | MAPE | signed | narrow rows | MAPE | signed | other rows | MAPE | signed |",
             "|---|" + "---:|" * 9]
    ratios: dict[str, pd.Series] = {}
    for gpu, rows in predicted.groupby("gpu"):
        narrow = np.minimum(rows["M"], rows["N"]) < TILE_WIDTH
        lines.append(f"| {gpu} | {summary(rows['err'])} | {summary(rows['err'][narrow])} | "
                     f"{summary(rows['err'][~narrow])} |")
        rest = rows[~narrow]
        bins = np.round(2.0 * np.log2(traffic_ratio(rest))) / 2.0
        ratios[str(gpu)] = rest["err"].groupby(bins).median()
    table = pd.DataFrame(ratios).sort_index()
    lines += ["", ("Signed median error % of the rows that are not narrow, by log2 of the traffic ratio "
              "(HBM seconds at datasheet bandwidth ÷ main-loop seconds at peak × gemm):"), "",
              "| log2 ratio | " + " | ".join(table.columns) + " |", "|---:|" + "---:|" * len(table.columns)]
    for ratio, row in table.iterrows():
        cells = " | ".join("" if np.isnan(v) else f"{v:+.1f}" for v in row)
        lines.append(f"| {ratio:+.1f} | {cells} |")
    t4 = predicted[predicted["gpu"] == "t4-16gb"]
    by_batch = t4["err"].groupby(2.0 ** np.floor(np.log2(t4["B"]))).agg(["count", "median"])
    lines += ["", "T4, signed median error % by batch (power-of-two bins):", "",
              "| batch ≥ | rows | signed median |", "|---:|---:|---:|"]
    lines += [f"| {int(b)} | {int(r['count'])} | {r['median']:+.1f} |" for b, r in by_batch.iterrows()]
    return "\n".join(lines) + "\n"


def main() -> None:
    page_main(__doc__, lambda data: report(read_neusight_csv(data / "bmm.csv").frame), "neusight_bmm_structure.md")


if __name__ == "__main__":
    main()
