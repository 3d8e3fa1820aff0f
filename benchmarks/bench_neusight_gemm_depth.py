"""Achieved FP32 rate of NeuSight's large batched GEMMs by reduction depth K: the evidence behind
docs/gpu-validation.md's second-round GEMM notes (a main-loop floor at small K; the base-clock idea).

    .venv/bin/python benchmarks/bench_neusight_gemm_depth.py [--data ../shared/gpu_kernels]

Reads only each row's shape (B, M, N, K), GPU and measured latency (never the observed kernel name,
grid or blocks). Rate = 2·B·M·N·K / latency, median over the rows whose output is large (M, N ≥ 512
and B·M·N ≥ 2^26 outputs: many full waves, so neither launch nor a tail wave weighs). Beside each GPU:
its FP32 peak at the catalog's boost clock and at the datasheet's base clock (P100 PCIe 1,126 MHz,
P4 810 MHz). Writes benchmarks/results/neusight_gemm_depth.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_neusight_kernels import page_main

from archsim.devices.catalog import KNOWN_GPUS
from archsim.devices.gpu_lookup import find_gpu, gpu_name
from archsim.devices.kernel_constants import sm_flops
from archsim.validation.neusight import read_neusight_csv

BASE_CLOCK_HZ = {"p100-pcie": 1126e6, "p4": 810e6}  # the datasheets' base clocks (boost is the catalog's)
MIN_OUTPUTS = 2**26


def depth_table(data: Path) -> str:
    frame = read_neusight_csv(data / "bmm.csv").frame
    frame = frame.assign(gpu=[find_gpu(d) for d in frame["device"]])
    frame = frame.assign(tflops=2 * frame.B * frame.M * frame.N * frame.K / frame.measured_seconds / 1e12)
    large = frame[(frame.M >= 512) & (frame.N >= 512) & (frame.B * frame.M * frame.N >= MIN_OUTPUTS)]
    ks = sorted(k for k in large.K.unique() if k <= 512)
    lines = ["# NeuSight's large batched fp32 GEMMs: median TFLOP/s by K", "",
             "`python benchmarks/bench_neusight_gemm_depth.py` (M, N ≥ 512 and B·M·N ≥ 2^26; rows in brackets)", "",
             "| GPU | " + " | ".join(f"K = {k:g}" for k in ks) + " | peak at boost | peak at base |",
             "|---|" + "---:|" * (len(ks) + 2)]
    for gpu, rows in large.groupby("gpu", sort=True):
        spec = KNOWN_GPUS[str(gpu)]
        peak = sm_flops(spec) * spec.sm_count / 1e12
        base = f"{peak * BASE_CLOCK_HZ[str(gpu)] / spec.clock_hz:.2f}" if gpu in BASE_CLOCK_HZ else "—"
        cells = []
        for k in ks:
            at_k = rows[rows.K == k].tflops
            cells.append(f"{at_k.median():.2f} ({at_k.size})" if at_k.size else "—")
        lines.append(f"| {gpu_name(str(gpu))} | " + " | ".join(cells) + f" | {peak:.2f} | {base} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    page_main(__doc__, depth_table, "neusight_gemm_depth.md")


if __name__ == "__main__":
    main()
