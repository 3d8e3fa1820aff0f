"""Context parallelism (``--cp``, Megatron-LM's ``--context-parallel-size``) against independent references:
the load-balanced split's causal pairs counted by brute force, the ring's bytes per step counted by hand from
Llama-3-8B's shape, the GEMM FLOPs per rank against one GPU's over TP·CP, and runs without the flag. Every test
here failed before the option existed (no ``cp`` keyword, flag or column, no
:mod:`archsim.training.context_parallel`)."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import LinkClass
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.context_parallel import flash_steps, rank_causal_pairs, ring_sends
from archsim.training.iteration import clear_model_cache, model_pieces
from archsim.training.layer_ops import block_work
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json"
H100 = ROOT / "configs" / "clusters" / "h100_2_servers.toml"


def _llama(seq: int):
    return load_transformer(str(LLAMA), seq=seq)


def _gemm_flops(ops: tuple[TrainingOp, ...]) -> int:
    return sum(2 * g.m * g.k * g.n * g.count for op in ops if not op.fused for g in op.gemms)


@pytest.mark.parametrize("cp", [1, 2, 4, 8])
def test_each_rank_holds_one_cp_th_of_the_causal_pairs_brute_force(cp):
    """Rank i holds chunks i and 2·CP − 1 − i of 2·CP: the (q, k ≤ q) pairs of its queries, counted one by one,
    are the whole sequence's over CP on every rank, and the flash steps it runs cover exactly those pairs."""
    s = 96
    n = s // (2 * cp)
    total = sum(q + 1 for q in range(s))
    for rank in range(cp):
        queries = [*range(rank * n, (rank + 1) * n), *range((2 * cp - 1 - rank) * n, (2 * cp - rank) * n)]
        pairs = sum(1 for q in queries for k in range(s) if k <= q)
        assert pairs * cp == total
        assert rank_causal_pairs(s, cp, rank) == pairs
    # the steps: a causal square over the rank's s/CP tokens, then unmasked L × L blocks (two per step)
    covered = sum(t * (t + 1) // 2 * h if causal else t * t * h for t, h, _, causal in flash_steps(s, 1, 1, cp, True))
    assert covered == total // cp


def test_ring_bytes_per_step_by_hand():
    """Llama-3-8B (8 KV heads of 128) at TP 2, sequence 32,768, CP 4: each step sends the K and V of 8,192
    tokens, 4 KV heads per TP rank, 2 bytes: 8192·4·128·2·2 = 16 MiB; three sends forward, the backward's four
    (K/V; K/V + dK/dV twice; dK/dV)."""
    c = _llama(32768)
    par = Parallelism(2, 1, 2, 2, cp=4, attention="flash")
    forward, backward = ring_sends(c, par)
    one = 8192 * 4 * 128 * 2 * 2
    assert one == 16 * 2**20
    assert forward == [one, one, one, 0.0]
    assert backward == [one, 2 * one, 2 * one, one]
    assert sum(1 for b in forward if b) == par.cp - 1


@pytest.mark.parametrize(("tp", "cp"), [(1, 2), (2, 2), (2, 4), (4, 8)])
def test_gemm_flops_per_rank_are_the_total_over_tp_cp(tp, cp):
    c = _llama(16384)
    whole = _gemm_flops(block_work(c, 1, 1, attention="flash", dtype="bf16").forward)
    mine = _gemm_flops(block_work(c, 1, tp, attention="flash", dtype="bf16", cp=cp).forward)
    assert mine * tp * cp == whole


def test_cp_1_leaves_every_figure_unchanged():
    """A run given ``cp=1`` is the run without the keyword, to the last bit (and its JSON the same but the new
    ``cp`` entry)."""
    keys = {"cluster": str(H100), "tp": 2, "dp": 8, "global_batch": 8, "seq": 8192, "dtype": "bf16"}
    before, rates = archsim.train(str(LLAMA), **keys)
    after, rates_after = archsim.train(str(LLAMA), cp=1, **keys)
    assert after.iteration_seconds == before.iteration_seconds
    assert after.breakdown == before.breakdown and "cp_communication" not in after.breakdown
    assert [m.total for m in after.memory] == [m.total for m in before.memory]
    assert rates_after.mfu == rates.mfu
    doc = after.to_dict()
    assert doc["meta"]["cp"] == 1 and "cp_comm" not in doc["meta"]


@pytest.mark.parametrize(("seq", "cp", "field"), [(32768, 3, "cp"), (1002, 2, "cp"), (1000, 8, "cp")])
def test_a_cp_that_does_not_split_the_sequence_in_2cp_chunks_is_refused(seq, cp, field):
    with pytest.raises(InputError) as err:
        archsim.train(str(LLAMA), cluster=str(H100), cp=cp, global_batch=1, seq=seq)
    assert err.value.where.field == field and "\n" not in str(err.value) and f"{2 * cp}" in str(err.value)


def test_cp_outside_flash_attention_and_the_cli_line_are_refused(capsys):
    with pytest.raises(InputError, match="flash"):
        archsim.train(str(LLAMA), cluster=str(H100), cp=2, global_batch=1, seq=8192, attention="standard")
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--cp", "3", "--global-batch", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim train: error:") and err.count("\n") == 1


def test_memory_falls_with_cp():
    """Weights unchanged, activations per rank over CP (plus the K/V received): the peak falls at every step."""
    peaks, weights = [], []
    for cp in (1, 2, 4, 8):
        result, _ = archsim.train(str(LLAMA), cluster=str(H100), tp=2, cp=cp, global_batch=1, seq=32768,
                                  dtype="bf16")
        peaks.append(result.peak_memory_gib)
        weights.append(result.memory[0].parameters)
    assert all(a > b for a, b in pairwise(peaks))
    assert len(set(weights)) == 1


@pytest.mark.parametrize("seq", [8192, 32768])
def test_more_cp_on_an_infinitely_fast_link_never_slows_the_compute(seq):
    """With the CP group's link free (no bandwidth or latency limit) nothing of the exchange is exposed (its sends
    last ~10⁻²⁴ s: what the attention loses beside them to NCCL's SMs is below 10⁻²⁰ s), and a rank's layer
    (forward, backward, recompute) per micro-batch never gets slower as CP doubles."""
    c = _llama(seq)
    cluster = load_gpu_cluster(str(H100), "bf16")
    free = LinkClass("free", 1e30, 1.0, 0.0, 0.0)
    clear_model_cache()
    seconds = []
    for cp in (1, 2, 4, 8):
        par = Parallelism(1, 1, 1, 1, cp=cp, attention="flash")
        machine = cluster.machine(par)
        machine = replace(machine, links=replace(machine.links, cp=free if cp > 1 else None,
                                                 cp_hop=free if cp > 1 else None))
        layer = model_pieces(c, par, machine)["layer"]
        assert layer.cp_forward < 1e-20 and layer.cp_backward < 1e-20
        seconds.append(layer.forward + layer.backward_input + layer.backward_weight + layer.recompute)
    assert all(a >= b for a, b in pairwise(seconds))


def test_dp_gradients_reduce_over_dp_times_cp():
    """CP ranks hold the same weights: TP 2 × CP 4 × DP 2 reduces its gradients over 8 ranks, as TP 2 × DP 8."""
    par = Parallelism(2, 1, 2, 2, cp=4, attention="flash", distributed_optimizer=True)
    assert par.replicas == 8 and par.optimizer_shards == 8 and par.gpus == 16
    cluster = load_gpu_cluster(str(H100), "bf16")
    c = _llama(8192)
    cp_run = train(c, par, cluster.machine(par))
    dp_par = Parallelism(2, 1, 8, 8, attention="flash", distributed_optimizer=True)
    dp_run = train(c, dp_par, cluster.machine(dp_par))
    assert cp_run.post[0]["dp_reduce_scatter"] == pytest.approx(dp_run.post[0]["dp_reduce_scatter"], rel=1e-12)


def test_a_search_row_with_cp_runs_through_train_to_the_same_seconds(capsys):
    result = archsim.search(str(LLAMA), cluster=str(H100), global_batch=4, seq=16384, dtype="bf16", cp=[2, 4],
                            top=3, schedule="1f1b", max_micro_batch=1, recompute="full", sequence_parallel="on")
    first = result.rows[0]
    assert first["cp"] in (2, 4) and f"--cp {first['cp']}" in first["command"]
    assert main(["train", *first["command"].split()[2:], "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["cp"] == first["cp"]
    assert meta["iteration_seconds"] == pytest.approx(first["iteration_seconds"], rel=1e-12)
    assert meta["peak_memory_gib"] == pytest.approx(first["peak_memory_gib"], rel=1e-12)


def test_a_runs_file_takes_a_cp_column(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,cp,micro_batch,global_batch,gpus\n2,1,2,4,1,2,16\n2,1,8,,1,8,16\n")
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--seq", "16384", "--dtype", "bf16", "--runs",
                 str(runs), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["cp"] for r in rows] == [4, 1]
    one, _ = archsim.train(str(LLAMA), cluster=str(H100), tp=2, dp=2, cp=4, global_batch=2, seq=16384, dtype="bf16")
    assert rows[0]["predicted_seconds"] == pytest.approx(one.iteration_seconds, rel=1e-12)


def test_all_gather_exchanges_k_v_and_dk_dv_whole_and_unhidden():
    """Llama 3's all-gather CP: the forward all-gathers K and V (each 32,768 tokens × 4 KV heads × 128 × 2 bytes =
    32 MiB whole at TP 2), the backward gathers them again and reduce-scatters dK and dV; none is hidden."""
    from archsim.collectives import collective_seconds

    c = _llama(32768)
    cluster = load_gpu_cluster(str(H100), "bf16")
    par = Parallelism(2, 1, 1, 1, cp=4, cp_comm="all_gather", attention="flash")
    machine = cluster.machine(par)
    layer = model_pieces(c, par, machine)["layer"]
    whole = 32768 * 4 * 128 * 2
    assert whole == 32 * 2**20
    gather = float(collective_seconds("all-gather", whole, 4, machine.links.cp))
    scatter = float(collective_seconds("reduce-scatter", whole, 4, machine.links.cp))
    assert layer.cp_forward == pytest.approx(2 * gather, rel=1e-12)
    assert layer.cp_backward == pytest.approx(2 * gather + 2 * scatter, rel=1e-12)
    with pytest.raises(InputError):
        Parallelism(2, 1, 1, 1, cp=4, cp_comm="a2a+p2p")  # without its levels (--cp-hierarchy A P): Megatron refuses


def test_p2p_exposes_only_what_a_step_s_send_outlasts_its_attention():
    """On a slow ring link (1 GB/s, no latency) each step costs the longer of its attention and its send: the
    exposed seconds are Σ max(0, bytes / 10⁹ − step), the bytes counted by hand (8,192 tokens · 4 KV heads · 128 ·
    2 tensors · 2 bytes forward; the backward's K/V, K/V + dK/dV, dK/dV), the steps the layer's own attention rows."""
    c = _llama(32768)
    cluster = load_gpu_cluster(str(H100), "bf16")
    par = Parallelism(2, 1, 1, 1, cp=4, attention="flash", recompute="none")
    machine = cluster.machine(par)
    slow = LinkClass("slow", 1e9, 1.0, 0.0, 0.0)
    machine = replace(machine, links=replace(machine.links, cp_hop=slow))
    clear_model_cache()
    layer = model_pieces(c, par, machine)["layer"]
    clear_model_cache()
    steps_f = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "F"]
    steps_b = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "D"][::-1]
    one = 8192 * 4 * 128 * 2 * 2
    sends_f, sends_b = [one, one, one, 0], [one, 2 * one, 2 * one, one]
    hand_f = sum(max(0.0, b / 1e9 - t) for b, t in zip(sends_f, steps_f, strict=True))
    hand_b = sum(max(0.0, b / 1e9 - t) for b, t in zip(sends_b, steps_b, strict=True))
    assert hand_f > 0 and hand_b > 0
    assert layer.cp_forward == pytest.approx(hand_f, rel=1e-12)
    assert layer.cp_backward == pytest.approx(hand_b, rel=1e-12)
