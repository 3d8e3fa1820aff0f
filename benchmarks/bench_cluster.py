"""Wall time of one 500-job cluster simulation per policy, against SCALE-Sim on one VGG16 layer.

    .venv/bin/python benchmarks/bench_cluster.py [--jobs 500] [--gpus 45] [--seed 0] [--unit-seconds 10]
                                                 [--no-scalesim] [--out CSV]

Builds the §4.2 synthetic trace, runs Jigsaw, Gandiva and Tiresias once each and records each wall
time next to SCALE-Sim's time for VGG16 conv1_1 (32×32 ws) measured in the same run, and their
ratio (`benchmarks/results/cluster_speed.csv`; pass --no-scalesim to skip SCALE-Sim).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from archsim.cluster import JobCluster, SimConfig, build_jobs, paper_catalog, simulate, summarize, synthetic_trace
from archsim.outputs import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=45)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--unit-seconds", type=float, default=10.0)
    parser.add_argument("--no-scalesim", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cluster_speed.csv"))
    args = parser.parse_args(argv)
    cluster = JobCluster.uniform(args.gpus, 3)
    start = time.perf_counter()
    jobs = build_jobs(synthetic_trace(args.jobs, args.seed), paper_catalog(), cluster)
    print(f"trace + profiles: {args.jobs} jobs in {time.perf_counter() - start:.2f} s")
    config = SimConfig(unit_s=args.unit_seconds)
    rows = []
    for policy in ("jigsaw", "gandiva", "tiresias"):
        start = time.perf_counter()
        result = simulate(jobs, cluster, policy, config)
        seconds = time.perf_counter() - start
        rows.append({"policy": policy, "jobs": args.jobs, "gpus": args.gpus, "unit_seconds": args.unit_seconds,
                     "simulation_seconds": seconds, "makespan_simulated_s": summarize(result)["makespan_seconds"]})
        print(f"{policy:9s} {seconds:6.2f} s  (makespan {rows[-1]['makespan_simulated_s']:,.0f} s simulated)")
    frame = pd.DataFrame(rows)
    if not args.no_scalesim:
        from scalesim_reference import scalesim_conv

        start = time.perf_counter()
        scalesim_conv(226, 226, 3, 3, 3, 64, 1, 32, 32, "ws")
        scalesim_s = time.perf_counter() - start
        print(f"SCALE-Sim, VGG16 conv1_1 on 32x32 ws: {scalesim_s:.2f} s")
        frame["scalesim_vgg16_conv1_1_seconds"] = scalesim_s
        frame["ratio_scalesim_over_simulation"] = scalesim_s / frame.simulation_seconds
        print(f"500-job simulation vs one SCALE-Sim layer: {frame.ratio_scalesim_over_simulation.min():.1f}× "
              f"(slowest policy) … {frame.ratio_scalesim_over_simulation.max():.1f}× faster")
    atomic_write_text(args.out, frame.to_csv(index=False))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
