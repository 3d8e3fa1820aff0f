"""Eager PyTorch's memory-bound kernels timed as PyTorch's kernels: the Hopper check of the idea.

``--implementation pytorch-eager`` in fp16/bf16 runs PyTorch's own softmax, layer-norm and
elementwise kernels — the kernels NeuSight measured and :data:`archsim.devices.kernel_constants.FITTED` is
fitted on — while archsim times them with the vTrain fit (one HBM fraction, a gap per kernel,
fitted on Megatron's fused kernels). This benchmark times them instead with their class
mechanism at NeuSight's constants (``kernel_families(..., pytorch_memory_bound=True)``; GEMMs stay
tensor-core tiles at the vTrain fit, the host's issue time as in training) and reports, nothing
fitted on any Hopper data:

1. each memory kernel of the GPU's efficiency probe (timed alone, as NeuSight's kernels were):
   median predicted / measured per kernel kind, both ways, with and without the launch term;
2. the one-GPU eager iterations (``gpu_train_measured_<gpu>.csv``): time MAPE overall and by
   micro-batch, with the kept constants, the idea, and the two halves of the idea apart (the class
   mechanism at the vTrain gap; the vTrain stream at NeuSight's launch time) to say which moves them;
3. at micro-batch 8 (GPU-bound), archsim's GPU ms by op class (GEMM, memory-bound, launch) both ways.

    python benchmarks/bench_eager_kernels.py > benchmarks/results/eager_kernels.md    # ~15 s
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices.catalog import chip_of
from archsim.devices.device import catalog_device
from archsim.devices.kernel_constants import FITTED
from archsim.devices.kernel_ops import KernelFamilies, kernel_families, op_seconds
from archsim.devices.kernels import memory_bound_seconds, stream_seconds
from archsim.training import fitted
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.eager_ops import eager_block_work, eager_embedding_work, eager_head_work
from archsim.training.machine import Machine
from archsim.training.measured import MeasuredRun, read_measured_table
from archsim.training.run import train

RESULTS = ROOT / "benchmarks" / "results"
CHECKS = (("h100-80gb-sxm", "h100-80gb-hbm3", "h100_1gpu.toml"), ("h200-141gb", "h200", "h200_1gpu.toml"))
HIDDEN = {"gpt_1024h_24l": 1024, "gpt_2048h_20l": 2048}
SEQ, HEADS = 1024, 16  # gpu_train_measure.py's GPTs


@dataclass(frozen=True)
class _Variant(Machine):
    """A machine whose kernel families are given (the variants below), not :func:`kernel_families`'."""

    families: KernelFamilies | None = None

    @property
    def kernels(self) -> KernelFamilies:
        return self.families or super().kernels


def variants(device, efficiency) -> dict[str, KernelFamilies]:
    return {
        "kept: vTrain fit for every kernel": kernel_families(device, "fp16", efficiency),
        "idea: PyTorch's kernels at NeuSight's constants": kernel_families(device, "fp16", efficiency, FITTED,
                                                                          pytorch_memory_bound=True),
        f"class mechanism, vTrain launch ({efficiency.launch_s * 1e6:.1f} µs)": KernelFamilies(
            efficiency, replace(FITTED, launch_s=efficiency.launch_s), pytorch=True),
        f"vTrain stream, NeuSight launch ({FITTED.launch_s * 1e6:.1f} µs)": KernelFamilies(
            efficiency, replace(efficiency, launch_s=FITTED.launch_s)),
    }


def probe_kernels(catalog: str, slug: str) -> None:
    """Part 1: the probe's memory kernels, one kernel timed alone (CUDA events, median of 11)."""
    device = catalog_device(catalog)
    chip, eff, hbm = chip_of(device), fitted.kernels(catalog), device.hbm_bytes_per_s
    assert chip is not None
    lines = [line for line in (RESULTS / f"gpu_efficiency_probe_{slug}.csv").read_text().splitlines()
             if not line.startswith("#")]
    kinds: dict[str, list[tuple[float, ...]]] = {}
    for row in csv.DictReader(lines):
        if row["section"] != "memory" or row["name"] == "adam.step":
            continue
        kind, phase = row["name"].split(".")
        b, h, nbytes, measured = int(row["micro_batch"]), HIDDEN[row["model"]], float(row["bytes"]), float(row["seconds"])
        if (kind, phase) == ("layernorm", "F"):
            pytorch = float(memory_bound_seconds("ln", SEQ * b, h, chip, FITTED, "fp16"))
        elif (kind, phase) == ("softmax", "F"):
            pytorch = float(memory_bound_seconds("softmax", b * HEADS * SEQ, SEQ, chip, FITTED, "fp16"))
        else:  # a backward or an elementwise kernel: its bytes at its class's fraction
            fraction = {"layernorm": FITTED.layernorm, "softmax": FITTED.softmax}.get(kind, FITTED.memory)
            pytorch = float(stream_seconds(nbytes, hbm, FITTED, fraction))
        kept = float(stream_seconds(nbytes, hbm, eff))
        kinds.setdefault(row["name"], []).append(
            (pytorch / measured, kept / measured, (pytorch - FITTED.launch_s) / measured,
             (kept - eff.launch_s) / measured))
    print(f"\n### {device.name}: the probe's memory kernels, predicted / measured (median per kind)\n")
    print("| kernel | sizes | PyTorch class, NeuSight | vTrain stream | without launch: PyTorch class | vTrain stream |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, ratios in kinds.items():
        r = np.median(np.array(ratios), axis=0)
        print(f"| {name} | {len(ratios)} | {r[0]:.2f} | {r[1]:.2f} | {r[2]:.2f} | {r[3]:.2f} |")


def eager_machine(cluster, run: MeasuredRun, families: KernelFamilies) -> _Variant:
    base = cluster.machine(run.parallelism())
    kept = {f.name: getattr(base, f.name) for f in fields(base)}
    return _Variant(**{**kept, "implementation": "pytorch-eager"}, families=families)


def iterations(catalog: str, slug: str, cluster_file: str) -> None:
    """Parts 2 and 3: the measured eager iterations under each variant, and the class split at b = 8."""
    table = read_measured_table(RESULTS / f"gpu_train_measured_{slug}.csv")
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / cluster_file)
    eff = fitted.kernels(catalog)
    print(f"\n### {cluster.gpu.name}: {len(table.runs)} eager iterations, time MAPE (signed mean)\n")
    print("| kernels | all | b = 1–2 | b = 4 | b = 8 |")
    print("| --- | --- | --- | --- | --- |")
    micro = np.array([r.micro_batch for r in table.runs])
    for name, families in variants(cluster.gpu, eff).items():
        errors = np.array([train(r.config(), r.parallelism(), eager_machine(cluster, r, families)).iteration_seconds
                           * 1e3 / r.milliseconds - 1 for r in table.runs])
        cells = [f"{np.mean(abs(errors[pick])):.1%} ({np.mean(errors[pick]):+.1%})"
                 for pick in (micro > 0, micro <= 2, micro == 4, micro == 8)]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n### {cluster.gpu.name}: GPU ms per iteration by op class at micro-batch 8 (optimizer excluded)\n")
    print("| model | recompute | B | measured ms | GEMM | memory-bound kept / idea | launch kept / idea |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    kept, idea = list(variants(cluster.gpu, eff).values())[:2]
    for run in (r for r in table.runs if r.micro_batch == 8):
        c, n = run.config(), run.global_batch // run.micro_batch
        layer = eager_block_work(c, 8)
        ops = [*layer.forward * (2 if run.recompute == "full" else 1), *layer.backward] * c.layers
        ops += [op for w in (eager_embedding_work(c, 8), eager_head_work(c, 8)) for op in (*w.forward, *w.backward)]
        gemm = [op for op in ops if op.gemms]
        memory = [op for op in ops if not op.gemms and op.vector_elements > 0]
        split = []
        for families in (kept, idea):
            quiet = KernelFamilies(replace(families.gemm, launch_s=0.0), replace(families.memory_bound, launch_s=0.0),
                                   families.pytorch)
            split.append((op_seconds(gemm, cluster.gpu, quiet).sum(), op_seconds(memory, cluster.gpu, quiet).sum(),
                          len(gemm) * families.gemm.launch_s + len(memory) * families.memory_bound.launch_s))
        (g, m0, l0), (_, m1, l1) = split
        print(f"| h{run.hidden} L{run.layers} | {run.recompute} | {run.global_batch} | {run.milliseconds:.1f} | "
              f"{n * g * 1e3:.1f} | {n * m0 * 1e3:.1f} / {n * m1 * 1e3:.1f} | {n * l0 * 1e3:.1f} / {n * l1 * 1e3:.1f} |")


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print("# Eager PyTorch's memory-bound kernels as PyTorch's kernels (benchmarks/bench_eager_kernels.py; "
          "nothing fitted)\n\nkept: the vTrain fit times every fp16 kernel (one HBM fraction, "
          f"{fitted.A100_KERNELS.launch_s * 1e6:.1f} µs per kernel); "
          "idea: the memory-bound kernels by their class mechanism at NeuSight's fp32 fit "
          f"(softmax {FITTED.softmax:.3f}, layer norm {FITTED.layernorm:.3f} with two reads, elementwise "
          f"{FITTED.memory:.3f}, {FITTED.launch_s * 1e6:.1f} µs per kernel); GEMMs and the host's "
          f"{fitted.A100_KERNELS.host_s * 1e6:.1f} µs per op are the vTrain fit's in every row.")
    for catalog, slug, cluster_file in CHECKS:
        probe_kernels(catalog, slug)
        iterations(catalog, slug, cluster_file)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
