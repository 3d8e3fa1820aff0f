"""How collectives are stated, not priced: nccl-tests' bus bandwidth over its algorithm bandwidth, and a message's
size as the op rows name it."""

from __future__ import annotations

import argparse
import math
import re

from archsim.validate import shown
from archsim.value_parsers import parse_float

BYTES_WHAT = "a number of bytes"


def bus_bandwidth_factor(kind: str, n: int) -> float:
    """nccl-tests' bus bandwidth over its algorithm bandwidth (bytes / seconds) for ``kind`` over ``n`` GPUs:
    2(n − 1)/n for an all-reduce (each GPU sends and receives its buffer's (n − 1)/n twice), (n − 1)/n for an
    all-gather, a reduce-scatter or an all-to-all (nccl-tests' doc/PERFORMANCE.md). Dimensionless."""
    return 2 * (n - 1) / n if kind == "all-reduce" else (n - 1) / n


def message_mib(nbytes: float) -> str:
    """A collective's message in MiB as its op rows name it: 3 significant digits, never an exponent
    (``4008 MiB``, not ``4.01e+03 MiB``: a 128k vocabulary's embedding gradient is gigabytes)."""
    mib = nbytes / 2**20
    return f"{mib:.3g} MiB" if mib < 1000 else f"{round(mib):d} MiB"


# A size's binary suffix, the power of 1024 it multiplies by: KiB … TiB, and nccl-tests' own K, M, G (its -b and -e
# read them so: ``parsesize`` in nccl-tests' src/common.cu), T beside them. Case is ignored.
BINARY_SUFFIXES = {"k": 1, "m": 2, "g": 3, "t": 4, "kib": 1, "mib": 2, "gib": 3, "tib": 4}
_SIZED = re.compile(r"\s*([0-9.eE+-]+)\s*([A-Za-z]+)\s*")


def _binary_size(value: object) -> object:
    """``value`` with a binary suffix (``1GiB``, nccl-tests' ``1G``) as its bytes, a float; anything else as it is,
    for :func:`parse_float` to judge. A decimal one (``1GB``) is refused in one line: nccl-tests reads ``1GB`` as 2³⁰
    bytes, SI as 10⁹, so it names both ways to write it."""
    if not isinstance(value, str):
        return value
    hint = (f"expected {BYTES_WHAT} (1073741824, 1e9) or a size in KiB, MiB, GiB or TiB (1GiB; nccl-tests' 1G), "
            f"got {shown(value)}")
    match = _SIZED.fullmatch(value)
    if match is None:
        try:
            parse_float(value, low=-math.inf, what=BYTES_WHAT)  # a number: its bounds are parse_nbytes' to say
        except ValueError:
            raise ValueError(hint) from None
        return value
    number, suffix = match.groups()
    power = BINARY_SUFFIXES.get(suffix.lower())
    if power is None and suffix.lower() in ("kb", "mb", "gb", "tb"):
        letter, exponent = suffix[0].upper(), 3 * ("KMGT".index(suffix[0].upper()) + 1)
        decimal = f"{number}e{exponent}" if "e" not in number.lower() else f"{float(number) * 10.0**exponent:g}"
        raise ValueError(f"{shown(value)} is ambiguous: write {number}{letter}iB for 1024-based bytes (nccl-tests' "
                         f"{number}{letter}) or {decimal} for 1000-based ones")
    if power is None:
        raise ValueError(hint)
    return parse_float(number, low=0.0, high=2.0**53, low_open=True, what=BYTES_WHAT) * 1024.0**power


def parse_nbytes(value: object) -> float:
    """A collective's size: a whole number of bytes above 0 and at most 2⁵³ (an int, an integral float such as 1e9,
    or its text, which may end in a binary suffix: ``1GiB`` or nccl-tests' ``1G``, 2³⁰ bytes); ValueError in one
    line otherwise (1.5 bytes is no message NCCL sends; ``1GB``, 2³⁰ to nccl-tests and 10⁹ to SI, is refused naming
    both)."""
    size = parse_float(_binary_size(value), low=0.0, high=2.0**53, low_open=True, what=BYTES_WHAT)
    if not size.is_integer():
        raise ValueError(f"expected a whole number of bytes, got {shown(value)}")
    return size


def nbytes_flag(text: str) -> float:
    """:func:`parse_nbytes` as an argparse ``type=``."""
    try:
        return parse_nbytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


__all__ = ["bus_bandwidth_factor", "message_mib", "nbytes_flag", "parse_nbytes"]
