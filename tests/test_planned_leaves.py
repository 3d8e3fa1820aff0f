"""``--placement planned`` across the leaves of an oversubscribed fabric: orders that only swap whole leaves of alike
servers are tried once, and a search whose grid times the leaves' orders passes its cap runs on the kinds' orders (as
it did before leaves were told apart) and says so, where it was refused."""

from __future__ import annotations

import itertools
import json
from math import factorial

import pytest
from test_ux67 import MODEL, TINY, _leafy

from archsim.cli import main
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


TEN = ["--global-batch", "20", "--top", "1", "--refine", "0", "--schedule", "1f1b,gpipe", "--max-micro-batch", "4",
       "--sequence-parallel", "both"]


def test_a_search_whose_leaf_orders_pass_the_cap_runs_on_the_kinds_orders_and_says_so(tmp_path, capsys):
    """Failed before (refused): ten alike one-GPU servers, leaves of 4, 4 and 2 at 2:1 give 10!/(4!·4!·2!) = 3,150
    orders, 1,575 with the two alike leaves swapped once; the grid (TP·PP·DP of 10: 9 × 4 micro-batches × 3 recomputes
    × 2 schedules × 2 = 432) times 1,575 passes the cap of 500,000, times the kind's one order not: the search runs on
    that order (its rows the file order's) with one note naming both counts and the flag to narrow it."""
    model = tmp_path / "tiny.toml"
    model.write_text(TINY)
    path = _leafy(tmp_path, (H,) * 10, per_leaf=4, gpus=1)
    argv = ["search", str(model), "--cluster", path, *TEN, "--format", "json"]
    assert main([*argv, "--placement", "planned"]) == 0
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if "1,575" in line]
    assert len(said) == 1 and "tried 1 server order," in said[0], err
    assert "432 configurations × 1,575 = 680,400, above its limit of 500,000" in said[0]
    assert "to 317 configurations or fewer (lower --max-micro-batch)" in said[0]  # 500,000 // 1,575
    planned = json.loads(out)["rows"]
    assert main([*argv, "--placement", "file"]) == 0
    out, err = capsys.readouterr()
    assert "1,575" not in err
    filed = json.loads(out)["rows"]
    assert [r["iteration_seconds"] for r in planned] == [r["iteration_seconds"] for r in filed]
    assert planned[0]["placement"] == ",".join(map(str, range(10)))
    # train tries the 1,575 orders of one layout: no note
    assert order_count(load_gpu_cluster(path)) == 1575 and orders_note(load_gpu_cluster(path)) is None
    import archsim  # the library says it once, as a UserWarning, in its keywords

    with pytest.warns(UserWarning) as caught:
        archsim.search(str(model), cluster=path, global_batch=20, top=1, refine=0, schedule=["1f1b", "gpipe"],
                       max_micro_batch=4, sequence_parallel="both", placement="planned")
    said = [str(w.message) for w in caught if "1,575" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("placement='planned' tried 1 server order,")
    assert "(lower max_micro_batch)" in said[0]


@pytest.mark.long
def test_the_eight_server_search_runs_again(tmp_path, capsys):
    """``archsim search gpt3_1.3b.toml --global-batch 64 --placement planned`` on eight alike H100 servers four per
    leaf at 2:1 ran before the leaves were told apart (one order) and was then refused (70 orders × 16,128
    configurations); 35 orders still pass the cap, so it runs on the one order and says so (about 6 s)."""
    cluster = tmp_path / "eight.toml"
    cluster.write_text('[cluster]\nname = "eight"\n[network]\nnics_per_server = 8\nnic_gbps = 400\n'
                       'servers_per_leaf = 4\noversubscription = 2\n[[servers]]\ncount = 8\ngpus = 8\ngpu = "h100"\n')
    assert main(["search", MODEL, "--cluster", str(cluster), "--global-batch", "64", "--placement", "planned"]) == 0
    err = capsys.readouterr().err
    assert "would give 35 orders, the search's 16,128 configurations × 35 = 564,480" in err, err
