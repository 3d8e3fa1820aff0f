"""SCALE-Sim's DRAM words counted without simulating (``archsim.array.dram_traffic``) against the cycle engine
that steps every cycle (``archsim.array.cycle``), on the same GEMMs in one run: both times, their ratio, and
the counts compared.

    .venv/bin/python benchmarks/bench_dram_traffic.py [--cases N] [--repeats 5]

For each case (SCALE-Sim's memory model, 10 words/cycle for every operand unless stated; the three SRAMs
the same size, in words): the engine's CPU seconds per ``simulate_gemm`` call and the count's per
``gemm_dram_traffic`` call (median of ``--repeats`` timeit batches of ≥ 0.2 s each, after one untimed call;
numba's cache load, once per process, is left out and printed), the engine / count ratio, and the ifmap and
filter DRAM reads (equal, or the count is wrong) and ofmap writes (the demand, within the count's proven
slack of the engine's). The cases: VGG16 conv1_1's weight gradient at batch 1 (27 × 50,176 × 64, archsim's
order) on 32 × 32 at 64 KiB, where SCALE-Sim re-reads δ from DRAM thousands of times; a 1024³ GEMM on
32 × 32 at 64 KiB in the three dataflows; the same on a 128 × 128 array with a TPU-like 1365 KiB buffer of
2-byte words (698,880 words) and 571 words/cycle.

Results go to benchmarks/results/dram_traffic_speed.csv (temp file, then os.replace). Exit status 1 if
any read differs or an ofmap count is outside its slack. Timings are not tests.
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

from archsim.array.cycle import simulate_gemm
from archsim.array.dram_traffic import gemm_dram_traffic
from archsim.lowering import lower_layer
from archsim.outputs import atomic_write_text
from archsim.workload import load_network

ROOT = Path(__file__).resolve().parents[1]
# (label, GEMM or (network, layer) for the layer's weight gradient G at batch 1, array side, dataflow,
# SRAM words per operand, DRAM words/cycle per operand) in run order
CASES: list[tuple[str, object, int, str, int, int]] = [
    ("vgg16/conv1_1 G", ("vgg16", "conv1_1"), 32, "ws", 64 * 1024, 10),
    ("gemm 1024^3", (1024, 1024, 1024), 32, "ws", 64 * 1024, 10),
    ("gemm 1024^3", (1024, 1024, 1024), 32, "os", 64 * 1024, 10),
    ("gemm 1024^3", (1024, 1024, 1024), 32, "is", 64 * 1024, 10),
    ("gemm 1024^3, TPU-like buffer", (1024, 1024, 1024), 128, "ws", 1365 * 1024 // 2, 571),
]


def gemm_of(source: object) -> tuple[int, int, int]:
    """An (M, K, N) as given, or a network layer's weight-gradient GEMM at batch 1."""
    if isinstance(source, tuple) and len(source) == 3 and all(isinstance(x, int) for x in source):
        return source  # type: ignore[return-value]
    network, layer = source  # type: ignore[misc]
    (gemm,) = lower_layer(load_network(network).layer(layer), batch=1).required_op("G").gemms
    return gemm.m, gemm.k, gemm.n


def per_call(function: Callable[[], object], repeats: int) -> float:
    """Median CPU seconds of one call over ``repeats`` timeit batches (each ≥ 0.2 s), after one untimed call."""
    function()
    timer = timeit.Timer(function, timer=time.process_time)
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=repeats, number=number))


def run_case(m: int, k: int, n: int, side: int, dataflow: str, words: int, bandwidth: int,
             repeats: int) -> dict[str, object]:
    """One case's counts from both and the seconds per call of each."""
    memory = {"sram_words": (words,) * 3, "bandwidth": (bandwidth,) * 3}
    engine = simulate_gemm(m, k, n, side, side, dataflow, **memory)
    count = gemm_dram_traffic(m, k, n, side, side, dataflow, **memory)
    reads_equal = (count.ifmap_reads, count.filter_reads) == (engine.ifmap_dram_reads, engine.filter_dram_reads)
    over = engine.ofmap_dram_writes - count.ofmap_writes
    engine_s = per_call(lambda: simulate_gemm(m, k, n, side, side, dataflow, **memory), repeats)
    count_s = per_call(lambda: gemm_dram_traffic(m, k, n, side, side, dataflow, **memory), repeats)
    return {"engine_ifmap_reads": engine.ifmap_dram_reads, "engine_filter_reads": engine.filter_dram_reads,
            "engine_ofmap_writes": engine.ofmap_dram_writes, "count_ifmap_reads": count.ifmap_reads,
            "count_filter_reads": count.filter_reads, "count_ofmap_writes": count.ofmap_writes,
            "ofmap_slack": count.ofmap_slack, "reads_equal": reads_equal, "ofmap_exact": over == 0,
            "ofmap_within_slack": 0 <= over <= count.ofmap_slack, "engine_seconds": engine_s,
            "count_seconds": count_s, "engine_over_count": engine_s / count_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=len(CASES), help=f"first N cases (of {len(CASES)})")
    parser.add_argument("--repeats", type=int, default=5, help="timeit batches per timing (default 5)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "dram_traffic_speed.csv")
    args = parser.parse_args(argv)

    start = time.process_time()
    simulate_gemm(4, 4, 4, 2, 2, "ws", sram_words=(1024,) * 3, bandwidth=(1, 1, 1))
    print(f"engine first call (numba cache load): {time.process_time() - start:.2f} CPU s")
    rows, wrong = [], 0
    for label, source, side, dataflow, words, bandwidth in CASES[: args.cases]:
        m, k, n = gemm_of(source)
        row: dict[str, object] = {"case": label, "m": m, "k": k, "n": n, "array": f"{side}x{side}",
                                  "dataflow": dataflow, "sram_words": words, "bandwidth": bandwidth}
        row.update(run_case(m, k, n, side, dataflow, words, bandwidth, args.repeats))
        wrong += not (row["reads_equal"] and row["ofmap_within_slack"])
        rows.append(row)
        print(f"{label} ({m}x{k}x{n}, {side}x{side} {dataflow}, {words:,} words, bw {bandwidth}): engine "
              f"{row['engine_seconds'] * 1e3:.1f} ms, count {row['count_seconds'] * 1e3:.3f} ms, ratio "
              f"{row['engine_over_count']:.3g}x; reads equal {row['reads_equal']}, ofmap "
              f"{'exact' if row['ofmap_exact'] else 'within slack' if row['ofmap_within_slack'] else 'OUT OF BOUND'}",
              flush=True)
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(args.out, out.getvalue())
    ratios = [float(row["engine_over_count"]) for row in rows]  # type: ignore[arg-type]
    print(f"\nengine / count: {min(ratios):.3g}–{max(ratios):.3g}x; "
          f"{'all reads equal, ofmap within slack' if not wrong else f'{wrong} case(s) WRONG'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
