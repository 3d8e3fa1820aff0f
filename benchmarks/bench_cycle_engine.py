"""archsim's cycle-level engine vs the scalesim package in USER bandwidth mode, in one run.

    .venv/bin/python benchmarks/bench_cycle_engine.py [--layers N] [--cap-seconds S]

For each case (forward GEMMs of real layers at batch 1, plus small GEMMs on small SRAMs where the
array stalls hard; SCALE-Sim's default 64 KiB SRAMs and 10 words/cycle unless stated): SCALE-Sim's
cycles, stall cycles and DRAM reads/writes and its wall time (one in-process run of its layer
simulator in a child process, killed at ``--cap-seconds``, its time measured inside the child so
process start-up is not counted), the engine's figures and time per call (median of 5 timeit batches
of ≥ 0.2 s, after one untimed call; the first call, numba's cache load included, is reported too),
and the analytic ``gemm_cost`` time per call on the same GEMM. Ratios: SCALE-Sim / engine (target
≥ 100×) and engine / analytic (what memory-awareness costs).

Results go to benchmarks/results/cycle_engine_speed.csv (temp file, then os.replace). Exit status 1
if any figure differs from SCALE-Sim's on a case that ran.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
import timeit
from pathlib import Path
from queue import Empty

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the SCALE-Sim harness the tests use

from archsim.array.analytic import gemm_cost
from archsim.array.cycle import simulate_gemm
from archsim.lowering import lower_layer
from archsim.outputs import atomic_write_text
from archsim.workload import Layer, load_network

FIGURES = ("cycles", "stall_cycles", "ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")
SMALL_CONV = Layer(name="small_conv", kind="conv", ifmap_h=16, ifmap_w=16, filter_h=3, filter_w=3, channels=8,
                   filters=16, stride=1, padding=1)
# (label, GEMM source, array side, dataflow, SRAM KiB, words/cycle) in run order; a GEMM source is
# (network, layer) for a shipped layer's forward GEMM at batch 1, a Layer, or (M, K, N).
CASES: list[tuple[str, object, int, str, int, int]] = [
    ("gemm 64x40x48, 1 KiB, bw 4", (64, 40, 48), 8, "ws", 1, 4),
    ("gemm 64x40x48, 1 KiB, bw 4", (64, 40, 48), 8, "os", 1, 4),
    ("gemm 64x40x48, 1 KiB, bw 4", (64, 40, 48), 8, "is", 1, 4),
    ("small_conv_16x16x8", SMALL_CONV, 32, "ws", 64, 10),
    ("ffnn8/fc1", ("ffnn8", "fc1"), 32, "ws", 64, 10),
    ("ffnn8/fc1", ("ffnn8", "fc1"), 32, "os", 64, 10),
    ("layerpipe_sample/conv4", ("layerpipe_sample", "conv4"), 32, "ws", 64, 10),
    ("layerpipe_sample/conv4", ("layerpipe_sample", "conv4"), 32, "is", 64, 10),
    ("vgg16/conv1_1", ("vgg16", "conv1_1"), 32, "ws", 64, 10),
    ("resnet50/res5a_conv2", ("resnet50", "res5a_conv2"), 32, "os", 64, 10),
]


def gemm_of(source: object) -> tuple[int, int, int]:
    if isinstance(source, tuple) and len(source) == 3:
        return source  # type: ignore[return-value]
    layer = source if isinstance(source, Layer) else load_network(source[0]).layer(source[1])  # type: ignore[index]
    (gemm,) = lower_layer(layer, batch=1).op("F").gemms
    return gemm.m, gemm.k, gemm.n


def _scalesim_child(args: tuple, queue) -> None:
    from scalesim_reference import scalesim_gemm

    m, k, n, side, dataflow, kib, bandwidth = args
    start = time.perf_counter()
    reference = scalesim_gemm(m, k, n, side, side, dataflow, ifmap_kb=kib, filter_kb=kib, ofmap_kb=kib,
                              bandwidth=bandwidth)
    queue.put((time.perf_counter() - start, reference))


def run_scalesim(args: tuple, cap: float):
    """(seconds, Reference) of one SCALE-Sim run, or None when it passes ``cap`` seconds (killed)."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_scalesim_child, args=(args, queue))
    child.start()
    try:
        return queue.get(timeout=cap + 30)  # + start-up (imports) of the child
    except Empty:  # over the cap
        return None
    finally:
        if child.is_alive():
            child.kill()
        child.join()


def per_call_seconds(function, *args, **kwargs) -> float:
    """Median time of one call over 5 timeit batches (each batch ≥ 0.2 s, autoranged)."""
    timer = timeit.Timer(lambda: function(*args, **kwargs))
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=5, number=number))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=len(CASES), help=f"first N cases (of {len(CASES)})")
    parser.add_argument("--cap-seconds", type=float, default=300.0,
                        help="kill a SCALE-Sim run after this many seconds (default 300)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cycle_engine_speed.csv")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    simulate_gemm(4, 4, 4, 2, 2, "ws", sram_words=(1024,) * 3, bandwidth=(1, 1, 1))
    print(f"engine first call (numba cache load): {time.perf_counter() - start:.2f} s")
    rows, mismatches = [], 0
    for label, source, side, dataflow, kib, bandwidth in CASES[: args.layers]:
        m, k, n = gemm_of(source)
        memory = {"sram_words": (kib * 1024,) * 3, "bandwidth": (bandwidth,) * 3}
        row: dict[str, object] = {"case": label, "m": m, "k": k, "n": n, "array": f"{side}x{side}",
                                  "dataflow": dataflow, "sram_kb": kib, "bandwidth": bandwidth}
        start = time.perf_counter()
        ours = simulate_gemm(m, k, n, side, side, dataflow, **memory)
        row["engine_first_call_seconds"] = time.perf_counter() - start
        engine_s = per_call_seconds(simulate_gemm, m, k, n, side, side, dataflow, **memory)
        analytic_s = per_call_seconds(gemm_cost, m, k, n, side, side, dataflow)
        row.update({f"engine_{f}": getattr(ours, f) for f in FIGURES})
        row.update(engine_seconds=engine_s, analytic_seconds=analytic_s, engine_over_analytic=engine_s / analytic_s)
        print(f"{label} ({dataflow}): GEMM {m}x{k}x{n}, SCALE-Sim running (cap {args.cap_seconds:.0f} s) …",
              flush=True)
        result = run_scalesim((m, k, n, side, dataflow, kib, bandwidth), args.cap_seconds)
        if result is None:
            print(f"  SCALE-Sim passed the {args.cap_seconds:.0f} s cap: killed")
            rows.append({**row, "status": f"scalesim over {args.cap_seconds:.0f} s cap"})
            continue
        scalesim_s, reference = result
        theirs = (reference.compute_cycles, reference.stall_cycles, reference.ifmap_dram_reads,
                  reference.filter_dram_reads, reference.ofmap_dram_writes)
        identical = theirs == tuple(getattr(ours, f) for f in FIGURES)
        mismatches += not identical
        row.update({f"scalesim_{f}": v for f, v in zip(FIGURES, theirs)})
        row.update(status="ran", identical=identical, scalesim_seconds=scalesim_s,
                   scalesim_over_engine=scalesim_s / engine_s)
        rows.append(row)
        print(f"  identical={identical}  SCALE-Sim {scalesim_s:.2f} s  engine {engine_s * 1e3:.3f} ms  "
              f"ratio {scalesim_s / engine_s:.3g}x  engine/analytic {engine_s / analytic_s:.3g}x")

    frame = pd.DataFrame(rows)
    for column in (f"scalesim_{f}" for f in FIGURES):
        if column in frame:  # integers, blank where not run
            frame[column] = frame[column].astype("Int64")
    atomic_write_text(args.out, frame.to_csv(index=False))
    ran = frame[frame.status == "ran"]
    print()
    if not ran.empty:
        table = pd.DataFrame({
            "case": ran.case, "df": ran.dataflow, "GEMM MxKxN": [f"{m}x{k}x{n}" for m, k, n in zip(ran.m, ran.k, ran.n)],
            "cycles": ran.engine_cycles, "stalls": ran.engine_stall_cycles, "identical": ran.identical,
            "SCALE-Sim s": ran.scalesim_seconds.map(lambda s: f"{s:.2f}"),
            "engine ms": (ran.engine_seconds * 1e3).map(lambda s: f"{s:.3f}"),
            "x SCALE-Sim": ran.scalesim_over_engine.map(lambda r: f"{r:.3g}x"),
            "engine/analytic": ran.engine_over_analytic.map(lambda r: f"{r:.3g}x"),
        })
        print(table.to_string(index=False))
        print(f"\nall identical: {bool(ran.identical.all())}; minimum ratio {ran.scalesim_over_engine.min():.3g}x")
    for _, row in frame[frame.status != "ran"].iterrows():
        print(f"not compared: {row.case} ({row.dataflow}): {row.status}; engine {row.engine_seconds * 1e3:.1f} ms, "
              f"{row.engine_stall_cycles:,} stall cycles")
    print(f"wrote {args.out}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
