"""The out-of-order backprop paper's layer allocations (Oh et al., 000_0084ae54373056ee.txt §4–5).

* ``contiguous`` — blocks of ⌈L/P⌉ consecutive layers per device, the last device taking what is
  left (10 layers on 4 devices: 3/3/3/1; a device may get none). The paper's model parallelism,
  its layer-wise GPipe baseline and ooo-pipe1 use it. Not GPipe's own balance
  (:func:`archsim.partition.gpipe.gpipe_partition`: 3/3/2/2 or balanced compute).
* ``modulo`` — ooo-pipe2's: groups of ``group`` consecutive layers dealt to the devices round
  robin, so every device holds layers from all over the network.

:func:`device_of` is the one rule; :func:`ooo_partition` is the contiguous allocation as a plan
(the registry's ``ooo``). The modulo allocation is not a plan of its own: a device holds several
non-adjacent stages there, and the plan type's consumers (``archsim pipeline``, sweeps, the
layer-wise schedules) run one stage per processor; ooo-pipe2 reads :func:`device_of` directly.
"""

from __future__ import annotations

from archsim.errors import InputError
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops

ALLOCATIONS = ("contiguous", "modulo")


def device_of(layer: int, layers: int, devices: int, allocation: str = "contiguous", group: int = 1) -> int:
    """0-based device of 0-based ``layer`` of ``layers`` on ``devices``."""
    if allocation == "modulo":
        return (layer // group) % devices
    if allocation != "contiguous":
        raise InputError(f"unknown allocation {allocation!r}; choose one of {', '.join(ALLOCATIONS)}",
                         field="allocation")
    per = -(-layers // devices)
    return min(layer // per, devices - 1)


def ooo_partition(profile: LayerProfile, processors: int) -> Partition:
    """The contiguous allocation as a plan: one stage per device that gets layers, in order;
    ``devices`` names each stage's device (a device left without layers has no stage)."""
    if processors <= 0:
        raise InputError(f"processors must be positive, got {processors}", field="processors")
    n = len(profile)
    where = [device_of(layer, n, processors) for layer in range(n)]
    placed = placed_ops(profile)
    used = sorted(set(where))
    stages = tuple(Stage(index, tuple(profile.names[k] for k in range(n) if where[k] == device),
                         tuple(op for k in range(n) if where[k] == device for op in placed[k]))
                   for index, device in enumerate(used))
    stage_of = {name: stage.index for stage in stages for name in stage.layers}
    return Partition("ooo", stages, mandatory_bytes(profile, stage_of), 0, unit=profile.unit,
                     devices=tuple((device,) for device in used))


__all__ = ["ALLOCATIONS", "device_of", "ooo_partition"]
