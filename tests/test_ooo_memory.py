"""Peak stash memory of the out-of-order backprop pipelines, counted by hand from each schedule's op
order: a layer's stash (its input a^{l-1}) is taken when its F starts and given back when its G ends.

The peaks on ``bert_large_blocks`` (4 devices, 4 micro-batches) match for gpipe, ooo-pipe1 and
ooo-pipe2 though the makespans differ; these tests show why that is right and not a bound: the
peak does depend on the schedule (the tiny chain below), and on BERT's 24 identical blocks every
policy runs each device's 24 forwards before its first weight gradient."""

import pytest

from archsim.array.config import ArrayConfig
from archsim.partition import build_profile
from archsim.partition.profile import collapse_profile
from archsim.policies.ooo import layer_chain, ooo_schedule, schedule_metrics
from archsim.workload import load_network
from archsim.workload.shipped import block_groups

MIB = 1 << 20


def _order(timeline, processor):
    frame = timeline.to_frame()
    mine = frame[frame.processor == processor].sort_values("start")
    return [op for op in mine.op if op != "flush"]


def _first_g_after_every_f(timeline, processor) -> bool:
    order = _order(timeline, processor)
    first_g = next(i for i, op in enumerate(order) if op.startswith("G"))
    return all(not op.startswith("F") for op in order[first_g:])


# 4 layers, F = D = G = 1, stash 1, 2, 4, 8 bytes (distinct powers of two, so a sum names its layers)
TINY = layer_chain([1] * 4, [1] * 4, [1] * 4, stash_bytes=[1, 2, 4, 8])


@pytest.mark.parametrize("policy", ["gpipe", "ooo-pipe1"])
def test_flushed_contiguous_peak_holds_every_microbatch(policy):
    """Contiguous allocation on 2 devices: d1 holds l1, l2 (1 + 2 bytes), d2 l3, l4 (4 + 8). The flush
    runs all 3 micro-batches' F before any G, so each device peaks at 3 × its layers' stash."""
    problem, timeline = ooo_schedule(TINY, 2, 3, policy, flush=True)
    assert timeline.peak_memory() == {"d1": 3 * (1 + 2), "d2": 3 * (4 + 8)}
    assert schedule_metrics(problem, timeline)["peak_activation_bytes"] == 36


def test_ooo_pipe2_peak_follows_its_op_order():
    """Modulo allocation: d1 holds l1, l3 (1 + 4 bytes), d2 l2, l4 (2 + 8). Without a flush, by hand
    (unit costs; δ ranked over F over G): d1 runs F1:0@0, F1:1@1, F3:0@2 (F2:0 ended at 2, F3 of an
    earlier micro-batch ranks over F1:2), F3:1@3, F1:2@4 — 1 + 1 + 4 + 4 + 1 = 11 held — then D3:0@5,
    G3:0@6 (−4), G1:0@7 (−1) before F3:2@9 (+4): peak 11, below the 3 × 5 = 15 of all its stashes.
    d2's six F all start before its first G (G4:0@12, δ and F ranked over it): 3 × (2 + 8) = 30."""
    _, timeline = ooo_schedule(TINY, 2, 3, "ooo-pipe2", flush=False)
    assert _order(timeline, "d1")[:7] == ["F1:0", "F1:1", "F3:0", "F3:1", "F1:2", "D3:0", "G3:0"]
    assert timeline.peak_memory() == {"d1": 11, "d2": 30}
    assert not _first_g_after_every_f(timeline, "d1") and _first_g_after_every_f(timeline, "d2")
    # with a flush d1 holds every stash too: the peak is the schedule's, not a bound
    assert ooo_schedule(TINY, 2, 3, "ooo-pipe2", flush=True)[1].peak_memory() == {"d1": 15, "d2": 30}


@pytest.mark.parametrize("policy, flush", [("gpipe", True), ("ooo-pipe1", True), ("ooo-pipe2", False)])
def test_identical_layers_peak_alike_when_every_forward_precedes_the_first_g(policy, flush):
    """Every layer's stash s = 5 (BERT's blocks are alike): 2 layers per device under either allocation,
    2 micro-batches, and each device's 4 F start before its first G, so each peaks at 2 × 2 × 5 = 20."""
    chain = layer_chain([1] * 4, [1] * 4, [1] * 4, stash_bytes=[5] * 4)
    _, timeline = ooo_schedule(chain, 2, 2, policy, flush=flush)
    assert all(_first_g_after_every_f(timeline, d) for d in ("d1", "d2"))
    assert timeline.peak_memory() == {"d1": 20, "d2": 20}


@pytest.fixture(scope="module")
def bert_blocks():
    per_op = build_profile(load_network("bert_large"), ArrayConfig(32, 32), 32, "exact")
    return collapse_profile(per_op, block_groups(load_network("bert_large")))


def test_bert_block_stash_by_hand(bert_blocks):
    """Batch 32, sequence 512, hidden 1024, 16 heads, FFN 4096, 1 byte: a [32, 512, 1024] tensor is
    16 MiB. A block's ops hold their inputs: qkv, scores, out, add1, ln1, ffn1, add2, ln2 16 MiB each,
    softmax and context the [32, 16, 512, 512] scores/probabilities 128 MiB each, gelu and ffn2 the
    [32, 512, 4096] 64 MiB each: 512 MiB. The first block's qkv (the network's first op) computes no
    δ, so its δ bytes lack those 16 MiB, but its G reads its input: it holds them like every qkv."""
    block = 8 * 16 * MIB + 2 * 128 * MIB + 2 * 64 * MIB
    assert block == 512 * MIB
    assert bert_blocks.stash_bytes.tolist() == [block] * 24
    assert bert_blocks.delta_bytes.tolist() == [block - 16 * MIB] + [block] * 23


@pytest.mark.parametrize("policy, flush", [("gpipe", True), ("ooo-pipe1", True), ("ooo-pipe2", False)])
def test_bert_blocks_peak_alike_across_policies(bert_blocks, policy, flush):
    """4 devices hold 6 blocks each (blocks 1–6 … 19–24 contiguous; i, i + 4, … modulo), and every
    policy runs all 4 × 6 forwards of a device before its first G, so every device peaks at
    4 × 6 × 512 MiB = 12 GiB (d1 too: block 1 holds its first op's input for that op's G)."""
    problem, timeline = ooo_schedule(bert_blocks, 4, 4, policy, flush=flush, first_layer_delta=True)
    assert all(_first_g_after_every_f(timeline, f"d{k}") for k in range(1, 5))
    full = 4 * 6 * 512 * MIB
    assert timeline.peak_memory() == {"d1": full, "d2": full, "d3": full, "d4": full}
    assert schedule_metrics(problem, timeline)["peak_activation_bytes"] == 12 * 1024 * MIB


def test_deferred_weight_gradients_hold_their_output_gradients_by_hand():
    """3 layers on 1 device, 2 micro-batches, F = D = G = 1; inputs kept (stash) 1, 2, 4 bytes, outputs (so
    output gradients) 16, 32, 64. The flush ends the 6 forwards at 6: stash 2 × 7 = 14, held to each G.
    ooo-pipe1 (δ before G): D3:0 [6, 7), D2:0 [7, 8), D3:1 [8, 9), D2:1 [9, 10), then G3:0 [10, 11), G2:0,
    G1:0, G3:1 [13, 14), G2:1 [14, 15), G1:1. Each δ'd layer's output gradient waits for its G: l3 of
    micro-batch 0 over [7, 10), l2's [8, 11), l3 of 1 [9, 13), l2 of 1 [10, 14). Over [9, 10): 64 + 32 + 64
    beside the 14: peak 174. gpipe runs each layer's G right before its δ: nothing waits, 14. Failed before:
    the peak counted the stash alone, 14 for both (vgg16 conv, 4 devices, 8 micro-batches: 1477 MB both)."""
    import archsim
    from archsim.partition.profile import profile_from_costs
    from archsim.policies.ooo import output_gradients

    costs = profile_from_costs(["l1", "l2", "l3"], [1] * 3, [1] * 3, [1] * 3, activation_bytes=[16, 32, 64],
                               stash_bytes=[1, 2, 4])
    problem, timeline = ooo_schedule(costs, 1, 2, "ooo-pipe1", flush=True)
    assert _order(timeline, "d1")[6:10] == ["D3:0", "D2:0", "D3:1", "D2:1"]
    assert schedule_metrics(problem, timeline, output_gradients(costs))["peak_activation_bytes"] == 174
    assert schedule_metrics(problem, timeline)["peak_activation_bytes"] == 14  # the stash alone
    problem, timeline = ooo_schedule(costs, 1, 2, "gpipe", flush=True)
    assert schedule_metrics(problem, timeline, output_gradients(costs))["peak_activation_bytes"] == 14
    rows = {p: archsim.schedule(costs, policy=p, processors=1, microbatches=2).row["peak_activation_bytes"]
            for p in ("gpipe", "ooo-pipe1")}
    assert rows == {"gpipe": 14, "ooo-pipe1": 174}
    # per device, on a timeline of Slot records as on the engine's arrays: the one device holds it all
    from dataclasses import replace

    from archsim.policies.ooo import held_peaks

    problem, timeline = ooo_schedule(costs, 1, 2, "ooo-pipe1", flush=True)
    records = replace(timeline, slots=tuple(timeline.slots))
    assert held_peaks(problem, records, output_gradients(costs)) == {"d1": 174}
    # one layer a device (3 devices), flushed at 4: d3 D3:0 [4, 5), D3:1 [5, 6), G3:0 [6, 7), G3:1: l3's gradient
    # waits [5, 6) for micro-batch 0 and [6, 7) for 1, 64 at a time beside 2 × 4 of stash: 72. d2 D2:0 [5, 6),
    # D2:1 [6, 7) (δ over the ready G2:0), G2:0 [7, 8): 32 at a time beside 2 × 2: 36. d1 has no δ: its stash, 2.
    problem, timeline = ooo_schedule(costs, 3, 2, "ooo-pipe1", flush=True)
    assert held_peaks(problem, timeline, output_gradients(costs)) == {"d1": 2, "d2": 36, "d3": 72}
