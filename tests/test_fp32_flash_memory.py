"""FlashAttention's log-sum-exp in fp32 (issue #37): 4 bytes a query row in every dtype, not doubled under fp32.

FlashAttention-2 (Dao 2023, Algorithm 1's output L; flash-attention's ``flash_api.cpp`` allocates ``softmax_lse``
with ``opts.dtype(at::kFloat)`` whatever q's dtype) keeps one fp32 log-sum-exp per query row and head:
s·b·a/t values of 4 bytes a layer, /t with TP. Beside it a layer keeps Korthikanti et al.'s selective row, whose
2-byte values double in fp32 and whose 1-byte residual masks do not (FlashAttention keeps no attention-dropout
mask: it regenerates it from the RNG state). A catalog GPU refuses fp32 beside FlashAttention (no fp32 kernel), as a
``gemm = "tiles"`` device file does; a device file of arrays prices its fused attention in any dtype, so there the
figure shows.

The fp32 tests failed on the old code (8 bytes a row); the fp16 one passes on both: that figure must not move.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.training.parallel import Parallelism
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig

# A tiny GPT, 4 layers, s = 16, b = 2, h = 64, a = 4, dropout on; PP 2, TP 2, 1F1B with 4 micro-batches: the
# first rank holds 2 in flight of its 2 layers and the embedding's 1-byte dropout mask for each.
TINY = TransformerConfig("tiny", "gpt", 4, 64, 4, 100, 16, 256, 4, True, 16)
S, B, H, A, T = 16, 2, 64, 4, 2
SBH, ROWS = S * B * H, S * B * A / T


def _first_rank(value_bytes: int) -> float:
    """The selective row's 10 + 24/t = 22 bytes of s·b·h in fp16: 20 of values (× value_bytes/2) and the two
    residual masks' 2; the log-sum-exp's 4 bytes a row; 2 micro-batches × 2 layers, and 2 embedding masks; and
    as a backward starts, its layer's FlashAttention buffers (flash_api.cpp ``mha_bwd``), fp32 in every dtype:
    ``softmax_d`` and ``dq_accum``, the 16 rows rounded up to 128, × 4 heads (b·a/t) and × 4 · 32 (head dim 16
    runs the kernel's 32) — since 2026-12-03."""
    layer = 20 * value_bytes / 2 * SBH + 2 * SBH + 4 * ROWS
    return 2 * 2 * layer + 2 * SBH + 4 * (128 * 4 + 128 * 4 * 32)


@pytest.mark.parametrize("dtype, value_bytes", [("fp32", 4), ("fp16", 2)])
def test_search_counts_the_log_sum_exp_at_four_bytes(dtype, value_bytes):
    par = Parallelism(T, 2, 1, 8, B, "none", attention="flash")
    first = rank_memories(TINY, par, ranks=[0], dtype=dtype)[0]
    assert first.activations == pytest.approx(_first_rank(value_bytes))


def test_train_on_a_device_file_counts_the_log_sum_exp_at_four_bytes(tmp_path):
    """``archsim train`` on 8 TPU-v4-like chips (a device file of arrays: its fused attention runs in fp32; a
    ``gemm = "tiles"`` file, a GPU library's, refuses it as a catalog GPU does)."""
    chip = Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml"
    cluster = tmp_path / "eight.toml"
    cluster.write_text(f'[cluster]\nname = "eight"\n\n[[servers]]\ncount = 1\ngpus = 8\ndevice = "{chip.as_posix()}"\n')
    with pytest.warns(UserWarning, match="fp32 lanes"):  # its fp32 GEMMs on the arrays, said once
        result, _ = archsim.train(TINY, cluster=cluster, global_batch=16, micro_batch=B, tp=T, pp=2, dp=2,
                                  dtype="fp32", recompute="none", attention="flash")
    assert result.memory[0].activations == pytest.approx(_first_rank(4))
