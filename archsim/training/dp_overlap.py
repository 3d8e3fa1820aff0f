"""The DP gradient all-reduce after the backward: one all-reduce of every gradient after the last
backward (``none``: what vTrain's Megatron-DeepSpeed runs did), or bucketed and overlapped with the
last micro-batch's backward (``bucketed``: Megatron-LM's ``--overlap-grad-reduce``).

Megatron-LM's distributed data parallel packs the gradients into buckets of
max(40·10⁶, 10⁶·DP) parameters (its ``bucket_size`` default, Megatron Core's
DistributedDataParallelConfig; PyTorch DDP's own default is 25 MiB) and launches a bucket's
all-reduce on the communication stream once the last micro-batch's backward has produced all of its
gradients (earlier micro-batches only accumulate). With n equal buckets of all-reduce time t_b, their
gradients ready at even steps of a backward window W (bucket i at W·(i + 1)/n: gradients come at a
constant rate, last layer first) and one bucket on the wire at a time, the last bucket finishes at
max over i of W·(i + 1)/n + (n − i)·t_b — linear in i, so at i = 0 or n − 1 — and the time exposed
after the backward is max(W/n + n·t_b − W, t_b). One bucket: t_b, as ``none``. Not modelled: the
compute slowed by the all-reduce's kernels sharing the SMs and HBM.
"""

from __future__ import annotations

import math

from archsim.collectives import LinkClass, Spanning, collective_seconds


def bucket_parameters(dp: int) -> int:
    """Megatron Core's default bucket: max(40·10⁶, 10⁶·DP) parameters."""
    return max(40_000_000, 1_000_000 * dp)


def exposed_seconds(buckets: int, bucket_seconds: float, window: float) -> float:
    """Seconds the last of ``buckets`` all-reduces (each ``bucket_seconds``) ends after a backward of
    ``window`` seconds over which their gradients become ready evenly (module docstring)."""
    return max(window / buckets + buckets * bucket_seconds - window, bucket_seconds)


def dp_allreduce_seconds(parameters: float, gradient_bytes: float, dp: int, link: LinkClass | Spanning,
                         overlap: str = "none", window: float = 0.0) -> float:
    """Seconds a rank's DP gradient all-reduce adds after its last backward: ``parameters`` on the rank,
    ``gradient_bytes`` per parameter, over ``dp`` GPUs on ``link``; ``window``: the rank's last
    micro-batch backward (seconds), which ``bucketed`` overlaps."""
    if overlap == "none" or dp <= 1:
        return float(collective_seconds("all-reduce", parameters * gradient_bytes, dp, link))
    n = max(1, math.ceil(parameters / bucket_parameters(dp)))
    bucket = float(collective_seconds("all-reduce", parameters / n * gradient_bytes, dp, link))
    return exposed_seconds(n, bucket, window)


__all__ = ["bucket_parameters", "dp_allreduce_seconds", "exposed_seconds"]
