"""``--placement planned`` across the leaves of an oversubscribed fabric: orders that only swap whole leaves of alike
servers are tried once."""

from __future__ import annotations

import itertools
from math import factorial

import pytest
from test_ux67 import TINY, _leafy

from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.placement import leaf_order_counts, order_count, orders_note, server_orders

H, A = "h100", "a100-80gb"


@pytest.mark.parametrize(("kinds", "per_leaf", "count"), [
    ((H,) * 8, 4, factorial(8) // factorial(4) ** 2 // factorial(2)),  # 70 orders, two alike leaves: 35
    ((H,) * 4, 2, 6 // 2),  # 4!/(2!·2!) over the 2! swaps of the two leaves
    ((H, A) * 2, 2, 24 // 2),  # each leaf an H100 and an A100: alike, 4! / 2!
    ((H, H, A, A), 2, 6),  # an H100 leaf and an A100 leaf: not alike, 4!/(2!·2!) as before
    ((H,) * 6, 2, factorial(6) // 2 ** 3 // factorial(3)),  # three alike leaves: 90 / 3! = 15
    ((H,) * 6, 4, factorial(6) // (factorial(4) * factorial(2))),  # a leaf of 4 and one of 2: not alike, 15
    ((H, A, H, H, A, H), 3, factorial(6) // (2 * 2 * 2)),  # leaves (H, A, H) and (H, A, H): 90 / 2! = 45
])
def test_orders_that_only_swap_alike_leaves_are_counted_once(tmp_path, kinds, per_leaf, count):
    """Failed before: eight alike H100 servers four per leaf gave 70 orders, where the 35 that swap the two leaves whole
    lay every group out alike (a leaf's servers and links are alike): by hand the multinomial over (kind, leaf), over
    k! for each k leaves holding the same kinds. The file's order first, no order twice."""
    cluster = load_gpu_cluster(_leafy(tmp_path, kinds, per_leaf=per_leaf))
    orders = server_orders(cluster)
    assert order_count(cluster) == len(orders) == len(set(orders)) == leaf_order_counts(cluster)[1] == count
    assert orders[0] == tuple(range(len(kinds))) and orders_note(cluster) is None


def _twin_key(cluster, order: tuple[int, ...], per_leaf: int) -> tuple:
    """Brute force: the least, over every relabelling of the leaves that holds the same kinds, of the order's
    (GPU, leaf) sequence: two orders have one key where swapping whole leaves of alike servers turns one into the
    other."""
    kinds = [cluster.gpu_at(cluster.starts[s]).name for s in range(len(order))]
    leaves = sorted({s // per_leaf for s in order})
    held = {leaf: sorted(kinds[s] for s in order if s // per_leaf == leaf) for leaf in leaves}
    keys = []
    for image in itertools.permutations(leaves):
        if all(held[a] == held[b] for a, b in zip(leaves, image, strict=True)):
            to = dict(zip(leaves, image, strict=True))
            keys.append(tuple((kinds[s], to[s // per_leaf]) for s in order))
    return min(keys)


@pytest.mark.parametrize(("kinds", "per_leaf"), [((H,) * 6, 2), ((H, A, H, H, A, H), 3), ((H, A) * 3, 2),
                                                 ((H, H, A, A, H, H), 2)])
def test_the_orders_left_are_one_of_each_set_of_leaf_swaps(tmp_path, kinds, per_leaf):
    """Brute force over all 6! orders of the servers: the sets of orders alike up to swapping whole leaves of alike
    servers (and alike servers within a leaf) number as many as planned tries, and it tries one of each."""
    cluster = load_gpu_cluster(_leafy(tmp_path, kinds, per_leaf=per_leaf))
    every = {_twin_key(cluster, order, per_leaf) for order in itertools.permutations(range(len(kinds)))}
    tried = [_twin_key(cluster, order, per_leaf) for order in server_orders(cluster)]
    assert sorted(tried) == sorted(every)


@pytest.mark.long
def test_the_best_of_the_orders_left_is_the_best_of_all(tmp_path, capsys):
    """Brute force: six alike servers of two GPUs, two per leaf at 2:1, TP 2 · PP 6 · DP 1 of a small GPT: the 90 orders
    of (kind, leaf) time alike within each set of 3! leaf swaps (the rule's premise), and planned (15 orders) takes the
    fastest of the 90."""
    from test_ux67 import _train_meta

    model = tmp_path / "tiny.toml"
    model.write_text(TINY.replace("layers = 8", "layers = 6"))
    path = _leafy(tmp_path, (H,) * 6)
    cluster = load_gpu_cluster(path)
    argv = ["train", str(model), "--cluster", path, "--tp", "2", "--pp", "6", "--dp", "1", "--global-batch", "12"]
    leaf = {}  # one order of each (leaf) sequence: the 90 orders planned tried before alike leaves were told apart
    for order in itertools.permutations(range(6)):
        leaf.setdefault(tuple(s // 2 for s in order), order)
    assert len(leaf) == 90
    by_twins: dict = {}
    for order in leaf.values():
        seconds = _train_meta([*argv, "--placement", ",".join(map(str, order))], capsys)["iteration_seconds"]
        by_twins.setdefault(_twin_key(cluster, order, 2), set()).add(seconds)
    assert len(by_twins) == 15 and all(len(times) == 1 for times in by_twins.values())
    planned = _train_meta([*argv, "--placement", "planned"], capsys)
    assert planned["iteration_seconds"] == min(min(t) for t in by_twins.values())

