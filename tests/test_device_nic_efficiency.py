"""A device file's ``[links] efficiency`` governs its NIC too (docs/formats.md, "Device files"): a chip's
inter-server path is the ideal ring at η·B with no launch or copy cost beside its steps, as its in-server fabric
is, unless the file says ``"nccl"`` (then NCCL's channel speed, 0.96, and its 52.7 µs launch, as a catalog GPU's
NIC). Counted here by hand with the spanning ring and tree of docs/training.md, "Beyond one server".

Failed before: the NIC of every device file ran NCCL's 0.96 and 52.7 µs launch whatever the file stated, so a DP
all-reduce over two servers of TPU-like chips paid NCCL's launch and 1/0.96 of the ideal NIC time."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.collectives import collective_seconds
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "configs" / "devices"
TPU = (DEVICES / "tpu_v4_like.toml").read_text(encoding="utf-8")
GIB = 2**30
STEP, NIC_STEP = 3.15e-6, 6.3e-6  # the documented default step latencies: fabric α, twice it through a NIC


def _two_servers(folder: Path, added: str, device: str | None = None) -> Path:
    """Two servers of 8 TPU-like chips (300 GB/s ICI a direction), one 100 Gbit/s NIC per chip between them;
    ``added`` written under the chip file's ``[links]``; ``device``: another file or a catalog name instead."""
    if device is None:
        (folder / "chip.toml").write_text(TPU.replace("intra_gbps = 300", f"intra_gbps = 300\n{added}"),
                                          encoding="utf-8")
        chip = 'device = "chip.toml"'
    else:
        chip = device
    cluster = folder / "two.toml"
    cluster.write_text('[cluster]\nname = "two"\ninter_server_gbps = 100\ninter_server_link = "per_gpu_pair"\n'
                       f"[[servers]]\ncount = 2\ngpus = 8\nintra_server_gbps = 4800\n{chip}\n", encoding="utf-8")
    return cluster


def _dp_all_reduce(cluster: Path, nbytes: float) -> float:
    link = load_gpu_cluster(cluster).machine(Parallelism(dp=16, global_batch=16)).links.dp
    return float(collective_seconds("all-reduce", nbytes, 16, link))


def _by_hand(nbytes: float, eta: float, launch: float = 0.0, copy: float = 0.0, nic_eta: float | None = None,
             fabric_eta: float | None = None) -> float:
    """n = 16 chips, k = 8 a server, m = 2 servers; the fabric 300 GB/s, the group's share of the NICs 8 × 12.5
    GB/s = 100 GB/s. Ring: 2(n − m) fabric steps and 2(m − 1) NIC steps, the bytes 2(n − 1)/n · S at the slower of
    the two; tree: 2((k − 1) + ⌈log₂ m⌉) steps, 2S at the slower; the faster of the two."""
    n, k, m = 16, 8, 2
    fabric, net = (fabric_eta or eta) * 300e9, (nic_eta or eta) * 100e9
    ring = launch + 2 * (n - m) * STEP + 2 * (m - 1) * NIC_STEP + max(copy * nbytes + 2 * (n - 1) / n * nbytes / fabric,
                                                                      2 * (n - 1) / n * nbytes / net)
    tree = launch + 2 * ((k - 1) * STEP + math.ceil(math.log2(m)) * NIC_STEP) + max(copy * nbytes + 2 * nbytes / fabric,
                                                                                 2 * nbytes / net)
    return min(ring, tree)


@pytest.mark.parametrize(("added", "eta"), [("", 1.0), ("efficiency = 0.8", 0.8)])
def test_a_dp_all_reduce_over_two_servers_is_the_ideal_ring(tmp_path, added, eta):
    """1 GiB: the ring, its NIC at η · 100 GB/s (bounding it), no launch, no copy cost."""
    assert _dp_all_reduce(_two_servers(tmp_path, added), GIB) == pytest.approx(_by_hand(GIB, eta), rel=1e-12)


def test_nccl_keeps_nccls_nic(tmp_path):
    """``efficiency = "nccl"``: NCCL's fit in the server (η 0.998, γ 1.80 ps a byte) and its NIC's channel speed
    (0.96) and 52.7 µs launch between servers."""
    got = _dp_all_reduce(_two_servers(tmp_path, 'efficiency = "nccl"'), GIB)
    assert got == pytest.approx(_by_hand(GIB, 1.0, launch=52.7e-6, copy=1.80e-12, nic_eta=0.96, fabric_eta=0.998),
                                rel=1e-12)
    assert got > _by_hand(GIB, 1.0)


@pytest.mark.parametrize("flags", [["--dp", "16"], ["--tp", "2", "--pp", "2", "--dp", "4"]])
def test_the_a100_device_file_trains_as_the_catalog_a100_over_two_servers(tmp_path, capsys, flags):
    """The A100 written as a device file states ``efficiency = "nccl"``: over two servers (a DP group or a
    pipeline hop through the NICs) train prints the catalog A100's document, byte for byte but for the in-server
    link's label (a device file's is a "fabric", tests/test_device_identity.py). Megatron's attention: flash's
    non-matmul work runs on a catalog chip's special-function units, on a device file's arrays' lanes (its own
    rule, docs/training.md, "FlashAttention's non-matmul work"), apart from the links."""
    written = tmp_path / "written"
    catalog = tmp_path / "catalog"
    written.mkdir()
    catalog.mkdir()
    documents = []
    for cluster in (_two_servers(written, "", f'device = "{DEVICES / "a100_80gb_as_arrays.toml"}"'),
                    _two_servers(catalog, "", 'gpu = "a100-80gb"')):
        assert main(["train", str(ROOT / "configs/transformers/gpt_1024h_24l.json"), "--cluster", str(cluster),
                     *flags, "--global-batch", "64", "--attention", "standard", "--format", "json"]) == 0
        documents.append(capsys.readouterr().out)
    assert json.loads(documents[0])["meta"]["inter_server"]["crossed_by"]  # the NICs are used
    labelled = documents[0].replace('"link": "fabric"', '"link": "nvlink"', 1)
    assert labelled != documents[0] and labelled == documents[1]


@pytest.mark.parametrize(("added", "eta", "launch"), [("", 1.0, 0.0), ('efficiency = "nccl"', 0.96, 52.7e-6)])
def test_plans_exact_links_price_the_nic_as_train_does(tmp_path, added, eta, launch):
    """``plan --links exact`` on the same two servers: a pair across them sends at η · 12.5 GB/s after α₀ (the
    ideal NIC: 1 and none; "nccl": NCCL's 0.96 and 52.7 µs), and a stage over all 16 chips all-reduces in train's
    seconds."""
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.spp.topology import build_topology
    from archsim.training.cluster_file import named_devices

    cluster = _two_servers(tmp_path, added)
    spec = read_cluster_document(cluster)
    topology = build_topology(spec, links="exact", devices=named_devices(spec, tmp_path, str(cluster)))
    assert topology.bandwidth[0, 8] == pytest.approx(eta * 12.5e9, rel=1e-12)
    assert topology.latency[0, 8] == pytest.approx(launch, rel=1e-12, abs=0.0)
    assert topology.links is not None
    planned = float(collective_seconds("all-reduce", GIB, 16, topology.links.allreduce_link(range(16),
                                                                                           topology.bandwidth)))
    assert planned == pytest.approx(_dp_all_reduce(cluster, GIB), rel=1e-12)
