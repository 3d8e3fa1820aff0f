"""User trial 29: a Hugging Face ``config.json`` field archsim does not read was dropped without a word —
a GPT-2 config's own ``n_special``, a Llama-typed config's ``num_experts`` (a mixture of experts archsim's
dense layer lacks) — while the file's parameters and costs came out as if the field were absent. Each test
here failed on the code before the fix: no note named the fields (train, search, cost, the API)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
NODE = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")
# a user's own GPT-2 (6 × 512, 8 heads, 32,000 tokens) with the fields transformers' GPT2Config writes
GPT2 = {"model_type": "gpt2", "n_layer": 6, "n_embd": 512, "n_head": 8, "vocab_size": 32000, "n_positions": 512,
        "n_ctx": 512, "activation_function": "gelu_new", "attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1,
        "layer_norm_epsilon": 1e-5, "initializer_range": 0.02, "bos_token_id": 0, "eos_token_id": 0,
        "summary_type": "cls_index", "summary_use_proj": True, "summary_activation": None,
        "summary_proj_to_labels": True, "summary_first_dropout": 0.1, "architectures": ["GPT2LMHeadModel"],
        "task_specific_params": {"text-generation": {"do_sample": True}}, "transformers_version": "4.46.0"}
LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 688, "vocab_size": 1000, "max_position_embeddings": 256,
         "tie_word_embeddings": False, "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "attention_dropout": 0.0, "pretraining_tp": 1, "mlp_bias": False, "attention_bias": False}

def _write(tmp_path, fields: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    return str(path)


def test_a_config_as_transformers_writes_it_has_no_unread_field():
    """Every key GPT2Config and LlamaConfig write is read, refused or listed as no work: no note."""
    from archsim.workload.hf_config import unread_fields

    assert unread_fields(GPT2) == [] and unread_fields(LLAMA) == []


def test_train_names_the_fields_it_did_not_read(tmp_path, capsys):
    path = _write(tmp_path, {**GPT2, "n_special": 3, "my_field": 7})
    assert main(["train", path, "--cluster", NODE, "--global-batch", "8", "--micro-batch", "1"]) == 0
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "not read" in line)
    assert line.startswith("archsim train: note: ") and "my_field, n_special" in line


def test_train_is_silent_on_a_config_without_unread_fields(tmp_path, capsys):
    assert main(["train", _write(tmp_path, GPT2), "--cluster", NODE, "--global-batch", "8",
                 "--micro-batch", "1"]) == 0
    assert "not read" not in capsys.readouterr().err


def test_a_llama_typed_config_with_experts_says_so(tmp_path, capsys):
    path = _write(tmp_path, {**LLAMA, "num_experts": 8, "num_experts_per_tok": 2})
    assert main(["search", path, "--cluster", NODE, "--global-batch", "8", "--seq", "128"]) == 0
    err = capsys.readouterr().err
    assert "archsim search: note: 2 fields of config.json not read: num_experts, num_experts_per_tok" in err


def test_cost_on_a_config_names_them(tmp_path, capsys):
    path = _write(tmp_path, {**GPT2, "n_special": 3})
    assert main(["cost", path, "--array", "32x32", "--batch", "1"]) == 0
    assert "archsim cost: note: 1 field of config.json not read: n_special" in capsys.readouterr().err


def test_the_api_warns_as_train_notes(tmp_path):
    path = _write(tmp_path, {**GPT2, "n_special": 3})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train(path, cluster=NODE, global_batch=8, micro_batch=1)
    assert any("n_special" in str(w.message) for w in caught)



def test_a_misspelt_key_is_named_with_the_key_it_stands_for(tmp_path, capsys):
    """Failed before: Llama-3-8B's ``num_key_value_heads`` written ``num_key_value_head`` priced 32 key/value heads
    (8.84 B parameters, not 8.03 B: LlamaConfig reads the absent key as the heads) under a note saying the field
    changed nothing; a field that is no slip of an absent key (GPT-2's ``layer_norm_epsilon``) gets no hint."""
    llama3 = {**LLAMA, "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
              "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192}
    path = _write(tmp_path, {**{k: v for k, v in llama3.items() if k != "num_key_value_heads"},
                             "num_key_value_head": 8, "layer_norm_epsilon": 1e-5})
    assert main(["train", path, "--cluster", NODE, "--global-batch", "8", "--seq", "128"]) == 0
    line = next(line for line in capsys.readouterr().err.splitlines() if "not read" in line)
    assert "layer_norm_epsilon, num_key_value_head (did you mean 'num_key_value_heads'? the file leaves it out)" in line
    assert "misspelt key is priced at its default" in line and "change nothing" not in line


def test_a_required_key_misspelt_is_named_beside_the_missing_one(tmp_path, capsys):
    """Failed before: ``num_attention_head`` for ``num_attention_heads`` said only "missing key"."""
    path = _write(tmp_path, {**{k: v for k, v in LLAMA.items() if k != "num_attention_heads"}, "num_attention_head": 4})
    assert main(["train", path, "--cluster", NODE, "--global-batch", "8", "--seq", "128"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "field 'num_attention_heads': missing key (the file has 'num_attention_head', misspelt?)" in err


def test_the_note_names_the_file_read(tmp_path, capsys):
    """Failed before: the note said "of config.json" whatever the file was called (a config saved as
    ``tiny_gpt2.json``), where the dtype note names the file read; train, cost and the API alike."""
    path = tmp_path / "tiny_gpt2.json"
    path.write_text(json.dumps({**GPT2, "n_special": 3}))
    said = "1 field of tiny_gpt2.json not read: n_special (they change nothing here;"
    assert main(["train", str(path), "--cluster", NODE, "--global-batch", "8", "--micro-batch", "1"]) == 0
    assert f"archsim train: note: {said}" in capsys.readouterr().err
    assert main(["cost", str(path), "--array", "32x32", "--batch", "1"]) == 0
    assert f"archsim cost: note: {said}" in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train(path, cluster=NODE, global_batch=8, micro_batch=1)
    assert next(str(w.message) for w in caught if "not read" in str(w.message)).startswith(said)
    assert "config.json" not in capsys.readouterr().err + "".join(str(w.message) for w in caught)
