"""A config.json that leaves out a key whose transformers default is not what archsim would read is refused, naming it.

GemmaConfig, Qwen2MoeConfig and Qwen3MoeConfig take an absent ``num_key_value_heads`` as their class
default (16, 16 and 4: transformers 4.46's and 4.51's ``configuration_*.py``), whatever the heads; reading
it as the heads priced Qwen3-30B-A3B with 32 key/value heads (31.2 B parameters, not its 30.5 B). The
published totals below are the model cards' figures, independent of archsim's count."""

from __future__ import annotations

import json
import re

import pytest

from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

# the published config.json shapes (google/gemma-2b, google/gemma-7b, Qwen/Qwen1.5-MoE-A2.7B, Qwen/Qwen3-30B-A3B)
GEMMA_2B = {"model_type": "gemma", "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 18,
            "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 256000,
            "max_position_embeddings": 8192}
GEMMA_7B = {**GEMMA_2B, "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
            "num_attention_heads": 16, "num_key_value_heads": 16}
QWEN15_MOE = {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
              "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936,
              "max_position_embeddings": 8192, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
              "num_experts": 60, "num_experts_per_tok": 4, "tie_word_embeddings": False}
QWEN3_30B = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
             "max_position_embeddings": 40960, "moe_intermediate_size": 768, "num_experts": 128,
             "num_experts_per_tok": 8, "tie_word_embeddings": False}


def _load(tmp_path, fields: dict):
    path = tmp_path / "model" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(fields))
    return load_transformer(path)


@pytest.mark.parametrize(("fields", "total", "active"), [
    (GEMMA_2B, 2.51e9, None), (GEMMA_7B, 8.54e9, None),  # Gemma's report, embeddings included
    (QWEN15_MOE, 14.3e9, 2.7e9), (QWEN3_30B, 30.5e9, 3.3e9),  # the Qwen model cards
])
def test_stated_kv_heads_give_the_published_parameter_counts(tmp_path, fields, total, active):
    config = _load(tmp_path, fields)
    assert config.kv_heads == fields["num_key_value_heads"]
    assert config.parameter_count == pytest.approx(total, rel=0.005)
    if active is not None:
        assert config.active_parameter_count == pytest.approx(active, rel=0.02)


@pytest.mark.parametrize(("fields", "reader", "default"), [
    (GEMMA_2B, "GemmaConfig", 16), (GEMMA_7B, "GemmaConfig", 16),
    (QWEN15_MOE, "Qwen2MoeConfig", 16), (QWEN3_30B, "Qwen3MoeConfig", 4),
])
def test_an_absent_kv_heads_is_refused_naming_transformers_default(tmp_path, fields, reader, default):
    """Failed before: read as the heads (Gemma-2B's 8, Qwen3-30B-A3B's 32), another model than transformers builds."""
    with pytest.raises(InputError, match=f"{reader} reads it absent as {default}") as refused:
        _load(tmp_path, {k: v for k, v in fields.items() if k != "num_key_value_heads"})
    assert refused.value.where.field == "num_key_value_heads"


@pytest.mark.parametrize(("model_type", "reader", "default"), [
    ("qwen3", "Qwen3Config", "128"), ("qwen3_moe", "Qwen3MoeConfig", "hidden_size / num_attention_heads"),
])
def test_an_absent_qwen3_head_dim_is_refused_naming_transformers_reading(tmp_path, model_type, reader, default):
    """Qwen3's head_dim sets the attention's width (128 × 32 heads = 4,096 at hidden 2,048 on Qwen3-30B-A3B): asked
    for, as before, but now with what transformers would build without it (before: ``missing key`` alone)."""
    fields = {k: v for k, v in {**QWEN3_30B, "model_type": model_type}.items() if k != "head_dim"}
    with pytest.raises(InputError, match=f"{reader} reads it absent as {re.escape(default)}") as refused:
        _load(tmp_path, fields)
    assert refused.value.where.field == "head_dim"
