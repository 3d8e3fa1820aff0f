"""Hugging Face configs whose ``head_dim`` is not hidden / heads (Mistral-NeMo, Qwen3-shaped Llamas) and
Qwen2's q, k and v biases.

Parameter counts are written out by hand from the configs' shapes and checked against the model cards'
published counts: Mistral-NeMo-Base-2407 "12.2B params" (its Hugging Face page), Qwen2.5-7B (the shape of
Qwen2-7B) "Number of Parameters: 7.61B, Number of Paramaters (Non-Embedding): 6.53B", Qwen3-4B "Number of
Parameters: 4.0B, Number of Paramaters (Non-Embedding): 3.6B" (its q/k norms, 2 × 128 per layer, are
below that rounding). archsim costs a Llama RMSNorm as a norm with γ and β (docs/formats.md), so the hand
counts below add one d-vector per norm: ``beta`` — far below the cards' rounding."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.layer_ops import block_work
from archsim.training.throughput import model_flops, recomputed_flops
from archsim.workload.layer_parameters import layer_parameters
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "configs" / "clusters" / "h100_1gpu.toml"

# mistralai/Mistral-Nemo-Base-2407's config.json (shape fields)
NEMO = {"model_type": "mistral", "hidden_size": 5120, "intermediate_size": 14336, "num_hidden_layers": 40,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
        "max_position_embeddings": 1024000, "hidden_act": "silu", "sliding_window": None,
        "tie_word_embeddings": False}
# Qwen/Qwen2-7B's config.json (shape fields)
QWEN2_7B = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
            "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
            "max_position_embeddings": 131072, "hidden_act": "silu", "sliding_window": 131072,
            "use_sliding_window": False, "max_window_layers": 28, "tie_word_embeddings": False}
# Qwen/Qwen3-4B's shape as a Llama (without Qwen3's q/k norms: tests/test_hf_configs_more.py): head_dim 128 > 2560 / 32
QWEN3_4B_SHAPE = {"model_type": "llama", "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
                  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
                  "max_position_embeddings": 40960, "hidden_act": "silu", "tie_word_embeddings": True}
SMALL = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 4096}


def _path(tmp_path: Path, fields: dict, name: str = "config") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(fields))
    return path


def _load(tmp_path: Path, fields: dict, name: str = "config"):
    return load_transformer(_path(tmp_path, fields, name))


def _llama_layer(h: int, heads: int, kv: int, hd: int, ffn: int, qkv_bias: bool = False, norm_vectors: int = 4) -> int:
    """One Llama layer by hand: q, k, v, o, gate/up/down, two norms (``norm_vectors`` 4: γ and the
    network's β each; 2: the RMS norms' γ alone, as Megatron's layer holds them)."""
    q, k, v, o = h * heads * hd, h * kv * hd, h * kv * hd, heads * hd * h
    bias = heads * hd + 2 * kv * hd if qkv_bias else 0
    return q + k + v + o + bias + 3 * h * ffn + norm_vectors * h


def test_explicit_head_dim_equal_to_hidden_over_heads_changes_nothing(tmp_path):
    plain = _load(tmp_path, SMALL, "plain")
    explicit = _load(tmp_path, {**SMALL, "head_dim": 64}, "plain2")
    assert replace(explicit, name=plain.name) == plain
    a = archsim.train(plain, cluster=GPU, global_batch=2, seq=128)[0]
    b = archsim.train(explicit, cluster=GPU, global_batch=2, seq=128)[0]
    assert (a.iteration_seconds, a.memory) == (b.iteration_seconds, b.memory)


def test_mistral_nemo_parameters_match_the_hand_count_and_the_card(tmp_path):
    c = _load(tmp_path, NEMO)
    assert (c.head_dim, c.attention_width) == (128, 4096)
    h, v, layers = 5120, 131072, 40
    layer = _llama_layer(h, 32, 8, 128, 14336, norm_vectors=2)  # the RMS norms' γ
    assert layer == 5120 * 4096 + 2 * 5120 * 1024 + 4096 * 5120 + 3 * 5120 * 14336 + 2 * 5120
    count = layers * layer + h + 2 * v * h  # final norm's γ, untied embedding and LM head
    assert c.parameter_count == count
    assert 12.2e9 <= count < 12.3e9  # the card's 12.2B


def test_qwen3_4b_shape_parameters_and_a_wider_attention_costs_more(tmp_path):
    c = _load(tmp_path, QWEN3_4B_SHAPE)
    assert (c.head_dim, c.attention_width, c.rotary_dims) == (128, 4096, 128)
    h, v, layers = 2560, 151936, 36
    non_embedding = layers * _llama_layer(h, 32, 8, 128, 9728, norm_vectors=2) + h  # RMS norms' γ
    assert c.parameter_count == non_embedding + v * h  # tied: the table once
    assert 3.55e9 <= non_embedding < 3.65e9 and 3.95e9 <= c.parameter_count < 4.05e9  # the card's 3.6B and 4.0B
    narrow = _load(tmp_path, {**QWEN3_4B_SHAPE, "head_dim": 80}, "narrow")  # 2560 / 32
    assert narrow.kv_channels == 0 and narrow.head_dim == 80
    kw = {"cluster": GPU, "global_batch": 2, "seq": 256}
    wide_result = archsim.train(replace(c, layers=2), **kw)[0]
    narrow_result = archsim.train(replace(narrow, layers=2), **kw)[0]
    assert wide_result.iteration_seconds > narrow_result.iteration_seconds


def test_model_flops_count_attention_over_heads_times_head_dim(tmp_path):
    c = replace(_load(tmp_path, QWEN3_4B_SHAPE), layers=2, seq=512)
    batch, s, h = 4, 512, 2560
    params = 2 * _llama_layer(h, 32, 8, 128, 9728, norm_vectors=2) + 151936 * h  # layers' and LM head's (PaLM)
    assert model_flops(c, batch) == 6 * batch * s * params + 12 * batch * 2 * (32 * 128) * s * s
    # selective recompute reruns QKᵀ and P·V: 2 · (2 · heads · head_dim · s) FLOPs per token per layer
    assert recomputed_flops(c, batch, "selective") == batch * s * 2 * 2 * (2 * 32 * 128 * s)


def test_block_gemms_use_the_attention_width(tmp_path):
    c = replace(_load(tmp_path, NEMO), layers=1, seq=64)
    ops = {op.layer: op for op in block_work(c, 1).forward}
    (qkv,), (proj,) = ops["qkv"].gemms, ops["proj"].gemms
    assert (qkv.k, qkv.n) == (5120, 32 * 128 + 2 * 8 * 128)
    assert (proj.k, proj.n) == (32 * 128, 5120)


def test_qwen2_7b_is_read_with_qkv_biases_counted_and_no_extra_kernel(tmp_path):
    c = _load(tmp_path, QWEN2_7B)
    assert (c.family, c.qkv_bias, c.head_dim, c.kv_channels) == ("llama", True, 128, 0)
    h, v, layers = 3584, 152064, 28
    non_embedding = layers * _llama_layer(h, 28, 4, 128, 18944, qkv_bias=True, norm_vectors=2) + h  # RMS γ
    assert c.parameter_count == non_embedding + 2 * v * h
    assert 7.61e9 <= c.parameter_count < 7.62e9 and 6.525e9 <= non_embedding < 6.535e9  # 7.61B, 6.53B
    plain = _load(tmp_path, {**QWEN2_7B, "model_type": "llama"}, "llama")
    assert c.parameter_count - plain.parameter_count == layers * (28 * 128 + 2 * 4 * 128)
    # Megatron's layer (optimizer state, gradients, MFU) holds the biases too, the RMS norms' γ alone
    assert layer_parameters(c) == _llama_layer(h, 28, 4, 128, 18944, qkv_bias=True, norm_vectors=2)
    small = replace(c, layers=1, seq=64)
    assert block_work(small, 1) == block_work(replace(small, qkv_bias=False), 1)  # biases fused, as GPT's


@pytest.mark.parametrize("fields, field, words", [
    ({**SMALL, "model_type": "gemma2", "head_dim": 128}, "model_type", "soft-capping"),
    ({**QWEN2_7B, "use_sliding_window": True}, "use_sliding_window", "sliding window"),
    ({**SMALL, "head_dim": 0}, "head_dim", "positive integer"),
])
def test_refused_configs_give_one_line_and_exit_2(tmp_path, capsys, fields, field, words):
    out = tmp_path / "out.csv"
    argv = ["train", str(_path(tmp_path, fields)), "--cluster", str(GPU), "--global-batch", "2", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and repr(field) in err and words in err
    assert not out.exists()
    with pytest.raises(InputError) as caught:
        load_transformer(_path(tmp_path, fields))
    assert caught.value.where.field == field


def test_an_attention_width_is_refused_for_the_families_with_fixed_heads():
    gpt = load_transformer(ROOT / "configs" / "transformers" / "gpt2.json")
    with pytest.raises(InputError) as caught:
        replace(gpt, kv_channels=2 * gpt.hidden)
    assert caught.value.where.field == "kv_channels"
    with pytest.raises(InputError) as caught:
        replace(gpt, qkv_bias=True)
    assert caught.value.where.field == "qkv_bias"
