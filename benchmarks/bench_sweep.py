"""The whole default sweep vs one SCALE-Sim run of one VGG16 layer, measured in one run.

    .venv/bin/python benchmarks/bench_sweep.py [--spec configs/sweeps/layerpipe_paper.toml] [--workers 1]

Runs the sweep from scratch (a temporary results folder, nothing cached) and SCALE-Sim on VGG16
conv1_1 (32×32 ws, batch 1: SCALE-Sim has no batch), prints both wall times and their ratio, and
writes benchmarks/results/sweep_speed.csv atomically.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from archsim.outputs import atomic_write_text
from archsim.sweep import load_spec, run_sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "configs" / "sweeps" / "layerpipe_paper.toml"))
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    spec = load_spec(args.spec)
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        frame = run_sweep(spec, folder, workers=args.workers, progress=False)
        sweep_s = time.perf_counter() - start
    from scalesim_reference import scalesim_conv

    start = time.perf_counter()
    scalesim_conv(226, 226, 3, 3, 3, 64, 1, 32, 32, "ws")
    scalesim_s = time.perf_counter() - start
    print(f"sweep {spec.name}: {len(frame)} configurations in {sweep_s:.2f} s ({args.workers} worker(s))")
    print(f"SCALE-Sim, VGG16 conv1_1 on 32x32 ws: {scalesim_s:.2f} s")
    print(f"ratio: the whole sweep takes {sweep_s / scalesim_s:.3f} of one SCALE-Sim layer "
          f"({scalesim_s / sweep_s:.1f}x faster)")
    result = pd.DataFrame([{"spec": spec.name, "configurations": len(frame), "workers": args.workers,
                            "sweep_seconds": sweep_s, "scalesim_vgg16_conv1_1_seconds": scalesim_s,
                            "ratio": sweep_s / scalesim_s}])
    atomic_write_text(ROOT / "benchmarks" / "results" / "sweep_speed.csv", result.to_csv(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
