"""`archsim train`'s TFLOP/s per GPU and MFU on published large runs, printed beside the published figure.

    .venv/bin/python benchmarks/bench_published_throughput.py

* GPT-3 175B on 1,024 A100 80GB (128 DGX A100 servers) as Narayanan et al. 2021 ran it (Table 1, the
  175B row: 96 layers, hidden 12,288, 96 heads, TP 8, PP 8, 1,024 GPUs, batch 1,536, sequence 2,048;
  140 TFLOP/s per GPU, their §5.1 formula 96·B·s·l·h²(1 + s/6h + V/16lh) with full recompute, V =
  51,200): micro-batch 1, standard attention (Megatron-LM of 2021 had no FlashAttention), full
  recompute, plain 1F1B and interleaved 1F1B with 2 and 3 chunks per rank (the paper's table does not
  give the chunk count). archsim's hardware TFLOP/s is the same formula (archsim.training.throughput).
* A Llama-2-7B-like model (32 layers, hidden 4,096, 32 heads, FFN 11,008, vocabulary 32,000) at
  sequence 4,096 with FlashAttention-2 on 16 H100s (configs/clusters/h100_2_servers.toml): DP 16 and
  TP 2 × DP 8, micro-batch 1 and 2, global batch 256, no recompute; its MFU, with the standard-attention
  MFU beside it. And NVIDIA NeMo's published Llama-2-7B pre-training setting (NeMo Framework 24.09
  performance summary: 8 GPUs, global batch 128, micro-batch 1, sequence 4,096, TP 1, PP 1; 780 model
  TFLOP/s per GPU, 16,934 tokens/s per GPU) on 8 of those H100s. NeMo ran FP8 with its distributed
  optimizer; archsim models bf16/fp16 kernels and a replicated Adam state, so the two are printed side
  by side, not as a check (the run does not fit 80 GB without the distributed optimizer).

Then a check of the GEMM model at these sizes where a measurement exists: the GEMMs of at least
0.1 TFLOP in the Hopper check's probe (benchmarks/results/gpu_efficiency_probe_h100-80gb-hbm3.csv,
timed on an H100 80GB HBM3) against archsim's time for them (the A100's kernel constants, as train
uses on an H100): the measured TFLOP/s and predicted / measured time.

Writes benchmarks/results/published_throughput.csv atomically; also the CPU seconds of each prediction.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.training.cluster import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.throughput import throughput
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
GPT3 = TransformerConfig("gpt3-175b", "gpt", layers=96, hidden=12288, heads=96, vocab=51200, seq=2048, ffn=4 * 12288,
                         kv_heads=96, tied_embeddings=True, positions=2048)
LLAMA = TransformerConfig("llama-2-7b-like", "llama", layers=32, hidden=4096, heads=32, vocab=32000, seq=4096,
                          ffn=11008, kv_heads=32, tied_embeddings=False)
PUBLISHED_GPT3_TFLOPS = 140.0  # Narayanan et al. 2021, Table 1, 175B row (1,024 GPUs): TFLOP/s per GPU
NEMO_LLAMA2_7B = {"tflops_per_gpu": 780.0, "tokens_per_gpu_second": 16934.0}  # NeMo 24.09 summary, FP8, 8 GPUs


def predict(c: TransformerConfig, cluster_file: str, par: Parallelism) -> dict:
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / cluster_file)
    start = time.process_time()
    machines = cluster.rank_machines(par)
    assert machines is not None
    result = train(c, par, machines[0], machines)
    cpu = time.process_time() - start
    rates = throughput(c, par.global_batch, par.recompute, result.iteration_seconds, par.gpus,
                       machines[0].gpu.peak("fp16"), par.attention)
    fits = all(m.total <= mc.gpu.memory_bytes for m, mc in zip(result.memory, machines))
    return {"model": c.name, "gpus": par.gpus, "tp": par.tp, "pp": par.pp, "dp": par.dp, "micro_batch": par.micro_batch,
            "interleave": par.interleave, "recompute": par.recompute, "attention": par.attention,
            "iteration_seconds": result.iteration_seconds, "tflops_per_gpu": rates.tflops_per_gpu,
            "hardware_tflops_per_gpu": rates.hardware_tflops_per_gpu, "mfu": rates.mfu,
            "peak_memory_gib": result.peak_memory_gib, "fits_memory": fits, "cpu_s": cpu,
            **{f"{k}_s": v for k, v in result.breakdown.items()}}


def main() -> int:
    rows = []
    for v in (1, 2, 3):
        row = predict(GPT3, "a100_384_servers.toml", Parallelism(8, 8, 16, 1536, 1, "full", False, v, "1f1b"))
        row["published_hardware_tflops_per_gpu"] = PUBLISHED_GPT3_TFLOPS
        row["vs_published"] = row["hardware_tflops_per_gpu"] / PUBLISHED_GPT3_TFLOPS - 1
        rows.append(row)
    for tp, mb in ((1, 1), (1, 2), (2, 1), (2, 2)):
        for attention in ("flash", "standard"):
            rows.append(predict(LLAMA, "h100_2_servers.toml",
                                Parallelism(tp, 1, 16 // tp, 256, mb, "none", False, attention=attention)))
    nemo = predict(LLAMA, "h100_2_servers.toml", Parallelism(1, 1, 8, 128, 1, "none", False, attention="flash"))
    rows.append(nemo)
    frame = pd.DataFrame(rows)
    shown = ["model", "tp", "pp", "dp", "micro_batch", "interleave", "attention", "iteration_seconds", "tflops_per_gpu",
             "hardware_tflops_per_gpu", "mfu", "peak_memory_gib", "fits_memory", "cpu_s"]
    print(frame[shown].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    for row in rows[:3]:
        print(f"GPT-3 175B, 1,024 A100, interleave {row['interleave']}: {row['hardware_tflops_per_gpu']:.1f} TFLOP/s per "
              f"GPU (recompute counted) vs {PUBLISHED_GPT3_TFLOPS:.0f} published (Narayanan et al. 2021, Table 1): "
              f"{row['vs_published']:+.1%}; breakdown (s): " + ", ".join(
                  f"{k[:-2]} {row[k]:.2f}" for k in row if k.endswith("_s") and k != "cpu_s"))
    tokens = LLAMA.seq * 128 / nemo["iteration_seconds"] / 8
    print(f"Llama-2-7B, 8 H100, NeMo's setting: archsim (bf16, flash) {nemo['tflops_per_gpu']:.0f} model TFLOP/s per "
          f"GPU, {tokens:,.0f} tokens/s per GPU, MFU {nemo['mfu']:.2f} of the fp16 peak; NeMo 24.09 published (FP8) "
          f"{NEMO_LLAMA2_7B['tflops_per_gpu']:.0f} TFLOP/s, {NEMO_LLAMA2_7B['tokens_per_gpu_second']:,.0f} tokens/s per GPU")
    atomic_write_text(ROOT / "benchmarks" / "results" / "published_throughput.csv", frame.to_csv(index=False))
    large_gemms_on_h100()
    return 0


def large_gemms_on_h100(min_flops: float = 1e11) -> None:
    """The probe's measured GEMMs of at least ``min_flops`` against archsim's GEMM time for them."""
    import io

    from archsim.devices.device import catalog_device
    from archsim.devices.gpu_cost import gemm_seconds
    from archsim.training.fitted import kernels

    path = ROOT / "benchmarks" / "results" / "gpu_efficiency_probe_h100-80gb-hbm3.csv"
    text = "".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
                   if not line.startswith("#"))
    probe = pd.read_csv(io.StringIO(text))
    gemms = probe[probe.section == "gemm"]
    flops = 2 * gemms.m * gemms.k * gemms.n * gemms["count"]
    big = gemms[flops >= min_flops]
    h100 = catalog_device("h100-80gb-sxm")
    ratio = gemm_seconds(big.m, big.k, big.n, big["count"], h100, kernels(h100.name)) / big.seconds
    measured = flops[flops >= min_flops] / big.seconds / 1e12
    print(f"H100 GEMMs of >= {min_flops / 1e12:g} TFLOP measured ({len(big)}): {measured.min():.0f}-{measured.max():.0f} "
          f"TFLOP/s; archsim predicted / measured time: median {ratio.median():.3f}, {ratio.min():.3f}-{ratio.max():.3f}")


if __name__ == "__main__":
    sys.exit(main())
