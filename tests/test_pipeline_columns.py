"""The columnar builder of a partition's pipeline problem against the original object builder
(tests/pipeline_reference.py): the same processors, links, ops (ids, priorities, costs, memory,
tags) and dependencies in the same order, the same arrays and the same timeline — over the three
partitioners and schedules, chains (one with layers whose δ costs nothing) and branching networks
(split δ ops included), micro-batch counts below and above the pipeline depth, with and without
link bandwidth, and a profile whose graph comes from its edges, not lowered layers (PipeDream's
graph.txt)."""

from pathlib import Path

import pytest
from pipeline_reference import pipeline_problem as reference_problem
from problem_equality import assert_same_problem

from archsim.array.config import ArrayConfig
from archsim.partition import build_profile, profile_from_costs
from archsim.partition.graph_txt import load_graph_txt
from archsim.planners import partition
from archsim.policies.pipeline import SCHEDULES, pipeline_problem
from archsim.sim import simulate
from archsim.workload import load_network


def _cases():
    array = ArrayConfig(16, 16, "ws")
    chain = profile_from_costs([f"l{i}" for i in range(6)], [3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8],
                               [9, 7, 9, 3, 2, 3], activation_bytes=[5, 6, 7, 8, 9, 10], delta_bytes=[4, 4, 3, 3, 2, 2])
    zero_delta = profile_from_costs([f"l{i}" for i in range(5)], [3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [1, 0, 2, 0, 3],
                                    activation_bytes=[5, 6, 7, 8, 9], delta_bytes=[4, 4, 3, 3, 2])
    sample = build_profile(load_network("layerpipe_sample"), array, 4, "paper")
    resnet = build_profile(load_network("resnet50"), array, 2, "exact")
    gnmt = load_graph_txt(Path(__file__).parent / "data" / "pipedream" / "profiles" / "gnmt.txt")
    for name, profile, processors in (("chain", chain, 3), ("zero-delta", zero_delta, 3), ("sample", sample, 3),
                                      ("resnet50", resnet, 4), ("graph.txt-gnmt", gnmt, 3)):
        for method in ("layerpipe", "pipedream", "gpipe"):
            yield pytest.param(profile, partition(profile, processors, method), id=f"{name}-{method}")


# the reference's names for archsim's list schedules (before GPipe and 1F1B became torch's orders)
REFERENCE_NAMES = {"gpipe-newest-first": "gpipe", "1f1b-window": "1f1b", "layerpipe": "layerpipe"}


@pytest.mark.long
@pytest.mark.parametrize("profile, plan", list(_cases()))
@pytest.mark.parametrize("schedule", [s for s in SCHEDULES if s in REFERENCE_NAMES])
def test_columnar_problem_equals_the_object_built_one(profile, plan, schedule):
    for microbatches, bandwidth in ((1, None), (2, 3.0), (7, None), (7, 2.5)):
        columnar = pipeline_problem(plan, profile, microbatches, schedule, bandwidth, 0.5)
        expected = reference_problem(plan, profile, microbatches, REFERENCE_NAMES[schedule], bandwidth, 0.5)
        assert_same_problem(columnar, expected)
        timeline, reference = simulate(columnar), simulate(expected)
        assert tuple(timeline.slots) == tuple(reference.slots)
        assert tuple(timeline.transfers) == tuple(reference.transfers)
