"""The reference timing the pipeline oracle tests (tests/test_pipeline_oracle.py, test_pipeline_oracle_links.py)
check archsim against.

A partition's 1F1B, LayerPipe and GPipe timelines (:func:`archsim.policies.pipeline.simulate_partition`)
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

from archsim.partition import profile_from_costs
from archsim.partition.gpipe import gpipe_partition
from archsim.policies.pipeline import simulate_partition

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
