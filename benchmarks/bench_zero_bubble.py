"""Wall time of ZB-2p (heuristic + simulation) on the zero-bubble paper's largest setting.

    .venv/bin/python benchmarks/bench_zero_bubble.py [--out CSV]

Times the automatic scheduler and the event simulation separately for p = 32 stages and
m = 64, 128, 256 micro-batches (the 28.3B model's profile, Appendix D), and reports the scaling
exponent of each in m (time ∝ m^k, fitted over the three points in this one run) next to the bubble
rate, which must match Table 5 (0.0018 for m = 256). Target: < 2 s at m = 256 on an idle core.
Writes `benchmarks/results/zero_bubble_speed.csv`.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import run_order
from archsim.policies.zb_auto import zb_auto_order

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "zero_bubble_speed.csv"))
    args = parser.parse_args(argv)
    p, h, a = 32, 6144, 48
    profile = StageProfile.uniform(p, 10.402, 10.248, 7.698, 0.460, activation=34 * h + 5 * a * 1024,
                                   weight_memory=32 * h)
    rows = []
    for m in (64, 128, 256):
        start = time.perf_counter()
        order = zb_auto_order(profile.forward, profile.backward_input, profile.backward_weight, 0.460, m, 2,
                              profile.activation, profile.weight_memory)
        middle = time.perf_counter()
        run = run_order(order, profile)
        end = time.perf_counter()
        rows.append({"stages": p, "microbatches": m, "heuristic_s": middle - start, "simulation_s": end - middle,
                     "total_s": end - start, "bubble_rate": run.bubble_rate()})
        print(rows[-1])
    frame = pd.DataFrame(rows)
    for column in ("heuristic_s", "simulation_s", "total_s"):
        k = math.log(frame[column].iloc[-1] / frame[column].iloc[0]) / math.log(4)
        print(f"{column}: time ∝ m^{k:.2f}")
        frame[f"{column}_exponent"] = k
    atomic_write_text(args.out, frame.to_csv(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
