"""Pipeline hops priced per hop: NVLink between ranks whose GPUs share a server, the network between
servers (archsim.training.group_links.pipeline_hops). Reference: 1F1B's critical path runs
the first micro-batch down through every boundary and the last one's gradient back up, so pricing the
two in-server boundaries of a 4-rank pipeline at NVLink instead of the network saves exactly
2 × 2 × (network hop − NVLink hop) in the event simulator."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.collectives import LinkClass, Spanning
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.stages import stage_times
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
C = TransformerConfig("m", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192, kv_heads=16,
                      tied_embeddings=True, positions=2048)


def _setup(interleave: int = 1):
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "vtrain_a100.toml")
    par = Parallelism(tp=4, pp=4, dp=1, global_batch=8, micro_batch=1, interleave=interleave)
    machines = cluster.laid_out(par)  # ranks 0, 1 on server 0; ranks 2, 3 on server 1
    return par, machines


def test_hops_inside_a_server_run_at_nvlink():
    par, machines = _setup()
    par = replace(par, p2p="overlapped")  # the saving below is the overlapped timeline's (two hops a micro-batch)
    hops = machines[0].links.pp_hops
    assert [type(h) for h in hops] == [LinkClass, Spanning, LinkClass, Spanning]  # 0→1, 1→2, 2→3, 3→0
    times = stage_times(C, par, machines[0], model_pieces(C, par, machines[0]))
    nvlink, network = times.boundary_comm[0], times.boundary_comm[1]
    assert times.boundary_comm == (nvlink, network, nvlink) and nvlink < network == times.comm
    flat = replace(machines[0], links=replace(machines[0].links, pp_hops=()))  # every hop at the network's
    saved = train(C, par, flat).iteration_seconds - train(C, par, machines[0], machines).iteration_seconds
    assert saved == pytest.approx(4 * (network - nvlink), rel=1e-9)


def test_interleaved_wraps_over_the_network_and_gains():
    par, machines = _setup(interleave=2)
    times = stage_times(C, par, machines[0], model_pieces(C, par, machines[0]))
    nvlink, network = times.boundary_comm[0], times.boundary_comm[1]
    assert times.boundary_comm == (nvlink, network, nvlink, network) + (nvlink, network, nvlink)  # rank 3 → 0 crosses
    flat = replace(machines[0], links=replace(machines[0].links, pp_hops=()))
    assert train(C, par, machines[0], machines).iteration_seconds < train(C, par, flat).iteration_seconds


def test_a_pipeline_inside_one_server_has_one_hop():
    par = Parallelism(tp=2, pp=4, dp=1, global_batch=8)
    assert single_node().machine(par).links.pp_hops == ()


def test_a_hop_between_leaves_pays_the_oversubscription(tmp_path):
    """Four servers, two under each leaf, 2:1 above the leaves: TP 8 PP 4 puts a rank on each server;
    the hop from rank 1 to rank 2 crosses leaves, so its wire time doubles (the launch latency does not)."""
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\nname = "c"\ninter_server_gbps = 100\ninter_server_link = "per_gpu_pair"\n'
                    "[network]\nnics_per_server = 8\nnic_gbps = 100\nservers_per_leaf = 2\noversubscription = 2\n"
                    '[[servers]]\ncount = 4\ngpus = 8\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')
    cluster = load_gpu_cluster(path)
    par = Parallelism(tp=8, pp=4, dp=1, global_batch=8)
    machine = cluster.laid_out(par)[0]
    launch = machine.links.pp_hops[0].inter.launch_s
    times = stage_times(C, par, machine, model_pieces(C, par, machine))
    same_leaf, across = times.boundary_comm[0], times.boundary_comm[1]
    assert times.boundary_comm[2] == same_leaf
    assert across - launch == pytest.approx(2 * (same_leaf - launch), rel=1e-12)


def test_search_closed_form_crosses_the_same_hops_as_the_event_simulator():
    """1F1B's closed form in the search equals train's event simulation on vTrain's cluster, where
    TP × DP < 8 puts several ranks in a server and so mixes NVLink and network hops."""
    from archsim.training.search import search

    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "vtrain_a100.toml")
    result = search(C, cluster, 16, 16, micro_batches=(1,), recomputes=("full",), schedules=("1f1b",),
                    sequence_parallel=(False,), top=1000, refine=0)
    mixed = 0
    for row in result.rows:
        par = Parallelism(row["tp"], row["pp"], row["dp"], 16, 1, "full")
        machines = cluster.laid_out(par)
        hops = machines[0].links.pp_hops
        mixed += len({type(h) for h in hops}) > 1
        assert row["timing"] == "closed-form"
        assert row["iteration_seconds"] == pytest.approx(train(C, par, machines[0], machines).iteration_seconds,
                                                         rel=1e-12)
    assert mixed >= 3
