"""A training-systems engineer's cluster: 4 servers of 8 H100 SXM, 8 NICs of 400 Gb/s per server (one
rail per GPU), NVSwitch inside. What their own cluster TOML and runs file must get: every key either
read or reported, a contradiction refused in one line, never a silent default."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim import api
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.runs import runs_to_run
from archsim.training.runs_predict import predict_runs
from archsim.workload.transformer import TransformerConfig

CLUSTER = '[cluster]\n{cluster}\n[network]\n{network}\n[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100-sxm"\n'
RAILS = "nics_per_server = 8\nnic_gbps = 400\ngpus_per_nic = 1\nnvls = true"


def _cluster(tmp_path: Path, network: str = RAILS, cluster: str = "inter_server_gbps = 400") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(CLUSTER.format(cluster=cluster, network=network))
    return path


@pytest.mark.parametrize(("nics", "per_nic", "field"), [
    (8, 2, "gpus_per_nic"),  # 8 NICs declared, 2 GPUs on each: only 4 rails carry traffic
    (4, 1, "gpus_per_nic"),  # 4 NICs of one GPU each: GPUs 4…7 would have no NIC
    (16, None, "nics_per_server"),  # 16 NICs for 8 GPUs: 8 of them carry no GPU's traffic
])
def test_nics_and_rails_that_disagree_are_refused(tmp_path, nics, per_nic, field):
    """GPU g of a server sends on NIC g // gpus_per_nic: NICs × GPUs per NIC must be the server's GPUs
    (rounded up to a NIC), else NICs were silently dropped (half the bandwidth) or shared unasked."""
    network = f"nics_per_server = {nics}\nnic_gbps = 400" + ("" if per_nic is None else f"\ngpus_per_nic = {per_nic}")
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(_cluster(tmp_path, network))
    assert caught.value.where.field == field
    assert "\n" not in caught.value.message and "NIC" in caught.value.message


@pytest.mark.parametrize("network", [
    "nics_per_server = 8\nnic_gbps = 400",  # one rail per GPU by default
    "nics_per_server = 4\nnic_gbps = 400",  # two GPUs per NIC by default
    "nics_per_server = 4\nnic_gbps = 400\ngpus_per_nic = 2",
    "nics_per_server = 3\nnic_gbps = 400",  # 3 GPUs per NIC, the last NIC two: 8 GPUs on 3 NICs
])
def test_nics_that_cover_the_gpus_load(tmp_path, network):
    cluster = load_gpu_cluster(_cluster(tmp_path, network))
    assert cluster.network is not None and cluster.network.nic_gbps == 400


SMALL = TransformerConfig("m", "gpt", layers=2, hidden=768, heads=24, vocab=50304, seq=512, ffn=3072, kv_heads=24,
                          tied_embeddings=True, positions=512)


def _runs(tmp_path: Path, text: str, cluster: Path) -> list[dict]:
    path = tmp_path / "runs.csv"
    path.write_text(text)
    rows = runs_to_run(path, attention="flash", dp_overlap="none", grad_accumulation=None, schedule="1f1b",
                       max_ops=10**6)
    return predict_runs(SMALL, load_gpu_cluster(cluster, "bf16"), rows, file=path)


def test_a_runs_row_train_cannot_lay_out_is_refused_with_its_line(tmp_path):
    """TP 6 on servers of 8 GPUs: its second group holds GPUs 6…11, part of two servers. archsim train
    refuses that layout; a runs file's row of it was predicted anyway, its TP priced as if it could run."""
    cluster = _cluster(tmp_path)
    par = Parallelism(tp=6, pp=1, dp=4, global_batch=16)
    with pytest.raises(InputError) as refused:
        load_gpu_cluster(cluster, "bf16").laid_out(par)
    text = "tp,pp,dp,micro_batch,global_batch,measured_seconds\n8,1,4,1,16,1.0\n6,1,4,1,16,1.0\n"
    with pytest.raises(InputError) as caught:
        _runs(tmp_path, text, cluster)
    assert (caught.value.where.line, caught.value.where.field) == (3, "tp")
    assert caught.value.message == refused.value.message
    assert len(_runs(tmp_path, text.rsplit("6,1,4", 1)[0], cluster)) == 1  # the row train lays out still runs


def _seconds_and_notes(cluster: Path) -> tuple[float, tuple[str, ...]]:
    loaded = load_gpu_cluster(cluster, "bf16")
    par = Parallelism(tp=4, pp=2, dp=4, global_batch=32)
    return train(SMALL, par, loaded.machine(par), loaded.laid_out(par)).iteration_seconds, loaded.unread


@pytest.mark.parametrize("leaf", ["", "\nservers_per_leaf = 4", "\nservers_per_leaf = 8"])
def test_an_oversubscription_no_group_crosses_is_noted(tmp_path, leaf):
    """4:1 above the leaves, but every server under one leaf (no servers_per_leaf, or one leaf of ≥ 4
    servers): no group crosses an uplink, so the figure changes nothing. It was silently non-blocking."""
    plain, none = _seconds_and_notes(_cluster(tmp_path))
    stated, notes = _seconds_and_notes(_cluster(tmp_path, RAILS + "\noversubscription = 4" + leaf))
    assert stated == plain and none == ()
    assert len(notes) == 1 and notes[0].startswith("oversubscription = 4 changes nothing: every server sits under "
                                                   "one leaf"), notes


def test_an_oversubscription_groups_cross_is_read_and_not_noted(tmp_path):
    plain, _ = _seconds_and_notes(_cluster(tmp_path))
    crossing, notes = _seconds_and_notes(_cluster(tmp_path, RAILS + "\noversubscription = 4\nservers_per_leaf = 1"))
    assert crossing > plain and notes == ()  # DP 4 over 4 servers, 4 leaves: its share a quarter


@pytest.mark.parametrize("tiers", [1, 2, 3])
def test_switch_tiers_are_noted_as_not_read(tmp_path, tiers):
    """switch_tiers changes no figure (switch hops' latency is not modelled): stated other than the default 2, it
    is noted; the default written out states nothing the model lacks, so it is not."""
    plain, _ = _seconds_and_notes(_cluster(tmp_path))
    stated, notes = _seconds_and_notes(_cluster(tmp_path, RAILS + f"\nswitch_tiers = {tiers}"))
    assert stated == plain
    note = (f"switch_tiers = {tiers} is not read: the latency of switch hops is not modelled "
            "(docs/training.md, Beyond one server)")
    assert notes == (() if tiers == 2 else (note,))


def test_a_network_table_needs_no_inter_server_gbps(tmp_path):
    """train and search price the NICs of [network]: the inter_server_gbps it supersedes was still required
    (and, once written, noted as not read), its absence reported as a number out of range."""
    stated = load_gpu_cluster(_cluster(tmp_path, cluster='inter_server_gbps = 400\ninter_server_link = "per_gpu_pair"'))
    bare = load_gpu_cluster(_cluster(tmp_path, cluster=""))
    par = Parallelism(tp=8, pp=2, dp=2, global_batch=32)
    assert bare.laid_out(par) == stated.laid_out(par) and bare.unread == stated.unread == ()
    assert bare.machine(par).links.dp.inter.bandwidth == 400e9 / 8  # each GPU its own rail's NIC


def test_a_missing_inter_server_figure_is_named_missing(tmp_path):
    """Without [network], 2+ servers need inter_server_gbps: its absence says so (plan, train and search)."""
    path = tmp_path / "plain.toml"
    path.write_text('[cluster]\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100-sxm"\n')
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(path)
    assert caught.value.where.field == "inter_server_gbps"
    assert caught.value.message.startswith("missing: the bandwidth between two servers, Gbit/s")


def test_runs_rows_that_do_not_fit_or_span_servers_are_warned_with_their_line(tmp_path, capsys):
    """archsim train warns when a TP group crosses the network and when a rank's memory overflows its GPU;
    the same rows in a runs file were predicted without a word (a 'measured' run that cannot exist)."""
    from archsim.cli import main

    model = tmp_path / "gpt.json"
    model.write_text('{"model_type": "gpt2", "n_embd": 1024, "n_layer": 2, "n_head": 16, "vocab_size": 50304, '
                     '"n_positions": 512}')
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute,measured_seconds\n"
                    "8,1,1,1,8,full,0.01\n16,1,1,1,16,full,0.01\n1,1,1,1024,1024,none,10\n")
    cluster = _cluster(tmp_path)
    assert main(["train", str(model), "--runs", str(runs), "--cluster", str(cluster), "--dtype", "bf16",
                 "--format", "json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "archsim train: warning: line 3: a TP group spans 2 servers: its all-reduces cross the network"
    assert err[1].startswith("archsim train: warning: line 4: does not fit: pipeline rank 0 needs ")
    assert len(err) == 2  # the row that fits inside a server: nothing
    # each warning is the one archsim train prints for that row alone
    assert main(["train", str(model), "--cluster", str(cluster), "--dtype", "bf16", "--format", "json",
                 "--micro-batch", "1024", "--global-batch", "1024", "--recompute", "none"]) == 0
    assert capsys.readouterr().err.splitlines() == [err[1].replace("line 4: ", ""),  # and the layout's note
                                                    ("archsim train: note: this layout uses 1 of the cluster's 32 "
                                                    "GPUs (tp 1 × pp 1 × dp 1); set --tp/--pp/--dp, or archsim "
                                                    "search to choose")]
    with pytest.warns(UserWarning) as record:  # the library: the same lines as UserWarnings
        api.train_runs(str(model), runs=str(runs), cluster=str(cluster), dtype="bf16")
    assert [str(w.message) for w in record] == [line.removeprefix("archsim train: warning: ") for line in err]


WIDE = TransformerConfig("w", "gpt", layers=4, hidden=4096, heads=32, vocab=50304, seq=128, ffn=16384, kv_heads=32,
                         tied_embeddings=True, positions=128)  # short sequences: the DP all-reduce weighs


def test_search_prices_each_ranks_dp_group_under_its_own_leaves(tmp_path):
    """TP 8 · PP 2 · DP 2 on 4 servers, 3 under one leaf and 4:1 above: rank 0's DP pair (servers 0, 1) stays
    under its leaf, rank 1's (servers 2, 3) crosses it. train prices rank 1's all-reduce at a quarter of the
    NICs; search priced every rank on rank 0's links, so its row (and its command) disagreed with train."""
    plain, leaves = tmp_path / "plain", tmp_path / "leaves"
    plain.mkdir()
    leaves.mkdir()
    clusters = (_cluster(plain), _cluster(leaves, RAILS + "\nservers_per_leaf = 3\noversubscription = 4"))
    trained, searched = [], []
    for cluster in clusters:
        result, _ = api.train(WIDE, cluster=str(cluster), tp=8, pp=2, dp=2, global_batch=32, dtype="bf16")
        trained.append(result.iteration_seconds)
        found = api.search(WIDE, cluster=str(cluster), global_batch=32, gpus=32, schedule="1f1b", recompute="full",
                           max_micro_batch=1, sequence_parallel="off", dtype="bf16", top=100)
        searched.append(next(r for r in found.rows if (r["tp"], r["pp"], r["dp"]) == (8, 2, 2)))
    assert trained[1] > trained[0] * 1.01  # rank 1's crossing all-reduce lengthens the iteration
    assert searched[1]["iteration_seconds"] == pytest.approx(trained[1], rel=1e-9)
    assert searched[0]["iteration_seconds"] == pytest.approx(trained[0], rel=1e-9)


def test_the_collectives_benchmark_prices_the_users_own_cluster(tmp_path, capsys):
    """benchmarks/bench_collectives.py --cluster: an all-reduce over one server's GPUs and over the whole
    cluster, as train prices its groups there. The docs' figures, reached from a cluster file: one server of
    8 H100s with NVLS 405.9 GB/s at 8 GiB (docs/training.md), and 2 × 8 A100s on 4 HDR NICs 95.8 GB/s at
    4 GiB (nvidia/nccl#1048's setup)."""
    from tests.benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_collectives")
    h100 = tmp_path / "h100.toml"
    h100.write_text('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nnvls = true\n'
                    '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100-sxm"\n')
    a100 = tmp_path / "a100.toml"
    a100.write_text('[cluster]\n[network]\nnics_per_server = 4\nnic_gbps = 200\n'
                    '[[servers]]\ncount = 2\ngpus = 8\ngpu = "a100-80gb"\n')
    server, _ = bench.cluster_bus_bandwidths(h100, 8 * 2**30)
    _, both = bench.cluster_bus_bandwidths(a100, 4 * 2**30)
    assert round(server, 1) == 405.9 and round(both, 1) == 95.8
    assert bench.main(["--cluster", str(h100)]) == 0
    out = capsys.readouterr().out
    assert "8 GPUs (1 server)" in out and "32 GPUs (4 servers)" in out and "1 GiB" in out
