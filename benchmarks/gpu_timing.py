"""Timing for the GPU measuring scripts (``gpu_train_measure.py``, ``gpu_efficiency_probe.py``,
``gpu_validate.py``): CUDA events around the work on a GPU, wall time standing in on the CPU (whose numbers only
test the code), warm-up calls, the median of repeats, and a wall-clock budget.

Units: :func:`elapsed_ms` and :func:`batched_ms` give milliseconds (CUDA events' own unit, so a GPU reading is
never rescaled on its way to a script that reports milliseconds); everything else here is in seconds.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

SLEEP_HZ = 2.0e9  # GPU sleep cycles per second assumed: a sleep lasts at least its seconds on GPUs up to 2 GHz
SLEEP_CYCLES = round(1e-3 * SLEEP_HZ)  # ≈ 1 ms: the op is queued before the start event fires

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


def batched_ms(torch, cuda: bool, fn: Callable[[], Any], *, warmup: int, repeats: int, target_ms: float = 1.0,
               max_inner: int = 50, host_us: float = 60.0) -> tuple[Spread, int]:
    """(spread of milliseconds per call, ``inner``) of ``fn``, for kernels too short to time one call at a time:
    ``warmup`` untimed calls; one timed call sets ``inner``, the calls per repeat that make a repeat last
    ≥ ``target_ms`` (at most ``max_inner``); then each of ``repeats`` times ``inner`` back-to-back calls
    (:func:`elapsed_ms`) queued behind a GPU sleep of ``host_us`` µs per call — at least the host's time to
    enqueue them, so launch gaps are not timed — and divides by ``inner``."""
    for _ in range(warmup):
        fn()
    once = elapsed_ms(torch, cuda, fn)[0]
    inner = int(min(max_inner, max(1, math.ceil(target_ms / max(once, 1e-4)))))

    def calls() -> None:
        for _ in range(inner):
            fn()

    sleep = round(inner * host_us * 1e-6 * SLEEP_HZ)
    return spread([elapsed_ms(torch, cuda, calls, sleep)[0] / inner for _ in range(repeats)]), inner


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
