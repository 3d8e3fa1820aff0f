"""A user trial: 8 servers of 8 H100s, one 400 Gbit/s NIC per GPU, 4 servers per leaf, uplinks 2:1 oversubscribed.
GPT-3 1.3B at TP 8 · PP 2 · DP 4 puts pipeline rank r on the four servers at positions 4r … 4r + 3 of the server
order, and rank r's DP group holds GPU t of each of them (one GPU per server). In the file's order rank 0 sits on
servers 0–3 (leaf 0) and rank 1 on 4–7 (leaf 1): the DP all-reduces stay under a leaf, the pipeline hop and the
tied embedding's all-reduce cross the spine. ``--placement 0,4,1,5,2,6,3,7`` puts rank 0 on file servers 0, 4, 1, 5
(leaves 0 and 1): its DP all-reduce crosses the oversubscribed spine, while every hop pairs file servers 0–1, 4–5,
… with 2–3, 6–7 under their own leaf. Train priced both alike: a server's leaf followed its position in the laid-out
order, not the server (its index in the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
GPT = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")  # 24 layers, hidden 2048, vocab 50257, seq 2048
LEAVES = ('[cluster]\nname = "leaves"\n[network]\nnics_per_server = 8\nnic_gbps = 400\nservers_per_leaf = 4\n'
          'oversubscription = 2\n[[servers]]\ncount = 8\ngpus = 8\ngpu = "h100"\n')
INTERLEAVED = "0,4,1,5,2,6,3,7"
NIC = 400e9 / 8  # bytes/s: one GPU's NIC (one GPU per NIC)


@pytest.fixture
def cluster(tmp_path) -> str:
    path = tmp_path / "leaves.toml"
    path.write_text(LEAVES)
    return str(path)


def _meta(cluster: str, placement: str) -> dict:
    result, _ = archsim.train(GPT, cluster=cluster, tp=8, pp=2, dp=4, global_batch=64, placement=placement)
    return result.to_dict()["meta"]


def test_a_placement_that_spreads_a_rank_over_two_leaves_pays_for_its_dp_all_reduce(cluster):
    """The interleaved order's DP all-reduce crosses leaves (and no hop does): slower than the file's order, and
    ``leaves_crossed_by`` names dp alone (the file order's names the hop and the tied embedding's pair)."""
    file, spread = _meta(cluster, "file"), _meta(cluster, INTERLEAVED)
    assert file["inter_server"]["leaves_crossed_by"] == ["pp", "embedding"]
    assert spread["inter_server"]["leaves_crossed_by"] == ["dp"]
    assert spread["iteration_seconds"] > file["iteration_seconds"]
    assert spread["breakdown_seconds"]["dp_communication"] > file["breakdown_seconds"]["dp_communication"]


def test_half_the_cluster_placed_over_two_leaves_states_the_oversubscription(cluster):
    """TP 8 · DP 4 on the first four servers of the order: file servers 0, 4, 1, 5 under the interleaved one, so the
    run spans two leaves and train's inter_server states the oversubscription and the DP group that crosses it
    (it stated neither: the first four positions were taken for one leaf)."""
    with pytest.warns(UserWarning, match="uses 32 of the cluster's 64 GPUs"):
        result, _ = archsim.train(GPT, cluster=cluster, tp=8, pp=1, dp=4, global_batch=64, placement=INTERLEAVED)
    inter = result.to_dict()["meta"]["inter_server"]
    assert inter["oversubscription"] == 2 and inter["leaves_crossed_by"] == ["dp"]


@pytest.mark.parametrize("placement", ["1,0,3,2,5,4,7,6", "3,2,1,0,7,6,5,4", "4,5,6,7,0,1,2,3"])
def test_a_placement_that_keeps_each_rank_under_one_leaf_prices_as_the_file_order(cluster, placement):
    """Servers permuted within their leaf, or the two leaves swapped: every group crosses the leaves the file order's
    does, so the iteration is the file order's to the bit."""
    file, placed = _meta(cluster, "file"), _meta(cluster, placement)
    assert placed["iteration_seconds"] == file["iteration_seconds"]
    assert placed["breakdown_seconds"] == file["breakdown_seconds"]
    assert placed["inter_server"]["leaves_crossed_by"] == file["inter_server"]["leaves_crossed_by"]


def test_the_crossing_all_reduce_is_priced_at_the_oversubscribed_share(cluster):
    """By hand: rank 0 holds 12 layers of 12·h²/8 weights, 7·h/8 split biases and 6·h unsplit (two biases, two
    norms), its vocabulary's embedding (50257 padded to 51,200 at TP 8) / 8 and 2048 positions × h: 92,967,936
    parameters, 2 bytes each in fp16. Its DP group has one GPU in each of 4 servers, so NCCL's ring over them takes
    2·3 network steps and moves 2·(4 − 1)/4 of the bytes through the GPU's NIC: 50 GB/s, over 2 across leaves
    where the ring alternates them (η, α and the launch are the fitted InfiniBand link's, read off the link). The breakdown's dp part is that
    all-reduce, and it moves by the bytes' time at 25 GB/s less that at 50 GB/s."""
    h = 2048
    params = 12 * (12 * h * h // 8 + 7 * h // 8 + 6 * h) + 51_200 * h // 8 + 2048 * h
    assert params == 92_967_936
    size = 2 * params
    par = Parallelism(tp=8, pp=2, dp=4, global_batch=64)
    loaded = load_gpu_cluster(cluster)
    flat, crossing = (c.rank_machines(par)[0].links.dp for c in (loaded, loaded.reordered((0, 4, 1, 5, 2, 6, 3, 7))))
    # NCCL's ring runs file servers 0 → 4 → 1 → 5 → 0: every edge leaves its leaf, each leaf's two servers send
    # 2 servers' worth against 2 × NIC / 2 of uplink (ServerNetwork.uplinks): the NIC's share over 2
    assert flat.inter.bandwidth == crossing.inter.bandwidth == NIC and crossing.network("ring").bandwidth == NIC / 2
    net = crossing.network("ring")
    by_hand = crossing.intra.launch_s + 2 * 3 * net.alpha_s + 2 * 3 / 4 * size / (net.efficiency * NIC / 2)
    file, spread = _meta(cluster, "file"), _meta(cluster, INTERLEAVED)
    assert spread["breakdown_seconds"]["dp_communication"] == pytest.approx(by_hand, rel=1e-12)
    moved = 2 * 3 / 4 * size * (1 / (net.efficiency * NIC / 2) - 1 / (net.efficiency * NIC))
    assert spread["breakdown_seconds"]["dp_communication"] - file["breakdown_seconds"]["dp_communication"] == \
        pytest.approx(moved, rel=1e-9)


def test_a_placed_topology_keeps_each_server_under_its_leaf(cluster):
    """Plan's matrix of the placed cluster agrees: GPU 0 (file server 0) and GPU 8 (file server 4, second in the
    interleaved order) cross the spine at half a NIC, GPU 0 and GPU 16 (file server 1) do not."""
    placed = load_gpu_cluster(cluster).reordered((0, 4, 1, 5, 2, 6, 3, 7)).topology
    assert placed.bandwidth[0, 8] == NIC / 2 and placed.bandwidth[0, 16] == NIC


def test_search_in_the_file_order_still_agrees_with_train(cluster):
    """Search lays candidates out in the file's order: its rows on this cluster are train's iterations."""
    found = archsim.search(GPT, cluster=cluster, global_batch=64, gpus=64, schedule="1f1b", recompute="full",
                           max_micro_batch=1, sequence_parallel="off", top=1000)
    rows = [r for r in found.rows if (r["tp"], r["pp"]) in ((8, 2), (8, 1), (4, 4))]
    assert len(rows) == 3
    for row in rows:
        result, _ = archsim.train(GPT, cluster=cluster, tp=row["tp"], pp=row["pp"], dp=row["dp"], global_batch=64)
        assert row["iteration_seconds"] == pytest.approx(result.iteration_seconds, rel=1e-9)
