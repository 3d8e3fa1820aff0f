"""The one Pareto rule: which points (n × d values, every column minimized) no other point beats, read by the search's
time-versus-memory front (:mod:`archsim.training.search_front`), the design sweep's time, energy and area front
(:mod:`archsim.report.pareto`) and the device sweep's time-versus-joules front (:mod:`archsim.sweep.device_points`).

A point beats another when it is no larger in every column and smaller in one. Points equal in every column
do not beat each other; ``ties`` says what becomes of them, and each caller states it:

* ``"all"``: every copy stays on the front (the sweeps: two designs alike in time, energy and area are both
  choices, each a row of ``results.csv``);
* ``"first"``: only the first copy in the order given stays (the search: its configurations come ranked, and
  one of equal time and memory stands for the rest, as the ranked rows keep the first of their twins).

A point with a NaN value is beaten by none and beats none (a comparison with NaN is false)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

TIES = ("all", "first")


def front_indices(points: npt.ArrayLike, *, ties: Literal["all", "first"]) -> list[int]:
    """Indices of the ``points`` (n × d: rows of numbers, or an array) on the front (module docstring), in lexicographic order of their values (the
    first column's smallest first: the fastest, for the search), ties in their order given. One sweep in that
    order: a point that beats another precedes it, so each point is checked against the front kept so far.
    O(n log n + n·f) for f points on the front."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    values = np.asarray(points, dtype=np.float64)
    if values.size == 0:
        return []
    values = values.reshape(len(values), -1)
    order = np.lexsort(values.T[::-1])  # stable: equal points keep their order given
    front = np.empty_like(values)
    kept: list[int] = []
    for index in order.tolist():
        row, held = values[index], front[:len(kept)]
        no_larger = np.all(held <= row, axis=1)
        beaten = no_larger if ties == "first" else no_larger & np.any(held < row, axis=1)
        if not beaten.any():
            front[len(kept)] = row
            kept.append(index)
    return kept


def pareto_mask(values: npt.ArrayLike, *, ties: Literal["all", "first"]) -> np.ndarray:
    """True for the rows of ``values`` (n × d) on the front (:func:`front_indices`), in the rows' order."""
    mask = np.zeros(np.shape(values)[0], dtype=bool)
    mask[front_indices(values, ties=ties)] = True
    return mask


__all__ = ["TIES", "front_indices", "pareto_mask"]
