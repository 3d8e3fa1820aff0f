"""Partitioners over one profile type: PipeDream's optimizer, GPipe's equal split, LayerPipe's Algorithm 1."""

from archsim.errors import InputError
from archsim.partition.coster import DeltaCoster
from archsim.partition.gpipe import gpipe_partition
from archsim.partition.layerpipe import best_split, layerpipe_partition
from archsim.partition.pipedream import (Level, PipeDreamOptions, pipedream_partition, pipedream_partitions,
                                        pipedream_plan)
from archsim.partition.profile import LayerProfile, build_profile, profile_from_costs
from archsim.partition.result import Partition, PlacedOp, Stage, mandatory_bytes

METHODS = ("layerpipe", "pipedream", "gpipe")


def partition(profile: LayerProfile, processors: int, method: str, **options) -> Partition:
    """Dispatch by method name (the CLI's ``--method``)."""
    if method == "layerpipe":
        return layerpipe_partition(profile, processors, **options)
    if method == "pipedream":
        return pipedream_partition(profile, processors, **options)
    if method == "gpipe":
        return gpipe_partition(profile, processors, **options)
    raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}", field="method")


def partitions(profile: LayerProfile, processors: list[int] | tuple[int, ...], method: str,
               **options) -> list[Partition]:
    """:func:`partition` for each processor count, in order; PipeDream's optimizer solves its
    table once for them all (:func:`~archsim.partition.pipedream.pipedream_partitions`)."""
    if method == "pipedream":
        return pipedream_partitions(profile, processors, **options)
    return [partition(profile, count, method, **options) for count in processors]


__all__ = [
    "METHODS",
    "DeltaCoster",
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
    "partitions",
    "pipedream_partition",
    "pipedream_partitions",
    "pipedream_plan",
    "profile_from_costs",
]
