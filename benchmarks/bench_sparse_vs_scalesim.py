"""archsim's analytic sparse path vs the scalesim package on the same sparse layers, in one run.

    .venv/bin/python benchmarks/bench_sparse_vs_scalesim.py [--layers N] [--memory]

For each layer (real layers at batch 1, SCALE-Sim geometry, with an N:M ratio and a mapping; CALC
bandwidth mode, so SCALE-Sim's cycles are its compute cycles): SCALE-Sim's wall time for one
in-process run of its layer simulator with ``SparsitySupport`` on (``tests/scalesim_reference.py``),
archsim's time per ``sparse_layer_cost`` call (median over timeit batches; it returns every figure
SCALE-Sim's compute, SRAM and sparse reports have), the ratio, and whether cycles, SRAM counts and
storage are identical. Results go to benchmarks/results/sparse_speed.csv (atomically). Exit status 1
if any figure differs.

``--memory`` times USER bandwidth mode instead (results/sparse_memory_speed.csv): layer-wise sparse
GEMMs and conv layers (overlapping windows: repeated ifmap words) with small SRAMs (archsim:
``sparse_layer_cost`` + the cycle engine on the condensed GEMM, ``memory_columns``, given a conv's
windows) and SCALE-Sim's own custom-layout example (tpuv5e_downscale with a vit_s GEMM and
each vit_s_downscale layout row; archsim: ``simulate_gemm`` with the layout), each checked identical
in Total and Stall Cycles and DRAM counts. archsim's time there is one call (median of 3), the engine
already compiled.
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the SCALE-Sim harness the tests use

from archsim.array.sparsity import SparsityConfig, sparse_layer_cost
from archsim.outputs import atomic_write_text

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


# USER mode: (label, (T, K, N), N:M, rows, cols, dataflow, SRAM KiB, ofmap Bandwidth, read bandwidth)
MEMORY_LAYERS = [
    ("bert/ffn slice 2:4 ws", (128, 1024, 256), (2, 4), 32, 32, "ws", 16, 16, 32),
    ("resnet18/fc 1:4 os", (64, 512, 1000), (1, 4), 32, 32, "os", 16, 16, 32),
    ("gemm 2:4 is", (256, 384, 192), (2, 4), 16, 16, "is", 8, 8, 16),
]

MEMORY_CONVS = [  # label, SCALE-Sim conv row (H, W, fh, fw, C, filters, stride), ratio, rows, cols, dataflow, KiB, bw, read
    ("conv 3x3/1 2:4 ws", (30, 30, 3, 3, 16, 32, 1), (2, 4), 16, 16, "ws", 4, 8, 16),
    ("conv 5x5/2 1:4 is", (31, 31, 5, 5, 8, 24, 2), (1, 4), 16, 16, "is", 4, 8, 16),
]


def median_seconds(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sparse_memory(call: tuple, array, windows=None) -> dict:
    """archsim's USER-mode figures of one sparse layer: the analytic cost, then the engine's stalls."""
    from archsim.array.sparse_network import memory_columns

    cost = sparse_layer_cost(*call)
    return memory_columns(call[0], cost.filter_rows, call[2], 1, array, windows)


def conv_gemm(layer: tuple) -> tuple[int, int]:
    """(T, K) of a SCALE-Sim conv row (H, W, fh, fw, C, filters, stride): output pixels (SCALE-Sim
    geometry: no padding) and the reduction fh·fw·C; the GEMM's N is the filters."""
    h, w, fh, fw, channels, _, stride = layer
    return math.ceil((h - fh + stride) / stride) * math.ceil((w - fw + stride) / stride), fh * fw * channels


def user_mode_row(label: str, gemm: tuple[int, int, int], archsim_layer, reference) -> dict:
    """One USER-mode layer's row: archsim's figures (``archsim_layer()``, first called outside the timing to
    compile the engine, then timed by :func:`median_seconds`) against SCALE-Sim's (``reference()``, timed
    once), identical or not in Total and Stall Cycles and DRAM counts."""
    t, k, n = gemm
    ours_figures = archsim_layer()  # compiles the engine once, outside the timing
    print(f"{label}: GEMM {t}x{k}x{n} USER mode, SCALE-Sim running …", flush=True)
    start = time.perf_counter()
    scalesim = reference()
    scalesim_s = time.perf_counter() - start
    identical = (ours_figures["F_total_cycles"], ours_figures["F_stall_cycles"], ours_figures["ifmap_dram_reads"],
                 ours_figures["filter_dram_reads"], ours_figures["ofmap_dram_writes"]) == (
        scalesim.compute_cycles, scalesim.stall_cycles, *scalesim.memory[1:])
    return {"layer": label, "t": t, "k": k, "n": n, "cycles": ours_figures["F_total_cycles"],
            "identical": identical, "scalesim_seconds": scalesim_s, "archsim_seconds": median_seconds(archsim_layer)}


def memory_rows() -> list[dict]:
    """USER-mode sparse layers and SCALE-Sim's layout example, both sides timed (see the docstring)."""
    from scalesim_layout_reference import gemm_csv, layout_cfg, layout_csv, scalesim_files
    from scalesim_reference import scalesim_sparse_conv
    from test_scalesim_banks import EXAMPLE_ROWS, ours

    from archsim.array.config import ArrayConfig

    rows = []
    for label, (t, k, n), ratio, r, c, dataflow, kb, bandwidth, read in MEMORY_LAYERS:
        array = ArrayConfig(r, c, dataflow, kb, kb, kb, (bandwidth,), True, (read, read))
        config = SparsityConfig("csr", False, 4)

        archsim_layer = functools.partial(sparse_memory, (t, k, n, r, c, dataflow, ratio, config), array)
        reference = functools.partial(scalesim_sparse_conv, t, k, 1, k, 1, n, 1, ratio, r, c, dataflow, "csr", False, 4,
                                      user=(kb, bandwidth, read))
        rows.append(user_mode_row(label, (t, k, n), archsim_layer, reference))
    from archsim.array.sparse_network import kept_windows
    from archsim.workload import Layer

    for label, layer, ratio, r, c, dataflow, kb, bandwidth, read in MEMORY_CONVS:
        h, w, fh, fw, channels, filters, stride = layer
        t, k = conv_gemm(layer)
        array = ArrayConfig(r, c, dataflow, kb, kb, kb, (bandwidth,), True, (read, read))
        windows = kept_windows(Layer(name="l", kind="conv", ifmap_h=h, ifmap_w=w, filter_h=fh, filter_w=fw,
                                     channels=channels, filters=filters, stride=stride, geometry="scalesim"),
                               t, k, ratio)
        archsim_layer = functools.partial(sparse_memory, (t, k, filters, r, c, dataflow, ratio,
                                                          SparsityConfig("csr", False, 4)), array, windows)
        reference = functools.partial(scalesim_sparse_conv, *layer, ratio, r, c, dataflow, "csr", False, 4,
                                      user=(kb, bandwidth, read))
        rows.append(user_mode_row(label, (t, k, filters), archsim_layer, reference))
    with tempfile.TemporaryDirectory(prefix="archsim-bench-") as folder:
        cfg, topology, layout = (Path(folder) / name for name in ("example.cfg", "gemm.csv", "layout.csv"))
        cfg.write_text(layout_cfg(128, 128, "ws", ifmap=(True, 1024, 32, 1), filter=(True, 1024, 32, 1),
                                  kb=(4096, 4096, 8192), bandwidth=60))
        topology.write_text(gemm_csv(("L0", 196, 192, 384)))
        for name, row in sorted(EXAMPLE_ROWS.items()):
            layout.write_text(layout_csv(row))
            mine = ours(cfg, layout, 196, 192, 384)
            print(f"layout example {name}: SCALE-Sim running …", flush=True)
            start = time.perf_counter()
            (reference,) = scalesim_files(cfg, topology, layout)
            scalesim_s = time.perf_counter() - start
            rows.append({"layer": f"layout example vit_s L0 {name}", "t": 196, "k": 384, "n": 192,
                         "cycles": mine["cycles"], "identical": mine == reference, "scalesim_seconds": scalesim_s,
                         "archsim_seconds": median_seconds(lambda: ours(cfg, layout, 196, 192, 384))})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=len(LAYERS), help=f"first N layers (of {len(LAYERS)})")
    parser.add_argument("--memory", action="store_true", help="USER mode: stalls and custom layouts instead")
    parser.add_argument("--out", type=Path, default=None,
                        help="default results/sparse_speed.csv (results/sparse_memory_speed.csv with --memory)")
    args = parser.parse_args(argv)
    results = ROOT / "benchmarks" / "results"
    if args.memory:
        frame = pd.DataFrame(memory_rows())
        frame["speedup"] = frame.scalesim_seconds / frame.archsim_seconds
        return report(frame, args.out or results / "sparse_memory_speed.csv")
    from scalesim_reference import scalesim_sparse_conv

    rows = []
    for label, layer, ratio, optimized, block, r, c, dataflow in LAYERS[: args.layers]:
        filters = layer[5]
        t, k = conv_gemm(layer)
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
    return report(pd.DataFrame(rows), args.out or results / "sparse_speed.csv")


def report(frame: pd.DataFrame, out: Path) -> int:
    """Write the frame, print its table and the smallest ratio; 1 when a figure differs."""
    atomic_write_text(out, frame.to_csv(index=False))
    table = frame.assign(**{"SCALE-Sim s": frame.scalesim_seconds.map(lambda s: f"{s:.2f}"),
                            "archsim µs": (frame.archsim_seconds * 1e6).map(lambda s: f"{s:.1f}"),
                            "ratio": frame.speedup.map(lambda x: f"{x:.3g}x")})
    print(table[["layer", "t", "k", "n", "cycles", "identical", "SCALE-Sim s", "archsim µs", "ratio"]]
          .to_string(index=False))
    print(f"\nall identical: {bool(frame.identical.all())}; minimum ratio {frame.speedup.min():.3g}x")
    print(f"wrote {out}")
    return 0 if bool(frame.identical.all()) else 1


if __name__ == "__main__":
    sys.exit(main())
