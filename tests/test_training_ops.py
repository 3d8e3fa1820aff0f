"""A transformer layer's ops on one GPU against hand-derived FLOPs and bytes.

Reference: Narayanan et al. 2021 (SC'21, §5.1): a GPT layer's forward is 24·b·s·h² + 4·b·s²·h FLOPs
(FFN 4h), its backward twice that; TP splits every GEMM evenly."""

import pytest

from archsim.training.kernel_bytes import fused_softmax
from archsim.training.layer_ops import block_work, head_work
from archsim.workload.layer_parameters import layer_parameters
from archsim.workload.transformer import TransformerConfig

C = TransformerConfig("tiny", "gpt", 2, 64, 4, 100, 16, 256, 4, True, 16)


def flops(ops):
    return sum(2 * op.macs for op in ops)


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_layer_flops_by_hand(tp):
    b, s, h = 2, 16, 64
    work = block_work(C, b, tp)
    forward = 24 * b * s * h * h + 4 * b * s * s * h  # 3,276,800 at tp 1
    assert flops(work.forward) * tp == forward
    assert flops(work.backward) * tp == 2 * forward
    # weight gradients: the four weight GEMMs again (24·b·s·h²), δ the rest
    assert flops([op for op in work.backward if op.kind == "G"]) * tp == 24 * b * s * h * h
    assert flops([op for op in work.backward if op.kind == "D"]) * tp == 2 * forward - 24 * b * s * h * h


C32 = TransformerConfig("tiny-32", "gpt", 2, 64, 4, 100, 32, 256, 4, True, 32)  # long enough for the fused softmax


def test_layer_bytes_by_hand():
    b, s, h, a = 2, 32, 64, 4
    t_ = b * s
    work = block_work(C32, b, 1)
    elements = {op.layer: op.vector_elements for op in work.forward if not op.gemms}
    assert elements == {"norm1": 2 * t_ * h, "softmax": 2 * b * a * s * s, "attn_dropout": 2.5 * b * a * s * s,
                        "residual1": 3.5 * t_ * h, "norm2": 2 * t_ * h, "bias_gelu": 2 * t_ * 4 * h,
                        "residual2": 3.5 * t_ * h}
    backward = {op.layer: op.vector_elements for op in work.backward if not op.gemms}
    assert backward["norm1"] == 3 * t_ * h and backward["softmax"] == 3 * b * a * s * s
    assert backward["bias_gelu"] == 3 * t_ * 4 * h


@pytest.mark.parametrize(("seq", "batches", "fused"), [
    (32, 8, True), (1024, 4, True), (2048, 16, True),
    (16, 8, False),    # key length must exceed 16
    (4096, 8, False),  # and be at most 2048
    (1024, 2, False),  # 16 heads over TP 8 at micro-batch 1
    (1024, 6, False), (30, 8, False)])
def test_fused_softmax_condition(seq, batches, fused):
    """Megatron's FusedScaleMaskSoftmax: 16 < sk <= 2048, sq % 4 == 0, (b · heads per rank) % 4 == 0."""
    assert fused_softmax(seq, batches) is fused


def test_unfused_softmax_is_five_fp32_kernels_each_way():
    """16 heads over TP 8 at micro-batch 1: cast, scale, mask, softmax, cast back, in fp32. Bytes by
    hand per score: forward 2→4 + 4→4 + (4 + 1 mask)→4 + 4→4 + 4→2 = 6 + 8 + 9 + 8 + 6 = 37 bytes;
    backward 6 + 8 + 9 + 12 (softmax reads y and dy) + 6 = 41 bytes; the fused kernel 4 and 6."""
    gpt = TransformerConfig("gpt-16h", "gpt", 2, 1024, 16, 100, 1024, 4096, 16, True, 1024)
    scores = 1024 * 1024 * 2  # b · heads/t · s²
    unfused, fused = block_work(gpt, 1, 8), block_work(gpt, 2, 8)
    soft = lambda ops: [op for op in ops if op.layer.startswith("softmax")]
    assert len(soft(unfused.forward)) == len(soft(unfused.backward)) == 5
    assert len(soft(fused.forward)) == len(soft(fused.backward)) == 1
    assert sum(op.vector_elements for op in soft(unfused.forward)) * 2 == 37 * scores
    assert sum(op.vector_elements for op in soft(unfused.backward)) * 2 == 41 * scores
    assert sum(op.vector_elements for op in soft(fused.forward)) * 2 == 4 * 2 * scores
    assert len(unfused.forward) == len(fused.forward) + 4 and len(unfused.backward) == len(fused.backward) + 4


def test_tp_collectives():
    b, s, h = 2, 16, 64
    assert block_work(C, b, 1).forward_collectives == ()
    work = block_work(C, b, 2)
    assert [c.kind for c in work.forward_collectives] == ["all-reduce"] * 2
    assert [c.kind for c in work.backward_collectives] == ["all-reduce"] * 2
    assert all(c.bytes == 2 * b * s * h for c in work.forward_collectives)
    sp = block_work(C, b, 2, sequence_parallel=True)
    assert sorted(c.kind for c in sp.forward_collectives) == ["all-gather"] * 2 + ["reduce-scatter"] * 2


def test_parameters_and_head():
    assert layer_parameters(C) == 12 * 64 * 64 + 13 * 64
    head = head_work(C, 1, 1)
    lm = next(op for op in head.forward if op.layer == "lm_head")
    assert (lm.gemms[0].m, lm.gemms[0].k, lm.gemms[0].n) == (16, 64, 128)  # vocab 100 padded to 128


def test_llama_layer_flops_by_hand():
    """Grouped-query attention (8 heads, 2 KV heads) and SwiGLU (gate, up, down of width f)."""
    llama = TransformerConfig("llama", "llama", 2, 128, 8, 100, 32, 352, 2, False, 0)
    b, s, h, f, hd = 2, 32, 128, 352, 16
    tokens = b * s
    forward = 2 * tokens * (h * (h + 2 * 2 * hd) + h * h + 3 * h * f) + 4 * b * s * s * h
    work = block_work(llama, b, 1)
    assert flops(work.forward) == forward
    assert flops(work.backward) == 2 * forward
    assert layer_parameters(llama) == h * (h + 2 * 2 * hd) + h * h + 3 * h * f + 2 * h
