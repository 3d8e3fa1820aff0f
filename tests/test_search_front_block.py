"""The search table's closing Pareto block lists at most 10 configurations, spread along the front from the fastest
to the least memory (or cost, or energy), both ends always, and one line counting the rest, which ``--format json``
lists in ``meta.pareto`` (issue #40: a 7B model on 16 H100s printed 57 lines). Failed before: every point."""

from __future__ import annotations

import numpy as np
import pytest

from archsim.training.search_front import front_block


def _front(count: int) -> list[dict]:
    """A synthetic front, fastest first: configuration i takes i + 1 s and 100 − i GiB (so each is Pareto-optimal),
    told apart by its micro-batch, i + 1."""
    return [{"tp": 1, "pp": 1, "dp": 1, "micro_batch": i + 1, "recompute": "none", "schedule": "1f1b", "interleave": 1,
             "sequence_parallel": False, "iteration_seconds": float(i + 1), "peak_memory_gib": float(100 - i),
             "energy_j": 1000.0 - i} for i in range(count)]


def _listed(block: str) -> list[int]:
    """The micro-batches of the configurations the block lists, in its order (each one's index + 1)."""
    return [int(line.split(" mb", 1)[1].split(" ", 1)[0]) for line in block.splitlines() if line.startswith("  TP")]


@pytest.mark.parametrize("objective", ["time", "energy"])
def test_57_points_show_10_spread_along_the_front_and_count_the_rest(objective):
    block = front_block(_front(57), objective)
    # the rule written here independently: 10 positions evenly spaced from the first (fastest) to the last
    # (least memory or energy), rounded to the nearest index; for 57 points no position falls on a half
    expected = [int(i) + 1 for i in np.rint(np.linspace(0, 56, 10))]
    assert expected[0] == 1 and expected[-1] == 57 and len(set(expected)) == 10
    assert _listed(block) == expected
    lines = block.strip("\n").splitlines()
    assert lines[0].startswith("Pareto front, iteration time against ") and "(57 configurations" in lines[0]
    assert lines[-1] == "  47 more on the front: --format json lists all"
    assert len(lines) == 1 + 10 + 1


@pytest.mark.parametrize("count", [1, 9, 10])
def test_a_front_of_at_most_10_is_listed_whole(count):
    block = front_block(_front(count), "time")
    assert _listed(block) == list(range(1, count + 1)) and "more on the front" not in block
    assert f"({count} configuration" in block


def test_11_points_leave_one_out():
    assert _listed(front_block(_front(11), "time")) == [int(i) + 1 for i in np.rint(np.linspace(0, 10, 10))]
    assert "  1 more on the front: --format json lists all" in front_block(_front(11), "time")
