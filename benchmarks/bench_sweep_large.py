"""A large design-space sweep on two local processes and on a Dask LocalCluster, same results.

    .venv/bin/python benchmarks/bench_sweep_large.py [--arrays 100] [--workers 2] [--no-dask]

The default sweep's networks, batches, processor counts and methods over ``--arrays`` array shapes
(rows × cols from a 10 × 10 grid of 8…256, the first N in row-major order) and all three
dataflows: 990 configurations per array shape, 99,000 with the default 100. Runs it cold (a
temporary results folder) with ``--workers`` local processes, then on a Dask LocalCluster with as
many single-threaded workers, checks that the two results.csv are byte-identical, and writes the
wall and CPU times (this process and the child processes it reaped) to benchmarks/results/sweep_large.csv.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SIDES = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def spec_of(arrays: int):
    from archsim.sweep.spec import SweepSpec

    grid = tuple((r, c) for r in SIDES for c in SIDES)[:arrays]
    return SweepSpec(name="large", networks=("vgg16", "resnet50"), only=("conv",), arrays=grid,
                     dataflows=("ws", "os", "is"), batches=(16, 32, 64, 128, 256), processors=tuple(range(2, 13)),
                     methods=("layerpipe", "pipedream", "gpipe"))


def cpu_seconds() -> float:
    own, children = os.times()[:2], os.times()[2:4]
    return sum(own) + sum(children)


def timed_run(spec, workers: int, dask: str | None) -> tuple[float, float, bytes]:
    from archsim.sweep import run_sweep

    with tempfile.TemporaryDirectory() as folder:
        wall, cpu = time.perf_counter(), cpu_seconds()
        run_sweep(spec, folder, workers=workers, dask=dask, progress=False)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        return wall, cpu, (Path(folder) / "results.csv").read_bytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", type=int, default=100, help="array shapes (990 configurations each)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args(argv)
    from archsim.outputs import atomic_write_text

    spec = spec_of(args.arrays)
    rows = []
    wall, cpu, local = timed_run(spec, args.workers, None)
    rows.append({"backend": f"{args.workers} local processes", "configurations": spec.size, "wall_s": wall,
                 "cpu_s": cpu, "identical_to_local": True})
    print(f"{spec.size} configurations, {args.workers} local processes: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
    if not args.no_dask:
        wall, cpu, remote = timed_run(spec, args.workers, "local")
        rows.append({"backend": f"dask LocalCluster, {args.workers} workers", "configurations": spec.size,
                     "wall_s": wall, "cpu_s": cpu, "identical_to_local": remote == local})
        print(f"dask LocalCluster: {wall:.1f} s wall ({cpu:.1f} s CPU of this process and the children it "
              f"reaped); results identical: {remote == local}", flush=True)
    atomic_write_text(ROOT / "benchmarks" / "results" / "sweep_large.csv", pd.DataFrame(rows).to_csv(index=False))
    return 0 if all(r["identical_to_local"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
