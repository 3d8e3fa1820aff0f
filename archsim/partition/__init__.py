"""Partitioners over one profile type: PipeDream's optimizer, GPipe, LayerPipe's Algorithm 1; the
one registry of them (and of SPP's planners) is :mod:`archsim.planners`.

Names load on first use (PEP 562): a command importing one partitioner does not load the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.lazy import lazy_exports

if TYPE_CHECKING:  # the names, for type checkers and the API docs
    from archsim.partition.coster import DeltaCoster
    from archsim.partition.gpipe import gpipe_partition
    from archsim.partition.layerpipe import best_split, layerpipe_partition
    from archsim.partition.pipedream import pipedream_partition, pipedream_partitions, pipedream_plan
    from archsim.partition.pipedream_tables import Level, PipeDreamOptions
    from archsim.partition.profile import LayerProfile, build_profile, profile_from_costs
    from archsim.partition.result import Partition, PlacedOp, Stage, mandatory_bytes

# public name -> the module defining it
_EXPORTS = {
    "DeltaCoster": "archsim.partition.coster",
    "LayerProfile": "archsim.partition.profile",
    "Level": "archsim.partition.pipedream_tables",
    "Partition": "archsim.partition.result",
    "PipeDreamOptions": "archsim.partition.pipedream_tables",
    "PlacedOp": "archsim.partition.result",
    "Stage": "archsim.partition.result",
    "best_split": "archsim.partition.layerpipe",
    "build_profile": "archsim.partition.profile",
    "gpipe_partition": "archsim.partition.gpipe",
    "layerpipe_partition": "archsim.partition.layerpipe",
    "mandatory_bytes": "archsim.partition.result",
    "pipedream_partition": "archsim.partition.pipedream",
    "pipedream_partitions": "archsim.partition.pipedream",
    "pipedream_plan": "archsim.partition.pipedream",
    "profile_from_costs": "archsim.partition.profile",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
