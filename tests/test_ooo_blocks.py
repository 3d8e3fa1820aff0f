"""bert_large_blocks: BERT-large as out-of-order backprop's paper pipelines it (§8.4, one transformer
block per layer of a chain), its costs the per-op bert_large's summed per block."""

import json

import numpy as np
import pytest

from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.partition import build_profile, profile_from_costs
from archsim.partition.profile import collapse_profile
from archsim.policies.ooo import ooo_schedule
from archsim.workload import load_network
from archsim.workload.shipped import block_groups


def _per_op_costs():
    return build_profile(load_network("bert_large"), ArrayConfig(32, 32), 32, "exact")


def test_the_block_network_is_a_chain_of_24_blocks():
    per_op = load_network("bert_large")
    groups = block_groups(per_op)
    assert [name for name, _ in groups] == [f"l{k}" for k in range(1, 25)]
    assert all(len(indices) == 12 for _, indices in groups)  # qkv … ln2, every op in exactly one block
    blocks = collapse_profile(_per_op_costs(), groups)
    assert blocks.edge_pairs == tuple((k - 1, k) for k in range(1, 24))


def test_each_block_costs_the_sum_of_its_ops():
    per_op = _per_op_costs()
    blocks = collapse_profile(per_op, block_groups(load_network("bert_large")))
    for k, name in enumerate(blocks.names):
        ops = [i for i, op in enumerate(per_op.names) if op.startswith(f"{name}_")]
        assert len(ops) == 12
        for kind in ("forward", "weight_grad", "delta"):
            assert getattr(blocks, kind)[k] == pytest.approx(sum(getattr(per_op, kind)[i] for i in ops))
    assert blocks.forward.sum() == pytest.approx(per_op.forward.sum())
    assert np.all(blocks.forward > 0) and np.all(blocks.weight_grad > 0)


def _makespan(policy, capsys, *extra):
    code = main(["schedule", "bert_large_blocks", "--policy", policy, "--processors", "4", "--microbatches", "4",
                 "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("extra, by_hand", [([], None), (["--unit-costs"], (104.0, 125.0))])
def test_fast_forwarding_beats_gpipe_on_bert_blocks(extra, by_hand, capsys):
    """The paper's BERT-24 fine-tuning on 4 GPUs: OOO-Pipe1 1.15× GPipe's throughput; archsim's makespan
    under ooo-pipe1 must not exceed GPipe's on the same chain of blocks.

    With unit costs, by hand: 6 blocks a GPU, so a micro-batch's forward, δ and G each take 6 units on a
    stage (δ 5 on the first, which has no δ into the input). Forwards first: the last stage's fourth ends
    at (4 + 3) · 6 = 42. GPipe: the last stage's backwards (12 each) end at 54, 66, 78, 90, each stage
    before it one backward later, so the first stage's (11 each) start at 78, 90, 102, 114: 114 + 11 = 125.
    OOO-Pipe1 fast-forwards δ: the first micro-batch's δ crosses three stages by 42 + 3 · 6 = 60, and the
    first stage then has 4 · (5 + 6) = 44 units of δ and G to run, its G filling the waits between δs:
    60 + 44 = 104, no later (before, only ooo < gpipe was asserted)."""
    ooo, gpipe = (_makespan(policy, capsys, *extra) for policy in ("ooo-pipe1", "gpipe"))
    rows = [doc["rows"][0] for doc in (ooo, gpipe)]
    assert rows[0]["makespan"] < rows[1]["makespan"]
    if by_hand is not None:
        assert (rows[0]["makespan"], rows[1]["makespan"]) == by_hand


def test_the_command_times_the_summed_costs(capsys):
    """The command's block costs are the per-op costs summed per block (summed here from the names), the
    first block's δ scheduled: it holds its inner ops' δ, which their G need (exact mode has none for
    the block's first op, l1_qkv)."""
    per_op = _per_op_costs()
    names = [f"l{k}" for k in range(1, 25)]
    summed = [[sum(getattr(per_op, kind)[i] for i, op in enumerate(per_op.names) if op.startswith(f"{n}_"))
               for n in names] for kind in ("forward", "weight_grad", "delta")]
    chain = profile_from_costs(names, summed[0], summed[1], summed[2])
    assert per_op.delta[0] == 0 and summed[2][0] > 0
    expected = ooo_schedule(chain, 4, 4, "ooo-pipe1", first_layer_delta=True)[1].makespan
    assert _makespan("ooo-pipe1", capsys)["rows"][0]["makespan"] == pytest.approx(expected)


def test_the_per_op_network_is_refused_pointing_to_the_blocks(capsys):
    code = main(["schedule", "bert_large", "--policy", "ooo-pipe1", "--processors", "4", "--unit-costs"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "bert_large_blocks" in err


def test_the_block_network_is_refused_by_other_policies(capsys):
    code = main(["schedule", "bert_large_blocks", "--policy", "1f1b", "--processors", "4"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "argument NETWORK" in err and "bert_large with 1f1b" in err
