"""The pipeline oracle over links of finite bandwidth: each stage boundary carries one activation forward and one
gradient back per micro-batch, one at a time per direction (a residual's two readers on the next stage send the
summed δ back once, of the output's size). The reference: tests/pipeline_oracle_timing.py; over free links:
tests/test_pipeline_oracle.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_oracle_timing import SCHEDULES, archsim_pieces, check_against_reference

from archsim.array.config import ArrayConfig
from archsim.partition import build_profile
from archsim.partition.gpipe import gpipe_partition
from archsim.policies.pipeline import simulate_partition
from archsim.workload.layer import Layer, Network

# --- links with bandwidth: one activation and one δ per boundary and micro-batch ----------------


def _traffic(run) -> dict[tuple[str, int], list[tuple[str, int]]]:
    """Per (link, micro-batch): what crossed it, (source op's kind and layer, bytes), in time order."""
    crossed: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for transfer in run.timeline.transfers:
        source = run.problem.op(transfer.src)
        key = (transfer.link, source.tag("microbatch"))
        crossed.setdefault(key, []).append((f"{source.tag('kind')}:{source.tag('layer')}", transfer.bytes))
    return crossed


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_link_carries_each_delta_once_per_microbatch(schedule):
    """Three layers on three stages: per micro-batch p1 → p2 carries l0's activation, p2 → p3 l1's, and
    back p3 → p2 the δ of l2 (read by both l1's δ and its G) and p2 → p1 the δ of l1, each once."""
    _, run, _ = archsim_pieces(schedule, 3, 3, 2, [1, 2, 3], [2, 1, 1], [1, 1, 2], links=(2.0, [2, 6, 1], [1, 4, 8]))
    assert _traffic(run) == {(link, b): [sent] for b in range(2) for link, sent in
                             (("p1->p2", ("F:l0", 2)), ("p2->p3", ("F:l1", 6)), ("p3->p2", ("D:l2", 8)),
                              ("p2->p1", ("D:l1", 4)))}


def test_hand_timed_three_stages_with_links():
    """Stages F = 1, 2, 3, δ = 2, 1, 1, G = 1, 1, 2, m = 2, an activation taking 1 to send and a δ 2.
    1F1B: stage 1 F0 0–1, F1 1–2; sent 1–2, 2–3; stage 2 F0 2–4, F1 4–6; sent 4–5, 6–7; stage 3 F0 5–8,
    B0 8–11, F1 11–14, B1 14–17; δ0 back 11–13, stage 2 B0 13–15, δ0 back 15–17, stage 1 B0 17–20; δ1
    back 17–19, stage 2 B1 19–21, δ1 back 21–23, stage 1 B1 23–26. Sending δ once for the δ and once
    more for the G of the layer reading it put each backward 2 later on every stage but the last."""
    one = check_against_reference("1f1b", 3, 3, 2, [1, 2, 3], [2, 1, 1], [1, 1, 2], (2.0, [2, 2, 2], [4, 4, 4]))
    assert one == [[("F", 0, 0, 1), ("F", 1, 1, 2), ("B", 0, 17, 20), ("B", 1, 23, 26)],
                   [("F", 0, 2, 4), ("F", 1, 4, 6), ("B", 0, 13, 15), ("B", 1, 19, 21)],
                   [("F", 0, 5, 8), ("B", 0, 8, 11), ("F", 1, 11, 14), ("B", 1, 14, 17)]]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("layers, stages, m", [(3, 3, 3), (5, 2, 4), (6, 4, 7), (7, 3, 6)])
@pytest.mark.parametrize("bandwidth", [1.0, 4.0])
def test_unequal_stages_with_links_time_as_the_reference(schedule, layers, stages, m, bandwidth):
    f, d, g = [3, 1, 4, 1, 5, 9, 2][:layers], [2, 6, 5, 3, 5, 8, 9][:layers], [7, 9, 3, 2, 3, 8, 4][:layers]
    check_against_reference(schedule, layers, stages, m, f, d, g,
                            (bandwidth, [4, 7, 2, 9, 3, 5, 6][:layers], [5, 3, 8, 2, 6, 4, 7][:layers]))


@settings(max_examples=40)
@given(costs=st.lists(st.tuples(st.integers(1, 9), st.integers(0, 9), st.integers(1, 9), st.integers(1, 9),
                                st.integers(1, 9)), min_size=1, max_size=6),
       stages=st.integers(1, 4), m=st.integers(1, 6), schedule=st.sampled_from(SCHEDULES),
       bandwidth=st.sampled_from([0.5, 2.0, 8.0]))
def test_any_chain_with_links_times_as_the_reference(costs, stages, m, schedule, bandwidth):
    f, d, g, activation, delta = (list(x) for x in zip(*costs))
    check_against_reference(schedule, len(costs), min(stages, len(costs)), m, f, d, g, (bandwidth, activation, delta))


# l0 → l1 → l2 → {l3, l4}, l3 → l4 (a residual: l4 adds l2 to l3's output): over the stages l0 l1 l2 | l3 l4
# the boundary carries l2's activation once and back the sum of l3's and l4's δ to it, once, of l2's size
RESIDUAL = ((0, 1), (1, 2), (2, 3), (2, 4), (3, 4))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [1, 3, 5])
@pytest.mark.parametrize("bandwidth", [1.0, 4.0])
def test_a_residual_over_links_times_as_the_reference(schedule, m, bandwidth):
    """The summed δ is sent when the stage's δ (LayerPipe) or backward ends, as a chain's δ is; its
    size is l2's output (8 bytes), not l3's or l4's δ (3 and 5): each send takes 8 / bandwidth."""
    check_against_reference(schedule, 5, 2, m, [3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [7, 9, 3, 2, 3],
                            (bandwidth, [4, 7, 8, 9, 3], [5, 3, 6, 3, 5]), edges=RESIDUAL)


def test_a_residual_sends_one_summed_delta():
    """One micro-batch, 1F1B, bandwidth 1, the costs above but l2's output 6 bytes: stage 1 F 0–8,
    l2's activation crosses 8–14; stage 2 F 14–20, B (δ 8, G 5) 20–33; the sum of l3's and l4's δ
    to l2's output crosses 33–39; stage 1 B (δ 13, G 19) 39–71. Before, l4's δ (5 bytes) crossed
    while the stage still ran and l3's (3) after it, 33–36: stage 1's B ran 36–68."""
    pieces = check_against_reference("1f1b", 5, 2, 1, [3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [7, 9, 3, 2, 3],
                                     (1.0, [4, 7, 6, 9, 3], [5, 3, 6, 3, 5]), edges=RESIDUAL)
    assert pieces == [[("F", 0, 0, 8), ("B", 0, 39, 71)], [("F", 0, 14, 20), ("B", 0, 20, 33)]]


def test_a_stage_receives_a_forked_activation_once():
    """Layer a feeds b and c, both on the next stage: a's activation crosses once per micro-batch
    (before, once for each reader); back comes the gradient of a's output once, b's δ and c's δ
    summed on their stage (before, each of them crossed), read by a's δ and G."""
    def layer(name, kind="fc", inputs=("input",)):
        return Layer(name=name, kind=kind, ifmap_h=1, ifmap_w=1, filter_h=1, filter_w=1, channels=8, filters=8,
                     inputs=inputs)

    network = Network("fork", (layer("p"), layer("q", inputs=("p",)), layer("a", inputs=("q",)),
                               layer("b", inputs=("a",)), layer("c", inputs=("a",)),
                               layer("d", "elementwise", ("b", "c"))))
    profile = build_profile(network, ArrayConfig(4, 4, "ws"), 2, "exact")
    plan = gpipe_partition(profile, 2, balance="layers")
    assert [stage.layers for stage in plan.stages] == [("p", "q", "a"), ("b", "c", "d")]
    size = int(profile.activation_bytes[2])
    assert size > 0 and list(profile.delta_bytes[3:5]) == [size, size]
    for schedule in SCHEDULES:
        crossed = _traffic(simulate_partition(plan, profile, 3, schedule, bandwidth=4.0))
        assert {key: sorted(sent) for key, sent in crossed.items()} == {
            **{("p1->p2", b): [("F:a", size)] for b in range(3)},
            **{("p2->p1", b): [("SEND_B:a", size)] for b in range(3)}}, schedule
