"""The issue-floor form of benchmarks/bench_timed_alone_launch.py: max(body, n·F) + n·G per row,
checked against hand-computed cases and the property that a kernel timed back to back never costs
less than its GPU time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchmark_scripts import load_benchmark
from hypothesis import given
from hypothesis import strategies as st

bench = load_benchmark("bench_timed_alone_launch")

US = 1e-6


def test_floor_by_hand():
    # timed at a 4 µs gap: one kernel of 10 µs (body 6 µs), two kernels of 108 µs in all (bodies 100 µs)
    frame = pd.DataFrame({"predicted": [10 * US, 108 * US], "kernels": [1.0, 2.0]})
    got = bench.floored(frame, 4 * US, 20 * US)
    # max(6, 20) + 4 = 24 µs; max(100, 2·20) + 2·4 = 108 µs: the long pair is not floored
    np.testing.assert_allclose(got, [24 * US, 108 * US], rtol=1e-12)


@given(body=st.floats(0, 1e-2), kernels=st.integers(1, 4), gap=st.floats(0, 5e-5), floor=st.floats(0, 1e-4))
def test_floored_kernel_never_beats_its_gpu_time(body, kernels, gap, floor):
    frame = pd.DataFrame({"predicted": [body + kernels * gap], "kernels": [float(kernels)]})
    got = float(bench.floored(frame, gap, floor).iloc[0])
    assert got >= body + kernels * gap - 1e-15  # its GPU time and its gaps
    assert got >= kernels * (floor + gap) - 1e-15  # the host cannot issue its kernels faster




def _seconds_mape(page: str, first: str | None = None) -> list[float]:
    """seconds_mape (%) of the body rows of a committed page's first table holding that column (those
    whose first cell is ``first``, if given)."""
    lines = (bench.RESULTS / page).read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("|") and "seconds_mape" in line)
    column = [c.strip() for c in lines[at].strip("|").split("|")].index("seconds_mape")
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[at + 2:] if line.startswith("|")]
    return [100 * float(row[column]) for row in body if first is None or row[0] == first]


@pytest.mark.slow
def test_shipped_scores_are_the_pages():
    # the benchmark's per-row scoring at the shipped constants against the pages deepbench_summary.py
    # and validate-gpu wrote (other code paths): DeepBench's means over GPUs and ops, the H200 per op
    paths = bench.deepbench_summary.conv_csvs() + bench.deepbench_summary.gemm_csvs() + [bench.H200]
    frame = bench.rows(paths, bench.FITTED)
    got = bench.scores(frame, frame["predicted"])
    for name, page in (("conv", "deepbench_summary.md"), ("gemm", "deepbench_gemm_summary.md")):
        values = _seconds_mape(page)
        assert got[name] == pytest.approx(sum(values) / len(values), abs=0.05)
    h200 = _seconds_mape("gpu_validation_h200.md", "op")[:3]  # F, D, G of "op | h200 | all | all"
    assert [got[f"h200 {op}"] for op in "FDG"] == pytest.approx(h200, abs=0.05)
