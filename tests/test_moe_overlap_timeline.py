"""The 1F1B all-to-all overlap (``--overlap-moe-expert-parallel-comm``; archsim/training/moe_overlap.py) timed in the
event simulator: each merged step's hidden seconds come off its forward action before the pipeline is simulated, so a
rank that hides seconds hands its tensors over sooner and its neighbours' waits change; the timeline's makespan is the
iteration. Counted by hand on a pipeline small enough to draw, where taking each rank's hidden seconds off its span
(archsim until 2026-12-04) gives another figure; and on train's own run, the breakdown adding up to the iteration."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import archsim
from archsim.policies.stage_orders import published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import run_order
from archsim.training.in_flight import in_flight_peaks
from archsim.training.moe_overlap import paired_hidden, paired_seconds, warmup_forwards, with_overlap
from archsim.training.parallel import Parallelism
from archsim.training.piece_cost import PieceCost
from archsim.training.search_cost import pipeline_seconds
from archsim.workload.layer_kinds import LAYER
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")  # 2 servers of 8 H100s
TINY = TransformerConfig("tiny", "llama", 4, 1024, 8, 1024, 1024, 2048, 8, False, experts=16, experts_per_token=4,
                         expert_ffn=1024)
# one layer a virtual stage: forward 2 s of compute + 1 s of all-to-all, backward 4 s (I 3 + W 1) + 1 s
LAYER_COST = PieceCost(forward=2.0, backward_input=3.0, backward_weight=1.0, recompute=0.0, tp_forward=0.0,
                       tp_backward=0.0, ops=(), ep_forward=1.0, ep_backward=1.0)


def _ends(timeline, ranks: int) -> list[float]:
    """Each rank's last action's end (s)."""
    return [float(timeline.slots.end[timeline.slots.processor == r].max()) for r in range(ranks)]


def test_two_ranks_two_chunks_by_hand():
    """PP 2, VPP 2, m 2, four one-layer virtual stages (0, 2 on rank 0; 1, 3 on rank 1), F = 3 s, B = I + W = 5 s,
    hops free. Megatron's warm-up with the overlap: (2 − r − 1)·2 + (2 − 1)·2 + 1 = 5 forwards on rank 0 (it has 4:
    no merged step), 3 on rank 1, whose 4th forward 3F1 merges with its 1st backward 3B0, hiding
    min(1, 4) + min(1, 2) = 2 s: 3F1 takes 1 s. Without the overlap (each box its start and end, s)::

        r0  0F0 0-3  0F1 3-6  2F0 6-9   2F1 9-12                2B0 17-22      2B1 25-30  0B0 30-35  0B1 35-40
        r1           1F0 3-6  1F1 6-9   3F0 9-12  3B0 12-17  3F1 17-20  3B1 20-25  1B0 25-30  1B1 30-35

    40 s. With it, simulated: 3F1 17-18, 3B1 18-23; 2B1 waits for 3B1, 23-28; 1B0 after 3B1 and 2B0 (22), 23-28;
    0B0 after 2B1 and 1B0, 28-33; 1B1 after 2B1, 28-33; 0B1 after 1B1, 33-38::

        r0  ... 2B0 17-22  2B1 23-28  0B0 28-33  0B1 33-38
        r1  ... 3F1 17-18  3B1 18-23  1B0 23-28  1B1 28-33

    38 s: rank 1's merged step hands 3B1's gradient to rank 0 2 s sooner. Taking each rank's hidden seconds off its
    span gives max(40 − 0, 35 − 2) = 40 s: rank 0, which hides nothing, ends it and keeps its wait."""
    c = with_overlap(TINY, True, False)
    par = Parallelism(pp=2, dp=2, global_batch=4, recompute="none", interleave=2, ep=2)
    assert par.microbatches == 2 and (warmup_forwards(par, 0), warmup_forwards(par, 1)) == (5, 3)
    order = published_order("interleaved-1f1b", 2, 2, 2)
    pieces = [{LAYER: LAYER_COST}] * 2
    seconds = paired_seconds(c, par, order, pieces)
    assert seconds is not None
    names = [str(a) for rank in order.ranks for a in rank]
    assert {names[j]: float(s) for j, s in enumerate(seconds) if s} == {"3F1": 2.0}
    assert paired_hidden(c, par, order, pieces) == (0.0, 2.0)
    profile = StageProfile((3.0,) * 4, (4.0,) * 4, (1.0,) * 4, 0.0)
    off, on = run_order(order, profile), run_order(order, profile, seconds)
    assert off.timeline.makespan == 40.0 and _ends(off.timeline, 2) == [40.0, 35.0]
    assert on.timeline.makespan == 38.0 and _ends(on.timeline, 2) == [38.0, 33.0]
    assert max(e - h for e, h in zip(_ends(off.timeline, 2), (0.0, 2.0), strict=True)) == 40.0  # the old estimate
    assert paired_seconds(TINY, par, order, pieces) is None  # off: nothing shortened


@pytest.mark.parametrize(("pp", "chunks"), [(1, 1), (2, 1), (2, 2), (3, 3), (4, 2), (8, 4)])
def test_a_merged_steps_backward_runs_just_before_its_forward(pp, chunks):
    """The pairing's premise (paired_seconds' docstring): in each published order forward k + w directly follows
    backward k on its rank, so shortening the forward ends the pair where Megatron's merged step ends."""
    for m in (pp, 2 * pp, 3 * pp + (pp == 1)):
        schedule = "1f1b" if pp == 1 else "interleaved-1f1b"
        cols = published_order(schedule, pp, m, chunks).columns
        par = Parallelism(pp=pp, dp=1, global_batch=m, recompute="none", interleave=chunks)
        for r in range(pp):
            lo, hi = int(cols.bounds[r]), int(cols.bounds[r + 1])
            forward = cols.kind[lo:hi] == 0
            pairs = list(zip(np.flatnonzero(forward)[warmup_forwards(par, r):], np.flatnonzero(~forward)))
            assert all(f == b + 1 for f, b in pairs)


def test_trains_breakdown_adds_up_to_the_simulated_iteration():
    """PP 2, VPP 2, EP 4 on 16 H100s: the finishing rank's categories sum to the iteration (its wait is what the
    timeline leaves, the hidden seconds off its EP time and off its actions); its busy time on the timeline is its
    passes less what its merged steps hid."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        on, _ = archsim.train(TINY, cluster=CLUSTER, dtype="bf16", recompute="none", global_batch=16, pp=2, dp=4, ep=4,
                              interleave=2, overlap_moe_expert_parallel_comm=True)
        off, _ = archsim.train(TINY, cluster=CLUSTER, dtype="bf16", recompute="none", global_batch=16, pp=2, dp=4,
                               ep=4, interleave=2)
    assert sum(on.breakdown.values()) == pytest.approx(on.iteration_seconds, rel=1e-12)
    assert on.breakdown["pipeline_bubble_and_p2p"] >= 0
    slots, slots_off = on.run.timeline.slots, off.run.timeline.slots
    busy = [float((slots.end - slots.start)[slots.processor == r].sum()) for r in range(2)]
    busy_off = [float((slots_off.end - slots_off.start)[slots_off.processor == r].sum()) for r in range(2)]
    par = on.parallelism
    assert par is not None
    hidden = on.breakdown["ep_communication"] - off.breakdown["ep_communication"]
    assert hidden < 0
    assert busy[on.finishing_rank] == pytest.approx(busy_off[on.finishing_rank] + hidden, rel=1e-12)


def test_the_closed_form_paces_by_the_busiest_rank_after_its_hidden_seconds():
    """The search's interleaved closed form, m × the busiest rank's chunks + (p − 1) × a chunk's F + B, with each
    rank's hidden seconds off its own steady state. PP 2, VPP 2, m 4, no hop: rank 0's chunks F 1, B 2 (it hides
    0.5 s), rank 1's F 3, B 5 (it hides 4 s): max(4 × 6 − 0.5, 4 × 16 − 4) + 1 × 8 = 68 s; the least-hiding rank's
    seconds off the span would give 4 × 16 + 8 − 0.5 = 71.5 s. PP 1 (1F1B): m·(F + B) less the one rank's."""
    uneven = StageProfile((1.0, 3.0, 1.0, 3.0), (2.0, 5.0, 2.0, 5.0), (0.0,) * 4, 0.0)
    assert pipeline_seconds("interleaved-1f1b", uneven, 2, 4, 2) == 72.0
    assert pipeline_seconds("interleaved-1f1b", uneven, 2, 4, 2, (0.5, 4.0)) == 68.0
    assert pipeline_seconds("1f1b", StageProfile((3.0,), (4.0,), (1.0,), 0.0), 1, 3, 1, (2.0,)) == 3 * 8.0 - 2.0


def test_extra_warmup_forward_holds_no_more_chunks():
    """PP 2, VPP 2, m 4, counted by hand. Plain interleaved 1F1B: rank 0 runs 4 warm-up forwards, then F4 before B0,
    so 5 chunk-forwards are held when B0 starts; rank 1 runs 2, then F2: 3. With the overlap Megatron's warm-up is one
    longer (5 and 3) and each merged step starts holding as many. The walk's count and the pairing's warm-up agree."""
    par = Parallelism(pp=2, dp=1, global_batch=4, recompute="none", interleave=2)
    assert in_flight_peaks("interleaved-1f1b", 2, 4, 2) == [5, 3]
    assert [warmup_forwards(par, r) for r in range(2)] == [5, 3]
