"""archsim search: the pruning rules against a naive enumeration on tiny clusters, the memory it prunes
by against the event-simulated orders and Korthikanti et al.'s closed forms, its timing against
archsim train, and the command line."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

from archsim.cli import main
from archsim.policies.stage_orders import published_order
from archsim.training.calibrate import fast_iteration_seconds
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.held_memory import in_flight
from archsim.training.in_flight import in_flight_peaks
from archsim.training.parallel import V_SCHEDULES, Parallelism
from archsim.training.pipeline_memory import memories
from archsim.training.run import train
from archsim.training.search import search
from archsim.training.search_cost import Coster
from archsim.training.search_rows import RowContext, train_command
from archsim.training.search_space import (
    CHUNKED,
    Candidate,
    peak_memory_bytes,
    rank_memories,
)
from archsim.workload.transformer import TransformerConfig

TINY = TransformerConfig("tiny", "gpt", layers=6, hidden=96, heads=6, vocab=500, seq=64, ffn=384, kv_heads=6,
                         tied_embeddings=True, positions=64)
SCHEDULES = ("1f1b", "gpipe", "zb-h1", "zb-h2", "interleaved-1f1b", "interleaved-zb", "looped-bfs", "zb-v", "dualpipev")


def _order_memories(c, par):
    """archsim train's memory per rank: the published order's own placement (``rank_of_stage``) and
    in-flight counts read off the order."""
    order = published_order(par.schedule_name, par.pp, par.microbatches, par.chunks)
    return [m.total for m in memories(c, par, order)]


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe", "zb-h1", "zb-h2"])
def test_in_flight_closed_forms_equal_the_orders(schedule):
    for p, m in itertools.product(range(1, 7), range(1, 16)):
        assert in_flight_peaks(schedule, p, m) == in_flight(published_order(schedule, p, m)), (p, m)


@pytest.mark.parametrize("schedule", ["interleaved-1f1b", "interleaved-zb", "looped-bfs"])
def test_chunked_in_flight_closed_forms_equal_the_orders(schedule):
    for p, k, v in itertools.product(range(2, 6), range(1, 5), (2, 3, 4)):
        m = k * p
        assert in_flight_peaks(schedule, p, m, v) == in_flight(published_order(schedule, p, m, v)), (p, m, v)


def test_v_in_flight_equals_the_orders():
    for schedule, p in itertools.product(V_SCHEDULES, range(1, 6)):
        for m in range(2 * p if schedule == "dualpipev" else 1, 9 * p + 1):
            assert in_flight_peaks(schedule, p, m, 2) == in_flight(published_order(schedule, p, m)), (p, m)


def test_rank_memories_equal_the_orders_placement():
    c = replace(TINY, layers=12)
    for tp, pp, mb, rc, sched, v in itertools.product((1, 2), (2, 3), (1, 2), ("none", "selective", "full"),
                                                    SCHEDULES, (1, 2)):
        if (v > 1) != (sched in CHUNKED):
            continue
        par = Parallelism(tp, pp, 1, 6 * mb * pp, mb, rc, False, v, sched)
        expected = _order_memories(c, par)
        assert [m.total for m in rank_memories(c, par)] == pytest.approx(expected, rel=1e-12)
        assert peak_memory_bytes(c, par) == pytest.approx(max(expected), rel=1e-12)


def test_activation_memory_per_layer_follows_korthikanti():
    """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models") §4,
    Table 2, bytes per layer for s tokens, b sequences, h hidden, a heads, TP t: no recompute
    sbh(10 + 24/t + 5as/(ht)) (34sbh + 5as²b at t = 1); with sequence parallelism sbh/t(34 + 5as/h);
    selective sbh(10 + 24/t), with SP 34sbh/t; full 2sbh. One more layer per stage adds that many
    bytes per micro-batch in flight (here 1F1B with p = 1: one micro-batch)."""
    s, h, a = 64, 96, 6
    for t, b, sp in [(1, 1, False), (1, 4, False), (2, 2, False), (3, 1, False), (2, 2, True), (6, 3, True)]:
        sbh = s * b * h
        paper = {"none": sbh / t * (34 + 5 * a * s / h) if sp else sbh * (10 + 24 / t + 5 * a * s / (h * t)),
                 "selective": 34 * sbh / t if sp else sbh * (10 + 24 / t),
                 "full": 2 * sbh / t if sp else 2 * sbh}
        if t == 1:
            assert paper["none"] == pytest.approx(34 * sbh + 5 * a * s * s * b)
            assert paper["selective"] == pytest.approx(34 * sbh)
        for mode, per_layer in paper.items():
            act = [rank_memories(replace(TINY, layers=n), Parallelism(t, 1, 1, b, b, mode, sp))[0].activations
                   for n in (6, 12)]
            assert act[1] - act[0] == pytest.approx(6 * per_layer, rel=1e-12), (t, b, sp, mode)


def _tiny_cluster(tmp_path, servers: int, per_server: int, memory_bytes: float):
    """``servers`` A100 servers of ``per_server`` GPUs on 200 Gb/s InfiniBand, each GPU ``memory_bytes``."""
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "tiny"\ninter_server_gbps = 200\ninter_server_link = "per_gpu_pair"\n'
                    f'[[servers]]\ncount = {servers}\ngpus = {per_server}\nintra_server_gbps = 4800\n'
                    f'gpu = "a100-80gb"\n')
    cluster = load_gpu_cluster(path)
    return replace(cluster, gpu=replace(cluster.gpu, memory_bytes=memory_bytes))


def _naive_survivors(c, gpus, per_server, global_batch):
    """Every tuple in ranges wider than the search's kept by the rules as written in the issue → its
    peak memory with the published order's in-flight counts and placement."""
    out = {}
    for tp, pp, dp, mb, rc, sched, v, sp in itertools.product(
            range(1, gpus + 1), range(1, gpus + 1), range(1, gpus + 1), range(1, 5), ("none", "selective", "full"),
            SCHEDULES, (1, 2, 3), (False, True)):
        if tp * pp * dp != gpus or (v > 1) != (sched in CHUNKED):
            continue
        if c.heads % tp or c.ffn % tp or (per_server % tp and tp % per_server) or c.layers % (pp * (2 if sched in V_SCHEDULES else v)):
            continue
        if global_batch % (dp * mb):
            continue
        if (sp and tp == 1) or (pp == 1 and sched != "1f1b"):
            continue
        m = global_batch // (dp * mb)
        # Megatron-LM's interleaved 1F1B runs any m ≥ PP (its groups of micro-batches, since 2026-12-05); interleaved
        # ZB keeps rounds of PP micro-batches (docs/training.md)
        if ((sched == "interleaved-1f1b" and m < pp) or (sched == "interleaved-zb" and m % pp)
                or (sched == "dualpipev" and m < 2 * pp)):
            continue
        par = Parallelism(tp, pp, dp, global_batch, mb, rc, sp, v, sched)
        shown = 2 if sched in V_SCHEDULES else v  # a row shows the chunks per rank the schedule runs: two for V shapes
        out[(tp, pp, dp, mb, rc, sched, shown, sp)] = max(_order_memories(c, par))
    return out


@pytest.mark.long
@pytest.mark.parametrize("gpus, per_server, global_batch", [(4, 4, 8), (6, 2, 12)])
def test_pruning_equals_brute_force(tmp_path, gpus, per_server, global_batch):
    c = TINY
    valid = _naive_survivors(c, gpus, per_server, global_batch)
    capacity = sorted(valid.values())[len(valid) // 2]  # about half fit
    expected = {k for k, memory in valid.items() if memory <= capacity}
    assert 0 < len(expected) < len(valid)
    result = search(c, _tiny_cluster(tmp_path, gpus // per_server, per_server, capacity), global_batch, None, micro_batches=range(1, 5),
                    schedules=SCHEDULES, chunks=(2, 3), top=100000)
    got = {(r["tp"], r["pp"], r["dp"], r["micro_batch"], r["recompute"], r["schedule"], r["interleave"],
            r["sequence_parallel"]) for r in result.rows}
    assert result.rejected.get("out-of-memory", 0) > 0
    assert got == expected
    assert result.costed == len(expected) and sum(result.rejected.values()) + result.costed == result.enumerated


def test_rows_time_as_archsim_train_and_rank_best_first():
    c = replace(TINY, layers=12)
    cluster = single_node("a100-80gb", 8)
    result = search(c, cluster, 16, micro_batches=(1, 2), schedules=SCHEDULES, top=12, refine=12)
    seconds = [r["iteration_seconds"] for r in result.rows]
    assert seconds == sorted(seconds)
    for r in result.rows:
        par = Parallelism(r["tp"], r["pp"], r["dp"], 16, r["micro_batch"], r["recompute"], r["sequence_parallel"],
                          r["interleave"], r["schedule"])
        assert r["timing"] == "event" or r["schedule"] in ("1f1b", "gpipe")
        assert r["iteration_seconds"] == pytest.approx(train(c, par, cluster.machine(par)).iteration_seconds)
    closed = search(c, cluster, 16, micro_batches=(1, 2), schedules=("1f1b",), top=50)
    for r in closed.rows:  # 1F1B's closed form is the one searches are told to use
        par = Parallelism(r["tp"], r["pp"], r["dp"], 16, r["micro_batch"], r["recompute"], r["sequence_parallel"])
        assert r["iteration_seconds"] == pytest.approx(fast_iteration_seconds(c, par, cluster.machine(par)))


def test_search_command_json(tmp_path, capsys):
    model = tmp_path / "m.json"
    model.write_text(json.dumps({"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 8, "n_positions": 128,
                                 "vocab_size": 1000, "n_inner": 1024}))
    cluster = "configs/clusters/a100_node.toml"
    assert main(["search", str(model), "--cluster", cluster, "--global-batch", "16", "--top", "3",
                 "--schedule", "1f1b", "interleaved-1f1b", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["rows"]) == 3 and out["meta"]["costed"] >= 3
    best = out["rows"][0]
    for key in ("tp", "pp", "dp", "micro_batch", "recompute", "schedule", "iteration_seconds", "peak_memory_gib",
                "mfu"):
        assert key in best
    assert f"--tensor-model-parallel-size {best['tp']}" in best["megatron_args"]
    assert "--global-batch-size 16" in best["megatron_args"]
    assert best["command"] == train_command(str(model), cluster, best, RowContext(16))
    assert main(best["command"].split()[1:] + ["--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)["meta"]
    assert again["iteration_seconds"] == pytest.approx(best["iteration_seconds"])
    assert main(["search", str(model), "--cluster", cluster, "--global-batch", "16", "--gpus", "9"]) == 2
    assert "9 GPUs" in capsys.readouterr().err


def test_pareto_front_by_brute_force():
    c = replace(TINY, layers=12)
    result = search(c, single_node("a100-80gb", 8), 16, micro_batches=(1, 2, 4), schedules=SCHEDULES, top=100000)
    points = [(r["iteration_seconds"], r["peak_memory_gib"]) for r in result.rows]
    dominated = {p for p in points for q in points if q[0] <= p[0] and q[1] <= p[1] and q != p}
    expected = sorted(set(points) - dominated)
    assert sorted({(r["iteration_seconds"], r["peak_memory_gib"]) for r in result.pareto}) == expected


@pytest.mark.parametrize("schedule, v", [("zb-h1", 1), ("zb-h2", 1), ("interleaved-1f1b", 2), ("interleaved-zb", 2),
                                         ("looped-bfs", 2), ("zb-v", 1), ("dualpipev", 1)])
def test_closed_forms_near_the_event_simulator_in_steady_state(schedule, v):
    """The screening closed forms of the schedules other than 1F1B, with m ≥ 2p micro-batches, are
    within 10% of the event simulator (rows are re-timed there before they are shown)."""
    c = replace(TINY, layers=12)
    cluster = single_node("a100-80gb", 8)
    coster = Coster(c, cluster, 32)
    checked = 0
    for tp, pp, mb, rc in itertools.product((1, 2), (2, 3, 4), (1, 2), ("none", "full")):
        chunks = 2 if schedule in ("zb-v", "dualpipev") else v
        if 32 // mb < 2 * pp or c.layers % (pp * chunks) or (schedule.startswith("interleaved") and (32 // mb) % pp):
            continue
        par = Parallelism(tp, pp, 1, 32, mb, rc, False, v, schedule)
        k = Candidate(tp, pp, 1, mb, rc, schedule, v, False)
        event = train(c, par, cluster.machine(par)).iteration_seconds
        seconds, timing = coster.seconds(k)
        assert timing == "closed-form" and seconds == pytest.approx(event, rel=0.10), (tp, pp, mb, rc)
        checked += 1
    assert checked >= 8


def test_search_writes_the_best_schedule_as_torch_csv(tmp_path, capsys):
    from archsim.policies.torch_csv import parse_order_csv

    model = tmp_path / "m.json"
    model.write_text(json.dumps({"model_type": "gpt2", "n_layer": 8, "n_embd": 256, "n_head": 8, "n_positions": 128,
                                 "vocab_size": 1000, "n_inner": 1024}))
    out = tmp_path / "order.csv"
    assert main(["search", str(model), "--cluster", "configs/clusters/a100_node.toml", "--global-batch", "32",
                 "--gpus", "4", "--schedule", "zb-h1", "--top", "1", "--format", "json",
                 "--schedule-csv", str(out), "--gantt", str(tmp_path / "g.html")]) == 0
    best = json.loads(capsys.readouterr().out)["rows"][0]
    assert best["schedule"] == "zb-h1" and best["pp"] > 1
    order = parse_order_csv(out.read_text())
    expected = published_order("zb-h1", best["pp"], 32 // (best["dp"] * best["micro_batch"]))
    assert [list(map(str, r)) for r in order.ranks] == [list(map(str, r)) for r in expected.ranks]
    assert (tmp_path / "g.html").stat().st_size > 0
