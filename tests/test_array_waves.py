"""The arrays mechanism of the device model (archsim.devices.array_waves) against brute force on tiny
inputs: every fold placed one by one on the array that frees first (list scheduling), each fold's
cycles from SCALE-Sim's scalar closed form (archsim.array.analytic.fold_geometry, itself held to
SCALE-Sim in test_scalesim_exact.py), every split s tried in a plain loop: of the streamed dimension
for ws (M) and is (N), of the reduction for os where split-K is on."""

from __future__ import annotations

import heapq

from hypothesis import given
from hypothesis import strategies as st

from archsim.array.analytic import fold_geometry
from archsim.devices.array_waves import array_gemm_cycles, op_array_cycles, two_stream_cycles
from archsim.devices.device import Arrays
from archsim.lowering import Gemm, TrainingOp


def _makespan(folds: int, fold_cycles: int, arrays: int) -> int:
    """Elapsed cycles of ``folds`` equal folds, each put on the array that frees first."""
    free = [0] * arrays
    for _ in range(folds):
        heapq.heappush(free, heapq.heappop(free) + fold_cycles)
    return max(free)


def _sub_gemm(m: int, k: int, n: int, s: int, dataflow: str) -> tuple[int, int, int]:
    """One of s sub-GEMMs: ws streams A's M rows, is B's N columns, os (split-K) cuts the reduction K."""
    return {"ws": (-(-m // s), k, n), "is": (m, k, -(-n // s)), "os": (m, -(-k // s), n)}[dataflow]


def _brute(m: int, k: int, n: int, parts: int, units: Arrays, split_k: bool) -> tuple[int, int, int]:
    """(elapsed, busy, s): the cheapest s (the first on ties) of s sub-GEMMs per part (_sub_gemm),
    all their folds scheduled together, then for os (s − 1)·m·n·parts adds on every array's cols lanes."""
    best: tuple[int, int, int] | None = None
    streamed = {"ws": m, "is": n, "os": k}[units.dataflow]
    top = min(streamed, units.count) if split_k or units.dataflow != "os" else 1
    _, whole_r, whole_cl = fold_geometry(m, k, n, units.rows, units.cols, units.dataflow)
    if whole_r * whole_cl * parts >= units.count:
        top = 1  # enough folds to fill every array: no split
    for s in range(1, top + 1):
        c, r, cl = fold_geometry(*_sub_gemm(m, k, n, s, units.dataflow), units.rows, units.cols, units.dataflow)
        folds = r * cl * s * parts
        adds = (s - 1) * m * n * parts if units.dataflow == "os" else 0
        elapsed = _makespan(folds, c, units.count) + -(-adds // (units.count * units.cols))
        busy = folds * c + -(-adds // units.cols)
        if best is None or elapsed < best[0]:
            best = (elapsed, busy, s)
    assert best is not None
    return best


@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40), parts=st.integers(1, 3),
       count=st.integers(1, 12), rows=st.integers(1, 4), cols=st.integers(1, 4),
       dataflow=st.sampled_from(["os", "ws", "is"]), split_k=st.booleans())
def test_folds_in_waves_and_split_k_are_list_scheduling_of_the_cheapest_split(m, k, n, parts, count, rows, cols,
                                                                               dataflow, split_k):
    units = Arrays(count, rows, cols, dataflow, 1e9)
    got = array_gemm_cycles(m, k, n, parts, units, split_k)
    assert (int(got.cycles[0]), int(got.busy[0]), int(got.split[0])) == _brute(m, k, n, parts, units, split_k)


@given(shapes=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 30), st.integers(1, 30), st.integers(1, 3)),
                       min_size=1, max_size=3), count=st.integers(1, 8), split_k=st.booleans())
def test_an_ops_gemms_run_one_after_another_and_two_streams_share_the_arrays(shapes, count, split_k):
    units = Arrays(count, 2, 3, "os", 1e9)
    op = TrainingOp("l", "G", tuple(Gemm(m, k, n, c) for m, k, n, c in shapes))
    got = op_array_cycles([op, op], units, split_k)
    each = [_brute(m, k, n, 1, units, split_k) for m, k, n, _ in shapes]
    assert int(got.cycles[0]) == sum(c * (e[0] - 1) for (*_, c), e in zip(shapes, each, strict=True))
    assert int(got.busy[0]) == sum(c * e[1] for (*_, c), e in zip(shapes, each, strict=True))
    assert int(got.split[0]) == max(e[2] for e in each)
    both = int(two_stream_cycles(got.cycles[0], got.cycles[1], got.busy[0], got.busy[1], count))
    assert max(int(got.cycles[0]), -(-2 * int(got.busy[0]) // count) - 1) == both
    # busy counts elapsed cycles, cycles SCALE-Sim's index (one less per GEMM run): sharing the arrays
    # costs at most the two ops' elapsed cycles in turn
    runs = sum(c for *_, c in shapes)
    assert both <= 2 * (int(got.cycles[0]) + runs) - 1
