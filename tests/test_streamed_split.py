"""A GEMM of fewer folds than arrays shares the arrays by splitting its streamed dimension
(archsim.devices.array_waves): ws's M rows of A, is's N columns of B, each array holding the same
stationary fold. Held to hand counts of SCALE-Sim's per-fold cycles (archsim.array.analytic's table:
ws and is 2R + C + T − 2 per fold, T the streamed dimension) and to a brute force over s whose
sub-GEMMs are costed one by one by archsim.array.analytic.gemm_cost (itself held to SCALE-Sim in
test_scalesim_exact.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archsim.array.analytic import gemm_cost
from archsim.devices.array_waves import array_gemm_cycles, indexed_cycles
from archsim.devices.device import Arrays


def _one(m: int, k: int, n: int, units: Arrays, parts: int = 1) -> tuple[int, int, int]:
    """(SCALE-Sim-count cycles, busy array-cycles, s) of one GEMM on ``units``."""
    got = array_gemm_cycles(m, k, n, parts, units)
    return int(indexed_cycles(got)[0]), int(got.busy[0]), int(got.split[0])


@pytest.mark.parametrize("dataflow, m, n", [("ws", 10, 4), ("is", 4, 10)])
def test_a_one_fold_gemm_on_four_arrays_runs_a_quarter_of_its_stream_on_each(dataflow, m, n):
    """One 4 × 4 fold (K = 4 and the stationary 4 on a 4 × 4 array), streamed dimension 10, on four
    arrays. By hand, 2R + C + T − 2 = 10 + T elapsed cycles per fold: whole, 20; s = 2, 3, 4 sub-GEMMs
    of T = 5, 4, 3 in one wave: 15, 14, 13 → s = 4, one fold of ⌈10/4⌉ = 3, 13 cycles elapsed and 12 in
    SCALE-Sim's count (its last cycle's index), four arrays busy 13 cycles each."""
    units = Arrays(4, 4, 4, dataflow, 1e9)
    assert _one(m, 4, n, units) == (12, 4 * 13, 4)
    quarter = gemm_cost(-(-m // 4) if dataflow == "ws" else m, 4, -(-n // 4) if dataflow == "is" else n,
                        4, 4, dataflow)
    assert _one(m, 4, n, units)[0] == int(quarter.scalar("cycles"))  # SCALE-Sim's cost of the ⌈m/4⌉-row GEMM
    assert _one(m, 4, n, Arrays(3, 4, 4, dataflow, 1e9)) == (13, 3 * 14, 3)  # three arrays: T = ⌈10/3⌉ = 4


def test_the_cheapest_split_is_not_always_the_widest():
    """ws, two folds (K = 8 on 4 rows) of M = 10 on four 4 × 4 arrays: s = 1, one wave of 20; s = 2, four
    folds of T = 5 in one wave, 15; s = 3, six folds in two waves of 14, 28; s = 4, eight folds in two
    waves of 13, 26 → s = 2, 15 elapsed (14 counted), busy 4 folds × 15."""
    assert _one(10, 8, 4, Arrays(4, 4, 4, "ws", 1e9)) == (14, 4 * 15, 2)


@pytest.mark.parametrize("dataflow, m, k, n", [("ws", 10, 8, 8), ("is", 8, 8, 10), ("ws", 300, 4, 16)])
def test_a_gemm_whose_folds_fill_the_arrays_is_dealt_as_before(dataflow, m, k, n):
    """Four folds (2 × 2 on 4 × 4 arrays) on four arrays: one wave of 10 + T = 20, no split; and
    ⌈4/4⌉·⌈16/4⌉ = 4 folds of T = 300 on four: one wave of 310."""
    T = m if dataflow == "ws" else n
    assert _one(m, k, n, Arrays(4, 4, 4, dataflow, 1e9)) == (10 + T - 1, 4 * (10 + T), 1)


@pytest.mark.parametrize("dataflow", ["ws", "is"])
def test_one_array_is_scalesims_cost(dataflow):
    """On one array nothing splits: the cycles are gemm_cost's, SCALE-Sim's, exactly."""
    units = Arrays(1, 4, 4, dataflow, 1e9)
    for m, k, n in [(10, 4, 4), (4, 4, 10), (37, 9, 5), (1, 1, 1)]:
        assert _one(m, k, n, units) == (int(gemm_cost(m, k, n, 4, 4, dataflow).scalar("cycles")),
                                        int(gemm_cost(m, k, n, 4, 4, dataflow).scalar("cycles")) + 1, 1)


@given(m=st.integers(1, 30), k=st.integers(1, 12), n=st.integers(1, 30), parts=st.integers(1, 3),
       count=st.integers(1, 9), rows=st.integers(1, 5), cols=st.integers(1, 5), dataflow=st.sampled_from(["ws", "is"]))
def test_the_split_is_the_cheapest_s_of_scalesim_sub_gemms(m, k, n, parts, count, rows, cols, dataflow):
    """Brute force: where the folds leave arrays idle, every s in 1..min(streamed, arrays), each of the
    s sub-GEMMs costed by gemm_cost (elapsed = its cycles + 1, F folds of equal cycles), all s · F · parts
    folds in ⌈s · F · parts / arrays⌉ waves; the cheapest, the first on ties."""
    whole = gemm_cost(m, k, n, rows, cols, dataflow)
    F = int(whole.scalar("folds"))
    streamed = m if dataflow == "ws" else n
    options = []
    for s in range(1, (min(streamed, count) if F * parts < count else 1) + 1):
        sub = gemm_cost(-(-m // s) if dataflow == "ws" else m, k, -(-n // s) if dataflow == "is" else n,
                        rows, cols, dataflow)
        fold = (int(sub.scalar("cycles")) + 1) // F
        options.append((-(-(s * F * parts) // count) * fold, s, s * parts * (int(sub.scalar("cycles")) + 1)))
    elapsed, s, busy = min(options, key=lambda o: (o[0], o[1]))
    got = array_gemm_cycles(m, k, n, parts, Arrays(count, rows, cols, dataflow, 1e9))
    assert (int(got.cycles[0]), int(got.split[0]), int(got.busy[0])) == (elapsed, s, busy)
