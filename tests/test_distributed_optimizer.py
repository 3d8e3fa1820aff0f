"""Megatron-LM's distributed optimizer (``--distributed-optimizer``, ZeRO-1) against independent references:
Megatron-LM's own bytes-per-parameter table (``docs/api-guide/dist_optimizer.md``: fp16 20 → 4 + 16/d, bf16
with fp32 gradients 18 → 6 + 12/d, fp32 16 → 8 + 8/d), the ring collectives' α–β formulas written out by hand
(NCCL's ring all-reduce is a reduce-scatter then an all-gather), the step's bytes over HBM by hand, and a search
whose row appears only with sharded states, its memory counted by hand from Korthikanti et al.'s table. Every
test here failed before the option existed (no keyword, no flag, no ``shards``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import LinkClass, Spanning
from archsim.errors import InputError
from archsim.training.dp_overlap import distributed_sync_seconds, dp_allreduce_seconds
from archsim.training.memory import state_bytes
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
GPT3 = ROOT / "configs" / "transformers" / "gpt3_175b.toml"
A100S = ROOT / "configs" / "clusters" / "a100_384_servers.toml"

# Megatron-LM docs/api-guide/dist_optimizer.md: bytes per parameter, (non-distributed, (constant, sharded)) by dtype
MEGATRON_TABLE = {"fp16": (20, (4, 16)), "bf16": (18, (6, 12)), "fp32": (16, (8, 8))}


@pytest.mark.parametrize("dtype", sorted(MEGATRON_TABLE))
@pytest.mark.parametrize("d", [1, 2, 8, 64])
def test_state_bytes_are_megatrons_table(dtype, d):
    whole, (kept, sharded) = MEGATRON_TABLE[dtype]
    assert state_bytes(dtype, shards=d) == pytest.approx(kept + sharded / d, rel=1e-15)
    assert state_bytes(dtype) == whole  # the table's first column: d = 1 is today's figure
    assert kept + sharded == whole


def test_optimizer_shards_are_dp_only_with_the_option():
    par = Parallelism(8, 8, 16, 1536, 1)
    assert par.optimizer_shards == 1
    assert Parallelism(8, 8, 16, 1536, 1, distributed_optimizer=True).optimizer_shards == 16
    with pytest.raises(InputError, match="True or False"):
        Parallelism(1, 1, 2, 2, 1, distributed_optimizer="false")  # type: ignore[arg-type]


def test_gpt3_175b_states_drop_by_the_tables_factor():
    """TP 8 × PP 8 × DP 16 on 1,024 A100s (Narayanan et al. 2021's layout): every rank's model states fall by
    (4 + 16/16) / 20 = 1/4 in fp16, its parameters and activations unchanged."""
    keys = {"cluster": str(A100S), "tp": 8, "pp": 8, "dp": 16, "global_batch": 1536, "micro_batch": 1, "recompute": "full"}
    with pytest.warns(UserWarning):
        off, _ = archsim.train(str(GPT3), **keys)
    with pytest.warns(UserWarning):
        on, _ = archsim.train(str(GPT3), distributed_optimizer=True, **keys)
    for a, b in zip(off.memory, on.memory, strict=True):
        assert b.parameters == a.parameters
        assert b.activations == a.activations
        assert b.states == pytest.approx(a.states * (4 + 16 / 16) / 20, rel=1e-12)
    assert on.to_dict()["meta"]["distributed_optimizer"] is True
    assert "distributed_optimizer" not in off.to_dict()["meta"]  # today's document, key for key
    # the step on a 16th of the parameters; the DP time a reduce-scatter plus an all-gather
    assert set(on.post[0]) == {"dp_reduce_scatter", "embedding_allreduce", "optimizer", "dp_allgather"}
    assert on.breakdown["dp_communication"] == pytest.approx(on.post[0]["dp_reduce_scatter"]
                                                             + on.post[0]["dp_allgather"], rel=1e-12)


NVLINK = LinkClass("nvlink", 300e9, 0.8, 5e-6, 20e-6, copy_s_per_byte=1e-12)  # no NVLS: NCCL's ring or tree


def _ring(kind: str, s: float, n: int, link: LinkClass) -> float:
    """The module docstring's ring formulas, written out: all-reduce α₀ + 2(n − 1)α + γS + 2(n − 1)/n·S/(ηB);
    reduce-scatter or all-gather α₀ + (n − 1)α + γS/2 + (n − 1)/n·S/(ηB)."""
    bw = link.efficiency * link.bandwidth
    if kind == "all-reduce":
        return link.launch_s + 2 * (n - 1) * link.alpha_s + link.copy_s_per_byte * s + 2 * (n - 1) / n * s / bw
    return link.launch_s + (n - 1) * link.alpha_s + link.copy_s_per_byte * s / 2 + (n - 1) / n * s / bw


@pytest.mark.parametrize("n", [2, 4, 8])
def test_reduce_scatter_and_all_gather_are_the_ring_all_reduce_and_one_launch(n):
    """Equal widths (fp32 parameters and gradients): the distributed optimizer's two collectives cost the
    all-reduce's ring time and one more launch α₀; 10⁹ parameters × 4 bytes, where the ring beats the tree."""
    params = 1e9
    scatter, gather = distributed_sync_seconds(params, 4, 4, n, NVLINK)
    assert scatter == pytest.approx(_ring("reduce-scatter", 4 * params, n, NVLINK), rel=1e-12)
    assert gather == pytest.approx(_ring("all-gather", 4 * params, n, NVLINK), rel=1e-12)
    allreduce = dp_allreduce_seconds(params, 4, n, NVLINK)
    assert allreduce == pytest.approx(_ring("all-reduce", 4 * params, n, NVLINK), rel=1e-12)
    assert scatter + gather == pytest.approx(allreduce + NVLINK.launch_s, rel=1e-12)


def test_the_identity_holds_over_servers_too():
    """A DP group of 16 GPUs, 8 per server (NVLink inside, the NICs between): again one launch apart."""
    ib = LinkClass("ib", 25e9 * 8, 0.9, 8e-6, 30e-6)
    link = Spanning(NVLINK, ib, 8)
    scatter, gather = distributed_sync_seconds(2e9, 4, 4, 16, link)
    allreduce = dp_allreduce_seconds(2e9, 4, 16, link)
    assert scatter + gather == pytest.approx(allreduce + max(NVLINK.launch_s, ib.launch_s), rel=1e-12)


def test_bf16_reduces_fp32_gradients_and_gathers_bf16_parameters():
    """bf16: Megatron reduce-scatters its fp32 grad buffer (4 bytes) and all-gathers bf16 parameters (2)."""
    scatter, gather = distributed_sync_seconds(1e9, 4, 2, 8, NVLINK)
    assert scatter == pytest.approx(_ring("reduce-scatter", 4e9, 8, NVLINK), rel=1e-12)
    assert gather == pytest.approx(_ring("all-gather", 2e9, 8, NVLINK), rel=1e-12)
    assert distributed_sync_seconds(1e9, 4, 2, 1, NVLINK) == (0.0, 0.0)  # one rank: nothing to exchange


def test_bucketed_overlaps_the_reduce_scatters_and_gathers_after_the_step():
    """DP 8 and 10⁹ parameters: Megatron's buckets of max(40·10⁶, 8·10⁶) = 40·10⁶ parameters, 25 of them.
    Under a 1 s backward the reduce-scatters of 40·10⁶ × 4 bytes each are exposed as
    max(W/n + n·t_b − W, t_b); the 25 bucket all-gathers all run after the step."""
    n, window = 25, 1.0
    t_b = _ring("reduce-scatter", 40e6 * 4, 8, NVLINK)
    scatter, gather = distributed_sync_seconds(1e9, 4, 2, 8, NVLINK, "bucketed", window)
    assert scatter == pytest.approx(max(window / n + n * t_b - window, t_b), rel=1e-12)
    assert gather == pytest.approx(n * _ring("all-gather", 40e6 * 2, 8, NVLINK), rel=1e-12)


def test_the_step_moves_a_dp_th_of_the_bytes():
    """fp16 on an A100 80GB, GPT-3 175B's rank 0 of TP 8 × PP 8: Megatron's step moves 32 bytes per parameter
    (iteration.optimizer_step_bytes), four fused kernels; with DP 16 sharding, 32·P/16 bytes over HBM at the fit's
    memory fraction plus the same four launches — hand: bytes / (HBM × memory) + 4 × launch_s."""
    keys = {"cluster": str(A100S), "tp": 8, "pp": 8, "dp": 16, "global_batch": 1536, "micro_batch": 1}
    with pytest.warns(UserWarning):
        on, _ = archsim.train(str(GPT3), distributed_optimizer=True, **keys)
    from archsim.devices.gpu_lookup import gpu
    from archsim.training.fitted import A100_KERNELS

    hbm = gpu("a100-80gb").hbm_bytes_per_s
    for rank, memory in enumerate(on.memory):
        hand = 32 * memory.parameters / 16 / (hbm * A100_KERNELS.memory) + 4 * A100_KERNELS.launch_s
        assert on.post[rank]["optimizer"] == pytest.approx(hand, rel=1e-12)


def gpt_13b() -> TransformerConfig:
    """GPT-3 13B (Brown et al. 2020, Table 2.1): 40 layers, hidden 5,120, 40 heads, 2,048 tokens."""
    return TransformerConfig("gpt3-13b", "gpt", 40, 5120, 40, 50257, 2048, 4 * 5120, 40, positions=2048)


def hand_peak_bytes(states_per_parameter: float) -> float:
    """TP 2 × PP 1, micro-batch 1, full recompute, FlashAttention, fp16: one GPU's bytes by hand.
    Parameters: 40 layers of (12h² + 7h)/2 + 6h (Megatron's GPT layer, 12h² + 13h, split over TP but the
    two LayerNorms and the row-parallel biases, 6h), the token table padded to 50,432 (a multiple of 128 × 2)
    over 2, 2,048 learned positions, the final LayerNorm 2h. Activations (Korthikanti et al. 2022, Table 2;
    one micro-batch in flight): each layer's input 2sbh, one layer rematerialised with FlashAttention
    (sbh(10 + 24/t) + the fp32 log-sum-exp 4as·b/t) less its input, the checkpoint counted already (2sbh more
    until 2026-12-02: failed there), the embedding's dropout mask sbh and the logits 6·s·b·V/t; beside the rerun
    layer its FlashAttention backward's fp32 buffers (flash_api.cpp ``mha_bwd``: ``softmax_d``, s rows (a multiple
    of 128) × a/t heads, and ``dq_accum``, those × head dim 128; since 2026-12-03)."""
    h, s, a, t, layers, vocab = 5120, 2048, 40, 2, 40, 50432
    parameters = layers * ((12 * h * h + 7 * h) / t + 6 * h) + vocab // t * h + s * h + 2 * h
    activations = layers * 2 * s * h + s * h * (8 + 24 / t) + 4 * a * s / t + s * h + 6 * s * vocab / t
    activations += 4 * (s * a / t + s * a / t * 128)
    return states_per_parameter * parameters + activations


def test_search_finds_a_configuration_that_fits_only_with_sharded_states():
    """GPT-3 13B on 16 A100 80GB (two DGX A100 servers) at DP 8: TP 2 × PP 1 × DP 8 holds 6.43·10⁹
    parameters a GPU, 20 bytes each (120 GiB) without the distributed optimizer — refused out of memory —
    and 4 + 16/8 = 6 bytes each with it: the row appears, its peak memory the hand figure."""
    config = gpt_13b()
    assert config.drops_hidden
    assert hand_peak_bytes(20) / 2**30 > 80
    keys = {"cluster": str(A100S), "global_batch": 64, "gpus": 16, "recompute": "full", "schedule": "1f1b",
                "max_micro_batch": 1, "sequence_parallel": "off", "refine": 0, "top": 100}
    off = archsim.search(config, **keys)
    on = archsim.search(config, distributed_optimizer=True, **keys)

    def row(result):
        return next((r for r in result.rows if (r["tp"], r["pp"], r["dp"]) == (2, 1, 8)), None)

    assert row(off) is None and off.rejected["out-of-memory"] > 0
    found = row(on)
    assert found is not None and found["distributed_optimizer"] is True
    assert found["peak_memory_gib"] == pytest.approx(hand_peak_bytes(4 + 16 / 8) / 2**30, rel=1e-12)
    assert on.rejected.get("out-of-memory", 0) < off.rejected["out-of-memory"]
    assert "--distributed-optimizer" in found["command"]
    assert "--use-distributed-optimizer" in found["megatron_args"]
    assert all("distributed_optimizer" not in r for r in off.rows)  # today's rows, key for key


def test_the_search_row_command_reproduces_its_memory(capsys):
    """The row's ``archsim train`` line (with --distributed-optimizer) prints the row's peak memory."""
    config_path = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    result = archsim.search(str(config_path), cluster=str(A100S), global_batch=64, gpus=16, recompute="full",
                            schedule="1f1b", max_micro_batch=1, sequence_parallel="off", refine=0, top=3,
                            distributed_optimizer=True)
    first = result.rows[0]
    argv = first["command"].split()[2:]
    assert main(["train", *argv, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["distributed_optimizer"] is True
    assert meta["peak_memory_gib"] == pytest.approx(first["peak_memory_gib"], rel=1e-9)


def test_runs_column_and_sweep_axis(tmp_path, capsys):
    """A runs file's ``distributed_optimizer`` column shards that row only; ``--sweep distributed_optimizer=…``
    is an axis: the sharded row and point hold less, and the same as each other."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,distributed_optimizer\n1,1,4,1,8,false\n1,1,4,1,8,true\n",
                    encoding="utf-8")
    model, node = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"), str(ROOT / "configs" / "clusters" / "a100_node.toml")
    assert main(["train", model, "--cluster", node, "--runs", str(runs), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["distributed_optimizer"] for r in rows] == [False, True]
    assert rows[1]["peak_memory_gib"] < rows[0]["peak_memory_gib"]
    assert main(["train", model, "--cluster", node, "--dp", "4", "--global-batch", "8",
                 "--sweep", "distributed_optimizer=false,true", "--format", "json"]) == 0
    points = json.loads(capsys.readouterr().out)["rows"]
    assert [p["distributed_optimizer"] for p in points] == [False, True]
    assert points[0]["peak_memory_gib"] - rows[0]["peak_memory_gib"] == pytest.approx(0, abs=1e-9)
    assert points[1]["peak_memory_gib"] == pytest.approx(rows[1]["peak_memory_gib"], rel=1e-12)
    assert main(["train", model, "--cluster", node, "--runs", str(runs), "--distributed-optimizer"]) == 2
    assert "each row of the runs file sets its own" in capsys.readouterr().err


def test_refusals():
    model = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    node = ROOT / "configs" / "clusters" / "a100_node.toml"
    with pytest.raises(InputError, match="distributed_optimizer"):
        archsim.train(str(model), cluster=str(node), global_batch=8, distributed_optimizer="yes")
    with pytest.raises(InputError, match="distributed_optimizer"):
        archsim.search(str(model), cluster=str(node), global_batch=8, distributed_optimizer=1)
    with pytest.raises(InputError, match="Megatron-LM's"):
        archsim.train(str(model), cluster=str(node), global_batch=1, implementation="pytorch-eager",
                      distributed_optimizer=True)
    with pytest.raises(InputError, match="Megatron-LM's"):
        state_bytes("fp16", "pytorch-eager", shards=2)
    assert math.isclose(state_bytes("fp16", "pytorch-eager"), 18)


def test_array_devices_price_each_chips_step_on_its_shard():
    """On array chips the iteration's energy counts each chip's optimizer step as HBM reads of the bytes it
    moves (training.energy); sharded over DP 16, the 16 chips step 1/16 of the replicas' parameters each: the
    dynamic joules fall by 15/16 of the step's, P·32 bytes ÷ 2 bytes a word × the DRAM word's pJ, the rest
    (the micro-batches' ops) unchanged. Failed before: the step was priced whole on every chip."""
    from archsim.energy.table import access_energies
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.energy import device_array

    model = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    slice_ = ROOT / "configs" / "clusters" / "tpu_v4_like_slice.toml"
    keys = {"cluster": str(slice_), "dp": 16, "global_batch": 64, "recompute": "none", "dtype": "bf16"}
    off, _ = archsim.train(str(model), **keys)
    on, _ = archsim.train(str(model), distributed_optimizer=True, **keys)
    device = load_gpu_cluster(slice_, "bf16").servers[0]
    word_pj = access_energies(device_array(device, "bf16")).dram_read_pj
    replicas = off.memory[0].parameters * 16  # every chip holds the whole model (TP 1, PP 1)
    step = replicas * 34 / 2 * word_pj * 1e-12  # bf16's step: 34 bytes per parameter (iteration.optimizer_step_bytes)
    static_off = off.energy_static_j or 0.0
    static_on = on.energy_static_j or 0.0
    assert (off.energy_j - static_off) - (on.energy_j - static_on) == pytest.approx(step * 15 / 16, rel=1e-9)
