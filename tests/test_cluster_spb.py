"""SPB job model (SPB paper §2, Tables 1–2): suffix split, task time and memory, profile CSV, catalog."""

import numpy as np
import pytest

from archsim.array.config import ArrayConfig
from archsim.array.costing import cost_network
from archsim.cluster.catalog import TABLE1, TABLE2, lookup, model_profile_from_costs, paper_catalog, paper_profile
from archsim.cluster.profile_csv import load_profile_csv, parse_profile_csv, write_profile_csv
from archsim.cluster.spb import (
    JobLayerCosts,
    backprop_sweep,
    chain_producers,
    layer_costs_from_network,
    spb_tasks,
    suffix_lengths,
    task_cost,
)
from archsim.errors import InputError
from archsim.workload import load_network


def test_suffix_lengths_follow_j_L_over_k():
    # §2 / Fig. 1: worker j of k back-propagates j·L/k layers from the output, rounded up.
    assert suffix_lengths(12, 3) == (4, 8, 12)
    assert suffix_lengths(10, 3) == (4, 7, 10)  # ⌈3.33⌉, ⌈6.67⌉, 10
    assert suffix_lengths(5, 1) == (5,)
    assert suffix_lengths(3, 8) == (1, 1, 2, 2, 2, 3, 3, 3)  # ⌈j·3/8⌉, never 0 layers
    assert suffix_lengths(10, 2, shares=(1.0, 0.25)) == (10, 3)


@pytest.mark.parametrize("shares", [(0.5, 0.5), (0.0, 1.0), (1.0,), (1.2, 1.0)])
def test_bad_shares_are_input_errors(shares):
    with pytest.raises(InputError):
        suffix_lengths(10, 2, shares=shares)


def _chain():
    # 4-layer chain: F = 1,2,3,4 s; backward (G+D) = 10,20,30,40 s of which D = 1,2,3,4 s;
    # activations kept for backward 100,200,300,400 B; parameters 5,6,7,8 B.
    return JobLayerCosts(names=("a", "b", "c", "d"), forward_s=[1, 2, 3, 4], backward_s=[10, 20, 30, 40],
                      input_grad_s=[1, 2, 3, 4], activation_bytes=[100, 200, 300, 400],
                      parameter_bytes=[5, 6, 7, 8], producers=chain_producers(4))


def test_task_cost_by_hand():
    costs = _chain()
    # Suffix of 2 layers (c, d): forward 1+2+3+4 = 10; backward 30+40 minus c's D (3, nothing below c
    # is back-propagated) = 67. Memory: params 26 + max(prefix working set max(a+b, b+c) = 500,
    # stash 300+400 + grads 7+8 + δ buffer max(300,400) = 1115) = 1141.
    task = task_cost(costs, 2)
    assert (task.forward_s, task.backward_s, task.memory_bytes) == (10, 67, 1141)
    # Whole network: backward 100 − a's D (1) = 99; memory 26 + 1000 + 26 + 400 = 1452.
    full = task_cost(costs, 4)
    assert (full.backward_s, full.memory_bytes, full.time_s) == (99, 1452, 109)
    tasks = spb_tasks(costs, 2)
    assert [t.layers for t in tasks] == [2, 4] and tasks[1] == full


def test_branching_boundary_keeps_delta_when_a_suffix_layer_feeds_it():
    # d reads a and c: with the suffix {c, d}, d's D is needed (c is back-propagated), c's is not.
    costs = JobLayerCosts(names=("a", "b", "c", "d"), forward_s=[0] * 4, backward_s=[10, 20, 30, 40],
                       input_grad_s=[1, 2, 3, 4], activation_bytes=[1] * 4, parameter_bytes=[0] * 4,
                       producers=((), (0,), (1,), (0, 2)))
    assert task_cost(costs, 2).backward_s == 70 - 3


def test_array_model_costs_match_cost_network():
    net = load_network("layerpipe_sample")
    array = ArrayConfig(rows=32, cols=32, clock_hz=2.0e9)
    costs = layer_costs_from_network(net, array, 8)
    table = cost_network(net, array, 8, "exact")
    assert np.allclose(costs.forward_s, table.F_cycles / 2e9)
    assert np.allclose(costs.backward_s, (table.G_cycles + table.D_cycles) / 2e9)
    full = task_cost(costs, len(costs))
    assert full.time_s == pytest.approx(table.total_cycles.sum() / 2e9)  # exact mode: conv1 has no D already


def test_table1_shape_on_resnet101():
    """Table 1 (ResNet-101, batch 64, V100): backward time and peak memory fall with the back-propagated
    share, memory fastest at the high end. The array model's curve falls faster than the GPU's (its first
    layers are costlier on a 128×128 array) and has no fixed framework memory floor; the shape is shared."""
    costs = layer_costs_from_network(load_network("resnet101"), ArrayConfig(rows=128, cols=128, element_bytes=4), 64)
    sweep = backprop_sweep(costs)
    assert list(sweep.percent) == sorted(TABLE1, reverse=True)
    assert np.all(np.diff(sweep.backward_s) < 0)  # strictly less backward work per step down
    assert np.all(np.diff(sweep.peak_memory_bytes) <= 0)
    assert (sweep.forward_s == sweep.forward_s.iloc[0]).all()  # forward untouched (Table 1's flat column)
    memory = sweep.peak_memory_bytes.to_numpy()
    assert memory[0] - memory[1] > memory[-3] - memory[-2]  # 100→90 % saves more than 20→10 % (as in Table 1)
    assert sweep.backward_s.iloc[-1] < 0.1 * sweep.backward_s.iloc[0]


def test_profile_csv_round_trip_and_errors(tmp_path):
    costs = _chain()
    text = write_profile_csv(costs)
    back = parse_profile_csv(text)
    assert back.names == costs.names and np.allclose(back.backward_s, costs.backward_s)
    assert task_cost(back, 2).backward_s == 70  # a profile has no separate D: nothing skipped
    path = tmp_path / "p.csv"
    path.write_text(text.replace("\nb,2.0,", "\nb,fast,"), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_profile_csv(path)
    assert err.value.where.line == 3 and err.value.where.field == "forward_s" and str(path) in str(err.value)
    with pytest.raises(InputError, match="field 'backward'"):
        parse_profile_csv("layer,forward_s,backward,activation_bytes,parameter_bytes\n")
    with pytest.raises(InputError, match="duplicate"):
        parse_profile_csv("layer,forward_s,backward_s,activation_bytes,parameter_bytes\na,1,1,1,1\na,1,1,1,1\n")
    with pytest.raises(InputError, match="non-negative"):
        parse_profile_csv("layer,forward_s,backward_s,activation_bytes,parameter_bytes\na,1,-1,1,1\n")


def test_paper_catalog_uses_tables_1_and_2():
    profile = paper_profile("resnet101")
    f, b, mem, grad = TABLE2["resnet101"]
    assert profile.full_s == pytest.approx((f + b) / 1e3)
    assert profile.full_memory_bytes == pytest.approx(mem * 1e9) and profile.model_bytes == grad * 1e6
    (t1, m1), (t2, _) = profile.worker_tasks(2)
    assert t1 == pytest.approx((f + b * 36.58 / 79.89) / 1e3)  # worker 1 of 2: Table 1's 50 % row
    assert m1 == pytest.approx(mem * 1e9 * 4.1 / 6.5) and t2 == profile.full_s
    found = lookup(paper_catalog(), "ResNet-101")  # case and dash insensitive: the resnet101 entry itself
    assert found.name == profile.name and found.full_s == profile.full_s and found.model_bytes == grad * 1e6
    with pytest.raises(InputError, match="unknown model"):
        lookup(paper_catalog(), "alexnet")


def test_profile_from_costs_is_exact_per_layer():
    costs = _chain()
    profile = model_profile_from_costs("chain", costs)
    tasks = profile.worker_tasks(2)
    # test_task_cost_by_hand's figures: the 2-layer suffix 10 + 67 = 77 s in 1,141 B, the whole chain
    # 10 + 99 = 109 s in 1,452 B (before, the expectation was task_cost's own output).
    assert tasks == ((77, 1141), (109, 1452))
    assert profile.model_bytes == 26
