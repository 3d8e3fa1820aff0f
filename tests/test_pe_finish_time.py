"""PE's makespan (archsim.spp.pe_order.pe_finish_time: what SPP's search, its baselines and
``plan --method pipedream`` read) against the simulator's own timeline of the same problem
(archsim.spp.pe.pe_makespan, whose engine is checked against the pure-Python reference engine
elsewhere): equal, float for float, on every plan drawn here — stage counts 1–6, 1–9 micro-batches,
zero and non-zero channels and AllReduces, ties, every PE order (PE's and GPipe's two) — and on plans
of SPP's study's size (up to 24 stages, 64 micro-batches)."""

import random

import pytest
from test_spp import random_profile, random_topology

from archsim.errors import InputError
from archsim.spp.pe import pe_makespan
from archsim.spp.pe_order import ORDERS, StagePlan, pe_finish_time
from archsim.spp.plan import spp


def _plans(rng: random.Random, stages: int) -> list[StagePlan]:
    def time() -> float:  # whole numbers make ties (the rank decides), fractions make float sums
        return rng.choice([0.0, 1.0, 2.0, 3.0, rng.uniform(0.01, 5.0)])

    return [StagePlan(forward=time(), backward=time(), allreduce=rng.choice([0.0, time()]),
                      comm_forward=time() if s + 1 < stages else 0.0,
                      comm_backward=time() if s + 1 < stages else 0.0) for s in range(stages)]


CASES = [(seed, stages, microbatches, order) for seed in range(6) for stages in range(1, 7)
         for microbatches in (1, 2, 3, 5, 9) for order in ORDERS]


@pytest.mark.parametrize("seed, stages, microbatches, order", CASES)
def test_the_makespan_equals_the_simulated_timelines(seed, stages, microbatches, order):
    plans = _plans(random.Random(seed * 1000 + stages * 10 + microbatches), stages)
    simulated, _ = pe_makespan(plans, microbatches, order)
    assert pe_finish_time(plans, microbatches, order) == float(simulated)


LARGE = [(seed, stages, microbatches, order) for seed, (stages, microbatches) in
         enumerate([(8, 32), (12, 16), (16, 64), (24, 32)]) for order in ORDERS]


@pytest.mark.parametrize("seed, stages, microbatches, order", LARGE)
def test_the_makespan_equals_the_simulated_timelines_at_spp_sizes(seed, stages, microbatches, order):
    plans = _plans(random.Random(7919 + seed), stages)
    simulated, _ = pe_makespan(plans, microbatches, order)
    assert pe_finish_time(plans, microbatches, order) == float(simulated)


def test_spp_reports_its_timelines_makespan():
    """SPP ranks its stage counts by pe_finish_time and simulates only the chosen plan: the makespan
    it reports is that timeline's."""
    for seed, layers, devices, microbatches in ((1, 4, 4, 3), (2, 6, 5, 8), (3, 5, 3, 1)):
        result = spp(random_profile(seed, layers), random_topology(seed + 3, devices), microbatches)
        assert result.makespan == float(result.timeline.makespan)


def test_a_hand_worked_two_stage_pipeline():
    """F1 = 1, B1 = 2, F2 + B2 = 3, channels 0.5 each way, 2 micro-batches. U_1 = F:0 F:1 B:0 B:1
    (the sweep reaches B1 five visits after F1); stage 2 runs FB:0 over [1.5, 4.5] and FB:1 over
    [4.5, 7.5]; cb:0 [4.5, 5], B1:0 [5, 7], cb:1 [7.5, 8], B1:1 [8, 10] → 10 s."""
    plans = [StagePlan(1.0, 2.0, 0.0, 0.5, 0.5), StagePlan(1.0, 2.0)]
    assert pe_finish_time(plans, 2) == 10.0


def test_refuses_what_pe_problem_refuses():
    for stages, microbatches, order in ((0, 2, "pe"), (2, 0, "pe"), (2, 2, "nope")):
        plans = [StagePlan(1.0, 1.0)] * stages
        with pytest.raises(InputError):
            pe_finish_time(plans, microbatches, order)
    assert set(ORDERS) >= {"pe", "gpipe", "gpipe-newest-first"}
