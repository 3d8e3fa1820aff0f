"""archsim's analytic cost vs the scalesim package on the same layers, in one run.

    .venv/bin/python benchmarks/bench_vs_scalesim.py [--layers N] [--cap-seconds S]

For each layer (real layers of the shipped networks, forward GEMM at batch 1 — SCALE-Sim has no
batch — on a 32×32 weight-stationary array): SCALE-Sim's compute cycles and wall time (one in-process
run of its layer simulator, padding folded into the input), archsim's cycles and time per call
(median over timeit batches of ``gemm_cost``, which returns every number SCALE-Sim's compute report
has; and of ``gemm_cycles``, cycles only), the speed ratios, and whether cycles and SRAM counts are
identical. Layers whose estimated SCALE-Sim time exceeds the cap are skipped, not started: the
estimate is archsim's cycle count times the slowest seconds-per-cycle SCALE-Sim has shown so far in
this run on layers of ≥ 10,000 cycles (SCALE-Sim steps its memory model once per cycle), seeded
with a conservative guess.
Then one vectorized ``gemm_cost`` call over many random GEMMs gives the per-GEMM time.

Results go to benchmarks/results/scalesim_speed.csv (temp file, then os.replace). Exit status 1 if
any cycle count differs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the SCALE-Sim harness the tests use

from archsim.array.analytic import gemm_cost, gemm_cycles
from archsim.lowering import lower_layer
from archsim.outputs import atomic_write_text
from archsim.workload import Layer, load_network

# (label, network, layer) in run order; --layers N takes the first N. A None network is a layer
# defined here. VGG16 conv1_1 (224×224×3, 3×3, pad 1) reaches SCALE-Sim as a 226×226 input.
LAYERS: list[tuple[str, str | None, str | Layer]] = [
    ("vgg16/conv1_1", "vgg16", "conv1_1"),
    ("small_conv_16x16x8", None, Layer(name="small_conv", kind="conv", ifmap_h=16, ifmap_w=16, filter_h=3,
                                       filter_w=3, channels=8, filters=16, stride=1, padding=1)),
    ("layerpipe_sample/conv4", "layerpipe_sample", "conv4"),
    ("ffnn8/fc1", "ffnn8", "fc1"),
    ("resnet50/res5a_conv2", "resnet50", "res5a_conv2"),
    ("vgg16/conv1_2", "vgg16", "conv1_2"),  # ~1.8 M cycles: over the default cap, so skipped
]
SECONDS_PER_CYCLE_GUESS = 3e-4  # SCALE-Sim on a 2-core dev machine: 1.3e-4 … 2e-4 s per cycle
CALIBRATION_CYCLES = 10_000  # runs at least this long re-calibrate the estimate


def per_call_seconds(function, *args) -> float:
    """Median time of one call over 5 timeit batches (each batch ≥ 0.2 s, autoranged)."""
    timer = timeit.Timer(lambda: function(*args))
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=5, number=number))


def vectorized_seconds_per_gemm(count: int, rows: int, cols: int, dataflow: str) -> float:
    rng = np.random.default_rng(0)
    m, k, n = (rng.integers(1, 4096, count) for _ in range(3))
    timer = timeit.Timer(lambda: gemm_cost(m, k, n, rows, cols, dataflow))
    return min(timer.repeat(repeat=5, number=1)) / count


def resolve(network: str | None, layer: str | Layer) -> Layer:
    return layer if network is None else load_network(network).layer(layer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=len(LAYERS), help=f"first N layers (of {len(LAYERS)})")
    parser.add_argument("--cap-seconds", type=float, default=120.0,
                        help="skip a layer whose estimated SCALE-Sim time exceeds this (default 120)")
    parser.add_argument("--array", type=int, default=32, help="square array side (default 32)")
    parser.add_argument("--dataflow", default="ws", choices=["ws", "os", "is"])
    parser.add_argument("--vector-count", type=int, default=100_000, help="GEMMs in the vectorized call")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scalesim_speed.csv")
    args = parser.parse_args(argv)
    from scalesim_reference import scalesim_layer

    size, dataflow = args.array, args.dataflow
    per_gemm = vectorized_seconds_per_gemm(args.vector_count, size, size, dataflow)
    print(f"vectorized gemm_cost: {args.vector_count:,} GEMMs in one call, {per_gemm * 1e9:.0f} ns per GEMM")

    seconds_per_cycle, measured = SECONDS_PER_CYCLE_GUESS, []
    rows = []
    for label, network, name in LAYERS[: args.layers]:
        layer = resolve(network, name)
        (gemm,) = lower_layer(layer, batch=1).op("F").gemms
        shape = (gemm.m, gemm.k, gemm.n, size, size, dataflow)
        ours = gemm_cost(*shape)
        cycles = int(ours.scalar("cycles"))
        estimate = cycles * seconds_per_cycle
        row = {"layer": label, "m": gemm.m, "k": gemm.k, "n": gemm.n, "array": f"{size}x{size}",
               "dataflow": dataflow, "archsim_cycles": cycles, "scalesim_estimated_seconds": round(estimate, 1)}
        if estimate > args.cap_seconds:
            print(f"{label}: skipped, SCALE-Sim estimated {estimate:.0f} s > cap {args.cap_seconds:.0f} s")
            rows.append({**row, "status": "skipped (over cap)"})
            continue
        print(f"{label}: GEMM {gemm.m}x{gemm.k}x{gemm.n}, SCALE-Sim running (estimated {estimate:.0f} s) …",
              flush=True)
        start = time.perf_counter()
        reference = scalesim_layer(layer, size, size, dataflow)
        scalesim_s = time.perf_counter() - start
        if reference.compute_cycles >= CALIBRATION_CYCLES:  # small runs are mostly fixed start-up cost
            measured.append(scalesim_s / reference.compute_cycles)
            seconds_per_cycle = max(measured)
        archsim_s = per_call_seconds(gemm_cost, *shape)
        cycles_only_s = per_call_seconds(gemm_cycles, *shape)
        sram_same = (int(ours.scalar("ifmap_sram_reads")), int(ours.scalar("filter_sram_reads")),
                     int(ours.scalar("ofmap_sram_writes"))) == (reference.ifmap_sram_reads,
                                                                reference.filter_sram_reads,
                                                                reference.ofmap_sram_writes)
        rows.append({**row, "status": "ran", "scalesim_cycles": reference.compute_cycles,
                     "cycles_identical": reference.compute_cycles == cycles, "sram_counts_identical": sram_same,
                     "scalesim_seconds": scalesim_s, "archsim_gemm_cost_seconds": archsim_s,
                     "archsim_gemm_cycles_seconds": cycles_only_s, "archsim_vectorized_seconds_per_gemm": per_gemm,
                     "speedup_gemm_cost": scalesim_s / archsim_s, "speedup_gemm_cycles": scalesim_s / cycles_only_s,
                     "speedup_vectorized": scalesim_s / per_gemm})

    frame = pd.DataFrame(rows)
    if "scalesim_cycles" in frame:  # integers, blank where skipped (not 100539.0)
        frame["scalesim_cycles"] = frame["scalesim_cycles"].astype("Int64")
    atomic_write_text(args.out, frame.to_csv(index=False))
    ran = frame[frame.status == "ran"] if not frame.empty else frame
    print()
    if not ran.empty:
        table = pd.DataFrame({
            "layer": ran.layer,
            "GEMM MxKxN": [f"{m}x{k}x{n}" for m, k, n in zip(ran.m, ran.k, ran.n)],
            "cycles": ran.archsim_cycles,
            "identical": ran.cycles_identical & ran.sram_counts_identical,
            "SCALE-Sim s": ran.scalesim_seconds.map(lambda s: f"{s:.2f}"),
            "gemm_cost µs": (ran.archsim_gemm_cost_seconds * 1e6).map(lambda s: f"{s:.1f}"),
            "x gemm_cost": ran.speedup_gemm_cost.map(lambda r: f"{r:.3g}x"),
            "gemm_cycles µs": (ran.archsim_gemm_cycles_seconds * 1e6).map(lambda s: f"{s:.2f}"),
            "x gemm_cycles": ran.speedup_gemm_cycles.map(lambda r: f"{r:.3g}x"),
            "x vectorized": ran.speedup_vectorized.map(lambda r: f"{r:.3g}x"),
        })
        print(table.to_string(index=False))
        print(f"\nvectorized: {per_gemm * 1e9:.0f} ns per GEMM; "
              f"all cycles identical: {bool(ran.cycles_identical.all())}; "
              f"minimum ratio per gemm_cost call {ran.speedup_gemm_cost.min():.3g}x")
    skipped = frame[frame.status != "ran"] if not frame.empty else frame
    for _, row in skipped.iterrows():
        print(f"skipped: {row.layer} ({row.archsim_cycles:,} cycles, SCALE-Sim estimated "
              f"{row.scalesim_estimated_seconds:.0f} s > cap {args.cap_seconds:.0f} s)")
    print(f"wrote {args.out}")
    return 0 if ran.empty or bool(ran.cycles_identical.all()) else 1


if __name__ == "__main__":
    sys.exit(main())
