"""Shared-memory bytes FlashAttention-2's kernels move on chip, per computed block and in all.

Why: the backward's five GEMMs read every operand from shared memory through ``ldmatrix`` (its P and dS
are written there and read back), so on chips whose tensor rate outgrows the SM's 128 bytes per clock its
GEMMs can wait on shared memory rather than on the tensor cores (priced by
:func:`archsim.devices.nonmatmul.smem_seconds`).

Counted from the kernels' source (Dao-AILab/flash-attention v2.8.3, commit 060c9188): ``kernel_traits.h``
tiles each GEMM over its warps as an Wm × Wn grid (``TiledMMA`` ``Layout<Shape<Wm, Wn, 1>>``), and
``utils.h`` ``gemm`` copies each warp's rows of A and columns of B from shared memory for every k-slice, so an
M × N × K GEMM reads 2·K·(M·Wn + N·Wm) bytes of fp16/bf16 (A read by each of the Wn warps of its rows, B by
each of the Wm of its columns); ``gemm_rs`` takes A from registers (B only). Per Br × Bc block of a kHeadDim d:

* forward (``flash_fwd_kernel.h`` ``compute_attn_1rowblock``; ``Flash_fwd_kernel_traits``: W warps as
  W × 1): S = QKᵀ (``gemm``, Br × Bc × d) and O = PV (``gemm_rs``: P stays in registers, Br × d × Bc), and
  K's and V's tiles land in shared memory by ``cp.async`` (2·Bc·d elements); Q's tile is loaded once per
  query block (not per block: left out).
* backward (``flash_bwd_kernel.h`` ``compute_dq_dk_dv_1colblock``; ``Flash_bwd_kernel_traits`` W warps and
  the atom layouts Am (S, dP), An (dK, dV), Aq (dQ) as Am × W/Am etc.): S = QKᵀ and dP = dO·Vᵀ (Br × Bc ×
  d each; V from registers when ``Is_V_in_regs``), dV = Pᵀ·dO and dK = dSᵀ·Q (Bc × d × Br), dQ = dS·K (Br ×
  d × Bc), P and dS stored (Br·Bc each), Q's and dO's tiles landed by ``cp.async`` (Br·d each); K and V
  once per key block (left out). dQ goes to global memory by ``atomicAdd`` from registers.

Launch choices are the A100/H100 branch (≥ 144 KB of shared memory per block) without dropout, as
:func:`~archsim.training.flash_blocks.flash_tiles`. Bytes, fp16/bf16 (2 per element).
"""

from __future__ import annotations

from archsim.training.flash_blocks import FlashTiles, computed_blocks, kernel_head_dim

# kHeadDim → (forward warps, backward warps, (Am, An, Aq), backward Is_V_in_regs): flash_fwd/bwd_launch_template.h
_WARPS: dict[int, tuple[int, int, tuple[int, int, int], bool]] = {
    32: (4, 8, (4, 4, 4), True),
    64: (4, 8, (4, 4, 4), False),
    96: (4, 8, (2, 4, 4), True),
    128: (4, 8, (2, 4, 2), False),
    192: (8, 8, (4, 2, 2), False),
    256: (8, 8, (4, 2, 2), False),
}


def _gemm_bytes(m: int, n: int, k: int, wm: int, wn: int, a_in_smem: bool = True, b_in_smem: bool = True) -> int:
    """Bytes an M × N × K ``gemm`` reads from shared memory over a Wm × Wn warp grid (module docstring)."""
    return 2 * k * (m * wn * a_in_smem + n * wm * b_in_smem)


def block_smem_bytes(head_dim: int, tiles: FlashTiles) -> tuple[int, int]:
    """(forward, backward) shared-memory bytes of one computed block of each kernel, read and written, at
    ``head_dim`` run as its kHeadDim (module docstring's count)."""
    d = kernel_head_dim(head_dim)
    fwd_warps, warps, (am, an, aq), v_in_regs = _WARPS[d]
    (fbr, fbc), (br, bc) = tiles.forward, tiles.backward
    forward = (_gemm_bytes(fbr, fbc, d, fwd_warps, 1) + _gemm_bytes(fbr, d, fbc, fwd_warps, 1, a_in_smem=False)
               + 2 * 2 * fbc * d)
    backward = (_gemm_bytes(br, bc, d, am, warps // am)
                + _gemm_bytes(br, bc, d, am, warps // am, b_in_smem=not v_in_regs)
                + 2 * _gemm_bytes(bc, d, br, an, warps // an)
                + _gemm_bytes(br, d, bc, aq, warps // aq)
                + 2 * 2 * br * bc + 2 * 2 * br * d)
    return forward, backward


def flash_smem_bytes(s: int, hd: int, heads: int, tiles: FlashTiles, window: int | None = None,
                     causal: bool = True) -> tuple[int, int]:
    """(forward, backward) shared-memory bytes over ``heads`` heads: :func:`block_smem_bytes` times each
    kernel's :func:`~archsim.training.flash_blocks.computed_blocks` (``window``, ``causal`` as there)."""
    forward, backward = block_smem_bytes(hd, tiles)
    return (heads * forward * computed_blocks(s, *tiles.forward, window, causal),
            heads * backward * computed_blocks(s, *tiles.backward, window, causal))


__all__ = ["block_smem_bytes", "flash_smem_bytes"]
