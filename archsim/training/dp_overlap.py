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
after the backward is max(W/n + n·t_b − W, t_b). One bucket: t_b, as ``none``. While a bucket is on the
wire NCCL holds some of the SMs, and the backward beside it runs slower
(:mod:`archsim.training.comm_sms`); the buckets are then timed one by one
(:func:`~archsim.training.comm_sms.bucket_exposed`). Not modelled: NCCL's share of HBM bandwidth.

With Megatron-LM's distributed optimizer (``--use-distributed-optimizer``, :func:`distributed_sync_seconds`)
each bucket's gradients are reduce-scattered (in the gradient buffer's dtype) instead of all-reduced, each
rank steps its 1/DP shard, and the updated parameters are all-gathered (in the parameter dtype) after the
step; NCCL's ring all-reduce is a reduce-scatter then an all-gather, so with equal widths the two cost the
all-reduce's ring time and one launch more. ``bucketed`` overlaps the reduce-scatters as it overlaps the
all-reduces; the all-gather runs after the step, whole: Megatron-LM overlaps it with the next forward only
with ``--overlap-param-gather``, which is not modelled.
"""

from __future__ import annotations

import math

from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.training.comm_sms import bucket_exposed


def bucket_parameters(dp: int) -> int:
    """Megatron Core's default bucket: max(40·10⁶, 10⁶·DP) parameters."""
    return max(40_000_000, 1_000_000 * dp)


def exposed_seconds(buckets: int, bucket_seconds: float, window: float) -> float:
    """Seconds the last of ``buckets`` all-reduces (each ``bucket_seconds``) ends after a backward of
    ``window`` seconds over which their gradients become ready evenly (module docstring)."""
    return max(window / buckets + buckets * bucket_seconds - window, bucket_seconds)


def dp_allreduce_seconds(parameters: float, gradient_bytes: float, dp: int, link: LinkClass | Spanning,
                         overlap: str = "none", window: float = 0.0, share: float = 1.0) -> float:
    """Seconds a rank's DP gradient all-reduce adds after its last backward: ``parameters`` on the rank,
    ``gradient_bytes`` per parameter, over ``dp`` GPUs on ``link``; ``window``: the rank's last
    micro-batch backward (seconds), which ``bucketed`` overlaps, running at ``share`` of its speed while a bucket
    holds its SMs (:func:`archsim.training.comm_sms.bucket_exposed`)."""
    if overlap == "none" or dp <= 1:
        return float(collective_seconds("all-reduce", parameters * gradient_bytes, dp, link))
    n = max(1, math.ceil(parameters / bucket_parameters(dp)))
    bucket = float(collective_seconds("all-reduce", parameters / n * gradient_bytes, dp, link))
    return bucket_exposed(n, bucket, window, share) if share < 1 else exposed_seconds(n, bucket, window)


def distributed_sync_seconds(parameters: float, gradient_bytes: float, parameter_bytes: float, dp: int,
                             link: LinkClass | Spanning, overlap: str = "none",
                             window: float = 0.0, share: float = 1.0) -> tuple[float, float]:
    """(reduce-scatter, all-gather) seconds the distributed optimizer adds on a rank: the gradients'
    reduce-scatter after its last backward (``gradient_bytes`` per parameter; ``bucketed``: per bucket, exposed
    as :func:`exposed_seconds` exposes the all-reduces) and the updated parameters' all-gather after the step
    (``parameter_bytes`` per parameter; per bucket as Megatron-LM gathers them, none of it hidden)."""
    if dp <= 1:
        return 0.0, 0.0
    n = 1 if overlap == "none" else max(1, math.ceil(parameters / bucket_parameters(dp)))
    scatter = float(collective_seconds("reduce-scatter", parameters / n * gradient_bytes, dp, link))
    gather = n * float(collective_seconds("all-gather", parameters / n * parameter_bytes, dp, link))
    if overlap == "none":
        return scatter, gather
    return (bucket_exposed(n, scatter, window, share) if share < 1 else exposed_seconds(n, scatter, window)), gather


__all__ = ["bucket_parameters", "distributed_sync_seconds", "dp_allreduce_seconds", "exposed_seconds"]
