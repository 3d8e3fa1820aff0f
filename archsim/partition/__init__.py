"""Partitioners over one profile type: PipeDream's optimizer, GPipe's equal split, LayerPipe's Algorithm 1."""

from archsim.partition.gpipe import gpipe_partition
from archsim.partition.layerpipe import best_split, layerpipe_partition
from archsim.partition.pipedream import Level, PipeDreamOptions, pipedream_partition, pipedream_plan
from archsim.partition.profile import LayerProfile, build_profile, profile_from_costs
from archsim.partition.result import Partition, PlacedOp, Stage, mandatory_bytes

METHODS = ("layerpipe", "pipedream", "gpipe")


def partition(profile: LayerProfile, processors: int, method: str, **options) -> Partition:
    """Dispatch by method name (the CLI's ``--method``)."""
    from archsim.errors import InputError

    if method == "layerpipe":
        return layerpipe_partition(profile, processors, **options)
    if method == "pipedream":
        return pipedream_partition(profile, processors, **options)
    if method == "gpipe":
        return gpipe_partition(profile, processors, **options)
    raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}", field="method")


__all__ = [
    "METHODS",
    "LayerProfile",
    "Level",
    "Partition",
    "PipeDreamOptions",
    "PlacedOp",
    "Stage",
    "best_split",
    "build_profile",
    "gpipe_partition",
    "layerpipe_partition",
    "mandatory_bytes",
    "partition",
    "pipedream_partition",
    "pipedream_plan",
    "profile_from_costs",
]
