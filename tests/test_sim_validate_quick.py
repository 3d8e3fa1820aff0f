"""The validator's array pass (quick_check) against its per-item checks (full_check): on valid
timelines and on timelines with planted faults — moved, stretched, re-streamed, re-homed,
dropped or duplicated slots, moved or dropped transfers — they agree on whether anything is wrong.
"""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sim_properties import problems

from archsim.sim import Slot, Timeline, simulate
from archsim.sim.validate import full_check, quick_check

FAULTS = ("start", "end", "both", "stream", "processor", "drop", "duplicate", "transfer", "drop-transfer")


def plant(timeline, fault: str, k: int, shift: float):
    slots = tuple(timeline.slots)
    transfers = tuple(timeline.transfers)
    i = k % len(slots)
    s = slots[i]
    if fault in ("transfer", "drop-transfer"):
        if not transfers:
            return None
        j = k % len(transfers)
        t = transfers[j]
        moved = () if fault == "drop-transfer" else (dataclasses.replace(t, start=t.start + shift, end=t.end + shift),)
        return Timeline(slots, transfers[:j] + moved + transfers[j + 1:], timeline.problem, timeline.policy)
    changed = {"start": {"start": s.start + shift}, "end": {"end": s.end + shift},
               "both": {"start": s.start + shift, "end": s.end + shift}, "stream": {"stream": (s.stream + 1) % 2},
               "processor": {"processor": "p0" if s.processor != "p0" else "p1"}}
    if fault == "drop":
        new = slots[:i] + slots[i + 1:]
    elif fault == "duplicate":
        new = slots + (slots[i],)
    else:
        new = slots[:i] + (Slot(**{**dataclasses.asdict(s), **changed[fault]}),) + slots[i + 1:]
    return Timeline(new, transfers, timeline.problem, timeline.policy)


@pytest.mark.long
@settings(max_examples=400, deadline=None)
@given(problem=problems(max_ops=20), fault=st.sampled_from(FAULTS), k=st.integers(0, 1000),
       shift=st.sampled_from([-2.0, -0.5, -1e-12, 1e-12, 0.5, 3.0]))
def test_the_array_pass_agrees_with_the_per_item_checks(problem, fault, k, shift):
    timeline = simulate(problem)
    assert quick_check(problem, timeline) and full_check(problem, timeline) == []
    broken = plant(timeline, fault, k, shift)
    if broken is not None:
        assert quick_check(problem, broken) == (full_check(problem, broken) == [])


TRANSFER_FAULTS = ("earlier", "later", "longer", "bytes", "link", "drop", "duplicate", "swap-bytes")


@settings(max_examples=120, deadline=None)
@given(fault=st.sampled_from(TRANSFER_FAULTS), k=st.integers(0, 10_000), shift=st.sampled_from([-0.3, 1e-12, 0.05, 2.0]),
       processors=st.sampled_from([2, 3]), streams=st.sampled_from([1, 2]))
def test_the_array_pass_agrees_on_transfer_faults(fault, k, shift, processors, streams):
    """Ring problems move many transfers over shared links: plant one fault among them."""
    from test_sim_scale import ring_problem

    problem = ring_problem(60, processors, streams, seed=k % 7)
    timeline = simulate(problem)
    transfers = tuple(timeline.transfers)
    assert transfers and quick_check(problem, timeline)
    j = k % len(transfers)
    t = transfers[j]
    other = transfers[(j + 1) % len(transfers)]
    changed = {"earlier": (dataclasses.replace(t, start=t.start - abs(shift), end=t.end - abs(shift)),),
               "later": (dataclasses.replace(t, start=t.start + abs(shift), end=t.end + abs(shift)),),
               "longer": (dataclasses.replace(t, end=t.end + shift),),
               "bytes": (dataclasses.replace(t, bytes=t.bytes + 1),),
               "link": (dataclasses.replace(t, link=other.link),),
               "drop": (),
               "duplicate": (t, t),
               "swap-bytes": (dataclasses.replace(t, bytes=other.bytes),)}[fault]
    broken = Timeline(tuple(timeline.slots), transfers[:j] + changed + transfers[j + 1:], problem, timeline.policy)
    assert quick_check(problem, broken) == (full_check(problem, broken) == [])


def _sweep_reference(proc, start, end, streams, tol):
    """The per-item check's sweep over start and end points, one processor at a time (brute reference)."""
    for p in set(proc):
        items = [(s, e) for q, s, e in zip(proc, start, end) if q == p]
        points = sorted([(s + tol * max(1.0, abs(s)), 1) for s, _ in items] + [(e, -1) for _, e in items])
        level = 0
        for _, delta in points:
            level += delta
            if level > streams[p]:
                return False
    return True


@pytest.mark.long
@settings(max_examples=400, deadline=None)
@given(slots=st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.0, 1.0, 2.0, 2.5, 3.0, 1e6]),
                                st.sampled_from([0.5, 1.0, 1e-9, 2e-9, 1e-3])), min_size=1, max_size=12),
       streams=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)))
def test_the_concurrency_rule_over_sorted_starts_and_ends_is_the_sweep(slots, streams):
    """A[i + k] ≥ B[i] on sorted nudged starts A and ends B decides what the point sweep decides."""
    import numpy as np

    from archsim.sim.validate import concurrency_ok

    proc = np.array([p for p, _, _ in slots], dtype=np.int64)
    start = np.array([s for _, s, _ in slots], dtype=np.float64)
    end = start + np.array([d for _, _, d in slots], dtype=np.float64)
    tol = 1e-9
    assert concurrency_ok(proc, start, end, np.array(streams), tol) == _sweep_reference(
        proc.tolist(), start.tolist(), end.tolist(), streams, tol)
