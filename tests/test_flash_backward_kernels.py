"""FlashAttention-2's backward beside its main kernel: the D = rowsum(dO ∘ O) kernel (which zeroes dQ's fp32
accumulator), dQ's conversion kernel, and the dQaccum atomics, counted by hand from the kernel's source
(``flash_bwd_launch_template.h``, ``flash_bwd_preprocess_kernel.h``, ``flash_bwd_kernel.h``)."""

import pytest

from archsim.devices.device import catalog_device
from archsim.devices.kernel_ops import op_seconds
from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.fitted import A100_KERNELS
from archsim.training.flash_blocks import (
    dq_accum_values,
    dq_atomics,
    flash_backward_kernels,
    flash_gemms,
    flash_gqa_sums,
    flash_nonmatmul,
    flash_tiles,
    kernel_head_dim,
)
from archsim.training.layer_ops import block_work, flash_attention_ops
from archsim.workload.transformer import TransformerConfig


def test_causal_256_at_head_dim_64_counted_by_hand():
    # backward tile 128 × 128: query block 0 meets key block 0, query block 1 key blocks 0 and 1 — 3 blocks,
    # each adding its 128 × 64 dQ partial into dQaccum: 3 · 8,192 = 24,576 fp32 atomics per head; the whole
    # 2 × 2 grid not causal, 32,768.
    assert dq_atomics(256, 64, 2, (128, 128)) == 2 * 24_576
    assert dq_atomics(256, 64, 2, (128, 128), causal=False) == 2 * 32_768
    # Two heads, fp16. The D kernel reads dO and O (2 · 256 · 64 · 2 heads · 2 B = 131,072 B), writes D in fp32
    # for 2 · 256 rows (2,048 B) and zeroes dQaccum, 256 · 64 · 2 fp32 (131,072 B): 264,192 B = 132,096
    # fp16 elements. The conversion reads dQaccum (131,072 B) and writes dQ (65,536 B): 98,304 elements.
    dot, convert = flash_backward_kernels(256, 64, 2, "fp16")
    assert (dot.vector_elements, convert.vector_elements) == (132_096, 98_304)
    assert (dot.out_bytes, convert.out_bytes) == (2_048, 65_536)
    assert dot.gemms == () and convert.gemms == () and not (dot.fused or convert.fused)
    # The main kernel: reads Q, K, V, dO (4 · 32,768 · 2 B), the log-sum-exp and D (2 · 512 · 4 B), reads and
    # writes dQaccum once (2 · 131,072 B), writes dK, dV (2 · 32,768 · 2 B): 659,456 B = 329,728 elements.
    _, backward = flash_attention_ops(256, 64, 2, 2)
    assert backward.vector_elements == 329_728


def test_a_ragged_length_pads_the_accumulator_to_whole_tiles():
    # head dim 80 runs the kernel's 96 (backward 64 × 128): s = 200 needs ⌈200/64⌉ = 4 query blocks of 64 rows
    # and the D kernel zeroes, the conversion reads, 256 rows × 96 fp32 per head.
    assert kernel_head_dim(80) == 96 and kernel_head_dim(256) == 256
    assert dq_accum_values(200, 80, 3, (64, 128)) == 3 * 256 * 96
    dot, convert = flash_backward_kernels(200, 80, 3, "bf16")
    q = 200 * 80 * 3
    assert convert.vector_elements == 2 * 3 * 256 * 96 + q  # fp32 is two bf16 elements
    assert dot.vector_elements == 2 * q + 2 * 3 * 256 + 2 * 3 * 256 * 96
    with pytest.raises(InputError):
        flash_backward_kernels(200, 300, 3)


def test_atomics_grow_with_the_computed_blocks_and_a_window_cuts_them():
    full = dq_atomics(4096, 128, 1, (64, 128), causal=False)
    causal = dq_atomics(4096, 128, 1, (64, 128))
    windowed = dq_atomics(4096, 128, 1, (64, 128), window=512)
    assert windowed < causal < full and full == (4096 // 64) * (4096 // 128) * 64 * 128
    assert dq_atomics(4096, 128, 8, (64, 128)) == 8 * causal


def test_the_layer_runs_the_three_backward_kernels_in_order():
    c = TransformerConfig("llama-like", "llama", layers=2, hidden=1024, heads=8, vocab=32000, seq=512, ffn=2816,
                          kv_heads=8, tied_embeddings=False)
    names = [op.layer for op in block_work(c, 2, attention="flash").backward if op.layer.startswith("flash")]
    assert names == ["flash_attention.dot_do_o", "flash_attention", "flash_attention.convert_dq"]
    standard = [op.layer for op in block_work(c, 2).backward]
    assert not any(name.startswith("flash") for name in standard)


def test_the_two_kernels_stream_their_bytes_with_one_launch_each():
    a100 = catalog_device("a100-80gb")
    ops = flash_backward_kernels(2048, 128, 16, "fp16")
    seconds = op_seconds(ops, a100, A100_KERNELS)
    for op, t in zip(ops, seconds, strict=True):
        expected = stream_seconds(op.vector_elements * 2, a100.hbm_bytes_per_s, A100_KERNELS)
        assert t == pytest.approx(float(expected))
    # same tokens × heads, same bytes and time: they do not grow with s² as the main kernel does
    same = op_seconds(flash_backward_kernels(512, 128, 64, "fp16"), a100, A100_KERNELS)
    assert same == pytest.approx(seconds)


def test_grouped_query_backward_writes_per_query_head_and_sums_after_counted_by_hand():
    # flash_api.cpp mha_bwd with num_heads_k != num_heads: the main kernel writes dk_expanded, dv_expanded
    # (s × heads × hd each), then one at::sum_out apiece reduces each group of heads / kv_heads into dK, dV.
    # s = 256, head dim 64, 8 query heads, 2 kv heads, fp16: Q = dO = dK, dV as written = 256 · 64 · 8 = 131,072
    # elements; K = V = dK = dV summed = 256 · 64 · 2 = 32,768.
    # Main kernel: reads Q, dO (262,144), K, V (65,536), the log-sum-exp and D (2 · 2,048 rows · 4 B = 8,192
    # elements), dQaccum read and written (2 · 2 · 128 · 64 · 8 fp32 = 524,288 elements), writes dK and dV per
    # query head (262,144): 1,122,304 elements; 196,608 = 2 · (131,072 − 32,768) more than writing them at kv heads.
    _, backward = flash_attention_ops(256, 64, 8, 2)
    assert backward.vector_elements == 1_122_304
    assert backward.out_bytes == 2 * (131_072 + 2 * 131_072)  # dQ and dK, dV per query head, 2 B each
    # Each sum reads 131,072 and writes 32,768 elements (163,840 · 2 B = 327,680 B) and produces 65,536 B.
    sums = flash_gqa_sums(256, 64, 8, 2, "fp16")
    assert [op.layer for op in sums] == ["flash_attention.sum_dk", "flash_attention.sum_dv"]
    assert all(op.kind == "D" and op.gemms == () and not op.fused for op in sums)
    assert [(op.vector_elements, op.out_bytes) for op in sums] == [(163_840, 65_536)] * 2
    # timed as every memory-bound op: bytes at the fitted fraction of HBM bandwidth, one launch each
    a100 = catalog_device("a100-80gb")
    by_hand = 327_680 / (a100.hbm_bytes_per_s * A100_KERNELS.memory) + A100_KERNELS.launch_s
    assert op_seconds(sums, a100, A100_KERNELS) == pytest.approx([by_hand, by_hand])
    # multi-query attention (one kv head): the sums read the same and write an eighth
    assert [op.vector_elements for op in flash_gqa_sums(256, 64, 8, 1)] == [131_072 + 16_384] * 2
    for kv in (3, 0, 16):
        with pytest.raises(InputError):
            flash_gqa_sums(256, 64, 8, kv)


def _llama_like(kv_heads: int) -> TransformerConfig:
    return TransformerConfig("llama-like", "llama", layers=2, hidden=1024, heads=8, vocab=32000, seq=512, ffn=2816,
                             kv_heads=kv_heads, tied_embeddings=False)


def test_multi_head_attention_runs_the_same_three_kernels_as_before():
    # kv_heads == heads: no sums, and the main kernel's bytes are the ones counted before (dK, dV at kv heads).
    # Micro-batch 2: s = 512, head dim 128 (backward tile 64 × 128), 16 heads; Q = K = 512 · 128 · 16 =
    # 1,048,576 elements; log-sum-exp and D 2 · 512 · 16 = 16,384 each; dQaccum 512 · 128 · 16 fp32 = 2,097,152.
    assert flash_gqa_sums(512, 128, 16, 16) == ()
    q = 512 * 128 * 16
    main = 2 * q + 2 * q + 2 * 16_384 + 2 * 2_097_152 + 2 * q
    tiles = flash_tiles(128)
    dqk, dpv = flash_gemms(512, 128, 16, tiles.backward)
    work = flash_nonmatmul(512, 128, 16, tiles)[1]
    dot, convert = flash_backward_kernels(512, 128, 16, "fp16")
    # shared memory: causal 64 × 128 blocks, query block i meets ⌊(64i + 63)/128⌋ + 1 key blocks: 1, 1, 2, 2, 3, 3,
    # 4, 4 = 20, at 655,360 bytes each (tests/test_flash_smem.py's hand count), 16 heads
    smem = 20 * 655_360 * 16
    before = [dot, TrainingOp("flash_attention", "D", (dqk, dpv, dqk, dpv, dpv), vector_elements=main,
                              out_bytes=2 * 3 * q, fused=True, exps=work.exps, lane_ops=work.lane_ops,
                              smem_bytes=smem), convert]
    ops = [op for op in block_work(_llama_like(8), 2, attention="flash").backward if op.layer.startswith("flash")]
    assert ops == before and ops[1].vector_elements == 10_518_528
    a100 = catalog_device("a100-80gb")
    assert op_seconds(ops, a100, A100_KERNELS) == pytest.approx(op_seconds(before, a100, A100_KERNELS))


def test_grouped_query_layer_sums_after_the_conversion():
    # 8 query heads over 2 kv heads, micro-batch 2: each sum reads 512 · 128 · 16 = 1,048,576 and writes
    # 512 · 128 · 4 = 262,144 elements, after dQ's conversion as mha_bwd runs them.
    ops = [op for op in block_work(_llama_like(2), 2, attention="flash").backward if op.layer.startswith("flash")]
    assert [op.layer for op in ops] == ["flash_attention.dot_do_o", "flash_attention", "flash_attention.convert_dq",
                                        "flash_attention.sum_dk", "flash_attention.sum_dv"]
    assert [op.vector_elements for op in ops[3:]] == [1_310_720, 1_310_720]
