"""The two 512-wide-shard cells of the measured A100 runs (TP 2 · micro-batch 4 · hidden 1,024 and
TP 4 · micro-batch 2 · hidden 2,048), beside every other single-server cell: what they cost per layer
and micro-batch measured, and what archsim's host-issue floor and GPU work say they should cost.

    python benchmarks/bench_shard_cells.py

Per (hidden, TP, micro-batch) cell, least squares over its PP 1 runs of time = m·L·x + m·y + c
(m micro-batches per rank, L layers) give x, the measured milliseconds per layer and micro-batch
(forward, full recompute, backward). Beside it: archsim's op count per layer and micro-batch (ops
and TP collectives the host issues: forward, recompute, backward), the host floor (count × the
fitted host time per op), the GPU time (each kernel's work plus its gap, and the collectives), the
GEMMs' tile/wave efficiency (their FLOPs at the fitted tensor rate over their tile-quantized time:
1 means no wave tail), whether Megatron's fused softmax runs, and the host time per op the measured
x implies (x / count). Then the pairs of cells with the same GEMM FLOPs and attention work per GPU.

docs/accuracy.md ("The worst 5%") quotes what this prints.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices.kernel_ops import gemm_path
from archsim.devices.kernels import compute_seconds
from archsim.lowering import Gemm
from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.kernel_bytes import fused_softmax
from archsim.training.layer_ops import block_work
from archsim.training.measured import read_measured

SHARD_CELLS = ((1024, 2, 4), (2048, 4, 2))  # (hidden, TP, micro-batch)


def measured_per_layer(runs) -> dict[tuple[int, int, int], float]:
    """x (ms per layer and micro-batch) of each (hidden, TP, micro-batch) cell with PP 1 runs of at
    least two layer counts."""
    cells: dict[tuple[int, int, int], list] = defaultdict(list)
    for r in runs:
        if r.pp == 1:
            cells[(r.hidden, r.tp, r.micro_batch)].append(r)
    out = {}
    for key, rows in cells.items():
        if len({r.layers for r in rows}) < 2:
            continue
        m = np.array([r.global_batch / (r.dp * r.micro_batch) for r in rows])
        a = np.column_stack([m * [r.layers for r in rows], m, np.ones(len(rows))])
        x = np.linalg.lstsq(a, np.array([r.milliseconds for r in rows]), rcond=None)[0]
        out[key] = float(x[0])
    return out


def archsim_layer(run, cluster) -> dict[str, float]:
    """archsim's per layer and micro-batch figures for ``run``'s cell (ms, counts, fractions)."""
    c, par = run.config(), run.parallelism()
    machine = cluster.machine(par)
    layer = model_pieces(c, par, machine)["layer"]
    work = block_work(c, par.micro_batch, par.tp)
    forward = len(work.forward) + len(work.forward_collectives)
    ops = 2 * forward + len(work.backward) + len(work.backward_collectives)  # full recompute
    gpu = sum(t for _, _, t in layer.ops) + sum(t for _, kind, t in layer.ops if kind == "F")
    total = (layer.forward + layer.backward_input + layer.backward_weight + layer.recompute
             + layer.tp_forward + layer.tp_backward)
    gemms = [g for op in work.forward + work.backward for g in op.gemms if isinstance(g, Gemm)]
    flops = sum(2.0 * g.m * g.k * g.n * g.count for g in gemms)
    rate = machine.gpu.peak("fp16") * machine.efficiency.gemm
    path = gemm_path(machine.gpu, "fp16", machine.efficiency)
    tiled = sum(float(compute_seconds(g.count, g.m, g.n, g.k, path, machine.efficiency, 2)) for g in gemms)
    heads = c.heads // par.tp * par.micro_batch
    return {"ops": ops, "host_ms": ops * machine.efficiency.host_s * 1e3, "gpu_ms": gpu * 1e3,
            "predicted_ms": total * 1e3, "wave_efficiency": flops / rate / tiled,
            "fused_softmax": fused_softmax(c.seq, heads), "attention_batches": heads,
            "gemm_gflop": flops / 1e9}


def main() -> int:
    runs = read_measured(ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv")
    cluster = single_node()
    measured = measured_per_layer(runs)
    sample = {(r.hidden, r.tp, r.micro_batch): r for r in runs if r.pp == 1}
    rows = {key: archsim_layer(sample[key], cluster) for key in sorted(measured)}
    print("hidden TP mb | measured x | archsim: predicted, host floor (ops), GPU | waves | fused softmax "
          "(batches) | GEMM GFLOP | µs/op implied")
    for key, a in rows.items():
        mark = "  <- 512-wide shard cell" if key in SHARD_CELLS else ""
        print(f"{key[0]:5d} {key[1]} {key[2]} | {measured[key]:5.2f} ms | {a['predicted_ms']:5.2f}, "
              f"{a['host_ms']:5.2f} ({a['ops']}), {a['gpu_ms']:5.2f} | {a['wave_efficiency']:.3f} | "
              f"{a['fused_softmax']!s:5s} ({a['attention_batches']:3d}) | {a['gemm_gflop']:6.1f} | "
              f"{measured[key] / a['ops'] * 1e3:5.1f}{mark}")
    print("cells with the same GEMM FLOPs and attention work per GPU as a 512-wide shard cell:")
    for key in SHARD_CELLS:
        a = rows[key]
        for other, b in rows.items():
            same = (other != key and abs(b["gemm_gflop"] / a["gemm_gflop"] - 1) < 1e-9
                    and other[2] * 16 // other[1] * other[0] == key[2] * 16 // key[1] * key[0])
            if same:
                print(f"  {key}: measured {measured[key]:.2f} ms, archsim GPU {a['gpu_ms']:.2f}; {other}: "
                      f"measured {measured[other]:.2f} ms, archsim GPU {b['gpu_ms']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
