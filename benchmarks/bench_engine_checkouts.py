"""The cycle engine's CPU time per call on fixed GEMMs, this checkout against another, alternating.

    .venv/bin/python benchmarks/bench_engine_checkouts.py --compare-with CHECKOUT [--rounds 3]

CHECKOUT is a source tree of archsim (e.g. ``git archive <commit> | tar -x -C DIR``). Each round runs
this checkout and then the other in a fresh child process (``PYTHONPATH`` picks the tree); each child
calls ``simulate_gemm`` once untimed (numba's cache load), then reports the median CPU time
(``time.process_time``, less disturbed by other jobs than wall time) of 9 calls per GEMM. Results go
to benchmarks/results/engine_checkouts.csv (atomically). For a change to the engine, the figure to read
is each GEMM's range over the rounds, this checkout against the other.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = [  # (M, K, N, rows, cols, dataflow, SRAM KiB, ofmap words/cycle, ifmap/filter words/cycle)
    (128, 512, 256, 32, 32, "ws", 16, 8, 32),
    (64, 128, 1000, 32, 32, "os", 16, 8, 32),
    (256, 192, 192, 16, 16, "is", 8, 8, 16),
    (784, 1152, 128, 32, 32, "ws", 64, 10, 10),
]

CHILD = """
import json, statistics, sys, time
from archsim.array.cycle import simulate_gemm
out = []
for m, k, n, r, c, df, kb, bw, read in json.loads(sys.argv[1]):
    def call():
        return simulate_gemm(m, k, n, r, c, df, sram_words=(kb * 1024,) * 3, bandwidth=(read, read, bw))
    call()
    times = []
    for _ in range(9):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    out.append(statistics.median(times))
print(json.dumps(out))
"""


def run(tree: Path) -> list[float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES)], env=env, cwd=tree, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare-with", type=Path, required=True, help="another archsim source tree")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import pandas as pd

    from archsim.outputs import atomic_write_text

    rows = []
    for round_ in range(args.rounds):
        for label, tree in (("this", ROOT), ("other", args.compare_with.resolve())):
            for case, seconds in zip(CASES, run(tree)):
                rows.append({"round": round_, "checkout": label, "gemm": "{}x{}x{} {}".format(*case[:3], case[5]),
                             "cpu_ms": seconds * 1e3})
    frame = pd.DataFrame(rows)
    atomic_write_text(ROOT / "benchmarks" / "results" / "engine_checkouts.csv", frame.to_csv(index=False))
    print(frame.pivot_table(index="gemm", columns="checkout", values="cpu_ms", aggfunc=["min", "max"]).round(1)
          .to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
