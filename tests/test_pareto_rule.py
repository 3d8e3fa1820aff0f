"""One Pareto rule (``archsim.pareto_rule``) for the search's front and the sweeps' fronts, the tie rule an argument
each caller states: the sweeps keep every copy of equal points (``ties="all"``), the search only the first in its
ranked order (``ties="first"``). Until 2026-12-05 the search swept its own 2-D front in training/search_front.py
and the sweeps ran an n-D mask in report/pareto.py, the tie rule written into each. Checked against the definition
by brute force."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.pareto_rule import front_indices, pareto_mask


def beats(q, p) -> bool:
    """q no larger in every column and smaller in one (False against NaN: a comparison with NaN is false)."""
    return all(a <= b for a, b in zip(q, p, strict=True)) and any(a < b for a, b in zip(q, p, strict=True))


def equal(q, p) -> bool:
    """Equal in every column (NaN equals nothing, itself included)."""
    return all(a == b for a, b in zip(q, p, strict=True))


def brute_front(points, ties: str) -> list[int]:
    """The definition, point by point, in lexicographic order of the values, ties in their order given (the order
    read only where no value is NaN)."""
    on = [i for i, p in enumerate(points) if not any(beats(q, p) for q in points)
          and not (ties == "first" and any(equal(points[j], p) for j in range(i)))]
    return sorted(on, key=lambda i: (tuple(points[i]), i))


values = st.one_of(st.integers(0, 4), st.just(math.nan))


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 3).flatmap(lambda d: st.lists(st.lists(st.integers(0, 4), min_size=d, max_size=d), max_size=25)),
       st.sampled_from(["all", "first"]))
def test_the_front_is_the_definition(points, ties):
    assert front_indices(points, ties=ties) == brute_front(points, ties)
    assert pareto_mask(points, ties=ties).tolist() == [i in brute_front(points, ties) for i in range(len(points))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(values, values), max_size=15), st.sampled_from(["all", "first"]))
def test_a_nan_point_is_beaten_by_none_and_beats_none(points, ties):
    assert sorted(front_indices(points, ties=ties)) == sorted(brute_front(points, ties))


def test_equal_points_all_stay_or_only_the_first():
    # (1, 5) twice, (2, 2) twice, (3, 2) beaten by (2, 2), (0, 9): nothing beats it
    points = [(1, 5), (2, 2), (1, 5), (3, 2), (2, 2), (0, 9)]
    assert front_indices(points, ties="all") == [5, 0, 2, 1, 4]
    assert front_indices(points, ties="first") == [5, 0, 1]


def test_the_search_and_the_sweeps_read_the_one_rule():
    """Two configurations of equal seconds and bytes: one on the search's front (the first given); two equal
    design points: both on a device sweep's."""
    from archsim.sweep.device_points import with_front
    from archsim.training.search_front import pareto_front

    costed = [(2.0, "t", 100, "a"), (1.0, "t", 300, "b"), (2.0, "t", 100, "c"), (3.0, "t", 50, "d")]
    assert [t[3] for t in pareto_front(costed)] == ["b", "a", "d"]
    rows = [{"iteration_seconds": 2.0, "energy_j": 5.0, "fits_memory": True} for _ in range(2)]
    assert [r["pareto_optimal"] for r in with_front(rows)] == [True, True]


def test_a_tie_rule_must_be_named():
    with pytest.raises(ValueError, match="ties must be one of all, first, got 'both'"):
        front_indices([(1, 2)], ties="both")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pareto_mask([(1, 2)])  # type: ignore[call-arg]
