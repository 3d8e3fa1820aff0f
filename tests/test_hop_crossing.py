"""A pipeline hop crosses servers whenever one of its GPU pairs does (GPU g of rank r sends to GPU g of
rank r + 1, every g at once), not only when the ranks' first GPUs sit on different servers
(archsim.training.group_links.pipeline_hops). The expected seconds are derived here from the
cluster file's stated bandwidths and the fitted link constants (archsim.training.fitted: a NIC η 0.96,
launch 52.7 µs; NVLink η 0.998, launch 52.7 µs) and the p2p formula (archsim.collectives: launch +
bytes / (η · bandwidth)), not read off the code's output.

A hop sends the s·b·h fp16 activation over TP: 2048 · 1 · 2048 · 2 / TP bytes per micro-batch."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from archsim.collectives import Spanning
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.stages import stage_times
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
H100_2_SERVERS = ROOT / "configs" / "clusters" / "h100_2_servers.toml"  # 400 Gb/s NIC per GPU, 7200 Gbit/s NVLink
C = TransformerConfig("m", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192, kv_heads=16,
                      tied_embeddings=True, positions=2048)


def _network_hop(tp: int) -> float:
    """One GPU's slice over its own 400 Gb/s NIC (50e9 bytes/s at η 0.96)."""
    return 52.7e-6 + 2048 * 2048 * 2 / tp / (0.96 * 400e9 / 8)


def _nvlink_hop(tp: int) -> float:
    """One GPU's slice over an H100 server's NVSwitch: 7200 Gbit/s both directions, 450 GB/s per direction."""
    return 52.7e-6 + 2048 * 2048 * 2 / tp / (0.998 * 7200e9 / 8 / 2)


def _times(cluster, par: Parallelism):
    machine = cluster.laid_out(par)[0]
    return machine, stage_times(C, par, machine, model_pieces(C, par, machine))


def test_first_gpus_sharing_a_server_but_other_pairs_crossing_go_over_the_network():
    # TP 2 · DP 3 · PP 2 on 2 × 8 H100: rank 0 holds GPUs 0–5, rank 1 GPUs 6–11. GPUs 0, 1 send to 6, 7
    # inside server 0, but 2…5 to 8…11 on server 1: the hop (both ways) waits for those, over the NIC,
    # 52.7 µs + 2,097,152 B / 48e9 = 96.39 µs. Before, the ranks' first GPUs (0 and 6) shared server 0
    # and the hop was priced at NVLink, 52.7 + 4.67 = 57.37 µs.
    cluster = load_gpu_cluster(H100_2_SERVERS)
    par = Parallelism(tp=2, pp=2, dp=3, global_batch=3, micro_batch=1)
    machine, times = _times(cluster, par)
    network = _network_hop(2)
    assert len(machine.links.pp_hops) == 2 and all(isinstance(h, Spanning) for h in machine.links.pp_hops)
    assert times.boundary_comm == pytest.approx((network,), rel=1e-12)
    assert times.comm == pytest.approx(network, rel=1e-12)  # the slowest hop, what zb's scheduler takes
    # one micro-batch: its forward down and its gradient back cross the hop once each, so pricing it at
    # NVLink instead saves exactly 2 × (network − NVLink)
    nvlink = _nvlink_hop(2)
    inside = cluster.laid_out(Parallelism(tp=2, pp=2, dp=2, global_batch=2))[0].links.pp  # GPUs 0 → 4
    flat = replace(machine, links=replace(machine.links, pp=inside, pp_hops=()))
    assert stage_times(C, par, flat, model_pieces(C, par, flat)).comm == pytest.approx(nvlink, rel=1e-12)
    dearer = train(C, par, machine).iteration_seconds - train(C, par, flat).iteration_seconds
    assert dearer == pytest.approx(2 * (network - nvlink), rel=1e-9)


def test_ranks_filling_whole_servers_are_unchanged():
    # TP 8 · PP 2 on 2 × 8 H100: rank r is server r, every pair crosses at one GPU's NIC: 52.7 µs +
    # 1,048,576 B / 48e9 = 74.55 µs (as before).
    cluster = load_gpu_cluster(H100_2_SERVERS)
    par = Parallelism(tp=8, pp=2, dp=1, global_batch=2, micro_batch=1)
    _, times = _times(cluster, par)
    assert times.boundary_comm == pytest.approx((_network_hop(8),), rel=1e-12)
    assert times.comm == pytest.approx(_network_hop(8), rel=1e-12)


def test_a_pipeline_inside_one_server_stays_on_nvlink():
    # TP 2 · DP 2 · PP 2 uses GPUs 0–7 of server 0 only: every hop on its NVSwitch, one link for all
    # (no per-hop links), 52.7 µs + 2,097,152 B / 449.1e9 = 57.37 µs.
    cluster = load_gpu_cluster(H100_2_SERVERS)
    par = Parallelism(tp=2, pp=2, dp=2, global_batch=2, micro_batch=1)
    machine, times = _times(cluster, par)
    assert machine.links.pp_hops == () and times.boundary_comm == ()
    assert times.comm == pytest.approx(_nvlink_hop(2), rel=1e-12)


@pytest.mark.parametrize(("tp", "pp", "dp", "tied", "crossed"), [
    # rank 1's DP group (GPUs 6, 8, 10) spans both servers; the hop's pairs 2…5 → 8…11 and the tied
    # embedding's (the same pairs: rank 1 is the last) cross too. Before: ["dp"] alone.
    (2, 2, 3, True, ["dp", "pp", "embedding"]),
    (2, 2, 3, False, ["dp", "pp"]),  # untied: the embedding pair has nothing to all-reduce
    (8, 2, 1, True, ["pp", "embedding"]),  # one rank a server: every pair crosses (before: ["pp"])
    (2, 2, 2, True, []),  # GPUs 0–7: the pipeline and its ends inside server 0
])
def test_train_names_the_hops_and_the_tied_pair_that_cross(tmp_path, tp, pp, dp, tied, crossed):
    import archsim

    model = tmp_path / "model.json"
    model.write_text(json.dumps({"model_type": "gpt2", "n_layer": 4, "n_embd": 1024, "n_head": 16, "n_positions": 1024,
                                 "vocab_size": 50257, "n_inner": 4096, "tie_word_embeddings": tied}), encoding="utf-8")
    result, _ = archsim.train(str(model), cluster=str(H100_2_SERVERS), tp=tp, pp=pp, dp=dp, global_batch=dp)
    assert result.to_dict()["meta"]["inter_server"]["crossed_by"] == crossed
