"""A router's load imbalance (``--moe-load-imbalance R``: the busiest EP rank's routed rows over the mean): the busiest
rank's expert GEMMs, all-to-alls, expert-TP gathers and kept rows against hand counts from the shapes, its own
permute at the mean, R = 1 equal to uniform routing to the bit, the bound every rank's tokens set (none at EP 1), the
cap a capacity factor sets, and an order no R may break (a larger R never faster, never less memory)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

import archsim
from archsim.errors import InputError
from archsim.training.held_memory import weight_gradient_bytes
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.layer_ops import block_work
from archsim.training.moe_ops import expert_weight_gradient_bytes, mlp_activation_bytes, routed_rows
from archsim.workload.transformer import TransformerConfig

H, F, E, K, S = 64, 128, 4, 2, 32  # hidden, expert width, experts, top-k, tokens of one sequence
CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
MIXTRAL = Path(__file__).parent / "data" / "hf_configs" / "mixtral_8x7b.json"


def _moe(experts: int = E, **routing) -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, experts=experts, experts_per_token=K,
                             expert_ffn=F, **routing)


def _work(c: TransformerConfig, ep: int = 2, tp: int = 2):
    return block_work(c, 1, tp, tp > 1, ep=ep)


def _expert_flops(work) -> int:
    """FLOPs of the experts' grouped GEMMs, forward, data and weight gradient: 2·m·k·n a GEMM, × its count."""
    return sum(2 * g.m * g.k * g.n * g.count for op in (*work.forward, *work.backward) if op.layer.startswith("experts.fc")
               for g in op.gemms)


def _named(work) -> dict:
    ops = {(op.layer, op.kind): op for op in (*work.forward, *work.backward)}
    collectives = {(x.name, x.phase): x.bytes for x in (*work.forward_collectives, *work.backward_collectives)}
    return {"fc1": ops[("experts.fc1", "F")].gemms[0], "permute": ops[("permute", "F")].vector_elements,
            "unpermute": ops[("unpermute", "F")].vector_elements, "sort": ops[("sort_chunks", "F")].vector_elements,
            "dispatch": collectives[("moe.dispatch", "F")], "gather": collectives[("moe.all-gather", "F")]}


def test_r_1_is_uniform_routing_to_the_bit():
    for ep, tp in ((1, 1), (2, 2), (4, 1)):
        assert _work(_moe(moe_load_imbalance=1.0), ep, tp) == _work(_moe(), ep, tp)
    for keys in ({}, {"moe_expert_capacity_factor": 0.5}, {"moe_expert_capacity_factor": 1.25,
                                                           "moe_pad_expert_input_to_capacity": True}):
        one, plain = _moe(moe_load_imbalance=1, **keys), _moe(**keys)
        assert _work(one) == _work(plain)
        assert mlp_activation_bytes(one, 2, 16, None, 2) == mlp_activation_bytes(plain, 2, 16)
        assert layer_activation_bytes(one, 1, 2, "none", True) == layer_activation_bytes(plain, 1, 2, "none", True)
        assert weight_gradient_bytes(one, 1, 2, True, None, 2) == weight_gradient_bytes(plain, 1, 2, True)


def test_r_2_doubles_the_busiest_ranks_expert_work_by_hand():
    # TP 2 under SP: every rank routes 16 tokens, 32 rows; the busiest of EP 2 takes 2 × 32 = 64 (the most it can:
    # EP · 16 tokens · min(k, E/EP) = 2 · 16 · 2); gathered over ETP = 2: 128 rows over its E/EP = 2 experts, 64 each.
    # A local expert's fc1 is 64 × h × 2f/ETP, its fc2 64 × f/ETP × h: forward 2 experts · 6 · 64 · h · (f/ETP) FLOPs,
    # the data and weight gradients twice that again
    uniform, busiest = _named(_work(_moe())), _named(_work(_moe(moe_load_imbalance=2.0)))
    assert (busiest["fc1"].m, busiest["fc1"].k, busiest["fc1"].n, busiest["fc1"].count) == (64, H, 2 * F // 2, 2)
    assert uniform["fc1"].m == 32
    assert _expert_flops(_work(_moe(moe_load_imbalance=2.0))) == 3 * 2 * 6 * 64 * H * (F // 2) == 9437184
    assert _expert_flops(_work(_moe())) == 9437184 // 2
    # the all-to-alls carry the busiest rank's 64 rows of h (2 bytes), the ETP gathers 128, the sort by expert 128
    assert (busiest["dispatch"], busiest["gather"], busiest["sort"]) == (64 * H * 2, 128 * H * 2, 2 * 128 * H)
    assert (uniform["dispatch"], uniform["gather"], uniform["sort"]) == (32 * H * 2, 64 * H * 2, 2 * 64 * H)
    # its permute and unpermute handle its own 16 tokens' 32 rows, as every rank's
    assert (busiest["permute"], busiest["unpermute"]) == (uniform["permute"], uniform["unpermute"]) == \
        (2 * 32 * H, 32 * H + 32 + 16 * H)


def test_r_is_read_as_written_and_rounded_up_to_a_row():
    # 32 rows × 1.1 is 35.2 (the float product 35.2000…03): 36 rows, × 1.25 exactly 40, never 41
    assert [routed_rows(_moe(moe_load_imbalance=r), 16, 2) for r in (1.1, 1.25, 1.5, 1.01)] == [36, 40, 48, 33]
    assert routed_rows(_moe(moe_load_imbalance=1.1), 5) == 11  # 1.1 × 10 rows: 11, as written (the float's 11.000…02)
    assert routed_rows(_moe(moe_load_imbalance=1.1), 16, sent=True) == 32  # a rank's own rows: the mean


def test_r_is_bounded_by_what_every_ranks_tokens_can_send():
    # EP 1: one rank takes every row, R changes nothing. EP 2 of 4 experts, top-2: a token sends at most 2 rows to a
    # rank's 2 experts, 2 ranks' 16 tokens 64 rows: 2 × the mean. 8 experts at EP 8: one expert a rank, a token at
    # most 1 row to it, 8 ranks' 16 tokens 128 rows: 4 × the mean 32
    assert _work(_moe(moe_load_imbalance=3.0), ep=1) == _work(_moe(), ep=1)
    assert _work(_moe(moe_load_imbalance=3.0)) == _work(_moe(moe_load_imbalance=2.0))
    assert [routed_rows(_moe(8, moe_load_imbalance=r), 16, 8) for r in (3.0, 4.0, 6.0)] == [96, 128, 128]
    assert routed_rows(_moe(8, moe_load_imbalance=6.0), 16) == 192  # no EP given: not bounded


def test_a_capacity_caps_the_busiest_rank():
    # C = 1.25 from 16 tokens' 32 rows over 4 experts: c = ceil(8 · 1.25) = 10 rows an expert from each rank, the
    # busiest rank's 4 · 10 = 40 at most (R above 1.25 dropped); R = 1.1 takes 36 < 40, kept
    capped = {r: routed_rows(_moe(moe_expert_capacity_factor=1.25, moe_load_imbalance=r), 16, 2)
              for r in (1.1, 1.25, 2.0)}
    assert capped == {1.1: 36, 1.25: 40, 2.0: 40}
    assert _work(_moe(moe_expert_capacity_factor=1.25, moe_load_imbalance=2.0)) == \
        _work(_moe(moe_expert_capacity_factor=1.25, moe_load_imbalance=1.25))
    assert _named(_work(_moe(moe_expert_capacity_factor=1.25, moe_load_imbalance=2.0)))["fc1"].m == 2 * 40 // 2
    # padded, every expert takes exactly its capacity from every rank: R changes nothing
    padded = {"moe_expert_capacity_factor": 1.25, "moe_pad_expert_input_to_capacity": True}
    for r in (1.1, 2.0, 3.0):
        assert _work(_moe(moe_load_imbalance=r, **padded)) == _work(_moe(**padded))
    # C = 0.5 drops below the mean already: c = 4, 16 rows at most whatever R
    assert _work(_moe(moe_expert_capacity_factor=0.5, moe_load_imbalance=2.0)) == \
        _work(_moe(moe_expert_capacity_factor=0.5))


def test_the_busiest_ranks_kept_rows_by_hand():
    # TP 2, 8 experts at EP 2: 16 tokens routed, 32 rows, the busiest 64. Kept a micro-batch (2 bytes a value): each of
    # the ETP·64 gathered rows' fc1 input (h), gate and up (2f/ETP), SwiGLU's product (f/ETP); the rank's own 32
    # permuted rows unpermute keeps (h); the router's fp32 probabilities of its 16 tokens (E)
    c = _moe(8, moe_load_imbalance=2.0)
    kept = 2 * 64 * 2 * (H + 3 * F // 2) + 32 * 2 * H + 16 * 8 * 4
    assert kept == 70144
    assert mlp_activation_bytes(c, 2, 16, None, 2) * S == kept
    assert mlp_activation_bytes(c, 2, 16, None, 1) == mlp_activation_bytes(_moe(8), 2, 16)  # EP 1: uniform
    # M_W: the router's input and logits' gradient (2·(h + E) a token, /TP), then per row W's fc1 input and output
    # gradient, fc2's input and output gradient (2·(2h + 3f/ETP)), on 64 · ETP rows of the 32 tokens' ranks' share
    held = 2 * (H + 8) * 16 + 64 * 2 * 2 * (2 * H + 3 * F // 2)
    assert expert_weight_gradient_bytes(c, 2, True, 16, None, 2) * S == held


@pytest.mark.parametrize("recompute,schedule", [("none", "1f1b"), ("selective", "zb-h1"), ("full", "1f1b")])
def test_a_larger_r_is_never_faster_and_never_holds_less(recompute, schedule):
    # Mixtral-8x7B at seq 1024, EP 4 of 8 experts: up to 4 · min(2, 2)/2 = 4 × the mean
    seen = []
    for r in (None, 1.1, 1.5, 2.0, 3.0, 4.0, 5.0):
        result, _ = archsim.train(MIXTRAL, cluster=CLUSTER, pp=4, dp=4, ep=4, global_batch=16, seq=1024, dtype="bf16",
                                  recompute=recompute, schedule=schedule, moe_load_imbalance=r)
        seen.append((result.iteration_seconds, result.peak_memory_gib))
    for (t0, m0), (t1, m1) in pairwise(seen):
        assert t1 >= t0 and m1 >= m0
    assert seen[3][0] > seen[0][0] * 1.2 and seen[3][1] > seen[0][1]  # R = 2 costs time and memory
    assert seen[-1] == seen[-2]  # R = 5 is past the bound of 4


def test_a_ratio_below_1_or_on_a_dense_model_is_refused():
    with pytest.raises(InputError, match=r"expected a ratio >= 1, got '0.5'"):
        _moe(moe_load_imbalance=0.5)
    with pytest.raises(InputError, match="expected a ratio >= 1"):
        _moe(moe_load_imbalance=float("inf"))
    with pytest.raises(InputError, match="small is dense"):
        TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, moe_load_imbalance=1.5)
