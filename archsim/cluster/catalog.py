"""Model profiles for cluster jobs: per-worker SPB task time and memory, from the paper or the array model.

A :class:`ModelProfile` tabulates one iteration's task (seconds, peak bytes) against the share of
the network a worker back-propagates. Two sources:

* :func:`paper_catalog` — the SPB paper's own V100 measurements: Table 2 (forward/backward ms and
  backward memory at batch 128, gradient size = model size) for nine CNNs, shaped across shares by
  Table 1 (ResNet-101's backward time and peak memory against % back-propagated, normalised to
  100 %). Table 1 is the only such curve published, so every model borrows its shape.
* :func:`model_profile_from_costs` — any :class:`~archsim.cluster.spb.JobLayerCosts` (array model or a
  profile CSV), through :func:`~archsim.cluster.spb.task_cost`, whole layers exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archsim.cluster.spb import JobLayerCosts, suffix_lengths, task_cost
from archsim.errors import InputError
from archsim.validate import did_you_mean

GB = 1e9
MB = 1e6

# Table 2: model → (forward ms, backward ms, backward-pass memory GB, gradient MB); Tesla V100, batch 128.
TABLE2 = {
    "resnet18": (9.19, 21.49, 2.46, 44), "resnet34": (16.11, 36.69, 3.08, 85),
    "resnet50": (36.32, 78.9, 7.33, 94), "resnet101": (60.51, 135.14, 9.79, 170),
    "resnet152": (86.9, 197.05, 12.81, 232), "vgg19": (6.82, 16.31, 2.02, 80),
    "vgg16": (5.68, 13.96, 1.97, 59), "vgg11": (3.34, 7.8, 1.83, 36),
    "googlenet": (41.33, 99.17, 5.96, 24),
}
# Table 1: % back-propagated → (backward ms, peak memory GB); ResNet-101, batch 64, Tesla V100.
TABLE1 = {100: (79.89, 6.5), 90: (70.24, 5.7), 80: (58.86, 5.1), 70: (49.92, 4.6), 60: (43.74, 4.3),
          50: (36.58, 4.1), 40: (29.93, 3.8), 30: (23.02, 3.5), 20: (16.34, 3.3), 10: (8.35, 3.1),
          5: (3.56, 2.9)}


@dataclass(frozen=True)
class ModelProfile:
    """Task seconds and peak bytes against back-propagated share (ascending, ending at 1.0).

    layers: when set, a worker's share is rounded up to whole layers (⌈share·L⌉/L, §2) and read
    exactly; otherwise it is interpolated linearly (clamped outside the table).
    """

    name: str
    shares: tuple[float, ...]
    task_s: tuple[float, ...]
    memory_bytes: tuple[float, ...]
    model_bytes: float
    layers: int | None = None

    def __post_init__(self) -> None:
        n = len(self.shares)
        if n == 0 or len(self.task_s) != n or len(self.memory_bytes) != n:
            raise InputError("shares, task_s and memory_bytes need the same, non-zero length", field=self.name)
        if self.shares[-1] != 1.0 or any(b <= a for a, b in zip(self.shares, self.shares[1:])):
            raise InputError("shares must rise strictly to 1.0", field=self.name)
        if min(self.task_s) <= 0 or min(self.memory_bytes) < 0 or self.model_bytes < 0:
            raise InputError("task times must be positive and sizes non-negative", field=self.name)

    @property
    def full_s(self) -> float:
        """Per-iteration task time without SPB (every layer back-propagated)."""
        return self.task_s[-1]

    @property
    def full_memory_bytes(self) -> float:
        return self.memory_bytes[-1]

    def worker_tasks(self, workers: int, shares: Sequence[float] | None = None) -> tuple[tuple[float, float], ...]:
        """(seconds, peak bytes) of each of ``workers`` SPB tasks, worker 1 … k (§2, Fig. 1)."""
        if self.layers is not None:
            wanted = [n / self.layers for n in suffix_lengths(self.layers, workers, shares)]
        else:
            suffix_lengths(1, workers, shares)  # validates the shares
            wanted = list(shares) if shares is not None else [j / workers for j in range(1, workers + 1)]
        times = np.interp(wanted, self.shares, self.task_s)
        memory = np.interp(wanted, self.shares, self.memory_bytes)
        return tuple((float(t), float(m)) for t, m in zip(times, memory))


def paper_profile(name: str) -> ModelProfile:
    """One Table 2 model shaped by Table 1 (module docstring)."""
    forward_ms, backward_ms, memory_gb, grad_mb = TABLE2[name]
    full_bwd, full_mem = TABLE1[100]
    percents = sorted(TABLE1)
    shares = tuple(p / 100 for p in percents)
    task_s = tuple((forward_ms + backward_ms * TABLE1[p][0] / full_bwd) / 1e3 for p in percents)
    memory = tuple(memory_gb * GB * TABLE1[p][1] / full_mem for p in percents)
    return ModelProfile(name, shares, task_s, memory, grad_mb * MB)


def paper_catalog() -> dict[str, ModelProfile]:
    """The nine Table 2 models, by lower-case name."""
    return {name: paper_profile(name) for name in TABLE2}


def model_profile_from_costs(name: str, costs: JobLayerCosts, model_bytes: float | None = None
                             ) -> ModelProfile:
    """Exact per-suffix profile of a network's layer costs; model size defaults to its parameter bytes."""
    count = len(costs)
    tasks = [task_cost(costs, n) for n in range(1, count + 1)]
    size = float(costs.parameter_bytes.sum()) if model_bytes is None else float(model_bytes)
    return ModelProfile(name, tuple(n / count for n in range(1, count + 1)), tuple(t.time_s for t in tasks),
                        tuple(t.memory_bytes for t in tasks), size, layers=count)


def normalize_model_name(text: str) -> str:
    return "".join(ch for ch in text.strip().lower() if ch.isalnum())


def lookup(catalog: dict[str, ModelProfile], name: str, *, file: str | None = None, line: int | None = None
           ) -> ModelProfile:
    """A profile by (case-, dash- and underscore-insensitive) name; unknown names are input errors naming the
    nearest known one (``validate.did_you_mean``, as a misspelt flag or choice is told)."""
    table = {normalize_model_name(k): v for k, v in catalog.items()}
    key = normalize_model_name(name)
    if key not in table:
        raise InputError(f"unknown model {name!r}{did_you_mean(key, catalog)}; known: {', '.join(sorted(catalog))}",
                         file=file, line=line, field="model_name")
    return table[key]
