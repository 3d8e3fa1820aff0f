"""An LLM engineer's configs from the Hugging Face hub (Llama-3-8B, Llama-3.1-70B, Mistral-7B-v0.1,
Mixtral-8x7B; Qwen3-8B and Gemma-7B from tests/test_hf_configs_more.py) through train and search.

The configs under tests/data/hf_configs/ carry the keys and values of the published config.json files
(meta-llama/Meta-Llama-3-8B, meta-llama/Llama-3.1-70B, mistralai/Mistral-7B-v0.1,
mistralai/Mixtral-8x7B-v0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from input_checks_common import write_config

from archsim.cli import main
from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hf_configs"
CLUSTER = ROOT / "configs" / "clusters" / "h100_2_servers.toml"


# -- mixture-of-experts configs: Mixtral and Qwen3-MoE read, the others refused saying why -------------------
def test_mixtral_is_read_with_its_experts_and_published_parameter_counts():
    c = load_transformer(DATA / "mixtral_8x7b.json")
    assert (c.experts, c.experts_per_token, c.expert_ffn, c.kv_heads) == (8, 2, 14336, 8)
    # Mistral AI's announcement (mistral.ai/news/mixtral-of-experts): 46.7B parameters, 12.9B used per token
    assert round(c.parameter_count / 1e9, 1) == 46.7 and round(c.active_parameter_count / 1e9, 1) == 12.9


def test_qwen3_moe_is_read_with_its_published_parameter_counts():
    c = load_transformer(DATA / "qwen3_30b_a3b.json")
    assert (c.experts, c.experts_per_token, c.expert_ffn, c.qk_norm) == (128, 8, 768, True)
    # Qwen3-30B-A3B's model card: 30.5B parameters, 29.9B non-embedding, 3.3B activated (its figures cut, not
    # rounded, to one decimal: 3.35B here)
    embeddings = 2 * c.vocab * c.hidden  # untied token table and LM head
    assert round(c.parameter_count / 1e9, 1) == 30.5 and round((c.parameter_count - embeddings) / 1e9, 1) == 29.9
    assert int(c.active_parameter_count / 1e8) == 33


@pytest.mark.parametrize("kind,experts_key,why", [
    ("olmoe", "num_experts", "whole projection"), ("phimoe", "num_local_experts", "SparseMixer")])
def test_other_moe_model_types_are_refused_as_moe(tmp_path, kind, experts_key, why):
    fields = json.loads((DATA / "qwen3_8b.json").read_text())
    fields.update(model_type=kind, **{experts_key: 128, "num_experts_per_tok": 8})
    with pytest.raises(InputError, match=f"mixture-of-experts.*{experts_key} 128.*num_experts_per_tok 8.*{why}") as caught:
        load_transformer(write_config(tmp_path, fields))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("key,value", [("decoder_sparse_step", 2), ("mlp_only_layers", [0, 3])])
def test_qwen3_moe_with_dense_layers_is_refused_in_one_line(tmp_path, key, value):
    fields = json.loads((DATA / "qwen3_30b_a3b.json").read_text())
    fields[key] = value
    with pytest.raises(InputError, match=f"field '{key}'.*dense MLP layers") as caught:
        load_transformer(write_config(tmp_path, fields))
    assert "\n" not in str(caught.value)


def test_mixtral_with_router_jitter_is_refused(tmp_path):
    fields = json.loads((DATA / "mixtral_8x7b.json").read_text())
    fields["router_jitter_noise"] = 0.01
    with pytest.raises(InputError, match="router_jitter_noise '0.01' is not modelled"):
        load_transformer(write_config(tmp_path, fields))


def test_a_moe_refusal_on_the_command_line_is_exit_2_and_one_line(tmp_path, capsys):
    fields = json.loads((DATA / "qwen3_8b.json").read_text())
    fields.update(model_type="phimoe", num_local_experts=16, num_experts_per_tok=2)
    code = main(["train", str(write_config(tmp_path, fields)), "--cluster", str(CLUSTER), "--global-batch", "16",
                 "--seq", "256"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "mixture-of-experts" in err


# -- a rotary model's default sequence: its longest context, said so -----------------------------------
def _train(argv: list[str], capsys) -> tuple[int, dict, str]:
    code = main(["train", *argv, "--cluster", str(CLUSTER), "--format", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if code == 0 else {}, out.err


def test_train_notes_that_a_rotary_configs_default_seq_is_its_longest_context(capsys):
    # Llama-3-8B's max_position_embeddings (8192) is its longest context; the run is at that length
    # --dtype bf16, the config's torch_dtype: no note on the dtype
    code, doc, err = _train([str(DATA / "llama3_8b.json"), "--tp", "8", "--pp", "2", "--global-batch", "2",
                             "--dtype", "bf16"], capsys)
    assert code == 0 and doc["meta"]["seq"] == 8192
    assert err.count("\n") == 1 and "note: sequence length 8192 tokens per sample, from max_position_embeddings" in err
    assert "--seq N sets it" in err


def test_no_seq_note_when_seq_is_given_or_the_table_is_learned(capsys):
    code, doc, err = _train([str(DATA / "llama3_8b.json"), "--tp", "8", "--pp", "2", "--global-batch", "2",
                             "--seq", "1024", "--dtype", "bf16"], capsys)
    assert code == 0 and doc["meta"]["seq"] == 1024 and err == ""
    # GPT-2's n_positions is the length its learned table was trained at: the default needs no note
    code, doc, err = _train([str(ROOT / "configs" / "transformers" / "gpt2.json"), "--global-batch", "2"], capsys)
    assert code == 0 and doc["meta"]["seq"] == 1024 and "max_position_embeddings" not in err


def test_search_notes_the_default_seq_too(capsys):
    code = main(["search", str(DATA / "mistral_7b_v0_1.json"), "--cluster", str(CLUSTER), "--global-batch", "16",
                 "--gpus", "8", "--max-micro-batch", "1", "--schedule", "1f1b", "--recompute", "full", "--top", "1",
                 "--format", "json"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["meta"]["seq"] == 32768
    assert "archsim search: note: sequence length 32768 tokens per sample, from max_position_embeddings" in out.err


# -- the MODEL help names the model_types read ---------------------------------------------------------
@pytest.mark.parametrize("command", ["train", "search"])
def test_model_help_names_every_model_type_read(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    for kind in ("gpt2", "opt", "llama", "mistral", "qwen2", "qwen3", "gemma", "bert", "switch_transformers"):
        assert f" {kind}," in text or f" {kind})" in text, kind


# -- parameters held: the model cards' counts, by hand ------------------------------------------------
def _llama_parameters(layers: int, h: int, heads: int, kv: int, hd: int, ffn: int, vocab: int, tied: bool,
                      qk_norm: bool = False) -> int:
    """transformers' parameter count of a Llama-shaped decoder: per layer q, k, v, o, gate, up, down and two
    RMS norms' γ (h each; Qwen3's q and k norms' γ, head_dim each); the final RMS norm's γ; the token table
    and, untied, the LM head."""
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * ffn + 2 * h + (2 * hd if qk_norm else 0)
    return layers * layer + h + vocab * h * (1 if tied else 2)


CARDS = {  # config → (hand count, the model card's rounded figure)
    "llama3_8b.json": (_llama_parameters(32, 4096, 32, 8, 128, 14336, 128256, False), 8.03e9),
    "qwen3_8b.json": (_llama_parameters(36, 4096, 32, 8, 128, 12288, 151936, False, qk_norm=True), 8.2e9),
    "mistral_7b_v0_1.json": (_llama_parameters(32, 4096, 32, 8, 128, 14336, 32000, False), 7.24e9),
    "gemma_7b.json": (_llama_parameters(28, 3072, 16, 16, 256, 24576, 256000, True), 8.54e9),
}


def test_hand_counts_are_the_published_exact_counts():
    # the exact counts transformers prints for these checkpoints (sum of p.numel())
    assert CARDS["llama3_8b.json"][0] == 8_030_261_248
    assert CARDS["mistral_7b_v0_1.json"][0] == 7_241_732_096
    assert CARDS["gemma_7b.json"][0] == 8_537_680_896
    for count, card in CARDS.values():
        assert abs(count / card - 1) < 0.005


@pytest.mark.parametrize("name", sorted(CARDS))
def test_one_gpu_holds_exactly_the_models_parameters(capsys, name):
    """At TP 1, PP 1 the one rank holds every parameter once: the final RMS norm has γ alone, as each layer's."""
    code, doc, _ = _train([str(DATA / name), "--global-batch", "1", "--seq", "128"], capsys)
    assert code == 0 and doc["meta"]["memory_per_rank"][0]["parameters"] == CARDS[name][0]
    assert doc["meta"]["parameters"] == CARDS[name][0]  # the whole model's count, the one rank's


# -- TP must divide the key/value heads, as Megatron-LM's query groups ------------------------------------
def test_train_refuses_a_tp_the_kv_heads_do_not_split_over(capsys):
    # Llama-3-8B: 32 heads, 8 KV heads; Megatron-Core divides num_query_groups by TP (8 % 16 ≠ 0: refused there)
    code = main(["train", str(DATA / "llama3_8b.json"), "--cluster", str(CLUSTER), "--tp", "16",
                 "--global-batch", "8", "--seq", "1024"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "argument --tp" in err and "key/value heads (8" in err
    code, doc, _ = _train([str(DATA / "llama3_8b.json"), "--tp", "8", "--dp", "2", "--global-batch", "8",
                           "--seq", "1024"], capsys)
    assert code == 0 and doc["meta"]["tp"] == 8


def test_search_never_ranks_a_tp_above_the_kv_heads(capsys):
    # 16 GPUs: TP 16 divides Llama-3-8B's 32 heads and 14,336-wide MLP but not its 8 KV heads
    code = main(["search", str(DATA / "llama3_8b.json"), "--cluster", str(CLUSTER), "--global-batch", "16",
                 "--seq", "1024", "--gpus", "16", "--max-micro-batch", "1", "--schedule", "1f1b",
                 "--recompute", "full", "--sequence-parallel", "on", "--top", "50", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["meta"]["rejected"].get("tp-divides-heads", 0) >= 1
    tps = {row["tp"] for row in document["rows"]} | {row["tp"] for row in document["meta"]["pareto"]}
    assert 16 not in tps and 8 in tps


def test_python_warns_the_default_seq_note_the_commands_print(capsys):
    import warnings

    import archsim

    model = str(DATA / "llama3_8b.json")
    with pytest.warns(UserWarning, match="sequence length 8192 tokens per sample, from max_position_embeddings"):
        result, _ = archsim.train(model, cluster=str(CLUSTER), tp=8, pp=2, global_batch=2, dtype="bf16")
    code, doc, err = _train([model, "--tp", "8", "--pp", "2", "--global-batch", "2", "--dtype", "bf16"], capsys)
    assert code == 0 and result.to_dict() == doc and err.startswith("archsim train: note: sequence length 8192")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.train(model, cluster=str(CLUSTER), tp=8, pp=2, global_batch=2, seq=1024, dtype="bf16")
    with pytest.warns(UserWarning, match="sequence length 32768 tokens per sample"):
        archsim.search(str(DATA / "mistral_7b_v0_1.json"), cluster=str(CLUSTER), global_batch=16, gpus=8,
                       max_micro_batch=1, schedule="1f1b", recompute="full", top=1, progress=False)


def test_train_sweep_notes_the_default_seq_too(capsys):
    code = main(["train", str(DATA / "llama3_8b.json"), "--cluster", str(CLUSTER), "--pp", "2", "--global-batch", "2",
                 "--sweep", "tp=4,8", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["meta"]["seq"] == 8192
    assert out.err.startswith("archsim train: note: sequence length 8192 tokens per sample, from max_position")
