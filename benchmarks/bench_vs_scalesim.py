"""archsim's analytic cost vs the scalesim package on the same layers, in one run.

    .venv/bin/python benchmarks/bench_vs_scalesim.py [--cap-seconds 120]

For each layer: SCALE-Sim's compute cycles and wall time (one run), archsim's cycles and time per
call (median of repeated timeit batches), the speed ratio, and whether the cycles are identical.
Also the per-GEMM time of one vectorized call over 100,000 GEMMs. Results go to
benchmarks/results/scalesim_speed.csv (written atomically).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from archsim.array.analytic import gemm_cost  # noqa: E402
from archsim.outputs import atomic_write_text  # noqa: E402

# (name, H, W, fh, fw, C, M, stride) in SCALE-Sim geometry (padding folded into H, W; batch 1),
# with estimated SCALE-Sim seconds on 2 cores, so runs over the cap are skipped, not started.
LAYERS = [
    ("vgg16_conv1_1", 226, 226, 3, 3, 3, 64, 1),
    ("layerpipe_conv4", 30, 30, 3, 3, 128, 128, 1),
    ("resnet50_res5a_conv2", 16, 16, 3, 3, 512, 512, 2),
    ("small_conv", 16, 16, 3, 3, 8, 16, 1),
]


def archsim_seconds(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> float:
    timer = timeit.Timer(lambda: gemm_cost(m, k, n, rows, cols, dataflow))
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=5, number=number))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap-seconds", type=float, default=120.0, help="skip SCALE-Sim runs estimated longer")
    parser.add_argument("--array", type=int, default=32)
    parser.add_argument("--dataflow", default="ws")
    args = parser.parse_args(argv)
    from scalesim_reference import scalesim_conv

    rng = np.random.default_rng(0)
    count = 100_000
    shapes = [rng.integers(1, 4096, count) for _ in range(3)]
    start = time.perf_counter()
    gemm_cost(*shapes, 32, 32, "ws")
    per_gemm = (time.perf_counter() - start) / count
    print(f"vectorized: {count} GEMMs in one call, {per_gemm * 1e9:.0f} ns per GEMM")
    rows = []
    for name, h, w, fh, fw, c, m, stride in LAYERS:
        e = -(-(h - fh + stride) // stride)
        f = -(-(w - fw + stride) // stride)
        gemm = (e * f, fh * fw * c, m)
        ours = int(gemm_cost(*gemm, args.array, args.array, args.dataflow).scalar("cycles"))
        estimate = ours * 4.5e-6  # SCALE-Sim steps its demand matrices at roughly 4–5 µs per cycle here
        if estimate > args.cap_seconds:
            print(f"{name}: skipped (SCALE-Sim estimated {estimate:.0f} s > cap {args.cap_seconds:.0f} s)")
            continue
        start = time.perf_counter()
        reference = scalesim_conv(h, w, fh, fw, c, m, stride, args.array, args.array, args.dataflow)
        scalesim_s = time.perf_counter() - start
        archsim_s = archsim_seconds(*gemm, args.array, args.array, args.dataflow)
        rows.append({"layer": name, "m": gemm[0], "k": gemm[1], "n": gemm[2], "array": f"{args.array}x{args.array}",
                     "dataflow": args.dataflow, "scalesim_cycles": reference.compute_cycles, "archsim_cycles": ours,
                     "identical": reference.compute_cycles == ours, "scalesim_seconds": scalesim_s,
                     "archsim_seconds": archsim_s, "speedup": scalesim_s / archsim_s,
                     "archsim_vectorized_seconds": per_gemm, "speedup_vectorized": scalesim_s / per_gemm})
        print(f"{name}: SCALE-Sim {scalesim_s:.2f} s, archsim {archsim_s * 1e6:.1f} µs per call "
              f"(ratio {scalesim_s / archsim_s:.3g}x), {per_gemm * 1e9:.0f} ns vectorized "
              f"(ratio {scalesim_s / per_gemm:.3g}x); cycles identical: {reference.compute_cycles == ours}")
    frame = pd.DataFrame(rows)
    atomic_write_text(ROOT / "benchmarks" / "results" / "scalesim_speed.csv", frame.to_csv(index=False))
    if not frame.empty:
        print(f"minimum ratio per call {frame.speedup.min():.3g}x, vectorized {frame.speedup_vectorized.min():.3g}x; "
              f"all cycles identical: {bool(frame.identical.all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
