"""An array sweep spec's list axes (``batches = [16, 32]``, ``methods = ["gpipe"]``, …), each entry checked: a
refusal is one line naming the key (its field), the entry at fault and what the key takes, so a spec of many
axes says which value to fix. Split from :mod:`archsim.sweep.spec`, which reads the rest of the spec."""

from __future__ import annotations

from collections.abc import Sequence

from archsim.errors import InputError
from archsim.validate import INT32_MAX, did_you_mean, shown, shown_number

MAX_LIST = 1000  # values per list: a sweep is their product


# Why a repeat is refused where the list is a set of names, not an axis of points (``only``, ``split_axes``)
SET_REPEAT = "each name is listed once (the list is a set of names, not an axis of points)"


def string_list(table: dict, key: str, file: str, allowed: tuple[str, ...] | None = None,
                why: str | None = None) -> tuple[str, ...]:
    """``table[key]``, a list of strings (empty where absent), each in ``allowed`` where given, none twice
    (``why``: the reason a refusal gives, :func:`once`'s)."""
    value = table.get(key, [])
    if not isinstance(value, list):
        raise InputError(f"expected a list of strings, got {shown(value)}", file=file, field=key)
    for item in value:
        if not isinstance(item, str):
            raise InputError(f"expected a list of strings, got {shown_number(item)} among them", file=file, field=key)
    if len(value) > MAX_LIST:
        raise InputError(f"more than {MAX_LIST} values", file=file, field=key)
    if allowed is not None:
        for item in value:
            if item not in allowed:
                raise InputError(f"unknown value {shown(item)}{did_you_mean(item, allowed)}; choose from "
                                 f"{', '.join(allowed)}", file=file, field=key)
    once(value, value, key, file, why)
    return tuple(value)


def positive_list(table: dict, key: str, file: str, high: int = INT32_MAX) -> tuple[int, ...]:
    """``table[key]``, a non-empty list of integers in 1…``high``, none twice."""
    value = table.get(key)
    what = f"a non-empty list of integers in 1…{high}"
    if not isinstance(value, list) or not value:
        raise InputError(f"expected {what}, got {'[]' if value == [] else shown_number(value)}", file=file, field=key)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 < item <= high:
            raise InputError(f"expected {what}, got {shown_number(item)} among them", file=file, field=key)
    if len(value) > MAX_LIST:
        raise InputError(f"more than {MAX_LIST} values", file=file, field=key)
    once(value, value, key, file)
    return tuple(value)


def clock_list(table: dict, file: str) -> tuple[float, ...]:
    """``clocks_ghz``: a list of clocks in GHz, each one archsim takes (:func:`archsim.clock.clock_hz`); absent: no
    clock (empty); given as ``[]``, refused as every other axis's empty list is (it read as no clock)."""
    from archsim.clock import clock_hz

    clocks = table.get("clocks_ghz", [])
    if not isinstance(clocks, list):
        raise InputError(f"expected a list of clocks in GHz, got {shown_number(clocks)}", file=file, field="clocks_ghz")
    if "clocks_ghz" in table and not clocks:
        raise InputError("expected at least one clock in GHz, got []", file=file, field="clocks_ghz")
    for clock in clocks:
        if isinstance(clock, bool) or not isinstance(clock, (int, float)):
            raise InputError(f"expected a list of clocks in GHz, got {shown_number(clock)} among them", file=file,
                             field="clocks_ghz")
        try:
            clock_hz(clock, "GHz")
        except ValueError as exc:
            raise InputError(str(exc), file=file, field="clocks_ghz") from None
    return tuple(float(c) for c in clocks)


AXIS_REPEAT = "each value is one point of the sweep, and a repeat would count its rows twice in summary.csv's means"


def once(values: Sequence, texts: Sequence, key: str, file: str, why: str | None = None) -> None:
    """Refuse an axis that lists one point twice (``batches = [4, 16, 4]``, or ``cnn.csv`` and
    ``./cnn.csv``): it would run that point twice and weigh it twice in summary.csv's means. ``why``: the
    reason said instead, for a list that is no axis (``split_axes``, :data:`SET_REPEAT`)."""
    def text(item: object) -> str:
        return str(item) if isinstance(item, int) else shown(item)

    for i, value in enumerate(values):
        if value in values[:i]:
            first = texts[list(values).index(value)]
            same = "" if first == texts[i] else f" (as {text(first)})"
            raise InputError(f"{text(texts[i])} is listed twice{same}: {why or AXIS_REPEAT}", file=file, field=key)


__all__ = ["AXIS_REPEAT", "MAX_LIST", "SET_REPEAT", "clock_list", "once", "positive_list", "string_list"]
