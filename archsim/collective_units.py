"""How collectives are stated, not priced: nccl-tests' bus bandwidth over its algorithm bandwidth, and a message's
size as the op rows name it."""

from __future__ import annotations

import argparse

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


def parse_nbytes(value: object) -> float:
    """A collective's size: a whole number of bytes above 0 and at most 2⁵³ (an int, an integral float such as 1e9,
    or its text); ValueError in one line otherwise (1.5 bytes is no message NCCL sends)."""
    size = parse_float(value, low=0.0, high=2.0**53, low_open=True, what=BYTES_WHAT)
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
