"""A partition's 1F1B, LayerPipe and GPipe timelines (:func:`archsim.policies.pipeline.simulate_partition`)
against a reference that shares no code with archsim's builders, orders or simulator: the
papers' closed forms on uniform stages, and a from-scratch timing of each schedule's per-stage
action order on unequal stages (a chain of layers, contiguous stages, free links; and a branching
graph whose stages still form a chain).

The orders, from their definitions (stage r of S, 0-based; m micro-batches):

* 1F1B (PipeDream-Flush, Narayanan et al. 2021; Megatron-LM's and torch's ``Schedule1F1B``):
  min(S − r, m) warm-up forwards, then backward B(i) and forward F(S − r + i) in turn, then the
  remaining backwards. B is the stage's whole backward (δ and G of all its layers): the gradient
  goes upstream when B ends. So stage r (1-based s = r + 1) holds at most S − s + 1 micro-batches.
  ``1f1b-window`` (PipeDream's admission rule as a list schedule) must run the same order.
* LayerPipe: 1F1B's order with each backward split δ first, then G (the critical loop runs δ,
  §III-C): the gradient goes upstream when the stage's δ ends, before its G.
* GPipe (torch's ``ScheduleGPipe``): every forward, then every backward oldest first.

``timed`` starts each action when its stage's previous action and its inputs have ended: a forward
after the previous stage's forward of its micro-batch, a backward (B, or δ) after its own forward and
the next stage's backward (B, or δ) of its micro-batch. With links of finite bandwidth an input
arrives later: each stage boundary carries, per micro-batch, one activation forward and one gradient
back (the one δ both the receiving layer's δ and G read: the next stage's first layer's, or, where
two or more layers there read the stage's last layer, the sum of their δ, that layer's output size),
one at a time per direction. Its makespan, every action's start and end,
each stage's action order and peak micro-batches in flight must be archsim's.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array.config import ArrayConfig
from archsim.partition import build_profile, profile_from_costs
from archsim.partition.gpipe import gpipe_partition
from archsim.policies.pipeline import simulate_partition
from archsim.workload.layer import Layer, Network

Action = tuple[str, int]  # (kind, micro-batch): F, B (whole backward), D (δ), G
Links = tuple[float, list[int], list[int]]  # bandwidth (bytes per time unit), each layer's activation and δ bytes
Piece = tuple[str, int, float, float]  # (kind, micro-batch, start, end): an action, or the part of it run at once
SCHEDULES = ("1f1b", "1f1b-window", "layerpipe", "gpipe")


def order(schedule: str, stages: int, stage: int, m: int) -> tuple[list[Action], list[int]]:
    """Stage ``stage``'s (0-based) actions in the order its schedule fixes, and the micro-batches of
    LayerPipe's cool-down, whose δ and G ops the stage runs as they come (δ first, below)."""
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)], []
    warm = min(stages - stage, m)
    actions = [("F", i) for i in range(warm)]
    for i in range(m - warm):  # steady state: backward i, then the forward it admits
        actions += ([("D", i), ("G", i)] if schedule == "layerpipe" else [("B", i)]) + [("F", warm + i)]
    if schedule == "layerpipe":
        return actions, list(range(m - warm, m))
    return actions + [("B", i) for i in range(m - warm, m)], []


def timed(schedule: str, f: list[float], d: list[float], g: list[list[float]], m: int,
          late: list[bool] | None = None, send: tuple[list[float], list[float]] | None = None) -> list[list[Piece]]:
    """Each stage's pieces in time order. f, d: each stage's forward and δ time (its layers' sums);
    g: each stage's weight-gradient ops' times, last layer first (the order it runs them). ``send``:
    per boundary s (between stages s and s + 1) the time to send one activation forward and one
    gradient back; a stage sends its micro-batches in order, each direction's link one at a time
    (None: free links).

    LayerPipe's cool-down (after the stage's last forward nothing orders its backwards): whenever
    the stage is free it runs the oldest micro-batch's δ if that δ's input has arrived, else its
    oldest pending G op, else it waits for the δ — δ is on the critical loop, G is not. ``late[s]``:
    stage s's last δ op (its first layer's) takes no time, so by the simulator's rule for such ops
    its gradient is released just after the ops ending at that instant, and a stage freed at that
    instant has already started its pending G."""
    stages = len(f)
    plans = [order(schedule, stages, s, m) for s in range(stages)]
    gradient = "D" if schedule == "layerpipe" else "B"  # the action that sends δ upstream
    cost = {"F": f, "D": d, "G": [sum(x) for x in g], "B": [x + sum(y) for x, y in zip(d, g)]}
    ends: dict[tuple[int, str, int], float] = {}
    pieces: list[list[Piece]] = [[] for _ in range(stages)]
    position, clock = [0] * stages, [0.0] * stages
    cool = [list(plan[1]) for plan in plans]
    pending: list[list[tuple[int, float]]] = [[] for _ in range(stages)]  # (micro-batch, G op time)
    forward_time, backward_time = send or ([0.0] * stages, [0.0] * stages)
    arrives: dict[tuple[int, str, int], float] = {}  # (stage, kind, i) → when its output reaches the other stage
    link_free: dict[tuple[int, int], float] = {}  # (sender, receiver) → when its link is free

    def run(s: int, kind: str, i: int, start: float, length: float) -> None:
        clock[s] = ends[(s, kind, i)] = start + length
        pieces[s].append((kind, i, start, start + length))
        to = s + 1 if kind == "F" else s - 1
        if kind in ("F", gradient) and 0 <= to < stages:
            begin = max(clock[s], link_free.get((s, to), 0.0))
            length = forward_time[s] if kind == "F" else backward_time[to]
            arrives[(s, kind, i)] = link_free[(s, to)] = begin + length

    def at(need: tuple[int, str, int]) -> float:
        """When ``need``'s output is there for the stage that needs it."""
        return arrives.get(need, ends[need])

    progress = True
    while progress:
        progress = False
        for s in range(stages):
            while True:
                if position[s] < len(plans[s][0]):
                    kind, i = plans[s][0][position[s]]
                    if kind == "F":
                        needs = [(s - 1, "F", i)] if s > 0 else []
                    else:
                        needs = [(s, "F", i)] + ([(s + 1, gradient, i)] if s + 1 < stages else [])
                    if any(need not in ends for need in needs):
                        break
                    run(s, kind, i, max([clock[s]] + [at(need) for need in needs]), cost[kind][s])
                    position[s] += 1
                elif cool[s]:  # LayerPipe's cool-down
                    i = cool[s][0]
                    need = (s + 1, "D", i) if s + 1 < stages else (s, "F", i)
                    if need not in ends:
                        break
                    sent = need in arrives and at(need) > ends[need]  # a transfer's end, not an op's
                    arrived = at(need) < clock[s] or at(need) == clock[s] and (sent or not (late and late[need[0]]))
                    if arrived or not pending[s]:
                        run(s, "D", i, max(clock[s], at(need)), d[s])
                        pending[s] += [(i, x) for x in g[s]]
                        cool[s].pop(0)
                    else:
                        i, length = pending[s].pop(0)
                        run(s, "G", i, clock[s], length)
                elif pending[s]:
                    i, length = pending[s].pop(0)
                    run(s, "G", i, clock[s], length)
                else:
                    break
                progress = True
    assert position == [len(plan[0]) for plan in plans] and not any(cool), "the order deadlocks"
    return [merged(x) for x in pieces]


def merged(pieces: list[Piece]) -> list[Piece]:
    """Consecutive pieces of one action, back to back, as one piece; pieces that take no time
    (a stage's δ that costs nothing) left out, as a stage's first layer's δ is (nothing needs it)."""
    out: list[Piece] = []
    for kind, i, start, end in pieces:
        if start == end:
            continue
        if out and out[-1][:2] == (kind, i) and out[-1][3] == start:
            out[-1] = (kind, i, out[-1][2], end)
        else:
            out.append((kind, i, start, end))
    return out


def archsim_pieces(schedule: str, layers: int, stages: int, m: int, f, d, g, memory: bool = False,
                   links: Links | None = None, edges=None):
    """archsim's timeline as the reference's pieces: each processor's slots in time order, op kinds
    named as the reference names them (δ and G fused into B but for LayerPipe), consecutive slots of
    one action merged (a receive op takes no time: left out). ``memory``: one stash byte per
    micro-batch and layer, no weights. ``links``: the links' bandwidth and each layer's activation
    and δ bytes (None: free links). ``edges``: the layers' graph (None: a chain)."""
    ones = [1] * layers if memory else None
    bandwidth, activation, delta = links or (None, None, ones)
    profile = profile_from_costs([f"l{k}" for k in range(layers)], f, g, d, activation_bytes=activation,
                                 delta_bytes=delta, weight_bytes=[0] * layers, edges=edges)
    plan = gpipe_partition(profile, stages, balance="layers")  # contiguous, earlier stages take the remainder
    run = simulate_partition(plan, profile, m, schedule, bandwidth=bandwidth)
    pieces: list[list[Piece]] = [[] for _ in range(stages)]
    for slot in sorted(run.timeline.slots, key=lambda x: (x.processor, x.start, x.end)):
        kind, _, b = slot.op.split(":")
        kind = kind if kind == "F" or schedule == "layerpipe" else "B"
        pieces[int(slot.processor.removeprefix("p")) - 1].append((kind, int(b), slot.start, slot.end))
    return [merged(x) for x in pieces], run, plan


def in_flight(pieces: list[list[Piece]]) -> list[int]:
    """Each stage's peak micro-batches held: from its forward's start to its last backward's end."""
    peaks = []
    for stage in pieces:
        held: dict[int, tuple[float, float]] = {}
        for _, i, start, end in stage:
            first, last = held.get(i, (start, end))
            held[i] = (min(first, start), max(last, end))
        events = sorted([(end, -1) for _, end in held.values()] + [(start, 1) for start, _ in held.values()])
        count = peak = 0
        for _, step in events:  # at one instant an end comes before a start
            count += step
            peak = max(peak, count)
        peaks.append(peak)
    return peaks


def check_against_reference(schedule, layers, stages, m, f, d, g, links: Links | None = None,
                            edges=None) -> list[list[Piece]]:
    got, run, plan = archsim_pieces(schedule, layers, stages, m, f, d, g, links=links, edges=edges)
    at = {f"l{k}": k for k in range(layers)}
    sums = [[float(sum(costs[at[name]] for name in stage.layers)) for stage in plan.stages] for costs in (f, d)]
    g_ops = [[float(g[at[name]]) for name in reversed(stage.layers)] for stage in plan.stages]
    send = None
    if links is not None:  # a stage's last layer sends its activation, the next stage's first layer its δ
        bandwidth, activation, delta = links
        pairs = edges if edges is not None else [(k - 1, k) for k in range(1, layers)]

        def back(before, after) -> float:
            """The gradient of ``before``'s last layer's output, sent from ``after``: read by one
            layer there, that layer's δ; by two or more, the sum of theirs, the output's size."""
            last = at[before.layers[-1]]
            readers = [b for a, b in pairs if a == last]
            return activation[last] if len(readers) > 1 else delta[at[after.layers[0]]]

        send = ([activation[at[stage.layers[-1]]] / bandwidth for stage in plan.stages],
                [back(x, y) / bandwidth for x, y in zip(plan.stages, plan.stages[1:])])
    expected = timed(schedule, *sums, g_ops, m, [d[at[stage.layers[0]]] == 0 for stage in plan.stages], send)
    for s, (mine, theirs) in enumerate(zip(got, expected)):
        assert [x[:2] for x in mine] == [x[:2] for x in theirs], f"stage {s + 1}'s order"
        assert [t for x in mine for t in x[2:]] == pytest.approx([t for x in theirs for t in x[2:]], abs=1e-9), \
            f"stage {s + 1}'s times"
    if schedule != "layerpipe":  # the fixed orders, each action in one piece
        assert [[x[:2] for x in stage] for stage in got] == [order(schedule, stages, s, m)[0] for s in range(stages)]
    assert run.timeline.makespan == pytest.approx(max(x[3] for stage in expected for x in stage))
    assert in_flight(got) == in_flight(expected)
    return expected


# --- closed forms on uniform stages ------------------------------------------------------------

SHAPES = [(1, 1), (2, 1), (2, 4), (3, 2), (3, 6), (4, 3), (4, 8)]  # (S, m), m below and above S


@pytest.mark.parametrize("f, d, g", [(1.0, 1.0, 1.0), (2.0, 3.0, 1.0)])
@pytest.mark.parametrize("stages, m", SHAPES)
@pytest.mark.parametrize("schedule", ["1f1b", "1f1b-window", "gpipe"])
def test_uniform_stages_take_m_plus_s_minus_1_steps(schedule, stages, m, f, d, g):
    """Makespan (m + S − 1)(F + B) for 1F1B and GPipe alike (Narayanan et al. 2021, Huang et al. 2019)."""
    _, run, _ = archsim_pieces(schedule, stages, stages, m, [f] * stages, [d] * stages, [g] * stages)
    assert run.timeline.makespan == pytest.approx((m + stages - 1) * (f + d + g))


@pytest.mark.parametrize("stages, m", SHAPES)
@pytest.mark.parametrize("schedule, peak", [("1f1b", lambda S, m, s: min(S - s + 1, m)),
                                            ("1f1b-window", lambda S, m, s: min(S - s + 1, m)),
                                            ("layerpipe", lambda S, m, s: min(S - s + 1, m)),
                                            ("gpipe", lambda S, m, s: m)])
def test_peak_microbatches_in_flight_are_the_papers(schedule, peak, stages, m):
    """1F1B holds S − s + 1 micro-batches on 1-based stage s (S on the first), GPipe m on every
    stage: counted from the timeline's slots and from the stash memory (one byte per micro-batch,
    allocated by F, freed by G), both reaching the limit."""
    ones = [1.0] * stages
    pieces, run, _ = archsim_pieces(schedule, stages, stages, m, ones, [2.0] * stages, ones, memory=True)
    expected = [peak(stages, m, s) for s in range(1, stages + 1)]
    assert in_flight(pieces) == expected
    memory = run.timeline.peak_memory()
    assert [memory[f"p{s}"] for s in range(1, stages + 1)] == expected


# --- the reference on unequal stages -------------------------------------------------------------


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("layers, stages, m", [(3, 3, 3), (3, 3, 5), (5, 2, 4), (6, 4, 7), (4, 4, 2), (7, 3, 6)])
def test_unequal_stages_time_as_the_reference(schedule, layers, stages, m):
    f, d, g = [3, 1, 4, 1, 5, 9, 2][:layers], [2, 6, 5, 3, 5, 8, 9][:layers], [7, 9, 3, 2, 3, 8, 4][:layers]
    check_against_reference(schedule, layers, stages, m, f, d, g)


def test_hand_timed_three_stages():
    """The reference itself on a hand-timed case: stages F = 1, 2, 3, δ = 2, 1, 1, G = 1, 1, 2, m = 3.
    1F1B: stage 3 runs F0 3–6, B0 6–9, F1 9–12, B1 12–15, F2 15–18, B2 18–21; stage 2 B0 9–11,
    F2 11–13, B1 15–17, B2 21–23; stage 1 B0 11–14, B1 17–20, B2 23–26. LayerPipe sends δ before G:
    stage 3 δ0 6–7, stage 2 δ0 7–8, stage 1 δ0 8–10, ... stage 1 ends G2 at 23."""
    one = check_against_reference("1f1b", 3, 3, 3, [1, 2, 3], [2, 1, 1], [1, 1, 2])
    assert one[2] == [("F", 0, 3, 6), ("B", 0, 6, 9), ("F", 1, 9, 12), ("B", 1, 12, 15), ("F", 2, 15, 18),
                      ("B", 2, 18, 21)]
    assert [x for x in one[1] if x[0] == "B" or x[1] == 2] == [("B", 0, 9, 11), ("F", 2, 11, 13), ("B", 1, 15, 17),
                                                               ("B", 2, 21, 23)]
    assert [x for x in one[0] if x[0] == "B"] == [("B", 0, 11, 14), ("B", 1, 17, 20), ("B", 2, 23, 26)]
    layerpipe = check_against_reference("layerpipe", 3, 3, 3, [1, 2, 3], [2, 1, 1], [1, 1, 2])
    assert [x[1:] for stage in layerpipe for x in stage if x[:2] == ("D", 0)] == [(0, 8, 10), (0, 7, 8), (0, 6, 7)]
    assert layerpipe[0][-1] == ("G", 2, 22, 23)


def test_layerpipe_cool_down_runs_the_next_delta_between_weight_gradients():
    """Two stages of three and two layers, m = 4: stage 1's last window is free of admission, and the
    δ of micro-batch 3 arrives (stage 2 ends it at 116) while stage 1 runs G of micro-batch 2's last
    layer (115–118): it runs next, before the other two G ops of micro-batch 2."""
    layerpipe = check_against_reference("layerpipe", 5, 2, 4, [3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [7, 9, 3, 2, 3])
    assert [x[:2] for x in layerpipe[0][-4:]] == [("G", 2), ("D", 3), ("G", 2), ("G", 3)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("layers, stages, delta", [(3, 3, [1, 0, 1]), (4, 2, [2, 0, 3, 1]), (4, 2, [2, 3, 0, 1]),
                                                   (4, 4, [1, 0, 0, 2]), (5, 3, [1, 2, 0, 0, 4])])
def test_a_layer_whose_delta_costs_nothing_still_passes_the_gradient_on(schedule, layers, stages, delta):
    """A layer's δ may take no time (a reshape, a dropout: PipeDream's graph.txt profiles have many), but
    the gradient still flows through it: the stages before it wait for the backward of those after."""
    check_against_reference(schedule, layers, stages, 3, [2, 1, 3, 1, 2][:layers], delta, [1, 2, 1, 3, 1][:layers])


# x → a → {b, c} → d: over the stages x a | b c | d the stages still form a chain (b and c read a, the
# first stage's last layer; d reads both; a's δ waits for both of theirs, the second stage's whole δ),
# so the stage-level reference times it; the layers' graph decides only which ops wait for which.
BRANCHED = ((0, 1), (1, 2), (1, 3), (2, 4), (3, 4))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [1, 3, 5])
@pytest.mark.parametrize("f, d, g", [([3, 1, 4, 1, 5], [2, 6, 5, 3, 5], [7, 9, 3, 2, 3]),
                                     ([1, 2, 9, 1, 2], [1, 1, 2, 8, 1], [2, 1, 1, 3, 2])])
def test_a_branching_graph_times_as_the_reference(schedule, m, f, d, g):
    check_against_reference(schedule, 5, 3, m, f, d, g, edges=BRANCHED)


@settings(max_examples=60)
@given(costs=st.lists(st.tuples(st.integers(1, 9), st.integers(0, 9), st.integers(1, 9)), min_size=1, max_size=6),
       stages=st.integers(1, 4), m=st.integers(1, 7), schedule=st.sampled_from(SCHEDULES))
def test_any_chain_times_as_the_reference(costs, stages, m, schedule):
    f, d, g = (list(x) for x in zip(*costs))
    check_against_reference(schedule, len(costs), min(stages, len(costs)), m, f, d, g)


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
