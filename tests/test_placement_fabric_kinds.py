"""``--placement planned`` tries every distinct server order; two servers of one GPU and GPU count but different
in-server links (``intra_server_gbps``) are different servers, as the cluster costs them (``GpuCluster.heterogeneous``
counts the link). Before, they were one kind, so the order putting the slower-linked server first was never tried."""

from __future__ import annotations

from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.placement import order_count, server_orders

CLUSTER = """[cluster]
name = "two_links"
inter_server_gbps = 200

[[servers]]
count = 1
gpus = 4
intra_server_gbps = 4800
gpu = "a100-80gb-sxm"

[[servers]]
count = 1
gpus = 4
intra_server_gbps = 600
gpu = "a100-80gb-sxm"
"""


def test_servers_that_differ_by_their_link_are_two_kinds(tmp_path):
    path = tmp_path / "two_links.toml"
    path.write_text(CLUSTER)
    cluster = load_gpu_cluster(path, "fp16")
    assert cluster.heterogeneous
    assert order_count(cluster) == 2 and sorted(server_orders(cluster)) == [(0, 1), (1, 0)]  # 2! orders of 2 kinds


def test_servers_alike_in_everything_are_one_kind(tmp_path):
    path = tmp_path / "same_links.toml"
    path.write_text(CLUSTER.replace("intra_server_gbps = 600", "intra_server_gbps = 4800"))
    assert order_count(load_gpu_cluster(path, "fp16")) == 1
