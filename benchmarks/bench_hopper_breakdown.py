"""Where the Hopper check's iterations are mispredicted, op class by op class (nothing fitted).

For each one-GPU iteration measured on a Hopper GPU (benchmarks/gpu_train_measure.py) it splits
archsim's GPU time per micro-batch into GEMM, memory-bound and launch seconds
(archsim.training.op_classes) at the constants training uses there (the A100's fit, scaled by the
datasheet peaks), sets archsim's GEMM seconds beside the same GEMMs timed by the GPU's efficiency
probe (benchmarks/gpu_efficiency_probe.py: every GEMM shape of these runs), and prints what share
of the iteration's missing time the GEMMs alone account for. It also prints the fraction of HBM
bandwidth each probe memory kernel reached, beside the A100 fit's ``memory``. The probe and the
iterations are a check: nothing here is fitted on them.

    python benchmarks/bench_hopper_breakdown.py > benchmarks/results/hopper_breakdown.md
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices.device import catalog_device
from archsim.devices.kernel_ops import device_gemm_seconds
from archsim.training import fitted
from archsim.training.calibrate import read_probe
from archsim.training.layer_ops import block_work, embedding_work, head_work
from archsim.training.op_classes import (
    achieved_fraction,
    class_seconds,
    match_probe_gemms,
    memory_at_fractions,
)

RESULTS = ROOT / "benchmarks" / "results"
# archsim's memory-bound ops (Megatron's list) → the probe kernel that does their work
KINDS = {"norm1": "layernorm", "norm2": "layernorm", "final_norm": "layernorm", "softmax": "softmax",
         "attn_dropout": "attn_dropout", "bias_gelu": "gelu", "residual1": "residual_add", "residual2": "residual_add"}
CHECKS = (("h100-80gb-sxm", "h100-80gb-hbm3"), ("h200-141gb", "h200"))


def micro_batch_ops(run) -> list:
    """Every op one micro-batch of ``run`` issues on its one GPU (the recomputed forward included)."""
    c, b = run.config(), run.micro_batch
    layer = block_work(c, b)
    ops = list(layer.forward) * (2 if run.recompute == "full" else 1) + list(layer.backward)
    ends = [w for piece in (embedding_work(c, b), head_work(c, b)) for w in (*piece.forward, *piece.backward)]
    return ops * c.layers + ends


def check(catalog: str, slug: str) -> None:
    from archsim.training.measured import read_measured

    device, eff = catalog_device(catalog), fitted.kernels(catalog)
    runs = read_measured(RESULTS / f"gpu_train_measured_{slug}.csv")
    _, probe = read_probe(RESULTS / f"gpu_efficiency_probe_{slug}.csv")
    fractions = achieved_fraction(probe, device.hbm_bytes_per_s)
    predicted = {}
    for line in (RESULTS / f"gpu_train_{slug}.csv").read_text().splitlines()[1:]:
        cells = line.split(",")
        predicted[(int(cells[0]), int(cells[1]), int(cells[4]), int(cells[5]), cells[6])] = float(cells[8])
    print(f"\n## {device.name} ({slug}); constants {eff}\n")
    print("| model | recompute | B | b | measured ms | predicted ms | GEMM ms (archsim / probe) | memory ms | launch ms "
          "| missing ms | GEMMs' share | memory ops' share |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    shares = []
    for run in runs:
        ops = micro_batch_ops(run)
        parts = class_seconds(ops, device, eff)
        gemms = match_probe_gemms(ops, probe, device, eff)
        n = run.global_batch // run.micro_batch
        key = (run.hidden, run.layers, run.global_batch, run.micro_batch, run.recompute)
        missing = run.milliseconds - predicted[key]
        gemm_gap = n * (gemms.measured - gemms.predicted) * 1e3
        at_probe, moved = memory_at_fractions(ops, fractions, KINDS, device.hbm_bytes_per_s)
        memory_gap = n * (at_probe - moved / (device.hbm_bytes_per_s * eff.memory)) * 1e3
        share = gemm_gap / missing if missing > 0 else float("nan")
        memory_share = memory_gap / missing if missing > 0 else float("nan")
        if missing > 0:
            shares.append((run.micro_batch, share, memory_share))
        print(f"| h{run.hidden} L{run.layers} | {run.recompute} | {run.global_batch} | {run.micro_batch} | "
              f"{run.milliseconds:.1f} | {predicted[key]:.1f} | {n * parts.gemm * 1e3:.1f} / "
              f"{n * (parts.gemm - gemms.predicted + gemms.measured) * 1e3:.1f} | {n * parts.memory * 1e3:.1f} | "
              f"{n * parts.launch * 1e3:.1f} | {missing:+.1f} | {share:.0%} | {memory_share:.0%} |"
              + ("" if not gemms.unmatched else f" ({gemms.unmatched} GEMMs not probed)"))
    print()
    for b in sorted({row[0] for row in shares}):
        pick = np.array([row[1:] for row in shares if row[0] == b])
        print(f"micro-batch {b}: of the missing time, GEMMs timed as probed explain a median {np.median(pick[:, 0]):.0%}, "
              f"memory ops at the probe's HBM fractions {np.median(pick[:, 1]):.0%} ({len(pick)} runs too fast)  ")
    pairs = {}
    for run in runs:
        key = (run.hidden, run.layers, run.global_batch, run.micro_batch)
        pairs.setdefault(key, {})[run.recompute] = run
    excess = []
    for (hidden, layers, batch, micro), both in sorted(pairs.items()):
        if {"full", "none"} <= both.keys():
            measured = both["full"].milliseconds - both["none"].milliseconds
            model = predicted[(hidden, layers, batch, micro, "full")] - predicted[(hidden, layers, batch, micro, "none")]
            excess.append((micro, (measured - model) / (layers * batch // micro)))
    for b in sorted({m for m, _ in excess}):
        pick = [e for m, e in excess if m == b]
        print(f"micro-batch {b}: recompute full costs {np.median(pick):.2f} ms per checkpointed layer more than archsim's "
              f"recomputed forward (measured full − none, less archsim's full − none; median of {len(pick)})  ")
    ratios = []
    for row in (r for r in probe if r.section == "gemm"):
        t = float(device_gemm_seconds(row.m, row.k, row.n, row.count, device, replace(eff, launch_s=0.0)))
        ratios.append((2.0 * row.m * row.k * row.n * row.count, t / row.seconds))
    flops, ratio = np.array(ratios).T
    for lo, hi in ((0, 1e10), (1e10, 1e11), (1e11, 1e14)):
        pick = (flops >= lo) & (flops < hi)
        if pick.any():
            print(f"probe GEMMs of {lo:.0e}–{hi:.0e} FLOP: archsim / measured median {np.median(ratio[pick]):.3f} "
                  f"({pick.sum()} GEMMs)  ")
    print(f"probe memory kernels, median fraction of HBM reached (archsim: {eff.memory:.3f} for all): "
          + ", ".join(f"{k} {v:.2f}" for k, v in fractions.items()))


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print("# The Hopper check by op class (benchmarks/bench_hopper_breakdown.py; nothing fitted)\n\n"
          "Per run: archsim's GPU seconds per class summed over the micro-batches (A100 constants); GEMM ms with "
          "the probe's measured seconds for the same shapes after the slash; 'missing ms' = measured − predicted "
          "iteration; the shares: how much of it the GEMMs timed as probed, and the memory-bound ops at the "
          "probe's median HBM fraction per kernel kind, would add (runs predicted too slow: nan).")
    for catalog, slug in CHECKS:
        check(catalog, slug)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
