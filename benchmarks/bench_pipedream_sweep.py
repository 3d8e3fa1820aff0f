"""PipeDream's optimizer inside the default sweep, in one run: the sweep's 40 profiles (VGG16 and
ResNet-50 conv layers, 4 arrays × 5 batches, paper mode) × its 11 processor counts, planned one
call per count (``pipedream_partition``) and one call per profile (``pipedream_partitions``, one
table for every count); the same partitions asserted. Also the one-time cost of loading the
compiled kernel from numba's cache, in a fresh process (what a cold sweep pays once).

    .venv/bin/python benchmarks/bench_pipedream_sweep.py [--repeats 3]

CPU seconds (``time.process_time``), best of the repeats. Writes
benchmarks/results/pipedream_sweep_speed.csv.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.partition import build_profile
from archsim.partition.pipedream import pipedream_partition, pipedream_partitions
from archsim.partition.pipedream_kernel import warm_up
from archsim.sweep import load_spec
from archsim.workload import load_network

ROOT = Path(__file__).resolve().parents[1]

LOAD = ("import time; import archsim.partition.pipedream_kernel as k; t = time.process_time(); k.warm_up(); "
        "print(time.process_time() - t)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    spec = load_spec(ROOT / "configs" / "sweeps" / "layerpipe_paper.toml")
    warm_up()
    loads = [float(subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True,
                                  cwd=ROOT).stdout) for _ in range(args.repeats)]
    rows = []
    for network in spec.networks:
        layers = load_network(network).only(*spec.only)
        profiles = [build_profile(layers, unit.array, unit.batch, spec.mode) for unit in spec.units()
                    if unit.network == network]  # each unit's array: a shape's or a .cfg's, at its dataflow
        counts = list(spec.processors)
        per_count, per_profile = [], []
        for _ in range(args.repeats):
            for profile in profiles:  # fresh states each repeat: what each sweep unit computes
                profile.__dict__.pop("antichain_states", None)
            start = time.process_time()
            one_by_one = [[pipedream_partition(p, count) for count in counts] for p in profiles]
            per_count.append(time.process_time() - start)
            for profile in profiles:
                profile.__dict__.pop("antichain_states", None)
            start = time.process_time()
            together = [pipedream_partitions(p, counts) for p in profiles]
            per_profile.append(time.process_time() - start)
            assert together == one_by_one, network
        rows.append({"network": network, "profiles": len(profiles), "processor_counts": len(counts),
                     "one_call_per_count_cpu_s": round(min(per_count), 3),
                     "one_call_per_profile_cpu_s": round(min(per_profile), 3),
                     "ratio": round(min(per_count) / min(per_profile), 2),
                     "kernel_load_once_cpu_s": round(min(loads), 3)})
        print(rows[-1], flush=True)
    atomic_write_text(ROOT / "benchmarks" / "results" / "pipedream_sweep_speed.csv",
                      pd.DataFrame(rows).to_csv(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
