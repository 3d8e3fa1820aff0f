"""SPP's ``gpipe`` baseline runs GPipe's fill-drain on every stage, the last one too.

The SPP paper's GPipe is "a schedule to execute all FP before starting any BP" (001_655b4b8cd650573f.txt
§II); GPipe's own figure (Huang et al. 2019, Fig. 2c) runs the last device's backwards after all its
forwards, and torch's ``ScheduleGPipe`` (archsim's one GPipe, ``policies.stage_orders.gpipe``) does
the same, oldest micro-batch first. archsim's baseline used to run the last stage's forward and
backward of each micro-batch as one block (PE's FB), oldest first, while every other stage took its
backwards newest first: the hand-worked cases below gave 12 s and 38 s on that order, and fail on it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from archsim.partition.profile import profile_from_costs
from archsim.policies.stage_orders import gpipe as torch_gpipe
from archsim.spp.baselines import baseline
from archsim.spp.pe import pe_makespan
from archsim.spp.pe_order import StagePlan, gpipe_newest_first_order, gpipe_order, pe_finish_time
from archsim.spp.topology import Topology


def test_two_stages_with_channels_by_hand():
    """Stage 1: F = 1, B = 2; stage 2: F = 1, B = 2; c^f = c^b = 0.5; M = 2 (seconds).

    * ``gpipe`` (oldest first): stage 1 F0 [0, 1), F1 [1, 2); cf0 [1, 1.5), cf1 [2, 2.5); stage 2
      F0 [1.5, 2.5), F1 [2.5, 3.5), B0 [3.5, 5.5), B1 [5.5, 7.5); cb0 [5.5, 6), cb1 [7.5, 8); stage 1
      B0 [6, 8), B1 [8, 10) → 10.
    * ``gpipe-newest-first``: stage 2 B1 [3.5, 5.5), B0 [5.5, 7.5); cb1 [5.5, 6), cb0 [7.5, 8); stage 1
      B1 [6, 8), B0 [8, 10) → 10.
    * The old order: stage 2 FB0 [1.5, 4.5), FB1 [4.5, 7.5); cb0 [4.5, 5), cb1 [7.5, 8); stage 1 waits
      for B1 first: B1 [8, 10), B0 [10, 12) → 12.
    """
    plans = [StagePlan(1.0, 2.0, 0.0, 0.5, 0.5), StagePlan(1.0, 2.0)]
    assert pe_finish_time(plans, 2, "gpipe") == 10.0
    assert pe_finish_time(plans, 2, "gpipe-newest-first") == 10.0
    _, timeline = pe_makespan(plans, 2, "gpipe-newest-first")
    ran = timeline.to_frame().set_index("op")
    assert [tuple(ran.loc[op, ["start", "end"]]) for op in ("B2:1", "B2:0", "cb1:1", "cb1:0", "B1:1", "B1:0")] == \
        [(3.5, 5.5), (5.5, 7.5), (5.5, 6.0), (7.5, 8.0), (6.0, 8.0), (8.0, 10.0)]


def test_five_layer_baseline_by_hand():
    """Five layers, forward 1, 1, 2, 1, 1 s and backward twice that, no activation traffic, three GPUs,
    M = 3. GPipe's compute balance cuts {l0, l1} | {l2} | {l3, l4}: every stage F = 2, B = 4.

    Fill-drain, oldest first: stage 1 F [0, 2) [2, 4) [4, 6); stage 2 F [2, 4) [4, 6) [6, 8); stage 3
    F [4, 6) [6, 8) [8, 10), B0 [10, 14), B1 [14, 18), B2 [18, 22); stage 2 B [14, 18) [18, 22)
    [22, 26); stage 1 B [18, 22) [22, 26) [26, 30) → 30 s = (S − 1 + M)(F + B), GPipe's closed form.
    The old order: stage 3 FB0 [4, 10), FB1 [10, 16), FB2 [16, 22); stage 2 newest first B2 [22, 26),
    B1 [26, 30), B0 [30, 34); stage 1 B2 [26, 30), B1 [30, 34), B0 [34, 38) → 38 s.
    """
    profile = profile_from_costs([f"l{i}" for i in range(5)], [1.0, 1.0, 2.0, 1.0, 1.0], [0.0] * 5,
                                 [2.0, 2.0, 4.0, 2.0, 2.0], weight_bytes=[0] * 5)
    links = np.full((3, 3), 100.0)
    np.fill_diagonal(links, 0.0)
    plan = baseline("gpipe", profile, Topology("three", (0, 0, 0), links), 3)
    assert [stage.layers for stage in plan.stages] == [("l0", "l1"), ("l2",), ("l3", "l4")]
    assert plan.makespan == pytest.approx(30.0)


@pytest.mark.parametrize("stages, microbatches", [(1, 1), (1, 3), (2, 2), (3, 5), (4, 8), (5, 2)])
def test_each_stage_runs_the_one_gpipe(stages, microbatches):
    """``gpipe``'s per-stage order is torch's ``ScheduleGPipe`` (stage_orders.gpipe), action for action;
    ``gpipe-newest-first`` the same forwards, then the backwards in reverse (GPipe's Fig. 2c)."""
    _, ours = gpipe_order(stages, microbatches)
    _, newest = gpipe_newest_first_order(stages, microbatches)
    torch = torch_gpipe(stages, microbatches)
    for n in range(1, stages + 1):
        expected = [(a.kind, a.microbatch) for a in torch.ranks[n - 1]]
        assert [(block[0], m) for block, m in ours[n]] == expected
        assert [block[1] for block, _ in ours[n]] == [n] * 2 * microbatches
        forwards = expected[:microbatches]
        assert [(block[0], m) for block, m in newest[n]] == forwards + expected[microbatches:][::-1]


@pytest.mark.parametrize("seed", range(40))
def test_the_two_gpipe_orders_take_the_same_time(seed):
    """Every backward waits for the last stage's last forward, and the micro-batches cost the same, so
    the backward order cannot change the makespan (docs/papers/spp.md): drawn plans, channels and
    AllReduces, ties included."""
    rng = random.Random(seed)
    stages, microbatches = rng.randint(1, 6), rng.randint(1, 9)

    def time() -> float:
        return rng.choice([0.0, 1.0, 2.0, rng.uniform(0.01, 5.0)])

    plans = [StagePlan(time(), time(), rng.choice([0.0, time()]), time() if s + 1 < stages else 0.0,
                       time() if s + 1 < stages else 0.0) for s in range(stages)]
    assert pe_finish_time(plans, microbatches, "gpipe-newest-first") == \
        pytest.approx(pe_finish_time(plans, microbatches, "gpipe"), rel=1e-12)
