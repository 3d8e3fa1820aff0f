"""FlashAttention-2's kernel alone: archsim's predicted TFLOP/s beside the papers' published figures.

    .venv/bin/python benchmarks/bench_flash_kernel.py      # a few seconds

The papers' benchmark (Dao 2023, "FlashAttention-2", §4.1; Shah et al. 2024, "FlashAttention-3", §4.1):
sequence 512 … 16k, batch so that the tokens total 16k, hidden 2048, head dim 64 (32 heads) or 128 (16
heads), fp16; FLOPs 4 · seqlen² · head dim · heads (halved when causal), the backward 2.5 × the forward.
Each kernel is timed alone (NeuSight's launch, ``kernel_families(alone=True)``) with the vTrain fit's GEMM
fraction, as ``validate-gpu`` times kernels; nothing here is fitted.

Published figures, read from the papers' bar labels (the repository Dao-AILab/flash-attention ships both
figures: ``assets/flash2_a100_fwd_bwd_benchmark.png`` is FlashAttention-2's Figure 4,
``assets/flash3_fp16_fwd.png`` FlashAttention-3's Figure 5):

* A100 80GB SXM4, forward + backward, FlashAttention-2's own bars (FA2 Figure 4); the 512 bar of (b) is
  hidden under the legend (None); the 1k bars of (a) and (b) are read through it.
* H100 80GB SXM5, forward, FlashAttention-2's bars in FA3 Figure 5 (a)–(d) — a check only: nothing
  in archsim is fitted on H100 data.

Columns: ``matmul`` the kernel as its GEMMs (the longer of their tensor and shared-memory times,
:mod:`archsim.training.flash_smem`) and HBM bytes alone (the model before the non-matmul work);
``+softmax`` with its exponentials and FP32 row-wise work (:mod:`archsim.devices.nonmatmul`); ``+mma.sync``
also at ``mma.sync``'s ⅔ of Hopper's tensor peak (the A100 is unaffected); ``+bwd kernels`` also the
backward's two memory-bound kernels beside its main one, D = rowsum(dO ∘ O) with dQaccum's zeroing before
it and dQ's fp32 → fp16 conversion after it (:func:`archsim.training.flash_blocks.flash_backward_kernels`;
the shipped model). ``bwd/fwd`` is the shipped backward's TFLOP/s over its forward's; ``atomics`` the
backward's dQaccum ``atomicAdd`` bytes at the chip's L2 bandwidth as a share of its main kernel's time (not
priced: they overlap it).
"""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import numpy as np

from archsim.devices.catalog import GPUS, chip_of
from archsim.devices.kernel_ops import kernel_families, op_seconds
from archsim.training.fitted import A100_KERNELS
from archsim.training.flash_blocks import dq_atomics, flash_backward_kernels, flash_tiles
from archsim.training.layer_ops import flash_attention_ops

SEQS = (512, 1024, 2048, 4096, 8192, 16384)
TOKENS, HIDDEN = 16384, 2048
# (causal, head dim) → TFLOP/s at SEQS, FlashAttention-2's bars
A100_FWD_BWD = {(False, 64): (132, 153, 162, 171, 175, 176), (False, 128): (None, 173, 187, 196, 201, 203),
                (True, 64): (88, 119, 140, 156, 165, 171), (True, 128): (99, 133, 155, 173, 182, 189)}
H100_FWD = {(False, 64): (282, 306, 318, 321, 322, 324), (True, 64): (180, 229, 262, 284, 295, 299),
            (False, 128): (309, 350, 362, 366, 370, 370), (True, 128): (191, 260, 298, 319, 333, 335)}


def paper_flops(s: int, hd: int, causal: bool) -> tuple[float, float]:
    """(forward, backward) FLOPs of the papers' convention for one configuration."""
    heads = HIDDEN // hd * (TOKENS // s)
    forward = 4 * s * s * hd * heads / (2 if causal else 1)
    return forward, 2.5 * forward


def flash_seconds(gpu: str, s: int, hd: int, heads: int, causal: bool, dtype: str = "fp16", dropout: bool = False,
                  softmax: bool = True, mma_sync: bool = True, side: bool = True) -> tuple[float, float]:
    """(forward, backward) seconds archsim predicts for FlashAttention-2 over ``heads`` (batch × heads) of
    ``s`` tokens, head dim ``hd``, each kernel timed alone with the vTrain fit (``dropout`` picks the forward's
    tile), with or without its non-matmul work, the ``mma.sync`` fraction and the backward's two memory-bound
    kernels (``side``). One definition for this benchmark and ``bench_tensor_probe.py``."""
    device = GPUS[gpu]
    ops = flash_attention_ops(s, hd, heads, heads, dtype=dtype, causal=causal, dropout=dropout)
    if not softmax:
        ops = tuple(replace(op, exps=0, lane_ops=0) for op in ops)
    if side:
        ops = (*ops, *flash_backward_kernels(s, hd, heads, dtype))
    families = kernel_families(device, dtype, A100_KERNELS, alone=True)
    if mma_sync:
        seconds = op_seconds(ops, device, families, dtype)
    else:
        with mock.patch("archsim.devices.kernel_ops.fused_matmul_fraction", return_value=1.0):
            seconds = op_seconds(ops, device, families, dtype)
    return float(seconds[0]), float(seconds[1:].sum())


def kernel_seconds(gpu: str, s: int, hd: int, causal: bool, softmax: bool = True,
                   mma_sync: bool = True, side: bool = True) -> tuple[float, float]:
    """(forward, backward) seconds of the papers' configuration (16k tokens, hidden 2,048) in fp16
    (:func:`flash_seconds`)."""
    return flash_seconds(gpu, s, hd, HIDDEN // hd * (TOKENS // s), causal, softmax=softmax, mma_sync=mma_sync,
                         side=side)


def atomics_share(gpu: str, s: int, hd: int, causal: bool) -> float:
    """The backward's dQaccum ``atomicAdd`` bytes (4 per fp32 value) at the chip's L2 bandwidth, as a share
    of its main kernel's predicted seconds."""
    device, heads = GPUS[gpu], HIDDEN // hd * (TOKENS // s)
    chip = chip_of(device)
    assert chip is not None
    l2_seconds = 4 * dq_atomics(s, hd, heads, flash_tiles(hd).backward, causal=causal) / (
        chip.l2_bytes_per_clock * chip.clock_hz)
    return l2_seconds / kernel_seconds(gpu, s, hd, causal, side=False)[1]


def rates(gpu: str, s: int, hd: int, causal: bool, **how: bool) -> tuple[float, float, float]:
    """(forward, backward, forward + backward) TFLOP/s."""
    fwd, bwd = kernel_seconds(gpu, s, hd, causal, **how)
    ff, fb = paper_flops(s, hd, causal)
    return ff / fwd / 1e12, fb / bwd / 1e12, (ff + fb) / (fwd + bwd) / 1e12


def table(gpu: str, published: dict[tuple[bool, int], tuple[int | None, ...]], column: int) -> None:
    """Print archsim's TFLOP/s of every case beside ``published`` (``column`` 0 forward, 2 forward + backward)
    and the mean absolute error of each model stage."""
    label = "forward" if column == 0 else "forward + backward"
    print(f"\n{gpu}: FlashAttention-2 kernel TFLOP/s (published: {label})")
    print("causal  hd    seq |  fwd   bwd  f+b bwd/fwd atomics | compared: matmul +softmax +mma.sync "
          "+bwd kernels published")
    errors: dict[str, list[float]] = {"matmul": [], "+softmax": [], "+mma.sync": [], "+bwd kernels": []}
    ratios: list[float] = []
    for (causal, hd), figures in published.items():
        for s, paper in zip(SEQS, figures, strict=True):
            stages = {"matmul": rates(gpu, s, hd, causal, softmax=False, mma_sync=False, side=False),
                      "+softmax": rates(gpu, s, hd, causal, mma_sync=False, side=False),
                      "+mma.sync": rates(gpu, s, hd, causal, side=False),
                      "+bwd kernels": rates(gpu, s, hd, causal)}
            shipped = stages["+bwd kernels"]
            ratios.append(shipped[1] / shipped[0])
            picked = [stages[k][column] for k in errors]
            shown = "   -" if paper is None else f"{paper:4d}"
            print(f"{causal!s:6} {hd:4d} {s:6d} | {shipped[0]:4.0f}  {shipped[1]:4.0f}  {shipped[2]:4.0f}"
                  f"   {ratios[-1]:5.2f} {100 * atomics_share(gpu, s, hd, causal):6.1f}%"
                  f" | {picked[0]:6.0f} {picked[1]:8.0f} {picked[2]:9.0f} {picked[3]:12.0f} {shown:>9}")
            if paper is not None:
                for key, value in zip(errors, picked, strict=True):
                    errors[key].append(abs(value - paper) / paper)
    print("mean |error| vs published: " + ", ".join(f"{k} {100 * np.mean(v):.1f}%" for k, v in errors.items())
          + f" ({len(errors['matmul'])} bars); shipped backward / forward TFLOP/s {min(ratios):.2f}–{max(ratios):.2f}")


def main() -> None:
    table("a100-80gb", A100_FWD_BWD, 2)
    table("h100-80gb-sxm", H100_FWD, 0)


if __name__ == "__main__":
    main()
