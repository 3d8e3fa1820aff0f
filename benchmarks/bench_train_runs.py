"""``archsim train MODEL --runs`` on vTrain's 1,008 shown single-node runs: one process for all of them,
against one process per run as before (sampled).

    .venv/bin/python benchmarks/bench_train_runs.py [--sample 5] [--p2p overlapped|blocking|megatron]

Prints the wall time of the one process (start-up included), the mean wall time of ``--sample`` single
``archsim train`` processes on runs of the same file, the ratio of the 1,008 single processes
(extrapolated) to the one, the load average, and the MAPE the one process reports (it must equal
benchmarks/bench_vtrain_e2e.py's "all_mape": the same model on the same runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from archsim.choices.training import P2P_MODES

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv"
MODEL = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
CLUSTER = ROOT / "configs" / "clusters" / "a100_node.toml"


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "archsim", *argv], check=True, capture_output=True, text=True,
                          cwd=ROOT)
    return time.perf_counter() - start, done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=5, help="single-run processes timed for the comparison")
    parser.add_argument("--p2p", default=None, choices=P2P_MODES,
                        help="every run's pipeline sends, train's --p2p (default: train's own)")
    args = parser.parse_args(argv)
    sends = ["--p2p", args.p2p] if args.p2p else []
    whole, out = timed(["train", str(MODEL), "--cluster", str(CLUSTER), "--runs", str(RUNS), "--attention", "standard",
                        *sends, "--format", "json"])
    meta = json.loads(out)["meta"]
    lines = RUNS.read_text().splitlines()[1:]
    singles = []
    for text in lines[:: max(1, len(lines) // args.sample)][: args.sample]:
        _, batch, micro, hidden, _, layers, _, tp, dp, pp, _ = text.split(",")
        model = ROOT / "configs" / "transformers" / f"gpt_{hidden}h_{layers}l.json"
        if not model.exists():
            model = MODEL  # the cost of a process is what is timed here, not this run's shape
        seconds, _ = timed(["train", str(model), "--cluster", str(CLUSTER), "--tp", tp, "--pp", pp, "--dp", dp,
                            "--micro-batch", micro, "--global-batch", batch, "--attention", "standard", *sends])
        singles.append(seconds)
    single = sum(singles) / len(singles)
    print(f"--runs --p2p {meta['p2p']}, {meta['runs']} runs in one process: {whole:.2f} s wall "
          f"(MAPE {meta['mape']:.4f})")
    print(f"one process per run: {single:.2f} s each (mean of {len(singles)}), {single * meta['runs']:.0f} s "
          f"for all {meta['runs']}: {single * meta['runs'] / whole:.0f}× the one process")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
