"""PipeDream's pruned dynamic program and its run-list antichain states against the first-written
ones (``tests/pipedream_reference.py``: every ancestor of every state scanned, ancestors as a bit
matrix), table for table: the same values, splits, rests and replicas, bit for bit, on random
chains and DAGs under every flag of the optimizer, and on long chains where pruning matters.
Small final levels are solved by the dense numpy search, the rest by the compiled walk: the
``search`` fixture runs the tests that use it once with each forced on every final level."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from archsim.partition import pipedream_dense, profile_from_costs
from archsim.partition.antichain import antichain_states
from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.pipedream import pipedream_partition, pipedream_partitions, pipedream_plan, pipedream_plans
from archsim.partition.pipedream_tables import Level, PipeDreamOptions, level_tables
from archsim.planners import partition, partitions
from tests.pipedream_reference import reference_tables


@pytest.fixture(params=["dense", "compiled"])
def search(request, monkeypatch):
    """Force one split search for every final level: dense (any size) or compiled (none dense)."""
    monkeypatch.setattr(pipedream_dense, "WORK_LIMIT", 10**12 if request.param == "dense" else -1)
    return request.param


def tables(profile, hierarchy, options):
    """The tables pipedream_plan fills, per level (innermost first)."""
    states = antichain_states(profile)
    return states, level_tables(states, hierarchy, options)


def random_profile(rng, n, branches=0.3, ties=False):
    """A chain with random extra edges from earlier nodes (skip connections); ``ties``: small
    integer costs, so many splits tie."""
    edges = [(k - 1, k) for k in range(1, n)]
    edges += [(int(rng.integers(0, k - 1)), k) for k in range(2, n) if rng.random() < branches]
    if ties:
        forward, weight_grad, delta = rng.integers(0, 3, n), rng.integers(0, 2, n), np.zeros(n)
    else:
        forward, weight_grad, delta = rng.uniform(0, 2, n), rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    return profile_from_costs([f"n{k}" for k in range(n)], forward, weight_grad, delta, rng.integers(0, 50, n),
                              None, rng.integers(0, 50, n), edges=edges)


def random_options(rng):
    return PipeDreamOptions(activation_compression_ratio=rng.choice([None, 1.0, 2.0]),
                            memory_constraint=bool(rng.random() < 0.3), memory_bytes=float(rng.integers(20, 400)),
                            straight_pipeline=bool(rng.random() < 0.5), use_fewer_machines=bool(rng.random() < 0.5))


def assert_same(profile, hierarchy, options):
    expected_states, expected = reference_tables(profile, hierarchy, options)
    states, got = tables(profile, hierarchy, options)
    assert states.antichains == expected_states.antichains
    assert [states.done(j) for j in range(len(states))] == list(expected_states.closure)
    for name in ("compute", "activation", "parameters", "crossing"):
        assert np.array_equal(getattr(states, name), getattr(expected_states, name)), name
    for j in range(len(states)):
        bits = expected_states.ancestor_bits
        assert states.ancestors(j) == [k for k in range(len(states)) if bits[j, k >> 3] >> (k & 7) & 1]
    for level, (mine, theirs) in enumerate(zip(got, expected)):
        for name in ("value", "split", "rest", "replicas"):
            assert np.array_equal(getattr(mine, name), getattr(theirs, name)), (level, name)


@pytest.mark.parametrize("seed", range(8))
def test_random_networks_give_the_reference_tables(seed, search):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        profile = random_profile(rng, int(rng.integers(1, 30)), branches=rng.choice([0.0, 0.2, 0.5]),
                                 ties=rng.random() < 0.5)
        hierarchy = [Level(int(rng.integers(1, 7)), float(rng.choice([1.0, 10.0, np.inf])))
                     for _ in range(int(rng.integers(1, 3)))]
        options = random_options(rng)
        assert_same(profile, hierarchy, options)


@pytest.mark.long
@pytest.mark.parametrize("replication, bandwidth", [(False, np.inf), (True, np.inf), (False, 50.0), (True, 50.0)])
def test_long_chains_give_the_reference_tables(replication, bandwidth, search):
    rng = np.random.default_rng(7)
    options = PipeDreamOptions(activation_compression_ratio=None if np.isinf(bandwidth) else 1.0,
                               straight_pipeline=not replication)
    for n, hierarchy in ((600, [Level(16, bandwidth)]), (120, [Level(3, bandwidth), Level(4, bandwidth / 10)])):
        profile = profile_from_costs([f"l{k}" for k in range(n)], rng.uniform(1, 2, n), rng.uniform(1, 2, n),
                                     rng.uniform(1, 2, n), rng.integers(1, 100, n), None, rng.integers(1, 100, n))
        assert_same(profile, hierarchy, options)


def test_equal_layers_tie_as_the_reference_does(search):
    # Every layer alike: many splits give the optimum; the first in the released order must win.
    n = 200
    profile = profile_from_costs([f"l{k}" for k in range(n)], np.ones(n), np.ones(n), np.zeros(n))
    for options in (PipeDreamOptions(straight_pipeline=True), PipeDreamOptions(),
                    PipeDreamOptions(straight_pipeline=True, use_fewer_machines=True)):
        assert_same(profile, [Level(7, 1.0)], options)


def test_a_chain_has_one_ancestor_run_per_state():
    n = 5000
    profile = profile_from_costs([f"l{k}" for k in range(n)], np.ones(n), np.ones(n), np.zeros(n))
    states = antichain_states(profile)
    assert len(states) == n and len(states.ancestor_starts) == n - 1
    assert states.ancestors(n - 1) == list(range(n - 1))
    plan = pipedream_plan(profile, [Level(16, np.inf)], PipeDreamOptions(straight_pipeline=True))
    assert plan.time_per_stage == 626.0  # 10,000 units of work over 16 stages of whole layers: ⌈5000/16⌉ × 2


@pytest.mark.parametrize("options", [PipeDreamOptions(straight_pipeline=True), PipeDreamOptions(),
                                     PipeDreamOptions(activation_compression_ratio=1.0, use_fewer_machines=True),
                                     PipeDreamOptions(memory_constraint=True, memory_bytes=300.0)])
def test_one_table_gives_every_machine_count_its_own_plan(options, search):
    rng = np.random.default_rng(3)
    profile = random_profile(rng, 40, branches=0.2)
    counts = [2, 5, 3, 12, 1]
    inner = [Level(2, 100.0)]
    for levels in ([], inner):
        together = pipedream_plans(profile, levels, 10.0, counts, options)
        assert together == [pipedream_plan(profile, [*levels, Level(count, 10.0)], options) for count in counts]


def test_the_sweeps_batch_call_equals_one_call_per_processor_count():
    rng = np.random.default_rng(4)
    profile = random_profile(rng, 30, branches=0.3)
    counts = [2, 3, 4, 8, 12]
    assert partitions(profile, counts, "pipedream") == [pipedream_partition(profile, count) for count in counts]
    assert partitions(profile, counts, "gpipe") == [partition(profile, count, "gpipe") for count in counts]
    assert pipedream_partitions(profile, counts, bandwidth=5.0, replication=True) == [
        pipedream_partition(profile, count, bandwidth=5.0, replication=True) for count in counts]


SHARED = Path(__file__).resolve().parent / "data" / "pipedream" / "profiles"  # PipeDream's own (MIT), shipped
SETTINGS = [([8], [1e9], {"activation_compression_ratio": 1.0}), ([8], [1e9], {}),
            ([8], [1e9], {"activation_compression_ratio": 1.0, "memory_constraint": True}),
            ([4, 4], [1.6e10, 1.25e9], {"activation_compression_ratio": 1.0}),
            ([16], [1e9], {"straight_pipeline": True}),
            ([6], [1e9], {"straight_pipeline": True, "use_fewer_machines": True})]


@pytest.mark.parametrize("model, settings", [("resnet50", SETTINGS), ("gnmt", SETTINGS),
                                             ("densenet121", SETTINGS[4:])])
def test_released_profiles_give_the_reference_tables(model, settings, search):
    profile = load_graph_txt(SHARED / f"{model}.txt")
    for machines, bandwidths, flags in settings:
        assert_same(profile, [Level(n, b) for n, b in zip(machines, bandwidths)], PipeDreamOptions(**flags))


def test_the_replica_allreduce_is_pipedreams_formula():
    """4(r − 1)·P / (B·r), by hand: one replica sends nothing; 4 replicas of 1e6 bytes at 1e3 bytes per unit:
    4 · 3 · 1e6 / 4e3 = 3000; an array of parameter counts is priced elementwise."""
    from archsim.partition.pipedream_allreduce import replica_allreduce

    assert replica_allreduce(1, 5e6, 1e3) == 0.0
    assert replica_allreduce(4, 1e6, 1e3) == 3000.0
    assert replica_allreduce(2, np.array([0.0, 1e3, 8e3]), 2.0).tolist() == [0.0, 1e3, 8e3]


def test_the_compiled_stage_time_uses_the_same_allreduce():
    """The compiled split search keeps its own copy of the all-reduce: on a grid of r, P and B its stage time is
    (compute + replica_allreduce) / r, bit for bit."""
    from archsim.partition.pipedream_allreduce import replica_allreduce
    from archsim.partition.pipedream_kernel import stage_time

    for r in (1, 2, 3, 7, 16, 1000):
        for parameters in (0.0, 1.0, 3.3e5, 1.7e9, 6.02e23):
            for bandwidth in (1e-3, 0.7, 12.5e9, 3e11):
                expected = (2.5 + replica_allreduce(r, parameters, bandwidth)) / r
                assert stage_time(2.5, parameters, r, bandwidth) == expected, (r, parameters, bandwidth)
