"""A group's all-reduce over servers is never cheaper than the same ring inside one server
(archsim.collectives._spanning_seconds, docs/training.md "Beyond one server"): a ring over two H100
servers' 16 GPUs crosses a NIC-limited boundary, so for the same gradient bytes per GPU it cannot beat the
8-GPU NVSwitch ring. Until 2026-12-04 the in-server term counted only the (k − 1)/k of a GPU's ring bytes
whose next hop is NVLink, and DP 16 was priced 3–4% faster than DP 8 from 1 GiB up."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from archsim.collectives import collective_seconds
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
H100_2_SERVERS = ROOT / "configs" / "clusters" / "h100_2_servers.toml"


def _dp_link(dp: int):
    cluster = load_gpu_cluster(H100_2_SERVERS)
    return cluster.machine(Parallelism(dp=dp, global_batch=16)).links.dp


@pytest.mark.parametrize("nbytes", [2**20, 2**24, 2**27, 2**30, 2**32])
def test_dp16_over_two_servers_is_not_faster_than_dp8_in_one(nbytes):
    """Same bytes per GPU: the 16-GPU ring moves 2 · 15/16 of them per GPU (more than 8's 2 · 7/8), through
    the same GPUs' kernels and NVLink, and one hop in eight through a 400 Gb/s NIC besides."""
    one = float(collective_seconds("all-reduce", nbytes, 8, _dp_link(8)))
    two = float(collective_seconds("all-reduce", nbytes, 16, _dp_link(16)))
    assert two > one


def test_dp16_large_all_reduce_by_hand():
    """The 1 GiB DP 16 all-reduce counted by hand from the cluster file's figures and the A100 NCCL fit's constants
    (archsim.links.A100_NVLINK: η 0.998, α 3.15 µs, α₀ 52.7 µs, γ 1.80 ps/byte; the NIC at NCCL's 0.96, its step
    twice NVLink's): H100 NVLink 7200 Gbit/s both ways is 450 GB/s a direction; eight 400 Gb/s NICs, one per GPU,
    give the group 8 · 50 · 0.96 = 384 GB/s between the servers. The ring's 30 steps, 2 of them across servers;
    the bytes bound by the slower of the GPUs' ring (every byte of 2 · 15/16 · S, at η·B, plus γ·S) and the NICs."""
    s, n, m = 2**30, 16, 2
    wire = 2 * (n - 1) / n * s
    gpus = 1.80e-12 * s + wire / (0.998 * 450e9)
    nics = wire / (8 * 50e9 * 0.96)
    ring = 52.7e-6 + 2 * (n - m) * 3.15e-6 + 2 * (m - 1) * 6.3e-6 + max(gpus, nics)
    tree = 52.7e-6 + 2 * (7 * 3.15e-6 + math.ceil(math.log2(m)) * 6.3e-6) + max(
        1.80e-12 * s + 2 * s / (0.998 * 450e9), 2 * s / (8 * 50e9 * 0.96))
    assert float(collective_seconds("all-reduce", s, n, _dp_link(16))) == pytest.approx(min(ring, tree), rel=1e-9)
    assert gpus > nics  # H100's NVLink ring, not the NICs, bounds it: the in-server term decides
