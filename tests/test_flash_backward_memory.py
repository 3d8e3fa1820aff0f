"""FlashAttention-2's backward buffers in a rank's peak memory, and the head dims its kernels run.

Dao-AILab/flash-attention v2.8.3 (commit 060c9188), ``csrc/flash_attn/flash_api.cpp``, ``mha_bwd``: per call it
allocates ``softmax_d`` (fp32, batch × heads × ``seqlen_q_rounded``, the query rows rounded up to 128),
``dq_accum`` (fp32, batch × ``seqlen_q_rounded`` × heads × ``head_size_rounded``) and, under grouped-query
attention only, ``dk_expanded`` and ``dv_expanded`` (batch × seqlen_k × heads × head dim each, q's dtype); all
freed once the layer's backward returns. ``head_size_rounded`` = ``round_multiple(head_size, head_size <= 128 ?
32 : 64)`` since commit ce212720 (v2.8.0); ``static_switch.h``'s ``HEADDIM_SWITCH`` runs kHeadDim 32, 64, 96,
128, 192, 256 (160 dropped by ce212720, 224 by 751c762c). The counts below are written out by hand from those
shapes; the memory tests read a rank's activations with and without them, through the public paths.
"""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.training.flash_blocks import flash_backward_buffers, flash_tiles, kernel_head_dim
from archsim.training.parallel import Parallelism
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig


def test_buffers_multi_head_by_hand():
    """s = 200 (rows rounded to 256), head dim 80 (kHeadDim 96), 2 sequences × 4 heads = 8 heads, no groups:
    softmax_d 8 · 256 = 2,048 and dq_accum 256 · 8 · 96 = 196,608 fp32 values; no expanded dK, dV."""
    assert flash_backward_buffers(200, 80, 8, 8) == (2_048 + 196_608, 0)


def test_buffers_grouped_query_by_hand():
    """The same with 2 K/V heads a sequence (4 over the micro-batch): the fp32 buffers are the query heads', and
    dk_expanded and dv_expanded add 200 · 8 · 80 = 128,000 elements each."""
    assert flash_backward_buffers(200, 80, 8, 4) == (2_048 + 196_608, 256_000)
    assert flash_backward_buffers(200, 80, 8, 1)[1] == 256_000  # multi-query: as large


def test_buffers_round_rows_to_128_not_to_the_tile():
    """``seqlen_q_rounded`` is a multiple of 128 whatever the kernel's Br: s = 128 keeps 128 rows, 129 takes 256."""
    assert flash_backward_buffers(128, 64, 1, 1)[0] == 128 + 128 * 64
    assert flash_backward_buffers(129, 64, 1, 1)[0] == 256 + 256 * 64


def test_buffers_refuse_groups_that_do_not_divide():
    with pytest.raises(InputError, match="kv_heads dividing heads"):
        flash_backward_buffers(200, 80, 8, 3)


# A tiny Llama-like model: 4 layers, hidden 256, 4 heads (head dim 64), s = 16, FFN 512; b = 2, TP 2, PP 2, 1F1B
# with 4 micro-batches, no recompute: the first rank holds 2 micro-batches of its 2 layers when its first backward
# starts, the moment a layer's backward runs beside the most held.
def _tiny(kv_heads: int) -> TransformerConfig:
    return TransformerConfig("tiny", "llama", 4, 256, 4, 100, 16, 512, kv_heads)


def _activations(c: TransformerConfig, attention: str, dtype: str = "fp16") -> float:
    par = Parallelism(2, 2, 1, 8, 2, "none", attention=attention)
    return rank_memories(c, par, ranks=[0], dtype=dtype)[0].activations


# One layer's buffers on one GPU of TP 2: 2 sequences × 2 query heads = 4 heads; rows 128 (s = 16 rounded);
# softmax_d 4 · 128 = 512 and dq_accum 128 · 4 · 64 = 32,768 fp32 values, 4 bytes each in every dtype.
FP32_BYTES = 4 * (512 + 32_768)
# Grouped (2 K/V heads, 1 a rank): dk_expanded and dv_expanded, 2 · 16 · 4 · 64 = 8,192 elements, q's dtype.
EXPANDED = 2 * 16 * 4 * 64


@pytest.mark.parametrize("dtype, element", [("fp16", 2), ("bf16", 2), ("fp32", 4)])
@pytest.mark.parametrize("kv, expanded", [(4, 0), (2, EXPANDED)])
def test_rank_peak_is_what_it_holds_plus_one_layers_buffers(dtype, element, kv, expanded):
    """Against a hand count of what the rank holds: 2 micro-batches × 2 layers of a Llama layer's kept bytes (no
    hidden dropout: 8·s·b·h, plus Q, K, V, the projection's input and SwiGLU's three tensors per rank, 2 bytes an
    element in fp16 and bf16, 4 in fp32) and the log-sum-exp (4 bytes a query row and head in every dtype); the
    embedding keeps no mask. Then one layer's buffers: the fp32 ones (4 bytes in every dtype) and, grouped, the
    expanded dK and dV in the training dtype. Multi-head (4 K/V heads) has none of those."""
    s, b, h, t = 16, 2, 256, 2
    kv_rank = max(kv // t, 1)
    split = (2 + 2 * kv_rank) * 64 + 2 * 64 + 3 * 512 // t  # q, k, v; the projection's input; gate, up, product
    layer = element * (4 * s * b * h + s * b * split) + 4 * s * b * 4 / t
    assert _activations(_tiny(kv), "flash", dtype) == pytest.approx(2 * 2 * layer + FP32_BYTES + element * expanded)


def test_standard_attention_has_no_flash_buffers():
    """``--attention standard`` under selective recompute keeps its own working set (the attention core), no
    FlashAttention buffer: 2 bytes a score (no attention dropout in a Llama), a · s² · b / t scores."""
    c = _tiny(2)
    held = rank_memories(c, Parallelism(2, 2, 1, 8, 2, "none", attention="standard"), ranks=[0])[0].activations
    selective = rank_memories(c, Parallelism(2, 2, 1, 8, 2, "selective", attention="standard"),
                              ranks=[0])[0].activations
    assert held - selective == pytest.approx(2 * 2 * 2 * 4 * 16 * 16 * 2 / 2 - 2 * 4 * 16 * 16 * 2 / 2)


@pytest.mark.parametrize("head_dim, kernel", [(129, 192), (144, 192), (160, 192), (161, 192), (192, 192),
                                              (193, 256), (200, 256), (224, 256), (225, 256), (256, 256),
                                              (128, 128), (97, 128), (65, 96), (33, 64), (1, 32)])
def test_kernel_head_dim_by_v2_8_3s_rule(head_dim, kernel):
    """``round_multiple(head_size, head_size <= 128 ? 32 : 64)``, by hand: 129–160 run the 192 kernel (the 160
    one is gone), 193–224 the 256 one (no 224)."""
    assert kernel_head_dim(head_dim) == kernel


@pytest.mark.parametrize("head_dim", [129, 136, 160, 176, 192])
def test_tiles_of_head_dims_129_to_192_are_the_192_kernels(head_dim):
    """v2.8.3's ``run_mha_fwd_hdim192``: 128 × 64 (8 warps), 64 × 64 with dropout; ``run_mha_bwd_hdim192``:
    64 × 64 (≥ 136 KB of shared memory, A100 and H100)."""
    assert flash_tiles(head_dim).forward == (128, 64)
    assert flash_tiles(head_dim, dropout=True).forward == (64, 64)
    assert flash_tiles(head_dim).backward == (64, 64)


@pytest.mark.parametrize("head_dim", [193, 208, 224, 256])
def test_tiles_of_head_dims_193_to_256_are_the_256_kernels(head_dim):
    """v2.8.3's ``run_mha_fwd_hdim256`` on an A100 (≥ 2·256·(128 + 128) bytes a block, < 4·256·(64 + 128) an
    SM): 128 × 64 with and without dropout; ``run_mha_bwd_hdim256``: 64 × 64."""
    assert flash_tiles(head_dim).forward == (128, 64) == flash_tiles(head_dim, dropout=True).forward
    assert flash_tiles(head_dim).backward == (64, 64)


@pytest.mark.parametrize("head_dim", [0, 257, -8])
def test_head_dims_past_256_refused(head_dim):
    with pytest.raises(InputError, match="head dims 1 to 256"):
        kernel_head_dim(head_dim)
