"""archsim's prediction of one published run, the row the published-throughput benchmarks print and compare:
shared by ``bench_published_throughput.py`` (GPT-3, Llama 2, MPT) and ``bench_llama3_throughput.py`` (Llama 3)."""

from __future__ import annotations

import time
from pathlib import Path

from archsim.training.cluster import GpuCluster
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.throughput import throughput
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]


def predict(c: TransformerConfig, cluster_file: str | GpuCluster, par: Parallelism, dtype: str = "fp16") -> dict:
    """archsim's prediction of one run in ``dtype``: fp16 for the A100 papers' runs, bf16 for the H100 runs
    they are read against (bf16's gradients fp32, as Megatron-LM keeps them); a cluster file in
    configs/clusters/ or a cluster already read (and edited). Seconds, TFLOP/s per GPU, GiB; ``cpu_s`` the
    CPU seconds the prediction took."""
    cluster = cluster_file if isinstance(cluster_file, GpuCluster) else \
        load_gpu_cluster(ROOT / "configs" / "clusters" / cluster_file, dtype)
    start = time.process_time()
    machines = cluster.rank_machines(par)
    assert machines is not None
    result = train(c, par, machines[0], machines)
    cpu = time.process_time() - start
    rates = throughput(c, par.global_batch, par.recompute, result.iteration_seconds, par.gpus,
                       machines[0].gpu.peak(dtype), par.attention)
    fits = all(m.total <= mc.gpu.memory_bytes for m, mc in zip(result.memory, machines))
    return {"model": c.name, "dtype": dtype, "gpus": par.gpus, "tp": par.tp, "cp": par.cp, "cp_comm": par.cp_comm,
            "seq": c.seq, "pp": par.pp, "dp": par.dp, "micro_batch": par.micro_batch,
            "interleave": par.interleave, "recompute": par.recompute, "attention": par.attention,
            "grad_accumulation": par.grad_accumulation or "fused",
            "iteration_seconds": result.iteration_seconds, "tflops_per_gpu": rates.tflops_per_gpu,
            "hardware_tflops_per_gpu": rates.hardware_tflops_per_gpu, "mfu": rates.mfu,
            "peak_memory_gib": result.peak_memory_gib, "fits_memory": fits, "cpu_s": cpu,
            **{f"{k}_s": v for k, v in result.breakdown.items()}}
