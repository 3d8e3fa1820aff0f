"""The one planner registry: every planner returns the one plan type over one cluster model.

References: brute force over every contiguous cut (GPipe's compute balance), hand sums (SPP's
stage all-reduce), and the partitioners' own entry points (the registry only dispatches).
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.errors import InputError
from archsim.partition import gpipe_partition, layerpipe_partition, pipedream_partition, profile_from_costs
from archsim.partition.result import Partition
from archsim.plan_flags import BASELINE_METHODS, TIMELINE_METHODS
from archsim.planners import CLUSTER_PLANNERS, PARTITIONERS, PLANNERS, partition, plan_on_cluster
from archsim.spp.baselines import BASELINES
from archsim.spp.topology import Topology


def chain(costs, weights=None):
    n = len(costs)
    return profile_from_costs([f"l{i}" for i in range(n)], costs, [0.0] * n, [1.0] * n,
                              activation_bytes=[8] * n, delta_bytes=[8] * n, weight_bytes=weights or [100] * n,
                              unit="seconds")


def test_the_plan_command_lists_the_papers_baselines():
    assert BASELINE_METHODS == BASELINES
    assert set(BASELINES) <= set(CLUSTER_PLANNERS) and "spp" in CLUSTER_PLANNERS
    assert PARTITIONERS == ("layerpipe", "pipedream", "gpipe", "ooo")


def test_every_planner_returns_the_one_plan_type_covering_every_layer():
    profile = chain([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
    link = np.full((4, 4), 100.0)
    np.fill_diagonal(link, 0.0)
    cluster = Topology("two-by-two", (0, 0, 1, 1), link)
    for name, planner in PLANNERS.items():
        faces = [planner.partition(profile, Topology.flat(3)) if planner.partition else None,
                 planner.on_cluster(profile, cluster, 4) if planner.on_cluster else None]
        for plan in filter(None, faces):
            assert isinstance(plan, Partition), name
            assert plan.unit == "seconds", name
            assert sorted(layer for stage in plan.stages for layer in stage.layers) == sorted(profile.names), name
        if planner.on_cluster:
            plan = faces[1]
            assert plan.makespan is not None and plan.makespan > 0, name
            assert len(plan.devices) == len(plan.stages), name
            assert all(len(d) == s.replicas for d, s in zip(plan.devices, plan.stages)), name


def test_the_registry_dispatches_to_the_partitioners():
    profile = chain([3.0, 1.0, 4.0, 1.0, 5.0])
    assert partition(profile, 3, "gpipe") == gpipe_partition(profile, 3)
    assert partition(profile, 3, "pipedream") == pipedream_partition(profile, 3)
    assert partition(profile, Topology.flat(2), "layerpipe") == layerpipe_partition(profile, 2)
    with pytest.raises(InputError, match="choose one of layerpipe, pipedream, gpipe"):
        partition(profile, 3, "spp")
    with pytest.raises(InputError, match="processors must be positive"):
        partition(profile, 0, "gpipe")
    with pytest.raises(InputError, match="choose one of"):
        plan_on_cluster(profile, Topology.flat(2), "ooo", 4)


@settings(max_examples=60, deadline=None)
@given(costs=st.lists(st.integers(1, 20), min_size=1, max_size=7), processors=st.integers(1, 5))
def test_gpipe_compute_balance_is_the_least_slowest_stage(costs, processors):
    """GPipe's authors' balance: no contiguous split into as many stages has a lighter slowest stage."""
    profile = chain([float(c) for c in costs])
    plan = gpipe_partition(profile, processors, balance="compute")
    totals = [c + 1.0 for c in costs]  # F + δ (G = 0)
    k = min(processors, len(costs))
    best = min(max(sum(totals[a:b]) for a, b in itertools.pairwise((0, *cuts, len(costs))))
               for cuts in itertools.combinations(range(1, len(costs)), k - 1))
    assert len(plan.stages) == k
    assert max(stage.total_cost for stage in plan.stages) == pytest.approx(best)


def test_pipedream_reads_the_clusters_levels():
    """One server at one bandwidth is the optimizer's flat setting with that bandwidth; two servers
    of two devices are its two levels (devices within a server, then servers)."""
    from archsim.partition import Level

    profile = chain([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
    assert partition(profile, Topology.flat(3, 50.0), "pipedream") == pipedream_partition(profile, 3, bandwidth=50.0)
    assert partition(profile, 3, "pipedream", bandwidth=50.0) == pipedream_partition(profile, 3, bandwidth=50.0)
    assert partition(profile, 3, "gpipe", bandwidth=4.0) == gpipe_partition(profile, 3, bandwidth=4.0)
    link = np.array([[0, 100, 10, 10], [100, 0, 10, 10], [10, 10, 0, 100], [10, 10, 100, 0]], dtype=float)
    two = Topology("two", (0, 0, 1, 1), link)
    assert partition(profile, two, "pipedream") == pipedream_partition(
        profile, hierarchy=(Level(2, 100.0), Level(2, 10.0)))


def test_equal_layer_counts_stay_the_default_gpipe():
    assert [len(s.layers) for s in gpipe_partition(chain([1.0] * 10), 4).stages] == [3, 3, 2, 2]


def test_spp_plans_carry_their_stage_allreduce():
    """Data parallel on 2 GPUs at 10 B/s: one stage of both layers on both GPUs; per micro-batch each
    replica runs half of (1 + 2) + (3 + 4) = 5 s; the ring all-reduce of 100 bytes is
    2 · (2 − 1) · 100 / (2 · 10) = 10 s; makespan 4 · 10 / 2 + 10 = 30 s (test_spp's hand example)."""
    profile = profile_from_costs(["a", "b"], [1.0, 3.0], [0.0, 0.0], [2.0, 4.0], activation_bytes=[5, 0],
                                 delta_bytes=[0, 5], weight_bytes=[40, 60], unit="seconds")
    topology = Topology("t", (0, 1), np.array([[0.0, 10.0], [10.0, 0.0]]))
    plan = plan_on_cluster(profile, topology, "dp", 4)
    (stage,) = plan.stages
    assert (stage.replicas, plan.devices, stage.assigned_cost) == (2, ((0, 1),), 5.0)
    assert stage.allreduce_cost == pytest.approx(10.0) and plan.makespan == pytest.approx(30.0)


def test_a_flat_cluster_is_one_server_of_free_links():
    flat = Topology.flat(4)
    assert flat.devices == 4 and set(flat.servers) == {0}
    assert flat.uniform_levels() == ((4, float("inf")),)
    assert Topology.flat(3, 5.0).uniform_levels() == ((3, 5.0),)
    with pytest.raises(InputError, match="processors must be positive"):
        Topology.flat(0)


@pytest.mark.parametrize("method", [m for m in BASELINE_METHODS if m not in TIMELINE_METHODS])
@pytest.mark.parametrize("flag", ["--gantt", "--chrome-trace", "--schedule-csv"])
def test_a_baselines_timeline_output_is_refused_not_skipped(method, flag, tmp_path, capsys):
    # `plan --method gpipe --gantt g.html` printed the makespan and exited 0 without writing g.html; since
    # 2026-12-05 gpipe's and pipedream-prm's PE schedules are written (tests/test_user_trial_sched69.py), while dp and
    # hetpipe give a makespan, no one pipeline's timeline
    from pathlib import Path

    from archsim.cli import main

    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "spp_sim.toml"
    out = tmp_path / "timeline.out"
    code = main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "2", "--method", method,
                 flag, str(out)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and flag in captured.err and not out.exists()
