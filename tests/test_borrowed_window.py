"""LayerPipe's 1F1B window counts a lender's borrowed δ parts (``layerpipe`` and ``1f1b-window`` schedules), and so
do the strict 1F1B action orders (``1f1b``, ``1f1b-delta-before-g``).

A borrowed part (δ′, δ″ or a whole δ run for a layer on another processor) is part of its owner's backward
action for its micro-batch (004_2cd4e01df0d40184.txt, Fig. 5: nB_p is nB_pG, nB_pδ′ and nB_pδ″, δ″ computed on
processor p + 1). So the lender admits F(b) only after its parts of b − W ended too, W = S − s + 1; alternation
(B(b) after F(b + W − 1)) stays the order of the processor that runs an op. Under the action orders the F that
the order puts after B(b), F(b + W), waits for B(b)'s lent parts the same way, and nothing else does. A processor
of borrowed parts alone has no window of its own: its lenders' bound it. These tests failed before the fixes, when
admission (or the order) waited only for the ops a processor runs: the borrower fell behind, and the lent weight
versions it holds grew with the micro-batches."""

from __future__ import annotations

import json

import pytest

import archsim
from archsim.cli import main
from archsim.footprint import lent_versions
from archsim.partition import profile_from_costs
from archsim.partition.result import Partition, PlacedOp, Stage


def lender_and_borrower(part: float) -> tuple[Partition, object]:
    """Layers l0, l1 on p1 (F, G and l1's δ, 1 unit each); l0's whole δ (``part`` units) borrowed by p2."""
    profile = profile_from_costs(["l0", "l1"], [1, 1], [1, 1], [1, 1], weight_bytes=[1, 1])
    home = tuple(PlacedOp(layer, kind, 1.0) for layer, kind in (("l0", "F"), ("l0", "G"), ("l1", "F"), ("l1", "G"),
                                                                 ("l1", "D")))
    plan = Partition("layerpipe", (Stage(0, ("l0", "l1"), home),
                                   Stage(1, (), (PlacedOp("l0", "D", float(part), borrowed=True),))), 0, 0)
    return plan, profile


def test_the_lender_waits_for_its_borrowed_part_hand_count():
    """2 stages: p1 (W = 2) holds l0 and l1, p2 only l0's δ (6 units, p1's own work is 5 a micro-batch), 4
    micro-batches, ``layerpipe`` (δ before G before F, the older micro-batch first). By hand:

    p1: F(l0)0 0-1, F(l1)0 1-2, F(l0)1 2-3, F(l1)1 3-4 (W = 2 admits m0, m1); m0's backward after F(l1)1:
    δ(l1)0 4-5, G(l1)0 5-6, G(l0)0 6-7. p2: δ(l0)0 5-11 (reads δ(l1)0).
    F(l0)2 waits for all of m0's backward, δ(l0)0 on p2 too: 11-12, F(l1)2 12-13; m1: δ(l1)1 13-14,
    G 14-15, 15-16, p2 δ(l0)1 14-20 (it reads δ(l1)1, which p1's alternation held until F(l1)2, F(b + W − 1)).
    F(l0)3 waits for δ(l0)1: 20-21, F(l1)3 21-22;
    δ(l1)2 22-23, δ(l1)3 23-24 (m3 has no F(m3 + 1) to wait for), G(l1)2 24-25, G(l0)2 25-26, G(l1)3 26-27,
    G(l0)3 27-28. p2: δ(l0)2 23-29, δ(l0)3 29-35 → makespan 35.

    Before the fix p1 ran on: F(l0)2 at 7, F(l0)3 at 12, p1 done at 20, and p2's parts back to back 5-29."""
    plan, profile = lender_and_borrower(6)
    timeline = archsim.simulate(plan, profile, microbatches=4, schedule="layerpipe")
    spans = {slot.op: (slot.start, slot.end) for slot in timeline.slots}
    assert [spans[f"D:l0:{m}"] for m in range(4)] == [(5, 11), (14, 20), (23, 29), (29, 35)]
    assert [spans[f"F:l0:{m}"][0] for m in range(4)] == [0, 2, 11, 20]
    assert spans["G:l0:3"] == (27, 28) and timeline.makespan == 35


@pytest.mark.parametrize("schedule", ["layerpipe", "1f1b-window"])
def test_a_slower_borrower_holds_a_bounded_number_of_lent_versions(schedule):
    """The same plan: p2 holds m's lent version from the earlier of its part's start and p1's G(l0) of m until
    the part ends. The window lets p1 start F(b) only once the part of b − 2 ended, so at most 2 micro-batches
    have a started F and an unfinished part: at most 2 versions, at 8 micro-batches as at 16. And 2 are reached
    at the end: the last micro-batch waits for no later F, so p1 lets go of its version while the part before it
    still runs (the hand count above: m2's part 23-29, p1's G(l0)3 ends at 28). Before the fix: 3 at 8 and 4 at
    16 micro-batches, the borrower a part further behind every few micro-batches."""
    plan, profile = lender_and_borrower(6)
    held = [lent_versions(plan, archsim.simulate(plan, profile, microbatches=m, schedule=schedule)) for m in (8, 16)]
    assert held == [{"p2": 2}, {"p2": 2}]


def test_the_sample_network_s_borrower_stays_bounded(capsys):
    """layerpipe_sample on 4, paper mode, 32×32: conv1's δ′ alone on p2 (40,116,874 cycles a micro-batch, p1's
    own work 3,324,440). p1's window is 4, so at most 4 micro-batches have a started F(conv1) and an unfinished
    δ′: p2 holds at most 4 versions however many micro-batches run, the same count at 8 as at 16. Before the
    fix: 4 at 8 micro-batches and 7 at 16 (docs/concepts.md quoted 1, 2, 3, 4, 7 at 128×128)."""
    counts = []
    for m in (8, 16):
        argv = ["pipeline", "layerpipe_sample", "--processors", "4", "--mode", "paper", "--microbatches", str(m),
                "--memory", "--format", "json"]
        assert main(argv) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert rows[1]["ops"] == "D1:conv1*"
        counts.append(rows[1]["weight_versions"])
    assert counts[0] == counts[1] <= 4


def test_the_table_says_a_slower_borrower_paces_its_lenders(capsys):
    """Without --memory the table states no weight_versions for such a borrower (the count depends on the
    timing) and a note says why: under ``layerpipe`` its lender's window bounds it, under ``1f1b``'s action order
    the lender's forward after B(b) waits for B(b)'s lent part (the tests above). The note said "fall behind" for
    ``1f1b`` before that fix."""
    base = ["pipeline", "layerpipe_sample", "--processors", "4", "--mode", "paper", "--microbatches", "8"]
    for extra in ([], ["--schedule", "1f1b"]):
        assert main([*base, *extra, "--format", "json"]) == 0
        captured = capsys.readouterr()
        assert "weight_versions" not in json.loads(captured.out)["rows"][1]
        assert "(p2) pace their lenders" in captured.err and "action order" in captured.err


def test_the_lender_s_next_forward_waits_for_its_borrowed_part_hand_count():
    """2 stages: p1 holds l0 and l1, p2 only l0's δ (6 units; p1's own work is 5 a micro-batch), 4 micro-batches,
    ``1f1b``. p1's order (torch's Schedule1F1B, S − 1 − 0 = 1 warm-up forward): F0 F1 B0 F2 B1 F3 B2 B3, so B(b)
    is followed by F(b + 2); p2 runs B0 … B3. Inside B(b) the plan's listing puts G(l1) before δ(l1), and G(l0)
    reads δ(l1). By hand:

    p1: F(l0)0 0-1, F(l1)0 1-2, F(l0)1 2-3, F(l1)1 3-4; B0: G(l1)0 4-5, δ(l1)0 5-6, G(l0)0 6-7.
    p2: δ(l0)0 6-12 (reads δ(l1)0). F2 waits for B0's lent δ(l0)0: F(l0)2 12-13, F(l1)2 13-14;
    B1: G(l1)1 14-15, δ(l1)1 15-16, G(l0)1 16-17; p2 δ(l0)1 16-22. F3 waits for it: 22-23, 23-24;
    B2: 24-25, δ(l1)2 25-26, 26-27; p2 δ(l0)2 26-32. B3 (no F follows B2, nothing waits): G(l1)3 27-28,
    δ(l1)3 28-29, G(l0)3 29-30; p2 δ(l0)3 32-38 → makespan 38.

    Before the fix F2 ran at 7 and F3 at 12, p1 was done at 20 and p2 ran its parts back to back 6-30 (makespan 30),
    each a micro-batch further behind p1."""
    plan, profile = lender_and_borrower(6)
    timeline = archsim.simulate(plan, profile, microbatches=4, schedule="1f1b")
    spans = {slot.op: (slot.start, slot.end) for slot in timeline.slots}
    assert [spans[f"D:l0:{m}"] for m in range(4)] == [(6, 12), (16, 22), (26, 32), (32, 38)]
    assert [spans[f"F:l0:{m}"][0] for m in range(4)] == [0, 2, 12, 22]
    assert [spans[f"G:l0:{m}"] for m in range(4)] == [(6, 7), (16, 17), (26, 27), (29, 30)]
    assert timeline.makespan == 38


@pytest.mark.parametrize("schedule", ["1f1b", "1f1b-delta-before-g"])
def test_a_slower_borrower_stays_bounded_under_the_action_orders(schedule):
    """The same plan: p2 holds m's lent version from the earlier of its part's start and p1's G(l0) of m until the
    part ends. p1 starts F(b + 2) only once the part of b ended, so at most 2 micro-batches have a started F and an
    unfinished part: at most 2 versions, at 8 micro-batches as at 16. 2 are reached at the end (the hand count
    above: m3's G(l0) ends at 30, m2's part runs 26-32). Before the fix: 3 at 8 and 4 at 16 micro-batches."""
    plan, profile = lender_and_borrower(6)
    held = [lent_versions(plan, archsim.simulate(plan, profile, microbatches=m, schedule=schedule)) for m in (8, 16)]
    assert held == [{"p2": 2}, {"p2": 2}]


@pytest.mark.parametrize("schedule", ["1f1b", "1f1b-delta-before-g"])
def test_the_sample_network_s_borrower_stays_bounded_under_the_action_orders(capsys, schedule):
    """layerpipe_sample on 4, paper mode, 32×32: conv1's δ′ alone on p2 (40,116,874 cycles a micro-batch, p1's
    own work 3,324,440). p1 (stage 1 of 4) runs F(b + 4) after B(b), which now waits for B(b)'s δ′ on p2, so at
    most 4 micro-batches have a started F(conv1) and an unfinished δ′: p2 holds at most 4 versions, the same
    count at 8 as at 16. Before the fix: 4 at 8 and 7 at 16, growing."""
    counts = []
    for m in (8, 16):
        argv = ["pipeline", "layerpipe_sample", "--processors", "4", "--mode", "paper", "--schedule", schedule,
                "--microbatches", str(m), "--memory", "--format", "json"]
        assert main(argv) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert rows[1]["ops"] == "D1:conv1*"
        counts.append(rows[1]["weight_versions"])
    assert counts[0] == counts[1] <= 4
