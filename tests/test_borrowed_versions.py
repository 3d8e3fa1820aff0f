"""How many weight versions a processor holds that runs only borrowed δ parts (LayerPipe's Algorithm 1
leaves one where a layer's δ′ is stranded on the next processor). One count in the table, ``--memory`` and
the DFG. Worked by hand from the schedule archsim simulates (``layerpipe``: the lender's F allocates a
micro-batch's weight version, its G frees it; a part of micro-batch m reads m's version):

The borrower holds version m from the earlier of its part's start and the lender's release (the end of
the layer's G of m on the lender) until its part ends. These tests failed before the fix: the table said
S − s + 1 (2 on VGG16's p11 of 12, 3 on layerpipe_sample's p2 of 4) and ``--memory`` said 1 whatever
the schedule held (max(1, 0): the borrower runs no forward, so it had no micro-batch "in flight")."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main

VGG12 = ["pipeline", "vgg16", "--only", "conv", "--mode", "paper", "--processors", "12"]
SAMPLE128 = ["pipeline", "layerpipe_sample", "--processors", "4", "--array", "128x128", "--mode", "paper"]


def rows(capsys, argv: list[str]) -> list[dict]:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["rows"]


@pytest.mark.parametrize("microbatches", [4, 16])
def test_a_borrower_that_keeps_pace_holds_one_version(capsys, microbatches):
    """VGG16 (conv, paper mode) on 12: conv4_3 alone on p10, its δ′ (D1) alone on p11, its δ″ on p12. p11
    costs 43,464,959 cycles per micro-batch, under the 147,011,891 of the slowest processor with layers, so
    δ′ of micro-batch m starts as soon as δ of conv5_1 reaches it, while p10 still runs (or waits for) G of
    conv4_3 for m: p10 stashes version m until then, and p11 needs it only while its δ′ runs, one micro-batch
    at a time: 1 version of conv4_3's weights. The processors before it count it as a stage of the 1F1B window
    (12 − s + 1 on p1..p10: 12 … 3), p12 holds 1."""
    plain = rows(capsys, VGG12)
    assert plain[10]["layers"] == "" and plain[10]["ops"] == "D1:conv4_3*"  # the plan this is about
    assert [r["weight_versions"] for r in plain] == [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 1, 1]
    simulated = rows(capsys, [*VGG12, "--microbatches", str(microbatches), "--memory"])
    assert [r["weight_versions"] for r in simulated] == [min(v, microbatches) for v in
                                                          [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 1, 1]]


def test_a_slower_borrower_paces_its_lender_and_holds_a_bounded_count(capsys):
    """layerpipe_sample, 128×128, paper mode, on 4: conv1 on p1 (1,834,940 cycles a micro-batch), conv1's δ′ alone
    on p2 (9,129,196), conv2 on p3 and conv3, conv4 on p4 (5,478,243 and 5,478,231). p1's window (4) waits for
    the δ′ it lends: p1 admits F(conv1) of m only after p2's δ′ of m − 4 ended, so p1 keeps p2's pace and p2
    holds at most 4 versions however many micro-batches run. The simulated run of 8 micro-batches, in cycles:
    p2's δ′ runs back to back from 6,096,727, one every 9,129,196: m3 ends at 42,613,511, m4 starts then and
    ends at 51,742,707; m5 ends at 60,871,903, m6 at 70,001,099, m7 at 79,130,295. p1's G of conv1 ends for m5
    at 37,755,237, m4 44,448,451, m6 46,884,433, m7 50,730,852. p2 holds m from the earlier of its δ′'s start
    and p1's release until its δ′ ends: at 50,730,852 m4, m5, m6 and m7 (m3's ended at 42,613,511): 4 versions,
    p1's window. The plain table has no micro-batch count to state that by (a note says so). Peak on p2: 4
    versions of conv1's 2,400 weight bytes = 9,600 bytes, no gradient buffer (G of conv1 stays on p1; 12,000
    before tests/test_lent_weights.py's fix). Before the window counted a lender's parts p2 fell behind: 4 at
    8 micro-batches too, but 7 at 16 and 14 at 32 (tests/test_borrowed_window.py checks 16)."""
    assert main([*SAMPLE128, "--format", "json"]) == 0
    captured = capsys.readouterr()
    plain = json.loads(captured.out)["rows"]
    assert plain[1]["ops"] == "D1:conv1*" and "weight_versions" not in plain[1]
    assert "(p2) pace their lenders" in captured.err and captured.err.startswith("archsim pipeline: note:")
    simulated = rows(capsys, [*SAMPLE128, "--microbatches", "8", "--memory"])
    assert [r["weight_versions"] for r in simulated] == [4, 4, 2, 1]
    assert (simulated[1]["weight_bytes"], simulated[1]["peak_memory_bytes"]) == (2400, 4 * 2400)
    one = rows(capsys, [*SAMPLE128, "--microbatches", "1", "--memory"])
    assert one[1]["weight_versions"] == 1  # one micro-batch: its δ′ starts (6,096,727) before p1's G ends


def test_the_dfg_prices_a_borrowed_delta_whose_result_returns_to_its_lender():
    """A plan written by hand (layerpipe_sample, paper mode, 32×32): conv1 conv2 on p1, conv2's whole δ
    borrowed by p2, conv3 conv4 on p3. δ of conv2 feeds conv1's G and δ, back on p1, so the backward path
    runs p3 → p2 → p1. conv1's weight loop crosses p1 → p3 forward, the turn on p3, p3 → p2, p2 → p1 and the
    W turn: 5 boundaries, so it needs ≥ 5 slots and holds 2(1 + k): k = 2 delayed gradients, 3 versions on
    p1 (conv2's line ends at its δ on p2, one hop earlier: 2). The borrower holds 1, p3 1. The 1F1B window
    counts p2 as a stage too (S − s + 1 = 3, 2 → 1 for the borrower, 1), and the simulated run holds the
    same. Failed before the fix: the DFG kept conv2's δ on p1, saw one boundary p3 → p1 and said 2 for p1."""
    from types import SimpleNamespace

    import archsim
    from archsim.commands.pipeline import stash_depths
    from archsim.dfg.of_plan import plan_dfg
    from archsim.footprint import partition_footprint
    from archsim.partition.result import Partition, PlacedOp, Stage
    from archsim.policies.pipeline import simulate_partition

    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32, mode="paper")
    index = {name: k for k, name in enumerate(profile.names)}
    columns = {"F": profile.forward, "G": profile.weight_grad, "D": profile.delta}

    def op(layer: str, kind: str, borrowed: bool = False) -> PlacedOp:
        return PlacedOp(layer, kind, float(columns[kind][index[layer]]), borrowed)

    plan = Partition("layerpipe", (
        Stage(0, ("conv1", "conv2"), (*(op("conv1", k) for k in "FGD"), op("conv2", "F"), op("conv2", "G"))),
        Stage(1, (), (op("conv2", "D", borrowed=True),)),
        Stage(2, ("conv3", "conv4"), tuple(op(name, k) for name in ("conv3", "conv4") for k in "FGD"))), 0, 0)
    result = plan_dfg(plan, profile)
    assert result.processor_of_stage == (1, 2, 3) and result.borrowed_only == (2,)
    assert result.stage_weight_versions_needed() == (3, 1, 1)
    assert [item.gradient_delays for item in result.pipelined.layers] == [2, 1, 0, 0]
    chain = SimpleNamespace(layers=[SimpleNamespace(name=name, inputs=("x",)) for name in profile.names])
    assert stash_depths(plan, chain, "layerpipe") == [3, 1, 1]
    run = simulate_partition(plan, profile, 8)
    assert [m.weight_versions for m in partition_footprint(plan, profile, run.timeline, run.schedule)] == [3, 1, 1]


def test_a_split_delta_s_parts_are_priced_apart_in_the_iteration_bound(capsys, tmp_path):
    """layerpipe_sample on 2 (exact, 32×32): conv2's δ split, δ′ (D1) on p1 and δ″ (D2) on p2, which run in
    parallel. conv1's weight loop U1 → F1 → F2 → F3 → F4 → loss → D4 → D3 → δ′ of conv2 → G1 → U1 (4 delays)
    passes through the costlier part: by hand from ``archsim cost`` and the plan's part costs,
    (1,204,505 + 5,022,299 + 1,813,103 + 3,626,207) + (3,626,207 + 1,813,100) + δ′ + 2,119,935 cycles.
    Failed before the fix: the DFG priced conv2's whole δ (5,022,296) on that loop, T∞ 6,061,913 per slot."""
    import archsim

    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32)
    plan = archsim.pipeline(profile, processors=2)
    parts = {op.kind: op.cost for stage in plan.stages for op in stage.ops if op.layer == "conv2" and op.kind in ("D1", "D2")}
    assert set(parts) == {"D1", "D2"} and parts["D1"] > parts["D2"]
    loop = (1_204_505 + 5_022_299 + 1_813_103 + 3_626_207) + (3_626_207 + 1_813_100) + parts["D1"] + 2_119_935
    path = tmp_path / "dfg.json"
    assert main(["pipeline", "layerpipe_sample", "--processors", "2", "--dfg", str(path)]) == 0
    capsys.readouterr()
    bound = json.loads(path.read_text(encoding="utf-8"))["iteration_bound"]
    assert "D1[conv2]" in bound["critical_loop"] and bound["loop_delays"] == 4
    assert bound["loop_cost"] == loop and bound["per_slot"] == pytest.approx(loop / 4)


def test_placing_a_node_apart_is_checked_in_one_line():
    """Only a layer's backward ops can run on another stage, and only a layer with a δ can be split into parts."""
    from archsim.dfg import Node, pipeline, training_dfg
    from archsim.dfg.graph import with_delta_parts
    from archsim.errors import InputError

    with pytest.raises(InputError, match=r"only a layer's backward ops .* not F\[a\]"):
        pipeline(["a", "b"], {"a": 1, "b": 2}, placed={Node("a", "F"): 2})
    with pytest.raises(InputError, match="stages must be numbered 1..S"):
        pipeline(["a", "b"], {"a": 1, "b": 2}, placed={Node("b", "D"): 4})
    with pytest.raises(InputError, match="layer 'a' has no δ"):
        with_delta_parts(training_dfg(["a", "b"], first_layer_delta=False), {"a": ["D1", "D2"]})
    split = with_delta_parts(training_dfg(["a", "b"]), {"b": ["D1", "D2"]})
    assert Node("b", "D") not in split.nodes
    assert {(e.src, e.dst) for e in split.edges if e.dst == Node("a", "G") and e.src.layer} == {(Node("b", "D1"), Node("a", "G")),
                                                                             (Node("b", "D2"), Node("a", "G"))}
