"""The pipeline builder's data flow is the profile's graph (``LayerProfile.producers``/``consumers``)
for every kind of profile: lowered layers, given costs with ``edges`` and PipeDream's graph.txt.
Before, a profile without lowered layers was simulated as a chain of its layers in name order."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.partition import profile_from_costs
from archsim.partition.gpipe import gpipe_partition
from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.result import Partition, Stage, placed_ops
from archsim.policies.pipeline import pipeline_problem, simulate_partition

DIAMOND = ((0, 1), (0, 2), (1, 3), (2, 3))  # a → b, a → c, b → d, c → d
F, D, G = [1, 2, 3, 1], [1, 2, 1, 2], [1, 1, 1, 1]


def diamond(**sizes):
    return profile_from_costs(list("abcd"), F, G, D, edges=DIAMOND, **sizes)


def split(profile, groups: list[str]) -> Partition:
    """Stages of the given layers (each a string of one-letter layer names), every op unsplit."""
    placed = placed_ops(profile)
    at = {name: k for k, name in enumerate(profile.names)}
    stages = tuple(Stage(s, tuple(group), tuple(op for name in group for op in placed[at[name]]))
                   for s, group in enumerate(groups))
    return Partition("gpipe", stages, 0, 0)


def spans(run) -> dict[str, tuple[float, float]]:
    return {slot.op.rsplit(":", 1)[0]: (slot.start, slot.end) for slot in run.timeline.slots}


def test_parallel_branches_run_in_parallel():
    """One layer per stage, one micro-batch, LayerPipe's order (δ before G), free links. By hand:
    F:a 0–1; F:b 1–3 on p2 while F:c 1–4 on p3; F:d 4–5 (after both); D:d 5–7, G:d 7–8;
    D:b 7–9, G:b 9–10 and D:c 7–8, G:c 8–9 in parallel; D:a 9–10 (after both), G:a 10–11.
    As a chain a → b → c → d it took 14 (c waited for b, a's δ for c's)."""
    run = simulate_partition(split(diamond(), ["a", "b", "c", "d"]), diamond(), 1, "layerpipe")
    got = spans(run)
    assert got["F:b"] == (1, 3) and got["F:c"] == (1, 4)
    assert got["F:d"] == (4, 5)
    assert got["D:b"] == (7, 9) and got["D:c"] == (7, 8)
    assert got["D:a"] == (9, 10) and got["G:a"] == (10, 11)
    assert run.timeline.makespan == 11


def test_two_branches_on_one_stage_send_both_activations_and_one_summed_delta():
    """a | b c | d over links of 1 byte per time unit; activations a, b, c = 1, 5, 1 bytes, δ of d, c,
    b = 2, 3, 1 bytes. By hand: F:a 0–1, sent 1–2; F:b 2–4, F:c 4–7 on p2; b's activation crosses
    4–9, c's 9–10 (d reads both); F:d 10–11, D:d 11–13, G:d 13–14; d's δ crosses 13–15; D:c 15–16,
    D:b 16–18 on p2, where the gradient of a's output is their sum (SEND_B at 18), sent once as a's
    output, 1 byte, 18–19; D:a 19–20, G:a 20–21. Before, c's δ crossed 16–19 and b's 19–20, each
    on its own (D:a 20–21, makespan 22); as a chain only c's activation and b's δ crossed (19)."""
    profile = diamond(activation_bytes=[1, 5, 1, 0], delta_bytes=[0, 1, 3, 2])
    run = simulate_partition(split(profile, ["a", "bc", "d"]), profile, 1, "layerpipe", bandwidth=1.0)
    sent = sorted((t.link, run.problem.op(t.src).tag("kind"), run.problem.op(t.src).tag("layer"), t.start, t.end)
                  for t in run.timeline.transfers)
    assert sent == [("p1->p2", "F", "a", 1, 2), ("p2->p1", "SEND_B", "a", 18, 19),
                    ("p2->p3", "F", "b", 4, 9), ("p2->p3", "F", "c", 9, 10), ("p3->p2", "D", "d", 13, 15)]
    got = spans(run)
    assert got["D:c"] == (15, 16) and got["D:b"] == (16, 18)
    assert got["F:d"] == (10, 11) and got["D:a"] == (19, 20) and got["G:a"] == (20, 21)
    assert run.timeline.makespan == 21


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "layerpipe", "gpipe-newest-first", "1f1b-window"])
def test_the_summed_delta_crosses_once_per_microbatch_for_every_schedule(schedule):
    """The same stages, three micro-batches: back over p2 → p1 goes one transfer per micro-batch, the
    sum of b's and c's δ, a's output size (7 bytes; their δ are 3 and 4); nothing else crosses back."""
    profile = diamond(activation_bytes=[7, 5, 1, 0], delta_bytes=[0, 3, 4, 2])
    run = simulate_partition(split(profile, ["a", "bc", "d"]), profile, 3, schedule, bandwidth=2.0)
    back = sorted((run.problem.op(t.src).tag("microbatch"), run.problem.op(t.src).tag("kind"),
                   run.problem.op(t.src).tag("layer"), t.bytes) for t in run.timeline.transfers if t.link == "p2->p1")
    assert back == [(b, "SEND_B", "a", 7) for b in range(3)]


def forward_edges(profile) -> set[tuple[str, str]]:
    """The (producer, consumer) layer pairs of the forward dependencies of one micro-batch over
    free links (no receive ops, no admission dependencies with m = 1)."""
    plan = gpipe_partition(profile, min(3, len(profile)))
    problem = pipeline_problem(plan, profile, 1, "layerpipe")
    kind = {op.id: (op.tag("kind"), op.tag("layer")) for op in problem.ops}
    return {(kind[d.src][1], kind[d.dst][1]) for d in problem.deps if kind[d.src][0] == kind[d.dst][0] == "F"}


PROFILES = Path(__file__).parent / "data" / "pipedream" / "profiles"


@pytest.mark.parametrize("make", [
    lambda: diamond(),
    lambda: load_graph_txt(PROFILES / "resnet18.txt"),
    lambda: load_graph_txt(PROFILES / "gnmt.txt"),
], ids=["costs-with-edges", "graph.txt-resnet18", "graph.txt-gnmt"])
def test_forward_dependencies_are_the_profiles_edges(make):
    profile = make()
    edges = {(profile.names[a], profile.names[b]) for a, b in profile.edge_pairs}
    chain = {(profile.names[k - 1], profile.names[k]) for k in range(1, len(profile))}
    assert edges != chain  # a real DAG: the old builder's chain would fail here
    assert forward_edges(profile) == edges
