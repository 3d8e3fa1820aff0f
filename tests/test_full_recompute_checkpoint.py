"""Full recompute keeps each layer's input (its checkpoint) and, while a backward reruns one layer, that layer's
activations: the rerun set's first LayerNorm input *is* the checkpoint (Korthikanti et al. 2022, §4.1: "each
layer norm stores its input with size 2sbh"; §5, full recompute: 2sbh a layer), the same tensor, not a copy —
so the rerun adds 34·s·b·h + 5·a·s²·b − 2·s·b·h. Until 2026-12-02 archsim added the whole 34·s·b·h + 5·a·s²·b
beside the held checkpoints, 2·s·b·h over on every schedule: every hand count below failed on that code by
exactly 2·s·b·h a rank (the zero-bubble orders' hand counts are in tests/test_zb_recompute_memory.py and
tests/test_held_memory_leftovers.py).

A small GPT by hand: h 64, s 16, b 1, a 4, 4 layers, vocab 100 (padded to 128), standard attention, dropout on,
TP 1, fp16. s·b·h = 1,024, a·s²·b = 1,024:

* checkpoint a layer and micro-batch: 2·s·b·h = 2,048;
* the rerun layer beside the checkpoints: 34·1,024 + 5·1,024 − 2,048 = 37,888;
* the first stage's embedding dropout mask, per micro-batch in flight: s·b·h = 1,024;
* the last stage's fp16 and fp32 logits: 6·s·b·V = 6·16·128 = 12,288.
"""

import pytest

from archsim.policies.stage_orders import published_order
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import memories
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig

SMALL = TransformerConfig("small", "gpt", 4, 64, 4, 100, 16, 256, 4, True, 16)
CHECKPOINT, RERUN, MASK, LOGITS = 2048, 37888, 1024, 12288

# 2 ranks, 4 micro-batches; activations of rank 0 and rank 1, written out
HAND = {
    # 1F1B: p − r = 2 and 1 in flight, 2 layers a stage
    ("1f1b", 1): [2 * 2 * CHECKPOINT + 2 * MASK + RERUN, 1 * 2 * CHECKPOINT + RERUN + LOGITS],  # 48,128; 54,272
    # GPipe: all 4 in flight on both
    ("gpipe", 1): [4 * 2 * CHECKPOINT + 4 * MASK + RERUN, 4 * 2 * CHECKPOINT + RERUN + LOGITS],  # 58,368; 66,560
    # interleaved 1F1B, 2 chunks of 1 layer: (v − 1)p + 2(p − 1 − r) + 1 = 5 and 3 chunk-forwards, their mean 2.5
    # and 1.5 a chunk; the embedding (chunk 0) on rank 0, the head (chunk 3) on rank 1
    ("interleaved-1f1b", 2): [2 * 2.5 * CHECKPOINT + 2.5 * MASK + RERUN,  # 50,688
                              2 * 1.5 * CHECKPOINT + RERUN + LOGITS],  # 56,320
}


@pytest.mark.parametrize(("schedule", "v"), list(HAND))
def test_fused_backward_holds_the_checkpoint_once(schedule, v):
    """train's memory (the built order's walk) and the search's closed form both give the hand count."""
    par = Parallelism(1, 2, 1, 4, 1, "full", False, v, schedule, attention="standard")
    got = [m.activations for m in memories(SMALL, par, published_order(par.schedule_name, 2, 4, par.chunks))]
    assert got == pytest.approx(HAND[schedule, v], rel=1e-12)
    assert [m.activations for m in rank_memories(SMALL, par)] == pytest.approx(HAND[schedule, v], rel=1e-12)


def test_first_stage_is_korthikantis_full_recompute_plus_one_rerun_layer():
    """GPT-3 175B's layer (Korthikanti et al.'s Table 3 row: h 12,288, a 96, s 2,048, 96 layers), t 8 with
    sequence parallelism, PP 8, 1F1B, micro-batch 1: the first stage holds p = 8 micro-batches of its 12 layers,
    Korthikanti et al.'s 2·s·b·h·L/t (§5 with SP, Table 2's full row × L, eq. (5)'s first stage), the embedding's
    dropout mask s·b·h/t for each of the 8, and one layer rerun: Table 2's no-recompute row with SP,
    s·b·h/t·(34 + 5·a·s/h), less the checkpoint it reruns from, 2·s·b·h/t."""
    h, a, s, t, layers, p = 12288, 96, 2048, 8, 96, 8
    c = TransformerConfig("gpt3-175b", "gpt", layers, h, a, 51200, s, 4 * h, a, True, s)
    par = Parallelism(t, p, 1, 16, 1, "full", True, 1, "1f1b", attention="standard")
    sbh_t = s * h / t
    want = 2 * sbh_t * layers + p * sbh_t + sbh_t * (34 + 5 * a * s / h) - 2 * sbh_t
    assert rank_memories(c, par, ranks=[0])[0].activations == pytest.approx(want, rel=1e-12)
