"""Partitioners against LayerPipe's Table III and brute force over all partitions."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array.config import ArrayConfig
from archsim.errors import InputError
from archsim.partition import (
    build_profile,
    gpipe_partition,
    layerpipe_partition,
    pipedream_partition,
    profile_from_costs,
)
from archsim.partition.coster import DeltaCoster
from archsim.workload import load_network

# Table III of 004_2cd4e01df0d40184.txt: 3 processors, 32×32 ws, batch 32.
PIPEDREAM = (4.35e7, 3.07e7, 2.23e7)
LAYERPIPE_ASSIGNED = (3.22e7, 2.09e7, 2.23e7)
LAYERPIPE_BORROWED = (0.0, 1.13e7, 9.86e6)
LAYERPIPE_TOTAL = (3.22e7, 3.22e7, 3.22e7)


@pytest.fixture(scope="module")
def sample_profile():
    return build_profile(load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws"), batch=32, mode="paper")


def close(ours, paper, rel=0.01):
    return abs(ours - paper) <= rel * abs(paper) if paper else ours == 0


def test_pipedream_matches_table_iii(sample_profile):
    frame = pipedream_partition(sample_profile, 3).to_frame()
    assert list(frame.layers) == ["conv1", "conv2", "conv3 conv4"]
    for ours, paper in zip(frame.total_cycles, PIPEDREAM):
        assert close(ours, paper), (ours, paper)


def test_layerpipe_matches_table_iii_within_one_percent(sample_profile):
    part = layerpipe_partition(sample_profile, 3)
    frame = part.to_frame()
    for column, paper_row in (("assigned_cycles", LAYERPIPE_ASSIGNED), ("borrowed_cycles", LAYERPIPE_BORROWED),
                              ("total_cycles", LAYERPIPE_TOTAL)):
        for ours, paper in zip(frame[column], paper_row):
            assert close(ours, paper), (column, ours, paper)
    # δ″ are real sub-GEMMs: the split parts cost at least the whole δ (fold overheads), never less.
    delta = dict(zip(sample_profile.names, sample_profile.delta))
    pieces: dict[str, float] = {}
    for stage in part.stages:
        for op in stage.ops:
            if op.kind in ("D1", "D2"):
                pieces[op.layer] = pieces.get(op.layer, 0.0) + op.cost
    assert pieces and all(pieces[name] >= delta[name] for name in pieces)


def test_layerpipe_uses_the_processors_and_keeps_all_work(sample_profile):
    for processors in (1, 2, 3, 4):
        part = layerpipe_partition(sample_profile, processors)
        assert len(part.stages) <= processors
        fixed = sum(op.cost for s in part.stages for op in s.ops if op.kind in ("F", "G"))
        assert fixed == pytest.approx(float(sample_profile.fixed.sum()))
        whole_deltas = {op.layer for s in part.stages for op in s.ops if op.kind == "D"}
        split_deltas = {op.layer for s in part.stages for op in s.ops if op.kind in ("D1", "D2")}
        assert whole_deltas | split_deltas == set(sample_profile.names) and not whole_deltas & split_deltas


def brute_force_min_max(totals, processors):
    n = len(totals)
    best = np.inf
    for stages in range(1, min(processors, n) + 1):
        for cuts in itertools.combinations(range(1, n), stages - 1):
            bounds = (0, *cuts, n)
            best = min(best, max(sum(totals[a:b]) for a, b in itertools.pairwise(bounds)))
    return best


@settings(max_examples=120, deadline=None)
@given(costs=st.lists(st.tuples(st.integers(1, 50), st.integers(0, 50), st.integers(0, 50)), min_size=1,
                      max_size=7), processors=st.integers(1, 5))
def test_pipedream_dp_equals_brute_force(costs, processors):
    f, g, d = (list(x) for x in zip(*costs))
    profile = profile_from_costs([f"l{i}" for i in range(len(costs))], f, g, d)
    if len(costs) == 1 and processors > 1:
        # The released optimizer applies --use_fewer_machines only past the first state, so one
        # state on several machines has no plan there either: an error, not a guess.
        with pytest.raises(InputError, match="no plan"):
            pipedream_partition(profile, processors, use_fewer_machines=True)
        return
    part = pipedream_partition(profile, processors, use_fewer_machines=True)
    totals = [a + b + c for a, b, c in costs]
    assert part.max_stage_cost == pytest.approx(brute_force_min_max(totals, processors))
    assert [n for s in part.stages for n in s.layers] == list(profile.names)


def brute_force_replicated(totals, weights, processors, bandwidth):
    n = len(totals)
    best = np.inf
    for stages in range(1, min(processors, n) + 1):
        for cuts in itertools.combinations(range(1, n), stages - 1):
            bounds = list(zip((0, *cuts), (*cuts, n)))
            for reps in itertools.product(range(1, processors + 1), repeat=stages):
                if sum(reps) > processors:
                    continue
                # PipeDream's replicated stage: (compute + 4(r − 1)·params / (B·r)) / r.
                time = max((sum(totals[a:b]) + 4 * (r - 1) * sum(weights[a:b]) / (bandwidth * r)) / r
                           for (a, b), r in zip(bounds, reps))
                best = min(best, time)
    return best


@settings(max_examples=60, deadline=None)
@given(costs=st.lists(st.tuples(st.integers(1, 40), st.integers(0, 200)), min_size=1, max_size=5),
       processors=st.integers(1, 4))
def test_pipedream_replication_equals_brute_force(costs, processors):
    totals = [c for c, _ in costs]
    weights = [w for _, w in costs]
    profile = profile_from_costs([f"l{i}" for i in range(len(costs))], totals, [0] * len(costs),
                                 [0] * len(costs), weight_bytes=weights)
    if len(costs) == 1 and processors > 1:
        processors = 1  # see test_pipedream_dp_equals_brute_force: no plan for one state on several machines
    part = pipedream_partition(profile, processors, replication=True, bandwidth=10.0, use_fewer_machines=True)
    assert part.max_stage_cost == pytest.approx(brute_force_replicated(totals, weights, processors, 10.0))
    assert part.processors <= processors


def test_gpipe_equal_layer_counts(sample_profile):
    frame = gpipe_partition(sample_profile, 3).to_frame()
    assert list(frame.layers) == ["conv1 conv2", "conv3", "conv4"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), processors=st.integers(2, 4))
def test_layerpipe_never_worse_than_even_target_bound_on_random_conv_nets(seed, processors):
    """Algorithm 1 on random small conv nets: all work placed, and its slowest processor is no
    slower than PipeDream's optimum plus one relaxation margin (it can borrow, PipeDream cannot)."""
    rng = np.random.default_rng(seed)
    from archsim.workload import Layer, Network

    layers, size, channels = [], 16, 3
    for i in range(4):
        out = int(rng.choice([4, 8, 16]))
        stride = int(rng.choice([1, 2])) if size >= 8 else 1
        layers.append(Layer(name=f"c{i}", kind="conv", ifmap_h=size, ifmap_w=size, filter_h=3, filter_w=3,
                            channels=channels, filters=out, stride=stride, padding=1,
                            inputs=(f"c{i - 1}",) if i else ("input",)))
        size, channels = layers[-1].ofmap_h, out
    profile = build_profile(Network("rand", tuple(layers)), ArrayConfig(8, 8, "ws"), batch=2, mode="paper")
    lp = layerpipe_partition(profile, processors)
    pd_opt = pipedream_partition(profile, processors)
    assert len(lp.stages) <= processors
    assert lp.max_stage_cost >= float(profile.total.sum()) / processors * 0.999
    assert lp.max_stage_cost <= pd_opt.max_stage_cost * 1.25


def random_conv_profile(seed, dataflow="ws", mode="paper", array=8):
    from archsim.workload import Layer, Network

    rng = np.random.default_rng(seed)
    layers, size, channels = [], 12, int(rng.integers(1, 6))
    for i in range(int(rng.integers(2, 6))):
        out = int(rng.integers(1, 20))
        stride = int(rng.choice([1, 2, 3])) if size >= 6 else 1
        r = int(rng.choice([1, 3, 5])) if size >= 5 else 1
        layers.append(Layer(name=f"c{i}", kind="conv", ifmap_h=size, ifmap_w=size, filter_h=r, filter_w=r,
                            channels=channels, filters=out, stride=stride, padding=r // 2,
                            inputs=(f"c{i - 1}",) if i else ("input",)))
        size, channels = layers[-1].ofmap_h, out
    return build_profile(Network("rand", tuple(layers)), ArrayConfig(array, array - 1, dataflow), batch=2, mode=mode)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), dataflow=st.sampled_from(["ws", "os", "is"]),
       mode=st.sampled_from(["paper", "exact"]), fraction=st.floats(0, 1))
def test_integer_split_cycles_and_bytes_equal_costed_sub_gemms(seed, dataflow, mode, fraction):
    profile = random_conv_profile(seed, dataflow, mode)
    for index in range(len(profile)):
        if profile.lowered[index].op("D") is None:
            continue
        for axis in ("channels", "reduction", "rows"):
            part = round(fraction * DeltaCoster.of(profile).split_units(index, axis))
            split, d1, d2 = DeltaCoster.of(profile).split_cost(index, axis, part)
            assert DeltaCoster.of(profile).split_cycles(index, axis, part) == (d1, d2)
            assert DeltaCoster.of(profile).split_bytes(index, axis, part) == (
                (split.d2.out_bytes, split.d2.extra_bytes) if split.d2 is not None else (0, 0))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), processors=st.integers(2, 5))
def test_galloping_relaxation_equals_the_printed_linear_search(seed, processors):
    profile = random_conv_profile(seed)
    fast = layerpipe_partition(profile, processors, alpha=1.01, search="gallop")
    slow = layerpipe_partition(profile, processors, alpha=1.01, search="linear")
    assert fast.notes == slow.notes
    assert fast.to_frame().equals(slow.to_frame())
