"""How collectives are stated, not priced: nccl-tests' bus bandwidth over its algorithm bandwidth, and a message's
size as the op rows name it."""

from __future__ import annotations


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


__all__ = ["bus_bandwidth_factor", "message_mib"]
