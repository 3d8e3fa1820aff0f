"""Megatron-LM's interleaved 1F1B where PP does not divide the micro-batches (``train`` and ``search``'s order).

Megatron-LM (``megatron/core/pipeline_parallel/schedules.py``, ``forward_backward_pipelining_with_interleaving``,
commit d98e8a64; the group size since 4295be1a, 2024-11-01) runs micro-batches in groups of N per model chunk
(``microbatch_group_size_per_vp_stage``, ``--microbatch-group-size-per-virtual-pipeline-stage``): every forward
of a group's micro-batches through chunk 0, then chunk 1, …, the last group holding the rest of m; N in [PP, m]
and m mod N 0 or ≥ PP. Backward k runs the chunk v − 1 − (forward k's chunk), each chunk's micro-batches in order;
rank r runs (v − 1)·N + 2(PP − 1 − r) forwards before its first backward (``get_pp_rank_microbatches``), then one
forward and one backward a step. archsim runs the smallest N accepted. The references below are written from that
rule and by hand, not read from archsim."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from input_checks_common import GPT2, NODE

import archsim
from archsim.errors import InputError
from archsim.policies.stage_orders import (
    interleaved_1f1b,
    megatron_group,
    megatron_groups,
    megatron_interleaved_1f1b,
    training_order,
)
from archsim.training.held_memory import in_flight
from archsim.training.in_flight import in_flight_peaks
from archsim.training.moe_overlap import warmup_forwards
from archsim.training.parallel import Parallelism


def _rank(order, r):
    return [(a.kind, a.stage, a.microbatch) for a in order.ranks[r]]


def _smallest_n(p: int, m: int) -> int | None:
    """Megatron-LM's two checks, tried for every N from PP up."""
    for n in range(1, m + 1):
        if p <= n <= m and not 0 < m % n < p:
            return n
    return None


def _reference(p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Each rank's (kind, virtual stage, micro-batch) written from Megatron-LM's rule (module docstring)."""
    n = _smallest_n(p, m)
    assert n is not None
    table = []  # (micro-batch, chunk) of each forward
    start = 0
    while start < m:
        end = min(m, start + n)
        table += [(mb, c) for c in range(v) for mb in range(start, end)]
        start = end
    total = m * v
    ranks = []
    for r in range(p):
        warm = min((v - 1) * n + 2 * (p - 1 - r), total)
        fwd = [("F", c * p + r, mb) for mb, c in table]
        bwd = [("B", (v - 1 - c) * p + r, mb) for mb, c in table]
        actions = fwd[:warm]
        for k in range(total - warm):
            actions += [fwd[warm + k], bwd[k]]
        ranks.append(actions + bwd[total - warm:])
    return ranks


def test_group_sizes_by_hand():
    """PP 2, m 3: N = 2 leaves 1 < 2, N = 3 divides. PP 4, m 6: N = 4 leaves 2, 5 leaves 1, 6 divides. PP 4, m 9:
    N = 5 leaves 4 ≥ 4 (groups 5, 4). PP 2, m 5: N = 3 leaves 2 (Megatron-LM's own example, 3 then 2). PP 4, m 8:
    the default N = 4."""
    assert (megatron_group(2, 3), megatron_group(4, 6), megatron_group(4, 9), megatron_group(4, 8)) == (3, 6, 5, 4)
    assert (megatron_groups(4, 9), megatron_groups(2, 5), megatron_groups(4, 10)) == ([5, 4], [3, 2], [5, 5])
    for p, m in itertools.product(range(1, 7), range(1, 25)):
        assert megatron_group(p, m) == (_smallest_n(p, m) or p), (p, m)


def test_pp2_m3_two_chunks_by_hand():
    """N = 3: forwards (0,c0) (1,c0) (2,c0) (0,c1) (1,c1) (2,c1); rank 0 warms up 3 + 2 = 5, rank 1 3. Stages:
    chunk c of rank r is c·2 + r."""
    order = megatron_interleaved_1f1b(2, 3, 2)
    assert _rank(order, 0) == [("F", 0, 0), ("F", 0, 1), ("F", 0, 2), ("F", 2, 0), ("F", 2, 1),
                               ("F", 2, 2), ("B", 2, 0),
                               ("B", 2, 1), ("B", 2, 2), ("B", 0, 0), ("B", 0, 1), ("B", 0, 2)]
    assert _rank(order, 1) == [("F", 1, 0), ("F", 1, 1), ("F", 1, 2),
                               ("F", 3, 0), ("B", 3, 0), ("F", 3, 1), ("B", 3, 1), ("F", 3, 2), ("B", 3, 2),
                               ("B", 1, 0), ("B", 1, 1), ("B", 1, 2)]


def test_pp4_m6_two_chunks_by_hand():
    """N = 6: rank 0 warms up 6 + 6 = 12, every forward (chunk 0's six, chunk 1's six), then every backward (chunk
    1's, then chunk 0's); rank 3 warms up 6: chunk 0's six, then F and B of chunk 1 in turn, then chunk 0's
    backwards."""
    order = megatron_interleaved_1f1b(4, 6, 2)
    assert _rank(order, 0) == ([("F", 0, i) for i in range(6)] + [("F", 4, i) for i in range(6)]
                               + [("B", 4, i) for i in range(6)] + [("B", 0, i) for i in range(6)])
    steady = [a for i in range(6) for a in (("F", 7, i), ("B", 7, i))]
    assert _rank(order, 3) == [("F", 3, i) for i in range(6)] + steady + [("B", 3, i) for i in range(6)]
    # ranks 1 and 2 warm up with 6 + 4 and 6 + 2 forwards, then run one more before their first backward
    assert [[a[0] for a in _rank(order, r)].index("B") for r in (1, 2)] == [11, 9]


def test_megatrons_own_table_example():
    """schedules.py's comment on PP 2, N 3, m 5, VP 2: micro-batch ids 0 1 2 0 1 2 3 4 3 4, chunk ids
    0 0 0 1 1 1 0 0 1 1 (N = 3 is also the smallest N on PP 2 at m 5: 5 mod 2 = 1 < 2)."""
    forwards = [(a.microbatch, a.stage // 2) for a in megatron_interleaved_1f1b(2, 5, 2).ranks[1] if a.kind == "F"]
    assert forwards == list(zip([0, 1, 2, 0, 1, 2, 3, 4, 3, 4], [0, 0, 0, 1, 1, 1, 0, 0, 1, 1], strict=True))


@pytest.mark.parametrize(("p", "v"), [(2, 2), (2, 3), (3, 2), (4, 2), (4, 3), (5, 2)])
def test_orders_equal_the_rule_and_run_without_deadlock(p, v):
    for m in range(p, 4 * p + 3):
        order = megatron_interleaved_1f1b(p, m, v)
        assert [_rank(order, r) for r in range(p)] == _reference(p, m, v), (p, m, v)
        _check_dependencies(order, p * v, m)


def _check_dependencies(order, stages: int, m: int) -> None:
    """Each rank runs its actions in order, one may start when its inputs are done (F on stage s after F on s − 1;
    B on s after F on s and B on s + 1): every action runs (no deadlock), each stage's micro-batches in order."""
    done: set[tuple[str, int, int]] = set()
    at = [0] * len(order.ranks)
    moved = True
    while moved:
        moved = False
        for r, rank in enumerate(order.ranks):
            while at[r] < len(rank):
                a = rank[at[r]]
                need = [("F", a.stage - 1, a.microbatch)] if a.kind == "F" and a.stage else []
                if a.kind == "B":
                    need = [("F", a.stage, a.microbatch)] + ([("B", a.stage + 1, a.microbatch)]
                                                              if a.stage < stages - 1 else [])
                if not all(n in done for n in need):
                    break
                done.add((a.kind, a.stage, a.microbatch))
                at[r] += 1
                moved = True
    assert len(done) == 2 * stages * m
    for rank in order.ranks:
        for kind, stage in itertools.product("FB", range(stages)):
            mbs = [a.microbatch for a in rank if a.kind == kind and a.stage == stage]
            assert mbs == sorted(mbs)


def test_a_multiple_of_pp_keeps_the_order():
    """Where PP divides m the group is PP, Megatron-LM's default: the order archsim ran before (torch's rounds of
    PP, :func:`interleaved_1f1b`), so train's figures there do not move."""
    for p, k, v in itertools.product(range(1, 6), range(1, 5), (1, 2, 3)):
        assert megatron_interleaved_1f1b(p, k * p, v).ranks == interleaved_1f1b(p, k * p, v).ranks


def test_training_order_is_megatrons_where_torchs_rounds_differ():
    """PP 4, m 9: torch's rounds (max(1, 9 // 4) = 2 ∤ 9) refuse it; Megatron-LM's groups 5 and 4 run it."""
    with pytest.raises(InputError, match="rounds"):
        interleaved_1f1b(4, 9, 2)
    assert [_rank(training_order("interleaved-1f1b", 4, 9, 2), r) for r in range(4)] == _reference(4, 9, 2)
    with pytest.raises(InputError, match="at least 4 micro-batches"):
        megatron_interleaved_1f1b(4, 3, 2)


def test_in_flight_closed_form_equals_the_orders():
    """(v − 1)N + 2(PP − 1 − r) + 1, capped at m·v, against the count read off each order, at every m ≥ PP."""
    for p, v in itertools.product(range(2, 6), (2, 3)):
        for m in range(p, 4 * p + 2):
            assert in_flight_peaks("interleaved-1f1b", p, m, v) == in_flight(megatron_interleaved_1f1b(p, m, v))


@pytest.mark.parametrize(("pp", "chunks", "m"), [(2, 2, 3), (3, 2, 7), (4, 2, 6), (4, 3, 9)])
def test_the_merged_steps_warm_up_is_the_orders(pp, chunks, m):
    """The 1F1B all-to-all overlap pairs forward k + w (:func:`warmup_forwards`) with backward k, which must run
    just before it in the order (Megatron-LM's merged step)."""
    cols = megatron_interleaved_1f1b(pp, m, chunks).columns
    par = Parallelism(pp=pp, dp=1, global_batch=m, recompute="none", interleave=chunks)
    for r in range(pp):
        lo, hi = int(cols.bounds[r]), int(cols.bounds[r + 1])
        forward = cols.kind[lo:hi] == cols.kind[lo]  # the first action is a forward
        pairs = list(zip(np.flatnonzero(forward)[warmup_forwards(par, r):], np.flatnonzero(~forward)))
        assert all(f == b + 1 for f, b in pairs)
        assert len(pairs) == max(m * chunks - warmup_forwards(par, r), 0)


@pytest.mark.filterwarnings("ignore:this layout uses")
def test_train_runs_pp2_m3_interleaved():
    """train costs PP 2, m 3, two chunks (refused until 2026-12-05): more time than m 2 and less than m 4 (the
    same work a micro-batch)."""
    runs = [archsim.train(GPT2, cluster=NODE, global_batch=m, pp=2, interleave=2)[0] for m in (2, 3, 4)]
    seconds = [r.iteration_seconds for r in runs]
    assert seconds[0] < seconds[1] < seconds[2]
    assert runs[1].parallelism.schedule_name == "interleaved-1f1b"


@pytest.mark.filterwarnings("ignore")
def test_search_costs_the_layout_and_writes_megatrons_group():
    """search keeps PP 2 at m 3 with two chunks (pruned until 2026-12-05) and its megatron_args name the group
    Megatron-LM needs there (its default, PP = 2, leaves 3 mod 2 = 1 < 2); at m 4 the default serves, unwritten."""
    def row(global_batch):
        found = archsim.search(GPT2, cluster=NODE, global_batch=global_batch, gpus=2, schedule="interleaved-1f1b",
                               recompute="full", max_micro_batch=1, sequence_parallel="off", chunks=2)
        return next(r for r in found.rows if r["pp"] == 2 and r["interleave"] == 2)

    odd, even = row(3), row(4)
    assert "--microbatch-group-size-per-virtual-pipeline-stage 3" in odd["megatron_args"]
    assert "microbatch-group-size" not in even["megatron_args"]
    assert odd["iteration_seconds"] > 0


def test_equal_stages_span_keeps_the_interleaved_bubble():
    """Equal chunks (F 1, B 2 as I 1 + W 1, no hop time): the event-timed span is m·v·3 + (PP − 1)·3, Narayanan et
    al.'s interleaved bubble, at every m ≥ PP, groups of PP or not (search's closed form, ``pipeline_seconds``)."""
    from archsim.policies.stage_profile import StageProfile
    from archsim.policies.stage_run import run_order

    for p, v in ((2, 2), (4, 2), (3, 3)):
        profile = StageProfile((1.0,) * (p * v), (1.0,) * (p * v), (1.0,) * (p * v), 0.0)
        for m in range(p, 3 * p + 2):
            span = run_order(megatron_interleaved_1f1b(p, m, v), profile).timeline.makespan
            assert span == m * v * 3 + (p - 1) * 3, (p, m, v)
