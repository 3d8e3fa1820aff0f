"""GPipe's and 1F1B's per-rank orders are written once (archsim.rank_orders); the policies' numpy orders and
SPP's PE blocks are translations of it. Brute force over p ≤ 4 ranks and m ≤ 6 micro-batches: the one
generator against each schedule's rule stated from scratch, and every derived order against the generator.

The rules, as the schedules' authors state them:

* GPipe (torch's ``ScheduleGPipe``): every forward, then every backward, oldest first; GPipe's Fig. 2c
  (Huang et al. 2019) draws the backwards newest first.
* 1F1B (Megatron-LM, torch's ``Schedule1F1B``): rank r holds at most p − r micro-batches forward and not yet
  backward; it runs a forward while it may and one remains, else the oldest backward.
* looped BFS (torch's ``ScheduleLoopedBFS``): on rank r's chunks r, r + p, …, every micro-batch's forward of a
  chunk before the next chunk's, then the backwards from the last chunk, newest micro-batch first.
"""

from __future__ import annotations

import pytest

from archsim import rank_orders
from archsim.policies import stage_orders
from archsim.spp.pe_order import fill_drain_blocks, gpipe_newest_first_order, gpipe_order

SIZES = [(p, m) for p in range(1, 5) for m in range(1, 7)]


def one_f_one_b_by_rule(p: int, r: int, m: int) -> list[tuple[int, str, int]]:
    """Rank r's 1F1B from its in-flight limit p − r, one action at a time."""
    order, forwards, backwards = [], 0, 0
    while backwards < m:
        if forwards < m and forwards - backwards < p - r:
            order.append((r, "F", forwards))
            forwards += 1
        else:
            order.append((r, "B", backwards))
            backwards += 1
    return order


def fill_drain_by_rule(stages: list[int], m: int, newest_first: bool) -> list[tuple[int, str, int]]:
    forward = [(s, "F", i) for s in stages for i in range(m)]
    backward = [(s, "B", i) for s in reversed(stages) for i in (reversed(range(m)) if newest_first else range(m))]
    return forward + backward


@pytest.mark.parametrize("p, m", SIZES)
def test_the_one_generator_follows_each_schedules_rule(p, m):
    for r in range(p):
        assert rank_orders.actions(rank_orders.one_f_one_b(p, r, m)) == one_f_one_b_by_rule(p, r, m)
        for newest_first in (False, True):
            for v in (1, 2, 3):
                chunks = list(range(r, p * v, p))
                assert rank_orders.actions(rank_orders.fill_drain(chunks, m, newest_first)) == \
                    fill_drain_by_rule(chunks, m, newest_first)


def test_1f1b_by_hand():
    """p = 3, m = 5, rank 0: two warm-up forwards, three F/B pairs, two cool-down backwards."""
    assert [f"{k}{i}" for _, k, i in rank_orders.actions(rank_orders.one_f_one_b(3, 0, 5))] == \
        ["F0", "F1", "F2", "B0", "F3", "B1", "F4", "B2", "B3", "B4"]


@pytest.mark.parametrize("p, m", SIZES)
def test_the_policies_orders_are_the_generators(p, m):
    derived = {"gpipe": stage_orders.gpipe(p, m), "1f1b": stage_orders.one_f_one_b(p, m)}
    for name, order in derived.items():
        assert (order.name, order.stages, order.microbatches) == (name, p, m)
        for r, ranked in enumerate(order.ranks):
            expected = fill_drain_by_rule([r], m, False) if name == "gpipe" else one_f_one_b_by_rule(p, r, m)
            assert [tuple(a) for a in ranked] == expected
    for v in (1, 2, 3):
        looped = stage_orders.looped_bfs(p, m, v)
        assert (looped.stages, looped.microbatches) == (p * v, m)
        for r, ranked in enumerate(looped.ranks):
            assert [tuple(a) for a in ranked] == fill_drain_by_rule(list(range(r, p * v, p)), m, True)


@pytest.mark.parametrize("p, m", SIZES)
@pytest.mark.parametrize("newest_first", [False, True])
def test_spps_gpipe_blocks_are_the_generators(p, m, newest_first):
    """PE's stage n (1-based) runs rank n − 1's fill-drain; each channel's blocks are visited in the order
    of the micro-batches its receiving stage runs (forwards oldest first, backwards as the stage runs them)."""
    visits, per_stage = (gpipe_newest_first_order if newest_first else gpipe_order)(p, m)
    assert sorted(per_stage) == list(range(1, p + 1))
    for n, sequence in per_stage.items():
        assert [(block[1] - 1, block[0], i) for block, i in sequence] == fill_drain_by_rule([n - 1], m, newest_first)
    backward = list(reversed(range(m))) if newest_first else list(range(m))
    for block in fill_drain_blocks(p):
        expected = list(range(m)) if block[0] in ("F", "cf") else backward
        assert [i for b, i in visits if b == block] == expected
    assert len(visits) == m * len(fill_drain_blocks(p))
