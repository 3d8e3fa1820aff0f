"""What train refuses for MLA and layer kinds, search rejects under its own code: one rule (mla_ops.deepseek_rule)
read by both, each case checked on both sides."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.search_space import REASONS, Candidate, rejection
from archsim.training.stage_split import nearest_even_split, planned_split
from archsim.workload.transformer import TransformerConfig

MIXED = TransformerConfig("tiny_mixed", "llama", 8, 64, 4, 256, 16, 96, 4, False, experts=8, experts_per_token=2,
                          expert_ffn=16, shared_expert_ffn=32, shared_expert_gate=False, dense_layers=(0,),
                          q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8)
MLA_ONLY = replace(MIXED, name="tiny_mla", dense_layers=())


def train_refusal(c, par) -> str:
    machine = single_node("h100-80gb-sxm", par.tp * par.cp * par.pp * par.dp).machine(par)
    with pytest.raises(InputError) as caught:
        model_pieces(c, par, machine)
    return str(caught.value)


@pytest.mark.parametrize(("c", "k", "code", "words"), [
    (MIXED, Candidate(1, 2, 2, 1, "none", "zb-h1", 1, False), "layer-kinds-beside-split-backward", "split backward"),
    (MIXED, Candidate(1, 2, 2, 1, "none", "zb-v", 2, False), "layer-kinds-beside-split-backward", "split backward"),
    (MLA_ONLY, Candidate(1, 1, 2, 1, "none", "1f1b", 1, False, attention="flash", cp=2), "mla-beside-cp", "context parallelism"),
    (MIXED, Candidate(1, 2, 2, 1, "none", "1f1b", 1, False, fsdp=True), "layer-kinds-beside-fsdp", "FSDP"),
])
def test_search_rejects_what_train_refuses_by_the_same_rule(c, k, code, words):
    assert code in REASONS
    assert rejection(c, k, 8, 8) == code
    reason = train_refusal(c, k.parallelism(8))
    assert words in reason and "\n" not in reason
    assert rejection(replace(c, dense_layers=(), q_lora_rank=0, kv_lora_rank=0, qk_nope_head_dim=0,
                             qk_rope_head_dim=0, v_head_dim=0), k, 8, 8) != code  # the plain model passes it


def test_fp8_on_mla_is_rejected_as_train_refuses_it():
    k = Candidate(1, 1, 1, 1, "none", "1f1b", 1, False, fp8="hybrid")
    assert rejection(MLA_ONLY, k, 8, 8) == "deepseek-beside-fp8"
    assert "fp8" in train_refusal(MLA_ONLY, k.parallelism(8))


def test_two_kinds_over_interleaved_chunks_are_searched_under_planned_but_train_refuses_to_plan_them():
    """Since 2026-12-04 the search takes Megatron's split nearest to even there (search_fit.plan_candidate) and train
    runs it as --stage-layers; train's --balance planned still refuses to plan it."""
    k = Candidate(1, 2, 1, 1, "none", "interleaved-1f1b", 2, False)
    assert rejection(MIXED, k, 8, 8, uneven=True) is None
    assert rejection(replace(MIXED, layers=7), k, 8, 8, uneven=True) is None  # 7 layers over 4 chunks: uneven
    assert rejection(replace(MIXED, layers=7), k, 8, 8, uneven=False) == "pp-divides-layers"  # --balance even
    assert rejection(replace(MIXED, layers=3), k, 8, 8, uneven=True) == "pp-divides-layers"  # a chunk left empty
    assert rejection(MIXED, k, 8, 8, uneven=False) is None  # Megatron's even split: 8 layers over 4 chunks
    par = k.parallelism(8)
    machine = single_node("h100-80gb-sxm", 2).machine(par)
    with pytest.raises(InputError, match="one model chunk a rank"):
        planned_split(MIXED, par, [machine] * 2, [np.inf] * 2)


@pytest.mark.parametrize(("layers", "stages", "split"), [
    (8, 4, (2, 2, 2, 2)),  # divides: Megatron's even split
    (7, 4, (2, 2, 2, 1)),  # PP 2 × 2 chunks: ⌈7/4⌉ = 2, 4·2 − 7 = 1 stage one fewer, the last (rank 1's 2nd chunk)
    (5, 4, (2, 1, 1, 1)),  # 4·2 − 5 = 3 short
    (10, 8, (2, 2, 1, 1, 1, 1, 1, 1)),
    (61, 32, (2,) * 29 + (1,) * 3),  # DeepSeek-V3 at PP 16 × 2: docs/training.md's hand split
    (4, 4, (1, 1, 1, 1)),
])
def test_the_split_nearest_even_by_hand(layers, stages, split):
    assert nearest_even_split(layers, stages) == split
