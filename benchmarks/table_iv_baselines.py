"""Which partitioner was LayerPipe's "PipeDream" column? Candidates on the same costs, averaged
like Table IV (VGG16 conv layers, arrays 32..256, batches 16..256, paper mode).

    .venv/bin/python benchmarks/table_iv_baselines.py

Candidates: PipeDream's optimal DP; greedy fill to T_tot/P (forward and reverse) with α
relaxation; the printed Algorithm 1 applied to whole layers (no δ borrowing) with its T_idle slip.
Prints each candidate's mean speedups for 2..12 processors next to the paper's.
"""

from __future__ import annotations

import sys

import numpy as np

from archsim.array.config import ArrayConfig
from archsim.partition import build_profile, pipedream_partition
from archsim.report.paper_tables import LAYERPIPE_TABLE_IV
from archsim.workload import load_network


def greedy_fill(totals, processors, alpha=1.001, reverse=False):
    work = list(totals[::-1] if reverse else totals)
    target = sum(work) / processors
    while True:
        loads = [0.0]
        for x in work:
            if loads[-1] > 0 and loads[-1] + x > target:
                loads.append(0.0)
            loads[-1] += x
        if len(loads) <= processors:
            return max(loads)
        target *= alpha


def algorithm1_whole_layers(totals, processors, alpha=1.001):
    """Algorithm 1 lines 26–30 only, T_idle not reset on a new processor (as printed)."""
    target = sum(totals) / processors
    while True:
        idle, used, loads = target, 1, [0.0]
        for x in totals[::-1]:
            if x > idle:
                used += 1
                loads.append(0.0)
            loads[-1] += x
            idle -= x
        if used <= processors:
            return max(loads)
        target *= alpha


def main() -> int:
    network = load_network("vgg16").only("conv")
    profiles = [build_profile(network, ArrayConfig(a, a, "ws"), b, "paper")
                for a in (32, 64, 128, 256) for b in (16, 32, 64, 128, 256)]
    candidates = {
        "pipedream optimizer (optimal)": lambda p, n: pipedream_partition(p, n).max_stage_cost,
        "greedy fill, forward": lambda p, n: greedy_fill(p.total, n),
        "greedy fill, reverse": lambda p, n: greedy_fill(p.total, n, reverse=True),
        "Algorithm 1, whole layers, T_idle slip": lambda p, n: algorithm1_whole_layers(p.total, n),
    }
    processors = sorted(LAYERPIPE_TABLE_IV)
    print("processors".ljust(42) + " ".join(f"{n:>5}" for n in processors))
    print("paper PipeDream".ljust(42) + " ".join(f"{LAYERPIPE_TABLE_IV[n][1]:5.2f}" for n in processors))
    for name, plan in candidates.items():
        means = [np.mean([float(p.total.sum()) / plan(p, n) for p in profiles]) for n in processors]
        print(name.ljust(42) + " ".join(f"{m:5.2f}" for m in means))
    return 0


if __name__ == "__main__":
    sys.exit(main())
