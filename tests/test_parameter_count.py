"""The model's total parameter count (Megatron's: RMSNorm γ only, LayerNorm γ and β, a tied table once) in
``archsim train``'s and ``search``'s meta, the table's line and ``archsim.train(...).to_dict()``."""

from __future__ import annotations

import json

import pytest

import archsim
from archsim.cli import main
from archsim.workload.model_files import load_transformer

LLAMA3_8B = "tests/data/hf_configs/llama3_8b.json"
GPT2 = "configs/transformers/gpt2.json"
CLUSTER = "configs/clusters/a100_node.toml"


def _llama3_8b_by_hand() -> int:
    h, layers, vocab, heads, kv, hd, ffn = 4096, 32, 128256, 32, 8, 128, 14336
    attention = h * heads * hd + 2 * h * kv * hd + heads * hd * h  # q, k, v, o; no biases
    mlp = 3 * h * ffn  # gate, up, down
    layer = attention + mlp + 2 * h  # two RMS norms, γ alone
    return layers * layer + h + 2 * vocab * h  # final RMS norm γ; untied token table and LM head


def _gpt2_by_hand() -> int:
    h, layers, vocab, positions, ffn = 768, 12, 50257, 1024, 4 * 768
    layer = (2 * h  # ln_1 γ, β
             + h * 3 * h + 3 * h  # c_attn weight and bias
             + h * h + h  # attention c_proj
             + 2 * h  # ln_2
             + h * ffn + ffn + ffn * h + h)  # mlp c_fc, c_proj with biases
    return vocab * h + positions * h + layers * layer + 2 * h  # wte (tied: once), wpe, blocks, ln_f


def test_hand_counts_are_the_published_ones():
    assert _llama3_8b_by_hand() == 8_030_261_248
    assert _gpt2_by_hand() == 124_439_808


def test_parameter_count_is_the_exact_model_count():
    assert load_transformer(LLAMA3_8B).parameter_count == _llama3_8b_by_hand()
    assert load_transformer(GPT2).parameter_count == _gpt2_by_hand()


def _train_cli(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(["train", *argv]) == 0
    return capsys.readouterr().out


def test_train_json_meta_and_table_state_the_parameters(capsys):
    args = (LLAMA3_8B, "--cluster", CLUSTER, "--global-batch", "1", "--seq", "128")
    meta = json.loads(_train_cli(capsys, *args, "--format", "json"))["meta"]
    assert meta["parameters"] == 8_030_261_248
    # one GPU holds the whole model: its per-rank count (memory.stage_parameters) is the same total
    assert [rank["parameters"] for rank in meta["memory_per_rank"]] == [8_030_261_248]
    assert "# parameters: 8.03 B (8,030,261,248)\n" in _train_cli(capsys, *args)


def test_train_to_dict_states_the_parameters():
    result, _ = archsim.train(GPT2, cluster=CLUSTER, global_batch=2, seq=128)
    assert result.to_dict()["meta"]["parameters"] == 124_439_808


@pytest.mark.long
def test_search_meta_and_table_state_the_parameters(capsys):
    search = archsim.search(GPT2, cluster=CLUSTER, global_batch=4, top=1, schedule=["1f1b"], max_micro_batch=1,
                            refine=1)
    assert search.to_dict()["meta"]["parameters"] == 124_439_808
    capsys.readouterr()
    assert main(["search", GPT2, "--cluster", CLUSTER, "--global-batch", "4", "--top", "1"]) == 0
    assert "# parameters: 124 M (124,439,808)\n" in capsys.readouterr().out


def test_per_rank_parameters_sum_to_the_total_over_pipeline_stages(capsys):
    """PP splits the layers without copying any (GPT-2's tied table appears twice at PP > 1: the head's copy)."""
    meta = json.loads(_train_cli(capsys, LLAMA3_8B, "--cluster", CLUSTER, "--global-batch", "4", "--seq", "128",
                                 "--pp", "4", "--format", "json"))["meta"]
    assert sum(rank["parameters"] for rank in meta["memory_per_rank"]) == meta["parameters"] == 8_030_261_248
