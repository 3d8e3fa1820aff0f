"""Activation memory in fp32 with 1-byte dropout masks (issue #37), against Korthikanti et al. 2022's per-layer
formula split by hand: of a GPT layer's 34·s·b·h + 5·a·s²·b bytes in fp16 (no TP, no recompute), the two residual
dropout masks are s·b·h bytes each and the attention dropout mask a·s²·b — 1 byte per element, a bool tensor in
every dtype — and the rest are 2-byte values, 4 bytes in fp32. So an fp32 layer keeps
2·(32·s·b·h + 4·a·s²·b) + 2·s·b·h + a·s²·b = 66·s·b·h + 9·a·s²·b, not 68·s·b·h + 10·a·s²·b.

The fp32 tests failed on the old code, which doubled the whole fp16 activation count in fp32 (masks at 2 bytes);
the fp16/bf16 ones pass on both: those figures must not move.
"""

from __future__ import annotations

import pytest
from input_checks_common import GPT2

import archsim
from archsim.training.parallel import Parallelism
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig

ONE_H100 = GPT2.parents[1] / "clusters" / "h100_1gpu.toml"

# GPT-2 small: 12 layers, s = 1024, h = 768, a = 12, vocabulary 50257 (Megatron pads it to 50304), dropout on
S, H, A, LAYERS, VOCAB = 1024, 768, 12, 12, 50304


def _gpt2_activations(dtype: str, b: int) -> float:
    result, _ = archsim.train(str(GPT2), cluster=str(ONE_H100), global_batch=b, micro_batch=b, dtype=dtype,
                              recompute="none", attention="standard")
    return result.memory[0].activations


@pytest.mark.parametrize("b", [1, 4])
def test_fp32_gpt2_keeps_its_masks_at_one_byte(b):
    """One GPU, no recompute, one micro-batch in flight: 12 layers of 66·s·b·h + 9·a·s²·b, the embedding
    dropout's 1-byte mask (s·b·h) and the head's logits (6 bytes a logit in fp16, the logits and their fp32 copy;
    4 in fp32, where the cross-entropy's softmax overwrites the logits: tests/test_fp32_logit_memory.py).
    Old code: 12 layers of 68·s·b·h + 10·a·s²·b and a 2-byte embedding mask."""
    sbh, scores = S * b * H, A * S * S * b
    expected = LAYERS * (66 * sbh + 9 * scores) + sbh + 4 * S * b * VOCAB
    assert _gpt2_activations("fp32", b) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_gpt2_activations_are_korthikantis(dtype):
    """fp16/bf16: 34·s·b·h + 5·a·s²·b a layer, the 1-byte embedding mask, 6 bytes a logit — unchanged."""
    b = 2
    sbh, scores = S * b * H, A * S * S * b
    assert _gpt2_activations(dtype, b) == pytest.approx(LAYERS * (34 * sbh + 5 * scores) + sbh + 6 * S * b * VOCAB,
                                                        rel=1e-12)


# A tiny GPT on 2 pipeline stages, TP 2: s = 16, b = 2, h = 64, a = 4, 4 layers, dropout on.
TINY = TransformerConfig("tiny", "gpt", 4, 64, 4, 100, 16, 256, 4, True, 16)


@pytest.mark.parametrize("recompute, per_layer, working", [
    # none: 10 + 24/t = 22 of s·b·h (2 of them masks) and 5·a·s²·b/t (1 a mask): values 20, 4 → 40 + 2, 8 + 1
    ("none", (42, 9), (0, 0)),
    # selective: the layer without its attention core, which is recomputed one layer at a time
    ("selective", (42, 0), (0, 9)),
    # full: the layer's input (no mask) kept, 4 bytes an element in fp32, and while one layer is recomputed its
    # none set less that input, which is the checkpoint already kept: 42 − 4 (42 until 2026-12-02: failed there)
    ("full", (4, 0), (38, 9)),
])
def test_fp32_search_memory_counts_masks_at_one_byte(recompute, per_layer, working):
    """``archsim search``'s closed form (``rank_memories``) in fp32, TP 2 without sequence parallelism, PP 2 under
    1F1B with 4 micro-batches: the first rank holds 2 in flight of its 2 layers and the embedding's dropout mask
    (1 byte an element, 2 micro-batches); per layer (s·b·h coefficient, a·s²·b/t coefficient) by hand."""
    s, b, h, a, t = 16, 2, 64, 4, 2
    sbh, scores = s * b * h, a * s * s * b / t
    par = Parallelism(t, 2, 1, 8, b, recompute)
    first = rank_memories(TINY, par, ranks=[0], dtype="fp32")[0]
    layer = per_layer[0] * sbh + per_layer[1] * scores
    expected = 2 * 2 * layer + working[0] * sbh + working[1] * scores + 2 * sbh
    assert first.activations == pytest.approx(expected)
