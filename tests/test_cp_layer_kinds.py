"""Context parallelism's K/V exchange on every layer kind: a mixture's dense layers (workload/layer_kinds.py) run
attention over the CP-split sequence as its MoE layers do, so each exchanges K/V alike — the iteration's CP time is
(layers) × one layer's exchange, not (layers − dense) ×, and link energy counts every layer's exchange bytes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.link_energy import microbatch_bytes
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.layer_kinds import DENSE, LAYER
from archsim.workload.transformer import TransformerConfig

# 4 layers, the first 2 dense (DeepSeek's first_k_dense_replace 2), standard multi-head attention (CP refuses MLA)
L, K, H, HEADS, S = 4, 2, 256, 4, 512
MIXED = TransformerConfig("tiny_mixed_cp", "llama", L, H, HEADS, 1024, S, 512, HEADS, False, experts=4,
                          experts_per_token=2, expert_ffn=128, dense_layers=tuple(range(K)))


def one_layer_exchange(par: Parallelism) -> float:
    """Seconds one MoE layer's exchange adds per micro-batch (forward + backward)."""
    layer = model_pieces(MIXED, par, single_node(gpus=par.gpus).machine(par))[LAYER]
    return layer.cp_forward + layer.cp_backward


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_every_layer_kind_gets_the_exchange(recompute):
    """The dense piece carries the same exchange as the MoE one (same attention, same K/V), its rows included."""
    par = Parallelism(1, 1, 1, 2, 1, recompute, cp=2, attention="flash")
    pieces = model_pieces(MIXED, par, single_node(gpus=2).machine(par))
    dense, moe = pieces[DENSE], pieces[LAYER]
    assert moe.cp_forward > 0 and moe.cp_backward > 0
    assert (dense.cp_forward, dense.cp_backward) == pytest.approx((moe.cp_forward, moe.cp_backward), rel=1e-12)
    assert [op for op in dense.ops if op[0].startswith("cp.")] == [op for op in moe.ops if op[0].startswith("cp.")]


def test_iteration_cp_time_is_every_layers_exchange_by_hand():
    """m micro-batches × L layers × one layer's exchange (before: (L − K) layers'), one rank (PP 1)."""
    par = Parallelism(1, 1, 1, 4, 1, "none", cp=2, attention="flash")
    result = train(MIXED, par, single_node(gpus=2).machine(par))
    assert par.microbatches == 4
    expected = par.microbatches * L * one_layer_exchange(par)
    assert result.breakdown["cp_communication"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_link_bytes_count_every_layers_exchange_by_hand(recompute):
    """TP 1, EP 1, PP 1: no collective in any piece, so a micro-batch's bytes are the exchange's alone — p2p over CP
    2: the forward sends its K/V of s/2 tokens once (again under full recompute), the backward K/V then dK/dV; on
    all L layers, dense ones included."""
    par = Parallelism(1, 1, 1, 2, 1, recompute, cp=2, attention="flash")
    one = S // 2 * HEADS * (H // HEADS) * 2 * 2  # K and V of s/2 tokens, bf16, micro-batch 1
    per_layer = (1 + (recompute == "full")) * one + 2 * one
    machine = single_node(gpus=2).machine(par)
    assert microbatch_bytes(MIXED, par, machine, 0) == pytest.approx(L * per_layer, rel=1e-12)
    assert microbatch_bytes(replace(MIXED, dense_layers=()), par, machine, 0) == pytest.approx(L * per_layer, rel=1e-12)
