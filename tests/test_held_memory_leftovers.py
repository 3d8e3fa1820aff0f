"""Held-memory leftovers, each counted by hand on a tiny GPT (h 8, 2 heads, s 4, ffn 32, vocab 128, standard
attention, micro-batch 1, p = 2), fp16 (Megatron) or fp32 (Hugging Face's eager modules).

1. Eager recompute's working set is one layer's, once per rank (one layer is rerun at a time), not once per chunk.
   Interleaved 1F1B, v = 2, 8 layers (2 a chunk), m = 8, no dropout, full recompute: a layer keeps its fp32 input,
   4·s·b·h = 128 bytes; the working set is a whole layer's, s·b·(4·(8·h + 5·f) + 16) + 4·a·s²·b = 3776, less its
   input (the 128-byte checkpoint, held already): 3648; the head keeps 3872. In flight: (v − 1)p + 2(p − 1 − r) + 1
   = 5 and 3 chunks, 2.5 and 1.5 per chunk. Rank 0: 2.5 · 4 · 128 + 3648 = 4928; rank 1: 1.5 · (4 · 128 + 3872) +
   3648 = 10224. The old code added 3776 per chunk (8832 and 14128): the test failed on it; until 2026-12-02 the
   checkpoint was also counted twice (5056 and 10352).
2. The first stage's embedding-dropout mask (s·b·h = 32 bytes a micro-batch) is held from F to I only: W reads
   none of it. ZB-H1, 2 layers (1 a stage), m = 4, hidden dropout on (attention dropout off), full recompute: M_B
   = 2·s·b·h = 64 a layer, plus the mask on rank 0: 96; M_W = 32·s·b·h = 1024; the working set 34·s·b·h +
   2·a·s²·b = 1152 less the rerun layer's 64-byte input, its checkpoint held already: 1088 (1152 until 2026-12-02). Rank 0 runs F0 F1 I0 W0 F2 I1 W1 F3 I2 W2 I3 W3 and holds 96, 192, 1120 (I0: 96 + 1024),
   96, 192, 1120, …: peak 1120. The old code scaled the whole 96 by M_W / M_B = 16: 17 · 96 = 1632 (+ 1152 = 2784,
   its total) — it failed on it.
3. Recomputation's working set exists while a backward reruns a layer: it meets what is held then, not the walk's
   peak after an I. An I of a stage of n layers reruns them last to first; while it reruns layer l, layers l + 1 …
   n hold M_W (their checkpoints freed), layers 1 … l their M_B, and l's own M_W is made inside the working set: the
   most is at l = n (the I's start, value before it) or l = 1 (n − 1 layers traded: + (n − 1)·(M_W − M_B)). Item 2's
   rank 0 (n = 1): I0 starts at 192, + 1088 = 1280 > 1120; the old code added 1152 to 1632. With n = 2 (4 layers):
   M_B 2·64 + 32 = 160 on rank 0, M_W 2048; the walk 160, 320, 2208 (I0), 160, 320, 2208, …, 160, 2048, 0 peaks at
   2208; I0 starts at 320 and at its last-run layer holds 320 + (1024 − 64) = 1280, + 1088 = 2368 (old: 17·160 +
   1152 = 3872). Rank 1 (n = 2, no mask, logits 6·s·b·V = 3072): M_B 128, M_W 2048; F0 I0 F1 I1 W0 F2 I2 W1 F3 I3
   W2 W3 holds 128, 2048, 2176, 4096, 2048, 2176, 4096, …: peak 4096; I1 starts at 2176, + 960 + 1088 = 4224 (old:
   4096 + 1152). None of it applies to fused backwards: their walk peaks where a B starts (the working set added
   there, as before).
"""

import pytest

from archsim.policies.stage_orders import published_order
from archsim.training.held_memory import order_held_peaks
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import memories, rank_held_fractions
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig


def _tiny(layers: int, hidden_dropout: float) -> TransformerConfig:
    return TransformerConfig("tiny", "gpt", layers, 8, 2, 128, 4, 32, 2, True, 4, hidden_dropout=hidden_dropout,
                             attention_dropout=0.0)


def test_eager_working_set_once_per_rank():
    """Item 1: interleaved 1F1B's eager ranks add one layer's working set, not one per chunk (4928, 10224)."""
    par = Parallelism(1, 2, 1, 8, 1, "full", False, 2, "interleaved-1f1b", attention="standard")
    got = memories(_tiny(8, 0.0), par, published_order("interleaved-1f1b", 2, 8, 2), hf=True)
    assert [m.activations for m in got] == pytest.approx([4928, 10224])


def test_embedding_mask_not_scaled_by_the_held_share():
    """Item 2: ZB-H1's first rank holds the embedding mask until I only: the walk peaks at 1120 (not 1632)."""
    par = Parallelism(1, 2, 1, 4, 1, "full", False, 1, "zb-h1", attention="standard")
    c = _tiny(2, 0.1)
    order = published_order("zb-h1", 2, 4)
    assert order_held_peaks(order, rank_held_fractions(c, par, [1, 1], [[0], [1]]))[0] * 96 == pytest.approx(1120)
    assert memories(c, par, order)[0].activations == pytest.approx(192 + 1088)  # item 3: I0's start wins


@pytest.mark.parametrize("layers, want", [(2, [192 + 1088, 1088 + 1088 + 3072]),  # rank 1: 64 + 1024 at I1's start
                                          (4, [320 + 960 + 1088, 2176 + 960 + 1088 + 3072])])
def test_working_set_meets_what_is_held_mid_backward(layers, want):
    """Item 3: ZB-H1, full recompute, 1 and 2 layers a stage: an I's start (+ (n − 1)·(M_W − M_B)) plus the working
    set, not the walk's peak plus it (old: 2784 and 2048 + 1152 + 3072; 3872 and 4096 + 1152 + 3072)."""
    par = Parallelism(1, 2, 1, 4, 1, "full", False, 1, "zb-h1", attention="standard")
    c = _tiny(layers, 0.1)
    got = memories(c, par, published_order("zb-h1", 2, 4))
    assert [m.activations for m in got] == pytest.approx(want)
    assert [m.total for m in rank_memories(c, par)] == pytest.approx([m.total for m in got])  # the search agrees
