"""LayerPipe's split search over cost tables against a plain binary search over costed sub-GEMMs,
and the relaxation search's count-only walk against the placing walk.

The reference binary search reads D2's cycles from :meth:`DeltaCoster.split_cost` — the cost
model run on the real δ″ sub-GEMM — not from the tables the fast search uses; ``scalar_best_split``
is the split search as first written (per axis that binary search, then the axes compared by δ′'s
costed cycles), the oracle for :func:`best_split`.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_partition import random_conv_profile

from archsim.array.analytic import form_cycles, form_within, gemm_cycles, gemm_cycles_form
from archsim.array.config import ArrayConfig
from archsim.partition import build_profile
from archsim.partition.coster import DeltaCoster
from archsim.partition.layerpipe import OpRank, best_split, walk
from archsim.partition.split_search import AxisSplits, one_gemm, table_splits
from archsim.split_axis import SPLIT_AXES
from archsim.workload import load_network


def binary_search(profile, index, axis, budget):
    units = DeltaCoster.of(profile).split_units(index, axis)
    if units <= 1:
        return 0
    low, high = 0, units - 1
    while low < high:
        mid = (low + high + 1) // 2
        if DeltaCoster.of(profile).split_cost(index, axis, mid)[2] <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def scalar_best_split(profile, index, budget, axes=SPLIT_AXES):
    best = None
    for axis in axes:
        part = binary_search(profile, index, axis, budget)
        if part == 0:
            continue
        _, d1, d2 = DeltaCoster.of(profile).split_cost(index, axis, part)
        if best is None or d1 < best[0]:
            best = (d1, d2, axis, part)
    return best


def check_every_layer(profile, fractions):
    checked = 0
    coster = DeltaCoster.of(profile)
    for index in range(len(profile)):
        if profile.lowered[index].op("D") is None:
            continue
        delta = float(profile.delta[index])
        for fraction in fractions:
            budget = fraction * delta
            for axis in ("channels", "reduction", "rows"):
                part = binary_search(profile, index, axis, budget)
                found = coster.fitting_split(index, axis, budget)
                assert found[0] == part, (index, axis)
                assert found[1:] == ((0, 0) if part == 0 else coster.split_cost(index, axis, part)[1:]), (index, axis)
                checked += 1
            split = best_split(coster, index, budget)
            expected = scalar_best_split(profile, index, budget)
            assert (None if split is None else (split.d1, split.d2, split.axis, split.part)) == expected, index
    assert checked


@pytest.mark.long
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), dataflow=st.sampled_from(["ws", "os", "is"]),
       mode=st.sampled_from(["paper", "exact"]), fractions=st.lists(st.floats(-0.1, 1.2), min_size=1, max_size=4))
def test_split_searches_on_random_conv_nets(seed, dataflow, mode, fractions):
    """Every axis's search equals a binary search over costed sub-GEMMs, and a one-GEMM δ's closed
    form equals its table (some draws have no one-GEMM δ — exact mode splits a strided conv's δ;
    the shipped nets below assert that closed-form comparisons happen)."""
    check_every_layer(random_conv_profile(seed, dataflow, mode), fractions)
    # a fresh profile: table_splits tabulates only searches not cached yet
    check_closed_form_against_tables(random_conv_profile(seed, dataflow, mode), fractions)


@pytest.mark.parametrize("network, batch", [("ffnn8", 3), ("layerpipe_sample", 2)])
def test_table_search_equals_binary_search_on_shipped_nets(network, batch):
    profile = build_profile(load_network(network), ArrayConfig(16, 8, "os"), batch, "paper")
    check_every_layer(profile, [0.0, 0.013, 0.25, 0.5, 0.77, 0.999, 1.0])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), scale=st.floats(0.05, 1.5))
def test_counting_walk_equals_placing_walk(seed, scale):
    profile = random_conv_profile(seed)
    target = scale * float(profile.total.max())
    coster = DeltaCoster.of(profile)
    placed, count = walk(profile, coster, target, ("channels", "reduction", "rows"))
    assert walk(profile, coster, target, ("channels", "reduction", "rows"), place=False)[1] == count == len(placed)
    assert all(placed)
    for limit in range(1, count + 2):  # a walk that stops past `limit` decides the same fit
        stopped = walk(profile, coster, target, ("channels", "reduction", "rows"), place=False, limit=limit)[1]
        assert (stopped <= limit) == (count <= limit)


def test_the_walks_ranks_follow_a_stages_order_and_mark_its_deltas():
    """Each op the walk places carries the OpRank of its kind; the ranks order a stage's ops F, G, D, D1, D2, and
    from D on they are exactly the δ's ops, whole or split (the ops keep_gainful may send home)."""
    assert sorted(("D2", "D", "G", "D1", "F"), key=lambda kind: getattr(OpRank, kind)) == ["F", "G", "D", "D1", "D2"]
    profile = random_conv_profile(0)
    placed, _ = walk(profile, DeltaCoster.of(profile), 0.3 * float(profile.total.max()), SPLIT_AXES)
    ops = [op for stage in placed for op in stage]
    assert {op[2] for op in ops} == {"F", "G", "D", "D1", "D2"}  # every kind occurs
    for op in ops:
        assert op[1] == getattr(OpRank, op[2]) and (op[1] >= OpRank.D) == (op[2] in ("D", "D1", "D2"))

def test_cycle_engine_profiles_keep_the_binary_search():
    from archsim.workload import Layer, Network

    layers = (Layer(name="c0", kind="conv", ifmap_h=6, ifmap_w=6, filter_h=3, filter_w=3, channels=3, filters=5,
                    stride=1, padding=1, inputs=("input",)),
              Layer(name="c1", kind="conv", ifmap_h=6, ifmap_w=6, filter_h=3, filter_w=3, channels=5, filters=7,
                    stride=1, padding=1, inputs=("c0",)))
    profile = build_profile(Network("tiny", layers), ArrayConfig(4, 4, "ws"), 1, "paper", engine="cycle")
    assert profile.engine == "cycle"
    check_every_layer(profile, [0.3, 0.6])


@pytest.mark.long
@settings(max_examples=600, deadline=None)
@given(dim=st.sampled_from(["m", "k", "n"]), others=st.tuples(st.integers(1, 40), st.integers(1, 40)),
       rows=st.integers(1, 12), cols=st.integers(1, 12), dataflow=st.sampled_from(["ws", "os", "is"]),
       limit=st.integers(-3, 3000))
def test_the_cycles_form_in_one_dimension_and_its_inverse(dim, others, rows, cols, dataflow, limit):
    """gemm_cycles_form gives gemm_cycles in any one dimension, and form_within inverts it (brute force)."""
    def shape(x):
        return dict(zip([d for d in "mkn" if d != dim], others), **{dim: x})

    def cycles(x):
        return gemm_cycles(shape(x)["m"], shape(x)["k"], shape(x)["n"], rows, cols, dataflow)

    big = shape(10**6)  # the varied dimension's own value is ignored
    form = gemm_cycles_form(dim, big["m"], big["k"], big["n"], rows, cols, dataflow)
    assert all(form_cycles(x, *form) == cycles(x) for x in range(1, 60)) and form_cycles(0, *form) == 0
    x = 0  # brute force: grow the dimension while the GEMM still fits (cycles grow without bound in it)
    while cycles(x + 1) <= limit:
        x += 1
    assert form_within(limit, *form) == x


def check_closed_form_against_tables(profile, fractions) -> int:
    """A one-GEMM δ's channels/reduction search (AxisSplits) gives what a table of every part gives."""
    compared = 0
    coster = DeltaCoster.of(profile)
    for index in range(len(profile)):
        if not one_gemm(profile.lowered[index]):
            continue
        tables = table_splits(coster, index)
        for axis in ("channels", "reduction"):
            closed = AxisSplits.of(profile.lowered[index], axis, coster.split_units(index, axis), profile.array)
            delta = float(profile.delta[index])
            for budget in [fraction * delta for fraction in fractions] + [0.0, float("inf"), delta]:
                assert closed(budget) == tables[(index, axis)](budget), (index, axis, budget)
                compared += 1
    return compared


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("network, batch", [("ffnn8", 3), ("layerpipe_sample", 2), ("resnet50", 1)])
def test_closed_form_splits_equal_the_tables_on_shipped_nets(network, batch, dataflow):
    """fc layers (several n per channel), strided and 1×1 convs, on arrays that fold unevenly."""
    profile = build_profile(load_network(network), ArrayConfig(16, 9, dataflow), batch, "exact")
    assert check_closed_form_against_tables(profile, np.linspace(0, 1, 37)) > 0
