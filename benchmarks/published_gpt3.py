"""Published figures of GPT-3-class training on A100s, each with its source, and archsim's prediction of
them taken apart: what `bench_published_throughput.py` prints beside its GPT-3 175B line.

Nothing here is fitted: archsim's constants stay those of ``archsim/training/fitted.py``; the
published figures are checks, and where a term is estimated from a cited mechanism the estimate uses
archsim's own HBM model, not the published figure.

Sources (docs/accuracy.md, "Published large runs", says what each one shows):

* Narayanan et al. 2021 (SC '21), Table 1: weak scaling, 1.7B–1T parameters (no 175B row); §5.1: "On
  n=1024 A100 GPUs using batch size 1536, we achieve X=140 teraFLOP/s per GPU" for GPT-3 175B, with no
  parallel layout given; §5.1 also says those runs use the interleaved schedule with scatter/gather.
  Table 2: PTD-P on the 174.6B GPT-3 (model-parallel size 96, batch 1,536, micro-batch 1) on 384, 768 and
  1,536 GPUs: 153, 149, 141 TFLOP/s per GPU. All with full recompute; FLOPs by their §5.1 formula.
* NVIDIA/Megatron-LM's ``examples/pretrain_gpt3_175B.sh`` of 2021 (128 nodes, fp16): TP 8, PP 16,
  micro-batch 1, global batch 1,536, ``--checkpoint-activations`` — the code's own layout for 1,024 GPUs.
* Korthikanti et al. 2022, Table 3 (22B: 64 heads, hidden 6,144, TP 8, micro-batch 4, sequence 2,048) and
  Table 4 (one layer's forward and backward in ms on A100s). Its Table 5 is not used.
* Azure/AI-benchmarking-guide, ``Azure_Results/ND_A100_v4_results.md``: cuBLASLt fp16 GEMMs on an
  A100-SXM4-80GB (random inputs, 10,000 warm-up iterations), TFLOP/s.
* mosaicml/llm-foundry, ``scripts/train/benchmarking/README.md`` ("H100 80GB BF16"): MPT-7B at sequence
  4,096 on 8 H100s, FlashAttention, FSDP, micro-batch 16, activation checkpointing: MFU 40.42%.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.devices.kernel_ops import device_gemm_seconds
from archsim.training.iteration import ATTENTION_CORE, model_pieces
from archsim.training.layer_ops import block_work
from archsim.training.machine import Machine
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

GPT3_1024_TFLOPS = 140.0  # Narayanan et al. 2021 §5.1: GPT-3 175B, 1,024 A100s, batch 1,536


@dataclass(frozen=True)
class ScalingRow:
    """One row of Narayanan et al. 2021's Table 1 (TFLOP/s per GPU, their formula, recompute counted)."""

    billions: float
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    gpus: int
    batch: int
    tflops: float


NARAYANAN_TABLE1 = (
    ScalingRow(1.7, 24, 2304, 24, 1, 1, 32, 512, 137), ScalingRow(3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    ScalingRow(7.5, 32, 4096, 36, 4, 1, 128, 512, 142), ScalingRow(18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    ScalingRow(39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), ScalingRow(76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ScalingRow(145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148), ScalingRow(310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ScalingRow(529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    ScalingRow(1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
)
# Table 2, PTD-P, 174.6B: model-parallel size 96 (read as TP 8 × PP 12, the paper's TP in every large run)
NARAYANAN_TABLE2 = ((384, 153.0), (768, 149.0), (1536, 141.0))  # (GPUs, TFLOP/s per GPU); batch 1,536, mb 1

# Korthikanti et al. 2022 Table 4: one layer of the 22B model (Table 3), ms: (forward, backward)
KORTHIKANTI_22B = TransformerConfig("gpt-22b", "gpt", layers=48, hidden=6144, heads=64, vocab=51200, seq=2048,
                                    ffn=4 * 6144, kv_heads=64, tied_embeddings=True, positions=2048)
KORTHIKANTI_TABLE4 = (  # (row, recompute, sequence parallel, forward ms, backward ms)
    ("baseline no recompute", "none", False, 7.7, 11.9),
    ("sequence parallelism", "none", True, 7.2, 11.8),
    ("baseline with recompute", "full", False, 7.7, 19.5),
    ("selective recompute", "selective", False, 7.7, 13.2),
    ("selective + sequence", "selective", True, 7.2, 13.1),
)

AZURE_A100_GEMMS = (  # (m, n, k, TFLOP/s) cuBLASLt fp16, A100-SXM4-80GB, CUDA 12.5
    (4096, 4096, 4096, 228.0), (8192, 8192, 8192, 253.7), (16384, 16384, 16384, 256.5), (6144, 12288, 12288, 250.8),
)
MPT7B_H100_MFU = 0.4042  # llm-foundry: MPT-7B, sequence 4,096, 8 H100 80GB, bf16, FlashAttention, FSDP

GEMM_LAYERS = ("qkv", "proj", "fc1", "fc2")


def gpt(name: str, layers: int, hidden: int, heads: int) -> TransformerConfig:
    """The papers' GPT: 4h FFN, vocabulary 51,200, sequence 2,048, tied embeddings."""
    return TransformerConfig(name, "gpt", layers=layers, hidden=hidden, heads=heads, vocab=51200, seq=2048,
                             ffn=4 * hidden, kv_heads=heads, tied_embeddings=True, positions=2048)


def hardware_flops(c: TransformerConfig, batch: int) -> float:
    """Narayanan et al. 2021 §5.1: 96·B·s·l·h²·(1 + s/6h + V/16lh), full recompute counted."""
    s, h, l, V = c.seq, c.hidden, c.layers, c.vocab
    return 96 * batch * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))


def published_seconds(c: TransformerConfig, batch: int, gpus: int, tflops: float) -> float:
    """The iteration time a published TFLOP/s per GPU implies, by the same formula."""
    return hardware_flops(c, batch) / (gpus * tflops * 1e12)


def layer_decomposition(c: TransformerConfig, par: Parallelism, machine: Machine) -> dict[str, float]:
    """archsim's seconds for one transformer layer and one micro-batch on one GPU — forward, its
    recompute (full recompute reruns the forward and its TP all-reduces) and backward — by class: each
    GEMM layer (F, recompute, D, G), the attention core (scores, softmax, dropout, context), the
    memory-bound rest, the TP all-reduces. Host-issue floors are not applied (these passes are GPU-bound)."""
    piece = model_pieces(c, par, machine)["layer"]
    redo = 2 if par.recompute == "full" else 1
    out: dict[str, float] = {}
    for name, kind, seconds in piece.ops:
        if "all-reduce" in name or "gather" in name or "scatter" in name:
            key = "TP collectives"
        elif name in GEMM_LAYERS:
            key = f"GEMM {name}"
        elif name.split(".")[0] in ATTENTION_CORE:
            key = "attention core"
        else:
            key = "memory-bound"
        again = redo if kind == "F" else 1
        out[key] = out.get(key, 0.0) + seconds * again
    return out


def gemm_shapes(c: TransformerConfig, par: Parallelism) -> list[tuple[str, str, int, int, int]]:
    """(layer, kind, m, k, n) of one layer's weight GEMMs on one GPU, as archsim lowers them."""
    work = block_work(c, par.micro_batch, par.tp, par.sequence_parallel, par.attention)
    return [(op.layer, op.kind, g.m, g.k, g.n) for op in (*work.forward, *work.backward)
            if op.layer in GEMM_LAYERS for g in op.gemms]


def gemm_rate_check(machine: Machine) -> list[tuple[int, int, int, float, float]]:
    """(m, n, k, measured TFLOP/s, archsim TFLOP/s) for Azure's A100 cuBLASLt GEMMs, launch gap left out."""
    rows = []
    for m, n, k, measured in AZURE_A100_GEMMS:
        seconds = float(np.asarray(device_gemm_seconds(m, k, n, 1, machine.gpu, machine.efficiency)).ravel()[0])
        rows.append((m, n, k, measured, 2.0 * m * n * k / (seconds - machine.efficiency.launch_s) / 1e12))
    return rows


__all__ = [
    "AZURE_A100_GEMMS",
    "GPT3_1024_TFLOPS",
    "KORTHIKANTI_22B",
    "KORTHIKANTI_TABLE4",
    "MPT7B_H100_MFU",
    "NARAYANAN_TABLE1",
    "NARAYANAN_TABLE2",
    "ScalingRow",
    "gemm_rate_check",
    "gemm_shapes",
    "gpt",
    "hardware_flops",
    "layer_decomposition",
    "published_seconds",
]
