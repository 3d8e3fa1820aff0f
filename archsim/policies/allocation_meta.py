"""How ``archsim schedule`` dealt a network's layers to its devices, as meta lines (``allocation``,
``layers_per_device``, and an out-of-order pipeline's ``schedule_variant``), so two policies' rows are compared
knowing whether their splits and orders match."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace


def allocation_meta(rule: str, counts: Sequence[int]) -> dict[str, str]:
    """Meta saying how a run dealt a network's layers to its devices: the rule, and each device's layer count,
    device 1 first (comma-separated), so two policies' rows are compared knowing whether their splits match."""
    return {"allocation": rule, "layers_per_device": ",".join(str(count) for count in counts)}


def ooo_allocation(args: SimpleNamespace, layers: int) -> dict[str, str]:
    """An out-of-order pipeline's allocation (:func:`archsim.partition.ooo_allocation.device_of`) as meta."""
    from archsim.partition.ooo_allocation import device_of
    from archsim.policies.ooo import ALLOCATION

    allocation = ALLOCATION[args.policy]
    where = [device_of(layer, layers, args.processors, allocation, args.group) for layer in range(layers)]
    rule = (f"modulo: layer l (from 0) on device ⌊l/{args.group}⌋ mod P" if allocation == "modulo" else
            "contiguous: ⌈L/P⌉ consecutive layers a device, by count, not cost (the paper's model parallelism)")
    counts = [where.count(device) for device in range(args.processors)]
    return {**allocation_meta(rule, counts), "schedule_variant": ooo_variant(args.policy, counts)}


def ooo_variant(policy: str, counts: Sequence[int]) -> str:
    """Meta ``schedule_variant`` of an out-of-order pipeline: layer-wise ops and their order, and the split, so its
    ``gpipe`` is not mistaken for ``archsim pipeline --method gpipe``'s stage-wise fill-drain on balanced stages."""
    order = {"mp": "one micro-batch at a time, each layer's G before its δ",
             "gpipe": "every forward first, then each layer's G before its δ (out-of-order backprop's GPipe)",
             "ooo-pipe1": "gradient fast-forwarding, a device's δ before its G", "ooo-pipe2":
             "gradient fast-forwarding on modulo allocation"}[policy]
    split = ",".join(str(count) for count in counts)
    return f"{policy}: layer-wise, {order}, on {split} layers a device"


__all__ = ["allocation_meta", "ooo_allocation", "ooo_variant"]
