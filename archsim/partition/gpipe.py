"""GPipe's partition: consecutive layers per stage, in network order (Huang et al., 2019).

Two balances, both named because papers' numbers depend on each:

* ``"compute"`` — what GPipe's authors do (§2.2: the partitioning "minimize[s] the variance in the
  estimated costs of all cells"; torchgpipe's ``balance_by_time`` likewise): the least slowest
  stage of F + G + δ, found by PipeDream's optimizer on a straight pipeline with free links. SPP's
  GPipe baseline (``archsim plan --method gpipe``) uses it.
* ``"layers"`` — equal layer counts, earlier stages taking the remainder: the GPipe of LayerPipe's
  comparison and of the recorded default sweep (``archsim pipeline --method gpipe``).
"""

from __future__ import annotations

from archsim.errors import InputError
from archsim.partition.pipedream import pipedream_partition
from archsim.partition.profile import LayerProfile, profile_from_costs
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops

BALANCES = ("layers", "compute")


def gpipe_partition(profile: LayerProfile, processors: int, *, bandwidth: float | None = None,
                    balance: str = "layers") -> Partition:
    """GPipe-style: one stage per processor (at most one per layer), balanced by ``balance``."""
    n = len(profile)
    if processors <= 0:
        raise InputError(f"processors must be positive, got {processors}", field="processors")
    if balance not in BALANCES:
        raise InputError(f"unknown balance {balance!r}; choose one of {', '.join(BALANCES)}", field="balance")
    stages = min(processors, n)
    if balance == "layers":
        sizes = [n // stages + (1 if s < n % stages else 0) for s in range(stages)]
    else:
        costs = profile_from_costs([str(i) for i in range(n)], profile.forward, profile.backward, [0.0] * n)
        sizes = [len(stage.layers) for stage in pipedream_partition(costs, stages).stages]
    bounds, start = [], 0
    for size in sizes:
        bounds.append((start, start + size))
        start += size
    placed = placed_ops(profile)
    stage_list = [Stage(index, profile.names[i:j], tuple(op for layer in range(i, j) for op in placed[layer]))
                  for index, (i, j) in enumerate(bounds)]
    stage_of = {name: s.index for s in stage_list for name in s.layers}
    # A boundary moves the activation forward and its δ back at ``bandwidth`` (bytes per time unit).
    boundary = tuple(2.0 * float(profile.activation_bytes[j - 1]) / bandwidth for (_, j) in bounds[:-1]) \
        if bandwidth else ()
    return Partition("gpipe", tuple(stage_list), mandatory_bytes(profile, stage_of), 0, boundary, unit=profile.unit)
