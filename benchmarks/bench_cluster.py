"""Wall time of one 500-job cluster simulation per policy, against SCALE-Sim on one VGG16 layer.

    .venv/bin/python benchmarks/bench_cluster.py [--jobs 500] [--gpus 45] [--seed 0] [--unit-seconds 10]
                                                 [--no-scalesim]

Builds the §4.2 synthetic trace, runs Jigsaw, Gandiva and Tiresias once each and prints each wall
time next to SCALE-Sim's time for VGG16 conv1_1 (32×32 ws) measured in the same run (6.6 s on the
project's 2-core machine when last measured; pass --no-scalesim to skip it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from archsim.cluster import (  # noqa: E402
    ClusterSpec, SimConfig, build_jobs, paper_catalog, simulate, summarize, synthetic_trace)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=45)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--unit-seconds", type=float, default=10.0)
    parser.add_argument("--no-scalesim", action="store_true")
    args = parser.parse_args(argv)
    cluster = ClusterSpec.uniform(args.gpus, 3)
    start = time.perf_counter()
    jobs = build_jobs(synthetic_trace(args.jobs, args.seed), paper_catalog(), cluster)
    print(f"trace + profiles: {args.jobs} jobs in {time.perf_counter() - start:.2f} s")
    config = SimConfig(unit_s=args.unit_seconds)
    for policy in ("jigsaw", "gandiva", "tiresias"):
        start = time.perf_counter()
        result = simulate(jobs, cluster, policy, config)
        seconds = time.perf_counter() - start
        print(f"{policy:9s} {seconds:6.2f} s  (makespan {summarize(result)['makespan_s']:,.0f} s simulated)")
    if not args.no_scalesim:
        from scalesim_reference import scalesim_conv

        start = time.perf_counter()
        scalesim_conv(226, 226, 3, 3, 3, 64, 1, 32, 32, "ws")
        print(f"SCALE-Sim, VGG16 conv1_1 on 32x32 ws: {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
