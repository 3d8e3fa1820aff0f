"""A cluster engineer beyond one server: 4 servers of 8 H100s on 8 × 400 Gb/s rails, a leaf–spine fabric, and 4
servers of 8 A100s on 2 × 200 Gb/s NICs shared; their own cluster TOMLs, the collectives of a size across servers,
train and search. Each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

LEAVES = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n{network}\n'
          '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100"\n')


def _write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _dp_seconds_and_notes(path: Path) -> tuple[float, tuple[str, ...]]:
    """The DP all-reduce of 1 GB over one GPU per server (TP 8 fills each server, DP 4 over the four), and the
    cluster file's notes."""
    from archsim.collectives import collective_seconds

    cluster = load_gpu_cluster(path)
    par = Parallelism(tp=8, dp=4, global_batch=4)
    return float(collective_seconds("all-reduce", 1e9, 4, cluster.machine(par).links.dp)), cluster.unread


def test_leaves_without_an_oversubscription_are_noted(tmp_path):
    """servers_per_leaf = 2 alone (the engineer's two leaves, the oversubscription forgotten) priced the DP
    all-reduce across the two leaves exactly as one leaf, non-blocking, without a word: the key was read and
    changed nothing. Reference: the documented default oversubscription is 1, so the time is the one-leaf time;
    with 4, the ring's one edge out of each leaf of 2 servers carries a server's NICs against 2 × NIC / 4 of
    uplink (docs/training.md, "Beyond one server"), so it must be slower."""
    plain, none = _dp_seconds_and_notes(_write(tmp_path, LEAVES.format(network=""), "plain.toml"))
    leaves, notes = _dp_seconds_and_notes(_write(tmp_path, LEAVES.format(network="servers_per_leaf = 2"), "l.toml"))
    assert leaves == plain and none == ()
    assert len(notes) == 1 and notes[0].startswith("servers_per_leaf = 2 changes nothing: without oversubscription")
    assert "give oversubscription above 1" in notes[0]
    blocking, stated = _dp_seconds_and_notes(
        _write(tmp_path, LEAVES.format(network="servers_per_leaf = 2\noversubscription = 4"), "b.toml"))
    assert blocking > plain and stated == ()


def test_leaves_of_a_stated_non_blocking_fabric_are_not_noted(tmp_path):
    """The shipped SuperPOD files state their scalable units with oversubscription = 1.0 written out (a
    non-blocking fabric said in so many words): nothing to tell them."""
    _, notes = _dp_seconds_and_notes(
        _write(tmp_path, LEAVES.format(network="servers_per_leaf = 2\noversubscription = 1.0")))
    assert notes == ()
    for name in ("dgx_h100_superpod.toml", "dgx_a100_superpod.toml"):
        assert not any("servers_per_leaf" in note for note in load_gpu_cluster(f"configs/clusters/{name}").unread)


RAILS = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n{network}\n'
         '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100"\n')
SHARED = '[cluster]\n[network]\nnics_per_server = 2\nnic_gbps = 200\n[[servers]]\ncount = 4\ngpus = 8\ngpu = "a100"\n'
ETA = 0.96  # a NIC's efficiency, NCCL's channel speed for it (docs/training.md, "Beyond one server"): not fitted
BIG = 8 * 2**30  # bytes: latencies (µs) are below 10⁻⁴ of the wire time (≥ 0.1 s) on these NICs


def test_a_collective_of_a_size_across_servers_has_an_api(tmp_path):
    """What an all-gather, reduce-scatter or all-to-all of S costs across one's servers had no answer: the
    benchmark prints the all-reduce's bus bandwidth of three fixed groups, and the library nothing. By hand, at a
    size where the wire is all: two servers of 8 A100s on 2 × 200 Gb/s NICs each (4 GPUs a NIC: 6.25 GB/s a GPU
    when all send) — an all-to-all over the 16 sends half of each GPU's buffer out of its server on its own share,
    S/2 / (η · 6.25 GB/s); an all-gather moves (n − 1)/n · S through the server's two NICs, 50 GB/s."""
    import archsim

    path = _write(tmp_path, SHARED)
    a2a = archsim.collective("all-to-all", BIG, cluster=path, gpus=16)
    assert a2a.servers == 2 and a2a.per_server == 8 and not a2a.crosses_leaves
    assert a2a.seconds == pytest.approx(BIG / 2 / (ETA * 6.25e9), rel=1e-3)
    gather = archsim.collective("all-gather", BIG, cluster=path, gpus=16)
    assert gather.seconds == pytest.approx(15 / 16 * BIG / (ETA * 50e9), rel=1e-3)
    assert gather.bus_gbytes_per_s == pytest.approx(15 / 16 * BIG / gather.seconds / 1e9)  # nccl-tests' busBw
    reduce = archsim.collective("all-reduce", BIG, cluster=path, gpus=16)
    assert reduce.bus_gbytes_per_s == pytest.approx(2 * 15 / 16 * BIG / reduce.seconds / 1e9)
    assert reduce.algorithm_gbytes_per_s == pytest.approx(BIG / reduce.seconds / 1e9)


def test_one_gpu_per_server_runs_on_its_rail_and_slows_only_where_its_ring_overfills_the_uplinks(tmp_path):
    """per_server = 1: DP's group when TP fills a server, every rail's group at once, each GPU on its own 400 Gb/s
    NIC: a ring all-reduce over 4 servers moves 2 · 3/4 · S at η · 50 GB/s. Under two leaves of 2 servers the ring
    leaves each leaf by one edge, one server's NICs of traffic (8 rails at once) against 2 servers' NICs over the
    oversubscription of uplink (docs/training.md, "Beyond one server"): at 2:1 not slowed, at 4:1 twice as slow."""
    import archsim

    flat = archsim.collective("all-reduce", BIG, cluster=_write(tmp_path, RAILS.format(network=""), "f.toml"),
                              gpus=4, per_server=1)
    assert (flat.servers, flat.per_server, flat.crosses_leaves) == (4, 1, False)
    assert flat.seconds == pytest.approx(2 * 3 / 4 * BIG / (ETA * 50e9), rel=1e-3)
    leaves = _write(tmp_path, RAILS.format(network="servers_per_leaf = 2\noversubscription = 2"), "l.toml")
    crossing = archsim.collective("all-reduce", BIG, cluster=leaves, gpus=4, per_server=1)
    assert crossing.crosses_leaves and crossing.seconds == flat.seconds
    four = _write(tmp_path, RAILS.format(network="servers_per_leaf = 2\noversubscription = 4"), "l4.toml")
    slowed = archsim.collective("all-reduce", BIG, cluster=four, gpus=4, per_server=1)
    assert slowed.crosses_leaves and slowed.seconds == pytest.approx(2 * flat.seconds, rel=1e-3)
    inside = archsim.collective("all-reduce", BIG, cluster=leaves, gpus=16)  # servers 0 and 1: one leaf
    assert not inside.crosses_leaves


def test_the_api_prices_the_groups_the_benchmark_prints(tmp_path):
    """The same groups as benchmarks/bench_collectives.py --cluster (a server's GPUs, one per server, all of them):
    one price, whichever is asked."""
    import archsim
    from tests.benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_collectives")
    path = _write(tmp_path, RAILS.format(network="servers_per_leaf = 2\noversubscription = 2\nnvls = true"))
    server, whole = bench.cluster_bus_bandwidths(path, 2**30)
    assert archsim.collective("all-reduce", 2**30, cluster=path, gpus=8).bus_gbytes_per_s == pytest.approx(server)
    assert archsim.collective("all-reduce", 2**30, cluster=path, gpus=32).bus_gbytes_per_s == pytest.approx(whole)
    rail = archsim.collective("all-reduce", 2**30, cluster=path, gpus=4, per_server=1).bus_gbytes_per_s
    assert rail == pytest.approx(bench.rail_bus_bandwidth(path, 2**30))


@pytest.mark.parametrize(("kwargs", "field", "words"), [
    ({"kind": "allreduce"}, "kind", "did you mean 'all-reduce'?"),
    ({"gpus": 12}, "gpus", "give a multiple of 8"),
    ({"gpus": 64}, "gpus", "2…32"),
    ({"gpus": 16, "per_server": 3}, "per_server", "must divide the server's 8 GPUs"),
    ({"gpus": 6, "per_server": 4}, "per_server", "4 must divide 6"),
    ({"gpus": 8, "per_server": 1}, "per_server", "spans 8 servers, the cluster has 4"),
    ({"nbytes": 0}, "nbytes", "bytes"),
])
def test_a_group_that_cannot_be_is_refused_in_one_line(tmp_path, kwargs, field, words):
    import archsim
    from archsim.errors import InputError

    given = {"kind": "all-reduce", "nbytes": 1e6, "gpus": 16} | kwargs
    with pytest.raises(InputError) as refused:
        archsim.collective(given.pop("kind"), given.pop("nbytes"), cluster=_write(tmp_path, SHARED), **given)
    assert refused.value.where.field == field and words in refused.value.message
    assert "\n" not in refused.value.message


def test_the_own_cluster_figures_docs_quote_are_the_benchmarks(tmp_path):
    """docs/training.md ("Your own cluster") quoted 401.4 and 333.5 GB/s for 4 × 8 H100s with NVLS and 8 × 400 Gb/s
    NICs a server; the benchmark printed 401.4 and 304.5 since the in-server term took every byte of the ring
    (2026-12-04). The page's own claim is the reference: the whole cluster's figure is bound by the servers' NVLink
    rings, so 800 Gb/s NICs give the same, and it takes no less time than one server's ring without NVLS."""
    import re

    import archsim
    from tests.benchmark_scripts import load_benchmark

    page = " ".join(Path("docs/training.md").read_text().split())  # its lines wrapped anywhere
    quoted = re.search(r"4 × 8 H100s with NVLS and 8 × 400 Gb/s NICs a server, ([\d.]+) and ([\d.]+)", page)
    assert quoted is not None
    bench = load_benchmark("bench_collectives")
    text = RAILS.format(network="nvls = true")
    server, whole = bench.cluster_bus_bandwidths(_write(tmp_path, text), 2**30)
    assert (f"{server:.1f}", f"{whole:.1f}") == quoted.groups()
    faster = _write(tmp_path, text.replace("nic_gbps = 400", "nic_gbps = 800"), "fast.toml")
    assert bench.cluster_bus_bandwidths(faster, 2**30)[1] == pytest.approx(whole)
    ring = archsim.collective("all-reduce", 2**30, cluster=_write(tmp_path, RAILS.format(network=""), "ring.toml"),
                              gpus=8)  # one server's ring, no NVLS: the same bytes a GPU can take no less time over 4
    assert archsim.collective("all-reduce", 2**30, cluster=faster, gpus=32).seconds >= ring.seconds


def test_search_says_what_train_warns_of_a_tp_group_across_servers():
    """TP 16 on two 8-GPU servers: archsim train warns "a TP group spans 2 servers: its all-reduces cross the
    network"; archsim search kept such rows among those it showed (priced alike) with only a tp_spans_servers column
    to say so. Its rows shown now get one note, naming the first such row; the reference is train's warning on the
    same layout."""
    import archsim
    from archsim.console import notes_kept
    from archsim.workload.transformer import TransformerConfig

    model = TransformerConfig("m", "gpt", layers=2, hidden=1024, heads=16, vocab=50304, seq=512, ffn=4096,
                              kv_heads=16, tied_embeddings=True, positions=512)
    cluster = "configs/clusters/h100_2_servers.toml"
    with notes_kept() as warned:
        archsim.train(model, cluster=cluster, tp=16, global_batch=16, recompute="none")
    assert "a TP group spans 2 servers: its all-reduces cross the network" in warned
    with notes_kept() as kept:
        found = archsim.search(model, cluster=cluster, global_batch=16, schedule="1f1b", recompute=["none"],
                               max_micro_batch=1, sequence_parallel="off", top=100, refine=0)
    rows = found.to_dict()["rows"]
    spanning = [i for i, row in enumerate(rows, 1) if row["tp"] == 16]
    assert spanning and all(rows[i - 1]["tp_spans_servers"] for i in spanning)
    note = [line for line in kept if "spans servers" in line]
    assert len(note) == 1 and f"in row {spanning[0]} (TP16 PP1 DP1 mb1 none 1f1b), TP 16, its all-reduces cross the " \
        "network" in note[0]
    with notes_kept() as quiet:  # the best rows alone: inside a server, nothing to say
        archsim.search(model, cluster=cluster, global_batch=16, schedule="1f1b", recompute=["none"],
                       max_micro_batch=1, sequence_parallel="off", top=1, refine=0)
    assert not any("spans servers" in line for line in quiet)


def test_a_group_in_one_nvlink_domain_crosses_no_leaf(tmp_path):
    """Two servers of one NVLink domain (nvlink_domain = 16) under two leaves of a 2:1 fabric: the pair's
    all-reduce runs on NVLink (docs/formats.md, nvlink_domain), no uplink carries it, so it crosses no leaf and
    takes the NVLink's time, not the NICs'; a pair of two domains crosses both."""
    import archsim

    path = _write(tmp_path, RAILS.format(network="nvlink_domain = 16\nservers_per_leaf = 1\noversubscription = 2"))
    inside = archsim.collective("all-reduce", BIG, cluster=path, gpus=2, per_server=1)
    assert not inside.crosses_leaves and inside.servers == 2
    assert inside.seconds < 2 * 1 / 2 * BIG / (ETA * 50e9) / 2  # well under the NIC's share, even non-blocking
    across = archsim.collective("all-reduce", BIG, cluster=path, gpus=4, per_server=1)  # servers 0–3: two domains
    assert across.crosses_leaves
