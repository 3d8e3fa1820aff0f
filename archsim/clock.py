"""The one range of clocks archsim reads, and its refusal.

Every reader of a clock goes through :func:`clock_hz`: the ``--clock-ghz`` and ``--clock-mhz`` flags,
``archsim.cost(clock_ghz=…)``, a ``.cfg``'s ``[archsim] ClockGHz`` (a device file's too), a device TOML's
``[compute] clock_mhz`` and a sweep spec's ``clocks_ghz`` (cluster files name device files, read so).

10 MHz … 10 GHz, both ends included: real arrays and GPUs clock from tens of MHz (FPGAs, low-power
arrays) to a few GHz, so a value 1000× off (MHz typed where GHz is asked, or GHz where MHz is)
lands outside and is refused with the likely slip named, instead of seconds off by 1000×.
"""

from __future__ import annotations

import math

from archsim.value_parsers import below_floor, parse_float

MIN_CLOCK_HZ = 1e7  # 10 MHz
MAX_CLOCK_HZ = 1e10  # 10 GHz
UNIT_HZ = {"Hz": 1.0, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9}


def clock_range(unit: str) -> str:
    """The accepted range in ``unit``, e.g. ``"0.01 … 10 GHz"``."""
    return f"{MIN_CLOCK_HZ / UNIT_HZ[unit]:g} … {MAX_CLOCK_HZ / UNIT_HZ[unit]:g} {unit}"


def _slip(number: float, unit: str) -> str:
    """What ``number`` would be in the nearest other unit that puts it in range ("" when none does)."""
    for other in sorted((u for u in UNIT_HZ if u != unit), key=lambda u: abs(math.log10(UNIT_HZ[u] / UNIT_HZ[unit]))):
        hz = number * UNIT_HZ[other]
        if MIN_CLOCK_HZ <= hz <= MAX_CLOCK_HZ:
            return f": did you mean {number:g} {other} = {hz / UNIT_HZ[unit]:g} {unit}?"
    return ""


def checked_clock(value: object, unit: str) -> float:
    """``value``, a clock in ``unit`` (a key of :data:`UNIT_HZ`), checked and kept in ``unit``; ValueError (one
    line: the value, the range and the likely unit slip) when it is not a number in :func:`clock_range`."""
    # a negative one fails the range below, and so does one too small to be read (1e-300: no clock at all)
    number = float(str(value)) if below_floor(value) else parse_float(value, low=-math.inf, what=f"a clock in {unit}")
    if not MIN_CLOCK_HZ <= number * UNIT_HZ[unit] <= MAX_CLOCK_HZ:
        raise ValueError(f"{number:g} {unit} is outside the clocks archsim takes ({clock_range(unit)})"
                         f"{_slip(number, unit)}")
    return number


def clock_hz(value: object, unit: str) -> float:
    """:func:`checked_clock` in Hz."""
    return checked_clock(value, unit) * UNIT_HZ[unit]


__all__ = ["MAX_CLOCK_HZ", "MIN_CLOCK_HZ", "UNIT_HZ", "checked_clock", "clock_hz", "clock_range"]
