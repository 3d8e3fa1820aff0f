"""4 servers × 8 H100 SXM, 3 servers under one leaf, 4:1 above the leaves: TP 16 · DP 2 puts TP groups on
servers {0, 1} (one leaf) and {2, 3} (two leaves), DP pairs on servers {0, 2} and {1, 3}. Every group of a
kind runs its collectives at once and the iteration waits for the slowest, yet only rank 0's first TP group
and first DP group were priced, both under one leaf: the oversubscription changed nothing and TP 16 across
servers looked as fast as on a non-blocking fabric."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim import api
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

CLUSTER = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nnvls = true\n{leaves}\n'
           '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100-sxm"\n')
SMALL = TransformerConfig("m", "gpt", layers=2, hidden=2048, heads=16, vocab=50304, seq=512, ffn=8192, kv_heads=16,
                          tied_embeddings=True, positions=512)


def _cluster(tmp_path: Path, leaves: str) -> str:
    path = tmp_path / f"c{leaves.count(chr(10))}_{leaves[:18].replace(' ', '')}.toml"
    path.write_text(CLUSTER.format(leaves=leaves))
    return str(path)


def test_the_group_that_crosses_leaves_prices_the_rank(tmp_path):
    """Under leaves of 3 the second TP group and the second DP pair cross an uplink, as every group does with
    a leaf per server: the rank's links are the same; on one leaf they are faster."""
    par = Parallelism(tp=16, pp=1, dp=2, global_batch=32)
    three, each, blocking_free = (load_gpu_cluster(_cluster(tmp_path, leaves)).machine(par).links for leaves in (
        "servers_per_leaf = 3\noversubscription = 4", "servers_per_leaf = 1\noversubscription = 4", ""))
    assert three.tp == each.tp and three.dp == each.dp
    assert three.tp != blocking_free.tp and three.dp != blocking_free.dp


@pytest.mark.filterwarnings("ignore:a TP group spans 2 servers")
@pytest.mark.parametrize(("tp", "pp", "dp"), [(16, 1, 2), (8, 2, 2),
                                              (8, 1, 4)])  # 8 · 4: DP over 4 servers always crossed (a guard)
def test_train_and_search_agree_and_pay_the_crossing(tmp_path, tp, pp, dp):
    leaves = _cluster(tmp_path, "servers_per_leaf = 3\noversubscription = 4")
    plain = _cluster(tmp_path, "")
    crossing, _ = api.train(SMALL, cluster=leaves, tp=tp, pp=pp, dp=dp, global_batch=32, dtype="bf16")
    free, _ = api.train(SMALL, cluster=plain, tp=tp, pp=pp, dp=dp, global_batch=32, dtype="bf16")
    assert crossing.iteration_seconds > free.iteration_seconds  # the crossing costs time
    found = api.search(SMALL, cluster=leaves, global_batch=32, gpus=32, schedule="1f1b", recompute="full",
                       max_micro_batch=1, sequence_parallel="off", dtype="bf16", top=1000)
    row = next(r for r in found.rows if (r["tp"], r["pp"], r["dp"]) == (tp, pp, dp))
    assert row["iteration_seconds"] == pytest.approx(crossing.iteration_seconds, rel=1e-9)


def test_a_pipeline_hop_is_priced_on_its_pair_that_crosses_leaves(tmp_path):
    """TP 8 · DP 2 · PP 2: rank 0 on servers {0, 1}, rank 1 on {2, 3}; GPU g sends to GPU g + 16, so the
    pairs (0, 2) under one leaf and (1, 3) across two send at once. The hop was priced on its first pair."""
    par = Parallelism(tp=8, pp=2, dp=2, global_batch=32)
    three, each, free = (load_gpu_cluster(_cluster(tmp_path, leaves)).machine(par).links.pp_hops for leaves in (
        "servers_per_leaf = 3\noversubscription = 4", "servers_per_leaf = 1\noversubscription = 4", ""))
    assert three == each and three != free
    assert len(three) == 2


def test_a_hop_some_of_whose_pairs_cross_servers_is_priced_over_the_network(tmp_path):
    """TP 2 · DP 3 · PP 4 on 8-GPU servers: rank 0 holds GPUs 0…5 (server 0), rank 1 GPUs 6…11 (servers 0
    and 1). GPU 0's hop to GPU 6 stays in server 0, but GPUs 2…5 send to 8…11 in server 1 at the same time:
    the hop crosses the network. It was priced on NVLink, its first pair's link."""
    from archsim.collectives import Spanning

    par = Parallelism(tp=2, pp=4, dp=3, global_batch=48)
    hops = load_gpu_cluster(_cluster(tmp_path, "")).machine(par).links.pp_hops
    assert len(hops) == 4 and all(isinstance(hop, Spanning) for hop in hops)
