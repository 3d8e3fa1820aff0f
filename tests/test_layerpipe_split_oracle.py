"""LayerPipe's δ′/δ″ schedule timed from scratch, against archsim's ``layerpipe`` (and ``1f1b``)
timelines of the same placement.

``tests/test_pipeline_oracle.py`` times whole-stage actions and so cannot time a δ″ borrowed by
another processor. This reference takes the placement (which piece runs where) as given and times
it from the rules alone, sharing no code with archsim's builders, orders or simulator:

* Placement (004_2cd4e01df0d40184.txt, Algorithm 1 lines 19–23 and §III-B): a split layer l keeps
  δ′ with its F and G and hands δ″ to the processor of layer l + 1.
* Data flow (Eqs. 3–5, a chain): F(l) needs F(l − 1); each δ piece of layer l and G(l) need the
  whole δ of layer l + 1 (all its pieces; the last layer's, its own F); G(l) needs F(l). δ′ and δ″
  of one layer are independent (§III-C: "these can be computed in parallel").
* Each processor runs one op at a time, never idle while an op is ready (list scheduling), ends at
  an instant applied before starts.
* ``layerpipe`` (§III-C, critical loop through δ): among ready ops δ pieces before G before F, then
  the oldest micro-batch, then backward the later layer first and forward the earlier (the order
  data flows); 1F1B's window (docs/concepts.md): stage s (0-based) of S admits F(b) of its first
  layer only after every backward op of its layers of b − (S − s), a piece it lends too, wherever it
  runs (Fig. 5: nB_p is nB_pG, nB_pδ′ and nB_pδ″, δ″ run on processor p + 1), and runs the backward
  ops it holds (borrowed pieces too) for b only after the F of its last layer for b + S − s − 1.
* ``1f1b``: each stage runs its actions in 1F1B's order — min(S − s, m) warm-up forwards, then B(i)
  and F(warm + i) in turn, then the remaining B — an action starting when the previous one has
  ended; F is the stage's forward ops of a micro-batch, B all its backward ops (δ, δ′, δ″, G). The
  order inside B, which 1F1B leaves open, is the stage's: the later layer first, a layer's G before
  its δ pieces.
* ``1f1b-delta-before-g``: ``1f1b``'s actions, with a layer's δ pieces before its G inside B (the
  later layer still first).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import archsim
from archsim.array.config import ArrayConfig
from archsim.partition import build_profile, profile_from_costs
from archsim.partition.result import Partition, PlacedOp, Stage
from archsim.planners import partition
from archsim.policies.pipeline import simulate_partition
from archsim.workload import load_network

Piece = tuple[int, str, float]  # (layer index, kind F/G/D/D1/D2, cost)
Op = tuple[int, str, int]  # (layer index, kind, micro-batch)
DELTA = ("D", "D1", "D2")
ORDERED = ("1f1b", "1f1b-delta-before-g")  # the reference's schedules run as 1F1B's action order


def makespan(stages: list[list[Piece]], m: int, schedule: str) -> float:
    """The reference timing of ``stages`` (each stage's pieces; a layer's home is its F's stage) over
    ``m`` micro-batches of a chain; ``schedule``: "layerpipe" or one of ``ORDERED``."""
    S = len(stages)
    layers = 1 + max(layer for stage in stages for layer, _, _ in stage)
    where = {(layer, kind): s for s, stage in enumerate(stages) for layer, kind, _ in stage}
    cost = {(layer, kind): c for stage in stages for layer, kind, c in stage}
    home = {layer: where[(layer, "F")] for layer in range(layers)}
    needs: dict[Op, list[Op]] = {}
    for b in range(m):
        for (layer, kind) in where:
            if kind == "F":
                needs[(layer, kind, b)] = [(layer - 1, "F", b)] if layer else []
            else:
                after = [(layer + 1, k, b) for k in DELTA if (layer + 1, k) in where] if layer + 1 < layers \
                    else [(layer, "F", b)]
                needs[(layer, kind, b)] = after + ([(layer, "F", b)] if kind == "G" else [])
    if schedule == "layerpipe":
        for s in range(S):
            window, mine = S - s, [layer for layer in range(layers) if home[layer] == s]
            lent = [(layer, kind) for (layer, kind) in where if home[layer] == s and kind != "F"]
            backward = [(layer, kind) for (layer, kind), on in where.items() if on == s and kind != "F"]
            if not mine:  # a processor of borrowed pieces alone: its lenders' windows hold it
                continue
            for b in range(m):
                if b - window >= 0:
                    needs[(mine[0], "F", b)] += [(layer, kind, b - window) for layer, kind in lent]
                if b + window - 1 < m:
                    for layer, kind in backward:
                        needs[(layer, kind, b)].append((mine[-1], "F", b + window - 1))

    def key(op: Op) -> tuple:
        layer, kind, b = op
        if schedule == "layerpipe":
            return (0 if kind in DELTA else 1 if kind == "G" else 2, b, layer if kind == "F" else -layer)
        if schedule == "1f1b":
            return (b, layer if kind == "F" else -layer, kind != "G")
        return (b, layer if kind == "F" else -layer, kind == "G")  # 1f1b-delta-before-g

    actions: list[list[tuple[str, int]]] = []  # ORDERED: each stage's action order
    for s in range(S):
        warm = min(S - s, m)
        steady = [x for i in range(m - warm) for x in (("B", i), ("F", warm + i))]
        actions.append([("F", i) for i in range(warm)] + steady + [("B", i) for i in range(m - warm, m)])
    position = [0] * S
    end: dict[Op, float] = {}
    busy: dict[int, tuple[Op, float]] = {}
    waiting = set(needs)
    now = 0.0
    while waiting or busy:
        for s in range(S):  # every end at `now` is applied (below) before anything starts
            if s in busy or schedule in ORDERED and position[s] == len(actions[s]):
                continue
            ready = [op for op in waiting if where[op[:2]] == s and all(n in end and end[n] <= now for n in needs[op])]
            if schedule in ORDERED:
                family, b = actions[s][position[s]]
                ready = [op for op in ready if op[2] == b and (op[1] == "F") == (family == "F")]
            if ready:
                op = min(ready, key=key)
                waiting.remove(op)
                busy[s] = (op, now + cost[op[:2]])
        assert busy, "the schedule deadlocks"
        now = min(t for _, t in busy.values())
        for s, (op, t) in list(busy.items()):
            if t == now:
                end[op] = t
                del busy[s]
                if schedule in ORDERED:  # the action is over once none of its ops remains
                    family, b = actions[s][position[s]]
                    if not any(where[x[:2]] == s and x[2] == b and (x[1] == "F") == (family == "F")
                               for x in list(waiting) + [y for y, _ in busy.values()]):
                        position[s] += 1
    return max(end.values())


def archsim_makespan(stages: list[list[Piece]], m: int, schedule: str) -> float:
    """archsim's makespan of the same placement: a Partition built from ``stages`` as is."""
    layers = 1 + max(layer for stage in stages for layer, _, _ in stage)
    home = {layer: s for s, stage in enumerate(stages) for layer, kind, _ in stage if kind == "F"}
    profile = profile_from_costs([f"l{k}" for k in range(layers)], [1] * layers, [1] * layers, [1] * layers)
    plan = Partition("layerpipe", tuple(
        Stage(s, tuple(f"l{k}" for k in range(layers) if home[k] == s),
              tuple(PlacedOp(f"l{k}", kind, float(c), borrowed=home[k] != s) for k, kind, c in stage))
        for s, stage in enumerate(stages)), 0, 0)
    return simulate_partition(plan, profile, m, schedule).timeline.makespan


def chain(split: list[int], per_stage: list[int], f, g, d, share) -> list[list[Piece]]:
    """A placement of a chain: ``per_stage`` layers on each stage in order; each layer in ``split``
    (the last of its stage, not on the last stage) keeps δ′ = d − share and lends δ″ = share to the
    stage of the next layer (Algorithm 1: δ″ stays on the processor the walk was filling)."""
    stages: list[list[Piece]] = [[] for _ in per_stage]
    layer = 0
    for s, count in enumerate(per_stage):
        for _ in range(count):
            stages[s] += [(layer, "F", f[layer]), (layer, "G", g[layer])]
            if layer in split:
                stages[s].append((layer, "D1", d[layer] - share[layer]))
                stages[s + 1].append((layer, "D2", share[layer]))
            else:
                stages[s].append((layer, "D", d[layer]))
            layer += 1
    return stages


# Hand-made placements (costs in time units): (per_stage, split layers, F, G, δ, δ″ shares, m).
CASES = [
    ([1, 1], [0], [1, 1], [1, 1], [4, 1], [2, 0], 2),
    ([1, 1], [0], [2, 1], [1, 3], [5, 2], [1, 0], 3),
    ([2, 1], [1], [1, 2, 1], [1, 1, 2], [2, 6, 1], [0, 3, 0], 2),
    ([1, 2], [0], [3, 1, 1], [2, 1, 1], [6, 2, 2], [3, 0, 0], 3),
    ([1, 1, 1], [0, 1], [1, 2, 1], [2, 2, 1], [9, 4, 2], [3, 1, 0], 2),  # the sample network's shape
    ([1, 1, 1], [0, 1], [1, 5, 2], [2, 5, 2], [40, 20, 7], [11, 10, 0], 3),
    ([1, 2, 1], [0, 2], [1, 1, 2, 1], [1, 2, 1, 2], [7, 3, 5, 1], [2, 0, 2, 0], 3),
    ([2, 1, 1], [1, 2], [2, 1, 1, 3], [1, 1, 2, 2], [3, 6, 4, 2], [0, 2, 1, 0], 2),
    ([1, 2, 1], [0, 2], [1, 1, 1, 1], [1, 1, 1, 1], [3, 2, 3, 2], [1, 0, 2, 0], 2),  # l1 waits for l2's δ″
]


@pytest.mark.parametrize("schedule", ["layerpipe", *ORDERED])
@pytest.mark.parametrize("per_stage, split, f, g, d, share, m", CASES)
def test_split_delta_schedules_match_a_from_scratch_timing(per_stage, split, f, g, d, share, m, schedule):
    stages = chain(split, per_stage, f, g, d, share)
    assert archsim_makespan(stages, m, schedule) == makespan(stages, m, schedule)


def test_the_reference_times_a_two_stage_split_by_hand():
    """The first case, worked by hand, so the reference is itself checked: l0 on p1 (F 1, G 1, δ′ 2),
    l1 on p2 (F 1, G 1, δ 1) and l0's δ″ (2) on p2; two micro-batches. layerpipe: p1 F0 0-1, F1 1-2
    (window 2); p2 F(1)0 1-2, δ(1)0 2-3, then δ″(0)0 and G(1)0 are ready, δ first: δ″ 3-5 while p1 runs
    δ′(0)0 3-5; p2 G(1)0 5-6, F(1)1 6-7, δ(1)1 7-8, δ″(0)1 8-10, G(1)1 10-11; p1 G(0)0 5-6, δ′(0)1 8-10,
    G(0)1 10-11 → 11. 1f1b: p2 runs F, B, F, B with B = G(1), δ(1), δ″(0): F 1-2, G 2-3, δ 3-4, δ″ 4-6,
    F 6-7, G 7-8, δ 8-9, δ″ 9-11; p1 B(0) = G(0) 4-5, δ′ 5-7, then B(1) G 9-10, δ′ 10-12 → 12."""
    stages = chain(*[CASES[0][i] for i in (1, 0, 2, 3, 4, 5)])
    assert makespan(stages, 2, "layerpipe") == 11 == archsim_makespan(stages, 2, "layerpipe")
    assert makespan(stages, 2, "1f1b") == 12 == archsim_makespan(stages, 2, "1f1b")


def test_delta_before_g_by_hand_op_by_op():
    """The first case under ``1f1b-delta-before-g``, worked by hand op by op (p2 runs F, B, F, B; p1 F, F, B, B;
    inside B the later layer first, its δ before its G): p1 F(0)0 0-1, F(0)1 1-2; p2 F(1)0 1-2, then B0:
    δ(1)0 2-3, G(1)0 3-4 (layer 1 before layer 0), δ″(0)0 4-6; p1 B0 once δ(1)0 ended: δ′(0)0 3-5, G(0)0 5-6;
    p2 F(1)1 6-7, δ(1)1 7-8, G(1)1 8-9, δ″(0)1 9-11; p1 δ′(0)1 8-10, G(0)1 10-11 → 11, where 1f1b's G-first
    order takes 12 (the test above): δ(1) leaves for p1 one G earlier."""
    hand = {"F:l0:0": (0, 1), "F:l0:1": (1, 2), "F:l1:0": (1, 2), "D:l1:0": (2, 3), "G:l1:0": (3, 4),
            "D2:l0:0": (4, 6), "D1:l0:0": (3, 5), "G:l0:0": (5, 6), "F:l1:1": (6, 7), "D:l1:1": (7, 8),
            "G:l1:1": (8, 9), "D2:l0:1": (9, 11), "D1:l0:1": (8, 10), "G:l0:1": (10, 11)}
    stages = chain(*[CASES[0][i] for i in (1, 0, 2, 3, 4, 5)])
    layers = 2
    profile = profile_from_costs([f"l{k}" for k in range(layers)], [1] * layers, [1] * layers, [1] * layers)
    plan = Partition("layerpipe", tuple(
        Stage(s, (f"l{s}",), tuple(PlacedOp(f"l{k}", kind, float(c), borrowed=k != s) for k, kind, c in stage))
        for s, stage in enumerate(stages)), 0, 0)
    timeline = archsim.simulate(plan, profile, microbatches=2, schedule="1f1b-delta-before-g")
    assert {slot.op: (slot.start, slot.end) for slot in timeline.slots} == hand
    assert makespan(stages, 2, "1f1b-delta-before-g") == 11


# A processor of borrowed pieces alone: l0 and l1 on p1, l0's whole δ on p2 (F0, G0, F1, G1, δ1, l0's δ, m).
# layerpipe: 23, 44 and 34; 21, 38 and 32 before p1's window waited for the δ it lends (p2 fell behind).
BORROWER_ONLY = [(1, 2, 1, 1, 1, 5, 3), (2, 2, 1, 1, 1, 5, 5), (1, 3, 1, 1, 2, 5, 4)]


@pytest.mark.parametrize("f0, g0, f1, g1, d1, part, m", BORROWER_ONLY)
def test_a_lender_s_window_waits_for_the_delta_it_lends(f0, g0, f1, g1, d1, part, m):
    stages = [[(0, "F", f0), (0, "G", g0), (1, "F", f1), (1, "G", g1), (1, "D", d1)], [(0, "D", part)]]
    assert archsim_makespan(stages, m, "layerpipe") == makespan(stages, m, "layerpipe")


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from([([1, 1], [0]), ([2, 1], [1]), ([1, 1, 1], [0, 1]), ([1, 2, 1], [0, 2]),
                              ([2, 1, 1], [0, 1, 2])]),
       costs=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(2, 12), st.integers(1, 11)),
                      min_size=4, max_size=4),
       m=st.integers(2, 3), schedule=st.sampled_from(["layerpipe", *ORDERED]))
def test_split_delta_schedules_match_on_drawn_costs(shape, costs, m, schedule):
    per_stage, split = shape
    lasts = [sum(per_stage[:s + 1]) - 1 for s in range(len(per_stage) - 1)]  # δ″ goes to layer l + 1's stage
    split = [k for k in split if k in lasts]
    f, g, d, cut = (list(x) for x in zip(*costs[:sum(per_stage)]))
    share = [min(c, x - 1) for c, x in zip(cut, d)]  # δ″ and δ′ both take time
    stages = chain(split, per_stage, f, g, d, share)
    assert archsim_makespan(stages, m, schedule) == makespan(stages, m, schedule)


# The sample network's LayerPipe partition on 3 processors (conv1's and conv2's δ split), 8 micro-batches:
# the reference's makespans in cycles (tests/test_pipeline_schedules.py pins archsim's to them).
# 1f1b-delta-before-g: docs/concepts.md's 294,657,321, found with this reference before archsim ran it.
SAMPLE_MAKESPANS = {"layerpipe": 288_957_747.0, "1f1b": 300_573_488.0, "1f1b-delta-before-g": 294_657_321.0}


def test_sample_network_delta_first_and_1f1b_times_agree_with_the_reference():
    """Both schedules' makespans on the sample's placement are the reference's, and those are the
    figures the direction test pins."""
    profile = build_profile(load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws"), 32, "paper")
    plan = partition(profile, 3, "layerpipe")
    index = {name: k for k, name in enumerate(profile.names)}
    stages = [[(index[op.layer], op.kind, op.cost) for op in stage.ops] for stage in plan.stages]
    assert [kind for stage in stages for _, kind, _ in stage].count("D2") == 2  # δ″ borrowed twice
    for schedule, expected in SAMPLE_MAKESPANS.items():
        assert makespan(stages, 8, schedule) == expected
        assert simulate_partition(plan, profile, 8, schedule).timeline.makespan == expected


def test_pipeline_command_runs_the_delta_before_g_variant(capsys):
    """``archsim pipeline --schedule`` runs a partition's schedule by name and states it: on the sample's
    LayerPipe plan the variant takes the reference's 294,657,321 cycles; without --schedule the method's own
    schedule runs and no ``schedule`` key is added (the output stays as it was); --schedule without
    --microbatches is refused in one line."""
    import json

    from archsim.cli import main

    run = ["pipeline", "layerpipe_sample", "--processors", "3", "--mode", "paper", "--microbatches", "8",
           "--format", "json"]
    for extra, schedule in ((["--schedule", "1f1b-delta-before-g"], "1f1b-delta-before-g"),
                            (["--schedule", "1f1b"], "1f1b"), ([], "layerpipe")):
        assert main(run + extra) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta["makespan"] == SAMPLE_MAKESPANS[schedule]
        assert meta.get("schedule") == (schedule if extra else None)
    assert main(run[:-4] + ["--schedule", "1f1b"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("archsim pipeline: error: ")
    assert err.endswith("--schedule orders the simulated micro-batches: give it with --microbatches\n")
