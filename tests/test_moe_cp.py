"""Context parallelism beside expert parallelism, as Megatron-Core carves the expert groups from each pipeline
rank's TP·CP·DP GPUs (``parallel_state.initialize_model_parallel``: ETP × EP × expert-DP, its expert rank generator
ordered tp-ep-dp-pp with no CP), each CP rank routing its own s/CP tokens: group sizes, the rule's refusals, the EP
group's placement and the all-to-all's bytes, by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.layer_ops import block_work
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"  # two servers of 8
H, F, E, K, S = 64, 32, 8, 2, 64


def _moe() -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, 128, 2, False, experts=E, experts_per_token=K,
                             expert_ffn=F)


@pytest.mark.parametrize("tp,cp,dp,ep,etp,replicas", [
    (1, 2, 2, 4, None, 1),  # EP 4 over CP 2 × DP 2: one rank a set of experts
    (1, 4, 1, 2, None, 2),  # EP above DP (1), possible only with the CP ranks: 4 / 2 hold each set
    (2, 2, 2, 2, None, 2),  # ETP = TP 2: 8 GPUs / (2 · 2)
    (2, 2, 1, 4, 1, 1),  # ETP 1: 4 GPUs / (1 · 4)
])
def test_expert_dp_is_tp_cp_dp_over_etp_ep(tp, cp, dp, ep, etp, replicas):
    par = Parallelism(tp, 1, dp, dp, cp=cp, ep=ep, etp=etp, sequence_parallel=tp > 1)
    assert par.expert_replicas == replicas


@pytest.mark.parametrize("tp,cp,dp,ep,etp,shown", [
    (1, 2, 3, 4, None, "(1 × 1) must divide TP × CP × DP (1 × 2 × 3)"),  # 4 does not divide 6
    (2, 2, 1, 8, 1, "(1 × 8) must divide TP × CP × DP (2 × 2 × 1)"),  # 8 does not divide 4
])
def test_etp_ep_not_dividing_tp_cp_dp_is_refused_in_one_line(tp, cp, dp, ep, etp, shown):
    with pytest.raises(InputError) as caught:
        Parallelism(tp, 1, dp, dp, cp=cp, ep=ep, etp=etp, sequence_parallel=tp > 1)
    message = str(caught.value)
    assert f"ETP × EP {shown.replace('(1 × 1)', f'({etp or tp} × {ep})')}" in message
    assert "field 'ep'" in message and "\n" not in message


def test_fsdp_beside_ep_stays_refused():
    with pytest.raises(InputError, match="fsdp"):
        Parallelism(1, 1, 2, 2, cp=2, ep=2, fsdp=True)


def test_ep_group_takes_the_cp_ranks_first_at_etp_tp():
    cluster = load_gpu_cluster(CLUSTER)
    # TP 4, CP 2, DP 2 on 16 GPUs: GPU tp + 4·(cp + 2·dp). The expert ranks tp + 4·(ep + EP·edp): EP 2 holds GPU t
    # of the two TP groups of one CP group ({t, t + 4}, one server: NVLink as TP's); EP 4 holds t, t + 4, t + 8,
    # t + 12, two servers of two GPUs each, as the gradients' DP × CP group {t, t + 4, t + 8, t + 12} does
    inside = cluster.machine(Parallelism(4, 1, 2, 2, cp=2, ep=2, sequence_parallel=True)).links
    assert inside.ep == inside.tp and inside.ep != inside.dp
    across = cluster.machine(Parallelism(4, 1, 2, 2, cp=2, ep=4, sequence_parallel=True)).links
    assert across.ep == across.dp and across.ep != across.tp and across.dp.per_server == 2
    # the expert-DP groups, TP·CP·DP / (ETP·EP) ranks: {t, t + 8} at EP 2, one GPU in each server; none at EP 4
    assert inside.expert_dp is not None and inside.expert_dp.per_server == 1 and across.expert_dp is None


@pytest.mark.parametrize("cp,tp", [(1, 1), (2, 1), (4, 1), (2, 2)])
def test_each_cp_rank_routes_its_own_tokens(cp, tp):
    # the all-to-all's buffer: the rank's s/CP tokens (/TP under SP) routed k times, h wide, 2 bytes each
    work = block_work(_moe(), 1, tp=tp, sequence_parallel=tp > 1, cp=cp, ep=2)
    sizes = {x.bytes for x in work.forward_collectives if x.name == "moe.dispatch"}
    assert sizes == {S // cp // tp * K * H * 2}
    experts_fc1 = next(op for op in work.forward if op.layer == "experts.fc1")
    # EP 2 leaves a rank E/2 = 4 experts, each taking its share of both EP ranks' s/CP tokens' k rows: (S/CP)·k·2/E
    assert [(g.m, g.count) for g in experts_fc1.gemms] == [(S // cp * K * 2 // E, E // 2)]


def test_train_runs_cp_with_ep_and_reduces_the_experts_over_their_expert_dp_ranks(tmp_path):
    path = tmp_path / "moe.json"
    path.write_text(json.dumps({"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256,
                                "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
                                "vocab_size": 1024, "max_position_embeddings": 1024, "num_local_experts": 4,
                                "num_experts_per_tok": 2, "tie_word_embeddings": False}))
    one, _ = archsim.train(path, cluster=CLUSTER, cp=2, dp=2, ep=4, global_batch=4, seq=256)
    # EP 4 over CP 2 × DP 2: every rank holds its own experts, no expert-DP reduction; the dense weights over CP · DP
    assert one.parallelism.expert_replicas == 1 and one.breakdown["ep_communication"] > 0
    two, _ = archsim.train(path, cluster=CLUSTER, cp=2, dp=2, ep=2, global_batch=4, seq=256)
    assert two.parallelism.expert_replicas == 2
