"""``--fp8-param-gather`` (Megatron-LM's fp8 parameters: the linear layers' weights held in fp8 and all-gathered
in fp8 by the distributed optimizer, archsim/training/fp8_memory.py): the bytes per parameter and the all-gather's
bytes by hand count, the refusals Megatron-LM makes (one line), the library's keyword giving the flag's numbers,
and search's rows saying how to run it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from api_parity_helpers import cli_error, cli_json
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.collectives import collective_seconds
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.fitted import A100_KERNELS
from archsim.training.fp8_scaling import weight_cast_seconds
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

H100_NODE = "configs/clusters/h100_2_servers.toml"
SMALL = "configs/transformers/gpt_1024h_24l.json"
BASE = ["train", SMALL, "--cluster", H100_NODE, "--global-batch", "8", "--dtype", "bf16", "--fp8", "hybrid"]
SUPERPOD = "configs/clusters/dgx_h100_superpod.toml"

# Llama 3.1 8B's weights TE runs in fp8, by hand: 32 layers of QKV (4096 × (4096 + 2 · 8 kv heads · 128)),
# the projection (4096 × 4096) and SwiGLU's three (3 · 4096 × 14336); all its parameters, 8,030,261,248 (Meta)
LLAMA_8B_FP8 = 32 * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336)
LLAMA_8B = 8_030_261_248


def test_llama_8b_in_hand_counts(monkeypatch):
    """NVIDIA's 8B check (CP 2, DP 4, the distributed optimizer, bf16 beside fp8): fp8 parameters hold each fp8
    weight in 1 byte and its transpose in 1, in place of the 16-bit weight (2) and TE's cached fp8 copy (2): 2 bytes
    a weight less on every GPU, 13 GiB in all. The all-gather after the step moves those weights in 1 byte, the
    rest (embedding, LM head, norms) in 2, over the 8 ranks of DP × CP."""
    monkeypatch.chdir(ROOT)
    assert LLAMA_8B_FP8 == 6_979_321_856 and 2 * LLAMA_8B_FP8 == 13 * 2**30
    c = load_transformer("configs/transformers/llama3_8b.toml")
    machines = load_gpu_cluster(SUPERPOD, "bf16").laid_out(par := Parallelism(
        cp=2, dp=4, global_batch=128, recompute="none", attention="flash", distributed_optimizer=True, fp8="hybrid"))
    cached, gathered = (train(c, p, machines[0], machines) for p in (par, replace(par, fp8_param_gather=True)))
    assert cached.memory[0].parameters == gathered.memory[0].parameters == LLAMA_8B
    assert cached.memory[0].states - gathered.memory[0].states == 2 * LLAMA_8B_FP8
    assert cached.memory[0].activations == gathered.memory[0].activations
    link = machines[0].links.dp
    assert cached.post[0]["dp_allgather"] == pytest.approx(collective_seconds("all-gather", 2 * LLAMA_8B, 8, link),
                                                           rel=1e-12)
    assert gathered.post[0]["dp_allgather"] == pytest.approx(
        collective_seconds("all-gather", 2 * (LLAMA_8B - LLAMA_8B_FP8) + LLAMA_8B_FP8, 8, link), rel=1e-12)
    assert gathered.post[0]["dp_reduce_scatter"] == cached.post[0]["dp_reduce_scatter"]  # fp32 gradients still


def test_a_mixtures_experts_apart_are_gathered_in_fp8_over_their_own_group():
    """A 2-layer mixture (hidden 64, 4 heads of 16 and 2 kv heads, 4 experts of SwiGLU 128, untied 256-token tables)
    at DP 4, EP 2: a rank holds 2 experts a layer, 2 · 2 · 3 · 64 · 128 = 98,304 weights, all fp8, gathered over
    their expert-DP group of 2; the rest, 58,176 (2 layers of QKV 64 × 128, projection 64 × 64, two norms of 64 and
    the router 64 × 4; the two tables 256 × 64 and the final norm), over DP 4, the QKV and projection (24,576) in fp8."""
    c = TransformerConfig("tiny-moe", "llama", 2, 64, 4, 256, 32, 128, 2, False, experts=4, experts_per_token=2,
                          expert_ffn=128)
    experts = 2 * 2 * 3 * 64 * 128
    dense = 2 * (64 * 128 + 64 * 64 + 2 * 64 + 64 * 4) + 2 * 256 * 64 + 64
    dense_fp8 = 2 * (64 * 128 + 64 * 64)
    par = Parallelism(dp=4, ep=2, global_batch=4, fp8="hybrid", distributed_optimizer=True)
    machines = replace(single_node("h100-80gb-sxm", 4), dtype="bf16").laid_out(par)
    cached, gathered = (train(c, p, machines[0], machines) for p in (par, replace(par, fp8_param_gather=True)))
    assert cached.memory[0].parameters == experts + dense == 156_480
    links = machines[0].links
    assert cached.post[0]["dp_allgather"] == pytest.approx(
        collective_seconds("all-gather", 2 * dense, 4, links.dp)
        + collective_seconds("all-gather", 2 * experts, 2, links.expert_dp), rel=1e-12)
    assert gathered.post[0]["dp_allgather"] == pytest.approx(
        collective_seconds("all-gather", 2 * (dense - dense_fp8) + dense_fp8, 4, links.dp)
        + collective_seconds("all-gather", experts, 2, links.expert_dp), rel=1e-12)
    assert cached.memory[0].states - gathered.memory[0].states == 2 * (experts + dense_fp8)


def test_the_steps_cast_in_hand_counts():
    """Two ranks of DP, 2 layers: fp8 parameters are cast by the step from the fp32 main weights on each rank's
    half (read 4, write 1 bytes a weight) and transposed whole once gathered (read 1, write 1), one kernel a GEMM;
    without them the 16-bit weight is cast and transposed whole (read 2, write 2)."""
    c = TransformerConfig("tiny-llama", "llama", 2, 64, 4, 256, 32, 128, 2, False)
    weights = 2 * (64 * 128 + 64 * 64 + 3 * 64 * 128)  # two layers of QKV, projection, SwiGLU
    par = Parallelism(dp=2, global_batch=2, fp8="hybrid", distributed_optimizer=True)
    machine = replace(single_node("h100-80gb-sxm", 2), dtype="bf16").machine(par)
    hbm, k = 3350e9 * A100_KERNELS.memory, A100_KERNELS.launch_s
    assert weight_cast_seconds(c, par, machine, 0) == pytest.approx(4 * weights / hbm + 8 * k, rel=1e-12)
    assert weight_cast_seconds(c, replace(par, fp8_param_gather=True), machine, 0) == pytest.approx(
        (5 * weights / 2 + 2 * weights) / hbm + 8 * k, rel=1e-12)


@pytest.mark.parametrize(("flags", "said"), [
    (["--distributed-optimizer"], ("argument --fp8-param-gather: --fp8-param-gather keeps the fp8 weights of --fp8: "
                                  "give it too")),
    (["--fp8", "hybrid"], ("argument --fp8-param-gather: --fp8-param-gather needs --distributed-optimizer (Megatron-LM "
                          "refuses it otherwise")),
    (["--fp8", "hybrid", "--dp", "2", "--fsdp"], "--fp8-param-gather needs --distributed-optimizer"),
])
def test_megatrons_refusals_in_one_line(flags, said, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    error = cli_error(["train", SMALL, "--cluster", H100_NODE, "--global-batch", "8", "--dtype", "bf16", *flags,
                       "--fp8-param-gather"], capsys)
    assert said in error and "\n" not in error
    search = cli_error(["search", SMALL, "--cluster", H100_NODE, "--global-batch", "8", "--gpus", "2", "--dtype",
                        "bf16", *(f for f in flags if f not in ("--dp", "2")), "--fp8-param-gather"], capsys)
    assert said in search and "\n" not in search
    with pytest.raises(InputError, match="fp8_param_gather"):
        archsim.train(SMALL, cluster=H100_NODE, global_batch=8, dtype="bf16", fp8_param_gather="yes")


@pytest.mark.filterwarnings("ignore:this layout uses 2 of the cluster's 16 GPUs")
def test_the_librarys_keyword_gives_the_flags_numbers(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    meta = cli_json([*BASE, "--dp", "2", "--distributed-optimizer", "--fp8-param-gather"], capsys)["meta"]
    result, rates = archsim.train(SMALL, cluster=H100_NODE, global_batch=8, dtype="bf16", dp=2, fp8="hybrid",
                                  distributed_optimizer=True, fp8_param_gather=True)
    assert (result.iteration_seconds, result.peak_memory_gib, rates.mfu) == (
        meta["iteration_seconds"], meta["peak_memory_gib"], meta["mfu"])
    assert meta["fp8_param_gather"] is True
    cached = cli_json([*BASE, "--dp", "2", "--distributed-optimizer"], capsys)["meta"]
    assert "fp8_param_gather" not in cached and cached["peak_memory_gib"] > meta["peak_memory_gib"]


def test_search_rows_say_how_to_run_it(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    flags = ["--global-batch", "16", "--top", "2", "--schedule", "1f1b", "--max-micro-batch", "2", "--refine", "0",
             "--gpus", "8", "--dtype", "bf16", "--fp8", "hybrid", "--distributed-optimizer", "--fp8-param-gather"]
    row = cli_json(["search", SMALL, "--cluster", H100_NODE, *flags], capsys)["rows"][0]
    assert row["fp8_param_gather"] is True and "--fp8-format hybrid --fp8-param-gather" in row["megatron_args"]
    assert " --fp8 hybrid --fp8-param-gather" in row["command"]
    again = cli_json(row["command"].split()[1:], capsys)["meta"]
    assert again["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-9)
    assert again["peak_memory_gib"] == pytest.approx(row["peak_memory_gib"], rel=1e-9)
    listed = archsim.search(SMALL, cluster=H100_NODE, global_batch=16, top=2, schedule="1f1b", max_micro_batch=2,
                            refine=0, gpus=8, dtype="bf16", fp8="hybrid", distributed_optimizer=True,
                            fp8_param_gather=True)
    assert listed.rows[0]["iteration_seconds"] == row["iteration_seconds"]


@pytest.mark.filterwarnings("ignore:this layout uses 2 of the cluster's 16 GPUs")
def test_search_meta_names_fp8_param_gather_as_trains(capsys, monkeypatch):
    """The search planned with fp8 parameter all-gathers but its meta (and the table's header) named only ``fp8``:
    now it carries ``fp8_param_gather`` as train's meta does — the same key and value beside ``fp8``, only when set —
    in the JSON, the table's header and the library's document alike."""
    monkeypatch.chdir(ROOT)
    flags = ["--global-batch", "8", "--top", "1", "--schedule", "1f1b", "--max-micro-batch", "2", "--refine", "0",
             "--gpus", "2", "--dtype", "bf16", "--fp8", "hybrid", "--distributed-optimizer"]
    train_meta = cli_json([*BASE, "--dp", "2", "--distributed-optimizer", "--fp8-param-gather"], capsys)["meta"]
    meta = cli_json(["search", SMALL, "--cluster", H100_NODE, *flags, "--fp8-param-gather"], capsys)["meta"]
    assert meta["fp8_param_gather"] is True and meta["fp8_param_gather"] == train_meta["fp8_param_gather"]
    assert list(meta).index("fp8_param_gather") == list(meta).index("fp8") + 1
    assert "fp8_param_gather" not in cli_json(["search", SMALL, "--cluster", H100_NODE, *flags], capsys)["meta"]
    capsys.readouterr()
    assert main(["search", SMALL, "--cluster", H100_NODE, *flags, "--fp8-param-gather"]) == 0
    header = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# fp8")]
    assert header == ["# fp8: hybrid", "# fp8_param_gather: True"]
    document = archsim.search(SMALL, cluster=H100_NODE, global_batch=8, top=1, schedule="1f1b", max_micro_batch=2,
                              refine=0, gpus=2, dtype="bf16", fp8="hybrid", distributed_optimizer=True,
                              fp8_param_gather=True).to_dict()
    assert document["meta"]["fp8_param_gather"] is True
