"""Qwen3 (q and k RMS norms), Gemma 1 (GeGLU, head_dim 256 over hidden 3072, √hidden-scaled tied embeddings),
Gemma 2/3 refused by name, and ``head_dim`` in a ``[transformer]`` TOML.

The configs under tests/data/hf_configs/ carry the keys of the published config.json files (Qwen/Qwen3-8B,
google/gemma-7b, google/gemma-2-9b). Parameter counts are written out by hand from their shapes and checked
against the model cards: Qwen3-8B "Number of Parameters: 8.2B, Number of Paramaters (Non-Embedding): 6.95B",
Gemma-7B 8.54B. archsim's per-sample network counts every norm with γ and β (docs/formats.md): the hand
counts below add them, far below the cards' rounding; Megatron's layer (:func:`layer_parameters`) holds the
RMS norms' γ alone."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from input_checks_common import write_config

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.layer_ops import block_work, embedding_work
from archsim.training.memory import layer_parameters_per_gpu
from archsim.workload.layer_parameters import layer_parameters
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hf_configs"
GPU = ROOT / "configs" / "clusters" / "h100_1gpu.toml"


def _fields(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _llama_layer(h: int, heads: int, kv: int, hd: int, ffn: int, norm_vectors: int) -> int:
    """q, k, v, o, gate/up/down and ``norm_vectors`` h-vectors of norms."""
    return h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * ffn + norm_vectors * h


# -- Qwen3 -------------------------------------------------------------------------------------------
def test_qwen3_8b_is_read_and_its_parameters_match_the_hand_count_and_the_card():
    c = load_transformer(DATA / "qwen3_8b.json")
    assert (c.family, c.qk_norm, c.qkv_bias, c.head_dim, c.kv_channels) == ("llama", True, False, 128, 0)
    h, v, layers, hd = 4096, 151936, 36, 128
    # the model: two RMS norms' γ (2 h-vectors), q and k norms' γ over head_dim (2 · 128)
    layer = _llama_layer(h, 32, 8, hd, 12288, 2) + 2 * hd
    assert layer == 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 12288 + 2 * 4096 + 256
    non_embedding = layers * layer + h  # and the final RMS norm's γ
    assert c.parameter_count == non_embedding + 2 * v * h  # untied: token table and LM head
    assert 6.945e9 <= non_embedding < 6.955e9 and 8.15e9 <= c.parameter_count < 8.25e9  # the card's 6.95B, 8.2B
    # Megatron's layer: RMS norms' γ alone, q and k norms' γ (head_dim each) too
    assert layer_parameters(c) == _llama_layer(h, 32, 8, hd, 12288, 2) + 2 * hd
    # the q and k norms' γ are replicated over TP, as the RMS norms' are
    assert layer_parameters_per_gpu(c, 4) == (_llama_layer(h, 32, 8, hd, 12288, 0)) / 4 + 2 * h + 2 * hd


@pytest.mark.parametrize("tp", [1, 2])
def test_qwen3_q_and_k_norms_are_two_norm_ops_over_the_local_heads(tp):
    c = replace(load_transformer(DATA / "qwen3_8b.json"), layers=1, seq=256)
    b, tokens = 2, 256 * 2
    plain = block_work(replace(c, qk_norm=False), b, tp)
    work = block_work(c, b, tp)
    added_f = [op for op in work.forward if op not in plain.forward]
    added_d = [op for op in work.backward if op not in plain.backward]
    heads, kv = 32 // tp, 8 // tp
    # the same op kind and costing as the block's norms: read x, write y (2); read dy, x, write dx (3)
    assert [(op.layer, op.vector_elements, op.kernel) for op in added_f] == [
        ("q_norm", 2 * tokens * heads * 128, ("ln", tokens * heads, 128)),
        ("k_norm", 2 * tokens * kv * 128, ("ln", tokens * kv, 128))]
    assert sorted((op.layer, op.vector_elements) for op in added_d) == [
        ("k_norm", 3 * tokens * kv * 128), ("q_norm", 3 * tokens * heads * 128)]
    assert all(op.kind == "D" and not op.gemms for op in added_d)
    assert len(work.forward) == len(plain.forward) + 2 and len(work.backward) == len(plain.backward) + 2
    names = [op.layer for op in work.forward]
    assert names.index("qkv") < names.index("q_norm") < names.index("k_norm") < names.index("rope_q")


@pytest.mark.parametrize("tp, recompute, attention", [(1, "none", "standard"), (2, "selective", "standard"),
                                                      (4, "none", "flash")])
def test_qwen3_norms_keep_their_inputs_for_the_backward(tp, recompute, attention):
    c = replace(load_transformer(DATA / "qwen3_8b.json"), layers=1, seq=512)
    b, s = 2, 512
    kept = layer_activation_bytes(c, b, tp, recompute, False, attention)
    plain = layer_activation_bytes(replace(c, qk_norm=False), b, tp, recompute, False, attention)
    # each norm keeps its fp16 input (2 bytes per element), as Korthikanti et al. count the layer norms
    assert kept - plain == 2 * s * b * (32 // tp + 8 // tp) * 128
    assert layer_activation_bytes(c, b, tp, "full", False) == layer_activation_bytes(
        replace(c, qk_norm=False), b, tp, "full", False)  # full recompute keeps the layer's input alone


def test_qwen3_network_has_the_two_norms_before_the_scores():
    c = replace(load_transformer(DATA / "qwen3_8b.json"), layers=1, seq=64)
    layers = {layer.name: layer for layer in c.network().layers}
    q, k = layers["l1_q_norm"], layers["l1_k_norm"]
    assert (q.kind, q.input_elements, q.parameter_count) == ("layernorm", 64 * 32 * 128, 2 * 128)
    assert (k.kind, k.input_elements, k.parameter_count) == ("layernorm", 64 * 8 * 128, 2 * 128)
    assert q.inputs == k.inputs == ("l1_qkv",) and layers["l1_scores"].inputs == ("l1_q_norm", "l1_k_norm")


def test_qwen3_trains_slower_and_holds_more_than_without_its_norms():
    c = replace(load_transformer(DATA / "qwen3_8b.json"), layers=2)
    kw = {"cluster": GPU, "global_batch": 2, "seq": 512}
    qwen3 = archsim.train(c, **kw)[0]
    plain = archsim.train(replace(c, qk_norm=False), **kw)[0]
    assert qwen3.iteration_seconds > plain.iteration_seconds
    (mine,), (theirs,) = qwen3.memory, plain.memory
    assert mine.parameters - theirs.parameters == 2 * 2 * 128  # two layers' q and k norm γ
    assert mine.activations > theirs.activations


# -- Gemma -------------------------------------------------------------------------------------------
def test_gemma_7b_is_read_and_its_parameters_match_the_hand_count_and_the_card():
    c = load_transformer(DATA / "gemma_7b.json")
    assert (c.family, c.head_dim, c.attention_width, c.kv_heads) == ("llama", 256, 16 * 256, 16)
    assert (c.tied_embeddings, c.scaled_embeddings, c.qk_norm, c.mlp_activation) == (
        True, True, False, "gelu_pytorch_tanh")  # GemmaConfig's defaults: tied, GeGLU with tanh gelu
    h, v, layers = 3072, 256000, 28
    layer = _llama_layer(h, 16, 16, 256, 24576, 2)  # the RMS norms' γ
    assert layer == 4 * 3072 * 4096 + 3 * 3072 * 24576 + 2 * 3072
    count = layers * layer + h + v * h  # final norm's γ; the tied table once
    assert c.parameter_count == count
    assert 8.535e9 <= count < 8.545e9  # the card's 8.54B


def test_gemma_mlp_is_the_gated_mlp_and_its_embedding_is_scaled():
    c = replace(load_transformer(DATA / "gemma_7b.json"), layers=1, seq=128)
    llama = replace(c, activation="silu", scaled_embeddings=False)
    assert block_work(c, 2) == block_work(llama, 2)  # GeGLU: SwiGLU's GEMMs and elementwise ops
    tokens, h = 2 * 128, 3072
    work, plain = embedding_work(c, 2), embedding_work(llama, 2)
    scale_f = [op for op in work.forward if op not in plain.forward]
    scale_d = [op for op in work.backward if op not in plain.backward]
    assert [(op.layer, op.kind, op.vector_elements) for op in scale_f + scale_d] == [
        ("embedding_scale", "F", 2 * tokens * h), ("embedding_scale", "D", 2 * tokens * h)]
    assert archsim.train(c, cluster=GPU, global_batch=2)[0].iteration_seconds > \
        archsim.train(llama, cluster=GPU, global_batch=2)[0].iteration_seconds


@pytest.mark.parametrize("fields, field, words", [
    (_fields("gemma2_9b.json"), "model_type", "soft-capping"),
    ({**_fields("gemma2_9b.json"), "model_type": "gemma3_text"}, "model_type", "sliding-window"),
    ({**_fields("qwen3_8b.json"), "head_dim": None}, "head_dim", "missing"),
    ({**_fields("qwen3_8b.json"), "attention_bias": True}, "attention_bias", "biases"),
    ({**_fields("qwen3_8b.json"), "use_sliding_window": True}, "use_sliding_window", "sliding window"),
    # Gemma's MLP is GeGLU already: "geglu" is no transformers activation, its gate's is written (issue #40)
    ({**_fields("gemma_7b.json"), "hidden_activation": "geglu"}, "hidden_activation", 'hidden_activation "gelu"'),
])
def test_refused_configs_give_one_line_and_exit_2(tmp_path, capsys, fields, field, words):
    out = tmp_path / "out.csv"
    path = write_config(tmp_path, fields)
    argv = ["train", str(path), "--cluster", str(GPU), "--global-batch", "2", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and repr(field) in err and words in err
    assert not out.exists()
    with pytest.raises(InputError) as caught:
        load_transformer(path)
    assert caught.value.where.field == field


# -- head_dim in a [transformer] TOML ----------------------------------------------------------------
def test_toml_head_dim_reads_as_the_hf_config_does(tmp_path):
    toml = load_transformer(DATA / "llama_head_dim.toml")
    assert (toml.head_dim, toml.attention_width, toml.kv_channels) == (128, 4096, 4096)
    hf = load_transformer(write_config(tmp_path, {
        "model_type": "llama", "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 2,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
        "max_position_embeddings": 40960, "tie_word_embeddings": True}, "llama_head_dim"))
    # the same layers (the TOML states no activation or dropout: the llama defaults the HF path reads too)
    assert replace(hf, seq=512, activation="", attention_dropout=None) == toml
    narrow = tmp_path / "narrow.toml"
    narrow.write_text(DATA.joinpath("llama_head_dim.toml").read_text().replace("head_dim = 128", "head_dim = 80"))
    assert load_transformer(narrow) == replace(toml, name="narrow", kv_channels=0)  # 2560 / 32: as absent


@pytest.mark.parametrize("edit, words", [
    (("family = \"llama\"", "family = \"gpt\""), "llama only"),
    (("head_dim = 128", "head_dim = 0"), "positive integer"),
    (("head_dim = 128", "head_dim = \"128\""), "positive integer"),
    (("head_dim = 128", "head_dim = 65536"), "over"),
])
def test_toml_head_dim_is_checked_as_the_hf_one(tmp_path, capsys, edit, words):
    path = tmp_path / "bad.toml"
    path.write_text(DATA.joinpath("llama_head_dim.toml").read_text().replace(*edit))
    out = tmp_path / "out.csv"
    assert main(["train", str(path), "--cluster", str(GPU), "--global-batch", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'head_dim'" in err and words in err
    assert not out.exists()
