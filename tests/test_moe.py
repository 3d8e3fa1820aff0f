"""Mixture-of-experts training with expert parallelism (archsim.training.moe_ops), against hand counts: the
MoE layer's GEMMs, the all-to-all's bytes, the experts' GEMM shapes, a rank's parameters, the model FLOPs,
and each layout Megatron-Core refuses or archsim does not model."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.training.layer_ops import block_work
from archsim.training.memory import layer_parameters_per_gpu
from archsim.training.moe_ops import check_moe
from archsim.training.parallel import Parallelism
from archsim.training.throughput import model_flops
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

MIXTRAL = Path(__file__).parent / "data" / "hf_configs" / "mixtral_8x7b.json"
H, F, S = 64, 128, 32  # a small Llama: hidden, FFN width, tokens of one sequence


def _llama(**moe) -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, **moe)


def _gemm_flops(ops, names) -> int:
    return sum(2 * g.m * g.k * g.n * g.count for op in ops if op.layer in names for g in op.gemms)


def test_one_expert_top1_is_the_dense_swiglu_mlp_plus_the_router():
    dense, moe = _llama(), _llama(experts=1, experts_per_token=1, expert_ffn=F)
    mlp = 3 * 2 * S * H * F  # gate, up and down forward: 2·T·h·f each
    router = 2 * S * H * 1  # T × h × E
    assert _gemm_flops(block_work(dense, 1).forward, ("gate", "up", "fc2")) == mlp
    assert _gemm_flops(block_work(moe, 1).forward, ("router", "experts.fc1", "experts.fc2")) == mlp + router
    # forward and backward (F, D, G: three times the forward) of the whole layer differ by the router's alone
    dense_all = block_work(dense, 1)
    moe_all = block_work(moe, 1)
    every = {op.layer for op in (*dense_all.forward, *moe_all.forward)}
    moe_total, dense_total = (_gemm_flops((*w.forward, *w.backward), every) for w in (moe_all, dense_all))
    assert moe_total - dense_total == 3 * router


@pytest.mark.parametrize("tp,local", [(1, S), (2, S // 2)])
def test_all_to_all_bytes_per_rank_by_hand(tp, local):
    c = _llama(experts=4, experts_per_token=2, expert_ffn=F)
    work = block_work(c, 1, tp, tp > 1, ep=2)
    a2a = [x for x in (*work.forward_collectives, *work.backward_collectives) if x.kind == "all-to-all"]
    # dispatch and combine forward, their gradients backward; each buffer the rank's local tokens × k × h × 2 bytes
    assert [(x.name, x.phase) for x in a2a] == [("moe.dispatch", "F"), ("moe.combine", "F"),
                                                ("moe.combine", "B"), ("moe.dispatch", "B")]
    assert all(x.group == "ep" and x.bytes == local * 2 * H * 2 for x in a2a)
    # (EP − 1)/EP of it leaves the rank: at EP 2 half, T·k·h·(EP−1)/EP elements
    assert a2a[0].bytes / 2 * (2 - 1) / 2 == local * 2 * H * (2 - 1) / 2
    gathers = [x for x in work.forward_collectives if x.name.startswith("moe.") and x.group == "tp"]
    assert [x.bytes for x in gathers] == ([S * 2 * H * 2] * 2 if tp > 1 else [])  # all T·k rows over expert TP


def test_expert_parallel_one_is_no_all_to_all():
    work = block_work(_llama(experts=4, experts_per_token=2, expert_ffn=F), 1)
    assert not work.forward_collectives and not work.backward_collectives


@pytest.mark.parametrize("ep,tp,experts,rows", [(1, 1, 4, 16), (2, 1, 2, 32), (2, 2, 2, 32)])
def test_expert_gemm_shapes(ep, tp, experts, rows):
    # T·k = 64 rows under uniform routing over E = 4 experts: E/EP local experts of T·k·EP/E rows each
    c = _llama(experts=4, experts_per_token=2, expert_ffn=F)
    ops = {(op.layer, op.kind): op.gemms[0] for op in block_work(c, 1, tp, tp > 1, ep=ep).forward if op.gemms}
    fc1, fc2 = ops[("experts.fc1", "F")], ops[("experts.fc2", "F")]
    assert (fc1.m, fc1.k, fc1.n, fc1.count) == (rows, H, 2 * F // tp, experts)
    assert (fc2.m, fc2.k, fc2.n, fc2.count) == (rows, F // tp, H, experts)
    router = ops[("router", "F")]
    assert (router.m, router.k, router.n) == (S // tp, H, 4)  # the rank's own T/TP tokens, h → E


def test_mixtral_parameters_per_gpu_by_hand():
    c = load_transformer(MIXTRAL)
    h, kv, f = 4096, 8 * 128, 14336
    attention = 2 * h * h + 2 * h * kv  # q, o and the grouped k, v
    # TP 2, EP 8: attention split, norms and router whole, one of the 8 experts at half its width
    assert layer_parameters_per_gpu(c, 2, 8) == attention / 2 + 2 * h + h * 8 + 3 * h * f / 2


def test_mixtral_model_flops_count_two_experts_not_eight():
    c = load_transformer(MIXTRAL)
    h, kv, f, layers, vocab = 4096, 1024, 14336, 32, 32000
    active = layers * (2 * h * h + 2 * h * kv + 2 * 3 * h * f + 2 * h) + vocab * h  # the LM head; no router
    attention = 12 * layers * h * c.seq * c.seq
    assert model_flops(c, 1) == 6 * active * c.seq + attention


@pytest.mark.parametrize("kwargs,match", [
    ({"dp": 6, "ep": 4, "global_batch": 12}, "must divide TP × CP × DP"),
    ({"dp": 3, "ep": 4, "cp": 2, "global_batch": 3}, r"must divide TP × CP × DP \(1 × 2 × 3\)"),
    ({"dp": 4, "ep": 2, "fsdp": True, "global_batch": 4}, "fsdp"),
])
def test_layouts_expert_parallelism_refuses(kwargs, match):
    with pytest.raises(InputError, match=match) as caught:
        Parallelism(**kwargs)
    assert "field 'ep'" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("config,kwargs,implementation,match,field", [
    ({"experts": 4, "experts_per_token": 2, "expert_ffn": F}, {"dp": 3, "ep": 3, "global_batch": 3}, "megatron",
     "does not divide the 4 experts", "ep"),
    ({"experts": 4, "experts_per_token": 2, "expert_ffn": F}, {"tp": 2, "dp": 2, "ep": 2, "global_batch": 2},
     "megatron", "sequence parallelism", "sequence-parallel"),
    ({}, {"dp": 2, "ep": 2, "global_batch": 2}, "megatron", "is dense", "ep"),
    ({"experts": 4, "experts_per_token": 2, "expert_ffn": F}, {}, "pytorch-eager", "Megatron-Core's op list only",
     "implementation"),
])
def test_moe_layouts_refused_in_one_line(config, kwargs, implementation, match, field):
    with pytest.raises(InputError, match=match) as caught:
        check_moe(_llama(**config), Parallelism(**kwargs), implementation)
    assert f"field '{field}'" in str(caught.value) and "\n" not in str(caught.value)


def test_a_moe_config_needs_all_three_fields():
    with pytest.raises(InputError, match="experts_per_token"):
        _llama(experts=4, experts_per_token=5, expert_ffn=F)  # more experts a token than there are
    with pytest.raises(InputError, match="experts_per_token"):
        _llama(experts=4)


def test_a_dense_layer_keeps_its_mlp_and_runs_no_router():
    names = [op.layer for op in block_work(_llama(), 1, 2, True).forward]
    assert names.count("fc2") == 1 and not [n for n in names if n.startswith(("router", "experts", "permute"))]
    # the dense layer's parameters per GPU at TP 2 by hand: attention and MLP split, two RMS norms whole
    kv = 2 * H // 4
    assert layer_parameters_per_gpu(_llama(), 2) == (2 * H * H + 2 * H * kv + 3 * H * F) / 2 + 2 * H


# -- wiring: train --ep, archsim.train(ep=), the runs file's ep column, search's --ep on a dense model ------------------------
CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": 2}


def _small_moe(tmp_path) -> Path:
    import json

    path = tmp_path / "small_moe.json"
    path.write_text(json.dumps(SMALL_MOE))
    return path


def test_train_json_meta_states_ep_and_the_experts(tmp_path, capsys):
    import json

    from archsim.cli import main

    code = main(["train", str(_small_moe(tmp_path)), "--cluster", str(CLUSTER), "--dp", "4", "--ep", "4",
                 "--global-batch", "8", "--seq", "128", "--format", "json"])
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert code == 0 and (meta["ep"], meta["experts"], meta["experts_per_token"]) == (4, 8, 2)


def test_api_ep_times_as_the_flag_does(tmp_path, capsys):
    import json

    import archsim
    from archsim.cli import main

    main(["train", str(_small_moe(tmp_path)), "--cluster", str(CLUSTER), "--dp", "4", "--ep", "2",
          "--global-batch", "8", "--seq", "128", "--format", "json"])
    flag = json.loads(capsys.readouterr().out)["meta"]["iteration_seconds"]
    result, _ = archsim.train(_small_moe(tmp_path), cluster=CLUSTER, dp=4, ep=2, global_batch=8, seq=128)
    assert result.iteration_seconds == flag


def test_runs_file_ep_column(tmp_path, capsys):
    from archsim.cli import main

    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,ep\n1,1,4,1,8,1\n1,1,4,1,8,4\n")
    code = main(["train", str(_small_moe(tmp_path)), "--cluster", str(CLUSTER), "--runs", str(runs), "--seq", "128",
                 "--format", "csv"])
    out = capsys.readouterr().out
    header = out.splitlines()[0].split(",")
    assert code == 0 and "ep" in header
    assert [line.split(",")[header.index("ep")] for line in out.splitlines()[1:3]] == ["1", "4"]


def test_more_expert_parallelism_holds_fewer_experts_a_gpu(tmp_path):
    import archsim

    peaks = [archsim.train(_small_moe(tmp_path), cluster=CLUSTER, dp=4, ep=ep, global_batch=8, seq=128)[0].memory[0].parameters
             for ep in (1, 2, 4)]
    # 2 layers × (8/EP experts × 3·256·512): the experts a GPU drops going from EP 1 to 2, then 2 to 4
    assert peaks[0] - peaks[1] == 2 * 4 * 3 * 256 * 512 and peaks[1] - peaks[2] == 2 * 2 * 3 * 256 * 512


def test_search_refuses_ep_on_a_dense_model_in_one_line(tmp_path, capsys):
    import json

    from archsim.cli import main

    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({k: v for k, v in SMALL_MOE.items() if k not in ("num_local_experts", "num_experts_per_tok")}
                                | {"model_type": "llama"}))
    code = main(["search", str(dense), "--cluster", str(CLUSTER), "--global-batch", "8", "--seq", "128", "--ep", "1,2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "is dense" in err


def test_sweep_takes_ep_as_an_axis(tmp_path, capsys):
    from archsim.cli import main

    code = main(["train", str(_small_moe(tmp_path)), "--cluster", str(CLUSTER), "--dp", "4", "--global-batch", "8",
                 "--seq", "128", "--sweep", "ep=1,2,3", "--format", "csv"])
    cells = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))  # quoted cells hold commas (the compute split)
    assert code == 0 and [c["ep"] for c in cells] == ["1", "2", "3"]
    assert cells[2]["error"] and not cells[0]["error"]  # EP 3 divides neither DP 4 nor the 8 experts
