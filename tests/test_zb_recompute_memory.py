"""Zero-bubble orders under full recomputation and Hugging Face's eager modules hold what W reads from I to W.

A tiny case worked out by hand: 2 stages of one GPT layer each (h 8, 2 heads, s 4, ffn 32, vocab 128, no dropout,
standard attention), micro-batch 1, 4 micro-batches, the ZB-H1 and ZB-H2 orders archsim builds for p = 2, m = 4
(listed here by hand). Per layer and micro-batch, by hand:

* Megatron, fp16 (Korthikanti et al.'s table without masks): M_B = s·b·h·(8 + 24) + 2·a·s²·b = 1024 + 64 = 1088
  bytes with no recompute, 1024 selective, 2·s·b·h = 64 under full (the checkpoint); M_W = 32·s·b·h = 1024 (the
  QKV, projection, fc1 and fc2 inputs and output gradients) in every mode — under full recompute I rematerialises
  the layer and the linears hand those tensors to W (the ZB authors' ``WeightGradStore``), the checkpoint freed.
  Recompute's working set, once per rank: 1088 − 64 = 1024 (full: the rerun layer less its input, the checkpoint
  already held), the 64-byte attention core (selective). The last stage
  keeps the fp16 and fp32 logits, 6·s·b·V = 3072.
* Hugging Face's eager modules, fp32: M_B = s·b·(4·(8·h + 5·f) + 16) + 4·a·s²·b = 3648 + 128 = 3776 (gelu_new
  keeps five ffn-wide tensors), 4·s·b·h = 128 under full; M_W = 4·s·b·(8·h + 2·f) = 2048. The head keeps
  s·b·(4·2h + 8) + 4·V·(s·b + (s − 1)·b) = 3872 and W reads its input and the logits' gradient, 4·s·b·(h + V) =
  2176; the first stage's embedding keeps nothing (no dropout) and W reads its output gradient, 4·s·b·h = 128.
  Full recompute's working set: 3776 − 128 = 3648 (the block's input is its checkpoint, held already).

On the old code I released everything under full recompute and under Hugging Face's modules: the ZB tests below
with ``full`` or ``hf`` failed (the peaks were the I-to-I in-flight counts); the default and the fused-backward
orders' figures pass on both.
"""

import pytest

from archsim.policies.stage_orders import published_order
from archsim.sim.builder import KINDS
from archsim.training.held_memory import in_flight
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import memories, rank_memory
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig

TINY = TransformerConfig("tiny", "gpt", 2, 8, 2, 128, 4, 32, 2, True, 4, hidden_dropout=0.0,
                         attention_dropout=0.0)

ORDERS = {  # by hand: rank r warms up with p − r (ZB-H1) or 2(p − 1 − r) + 1 (ZB-H2) forwards
    "zb-h1": ("F0 F1 I0 W0 F2 I1 W1 F3 I2 W2 I3 W3", "F0 I0 F1 I1 W0 F2 I2 W1 F3 I3 W2 W3"),
    "zb-h2": ("F0 F1 F2 I0 W0 F3 I1 W1 I2 W2 I3 W3", "F0 I0 F1 I1 F2 I2 W0 F3 I3 W1 W2 W3"),
}

# bytes per micro-batch, by hand (module docstring): (M_B, M_W) of rank 0 and rank 1, working set, last's logits
MEGATRON = {"none": ((1088, 1024), (1088, 1024), 0, 3072),
            "selective": ((1024, 1024), (1024, 1024), 64, 3072),
            "full": ((64, 1024), (64, 1024), 1024, 3072)}
EAGER = {"none": ((3776, 2048 + 128), (3776 + 3872, 2048 + 2176), 0, 0),
         "full": ((128, 2048 + 128), (128 + 3872, 2048 + 2176), 3648, 0)}


def _walk(actions: str, kept: int, held: int) -> list[int]:
    """Bytes held after each action: F keeps M_B, I trades it for M_W, W frees M_W, B frees M_B."""
    step = {"F": kept, "I": held - kept, "W": -held, "B": -kept}
    out, now = [], 0
    for a in actions.split():
        now += step[a[0]]
        out.append(now)
    return out


def _par(recompute: str, schedule: str) -> Parallelism:
    return Parallelism(1, 2, 1, 4, 1, recompute, False, 1, schedule, attention="standard")


@pytest.mark.parametrize("schedule", ["zb-h1", "zb-h2"])
def test_orders_are_the_hand_lists(schedule):
    order = published_order(schedule, 2, 4)
    c, b = order.columns, order.columns.bounds.tolist()
    built = tuple(" ".join(KINDS[k] + str(mb) for k, mb in zip(c.kind[b[r]:b[r + 1]], c.microbatch[b[r]:b[r + 1]]))
                  for r in range(2))
    assert built == ORDERS[schedule]


def test_hand_walks_step_by_step():
    """The held bytes after every action, written out: ZB-H1 under full recompute (Megatron) — I of a 64-byte
    checkpoint leaves the 1024 bytes W reads — and Hugging Face's eager last stage without recompute."""
    assert _walk(ORDERS["zb-h1"][0], 64, 1024) == [64, 128, 1088, 64, 128, 1088, 64, 128, 1088, 64, 1024, 0]
    assert _walk(ORDERS["zb-h1"][1], 64, 1024) == [64, 1024, 1088, 2048, 1024, 1088, 2048, 1024, 1088, 2048,
                                                   1024, 0]
    assert _walk(ORDERS["zb-h2"][1], 64, 1024) == [64, 1024, 1088, 2048, 2112, 3072, 2048, 2112, 3072, 2048,
                                                   1024, 0]
    assert _walk(ORDERS["zb-h1"][1], 7648, 4224) == [7648, 4224, 11872, 8448, 4224, 11872, 8448, 4224, 11872,
                                                     8448, 4224, 0]


def _starts(actions: str, kept: int, held: int) -> int:
    """The most held when an I (or B) starts: the value before it — its stage's one layer is then rerun, the
    working set beside it (with one layer a stage, no other layer's M_W made yet)."""
    values = [0, *_walk(actions, kept, held)]
    return max(values[k] for k, a in enumerate(actions.split()) if a[0] in "IB")


# each rank's activation bytes by hand: the larger of the walk's peak and an I's start plus the working set, and the
# last rank's logits. The working set coexists with what is held when a backward starts, not after it: until
# 2026-12-02 it was added on top of the walk's peak (after an I), and the full rows were 1088 + 1088,
# 2048 + 1088 + 3072 (zb-h1), 1152 + 1088, 3072 + 1088 + 3072 (zb-h2), 128 + 2176 + 3776, 2·4224 + 3776 (zb-h1,
# eager) and 2·128 + 2176 + 3776, 3·4224 + 3776 (zb-h2, eager): the full rows below failed on that code. Until
# the same day the full working set also counted the rerun layer's input, its checkpoint, a second time (1088 and
# 3776 in place of 1024 and 3648): the full rows failed on that code too
HAND = {("zb-h1", "full", False): [128 + 1024, 1088 + 1024 + 3072],  # I0 starts at 128; I1 at 1088
        ("zb-h2", "full", False): [192 + 1024, 2112 + 1024 + 3072],  # I0 at 192; I2 at 2112
        ("zb-h1", "none", False): [2176, 2112 + 3072],  # 2·M_B; M_B + M_W (as before)
        ("zb-h1", "selective", False): [2048 + 64, 2048 + 64 + 3072],  # as before
        ("zb-h1", "none", True): [2 * 3776, 7648 + 4224],
        ("zb-h1", "full", True): [256 + 3648, 8224 + 3648],  # I0 at 2·128; I1 at 4000 + 4224
        ("zb-h2", "full", True): [384 + 3648, 12448 + 3648]}  # I0 at 3·128; I2 at 4000 + 4224 + 4224


@pytest.mark.parametrize("schedule, recompute, hf", list(HAND))
def test_memories_match_the_hand_count(schedule, recompute, hf):
    """train's memory of the order, rank by rank, is the hand count (the walks' peaks from the tables above)."""
    par = _par(recompute, schedule)
    got = [m.activations for m in memories(TINY, par, published_order(schedule, 2, 4), hf=hf)]
    table = (EAGER if hf else MEGATRON)[recompute]
    walks = [max(max(_walk(ORDERS[schedule][r], *table[r])), _starts(ORDERS[schedule][r], *table[r]) + table[2])
             + (table[3] if r else 0) for r in range(2)]
    assert walks == HAND[schedule, recompute, hf]
    assert got == pytest.approx(HAND[schedule, recompute, hf])


@pytest.mark.parametrize("schedule, v", [("zb-h1", 1), ("zb-h2", 1), ("interleaved-zb", 2), ("zb-v", 1),
                                         ("dualpipev", 1)])
def test_search_agrees_under_full_recompute(schedule, v):
    """The search's read of the walk prices full recompute as train does (M_W above M_B: 16 × at t = 1)."""
    c = TransformerConfig("gpt8", "gpt", 16, 256, 8, 1024, 64, 1024, 8, True, 64)
    par = Parallelism(2, 4, 1, 16, 1, "full", True, v, schedule, attention="flash")
    order = published_order(schedule, 4, 16, par.chunks)
    assert [m.total for m in memories(c, par, order)] == pytest.approx([m.total for m in rank_memories(c, par)])


@pytest.mark.parametrize("schedule, v", [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2), ("looped-bfs", 2)])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("hf", [False, True])
def test_fused_backward_orders_do_not_change(schedule, v, recompute, hf):
    """Non-ZB orders (a fused B frees M_B at once) hold their in-flight count of micro-batches, whatever M_W: the
    figures of :func:`rank_memory` at the I-to-I count, as before the fix; 1F1B's by hand under full recompute."""
    c = TransformerConfig("tiny4", "gpt", 8, 8, 2, 128, 4, 32, 2, True, 4, hidden_dropout=0.0,
                          attention_dropout=0.0)
    par = Parallelism(1, 2, 1, 8, 1, recompute, False, v, schedule, attention="standard")
    order = published_order(schedule, 2, 8, v)
    got = memories(c, par, order, hf=hf)
    rank_of = order.rank_of_stage()
    per = 8 // (2 * v)
    for rank, counts in enumerate(in_flight(order)):
        mine = [j for j in range(2 * v) if rank_of[j] == rank]
        want = rank_memory(c, par, [per] * len(mine), mine, max(counts / v, 1.0), rank_of[0] != rank_of[2 * v - 1],
                           hf=hf)
        assert got[rank].activations == pytest.approx(want.activations)
    if schedule == "1f1b" and recompute == "full" and not hf:  # 2 and 1 in flight, 4 layers of 64-byte checkpoints
        # and the rerun layer's 1088 less its 64-byte input, a checkpoint among those (1088 before 2026-12-02)
        assert [m.activations for m in got] == pytest.approx([2 * 4 * 64 + 1024, 4 * 64 + 1024 + 3072])
