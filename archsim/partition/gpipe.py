"""GPipe's partition: equal layer counts per stage, in network order (Huang et al., 2019)."""

from __future__ import annotations

from archsim.errors import InputError
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops


def gpipe_partition(profile: LayerProfile, processors: int, *, bandwidth: float | None = None) -> Partition:
    """GPipe-style: equal layer counts per stage (earlier stages take the remainder)."""
    n = len(profile)
    if processors <= 0:
        raise InputError(f"processors must be positive, got {processors}", field="processors")
    stages = min(processors, n)
    sizes = [n // stages + (1 if s < n % stages else 0) for s in range(stages)]
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
    return Partition("gpipe", tuple(stage_list), mandatory_bytes(profile, stage_of), 0, boundary)
