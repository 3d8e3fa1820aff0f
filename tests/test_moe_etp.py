"""``--etp`` (Megatron-Core's ``--expert-tensor-parallel-size``): the experts split over ETP ranks instead of TP,
against hand counts — Megatron-Core's rule that ETP × EP × PP divide the world (``parallel_state.py``,
``initialize_model_parallel``), the dispatcher's rows and its all-gather over the expert-TP group
(``token_dispatcher.py``: its ``tp_group`` is ``pg_collection.expt_tp``), the experts' GEMM widths and a GPU's
expert parameters — and the flag's wiring (train, the API, a runs file's column, the JSON meta)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.layer_ops import block_work
from archsim.training.parallel import Parallelism
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

H, F, S = 64, 128, 32
CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
QWEN3_235B = Path(__file__).parent / "data" / "hf_configs" / "qwen3_235b_a22b.json"
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": 2}


def _moe() -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, experts=4, experts_per_token=2,
                             expert_ffn=F)


def _config(tmp_path) -> Path:
    path = tmp_path / "small_moe.json"
    path.write_text(json.dumps(SMALL_MOE))
    return path


@pytest.mark.parametrize("tp,dp,ep,etp,replicas", [(2, 4, 8, 1, 1), (2, 4, 4, 1, 2), (2, 2, 1, 1, 4), (2, 4, 2, None, 2),
                                                   (1, 4, 2, 2, 1)])
def test_expert_groups_carved_from_tp_times_dp(tp, dp, ep, etp, replicas):
    # expert-DP = world / (ETP · EP · PP) = TP · DP / (ETP · EP) at CP 1
    par = Parallelism(tp, 1, dp, dp, ep=ep, etp=etp, sequence_parallel=tp > 1)
    assert par.expert_replicas == replicas == tp * dp // ((etp or tp) * ep)


@pytest.mark.parametrize("tp,dp,ep,etp", [(2, 4, 8, 2), (1, 4, 8, 1), (2, 1, 1, 4)])
def test_etp_times_ep_not_dividing_tp_times_dp_is_refused_in_one_line(tp, dp, ep, etp):
    with pytest.raises(InputError, match="must divide TP × CP × DP") as caught:
        Parallelism(tp, 1, dp, dp, ep=ep, etp=etp, sequence_parallel=tp > 1)
    field = "ep" if ep > 1 else "etp"  # at EP 1 the ETP given is what breaks the rule
    assert f"field '{field}'" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("etp,rows,width,gathered", [(1, 16, F, 0), (2, 32, F // 2, 2), (4, 64, F // 4, 4)])
def test_dispatcher_rows_and_expert_widths_at_etp(etp, rows, width, gathered):
    # TP 2 under SP: a rank routes 16 of the 32 tokens, k = 2; EP 2 leaves it 2 of the 4 experts. The all-to-all
    # brings it 16·2 rows for its experts; the expert-TP all-gather makes them ETP·32, 16·ETP rows an expert
    work = block_work(_moe(), 1, 2, True, ep=2, etp=etp)
    gemms = {op.layer: op.gemms[0] for op in work.forward if op.gemms}
    fc1, fc2 = gemms["experts.fc1"], gemms["experts.fc2"]
    assert (fc1.m, fc1.k, fc1.n, fc1.count) == (rows, H, 2 * width, 2)
    assert (fc2.m, fc2.k, fc2.n, fc2.count) == (rows, width, H, 2)
    moe_tp = [x for x in work.forward_collectives if x.name in ("moe.all-gather", "moe.reduce-scatter")]
    assert len(moe_tp) == (2 if gathered else 0)
    assert all(x.bytes == 16 * 2 * etp * H * 2 and x.group == ("tp" if etp == 2 else "etp") for x in moe_tp)
    a2a = [x for x in work.forward_collectives if x.kind == "all-to-all"]
    assert [x.bytes for x in a2a] == [16 * 2 * H * 2] * 2  # the rank's own rows: ETP does not change them


def test_a_gpu_holds_its_experts_at_full_width_at_etp_1(tmp_path):
    keys = {"cluster": CLUSTER, "tp": 2, "dp": 4, "ep": 4, "global_batch": 8, "seq": 128, "sequence_parallel": True}
    default, _ = archsim.train(_config(tmp_path), **keys)
    whole, _ = archsim.train(_config(tmp_path), etp=1, **keys)
    # 2 layers × 8/4 experts × 3·256·512: split over TP 2 by default, whole at ETP 1
    experts = 2 * 2 * 3 * 256 * 512
    assert whole.memory[0].parameters - default.memory[0].parameters == experts - experts / 2


def test_etp_flag_api_runs_column_and_meta_agree(tmp_path, capsys):
    model = str(_config(tmp_path))
    flags = ["--cluster", str(CLUSTER), "--tp", "2", "--dp", "4", "--ep", "4", "--sequence-parallel",
             "--global-batch", "8", "--seq", "128"]
    assert main(["train", model, *flags, "--etp", "1", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert (meta["ep"], meta["etp"]) == (4, 1)
    result, _ = archsim.train(model, cluster=CLUSTER, tp=2, dp=4, ep=4, etp=1, sequence_parallel=True,
                              global_batch=8, seq=128)
    assert result.iteration_seconds == meta["iteration_seconds"]
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,ep,etp,sequence_parallel\n2,1,4,1,8,4,1,true\n"
                    "2,1,4,1,8,4,,true\n")
    assert main(["train", model, "--cluster", str(CLUSTER), "--runs", str(runs), "--seq", "128",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["etp"] for r in rows] == [1, 2]  # an empty cell: TP's
    assert rows[0]["predicted_seconds"] == pytest.approx(meta["iteration_seconds"], rel=1e-12)
    assert main(["train", model, *flags, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["etp"] == 2  # not given: TP, Megatron-LM's default


def test_qwen3_235b_config_counts_its_published_parameters():
    c = load_transformer(QWEN3_235B)
    # Qwen's model card: 235B parameters, 22B activated (94 layers, 64 Q and 4 KV heads, 128 experts, 8 a token)
    assert round(c.parameter_count / 1e9) == 235 and round(c.active_parameter_count / 1e9) == 22
    assert (c.layers, c.heads, c.kv_heads, c.experts, c.experts_per_token) == (94, 64, 4, 128, 8)


def test_etp_on_a_dense_model_is_refused_in_one_line(tmp_path, capsys):
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({k: v for k, v in SMALL_MOE.items() if k not in ("num_local_experts",
                                                                                 "num_experts_per_tok")}
                                | {"model_type": "llama"}))
    code = main(["train", str(dense), "--cluster", str(CLUSTER), "--tp", "2", "--dp", "4", "--etp", "1",
                 "--sequence-parallel", "--global-batch", "8", "--seq", "128"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "ETP 1 needs a mixture-of-experts model" in err


def test_ep_group_at_etp_1_spans_tp_ranks_in_one_server():
    from archsim.training.cluster_file import load_gpu_cluster

    cluster = load_gpu_cluster(CLUSTER)  # two servers of 8 GPUs
    # ETP 1, EP 8 beside TP 8, DP 2: an EP group is 8 consecutive GPUs, one server, as a TP group is
    apart = cluster.machine(Parallelism(8, 1, 2, 2, ep=8, etp=1, sequence_parallel=True)).links
    assert apart.ep == apart.tp and apart.etp is None  # ETP 1: no expert-TP group to price
    # ETP = TP = 8, EP 2: GPU t of two TP groups, one in each server, as a DP group is
    default = cluster.machine(Parallelism(8, 1, 2, 2, ep=2, sequence_parallel=True)).links
    assert default.ep == default.dp and default.ep != default.tp
