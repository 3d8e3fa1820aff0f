"""User trial 49: an LLM training-systems engineer beyond one server — 4 servers of 8 H100 SXM, NVSwitch with NVLS,
8 × 400 Gb/s NIC rails, a leaf–spine fabric of 2 servers per leaf at 2:1 oversubscription — trains a
Llama-3-8B-like model (GQA: 8 KV heads) at TP 8 · PP 2 · DP 2 in bf16 with FlashAttention and the distributed
optimizer, and checks the figures by hand: parameters, model FLOPs per token, tokens/s, MFU, the model states
per GPU and the DP and pipeline collectives on the rails by the ring formula. The references are hand counts and
datasheet figures, never the code's own output. The sweep test failed before its fix (its docstring says how)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main

MODEL = """[transformer]
family = "llama"
name = "llama3-8b-like"
layers = 32
hidden = 4096
heads = 32
kv_heads = 8
ffn = 14336
vocab = 128256
seq = 8192
"""

CLUSTER = """[cluster]
name = "h100_4x8_rails"

[network]
nics_per_server = 8
nic_gbps = 400
gpus_per_nic = 1
nvlink_domain = 8
switch_tiers = 2
servers_per_leaf = 2
oversubscription = {oversubscription}
nvls = true

[[servers]]
count = 4
gpus = 8
intra_server_gbps = 7200
gpu = "h100-80gb-sxm"
"""

# A GPT small enough that a sweep point takes milliseconds; 16 heads so that TP 16 (two servers) is a layout.
SMALL = """[transformer]
family = "gpt"
name = "small"
layers = 2
hidden = 256
heads = 16
vocab = 1024
seq = 128
"""

# Hand counts of the Llama-3-8B shape (Meta's model card: 8.03 B parameters).
L, H, HEADS, KV, FFN, V, S = 32, 4096, 32, 8, 14336, 128256, 8192
HEAD_DIM = H // HEADS
ATTENTION = H * H + 2 * H * KV * HEAD_DIM + H * H  # q, k, v (8 KV heads), o: no biases
MLP = 3 * H * FFN  # gate, up, down (SwiGLU)
NORMS = 2 * H  # two RMSNorm γ per layer
H100_BF16_PEAK = 989.4e12  # dense, H100 SXM datasheet (989 TFLOP/s; 1,979 with sparsity)
NIC_BYTES_PER_S = 400e9 / 8  # one 400 Gb/s rail per GPU
NCCL_NIC_SPEED = 48e9  # the channel speed NCCL's graph search takes for a 50 GB/s NDR NIC (speedArrayInter)


def _write(folder: Path, oversubscription: float = 2.0) -> tuple[str, str]:
    (folder / "llama3_8b.toml").write_text(MODEL)
    (folder / "cluster.toml").write_text(CLUSTER.format(oversubscription=oversubscription))
    return str(folder / "llama3_8b.toml"), str(folder / "cluster.toml")


def _train(folder: Path, capsys, *flags: str, oversubscription: float = 2.0) -> dict:
    model, cluster = _write(folder, oversubscription)
    capsys.readouterr()
    assert main(["train", model, "--cluster", cluster, "--dtype", "bf16", "--format", "json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


LAYOUT = ("--tp", "8", "--pp", "2", "--dp", "2", "--global-batch", "64", "--micro-batch", "1",
          "--attention", "flash", "--distributed-optimizer")


def test_llama3_8b_throughput_by_hand(tmp_path, capsys):
    """Parameters, tokens/s, model TFLOP/s per GPU and MFU against hand counts: model FLOPs per token are
    6 per weight (the layers' and the untied LM head's; the embedding lookup does none) plus attention's scores and
    context, 12·l·h·s per token (Narayanan et al. 2021's s/6h term of 72·B·s·l·h², the whole s × s square)."""
    meta = _train(tmp_path, capsys, *LAYOUT)["meta"]
    assert meta["parameters"] == L * (ATTENTION + MLP + NORMS) + 2 * V * H + H == 8_030_261_248
    seconds = meta["iteration_seconds"]
    tokens_per_s = 64 * S / seconds
    assert meta["tokens_per_second"] == pytest.approx(tokens_per_s, rel=1e-12)
    flops_per_token = 6 * (L * (ATTENTION + MLP) + V * H) + 12 * L * H * S  # 57.9 GFLOP
    per_gpu = flops_per_token * tokens_per_s / 32
    # the code's 6N counts the norms' γ too (0.26 M of 8.03 B parameters): 3 parts in 10⁵
    assert meta["tflops_per_gpu"] == pytest.approx(per_gpu / 1e12, rel=1e-4)
    assert meta["mfu"] == pytest.approx(per_gpu / H100_BF16_PEAK, rel=1e-4)


@pytest.mark.long
def test_llama3_8b_states_and_dp_collectives_by_hand(tmp_path, capsys):
    """Model states per GPU by Megatron-LM's bytes per parameter (bf16 with fp32 gradients, distributed optimizer:
    6 + 12/DP = 12 at DP 2) on a hand count of rank 0's parameters (16 layers split over TP 8, the RMSNorms
    replicated, the token table padded to a multiple of 128 × TP = 1024: 129,024 rows); the DP reduce-scatter (fp32
    gradients) and all-gather (bf16 parameters) by the ring formula (n − 1)/n · bytes over one GPU's rail at NCCL's
    48 GB/s, the model adding only latency (well under 0.1 ms); the all-reduce of the same run without the
    distributed optimizer by 2(n − 1)/n · bytes."""
    padded = -(-V // 1024) * 1024
    rank0 = 16 * ((ATTENTION + MLP) / 8 + NORMS) + padded * H / 8
    meta = _train(tmp_path, capsys, *LAYOUT)["meta"]
    first = meta["memory_per_rank"][0]
    assert first["parameters"] == rank0
    assert first["states_gib"] * 2**30 == pytest.approx(12 * rank0, rel=1e-12)
    after = meta["after_backward_seconds"][0]
    reduce_scatter = 0.5 * rank0 * 4 / NCCL_NIC_SPEED  # the DP group: one GPU in each of servers 0 and 1
    all_gather = 0.5 * rank0 * 2 / NCCL_NIC_SPEED
    assert 0 < after["dp_reduce_scatter"] - reduce_scatter < 1e-4
    assert 0 < after["dp_allgather"] - all_gather < 1e-4
    assert meta["inter_server"]["gb_per_s_per_gpu"] == NIC_BYTES_PER_S / 1e9
    plain = _train(tmp_path, capsys, *LAYOUT[:-1])["meta"]
    assert plain["memory_per_rank"][0]["states_gib"] * 2**30 == pytest.approx(18 * rank0, rel=1e-12)
    assert 0 < plain["after_backward_seconds"][0]["dp_allreduce"] - 2 * 0.5 * rank0 * 4 / NCCL_NIC_SPEED < 1e-4


def test_pipeline_hop_across_leaves_pays_the_oversubscription(tmp_path, capsys):
    """The hop between the two pipeline ranks (servers 0–1 and 2–3, under different leaves) sends one micro-batch's
    s·b·h bf16 activation over TP 8 (8 MiB a GPU) on its GPU's rail; at 2:1 its share halves, so the hop takes
    bytes / 24 GB/s instead of bytes / 48 GB/s: the difference, by hand, with the latency cancelling out."""
    hop_bytes = S * H * 2 // 8
    durations = []
    for oversubscription in (1.0, 2.0):
        trace = tmp_path / f"trace_{oversubscription}.json"
        _train(tmp_path, capsys, *LAYOUT, "--chrome-trace", str(trace), oversubscription=oversubscription)
        hops = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "comm"]
        assert hops and {e["args"]["bytes"] for e in hops} == {hop_bytes}
        durations.append(hops[0]["dur"] * 1e-6)  # the trace's µs, as seconds
    assert durations[1] - durations[0] == pytest.approx(hop_bytes / (NCCL_NIC_SPEED / 2) - hop_bytes / NCCL_NIC_SPEED,
                                                        rel=1e-9)


@pytest.mark.long
def test_search_rows_commands_reproduce_their_time(tmp_path, capsys):
    """Each ranked row's ``command`` run through ``archsim train`` gives the row's iteration time and memory."""
    model, cluster = _write(tmp_path)
    capsys.readouterr()
    assert main(["search", model, "--cluster", cluster, "--global-batch", "64", "--dtype", "bf16",
                 "--distributed-optimizer", "--top", "2", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 2
    for row in rows:
        argv = row["command"].split()
        assert argv[0] == "archsim"
        assert main([*argv[1:], "--format", "json"]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-9)
        assert meta["peak_memory_gib"] == pytest.approx(row["peak_memory_gib"], rel=1e-12)


def test_gqa_tp_beyond_the_kv_heads_is_refused_naming_them(tmp_path, capsys):
    """TP 16 divides Llama-3-8B's 32 query heads but not its 8 KV heads: one line naming the field and both counts."""
    model, cluster = _write(tmp_path)
    capsys.readouterr()
    assert main(["train", model, "--cluster", cluster, "--tp", "16", "--dp", "2", "--global-batch", "64",
                 "--dtype", "bf16"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "argument --tp:" in err and "key/value heads (8" in err


def test_unknown_network_key_is_named(tmp_path, capsys):
    """A misspelt ``[network]`` key (``oversubscribtion``) is refused, naming it, not read as the default 1."""
    model, cluster = _write(tmp_path)
    path = Path(cluster)
    path.write_text(path.read_text().replace("oversubscription", "oversubscribtion"))
    capsys.readouterr()
    assert main(["train", model, "--cluster", cluster, "--tp", "8", "--pp", "2", "--dp", "2",
                 "--global-batch", "64", "--dtype", "bf16"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'oversubscribtion'" in err and "[network]" in err


def test_sweep_warns_of_tp_groups_across_servers_as_train_does(tmp_path, capsys):
    """``train --sweep tp=8,16`` on 8-GPU servers: the TP 16 point's groups span two servers, which ``train`` of that
    point and a ``--runs`` row of it warn of on stderr (and ``search`` flags as ``tp_spans_servers``). Before the fix
    the sweep printed its row and no word of it."""
    (tmp_path / "small.toml").write_text(SMALL)
    _, cluster = _write(tmp_path)
    model = str(tmp_path / "small.toml")
    common = ["--cluster", cluster, "--global-batch", "8", "--dtype", "bf16", "--format", "csv"]
    capsys.readouterr()
    assert main(["train", model, *common, "--tp", "16"]) == 0
    alone = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert alone == ["archsim train: warning: a TP group spans 2 servers: its all-reduces cross the network"]
    assert main(["train", model, *common, "--sweep", "tp=8,16"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warned == [("archsim train: warning: 1 of the sweep's 2 points (tp 16 × pp 1 × dp 1): a TP group spans "
                      "2 servers: its all-reduces cross the network")]
    assert main(["train", model, *common, "--sweep", "tp=16", "--sequence-parallel"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warned == [("archsim train: warning: the sweep's one point (tp 16 × pp 1 × dp 1): a TP group spans 2 servers: "
                      "its all-gathers and reduce-scatters cross the network")]
    assert main(["train", model, *common, "--sweep", "tp=4,8"]) == 0  # inside one server: nothing to say
    assert "warning" not in capsys.readouterr().err


def test_search_meta_gpus_is_a_number_for_one_count(tmp_path, capsys):
    """``search --gpus 16`` names one count: the JSON meta's ``gpus`` is the integer 16, as it is the integer 32 (the
    cluster's GPUs) without the flag; several counts stay the flag's list, ``"8,16"``. Before the fix one count was
    the string ``"16"``, so a script's ``meta["gpus"]`` changed type with the flag."""
    (tmp_path / "small.toml").write_text(SMALL)
    _, cluster = _write(tmp_path)
    common = ["search", str(tmp_path / "small.toml"), "--cluster", cluster, "--global-batch", "8", "--top", "1",
              "--refine", "0", "--schedule", "1f1b", "--recompute", "full", "--format", "json"]
    metas = []
    for gpus in ([], ["--gpus", "16"], ["--gpus", "8", "16"]):
        capsys.readouterr()
        assert main([*common, *gpus]) == 0
        metas.append(json.loads(capsys.readouterr().out)["meta"]["gpus"])
    assert metas == [32, 16, "8,16"]
