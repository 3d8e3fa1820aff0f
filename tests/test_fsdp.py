"""PyTorch FSDP's full sharding (``--fsdp``, ZeRO-3) against independent references: the bytes per parameter
of FSDP's mixed precision (fp32 parameter shard, fp32 gradient, Adam's m and v: 16/d) plus the units in flight
(two units' parameters in the compute dtype, one unit's gradient) counted by hand from Megatron's GPT layer
(12h² + 13h) and Korthikanti et al.'s activations; the prefetch rule's exposed seconds worked out by hand on
small unit lists; and the ring collectives' α–β formulas written out. Every test here failed before the option
existed (no keyword, no flag, no ``full``, no :mod:`archsim.training.fsdp`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.collectives import LinkClass, collective_seconds
from archsim.errors import InputError
from archsim.training.fsdp import Unit, exposed_seconds, rank_units
from archsim.training.memory import fsdp_unit_bytes, state_bytes
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
GPT_350M = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"
NVLINK = LinkClass("nvlink", 300e9, 0.8, 5e-6, 20e-6, copy_s_per_byte=1e-12)  # no NVLS: NCCL's ring or tree


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("d", [1, 2, 8, 64])
def test_full_sharding_keeps_16_bytes_over_d(dtype, d):
    """FSDP's MixedPrecision keeps the sharded parameter in fp32 (4), its fp32 gradient (4) and Adam's momentum
    and variance (8): 16/d in every dtype, the compute-dtype copy existing only while a unit is gathered."""
    assert state_bytes(dtype, shards=d, full=True) == pytest.approx(16 / d, rel=1e-15)


def test_units_in_flight_bytes():
    """Two units' parameters in the compute dtype and one unit's gradient in the reduce width (fp32 in bf16,
    as torchtitan reduces): bf16 2·2 + 4 = 8, fp16 2·2 + 2 = 6, fp32 2·4 + 4 = 12."""
    assert (fsdp_unit_bytes("bf16"), fsdp_unit_bytes("fp16"), fsdp_unit_bytes("fp32")) == (8, 6, 12)


def test_prefetch_rule_by_hand():
    """Root (all-gather 3, reduce-scatter 4, no compute, not gathered again) then two layers. Forward: the root's
    3 exposed, layer 1's 2 behind the root's 0 s (2), layer 2's 2 behind layer 1's 5 s (0): 5. Backward, layer 2
    first: its all-gather 2 exposed; under layer 2's 10 s, layer 1's all-gather 2 (0); under layer 1's 1 s,
    layer 2's reduce-scatter 1 (0; the root is not gathered); under the root's 0 s, layer 1's reduce-scatter 1
    (1); then the root's 4: 2 + 0 + 0 + 1 + 4 = 7."""
    units = [Unit(3, 4, 0, 0, False), Unit(2, 1, 5, 1), Unit(2, 1, 1, 10)]
    assert exposed_seconds(units) == (5, 7)
    assert exposed_seconds([]) == (0.0, 0.0)


def _ring(kind: str, s: float, n: int, link: LinkClass) -> float:
    """Ring reduce-scatter or all-gather of S bytes over n GPUs: α₀ + (n − 1)α + γS/2 + (n − 1)/n·S/(ηB)."""
    return link.launch_s + (n - 1) * link.alpha_s + link.copy_s_per_byte * s / 2 + \
        (n - 1) / n * s / (link.efficiency * link.bandwidth)


def test_without_compute_every_collective_is_exposed_once():
    """No compute hides nothing: one micro-batch's exposed seconds are the root's all-gather and reduce-scatter
    and each of 4 layers' two all-gathers and one reduce-scatter, each once (10⁸ parameters a layer, 2·10⁸ the
    root, bf16: 2-byte gathers, 4-byte reduce-scatters, DP 8 on NVLink's ring)."""
    units = rank_units(4, 1e8, 2e8, 0.0, 0.0, 2, 4, 8, NVLINK)
    g, r = _ring("all-gather", 2e8, 8, NVLINK), _ring("reduce-scatter", 4e8, 8, NVLINK)
    g_root, r_root = _ring("all-gather", 4e8, 8, NVLINK), _ring("reduce-scatter", 8e8, 8, NVLINK)
    forward, backward = exposed_seconds(units)
    assert forward + backward == pytest.approx(g_root + r_root + 8 * g + 4 * r, rel=1e-12)
    assert forward == pytest.approx(g_root + 4 * g, rel=1e-12)


def test_with_ample_compute_only_the_ends_are_exposed():
    """Each layer computing far longer than its collectives: the root's all-gather and the first layer's
    (nothing computes before them), the last layer's backward all-gather, the first layer's reduce-scatter
    (under the root's empty backward) and the root's."""
    units = rank_units(4, 1e8, 2e8, 4.0, 8.0, 2, 4, 8, NVLINK)
    g, r = _ring("all-gather", 2e8, 8, NVLINK), _ring("reduce-scatter", 4e8, 8, NVLINK)
    g_root, r_root = _ring("all-gather", 4e8, 8, NVLINK), _ring("reduce-scatter", 8e8, 8, NVLINK)
    assert exposed_seconds(units) == pytest.approx((g_root + g, g + r + r_root), rel=1e-12)


def _layer(h: int) -> int:
    """Megatron's GPT layer: QKV, projection, two MLP GEMMs with biases and two LayerNorms, 12h² + 13h."""
    return 12 * h * h + 13 * h


def test_train_memory_and_time_by_hand():
    """GPT 350M (24 layers, hidden 1,024, vocab 50,257 padded to 50,304, 1,024 positions, tied) on one DGX A100,
    DP 8, fp16, micro-batch 2, 4 micro-batches a rank. Memory: 16/8 bytes per parameter plus 6 per parameter of
    the largest unit, the root (token table, positions, final LayerNorm: 52.6·10⁶ > a layer's 12.6·10⁶), the
    activations those of the replicated run. Time: a layer's forward (≈ 0.8 ms) outlasts its all-gather
    (≈ 0.1 ms), so each micro-batch exposes the root's all-gather, the first layer's, the last layer's backward
    all-gather, the first layer's reduce-scatter and the root's; the step on 1/8, as the distributed
    optimizer's. The SMs free (``comm_sms`` 0): the rule's premise here; NCCL's SMs are tests/test_comm_sms_fsdp_cp.py's."""
    from dataclasses import replace

    from archsim.training.cluster_file import load_gpu_cluster

    free = replace(load_gpu_cluster(NODE, "fp16"), comm_sms=0)
    keys = {"cluster": free, "dp": 8, "global_batch": 64, "micro_batch": 2, "recompute": "full"}
    off, _ = archsim.train(str(GPT_350M), **keys)
    on, _ = archsim.train(str(GPT_350M), fsdp=True, **keys)
    zero1, _ = archsim.train(str(GPT_350M), distributed_optimizer=True, **keys)
    h = 1024
    root = 50304 * h + 1024 * h + 2 * h
    parameters = 24 * _layer(h) + root
    assert on.memory[0].parameters == parameters
    assert on.memory[0].states == pytest.approx(16 / 8 * parameters + 6 * root, rel=1e-12)
    assert on.memory[0].activations == off.memory[0].activations
    par = Parallelism(1, 1, 8, 64, 2, fsdp=True)
    link = load_gpu_cluster(NODE, "fp16").machine(par).links.dp
    g = float(collective_seconds("all-gather", 2 * _layer(h), 8, link))
    r = float(collective_seconds("reduce-scatter", 2 * _layer(h), 8, link))
    g_root = float(collective_seconds("all-gather", 2 * root, 8, link))
    r_root = float(collective_seconds("reduce-scatter", 2 * root, 8, link))
    f_layer = on.forward_seconds / 4 / 24  # one micro-batch's forward over 24 layers
    assert g < f_layer and g + r < f_layer  # the premise: the layers hide their neighbours' collectives
    hand = 4 * (g_root + g + g + r + r_root)
    assert on.breakdown["fsdp_exposed_communication"] == pytest.approx(hand, rel=1e-12)
    assert on.breakdown["dp_communication"] == 0
    assert on.breakdown["optimizer"] == pytest.approx(zero1.breakdown["optimizer"], rel=1e-12)
    assert on.iteration_seconds == pytest.approx(off.iteration_seconds - off.breakdown["dp_communication"]
                                                 - off.breakdown["optimizer"] + hand + on.breakdown["optimizer"],
                                                 rel=1e-12)
    assert on.to_dict()["meta"]["fsdp"] is True
    assert "fsdp" not in off.to_dict()["meta"] and "fsdp_exposed_communication" not in off.breakdown


def gpt_13b() -> TransformerConfig:
    """GPT-3 13B (Brown et al. 2020, Table 2.1): 40 layers, hidden 5,120, 40 heads, 2,048 tokens."""
    return TransformerConfig("gpt3-13b", "gpt", 40, 5120, 40, 50257, 2048, 4 * 5120, 40, positions=2048)


def test_search_finds_dp8_only_with_full_sharding():
    """GPT-3 13B on one DGX A100 (8 × 80 GB) at TP 1 × PP 1 × DP 8: 13·10⁹ parameters a GPU, 20 bytes each
    replicated (refused out of memory); fully sharded 16/8 a parameter plus 6 per parameter of one layer
    (12h² + 13h > the root's 50,304·h + 2,048·h + 2h) and Korthikanti et al.'s activations (one micro-batch in
    flight, full recompute, FlashAttention: each layer's input 2sbh, one layer rematerialised sbh·34 + the
    fp32 log-sum-exp 4as less its input, the checkpoint counted already (sbh·34 until 2026-12-02: failed there),
    the embedding's dropout mask sbh, the logits 6sV; beside the rerun layer its FlashAttention backward's fp32
    ``softmax_d`` and ``dq_accum``, s rows × a heads, × head dim 128 for the latter: flash_api.cpp ``mha_bwd``, since
    2026-12-03): the row's peak memory by hand."""
    config = gpt_13b()
    h, s, a, vocab = 5120, 2048, 40, 50304
    parameters = 40 * _layer(h) + vocab * h + s * h + 2 * h
    activations = 40 * 2 * s * h + s * h * 32 + 4 * a * s + s * h + 6 * s * vocab + 4 * (s * a + s * a * 128)
    hand = 16 / 8 * parameters + 6 * _layer(h) + activations
    keys = {"cluster": str(NODE), "global_batch": 64, "gpus": 8, "recompute": "full", "schedule": "1f1b",
            "max_micro_batch": 1, "sequence_parallel": "off", "refine": 0, "top": 100}
    off = archsim.search(config, **keys)
    on = archsim.search(config, fsdp=True, **keys)

    def row(result):
        return next((r for r in result.rows if (r["tp"], r["pp"], r["dp"]) == (1, 1, 8)), None)

    assert row(off) is None
    found = row(on)
    assert found is not None and found["fsdp"] is True and "--fsdp" in found["command"]
    assert found["peak_memory_gib"] == pytest.approx(hand / 2**30, rel=1e-12)
    assert all(r["fsdp"] is True for r in on.rows)  # PP > 1 too since 2026-12-03 (tests/test_fsdp_pipeline.py)
    assert all("fsdp" not in r for r in off.rows)  # today's rows, key for key


def test_runs_column_and_sweep_axis(tmp_path, capsys):
    """A runs file's ``fsdp`` column shards that row only; ``--sweep fsdp=false,true`` is an axis; the two
    agree, and the sharded row holds less."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,fsdp\n1,1,4,1,8,false\n1,1,4,1,8,true\n", encoding="utf-8")
    model = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    assert main(["train", model, "--cluster", str(NODE), "--runs", str(runs), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["fsdp"] for r in rows] == [False, True]
    assert rows[1]["peak_memory_gib"] < rows[0]["peak_memory_gib"]
    assert main(["train", model, "--cluster", str(NODE), "--dp", "4", "--global-batch", "8",
                 "--sweep", "fsdp=false,true", "--format", "json"]) == 0
    points = json.loads(capsys.readouterr().out)["rows"]
    assert [p["fsdp"] for p in points] == [False, True]
    assert points[1]["peak_memory_gib"] == pytest.approx(rows[1]["peak_memory_gib"], rel=1e-12)
    assert main(["train", model, "--cluster", str(NODE), "--runs", str(runs), "--fsdp"]) == 2
    assert "each row of the runs file sets its own" in capsys.readouterr().err


def test_refusals(capsys):
    with pytest.raises(InputError, match="True or False"):
        Parallelism(1, 1, 2, 2, 1, fsdp="true")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="distributed-optimizer"):
        Parallelism(1, 1, 2, 2, 1, distributed_optimizer=True, fsdp=True)
    assert Parallelism(1, 2, 2, 4, 1, fsdp=True).pp == 2  # each pipeline rank shards its own (test_fsdp_pipeline)
    with pytest.raises(InputError, match="overlaps its own"):
        Parallelism(1, 1, 2, 2, 1, dp_overlap="bucketed", fsdp=True)
    with pytest.raises(InputError, match="fsdp"):
        archsim.train(str(GPT_350M), cluster=str(NODE), global_batch=8, fsdp="yes")
    with pytest.raises(InputError, match="fsdp"):
        archsim.search(str(GPT_350M), cluster=str(NODE), global_batch=8, fsdp=1)
    assert main(["train", str(GPT_350M), "--cluster", str(NODE), "--dp", "8", "--global-batch", "8", "--fsdp",
                 "--distributed-optimizer"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim train: error:") and err.count("\n") == 1
    assert Parallelism(1, 1, 8, 8, 1, fsdp=True).optimizer_shards == 8


def test_the_search_row_command_reproduces_its_row(capsys):
    """The first row's ``archsim train`` line (with --fsdp) prints the row's iteration and peak memory: search's
    closed form and train's simulated iteration add the same FSDP term."""
    result = archsim.search(str(GPT_350M), cluster=str(NODE), global_batch=16, fsdp=True, top=3, schedule="1f1b")
    first = result.rows[0]
    assert "--fsdp" in first["command"]
    assert main(["train", *first["command"].split()[2:], "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["fsdp"] is True
    assert meta["iteration_seconds"] == pytest.approx(first["iteration_seconds"], rel=1e-12)
    assert meta["peak_memory_gib"] == pytest.approx(first["peak_memory_gib"], rel=1e-12)


def test_an_all_out_of_memory_fsdp_search_keeps_its_note_and_names_no_second_sharding():
    """GPT-3 13B on two A100 80GB at global batch 64 with FSDP: PP 1 only, TP 2 · DP 1 holds half the 12.85·10⁹
    parameters at 16 bytes (96 GiB) and TP 1 · DP 2 all of them at 16/2 (96 GiB): every configuration is out of
    memory. Failed before (the distributed optimizer and FSDP merged the same hour): the search then re-placed its
    candidates with the distributed optimizer too and stopped on "fsdp shards the optimizer states already" instead of
    its note; FSDP shards every state already, so the note names no other sharding."""
    import warnings

    from test_distributed_optimizer import gpt_13b

    node = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = archsim.search(gpt_13b(), cluster=node, gpus=2, global_batch=64, refine=0, top=1, progress=False,
                                fsdp=True)
    said = [str(w.message) for w in caught]
    assert result.costed == 0 and result.sharded_fits is None
    assert any("are all out of memory; give more GPUs" in line for line in said), said
    assert not any("distributed_optimizer" in line for line in said), said


def test_the_search_meta_says_fsdp_was_on(capsys):
    """Failed before: the search's JSON meta said ``distributed_optimizer`` when set but never ``fsdp`` (its rows did).
    Present, true, only when set; the meta's other keys as without it."""
    model = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    node = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    argv = ["search", model, "--cluster", node, "--global-batch", "64", "--refine", "0", "--top", "1",
            "--schedule", "1f1b", "--max-micro-batch", "1", "--recompute", "none", "--format", "json"]
    assert main(argv) == 0
    before = json.loads(capsys.readouterr().out)["meta"]
    assert "fsdp" not in before
    assert main([*argv, "--fsdp"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["fsdp"] is True and document["rows"][0]["fsdp"] is True
    assert [k for k in document["meta"] if k != "fsdp"] == list(before)
    on = archsim.search(model, cluster=node, global_batch=64, refine=0, top=1, schedule="1f1b", max_micro_batch=1,
                        recompute="none", fsdp=True)
    assert on.to_dict()["meta"]["fsdp"] is True
