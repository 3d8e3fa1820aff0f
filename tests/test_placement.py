"""Servers of different GPU counts and the placement of pipeline stages on a heterogeneous cluster.

References written here, apart from the library: the layout rules from a GPU → server list built by
hand (a TP group inside one server or over whole servers of one size, one GPU type per pipeline
rank); the distinct server orders as
the distinct permutations of the servers' kinds (itertools); and the best placement by brute force —
every permutation of the servers written out as its own cluster file and timed with ``archsim train``
(the file's order, the planned split), whose fastest must be what ``archsim search --placement
planned`` ranks and what ``archsim train --placement planned`` picks."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism
from archsim.training.placement import order_count, parse_placement, server_orders
from archsim.training.rates import dollars_per_hour
from archsim.training.search import search
from archsim.training.search_space import factorizations

SERVERS = {  # name → (gpu, GPUs, intra-server Gb/s)
    "h100x8": ("h100-80gb-sxm", 8, 7200), "h100x2": ("h100-80gb-sxm", 2, 7200),
    "a100x4": ("a100-40gb", 4, 4800), "a100x2": ("a100-40gb", 2, 4800), "a100-80x2": ("a100-80gb", 2, 4800),
    "v100x2": ("v100-32gb", 2, 2400),
}
MODEL = ('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 8\nhidden = 256\nheads = 8\nvocab = 20000\n'
         'seq = 128\n')


def cluster_text(names) -> str:
    text = '[cluster]\nname = "t"\ninter_server_gbps = 200\ninter_server_link = "per_gpu_pair"\n'
    for name in names:
        device, gpus, intra = SERVERS[name]
        text += f'\n[[servers]]\ngpus = {gpus}\nintra_server_gbps = {intra}\ngpu = "{device}"\n'
    return text


def write(tmp_path, names, file="c.toml"):
    path = tmp_path / file
    path.write_text(cluster_text(names))
    return path


def layout_problem(names, tp, pp, dp) -> str | None:
    """The rules by hand: each GPU's (server, type) in file order; TP groups and ranks read off it."""
    size = {s: SERVERS[name][1] for s, name in enumerate(names)}
    gpus = [(s, SERVERS[name][0]) for s, name in enumerate(names) for _ in range(SERVERS[name][1])][:tp * pp * dp]
    for i in range(0, len(gpus), tp):  # a TP group: one server's GPUs, or all GPUs of servers of one size
        held = [s for s, _ in gpus[i:i + tp]]
        touched = set(held)
        if len(touched) > 1 and (any(held.count(s) != size[s] for s in touched)
                                 or len({size[s] for s in touched}) > 1):
            return "tp-straddles-servers"
    group = tp * dp
    if any(len({kind for _, kind in gpus[r * group:(r + 1) * group]}) > 1 for r in range(pp)):
        return "stage-mixes-gpu-types"
    return None


def test_servers_of_different_gpu_counts_load_and_lay_out_by_hand(tmp_path):
    names = ["h100x8", "a100x4", "a100x4"]
    cluster = load_gpu_cluster(write(tmp_path, names))
    assert cluster.gpus == 16 and cluster.sizes == (8, 4, 4) and cluster.heterogeneous
    checked = set()
    for n in (4, 8, 12, 16):
        for tp, pp, dp in factorizations(n):
            par = Parallelism(tp, pp, dp, 48)
            assert cluster.problem(par) == layout_problem(names, tp, pp, dp), (tp, pp, dp)
            checked.add(cluster.problem(par))
            machines = cluster.rank_machines(par)
            if machines is None:
                continue
            for r, machine in enumerate(machines):  # DP over NVLink exactly when the rank's DP group is in one server
                members = {layout_server for layout_server, _ in
                           [(s, 0) for s, name in enumerate(names) for _ in range(SERVERS[name][1])]
                           [r * tp * dp:(r + 1) * tp * dp:tp]}
                assert (machine.links.dp.name == "infiniband") == (len(members) > 1), (tp, pp, dp, r)
    assert checked == {None, "tp-straddles-servers", "stage-mixes-gpu-types"}
    # the first 12 GPUs: 8 H100 and 4 A100 40 GB at AWS's list prices per GPU-hour
    assert dollars_per_hour(cluster, 12) == pytest.approx(8 * 98.32 / 8 + 4 * 32.7726 / 8)


def test_search_keeps_only_what_lays_out_and_refuses_the_rest_with_the_reason(tmp_path):
    names = ["h100x8", "a100x4", "a100x4"]
    cluster = load_gpu_cluster(write(tmp_path, names))
    from archsim.workload.model_files import load_transformer

    model = tmp_path / "m.toml"
    model.write_text(MODEL)
    c = load_transformer(model)
    result = search(c, cluster, 64, micro_batches=(1,), recomputes=("full",), schedules=("1f1b",),
                    sequence_parallel=(False,), top=10**6, refine=0)
    kept = {(r["tp"], r["pp"], r["dp"]) for r in result.rows}
    want = {k for k in factorizations(16) if c.layers % k[1] == 0 and c.heads % k[0] == 0
            and layout_problem(names, *k) is None}
    # TP 8 PP 2: the second rank's TP group is both 4-GPU A100 servers, across the network
    assert kept == want and (1, 2, 8) in kept and (8, 2, 1) in kept and (16, 1, 1) not in kept
    assert result.rejected["stage-mixes-gpu-types"] > 0  # (TP 16 straddles, but 8 heads refuse it first)
    spans = {(r["tp"], r["pp"], r["dp"]): r["tp_spans_servers"] for r in result.rows}
    assert spans[(8, 2, 1)] and not spans[(4, 2, 2)]


def test_the_shipped_cluster_of_different_gpu_counts(capsys):
    from test_docs import ROOT

    path = ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml"
    cluster = load_gpu_cluster(path)
    assert cluster.sizes == (8, 4, 4)
    assert cluster.problem(Parallelism(8, 2, 1, 8)) is None  # rank 1's TP group: both A100 servers
    assert cluster.tp_servers(Parallelism(8, 2, 1, 8)) == 2
    assert cluster.problem(Parallelism(16, 1, 1, 8)) == "tp-straddles-servers"  # servers of 8 and 4
    assert cluster.problem(Parallelism(4, 2, 2, 8)) is None
    base = ["train", str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"), "--cluster", str(path),
            "--global-batch", "16"]
    assert main([*base, "--tp", "4", "--dp", "4"]) == 2  # one rank over H100 and A100: refused, with why
    assert "different types" in capsys.readouterr().err


def test_distinct_server_orders_are_the_distinct_permutations(tmp_path):
    names = ["a100x2", "h100x2", "a100x2", "v100x2"]
    cluster = load_gpu_cluster(write(tmp_path, names))
    orders = server_orders(cluster)
    assert orders[0] == (0, 1, 2, 3)  # the file's first: ties keep it
    kinds = [tuple(names[s] for s in order) for order in orders]
    assert sorted(kinds) == sorted(set(itertools.permutations(names))) and len(orders) == order_count(cluster) == 12
    many = load_gpu_cluster(write(tmp_path, ["a100x2"] * 8, "many.toml"))
    assert order_count(many) == 1 and server_orders(many) == [tuple(range(8))]
    priced = cluster_text(["a100x2"] * 8).replace('gpu = "a100-40gb"\n', "")
    priced = "".join(part + (f'gpu = "a100-40gb"\nprice_per_gpu_hour = {k + 1}\n' if k < 8 else "")
                     for k, part in enumerate(priced.split('intra_server_gbps = 4800\n')))
    priced = priced.replace("gpus = 2\n", "gpus = 2\nintra_server_gbps = 4800\n")
    (tmp_path / "priced.toml").write_text(priced)
    distinct = load_gpu_cluster(tmp_path / "priced.toml")  # eight servers that differ by price
    assert order_count(distinct) == math.factorial(8)
    with pytest.raises(InputError, match="server order"):
        server_orders(distinct)
    assert parse_placement("3,2,1,0", cluster) == (3, 2, 1, 0)
    for bad in ("0,0,1,2", "0,1,2", "x"):
        with pytest.raises(InputError):
            parse_placement(bad, cluster)


def _train_seconds(args) -> float | None:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--format", "json"])
    if code:
        return None
    meta = json.loads(out.getvalue())["meta"]
    return meta["iteration_seconds"] if meta["fits_memory"] else None


@pytest.mark.long
@pytest.mark.parametrize("names", [["h100x2", "a100x2", "v100x2"],  # four servers, two alike: 24 files, 12 orders
                                   pytest.param(["v100x2", "a100-80x2", "h100x2", "a100-80x2"], marks=pytest.mark.slow)])
def test_planned_placement_is_the_best_permutation_by_brute_force(tmp_path, names):
    """Every permutation of the servers written as its own cluster file and timed by archsim train
    (1F1B, planned split); the search's row for each configuration (re-timed in the event simulator,
    as train times) takes the fastest of them, and its ``--placement`` reproduces it; train's planned
    placement finds it too."""
    model = tmp_path / "m.toml"
    model.write_text(MODEL)
    file = write(tmp_path, names)
    gpus = 2 * len(names)
    rows = json.loads(_run(["search", str(model), "--cluster", str(file), "--global-batch", "16", "--schedule",
                            "1f1b", "--recompute", "none", "--max-micro-batch", "2", "--sequence-parallel", "off",
                            "--balance", "planned", "--placement", "planned", "--refine", "1000", "--top", "1000"]))
    got = {(r["tp"], r["pp"], r["dp"], r["micro_batch"]): r for r in rows["rows"]}
    gained = False
    for tp, pp, dp in factorizations(gpus):
        if pp == 1 or tp > 2:
            continue
        for b in (1, 2):
            settings = ["--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--micro-batch", str(b), "--global-batch",
                        "16", "--schedule", "1f1b", "--recompute", "none", "--balance", "planned"]
            times = []
            for k, perm in enumerate(itertools.permutations(range(len(names)))):
                if layout_problem([names[s] for s in perm], tp, pp, dp):
                    continue
                path = write(tmp_path, [names[s] for s in perm], f"perm{k}.toml")
                seconds = _train_seconds(["train", str(model), "--cluster", str(path), *settings])
                if seconds is not None:
                    times.append((seconds, perm))
            row = got.get((tp, pp, dp, b))
            if not times:
                assert row is None
                continue
            best = min(t for t, _ in times)
            assert row["iteration_seconds"] == pytest.approx(best, rel=1e-9), (tp, pp, dp, b)
            again = _train_seconds(["train", str(model), "--cluster", str(file), *settings,
                                    "--placement", row["placement"]])
            assert again == pytest.approx(best, rel=1e-9)
            planned = _train_seconds(["train", str(model), "--cluster", str(file), *settings, "--placement", "planned"])
            assert planned == pytest.approx(best, rel=1e-9)
            file_time = next((t for t, perm in times if perm == tuple(range(len(names)))), None)
            if file_time is not None:
                assert row["placement_gain"] == pytest.approx(1 - best / file_time, abs=1e-9)
                gained |= best < file_time * (1 - 1e-6)
    assert gained  # somewhere the file's order is not the best


def _run(args) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "--format", "json"]) == 0
    return out.getvalue()


def test_placement_planned_on_a_uniform_cluster_changes_nothing(tmp_path):
    model = tmp_path / "m.toml"
    model.write_text(MODEL)
    file = write(tmp_path, ["a100x2"] * 2)
    base = ["search", str(model), "--cluster", str(file), "--global-batch", "8", "--schedule", "1f1b", "zb-h1",
            "--refine", "2"]
    plain = json.loads(_run(base))["rows"]
    placed = json.loads(_run([*base, "--placement", "planned"]))["rows"]
    assert [r["iteration_seconds"] for r in placed] == [r["iteration_seconds"] for r in plain]
    assert {r["placement"] for r in placed} == {"0,1"} and {r["placement_gain"] for r in placed} == {0.0}
    assert "placement" not in plain[0]
