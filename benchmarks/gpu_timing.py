"""Timing for the GPU measuring scripts (``gpu_train_measure.py``, ``gpu_efficiency_probe.py``): CUDA events
around the work on a GPU, wall time standing in on the CPU (whose numbers only test the code), the median of
repeats, and a wall-clock budget.

Units: :func:`elapsed_ms` gives milliseconds (CUDA events' own unit, so a GPU reading is never rescaled on its
way to a script that reports milliseconds); everything else here is in seconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

SLEEP_CYCLES = 2_000_000  # ≈ 1 ms at 2 GHz: the op is queued before the start event fires

Spread = tuple[float, float, float, int]  # (median, min, max, count) of repeated measurements, in their unit


def spread(samples: Sequence[float]) -> Spread:
    """The median of repeated measurements, with their extremes and count (their unit kept)."""
    return statistics.median(samples), min(samples), max(samples), len(samples)


def elapsed_ms(torch, cuda: bool, fn: Callable[[], Any], sleep_cycles: int = 0) -> tuple[float, Any]:
    """(milliseconds, ``fn()``'s result) of one call of ``fn``. On CUDA: events recorded around it after a
    synchronize and, with ``sleep_cycles``, a GPU sleep (so the work is queued before the start event fires);
    on the CPU: wall time."""
    if not cuda:
        began = time.perf_counter()
        result = fn()
        return (time.perf_counter() - began) * 1e3, result
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    if sleep_cycles:
        torch.cuda._sleep(sleep_cycles)
    start.record()
    result = fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end), result


@dataclass(frozen=True)
class Timer:
    """Seconds of ``fn()``: ``warmup`` untimed calls, then the spread of ``repeats`` timed ones, each queued
    behind a ~1 ms GPU sleep on CUDA (the kernel's GPU time plus one launch gap), wall time on the CPU."""

    torch: Any
    cuda: bool
    warmup: int
    repeats: int

    def __call__(self, fn: Callable[[], Any]) -> Spread:
        for _ in range(self.warmup):
            fn()
        return spread([elapsed_ms(self.torch, self.cuda, fn, SLEEP_CYCLES)[0] / 1e3 for _ in range(self.repeats)])


def queued(torch, cuda: bool, kernels: int, fn: Callable[[], Any]) -> tuple[float, float]:
    """(GPU seconds, host seconds) of ``kernels`` calls of ``fn`` queued behind a GPU sleep (on the CPU, the
    wall time twice)."""
    if not cuda:
        began = time.perf_counter()
        for _ in range(kernels):
            fn()
        wall = time.perf_counter() - began
        return wall, wall
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES * 40)  # ≈ 40 ms: longer than issuing the kernels
    start.record()
    began = time.perf_counter()
    for _ in range(kernels):
        fn()
    host = time.perf_counter() - began
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3, host


@dataclass(frozen=True)
class Budget:
    """A hard wall-clock budget: ``end`` in :func:`time.monotonic` seconds."""

    end: float

    def left(self) -> float:
        """Seconds before the end (negative after it)."""
        return self.end - time.monotonic()
