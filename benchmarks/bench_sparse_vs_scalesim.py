"""archsim's analytic sparse path vs the scalesim package on the same sparse layers, in one run.

    .venv/bin/python benchmarks/bench_sparse_vs_scalesim.py [--layers N]

For each layer (real layers at batch 1, SCALE-Sim geometry, with an N:M ratio and a mapping; CALC
bandwidth mode, so SCALE-Sim's cycles are its compute cycles): SCALE-Sim's wall time for one
in-process run of its layer simulator with ``SparsitySupport`` on (``tests/scalesim_reference.py``),
archsim's time per ``sparse_layer_cost`` call (median over timeit batches; it returns every figure
SCALE-Sim's compute, SRAM and sparse reports have), the ratio, and whether cycles, SRAM counts and
storage are identical. Results go to benchmarks/results/sparse_speed.csv (atomically). Exit status 1
if any figure differs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import timeit
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the SCALE-Sim harness the tests use

from archsim.array.sparsity import SparsityConfig, sparse_layer_cost  # noqa: E402
from archsim.outputs import atomic_write_text  # noqa: E402

# (label, (H, W, fh, fw, C, M, stride) in SCALE-Sim geometry, N:M, optimized, BlockSize, rows, cols, dataflow)
LAYERS = [
    ("alexnet/conv2 2:4 layer-wise", (31, 31, 5, 5, 96, 256, 1), (2, 4), False, 4, 32, 32, "ws"),
    ("resnet18/conv3_x 1:4 layer-wise os", (30, 30, 3, 3, 128, 128, 1), (1, 4), False, 4, 32, 32, "os"),
    ("vgg16/conv5 2:4 layer-wise is", (16, 16, 3, 3, 512, 512, 1), (2, 4), False, 4, 32, 32, "is"),
    ("alexnet/conv1 row-wise B=8 (SCALE-Sim's example)", (224, 224, 11, 11, 3, 96, 4), (1, 4), True, 8, 128, 128,
     "ws"),
    ("bert/ffn 1:4 layer-wise", (128, 1024, 1, 1024, 1, 1024, 1), (1, 4), False, 4, 32, 32, "ws"),
]


def per_call_seconds(function, *args) -> float:
    """Median time of one call over 5 timeit batches (each batch ≥ 0.2 s, autoranged)."""
    timer = timeit.Timer(lambda: function(*args))
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=5, number=number))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=len(LAYERS), help=f"first N layers (of {len(LAYERS)})")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sparse_speed.csv")
    args = parser.parse_args(argv)
    from scalesim_reference import scalesim_sparse_conv

    rows = []
    for label, layer, ratio, optimized, block, r, c, dataflow in LAYERS[: args.layers]:
        h, w, fh, fw, channels, filters, stride = layer
        t = math.ceil((h - fh + stride) / stride) * math.ceil((w - fw + stride) / stride)
        k = fh * fw * channels
        config = SparsityConfig("ellpack_block", optimized, block)
        call = (t, k, filters, r, c, dataflow, ratio, config)
        ours = sparse_layer_cost(*call)
        print(f"{label}: GEMM {t}x{k}x{filters}, SCALE-Sim running …", flush=True)
        start = time.perf_counter()
        reference = scalesim_sparse_conv(*layer, ratio, r, c, dataflow, "ellpack_block", optimized, block)
        scalesim_s = time.perf_counter() - start
        archsim_s = per_call_seconds(sparse_layer_cost, *call)
        identical = (ours.cycles, ours.ifmap_sram_reads, ours.filter_sram_reads, ours.ofmap_sram_writes,
                     ours.original_storage, ours.new_storage, ours.metadata_storage) == (
            reference.compute_cycles, reference.ifmap_sram_reads, reference.filter_sram_reads,
            reference.ofmap_sram_writes, reference.original_storage, reference.new_storage,
            reference.metadata_storage)
        rows.append({"layer": label, "t": t, "k": k, "n": filters, "ratio": f"{ratio[0]}:{ratio[1]}",
                     "optimized_mapping": optimized, "array": f"{r}x{c}", "dataflow": dataflow,
                     "cycles": ours.cycles, "identical": identical, "scalesim_seconds": scalesim_s,
                     "archsim_seconds": archsim_s, "speedup": scalesim_s / archsim_s})
    frame = pd.DataFrame(rows)
    atomic_write_text(args.out, frame.to_csv(index=False))
    table = frame.assign(**{"SCALE-Sim s": frame.scalesim_seconds.map(lambda s: f"{s:.2f}"),
                            "archsim µs": (frame.archsim_seconds * 1e6).map(lambda s: f"{s:.1f}"),
                            "ratio": frame.speedup.map(lambda x: f"{x:.3g}x")})
    print(table[["layer", "t", "k", "n", "cycles", "identical", "SCALE-Sim s", "archsim µs", "ratio"]]
          .to_string(index=False))
    print(f"\nall identical: {bool(frame.identical.all())}; minimum ratio {frame.speedup.min():.3g}x")
    print(f"wrote {args.out}")
    return 0 if bool(frame.identical.all()) else 1


if __name__ == "__main__":
    sys.exit(main())
