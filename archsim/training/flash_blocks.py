"""The key blocks FlashAttention-2's kernel computes, and the tiles it computes them in.

Causal attention: FlashAttention-2 skips every key block wholly above the diagonal and masks only the
blocks the diagonal crosses (Dao 2023, "FlashAttention-2", §3.1.1 "Causal masking": about half the blocks).
Its forward kernel (Dao-AILab/flash-attention, ``csrc/flash_attn/src/flash_fwd_kernel.h``,
``compute_attn_1rowblock``) runs query block i (rows i·Br … min((i+1)·Br, s) − 1) over key blocks
j < min(⌈s/Bc⌉, ⌈((i+1)·Br + window_right)/Bc⌉) from j ≥ max(0, ⌊(i·Br − window_left)/Bc⌋) under a
local window; the backward (``flash_bwd_kernel.h``) loops each key block over the query blocks that
meet the same condition. So block (i, j) is computed iff j·Bc ≤ the block's last row and, under a
window of w keys (0 ≤ q − k < w: window_left = w − 1), (j + 1)·Bc − 1 ≥ i·Br − (w − 1). A partly masked
block costs a whole one, and so does a ragged last block: the kernel zero-fills the rows and columns past
s as it loads them and runs its MMAs over the full Br × Bc tile (``Is_even_MN`` only drops the bounds
checks), so every computed block counts Br·Bc query-key products.

Tiles Br × Bc (``kBlockM`` × ``kBlockN``) are the kernel's on A100 and H100 (sm80 and sm90 alike, ≥ 144 KB
of shared memory per block), by head dim rounded up to the kernel's ``kHeadDim`` 32, 64, 96, 128, 192 or 256
(:func:`kernel_head_dim`; ``flash_fwd_launch_template.h`` ``run_mha_fwd_hdim*``, ``flash_bwd_launch_template.h``
``run_mha_bwd_hdim*``, ``static_switch.h`` ``HEADDIM_SWITCH``, release v2.8.3, commit 060c9188, the newest
FlashAttention-2 release): forward 128 × 128 at head dim 64 (128 × 64 with dropout), 128 × 64 at 128 (128 × 32
with dropout); backward 128 × 128 at 64, 64 × 128 at 128. Head dims 129–160 run the 192 kernel since commit
ce212720 (v2.8.0, "Don't specialize for hdim 160 anymore"), 193–224 the 256 one since 751c762c (v2.6.2; until
2026-12-03 archsim gave them the 160 and 224 kernels' tiles of commits c1f0be2f and 37e32feb).

This counts the work the kernel does, for its time and energy; model FLOPs (MFU, TFLOP/s per GPU:
:mod:`archsim.training.throughput`) keep the papers' whole-square convention.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.choices.devices import ELEMENT_BYTES
from archsim.errors import InputError
from archsim.lowering import Gemm, TrainingOp
from archsim.training.kernel_bytes import dtype_elements
from archsim.workload.transformer import TransformerConfig, layer_widths

# kHeadDim (kernel_head_dim) → (forward Br × Bc without dropout, with dropout, backward Br × Bc)
_TILES: dict[int, tuple[tuple[int, int], tuple[int, int], tuple[int, int]]] = {
    32: ((128, 128), (128, 128), (128, 128)),
    64: ((128, 128), (128, 64), (128, 128)),
    96: ((128, 64), (128, 64), (64, 128)),
    128: ((128, 64), (128, 32), (64, 128)),
    192: ((128, 64), (64, 64), (64, 64)),
    256: ((128, 64), (128, 64), (64, 64)),  # A100's forward; H100 runs 64 × 64 (two CTAs per SM)
}


@dataclass(frozen=True)
class FlashTiles:
    """FlashAttention-2's query × key block, Br × Bc (rows, keys), of its forward and backward kernels."""

    forward: tuple[int, int]
    backward: tuple[int, int]


def flash_tiles(head_dim: int, dropout: bool = False) -> FlashTiles:
    """The A100/H100 kernel's tiles for ``head_dim`` (run as :func:`kernel_head_dim`, as the kernel
    dispatches), with or without attention dropout (the forward's smaller block with it)."""
    plain, dropped, backward = _TILES[kernel_head_dim(head_dim)]
    return FlashTiles(dropped if dropout else plain, backward)


def computed_blocks(s: int, br: int, bc: int, window: int | None = None, causal: bool = True) -> int:
    """Br × Bc blocks the kernel computes for s queries and s keys (module docstring): every block of the
    ⌈s/Br⌉ × ⌈s/Bc⌉ grid when not ``causal``; causal, the key blocks j with j·Bc ≤ each query block's last
    row, from the block holding its first row's first key in the ``window`` (keys 0 ≤ q − k < window)."""
    if min(s, br, bc) <= 0 or (window is not None and window <= 0):
        raise InputError(f"blocks need a positive length, tiles and window, got s={s}, {br} × {bc}, "
                         f"window {window}", field="seq")
    rows = -(-s // br)
    if not causal:
        return rows * -(-s // bc)
    first = np.arange(rows, dtype=np.int64) * br
    last = np.minimum(first + br, s) - 1
    stop = last // bc + 1
    start = np.zeros(rows, dtype=np.int64) if window is None else np.maximum(0, (first - (window - 1)) // bc)
    return int((stop - start).sum())


def flash_gemms(s: int, hd: int, heads: int, tile: tuple[int, int], window: int | None = None,
                causal: bool = True) -> tuple[Gemm, Gemm]:
    """The kernel's scores-shaped (S = QKᵀ) and context-shaped (O = PV) GEMMs over ``heads`` heads, the
    backward's five alike (Br·Bc·hd products a block each): its :func:`computed_blocks` stacked, (min(Br, Bc) ·
    blocks) × hd × max(Br, Bc) for both, so a GPU's tile model tiles them as one grid and an array streams the
    long side; ``window`` as there. Not ``causal`` the blocks are the whole grid, priced the same way: until
    2026-12-03 it was the s × s square as the unfused GEMMs' shapes, whose tile quantization differs from the
    blocks', so at s just past a tile (s = 129, head dim 128) the causal kernel cost more than the whole square."""
    br, bc = tile
    blocks = Gemm(min(br, bc) * computed_blocks(s, br, bc, window, causal), hd, max(br, bc), heads)
    return blocks, blocks


# Attention dropout's mask, drawn in the kernel (Dao-AILab/flash-attention, commit 0251105a,
# csrc/flash_attn/src/philox.cuh and dropout.h): one ``philox`` call gives 4 × 32 random bits, one byte per element
# of P, so 16 elements. ``philox`` runs 7 rounds (6 in its loop and a last one), not Philox4x32-10's 10 (Salmon et
# al. 2011, "Parallel random numbers: as easy as 1, 2, 3", §4.1); a round is two ``mul.wide.u32`` (one IMAD.WIDE.U32
# each in nvcc 13.0's sm_90 code) and two three-way xors, ``hi ^ ctr ^ key`` (one LOP3 each). The key bumps
# depend on the seed alone, the same in every thread (the uniform datapath, not the lanes); the counter's column
# one add a call.
PHILOX_ROUNDS = 7
PHILOX_CALL_OPS = PHILOX_ROUNDS * (2 + 2) + 1  # integer instructions a call: 29
PHILOX_BYTES = 16  # elements of P one call covers
# Per 16 elements, beside the call. Forward (``apply_dropout`` on fp16/bf16 P): each byte widened to 16 bits (16),
# then per 32-bit pair one ``set.le.u32.f16x2`` against the threshold and one AND (8 + 8). Backward (fp32 S,
# ``encode_dropout_in_sign_bit``): each byte widened (16), compared (16) and P or −P selected (16).
DROPOUT_FORWARD_MASK_OPS = 16 + 8 + 8
DROPOUT_BACKWARD_MASK_OPS = 16 + 16 + 16
# Backward, per element: dS = P ∘ (dP − D) becomes ``p * (p >= 0 ? dp - d : d)`` (flash_bwd_kernel.h
# ``pointwise_mult``): a sign test and a select more.
DROPOUT_BACKWARD_ELEMENT_OPS = 2


def dropout_int_ops(elements: int, backward: bool) -> int:
    """32-bit integer instructions attention dropout adds to a kernel computing ``elements`` elements of P
    (constants above): ⌈elements / 16⌉ Philox calls and their masks; the backward draws the same mask again and
    tests each element's sign in dS."""
    calls = -(-elements // PHILOX_BYTES)
    if backward:
        return calls * (PHILOX_CALL_OPS + DROPOUT_BACKWARD_MASK_OPS) + DROPOUT_BACKWARD_ELEMENT_OPS * elements
    return calls * (PHILOX_CALL_OPS + DROPOUT_FORWARD_MASK_OPS)


def dropout_int_mults(elements: int) -> int:
    """Of :func:`dropout_int_ops` (either way), the 32-bit multiplies: each Philox call's two ``mul.wide.u32`` a
    round; the rest (xors, the counter's add, the masks' widening, compares, ANDs and selects) are adds or logic."""
    return -(-elements // PHILOX_BYTES) * PHILOX_ROUNDS * 2


@dataclass(frozen=True)
class NonMatmul:
    """One kernel's non-matmul work, counted from FlashAttention-2's Algorithms 1 and 2 (Dao 2023, §3.1):
    ``exps`` special-function results (exp, log, reciprocal), ``lane_ops`` FP32 operations (an FMA one) and
    ``int_ops`` 32-bit integer instructions (attention dropout's, :func:`dropout_int_ops`), ``int_mults`` of them
    multiplies (:func:`dropout_int_mults`)."""

    exps: int
    lane_ops: int
    int_ops: int = 0
    int_mults: int = 0


def flash_nonmatmul(s: int, hd: int, heads: int, tiles: FlashTiles, window: int | None = None,
                    causal: bool = True, dropout: bool = False) -> tuple[NonMatmul, NonMatmul]:
    """(forward, backward) non-matmul work over ``heads`` heads, every computed block counting its whole
    Br × Bc tile (as its GEMMs do, :func:`computed_blocks`). Forward (Algorithm 1), per block: line 9's
    P̃ = exp(S − m) one exponential per element and e^(m_old − m) one per row, its rowmax, S − m (one FMA with
    the softmax scale) and rowsum 3 FP32 operations per element, line 10's rescale of O hd per row and ℓ's
    update one; per query row once, lines 12–13: the reciprocal of ℓ and log ℓ (2 special functions), O · ℓ⁻¹
    and m + log ℓ (hd + 1). Backward (Algorithm 2), per block element: line 11's P = exp(S − L) one
    exponential and one FMA (scale, subtract), line 14's dS = P ∘ (dP − D) a subtract and a multiply. Left
    out: type conversions, masking, index arithmetic and the separate D = rowsum(dO ∘ O) kernel (line 4):
    a lower bound (that kernel's bytes: :func:`flash_backward_kernels`). With ``dropout`` each way also draws the
    mask over its computed blocks (:func:`dropout_int_ops`, per head)."""
    (fbr, fbc), (bbr, bbc) = tiles.forward, tiles.backward
    blocks = computed_blocks(s, fbr, fbc, window, causal)
    elements, block_rows, rows = blocks * fbr * fbc, blocks * fbr, -(-s // fbr) * fbr
    forward = NonMatmul(heads * (elements + block_rows + 2 * rows),
                        heads * (3 * elements + block_rows * (hd + 1) + rows * (hd + 1)))
    back = computed_blocks(s, bbr, bbc, window, causal) * bbr * bbc
    if not dropout:
        return forward, NonMatmul(heads * back, heads * 3 * back)
    forward = NonMatmul(forward.exps, forward.lane_ops, heads * dropout_int_ops(elements, backward=False),
                        heads * dropout_int_mults(elements))
    return forward, NonMatmul(heads * back, heads * 3 * back, heads * dropout_int_ops(back, backward=True),
                              heads * dropout_int_mults(back))


def kernel_head_dim(head_dim: int) -> int:
    """The head dim the kernel runs (``kHeadDim``, and dQaccum's ``head_size_rounded``): ``head_dim`` rounded
    up to 32 up to 128, to 64 above (v2.8.3's ``flash_api.cpp`` ``mha_fwd``/``mha_bwd``:
    ``round_multiple(head_size, head_size <= 128 ? 32 : 64)``; ``HEADDIM_SWITCH`` alike: 32, 64, 96, 128, 192, 256)."""
    if not 0 < head_dim <= 256:
        raise InputError(f"FlashAttention-2 runs head dims 1 to 256, got {head_dim}", field="head_dim")
    step = 32 if head_dim <= 128 else 64
    return -(-head_dim // step) * step


def dq_atomics(s: int, hd: int, heads: int, tile: tuple[int, int], window: int | None = None,
               causal: bool = True) -> int:
    """FP32 values the backward kernel adds into dQaccum with ``atomicAdd`` over ``heads`` heads: each
    computed block its Br × kHeadDim dQ partial (``flash_bwd_kernel.h`` ``compute_dq_dk_dv_1colblock``,
    ``Seq_parallel``: one ``atomicAdd`` per element of ``acc_dq``). They resolve in L2, not HBM."""
    br, bc = tile
    return computed_blocks(s, br, bc, window, causal) * br * kernel_head_dim(hd) * heads


def dq_accum_values(s: int, hd: int, heads: int, tile: tuple[int, int]) -> int:
    """FP32 values of dQaccum over ``heads`` heads: ⌈s/Br⌉·Br rows × kHeadDim, the rows the preprocessing
    kernel zeroes and the conversion kernel reads whole (both run a Br × kHeadDim tile per query block)."""
    return -(-s // tile[0]) * tile[0] * kernel_head_dim(hd) * heads


def flash_backward_kernels(s: int, hd: int, heads: int, dtype: str = "fp16") -> tuple[TrainingOp, TrainingOp]:
    """The two memory-bound kernels FlashAttention-2's backward launches around its main one
    (``flash_bwd_launch_template.h`` ``run_flash_bwd_seqk_parallel``), over ``heads`` heads, in elements of
    ``dtype``: before it ``flash_bwd_dot_do_o_kernel`` (``flash_bwd_preprocess_kernel.h``
    ``compute_dot_do_o``) reads dO and O, writes D = rowsum(dO ∘ O) in fp32 for each of ⌈s/Br⌉·Br rows and
    zeroes dQaccum in fp32 (:func:`dq_accum_values`); after it ``flash_bwd_convert_dq_kernel`` (``convert_dQ``)
    reads dQaccum and writes dQ. One launch each."""
    tile = flash_tiles(hd).backward
    q, fp32 = s * hd * heads, dtype_elements(4, dtype)
    accum = fp32 * dq_accum_values(s, hd, heads, tile)
    rows = -(-s // tile[0]) * tile[0] * heads
    dot = TrainingOp("flash_attention.dot_do_o", "D", (), vector_elements=int(2 * q + fp32 * rows + accum),
                     out_bytes=int(4 * rows))
    convert = TrainingOp("flash_attention.convert_dq", "D", (), vector_elements=int(accum + q),
                         out_bytes=q * ELEMENT_BYTES[dtype])
    return dot, convert


def flash_gqa_sums(s: int, hd: int, heads: int, kv_heads: int, dtype: str = "fp16") -> tuple[TrainingOp, ...]:
    """The reductions FlashAttention-2's backward runs after its kernels under grouped-query or multi-query
    attention (``kv_heads`` < ``heads``, both over the micro-batch): ``flash_api.cpp`` ``mha_bwd`` has the main
    kernel write dK and dV per query head into ``dk_expanded``/``dv_expanded`` (s × ``heads`` × hd each, the
    main op's bytes: :func:`~archsim.training.layer_ops.flash_attention_ops`), then sums each group into dK
    and dV with one ``at::sum_out`` apiece: two memory-bound ops, each reading s·heads·hd and writing
    s·kv_heads·hd elements of ``dtype`` (one PyTorch reduction kernel per call, an assumption). None when
    ``kv_heads`` == ``heads`` (the kernel writes dK and dV in place)."""
    _check_groups(s, hd, heads, kv_heads)
    if kv_heads == heads:
        return ()
    expanded, summed = s * hd * heads, s * hd * kv_heads
    return tuple(TrainingOp(f"flash_attention.sum_{grad}", "D", (), vector_elements=expanded + summed,
                            out_bytes=summed * ELEMENT_BYTES[dtype]) for grad in ("dk", "dv"))


def flash_backward_buffers(s: int, hd: int, heads: int, kv_heads: int) -> tuple[int, int]:
    """(fp32 values, elements of the training dtype) of the buffers FlashAttention-2's backward allocates for
    one call over ``heads`` query heads sharing ``kv_heads`` (both over the micro-batch), alive while it runs:
    ``flash_api.cpp`` ``mha_bwd`` (v2.8.3) allocates ``softmax_d`` (D, fp32, each query row and head, the rows
    rounded up to 128: ``seqlen_q_rounded``), ``dq_accum`` (fp32, those rows × :func:`kernel_head_dim`; its
    deterministic form, ⌈SMs / (batch·heads)⌉ copies, not modelled) and, when ``kv_heads`` < ``heads``,
    ``dk_expanded`` and ``dv_expanded`` (s × ``heads`` × hd each, :func:`flash_gqa_sums`). The call frees them
    but ``softmax_d``, which it returns and ``FlashAttnFunc.backward`` drops (``flash_attn_interface.py``)."""
    _check_groups(s, hd, heads, kv_heads)
    rows = -(-s // 128) * 128 * heads
    return rows + rows * kernel_head_dim(hd), 0 if kv_heads == heads else 2 * s * heads * hd


def flash_backward_bytes(c: TransformerConfig, micro_batch: int, tp: int) -> tuple[float, float]:
    """Bytes of :func:`flash_backward_buffers` for one layer of ``c`` on one GPU of ``tp`` (its query and K/V heads,
    ``micro_batch`` sequences), the training dtype's at fp16's 2 bytes, and of them the fp32 ones (4 bytes in every
    dtype): a layer's backward working set (:func:`~archsim.training.memory.stage_terms`)."""
    w = layer_widths(c, tp)
    fp32, expanded = flash_backward_buffers(c.seq, w.head_dim, micro_batch * w.heads, micro_batch * w.kv_heads)
    return 4 * fp32 + 2 * expanded, 4 * fp32


def _check_groups(s: int, hd: int, heads: int, kv_heads: int) -> None:
    if min(s, hd, heads, kv_heads) <= 0 or heads % kv_heads:
        raise InputError(f"grouped-query attention needs positive sizes and kv_heads dividing heads, got s={s}, "
                         f"head dim {hd}, {heads} heads, {kv_heads} kv heads", field="kv_heads")


__all__ = ["DROPOUT_BACKWARD_ELEMENT_OPS", "DROPOUT_BACKWARD_MASK_OPS", "DROPOUT_FORWARD_MASK_OPS", "PHILOX_BYTES",
           "PHILOX_CALL_OPS", "PHILOX_ROUNDS", "FlashTiles", "NonMatmul", "computed_blocks", "dq_accum_values", "dq_atomics",
           "dropout_int_mults", "dropout_int_ops", "flash_backward_buffers", "flash_backward_bytes", "flash_backward_kernels", "flash_gemms",
           "flash_gqa_sums", "flash_nonmatmul", "flash_tiles", "kernel_head_dim"]
