"""The issue-floor form of benchmarks/bench_timed_alone_launch.py: max(body, n·F) + n·G per row,
checked against hand-computed cases and the property that a kernel timed back to back never costs
less than its GPU time."""

from __future__ import annotations

import numpy as np
import pandas as pd
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
