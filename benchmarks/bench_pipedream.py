"""archsim's PipeDream optimizer vs the released one, in one run: ResNet-50's profile on 16 GPUs in
two levels (4 GPUs per server at 16 GB/s, 4 servers at 1.25 GB/s, activations counted), the
README's `hier` setting. Same answer (time per stage to 1e-6) and the speed ratio.

    python benchmarks/bench_pipedream.py --pipedream PIPEDREAM_CHECKOUT --python PYTHON_WITH_NUMPY_AND_GRAPHVIZ

The released optimizer is not shipped with archsim (see benchmarks/pipedream_reference.py).
Writes benchmarks/results/pipedream_speed.csv.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from pipedream_reference import run_optimizer

from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.pipedream import pipedream_plan
from archsim.partition.pipedream_kernel import warm_up
from archsim.partition.pipedream_tables import Level, PipeDreamOptions

CASES = [("resnet50", [4, 4], [1.6e10, 1.25e9]), ("resnet50", [16], [1e9]), ("vgg16", [4, 4], [1.6e10, 1.25e9]),
         ("gnmt", [4, 4], [1.6e10, 1.25e9])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipedream", type=Path, required=True)
    parser.add_argument("--python", default="python3")
    parser.add_argument("--profiles", type=Path, default=ROOT / "tests" / "data" / "pipedream" / "profiles")
    parser.add_argument("--repeats", type=int, default=3, help="archsim runs per case (median taken)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "pipedream_speed.csv")
    args = parser.parse_args()
    start = time.perf_counter()
    warm_up()
    compile_seconds = time.perf_counter() - start
    rows = []
    for model, ns, bws in CASES:
        path = args.profiles / f"{model}.txt"
        theirs, released_seconds = run_optimizer(args.pipedream, args.python, path, ns, bws,
                                                 ["--activation_compression_ratio", "1"])
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            plan = pipedream_plan(load_graph_txt(path), [Level(n, b) for n, b in zip(ns, bws)],
                                  PipeDreamOptions(activation_compression_ratio=1.0))
            times.append(time.perf_counter() - start)
        ours = statistics.median(times)
        same = abs(plan.time_per_stage - theirs["time_per_stage"]) <= 1e-6 * theirs["time_per_stage"]
        rows.append({"model": model, "machines": "x".join(map(str, ns)), "states": len(plan.states),
                     "released_seconds": round(released_seconds, 3), "archsim_seconds": round(ours, 4),
                     "speedup": round(released_seconds / ours, 1), "time_per_stage": plan.time_per_stage,
                     "released_time_per_stage": theirs["time_per_stage"], "same_answer": same,
                     "archsim_compile_seconds_once": round(compile_seconds, 2)})
        print(rows[-1], flush=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
