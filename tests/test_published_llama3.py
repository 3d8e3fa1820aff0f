"""Llama 3 405B's published H100 check (benchmarks/published_llama3.py): the shipped config against the
paper's Table 3, typed here from the paper (Dubey et al. 2024, arXiv 2407.21783), Table 4's rows and their
source, Meta's pipeline split counted by hand, and the 16,384-GPU cluster file that runs them."""

from __future__ import annotations

import json

import pytest
from benchmark_scripts import ROOT, load_benchmark

from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.workload.layer_parameters import layer_parameters
from archsim.workload.model_files import load_transformer

PAPER = load_benchmark("published_llama3")
H100_BF16_TFLOPS = 989.4  # NVIDIA H100 SXM datasheet, dense BF16 (1,979 with sparsity)


def test_config_is_the_papers_table_3():
    """Table 3, 405B column: 126 layers, model dimension 16,384, FFN 53,248, 128 heads, 8 key/value heads,
    SwiGLU; vocabulary "128,000" there (128K), 128,256 in the released config.json."""
    c = load_transformer(ROOT / "configs" / "transformers" / PAPER.LLAMA3_405B_CONFIG)
    assert (c.family, c.layers, c.hidden, c.ffn, c.heads, c.kv_heads) == ("llama", 126, 16384, 53248, 128, 8)
    assert c.vocab == 128256 and round(c.vocab, -3) == 128000
    assert c.seq == 8192 and not c.tied_embeddings
    assert c.mlp_activation == "silu"  # SwiGLU's gate


def test_config_has_405_billion_parameters_by_hand():
    """Per layer: q and o 16,384² each, k and v 16,384 × 8 × 128 each, gate, up and down 16,384 × 53,248 each,
    two RMSNorm weights; untied input and output embeddings 128,256 × 16,384 each; a final norm. 405.9B: the
    paper's "405B"."""
    h, kv, ffn, vocab = 16384, 8 * 128, 53248, 128256
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h
    total = 126 * per_layer + 2 * vocab * h + h
    c = load_transformer(ROOT / "configs" / "transformers" / PAPER.LLAMA3_405B_CONFIG)
    assert layer_parameters(c) == per_layer
    assert 405e9 <= total < 406e9


def test_table_4_rows_carry_their_source_and_add_up():
    """Each row names the paper and its table; TP × CP × PP × DP is the GPU count; batch per DP group × DP
    sequences of 8,192 tokens are Table 4's 16M tokens (2²⁴); the published MFU is the TFLOP/s over the
    H100's dense BF16 peak to within a point (43.5% → 43%, 40.4% → 41%: the paper rounds both)."""
    assert [(r.gpus, r.dp, r.batch_per_dp, r.tflops, r.mfu) for r in PAPER.LLAMA3_TABLE4] == [
        (8192, 64, 32, 430.0, 0.43), (16384, 128, 16, 400.0, 0.41)]
    for r in PAPER.LLAMA3_TABLE4:
        assert "2407.21783" in r.source and "Table 4" in r.source
        assert (r.tp, r.cp, r.pp, r.seq) == (8, 1, 16, 8192)
        assert r.tp * r.cp * r.pp * r.dp == r.gpus
        assert r.global_batch * r.seq == 2**24
        assert r.tflops / H100_BF16_TFLOPS == pytest.approx(r.mfu, abs=0.01)


@pytest.mark.parametrize(("chunks", "expected"), [
    (1, (7,) + (8,) * 14 + (7,)),  # 126 + 2 = 128 slots over 16 stages: 8 each, one layer fewer at either end
    (2, (3,) + (4,) * 30 + (3,)),
    (4, (1,) + (2,) * 62 + (1,)),
    (8, (0,) + (1,) * 126 + (0,)),  # the paper's words: the first chunk only the embedding, the last only the head
])
def test_meta_stage_split_by_hand(chunks, expected):
    split = PAPER.meta_stage_layers(126, 16, chunks)
    assert split == expected and sum(split) == 126


def test_meta_stage_split_refuses_an_uneven_one():
    with pytest.raises(ValueError, match="do not split evenly"):
        PAPER.meta_stage_layers(126, 16, 3)


def test_the_16384_gpu_cluster_loads_and_one_server_more_is_refused(tmp_path):
    """Table 4's largest run: 2,048 servers of 8 H100s, one 400 Gb/s NIC per GPU, pods of 384 servers at 1:7."""
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "llama3_h100_2048_servers.toml", "bf16")
    assert cluster.gpus == 16384
    assert cluster.network is not None
    assert (cluster.network.nics_per_server, cluster.network.nic_gbps) == (8, 400)
    assert (cluster.network.servers_per_leaf, cluster.network.oversubscription) == (384, 7.0)
    big = tmp_path / "big.toml"
    big.write_text('[cluster]\nname = "big"\ninter_server_gbps = 400\ninter_server_link = "per_gpu_pair"\n\n'
                   '[[servers]]\ncount = 2049\ngpus = 8\ngpu = "h100-80gb-sxm"\n', encoding="utf-8")
    with pytest.raises(InputError, match="more than 16384 GPUs"):
        load_gpu_cluster(big)


def test_table_4s_long_context_row_carries_its_source_and_adds_up():
    """Table 4's third row: TP 8 × CP 16 × PP 16 × DP 8 = 16,384 GPUs at sequence 131,072, 16 sequences per DP
    group (128 sequences: 2²⁴ tokens, the 8K rows' 16M), 380 TFLOP/s per GPU, BF16 MFU 38% (380 / 989.4 = 38.4%)."""
    r = PAPER.LLAMA3_TABLE4_LONG
    assert (r.gpus, r.tp, r.cp, r.pp, r.dp, r.seq, r.batch_per_dp, r.tflops, r.mfu) == (
        16384, 8, 16, 16, 8, 131072, 16, 380.0, 0.38)
    assert "2407.21783" in r.source and "Table 4" in r.source
    assert r.tp * r.cp * r.pp * r.dp == r.gpus
    assert r.global_batch * r.seq == 2**24
    assert r.tflops / H100_BF16_TFLOPS == pytest.approx(r.mfu, abs=0.005)
    assert r.seq % (2 * r.cp) == 0  # Megatron's load-balanced split: 2 × CP equal chunks


def test_the_causal_half_factor_by_hand():
    """The 405B at 131,072 tokens, by hand: model FLOPs 6 per parameter per token (126 layers' weights and the
    LM head, as Table 3's shapes give them) plus 12 · layers · 16,384 · s² per sequence for the whole square;
    counting the causal half, s(s + 1)/2, in its place scales them by 1 − share · (1 − (s + 1)/(2s))."""
    bench = load_benchmark("bench_llama3_throughput")
    h, kv, ffn, vocab, layers, s, b = 16384, 8 * 128, 53248, 128256, 126, 131072, 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h
    square = b * 12 * layers * h * s * s
    whole = b * s * 6 * (layers * per_layer + vocab * h) + square
    c = load_transformer(ROOT / "configs" / "transformers" / PAPER.LLAMA3_405B_CONFIG, seq=s)
    share, factor = bench.causal_half_factor(c, b)
    assert share == pytest.approx(square / whole, rel=1e-12)
    assert factor == pytest.approx(1 - square / whole * (1 - (s + 1) / (2 * s)), rel=1e-12)
    assert (round(share, 2), round(factor, 3)) == (0.57, 0.714)  # docs/training.md's figures


def test_the_benchmarks_long_context_row_is_the_documented_train_line(capsys):
    """bench_llama3_throughput's CP 16 row at V = 2 under all_gather is the `archsim train` line that
    docs/training.md ("Context parallelism") gives for it: the same layout, seconds and GiB."""
    from archsim.cli import main

    bench = load_benchmark("bench_llama3_throughput")
    (row,) = bench.llama3_long_rows(chunks=(2,), comms=("all_gather",))
    assert (row["gpus"], row["tp"], row["cp"], row["pp"], row["dp"], row["seq"], row["cp_comm"]) == (
        16384, 8, 16, 16, 8, 131072, "all_gather")
    split = ",".join(map(str, PAPER.meta_stage_layers(126, 16, 2)))
    assert main(["train", "llama3_405b", "--cluster", str(ROOT / "configs" / "clusters" / "llama3_h100_2048_servers.toml"),
                 "--tp", "8", "--pp", "16", "--dp", "8", "--cp", "16", "--cp-comm", "all_gather", "--seq", "131072",
                 "--global-batch", "128", "--micro-batch", "1", "--interleave", "2", "--stage-layers", split,
                 "--sequence-parallel", "--recompute", "none", "--attention", "flash", "--dtype", "bf16",
                 "--distributed-optimizer", "--dp-overlap", "bucketed", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)
    assert meta["peak_memory_gib"] == pytest.approx(row["peak_memory_gib"], rel=1e-12)
    assert meta["tflops_per_gpu"] == pytest.approx(row["tflops_per_gpu"], rel=1e-12)
