"""The first layer's stash: a layer keeps its input from F until its backward has read it, and its
weight gradient G reads that input even where the layer computes no δ (``exact`` lowering gives the
layer fed by the network input no δ). A layer with neither G nor δ keeps nothing. Expected bytes are
batch × input elements × element bytes, counted here from the layers' shapes."""

from dataclasses import replace

import numpy as np
import pytest

from archsim.array.config import ArrayConfig
from archsim.footprint import partition_footprint
from archsim.partition import build_profile
from archsim.planners import partition
from archsim.policies.pipeline import simulate_partition
from archsim.workload import Layer, Network

BATCH, ELEMENT_BYTES, MICROBATCHES = 2, 2, 4
ARRAY = ArrayConfig(8, 8, "ws", element_bytes=ELEMENT_BYTES)


def conv(name: str, size: int, channels: int, filters: int, source: str) -> Layer:
    """A 3 × 3 convolution with padding 1: its output keeps the input's size × size."""
    return Layer(name=name, kind="conv", ifmap_h=size, ifmap_w=size, filter_h=3, filter_w=3, channels=channels,
                 filters=filters, padding=1, inputs=(source,))


def fc(name: str, inputs: int, outputs: int, source: str) -> Layer:
    return Layer(name=name, kind="fc", ifmap_h=1, ifmap_w=1, filter_h=1, filter_w=1, channels=inputs,
                 filters=outputs, inputs=(source,))


# 8 × 8 × 3 → conv → 8 × 8 × 4 → conv → 8 × 8 × 4 → fc 256 → 6 → fc 6 → 5
CONV_FIRST = Network("conv_first", (conv("c0", 8, 3, 4, "input"), conv("c1", 8, 4, 4, "c0"),
                                    fc("f0", 8 * 8 * 4, 6, "c1"), fc("f1", 6, 5, "f0")))
CONV_FIRST_INPUTS = [8 * 8 * 3, 8 * 8 * 4, 8 * 8 * 4, 6]  # input elements per sample, layer by layer
FC_FIRST = Network("fc_first", (fc("f0", 10, 7, "input"), fc("f1", 7, 5, "f0")))
FC_FIRST_INPUTS = [10, 7]


def _bytes(elements: int) -> int:
    return BATCH * elements * ELEMENT_BYTES


@pytest.mark.parametrize("network, inputs", [(CONV_FIRST, CONV_FIRST_INPUTS), (FC_FIRST, FC_FIRST_INPUTS)],
                         ids=["conv", "fc"])
def test_a_weighted_first_layer_without_delta_stashes_its_input(network, inputs):
    profile = build_profile(network, ARRAY, BATCH, "exact")
    first = profile.lowered[0]
    assert first.op("G") is not None and first.op("D") is None  # the case: G reads the input, no δ does
    assert profile.stash_bytes.tolist() == [_bytes(n) for n in inputs]
    # no δ of the network input is sent anywhere: the δ bytes keep their 0 for the first layer
    assert profile.delta_bytes.tolist() == [0] + [_bytes(n) for n in inputs[1:]]


def test_paper_mode_first_layer_computes_delta_and_stashes_the_same_input():
    profile = build_profile(CONV_FIRST, ARRAY, BATCH, "paper")
    assert profile.lowered[0].op("D") is not None
    assert profile.stash_bytes.tolist() == profile.delta_bytes.tolist() == [_bytes(n) for n in CONV_FIRST_INPUTS]


def test_a_first_layer_with_neither_weights_nor_delta_keeps_nothing():
    """A 2 × 2 max-pool fed by the network input: no weights (no G) and, in exact mode, no δ."""
    pool = Layer(name="p0", kind="pool", ifmap_h=8, ifmap_w=8, filter_h=2, filter_w=2, channels=3, filters=3,
                 stride=2, inputs=("input",))
    network = Network("pool_first", (pool, conv("c0", 4, 3, 4, "p0"), fc("f0", 4 * 4 * 4, 5, "c0")))
    profile = build_profile(network, ARRAY, BATCH, "exact")
    assert [op.kind for op in profile.lowered[0].ops] == ["F"]
    assert profile.stash_bytes.tolist() == [0, _bytes(4 * 4 * 3), _bytes(4 * 4 * 4)]


def test_two_stage_1f1b_first_stage_peak_grows_by_in_flight_times_the_first_input():
    """GPipe's equal split puts c0, c1 on stage 0 and f0, f1 on stage 1; under 1F1B stage s of S keeps
    S − s + 1 micro-batches in flight, 2 on stage 0. Its peak holds both layers' inputs for each."""
    profile = build_profile(CONV_FIRST, ARRAY, BATCH, "exact")
    plan = partition(profile, 2, "gpipe")
    assert [list(stage.layers) for stage in plan.stages] == [["c0", "c1"], ["f0", "f1"]]
    first_input = _bytes(CONV_FIRST_INPUTS[0])
    # the rule before: a layer without δ kept nothing (what the first stage's memory left out)
    without = replace(profile, stash_bytes=np.array([0, *profile.stash_bytes[1:]], dtype=np.int64))

    def stage_memory(costs):
        run = simulate_partition(plan, costs, MICROBATCHES, "1f1b")
        return partition_footprint(plan, costs, run.timeline, run.schedule)

    now, before = stage_memory(profile), stage_memory(without)
    assert now[0].peak_in_flight == before[0].peak_in_flight == 2
    assert now[0].peak_activation_bytes == 2 * (first_input + _bytes(CONV_FIRST_INPUTS[1]))
    assert now[0].peak_activation_bytes - before[0].peak_activation_bytes == 2 * first_input
    assert now[0].peak_bytes - before[0].peak_bytes == 2 * first_input
    assert now[1] == before[1]  # stage 1's layers had their stash before
