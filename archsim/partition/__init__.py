"""Partitioners over one profile type: PipeDream's optimizer, GPipe, LayerPipe's Algorithm 1; the
one registry of them (and of SPP's planners) is :mod:`archsim.planners`."""

from archsim.partition.coster import DeltaCoster
from archsim.partition.gpipe import gpipe_partition
from archsim.partition.layerpipe import best_split, layerpipe_partition
from archsim.partition.pipedream import (Level, PipeDreamOptions, pipedream_partition, pipedream_partitions,
                                        pipedream_plan)
from archsim.partition.profile import LayerProfile, build_profile, profile_from_costs
from archsim.partition.result import Partition, PlacedOp, Stage, mandatory_bytes

__all__ = [
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
    "pipedream_partition",
    "pipedream_partitions",
    "pipedream_plan",
    "profile_from_costs",
]
