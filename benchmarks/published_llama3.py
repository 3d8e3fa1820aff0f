"""Llama 3 405B's published pre-training throughput on H100s, with its source: what
`bench_llama3_throughput.py` (and `bench_published_throughput.py` through it) prints beside archsim's
prediction. A check only: nothing is fitted on it (archsim's constants stay those of
``archsim/training/fitted.py``).

Source: Dubey et al. 2024 (Llama Team, AI @ Meta), "The Llama 3 Herd of Models", arXiv 2407.21783.

* §3.2, Table 3: the 405B model — 126 layers, model dimension 16,384, FFN dimension 53,248, 128 attention
  heads, 8 key/value heads, SwiGLU, vocabulary "128,000" (128K; the released config.json's 128,256), RoPE
  with θ = 500,000.
* §3.3.1: H100 80GB HBM3 at 700 W, 8 per Grand Teton server on NVLink; RoCE at 400 Gb/s between GPUs;
  2 servers per rack under one ToR switch, 192 racks a pod of 3,072 GPUs at full bisection, pods joined at
  1:7 oversubscription (``configs/clusters/llama3_h100_2048_servers.toml``).
* §3.3.2, Table 4 (TP, CP, PP, DP, sequence, batch size per DP group, tokens per batch, TFLOPs/GPU, BF16
  MFU). The text: FSDP sharding optimizer states and gradients, the model's shards not resharded after the
  forward; BF16 MFU (Chowdhery et al.'s PaLM count) 38–43%; an interleaved schedule (Narayanan et al.
  2021) with V chunks per rank (V not given), the number of contiguous micro-batches N tunable, one
  Transformer layer fewer on the first and the last stage ("the first model chunk on the first stage has only
  the embedding, and the last model chunk on the last stage has only output projection and loss"); sequences
  of 8K tokens pre-trained without activation checkpointing; FP32 gradient accumulation and FP32
  reduce-scatter; the parallelism order [TP, CP, PP, DP], DP outermost. No micro-batch size is given.
"""

from __future__ import annotations

from dataclasses import dataclass

LLAMA3_SOURCE = "Dubey et al. 2024, arXiv 2407.21783, §3.3.2 Table 4"
LLAMA3_405B_CONFIG = "llama3_405b.toml"  # configs/transformers/


@dataclass(frozen=True)
class Table4Row:
    """One row of the Llama 3 paper's Table 4: the layout, the sequence (tokens), sequences per DP group per
    step, and the published TFLOP/s per GPU and BF16 MFU (fraction)."""

    gpus: int
    tp: int
    cp: int
    pp: int
    dp: int
    seq: int
    batch_per_dp: int
    tflops: float
    mfu: float
    source: str = LLAMA3_SOURCE

    @property
    def global_batch(self) -> int:
        """Sequences per step: batch per DP group × DP (2,048 sequences of 8,192 tokens, or 128 of 131,072:
        Table 4's 16M tokens)."""
        return self.batch_per_dp * self.dp


# the CP 1 rows (sequence 8,192), which bench_llama3_throughput.py runs at V = 1, 2, 4 and compares
LLAMA3_TABLE4 = (
    Table4Row(8192, 8, 1, 16, 64, 8192, 32, 430.0, 0.43),
    Table4Row(16384, 8, 1, 16, 128, 8192, 16, 400.0, 0.41),
)
# Table 4's third row (§3.3.2), the long-context run: CP 16 at sequence 131,072, the same 16M tokens a step;
# run with --cp 16 under both K/V exchanges (docs/training.md, "Context parallelism"). Meta's CP is "all-gather
# based" (§3.3.2): archsim's --cp-comm all_gather.
LLAMA3_TABLE4_LONG = Table4Row(16384, 8, 16, 16, 8, 131072, 16, 380.0, 0.38)


def meta_stage_layers(layers: int, pp: int, chunks: int) -> tuple[int, ...]:
    """Layers of each model chunk in pipeline order with one layer fewer on the first and on the last chunk
    (§3.3.2: the embedding and the output projection and loss take their place): the layers and those two
    shared evenly over pp × chunks."""
    slots = layers + 2
    n = pp * chunks
    if slots % n:
        raise ValueError(f"{layers} layers and 2 end pieces do not split evenly into {n} chunks")
    each = slots // n
    return (each - 1,) + (each,) * (n - 2) + (each - 1,)


__all__ = ["LLAMA3_405B_CONFIG", "LLAMA3_SOURCE", "LLAMA3_TABLE4", "LLAMA3_TABLE4_LONG", "Table4Row",
           "meta_stage_layers"]
