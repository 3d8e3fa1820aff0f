"""LayerPipe's δ split axes (``--split-axes``): the names, their type and the one reader of a list of them.

Kept apart from :mod:`archsim.lowering`, which splits a δ along them, so that the partitioner and the
commands that read the flag name the axes without importing the lowering (docs/architecture.md, "The
coster"), as :mod:`archsim.modes` keeps ``--mode``'s names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from archsim.errors import InputError
from archsim.value_parsers import NO_VALUE, comma_items

SplitAxis = Literal["channels", "reduction", "rows"]
SPLIT_AXES: tuple[str, ...] = ("channels", "reduction", "rows")


def split_axes(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """The δ split axes LayerPipe may use, from ``--split-axes``' text (``"channels,rows"``) or a sequence of
    names (None: all three), read one way for the command and the library; an axis LayerPipe has not is
    refused, not matched by nothing (a string read letter by letter planned with no split at all), and so is
    an axis named twice."""
    if value is None:
        return SPLIT_AXES
    axes = comma_items(value, "split-axes") if isinstance(value, str) else tuple(str(name).strip() for name in value)
    if not axes:  # split_axes=[]: no split at all, which --split-axes cannot say; refused as --split-axes alone is
        raise InputError(NO_VALUE, field="split-axes")
    for axis in axes:
        check_split_axis(axis, "split-axes")
    twice = [axis for i, axis in enumerate(axes) if axis in axes[:i]]
    if twice:  # "channels,channels" planned as "channels": a typo for another axis went unseen
        raise InputError(f"{twice[0]!r} is listed twice: name each split axis once", field="split-axes")
    return axes


def check_split_axis(axis: str, field: str) -> None:
    """Refuse an axis LayerPipe has not, in one message for ``--split-axes`` and the lowering's ``split_delta``
    alike; ``field``: the setting that named it."""
    if axis not in SPLIT_AXES:
        raise InputError(f"unknown split axis {axis!r}; choose from {', '.join(SPLIT_AXES)}", field=field)


__all__ = ["SPLIT_AXES", "SplitAxis", "check_split_axis", "split_axes"]
