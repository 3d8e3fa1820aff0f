"""A cluster file's link figures (Gbit/s): checked, or drawn from a stated [low, high] range with the file's seed."""

from __future__ import annotations

import numpy as np

from archsim.cluster_keys import MAX_GBPS, MIN_GBPS, is_gbps
from archsim.errors import InputError
from archsim.validate import shown_number


class Draws:
    """``numpy.random.default_rng(seed)``, made at its first draw: a cluster without [low, high]
    ranges never imports numpy.random (≈ 0.03 s); one with them draws the same numbers."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng: np.random.Generator | None = None

    @property
    def drew(self) -> bool:
        """Whether any figure was drawn: a ``--seed`` with nothing to draw is said to be unread."""
        return self._rng is not None

    def uniform(self, low: float, high: float) -> float:
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng.uniform(low, high)


def figure(value, field: str, file: str, rng: Draws) -> float:
    """A stated Gbit/s figure: the number, or a draw from its [low, high] range (:func:`check_figure`)."""
    check_figure(value, field, file)
    return float(value) if is_gbps(value) else float(rng.uniform(value[0], value[1]))


def check_figure(value, field: str, file: str) -> None:
    """Refuse a Gbit/s figure that is neither a number in [MIN_GBPS, MAX_GBPS] (:func:`archsim.cluster_keys.is_gbps`) nor a
    [low, high] range of them, low first: the one rule of a cluster file's link figures, drawn or not."""
    if is_gbps(value) or (isinstance(value, list) and len(value) == 2 and all(map(is_gbps, value))
                          and value[0] <= value[1]):
        return
    reversed_range = isinstance(value, list) and len(value) == 2 and all(map(is_gbps, value))  # high first
    raise InputError(f"a [low, high] range goes low first: got low {value[0]:g} above high {value[1]:g}"
                     if reversed_range else f"expected a number in [{MIN_GBPS:g}, {MAX_GBPS:g}] or a [low, high] "
                     f"range of them, got {shown_number(value)}", file=file, field=field)


def gbps(value, field: str, file: str, rng: Draws) -> float:
    """A link stated per direction (``inter_server_gbps``, a NIC's speed), bytes/s."""
    return figure(value, field, file, rng) * 1e9 / 8


__all__ = ["Draws", "check_figure", "figure", "gbps"]
