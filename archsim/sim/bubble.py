"""The bubble of a timeline: one function, with the two definitions archsim reports.

* ``idle-share`` (``bubble_fraction`` in ``archsim schedule`` on a network; the out-of-order
  backprop and LayerPipe studies): 1 − Σ op durations / (devices × makespan). Processors that run
  ops tagged ``kind = S`` (data parallel's gradient synchronization: a network modelled as a
  processor) are not devices and do not count.
* ``zero-bubble`` (``bubble_rate`` in ``archsim schedule`` on per-stage costs; Qi et al., ICLR'24,
  §5.3 and Table 5): (cost − work) / cost, cost = the longest rank span (first start to last end on
  a rank), work = the busiest rank's compute time — m(T_F + T_B + T_W) for equal stages.

Both are 0 for an empty or zero-length timeline. Times in the timeline's unit; the result is a
fraction.
"""

from __future__ import annotations

import numpy as np

DEFINITIONS = ("idle-share", "zero-bubble")


def bubble(timeline, definition: str = "idle-share") -> float:
    """The timeline's bubble under ``definition`` (see the module docstring)."""
    if definition == "idle-share":
        return _idle_share(timeline)
    if definition == "zero-bubble":
        return _zero_bubble(timeline)
    raise ValueError(f"unknown bubble definition {definition!r}; choose one of {', '.join(DEFINITIONS)}")


def rank_spans(timeline) -> list[float]:
    """Per processor that ran an op: end of its last op − start of its first."""
    slots = timeline.slots
    count = len(timeline.problem.processors)
    first, last = np.full(count, np.inf), np.full(count, -np.inf)
    np.minimum.at(first, slots.processor, slots.start)
    np.maximum.at(last, slots.processor, slots.end)
    ran = np.bincount(slots.processor, minlength=count) > 0
    return (last - first)[ran].tolist()


def _idle_share(timeline) -> float:
    problem, span = timeline.problem, timeline.makespan
    a = problem.arrays
    kinds = problem.tag_values("kind")
    comm = (kinds == "S" if isinstance(kinds, np.ndarray) and kinds.dtype.kind == "U"
            else np.array([kind == "S" for kind in kinds], dtype=bool))
    network = np.unique(a.proc[comm]) if comm.size else np.zeros(0, dtype=np.int64)
    busy = sum(a.duration[~np.isin(a.proc, network)].tolist())  # in problem order, as Python sums
    devices = len(problem.processors) - len(network)
    return 1.0 - busy / (devices * span) if span else 0.0


def _zero_bubble(timeline) -> float:
    cost = max(rank_spans(timeline), default=0.0)
    work = max((timeline.busy_time(p.name) for p in timeline.problem.processors), default=0.0)
    return (cost - work) / cost if cost > 0 else 0.0


__all__ = ["DEFINITIONS", "bubble", "rank_spans"]
