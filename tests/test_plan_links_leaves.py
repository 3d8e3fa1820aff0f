"""``plan --links exact`` on an oversubscribed leaf–spine fabric: a replicated stage whose GPUs sit under two leaves
all-reduces as train's group over the same GPUs does (:meth:`archsim.network.ServerNetwork.uplinks`: slowed by
max(1, oversubscription × f), f the share of a server's traffic that leaves its leaf), not by the whole
oversubscription a point-to-point pair across leaves pays."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.collectives import Spanning, collective_seconds
from archsim.spp.cluster_document import read_cluster_document
from archsim.spp.topology import build_topology
from archsim.training.cluster_file import load_gpu_cluster, named_devices
from archsim.training.parallel import Parallelism

BYTES = 100e6  # a stage's parameter bytes
# four servers of two A100s, two under each leaf, uplinks at 4:1; one 200 Gb/s NIC per GPU
LEAVES = ('[cluster]\nname = "leaves"\n[network]\nnics_per_server = 2\nnic_gbps = 200\nservers_per_leaf = 2\n'
          'oversubscription = {over}\n[[servers]]\ncount = 4\ngpus = 2\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')


def _plan_allreduce(path: Path, devices: tuple[int, ...]) -> tuple[float, Spanning]:
    """Plan's all-reduce of BYTES over ``devices`` (exact links) and the link it runs on."""
    spec = read_cluster_document(path)
    topology = build_topology(spec, links="exact", devices=named_devices(spec, path.parent, str(path)))
    link = topology.links.allreduce_link(devices, topology.bandwidth)
    assert isinstance(link, Spanning)
    return float(archsim.matrix_collectives.ring_allreduce_on(BYTES, devices, topology.bandwidth, topology.links)), link


@pytest.mark.parametrize("over", [2, 4])
def test_a_stage_over_two_leaves_all_reduces_as_archsim_collective_prices_it(tmp_path, over):
    """All 8 GPUs (4 servers, 2 a leaf): the ring leaves each leaf once from its 2 servers, f = 1/2, so train slows
    it max(1, o/2) — 1 at 2:1, 2 at 4:1 — where plan divided every pair across leaves by o. The reference is
    archsim.collective's group of 8 GPUs in a row (train's TP group, an independent path through group_links)."""
    path = tmp_path / "leaves.toml"
    path.write_text(LEAVES.format(over=over))
    seconds, link = _plan_allreduce(path, tuple(range(8)))
    reference = archsim.collective("all-reduce", BYTES, cluster=str(path), gpus=8)
    assert reference.crosses_leaves  # the group does cross leaves
    assert seconds == pytest.approx(reference.seconds, rel=1e-12)
    assert link.uplinks.ring == max(1.0, over / 2)  # by hand: f = 1/2


@pytest.mark.parametrize("over", [2, 4])
def test_a_stage_of_one_gpu_a_server_over_two_leaves_costs_trains_dp_group(tmp_path, over):
    """GPU 0 of each server (TP 2 innermost: train's DP group of 4 over the 4 servers): the same seconds as train's
    DP all-reduce, uplinks and all."""
    path = tmp_path / "leaves.toml"
    path.write_text(LEAVES.format(over=over))
    dp = load_gpu_cluster(path).machine(Parallelism(2, 1, 4, 4, 1)).links.dp
    assert isinstance(dp, Spanning) and dp.uplinks.ring == max(1.0, over / 2)
    seconds, _ = _plan_allreduce(path, (0, 2, 4, 6))
    assert seconds == pytest.approx(float(collective_seconds("all-reduce", BYTES, 4, dp)), rel=1e-12)


def test_a_pipeline_pair_across_leaves_keeps_the_whole_oversubscription(tmp_path):
    """A point-to-point pair across leaves sends every byte through the uplinks (f = 1): its bandwidth stays the
    NIC's η·B over o (train's hop, Uplinks.pair)."""
    path = tmp_path / "leaves.toml"
    path.write_text(LEAVES.format(over=4))
    spec = read_cluster_document(path)
    topology = build_topology(spec, links="exact", devices=named_devices(spec, path.parent, str(path)))
    within, across = topology.bandwidth[0, 2], topology.bandwidth[0, 4]  # servers 0–1 one leaf, 0–2 two
    assert across == pytest.approx(within / 4, rel=1e-12)
