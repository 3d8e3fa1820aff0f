"""Zero-bubble orders hold what W needs from I to W (issues #40, #38): Qi et al. 2023 ("Zero Bubble Pipeline
Parallelism", Table 1 and §3) count F +M_B, I −(M_B − M_W), W −M_W, with M_W = 32·b·s·h a GPT layer. Checked
against a hand-listed ZB-H1 order (p = 3, m = 4) walked by hand, the paper's stated peaks (ZB-H1 rank 0 p·M_B,
ZB-H2 rank 0 (2p − 1)·M_B) and hand sums of M_W. Before the fix, I released all of M_B: the ZB-H1 last rank's
activations in ``test_train_and_search_price_the_last_rank_by_the_walk`` were one micro-batch's (that test and
``test_hand_listed_zb_h1_walk`` failed on the old code: no held_memory module, and 1 in place of 1 + 2f)."""

from fractions import Fraction

import pytest

from archsim.policies.stage_orders import published_order
from archsim.sim.builder import KINDS
from archsim.training.held_memory import (
    in_flight,
    order_held_peaks,
    published_held_peaks,
    weight_gradient_bytes,
)
from archsim.training.in_flight import in_flight_peaks
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import held_fraction, memories
from archsim.training.search_space import rank_memories
from archsim.workload.transformer import TransformerConfig

# ZB-H1, p = 3, m = 4 (Qi et al. Fig. 3's shape): rank r runs p − r forwards, then I and F alternate, and the last
# ranks put off r W's into the cool-down's bubble.
ZB_H1_3_4 = (
    "F0 F1 F2 I0 W0 F3 I1 W1 I2 W2 I3 W3",
    "F0 F1 I0 F2 I1 W0 F3 I2 W1 I3 W2 W3",
    "F0 I0 F1 I1 F2 I2 W0 F3 I3 W1 W2 W3",
)


def _hand_walk(actions: str, f: Fraction) -> list[Fraction]:
    """Held memory after each action, in M_B: F +1, I −(1 − f), W −f, B −1 (the paper's rule, by hand)."""
    step = {"F": Fraction(1), "I": f - 1, "W": -f, "B": Fraction(-1)}
    held, out = Fraction(0), []
    for a in actions.split():
        held += step[a[0]]
        out.append(held)
    return out


def test_hand_listed_zb_h1_walk():
    """The order archsim builds is the hand list; held after each action as worked out on paper (f = M_W/M_B)."""
    order = published_order("zb-h1", 3, 4)
    c, b = order.columns, order.columns.bounds.tolist()
    built = [" ".join(KINDS[k] + str(mb) for k, mb in zip(c.kind[b[r]:b[r + 1]], c.microbatch[b[r]:b[r + 1]]))
             for r in range(3)]
    assert tuple(built) == ZB_H1_3_4
    f = Fraction(1, 3)
    assert _hand_walk(ZB_H1_3_4[2], f) == [1, f, 1 + f, 2 * f, 1 + 2 * f, 3 * f, 2 * f, 1 + 2 * f, 3 * f, 2 * f, f, 0]
    assert _hand_walk(ZB_H1_3_4[1], f) == [1, 2, 1 + f, 2 + f, 1 + 2 * f, 1 + f, 2 + f, 1 + 2 * f, 1 + f, 2 * f, f, 0]
    peaks = [max(_hand_walk(r, f)) for r in ZB_H1_3_4]
    assert peaks == [3, 2 + f, 1 + 2 * f]
    assert order_held_peaks(order, float(f)) == pytest.approx([float(x) for x in peaks])
    assert in_flight(order) == [3, 2, 1]  # the I-to-I count, what the later ranks were priced at


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("f", [0.15, 0.5, 32 / 34, 1.0])
def test_paper_peaks_hold_and_later_ranks_rise(p, f):
    """Qi et al.: ZB-H1's first rank peaks at p·M_B, ZB-H2's at (2p − 1)·M_B, whatever W holds; later ranks'
    held peaks exceed the I-to-I count by the W's they put off (0 < f)."""
    m = 3 * p
    h1, h2 = in_flight_peaks("zb-h1", p, m, 1, f), in_flight_peaks("zb-h2", p, m, 1, f)
    assert h1[0] == pytest.approx(p)
    assert h2[0] == pytest.approx(2 * p - 1)
    for old, new in ((in_flight_peaks("zb-h1", p, m), h1), (in_flight_peaks("zb-h2", p, m), h2)):
        assert all(n > o for o, n in zip(old[1:], new[1:]))
    assert h1[-1] == pytest.approx(1 + (p - 1) * f)  # the last rank: one M_B and p − 1 W's put off
    # rank r puts off r W's (ZB-H1) or 2r (ZB-H2) beside its warm-up, as the p = 3 walk above shows (docs/search.md)
    assert h1 == pytest.approx([p - r + r * f for r in range(p)])
    assert h2 == pytest.approx([2 * (p - 1 - r) + 1 + 2 * r * f for r in range(p)])


@pytest.mark.parametrize("schedule, v", [("zb-h1", 1), ("zb-h2", 1), ("interleaved-zb", 2), ("zb-v", 2),
                                         ("dualpipev", 2)])
@pytest.mark.parametrize("p", [2, 3, 4])
def test_search_reads_the_walk_at_3p_exactly(schedule, p, v):
    """The search reads a split order's walk at min(m, 3p): brute force over every m up to 6p agrees, M_W below
    M_B and above it (sequence parallelism keeps the row-parallel output gradients whole: M_W > M_B at t ≥ 2)."""
    for m in range(1, 6 * p + 1):
        if (schedule == "interleaved-zb" and m % p) or (schedule == "dualpipev" and m < 2 * p):
            continue
        for f in (0.6, 1.3):
            whole = order_held_peaks(published_order(schedule, p, m, v), f)
            assert published_held_peaks(schedule, p, m, v, f) == pytest.approx(whole), (m, f)


@pytest.mark.parametrize("schedule, v", [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2), ("looped-bfs", 2)])
def test_fused_backward_orders_keep_their_counts(schedule, v):
    """B releases all of M_B: without I and W the walk is the in-flight count, whatever f."""
    order = published_order(schedule, 4, 8, v)
    assert order_held_peaks(order, 0.7) == in_flight(order)
    assert in_flight_peaks(schedule, 4, 8, v, 0.7) == in_flight_peaks(schedule, 4, 8, v)


GPT = TransformerConfig("gpt", "gpt", 8, 256, 8, 1000, 64, 4 * 256, 8, True, 64)
LLAMA = TransformerConfig("llama", "llama", 8, 256, 8, 1000, 64, 688, 2)  # GQA: 2 KV heads, SwiGLU 688


@pytest.mark.parametrize("tp, sp, per_sbh", [(1, False, 32), (2, False, 8 + 24 / 2), (4, True, 4 + 28 / 4)])
def test_weight_gradient_bytes_gpt(tp, sp, per_sbh):
    """A GPT layer's M_W by hand: inputs of QKV, proj, fc1, fc2 (2 + 2/t + 2 + 8/t) and output gradients
    (6/t + 2 + 8/t + 2) per s·b·h: 8 + 24/t, the paper's 32 at t = 1; with sequence parallelism the QKV and fc1
    inputs are kept sequence-split (2/t each), the row-parallel output gradients whole: 4 + 28/t."""
    s, b, h = 64, 3, 256
    assert weight_gradient_bytes(GPT, b, tp, sp) == pytest.approx(per_sbh * s * b * h)


def test_weight_gradient_bytes_llama():
    """SwiGLU and grouped K, V at t = 2: QKV output gradient (4 + 1 + 1 heads × 32), proj input (4 × 32), gate and
    up output gradients and the down GEMM's input (3 × 344), 2 bytes each, plus the replicated 8·h."""
    s, b = 64, 1
    per_token = 8 * 256 + 2 * ((4 + 1 + 1) * 32 + 4 * 32 + 3 * 344)
    assert weight_gradient_bytes(LLAMA, b, 2, False) == pytest.approx(per_token * s * b)


def test_train_and_search_price_the_last_rank_by_the_walk():
    """ZB-H1, PP 4, m = 8: train's order walk and search's read agree, rank 3 holding 1 + 3f layers' M_B of the
    activations (with f = M_W / M_B by hand: 32 / (34 + 5·a·s/h)); 1F1B's figures do not move."""
    par = Parallelism(1, 4, 1, 8, 1, "none", False, 1, "zb-h1", attention="standard")
    f = 32 / (34 + 5 * 8 * 64 / 256)
    train = memories(GPT, par, published_order("zb-h1", 4, 8))
    search = rank_memories(GPT, par)
    assert [m.total for m in train] == pytest.approx([m.total for m in search])
    one_f_one_b = memories(GPT, Parallelism(1, 4, 1, 8, 1, "none", False, 1, "1f1b", attention="standard"))
    per_layer = layer_activation_bytes(GPT, 1, 1, "none", False)
    layers = 2  # 8 layers over 4 ranks
    assert train[3].activations - one_f_one_b[3].activations == pytest.approx(3 * f * layers * per_layer)
    assert train[0].activations == pytest.approx(one_f_one_b[0].activations)  # p·M_B, as 1F1B's first rank


@pytest.mark.parametrize("recompute, attention, f", [("none", "standard", 32 / (34 + 5 * 8 * 64 / 256)),
                                                     ("selective", "standard", 32 / 34), ("none", "flash", 32 / 34),
                                                     ("full", "standard", 16.0), ("full", "flash", 16.0)])
def test_held_fraction(recompute, attention, f):
    """M_W / M_B by hand: 32 / Korthikanti et al.'s 34 + 5·a·s/h (the s² core released by I), 32 / 34 selective
    or with FlashAttention (whose fp32 log-sum-exp adds 4·a·s·b to M_B), 32 / 2 under full recompute (the
    rematerialised GEMM inputs and output gradients over the 2·s·b·h checkpoint; 0 on the old code)."""
    par = Parallelism(1, 4, 1, 8, 1, recompute, False, 1, "zb-h1", attention=attention)
    lse = 4 * 8 * 64 / (64 * 256) if attention == "flash" and recompute != "full" else 0  # per s·b·h
    expected = 32 / (32 / f + lse) if f else 0.0
    assert held_fraction(GPT, par) == pytest.approx(expected)


@pytest.mark.parametrize("schedule, v", [("zb-h1", 1), ("zb-h2", 1), ("interleaved-zb", 2), ("zb-v", 1),
                                         ("dualpipev", 1)])
@pytest.mark.parametrize("tp, sp", [(1, False), (2, True)])
def test_train_order_and_search_agree(schedule, v, tp, sp):
    """One walk: train's memory of the published order equals the search's read of it, rank by rank, for every
    split schedule, M_W below M_B (no SP) and above it (SP, t = 2: 4 + 28/2 = 18 > 34/2 = 17 per s·b·h)."""
    par = Parallelism(tp, 4, 1, 16, 1, "selective", sp, v, schedule, attention="standard")
    order = published_order(par.schedule_name, 4, 16, par.chunks)
    assert [m.total for m in memories(GPT, par, order)] == pytest.approx([m.total for m in rank_memories(GPT, par)])
    assert (held_fraction(GPT, par) > 1) == sp
