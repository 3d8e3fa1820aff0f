"""Issue #40: a Llama-family ``config.json`` whose ``hidden_act`` names the gated unit ("swiglu") rather than its
gate's activation. transformers' ``ACT2FN`` has no "swiglu" (nor "geglu", "reglu"): LlamaConfig writes the
SwiGLU MLP's activation as "silu" (meta-llama/Llama-2-7b-hf's config.json), Gemma's GeGLU as
``hidden_activation`` "gelu_pytorch_tanh". So the file is refused, as transformers would not build it, but the
message says what to write instead of "gated ones change the MLP's GEMMs", which a model gated already does not.

Failed before: the message said gated activations change the MLP's GEMMs and named no fix."""

from __future__ import annotations

import json

import pytest

from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

LLAMA_2 = {"model_type": "llama", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
           "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "vocab_size": 32000}
GEMMA = {**LLAMA_2, "model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576, "num_attention_heads": 16,
         "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000, "hidden_act": None}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}


def _refusal(tmp_path, fields: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_transformer(path)
    return str(caught.value)


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "qwen3"])
@pytest.mark.parametrize("gated, gate", [("swiglu", "silu"), ("SwiGLU", "silu"), ("geglu", "gelu"), ("reglu", "relu")])
def test_a_gated_unit_named_as_a_llama_activation_says_what_to_write(tmp_path, kind, gated, gate):
    window = {"sliding_window": None} if kind == "mistral" else {}  # MistralConfig reads it absent as 4096
    message = _refusal(tmp_path, {**LLAMA_2, "model_type": kind, "hidden_act": gated, "head_dim": 128, **window})
    assert "not a Hugging Face activation name" in message and "gated already" in message
    assert f'hidden_act "{gate}"' in message and repr(gated) in message and "\n" not in message
    assert "change the MLP's GEMMs" not in message


def test_gemma_names_its_own_field(tmp_path):
    message = _refusal(tmp_path, {**GEMMA, "hidden_activation": "geglu"})
    assert 'hidden_activation "gelu"' in message and "gated already" in message


def test_what_it_says_to_write_is_read(tmp_path):
    """The fix the message names loads (the check that the advice is not itself refused)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_2), encoding="utf-8")
    assert load_transformer(path).activation == "silu"


def test_a_gated_activation_in_an_ungated_mlp_still_says_the_gemms_change(tmp_path):
    """GPT-2's MLP is fc → activation → fc: "swiglu" there would add a GEMM, so that message stays."""
    message = _refusal(tmp_path, {**GPT2, "activation_function": "swiglu"})
    assert "change the MLP's GEMMs" in message and "gated already" not in message
