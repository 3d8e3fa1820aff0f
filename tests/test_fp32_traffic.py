"""Megatron's memory-bound HBM traffic in every training dtype (issue #37), against bytes worked out by hand
from what each kernel reads and writes: fp16/bf16 values 2 bytes, fp32 values 4, a bool or dropout mask 1.

The op list counts elements of the training dtype (``TrainingOp.vector_elements``), priced at its element
size: 4 bytes in fp32, 2 in fp16/bf16. The fp32 tests failed on the old code, which counted Megatron's list
in 2-byte units whatever the dtype (an fp32 value as 2 units, the mask as ½): under ``--dtype fp32`` every
fp32 value was priced at 8 bytes, a mask byte at 2, and the fp16↔fp32 casts an fp32 model never runs were
priced too. The fp16/bf16 tests pass on the old code and the new alike: those figures must not move.
"""

import pytest

from archsim.training.iteration import piece_works
from archsim.workload.transformer import TransformerConfig

# A tiny GPT: 16 tokens, hidden 64, 4 heads, vocabulary 1000, one micro-batch of one sequence, TP 1. At
# sequence 16 Megatron's fused scale-mask-softmax does not apply (it needs 16 < keys ≤ 2048): the softmax
# is PyTorch's chain (FusedScaleMaskSoftmax.forward_torch_softmax).
TINY = TransformerConfig("tiny", "gpt", 2, 64, 4, 1000, 16, 256, 4, True, 16)
TOKENS = 16
SCORES = 16 * 16 * 4  # s × s per head, 4 heads
LOGITS = TOKENS * 1024  # Megatron pads the vocabulary to a multiple of 128: 1000 → 1024
HIDDEN = TOKENS * 64
SIZE = {"fp32": 4, "fp16": 2, "bf16": 2}  # bytes per element of each training dtype, by hand


def _bytes(dtype: str, piece: int, prefix: str, kind: str, config: TransformerConfig = TINY) -> dict[str, int]:
    """Bytes each memory-bound op of Megatron's list named ``prefix``… moves (``kind`` F: forward, D: backward)."""
    (layer, embedding, head), _ = piece_works(config, 1, 1, False, "standard", "megatron", dtype)
    work = (layer, embedding, head)[piece]
    ops = work.forward if kind == "F" else work.backward
    return {op.layer: op.vector_elements * SIZE[dtype] for op in ops if op.layer.startswith(prefix) and not op.gemms}


def test_fp32_softmax_chain_moves_fp32_scores_and_runs_no_casts():
    """fp32: the scores are fp32 already, so ``input_in_float16`` is off and no cast runs; scale (read 4, write
    4), mask (masked_fill: read 4, the bool mask 1, write 4), softmax (read 4, write 4); backward softmax's
    (read y 4, dy 4, write dx 4), the mask's (a masked fill of the gradient: 4 + 1 + 4) and the scale's (4 + 4).
    Old code: 74 and 82 bytes per score, five kernels each way."""
    forward, backward = _bytes("fp32", 0, "softmax", "F"), _bytes("fp32", 0, "softmax", "D")
    assert forward == {"softmax.scale": SCORES * (4 + 4), "softmax.mask": SCORES * (4 + 1 + 4),
                       "softmax": SCORES * (4 + 4)}
    assert backward == {"softmax": SCORES * (4 + 4 + 4), "softmax.mask": SCORES * (4 + 1 + 4),
                        "softmax.scale": SCORES * (4 + 4)}
    assert sum(forward.values()) == 25 * SCORES and sum(backward.values()) == 29 * SCORES


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_softmax_chain_is_unchanged(dtype):
    """fp16/bf16: the same three kernels between a cast to fp32 (read 2, write 4) and a cast back (read 4,
    write 2); backward the casts' gradients the other way. 37 and 41 bytes per score: the old figures
    (18.5 and 20.5 two-byte units)."""
    forward, backward = _bytes(dtype, 0, "softmax", "F"), _bytes(dtype, 0, "softmax", "D")
    assert forward == {"softmax.to_fp32": SCORES * (2 + 4), "softmax.scale": SCORES * (4 + 4),
                       "softmax.mask": SCORES * (4 + 1 + 4), "softmax": SCORES * (4 + 4),
                       "softmax.to_fp16": SCORES * (4 + 2)}
    assert backward == {"softmax.to_fp16": SCORES * (2 + 4), "softmax": SCORES * (4 + 4 + 4),
                        "softmax.mask": SCORES * (4 + 1 + 4), "softmax.scale": SCORES * (4 + 4),
                        "softmax.to_fp32": SCORES * (4 + 2)}
    assert sum(forward.values()) == 37 * SCORES and sum(backward.values()) == 41 * SCORES


def test_fp32_cross_entropy_reads_fp32_logits_without_a_cast():
    """fp32: the fused vocabulary-parallel cross-entropy over fp32 logits — a max (read 4), the exponentials
    (read 4, write 4) and their sum (read 4): 16 bytes a logit; backward softmax − one-hot times the loss
    gradient in place on the kept fp32 softmax (read 4, write 4). Old code: 44 and 16 bytes a logit."""
    assert _bytes("fp32", 2, "cross_entropy", "F") == {"cross_entropy": LOGITS * (4 + (4 + 4) + 4)}
    assert _bytes("fp32", 2, "cross_entropy", "D") == {"cross_entropy": LOGITS * (4 + 4)}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_cross_entropy_is_unchanged(dtype):
    """fp16/bf16: the logits' cast to fp32 first (read 2, write 4), then the fp32 passes above: 22 bytes a
    logit forward, 8 backward — the old 11 and 4 two-byte units."""
    assert _bytes(dtype, 2, "cross_entropy", "F") == {"cross_entropy": LOGITS * ((2 + 4) + 4 + (4 + 4) + 4)}
    assert _bytes(dtype, 2, "cross_entropy", "D") == {"cross_entropy": LOGITS * (4 + 4)}


@pytest.mark.parametrize("dtype, value", [("fp32", 4), ("fp16", 2), ("bf16", 2)])
def test_a_dropout_mask_is_one_byte_in_every_dtype(dtype, value):
    """A dropout reads and writes values of the training dtype and writes (forward) or reads (backward) a
    1-byte mask per element: the attention dropout over the scores, the bias-dropout-add (read x and the
    residual, write, mask) over the hidden states, the embedding's dropout. Old code in fp32: the mask at 2
    bytes (10, 14 and 10 bytes per element instead of 9, 13 and 9)."""
    for kind in ("F", "D"):
        assert _bytes(dtype, 0, "attn_dropout", kind) == {"attn_dropout": SCORES * (2 * value + 1)}
        assert _bytes(dtype, 0, "residual", kind) == {"residual1": HIDDEN * (3 * value + 1),
                                                      "residual2": HIDDEN * (3 * value + 1)}
    assert _bytes(dtype, 1, "embedding_dropout", "F") == {"embedding_dropout": HIDDEN * (2 * value + 1)}


def test_fp32_rope_reads_each_fp32_angle_once():
    """RoPE (Transformer Engine's fused kernel) on a Llama: read q (or k) and write it, in the training dtype,
    and read the fp32 angles, ``rotary_dims`` per token: 4 bytes each in every dtype. Old code in fp32: 8."""
    llama = TransformerConfig("tiny_llama", "llama", 2, 64, 4, 1000, 16, 256, 2, partial_rotary_factor=0.5)
    q, k, rotary = TOKENS * 4 * 16, TOKENS * 2 * 16, 8  # 4 query heads and 2 kv heads of 16 dims, half rotated
    for dtype, value in (("fp32", 4), ("fp16", 2)):
        for kind in ("F", "D"):
            assert _bytes(dtype, 0, "rope", kind, llama) == {"rope_q": 2 * q * value + TOKENS * rotary * 4,
                                                             "rope_k": 2 * k * value + TOKENS * rotary * 4}


def test_eager_fp32_host_count_stays_megatrons_mixed_precision_list():
    """``pytorch-eager`` in fp32 pays the fits' per-op host time as often as Megatron's mixed-precision list
    has ops (the list the fits state it per): its five-kernel softmax, not fp32 Megatron's three."""
    gpt2_like = TransformerConfig("tiny", "gpt", 2, 64, 4, 1000, 16, 256, 4, True, 1024)
    _, (layer, _, _) = piece_works(gpt2_like, 1, 1, False, "standard", "pytorch-eager", "fp32")
    assert [op.layer for op in layer.forward if op.layer.startswith("softmax")] == [
        "softmax.to_fp32", "softmax.scale", "softmax.mask", "softmax", "softmax.to_fp16"]


# Sequence 32, 4 heads, micro-batch 1: 4 attention batches, 16 < 32 ≤ 2048 — a shape Megatron's fused
# scale-mask-softmax takes in fp16/bf16 (one kernel each way: read, write; backward read y, dy, write dx).
FUSED_SHAPE = TransformerConfig("tiny32", "gpt", 2, 64, 4, 1000, 32, 256, 4, True, 32)
SCORES_32 = 32 * 32 * 4


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_takes_the_fused_softmax_where_the_shape_allows(dtype):
    """fp16/bf16 scores (``input_in_float16``): one kernel, 2 + 2 bytes a score forward, 2 + 2 + 2 backward."""
    assert _bytes(dtype, 0, "softmax", "F", FUSED_SHAPE) == {"softmax": SCORES_32 * (2 + 2)}
    assert _bytes(dtype, 0, "softmax", "D", FUSED_SHAPE) == {"softmax": SCORES_32 * (2 + 2 + 2)}


def test_fp32_runs_the_unfused_softmax_chain_on_a_fused_shape():
    """fp32: ``FusedScaleMaskSoftmax.is_kernel_available`` needs ``input_in_float16``, so Megatron runs
    ``forward_torch_softmax`` on any shape: scale (read 4, write 4), mask (read 4, bool 1, write 4), softmax
    (read 4, write 4); backward softmax's (4 + 4 + 4), the mask's (4 + 1 + 4), the scale's (4 + 4) — no casts.
    Failed on the old code, which took the fused kernel (4 + 4 and 4 + 4 + 4 bytes a score, one op)."""
    forward = _bytes("fp32", 0, "softmax", "F", FUSED_SHAPE)
    backward = _bytes("fp32", 0, "softmax", "D", FUSED_SHAPE)
    assert forward == {"softmax.scale": SCORES_32 * (4 + 4), "softmax.mask": SCORES_32 * (4 + 1 + 4),
                       "softmax": SCORES_32 * (4 + 4)}
    assert backward == {"softmax": SCORES_32 * (4 + 4 + 4), "softmax.mask": SCORES_32 * (4 + 1 + 4),
                        "softmax.scale": SCORES_32 * (4 + 4)}


@pytest.mark.parametrize("dtype, fused", [("fp16", True), ("bf16", True), ("fp32", False)])
def test_fused_softmax_needs_half_precision_scores(dtype, fused):
    """Megatron-Core's ``is_kernel_available`` tests ``self.input_in_float16`` beside the shape rule (the
    older ``megatron/model/fused_softmax.py``: ``self.input_in_fp16``); failed on the old code for fp32."""
    from archsim.training.kernel_bytes import fused_softmax

    assert fused_softmax(1024, 4, dtype) is fused
