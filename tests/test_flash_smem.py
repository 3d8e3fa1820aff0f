"""FlashAttention-2's shared-memory bytes: counted by hand from its kernels' source, priced at 128 bytes per SM
and clock, and the fused op's GEMM time the longer of its tensor and shared-memory times."""

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.devices.catalog import GPUS
from archsim.devices.device_file import load_device
from archsim.devices.kernel_ops import op_seconds
from archsim.devices.nonmatmul import smem_seconds
from archsim.training.fitted import A100_KERNELS
from archsim.training.flash_blocks import computed_blocks, flash_tiles
from archsim.training.flash_smem import block_smem_bytes, flash_smem_bytes
from archsim.training.layer_ops import flash_attention_ops

ROOT = Path(__file__).resolve().parents[1]


def test_head_dim_128_block_counted_by_hand():
    """Backward, ``Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2>`` (Br 64, Bc 128, 8 warps), fp16 bytes:
    S = QKᵀ on a 2 × 4 warp grid: Q (64 × 128 = 8,192 elements) read by 4 warps, K (16,384) by 2: 65,536
    elements; dP = dO·Vᵀ the same: 65,536; dV = Pᵀ·dO on 4 × 2 warps: Pᵀ (128 × 64 = 8,192) by 2, dOᵀ
    (8,192) by 4: 49,152; dK = dSᵀ·Q the same: 49,152; dQ = dS·K on 2 × 4: dS (8,192) by 4, Kᵀ (16,384) by
    2: 65,536; P and dS stored, 8,192 each; Q and dO landed, 8,192 each. 327,680 elements = 655,360 bytes.
    Forward, ``Flash_fwd_kernel_traits<128, 128, 64, 4>`` (Br 128, Bc 64, warps 4 × 1): S = QKᵀ: Q (16,384)
    read once, K (8,192) by 4: 49,152 elements; O = PV with P in registers: V (8,192) by 4: 32,768; K and
    V landed: 16,384. 98,304 elements = 196,608 bytes."""
    assert block_smem_bytes(128, flash_tiles(128)) == (196_608, 655_360)


def test_head_dim_64_backward_block_counted_by_hand():
    """``Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4>``: S and dP on 4 × 2 warps, Q/dO (8,192) by 2 and
    K/V (8,192) by 4: 49,152 elements each; dV, dK on 4 × 2: Pᵀ/dSᵀ (16,384) by 2, dOᵀ/Q (8,192) by 4:
    65,536 each; dQ on 4 × 2: dS (16,384) by 2, Kᵀ (8,192) by 4: 65,536; P and dS stored, 16,384 each; Q
    and dO landed, 8,192 each: 344,064 elements = 688,128 bytes."""
    assert block_smem_bytes(64, flash_tiles(64))[1] == 688_128


def test_head_dim_32_backward_keeps_v_in_registers():
    """``Flash_bwd_kernel_traits<32, 128, 128, 8, 4, 4, 4, Is_V_in_regs>``: dP's B operand V is read once into
    registers, not per block. By hand, elements: S on 4 × 2 warps, Q (4,096) by 2 and K (4,096) by 4: 24,576;
    dP, dO by 2 only: 8,192; dV, dK on 4 × 2: Pᵀ/dSᵀ (16,384) by 2, dOᵀ/Q (4,096) by 4: 49,152 each; dQ:
    dS (16,384) by 2, Kᵀ (4,096) by 4: 49,152; P and dS stored: 32,768; Q and dO landed: 8,192. 221,184
    elements = 442,368 bytes."""
    assert block_smem_bytes(32, flash_tiles(32))[1] == 442_368


@pytest.mark.parametrize("hd", [32, 64, 96, 128, 160, 256])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("window", [None, 300])
def test_longer_sequence_never_costs_less_per_block(hd, causal, window):
    """Every computed block costs the same bytes whatever the sequence, so the total never falls as s grows."""
    tiles = flash_tiles(hd)
    per_block = block_smem_bytes(hd, tiles)
    previous = (0, 0)
    for s in range(1, 1200, 37):
        total = flash_smem_bytes(s, hd, 1, tiles, window if causal else None, causal)
        blocks = (computed_blocks(s, *tiles.forward, window if causal else None, causal),
                  computed_blocks(s, *tiles.backward, window if causal else None, causal))
        assert total == (per_block[0] * blocks[0], per_block[1] * blocks[1])
        assert total[0] >= previous[0] and total[1] >= previous[1]
        previous = total


def test_a100_shared_memory_rate_from_its_datasheet():
    """108 SMs × 128 bytes × 1,410 MHz = 19.49 TB/s: 19.49 GB take a millisecond."""
    assert smem_seconds(108 * 128 * 1410e6 * 1e-3, GPUS["a100-80gb"]) == pytest.approx(1e-3)


def test_device_file_has_no_shared_memory_bound():
    """A device file describes no SMs: no shared-memory bound."""
    assert smem_seconds(1e12, load_device(ROOT / "configs" / "devices" / "tpu_v4_like.toml")) == 0.0


def test_fused_gemm_time_is_the_longer_of_tensor_and_shared_memory():
    """An H100 backward at s 8,192, hd 128: its bytes at 128 per SM-clock beat its GEMMs at mma.sync's ⅔,
    so the bound raises the op's seconds; a hundredth of the bytes, far below the tensor time, leaves them
    where they were without it."""
    device = GPUS["h100-80gb-sxm"]
    backward = flash_attention_ops(8192, 128, 32, 32, causal=False)[1]
    without = float(op_seconds([replace(backward, smem_bytes=0)], device, A100_KERNELS, "fp16")[0])
    priced = float(op_seconds([backward], device, A100_KERNELS, "fp16")[0])
    tiny = float(op_seconds([replace(backward, smem_bytes=backward.smem_bytes // 100)], device, A100_KERNELS,
                            "fp16")[0])
    assert priced > without
    assert tiny == pytest.approx(without)
