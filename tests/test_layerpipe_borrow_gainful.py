"""LayerPipe's ``borrow="gainful"`` (``--borrow gainful``): Algorithm 1's plan with every δ move that does
not pay sent back home.

Algorithm 1 places a layer's δ on the current processor when it fits (lines 15–17) before it knows whether
the layer's fixed part fits (line 26); when the fixed part opens the next processor the δ stays behind,
borrowed, even where the slowest processor is elsewhere (small_cnn on 3 processors) or where the move makes
the plan slower (the 4-layer case below). ``paper`` (the default) keeps every move; ``gainful`` keeps only
those whose return would raise the iteration. References: hand counts and brute force over contiguous
layer splits, never the partitioner's own output.
"""

import itertools
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.partition.layerpipe import layerpipe_partition
from archsim.partition.profile import LayerProfile

ROOT = Path(__file__).resolve().parents[1]
SMALL_CNN = str(ROOT / "tests" / "data" / "onnx" / "small_cnn.onnx")
RESULTS = ROOT / "tests" / "data" / "sweep_reference" / "layerpipe_paper.results.csv.gz"


def chain(fixed: list[int], delta: list[int]) -> LayerProfile:
    """A chain of layers l0, l1, … with F = ``fixed``, G = 0 and the given δ cycles; 7 bytes per tensor."""
    n = len(fixed)
    names, seven = tuple(f"l{k}" for k in range(n)), np.full(n, 7.0)
    return LayerProfile(names, np.array(fixed, float), np.zeros(n), np.array(delta, float), seven, seven, seven,
                        seven, lowered=())


class OneCycleUnits:
    """Splits layer k's δ into δ_k units of one cycle, each piece one cycle dearer (a split is never free);
    a piece's bytes are its units. Only the channels axis, so no reduction partial sums."""

    def __init__(self, delta: list[int]) -> None:
        self.delta = delta

    def fitting_split(self, index, axis, budget):
        total, part = self.delta[index], min(self.delta[index] - 1, int(budget) - 1)
        if axis != "channels" or part < 1:
            return 0, 0, 0
        return part, total - part + 1, part + 1

    def split_bytes(self, index, axis, part):
        return part, part

    def split_d1_bytes(self, index, axis, part):
        return self.delta[index] - part, self.delta[index] - part


def loads(plan) -> list[float]:
    return [sum(op.cost for op in stage.ops) for stage in plan.stages]


def test_small_cnn_three_processors_no_pointless_move():
    # The user trial. Per layer (F + G + δ cycles): stem 9884, bn 3584, Relu 1024 (δ 512, fixed 512); c1 23473,
    # bn1 3584, Relu_1 1024; c2 23473, Add 2048, Relu_2 1024, pool 1024, fc 1227. The walk's last processor
    # takes c2 … fc: 28796, idle 26.5 of T_p = 28822.5; Relu_1's δ (512) does not fit and moves on with its
    # layer; the middle processor takes Relu_1 … c1 (28081, idle 741.5); Relu's δ (512) fits there (line 16),
    # its fixed part (512) does not (line 26): the δ stays borrowed, 28593 < 28796, the slowest processor
    # being the last one either way.
    profile = archsim.profile(SMALL_CNN)
    cost = dict(zip(profile.names, profile.total.tolist()))
    first, middle, last = profile.names[:3], profile.names[3:6], profile.names[6:]
    paper = archsim.pipeline(profile, processors=3)
    gainful = archsim.pipeline(profile, processors=3, borrow="gainful")
    assert sorted(paper.borrowed_ops) == [("/Relu", "D")]
    assert loads(paper) == [sum(cost[n] for n in first) - 512, sum(cost[n] for n in middle) + 512,
                            sum(cost[n] for n in last)] == [13980, 28593, 28796]
    assert [stage.layers for stage in gainful.stages] == [first, middle, last]
    assert gainful.borrowed_ops == frozenset()
    assert loads(gainful) == [sum(cost[n] for n in part) for part in (first, middle, last)] == [14492, 28081, 28796]
    assert gainful.max_stage_cost == paper.max_stage_cost == 28796
    assert gainful.additional_bytes == 0 and gainful.mandatory_bytes == paper.mandatory_bytes
    # the borrowed /Relu δ (exact mode, the default): its mask in and its result back to /bn, beside it on the
    # first processor, each 32 · 8 · 8 · 8 one-byte elements
    assert paper.additional_bytes == 2 * 32 * 8 * 8 * 8
    assert "/Relu" in gainful.notes[-1]
    # PipeDream's best split of whole layers is the same 28796 (its own plan, the same three groups)
    assert archsim.pipeline(profile, processors=3, method="pipedream").max_stage_cost == 28796


def test_a_move_that_slows_the_plan_goes_home():
    # F 3,3,3,4 and δ 4,4,1,3 (totals 7,7,4,7 = 25) on 2 processors, alpha 1.1. T_p = 12.5 and 13.75 need a
    # third processor; T_p = 15.125: l3 (7) and l2 (4) leave 4.125 idle, l1's δ (4) fits (line 16), its fixed
    # part (3) does not (line 26): processor 0 runs 15, the other l1's F and l0 (3 + 7 = 10). Sent home,
    # l1's δ gives 11 and 14: the best split of whole layers (7 | 18, 14 | 11, 18 | 7).
    profile = chain([3, 3, 3, 4], [4, 4, 1, 3])
    paper = layerpipe_partition(profile, 2, alpha=1.1)
    gainful = layerpipe_partition(profile, 2, alpha=1.1, borrow="gainful")
    assert sorted(paper.borrowed_ops) == [("l1", "D")] and loads(paper) == [10, 15]
    assert gainful.borrowed_ops == frozenset() and loads(gainful) == [14, 11]
    assert gainful.max_stage_cost == 14 < paper.max_stage_cost


def test_the_borrow_names_are_the_documented_ones_and_paper_is_the_default():
    """``--borrow paper|gainful`` as docs/cli.md spells them, the default first; called without ``borrow`` the
    partitioner keeps the paper's move on the chain above where the two differ (loads 10 and 15)."""
    from archsim.choices.partitions import BORROW_GAINFUL, BORROW_PAPER, LAYERPIPE_BORROW

    assert (BORROW_PAPER, BORROW_GAINFUL) == LAYERPIPE_BORROW == ("paper", "gainful")
    assert loads(layerpipe_partition(chain([3, 3, 3, 4], [4, 4, 1, 3]), 2, alpha=1.1)) == [10, 15]

def test_a_move_that_pays_is_kept():
    # F 1,1 and δ 0,2 on 2 processors: T_p = 2 walks l1's δ (2, not < 2) onto a processor of its own and the
    # fixed parts (1 + 1) onto the other: iteration 2. Home, l1's δ makes 4: the move pays, gainful keeps it.
    profile = chain([1, 1], [0, 2])
    gainful = layerpipe_partition(profile, 2, borrow="gainful")
    assert sorted(gainful.borrowed_ops) == [("l1", "D")] and sorted(loads(gainful)) == [2, 2]
    assert len(gainful.notes) == 1  # nothing sent home


def best_whole_layer_split(totals: list[int], processors: int) -> int:
    """The least slowest stage over contiguous splits of whole layers into at most ``processors`` stages."""
    best, n = sum(totals), len(totals)
    for stages in range(1, min(processors, n) + 1):
        for cuts in itertools.combinations(range(1, n), stages - 1):
            bounds = (0, *cuts, n)
            best = min(best, max(sum(totals[bounds[i]:bounds[i + 1]]) for i in range(stages)))
    return best


def test_brute_force_guarantees():
    # On random chains of 2–5 layers over 2–4 processors, whole δs and split ones (half the cases):
    # (1) the layers' processors and the mandatory bytes are the paper's, the additional bytes no more;
    # (2) the iteration is at most the paper's, and at most the paper's layer split with every δ at home
    #     (so at most the best whole-layer split, PipeDream's optimum, where the walk found that split);
    # (3) no move is pointless: sending any borrowed δ home whole raises the iteration.
    rng = random.Random(5)
    lowered = reached_beats = 0
    for _ in range(1000):
        n = rng.randint(2, 5)
        fixed, delta = [rng.randint(1, 6) for _ in range(n)], [rng.randint(0, 6) for _ in range(n)]
        processors = rng.randint(2, 4)
        options = {"alpha": 1.1, "coster": OneCycleUnits(delta) if rng.random() < 0.5 else None}
        profile = chain(fixed, delta)
        paper = layerpipe_partition(profile, processors, **options)
        gainful = layerpipe_partition(profile, processors, borrow="gainful", **options)
        assert [s.layers for s in gainful.stages if s.layers] == [s.layers for s in paper.stages if s.layers]
        assert gainful.mandatory_bytes == paper.mandatory_bytes and gainful.additional_bytes <= paper.additional_bytes
        assert gainful.max_stage_cost <= paper.max_stage_cost
        total = {f"l{k}": fixed[k] + delta[k] for k in range(n)}
        at_home = max(sum(total[name] for name in s.layers) for s in paper.stages)
        assert gainful.max_stage_cost <= at_home
        if at_home == best_whole_layer_split(list(total.values()), processors):  # PipeDream's optimum reached
            reached_beats += paper.max_stage_cost > at_home  # where the paper's plan is slower than it
        lowered += gainful.max_stage_cost < paper.max_stage_cost
        home = {name: s.index for s in gainful.stages for name in s.layers}
        for layer in {name for name, _ in gainful.borrowed_ops}:
            moved = [sum(op.cost for op in s.ops if op.layer != layer or op.kind in ("F", "G"))
                     + (delta[int(layer[1:])] if s.index == home[layer] else 0) for s in gainful.stages]
            assert max(moved) > gainful.max_stage_cost, (fixed, delta, processors, layer)
    assert lowered and reached_beats  # the cases where the variant differs do occur


def test_borrow_flag_and_keyword(capsys):
    assert main(["pipeline", SMALL_CNN, "--processors", "3", "--borrow", "gainful", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "borrow gainful" in out and "D:/Relu*" not in out
    assert main(["pipeline", SMALL_CNN, "--processors", "3", "--method", "pipedream", "--borrow", "gainful"]) == 2
    assert "--borrow tunes LayerPipe's Algorithm 1" in capsys.readouterr().err
    with pytest.raises(InputError, match="unknown borrow 'best'; choose paper or gainful"):
        layerpipe_partition(chain([1, 1], [0, 2]), 2, borrow="best")


def test_layerpipe_sample_two_processors_matches_pipedream():
    # docs/papers/layerpipe.md (tests/test_layerpipe_alpha_step.py works it by hand): Algorithm 1 fills the
    # last α step's slack on conv2–conv4's processor with a δ″ of conv1 (33,349 cycles), 53,044,116 against
    # PipeDream's conv1 | conv2–conv4. Sent home, conv1's δ leaves conv2–conv4 alone: their Table II totals.
    profile = archsim.profile("layerpipe_sample", array="32x32", dataflow="ws", batch=32, mode="paper")
    conv2_to_4 = 30_704_565 + 11_146_333 + 11_159_869
    paper = archsim.pipeline(profile, processors=2)
    gainful = archsim.pipeline(profile, processors=2, borrow="gainful")
    assert paper.max_stage_cost == conv2_to_4 + 33_349 and paper.additional_bytes > 0
    assert gainful.max_stage_cost == conv2_to_4 and gainful.additional_bytes == 0
    assert [stage.layers for stage in gainful.stages] == [("conv1",), ("conv2", "conv3", "conv4")]


@pytest.mark.long
def test_the_sweep_configurations_where_pipedream_won():
    # The 18 of the LayerPipe sweep's 440 configurations where Algorithm 1's plan is slower than PipeDream's
    # optimum (docs/papers/layerpipe.md): gainful is never slower than PipeDream's iteration as the reference
    # results.csv states it.
    frame = pd.read_csv(RESULTS)
    key = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors"]
    layerpipe = frame[frame.method == "layerpipe"].set_index(key)["iteration_cycles"]
    pipedream = frame[frame.method == "pipedream"].set_index(key)["iteration_cycles"].reindex(layerpipe.index)
    worse = layerpipe[layerpipe > pipedream]
    assert len(worse) == 18
    for (network, only, rows, cols, dataflow, batch, mode, processors), paper in worse.items():
        profile = archsim.profile(network, array=f"{rows}x{cols}", dataflow=dataflow, batch=int(batch), mode=mode,
                                  only=only)
        gainful = archsim.pipeline(profile, processors=int(processors), borrow="gainful").max_stage_cost
        reference = pipedream[(network, only, rows, cols, dataflow, batch, mode, processors)]
        assert gainful <= reference < paper, (network, rows, cols, batch, processors)
