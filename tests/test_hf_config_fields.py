"""Hugging Face config fields that change the work are read or refused, none silently ignored.

Sliding-window attention (Mistral's ``sliding_window``): with FlashAttention-2 a query attends only to the
keys k with 0 ≤ q − k < window, and the kernel skips the rest; the pairs are counted here by brute force
(numpy masks over small sizes), independently of archsim's closed form. Standard (eager, Megatron)
attention computes the whole s × s square and only masks it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from archsim.devices.device import catalog_device
from archsim.devices.kernel_ops import op_seconds
from archsim.errors import InputError
from archsim.training.fitted import A100_KERNELS
from archsim.training.layer_ops import block_work, flash_attention_ops
from archsim.workload.model_files import load_transformer

# mistralai/Mistral-7B-v0.1's config.json (its shape and attention fields)
MISTRAL_7B = {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_act": "silu",
              "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
              "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
              "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": False,
              "vocab_size": 32000}


def _load(tmp_path, fields: dict, seq: int | None = None):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    return load_transformer(path, seq=seq)


def _pairs(s: int, window: int) -> int:
    """(query, key) pairs a causal attention with a window keeps: 0 ≤ q − k < window, by brute force (one int32
    s × s table of q − k: at s = 8192 two int64 meshgrids and their differences took 4 s)."""
    offset = np.arange(s, dtype=np.int32)[:, None] - np.arange(s, dtype=np.int32)[None, :]
    return int(np.count_nonzero((offset >= 0) & (offset < window)))


def _blocks(s: int, br: int, bc: int, window: int) -> int:
    """Br × Bc blocks holding at least one pair 0 ≤ q − k < window, by brute force over the pairs."""
    q, k = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    kept = (q - k >= 0) & (q - k < window)
    return sum(bool(kept[i:i + br, j:j + bc].any()) for i in range(0, s, br) for j in range(0, s, bc))


@pytest.mark.parametrize("s", [1, 7, 130, 300])
def test_flash_counts_the_windowed_blocks_its_kernel_computes(s):
    hd, heads, kv = 128, 6, 2  # head dim 128: forward 128 × 64 blocks, backward 64 × 128
    full_forward, full_backward = flash_attention_ops(s, hd, heads, kv)
    for window in sorted({1, 2, 63, 64, 65, 129, s - 1, s, s + 2} - {0}):
        forward, backward = flash_attention_ops(s, hd, heads, kv, window=window)
        # every block a kept pair falls in costs a whole 128 × 64 tile: S = QKᵀ and O = PV
        assert forward.macs == 2 * hd * heads * 128 * 64 * _blocks(s, 128, 64, window)
        assert backward.macs == 5 * hd * heads * 64 * 128 * _blocks(s, 64, 128, window)  # QKᵀ, dV, dP, dQ, dK
        if window >= s:
            assert (forward, backward) == (full_forward, full_backward)
        # every key is inside some query's window: Q, K, V, O and dO are still each read once
        assert forward.vector_elements == full_forward.vector_elements
        assert backward.vector_elements == full_backward.vector_elements


def test_mistral_reads_its_sliding_window(tmp_path):
    assert _load(tmp_path, MISTRAL_7B).sliding_window == 4096
    assert _load(tmp_path, {**MISTRAL_7B, "sliding_window": None}).sliding_window is None  # v0.2 and later
    with pytest.raises(InputError, match="MistralConfig reads it absent as 4096"):  # not none: transformers' default
        _load(tmp_path, {k: v for k, v in MISTRAL_7B.items() if k != "sliding_window"})
    with pytest.raises(InputError, match="sliding_window"):
        _load(tmp_path, {**MISTRAL_7B, "sliding_window": 0})


def _attention_seconds(c, attention: str) -> float:
    work = block_work(c, 1, 1, attention=attention)
    ops = [op for op in (*work.forward, *work.backward) if op.layer.split(".")[0] in
           ("flash_attention", "scores", "context", "softmax", "attn_dropout")]
    return float(op_seconds(ops, catalog_device("a100-80gb"), A100_KERNELS).sum())


def test_a_window_shortens_flash_attention_and_leaves_standard_attention_alone(tmp_path):
    windowed = _load(tmp_path, MISTRAL_7B, seq=16384)
    dense = _load(tmp_path, {**MISTRAL_7B, "sliding_window": None}, seq=16384)
    assert _attention_seconds(windowed, "flash") < 0.75 * _attention_seconds(dense, "flash")  # 4,096 of 16,384 keys
    assert _attention_seconds(windowed, "standard") == _attention_seconds(dense, "standard")  # a mask, no less work
    shorter = _load(tmp_path, MISTRAL_7B, seq=4096)  # the window covers the sequence: nothing changes
    assert block_work(shorter, 2, attention="flash") == block_work(
        _load(tmp_path, {**MISTRAL_7B, "sliding_window": None}, seq=4096), 2, attention="flash")


def test_a_toml_transformer_takes_a_sliding_window(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text('[transformer]\nfamily = "llama"\nlayers = 2\nhidden = 256\nheads = 4\nvocab = 1000\n'
                    'seq = 512\nffn = 688\nsliding_window = 128\n')
    assert load_transformer(path).sliding_window == 128
    path.write_text('[transformer]\nfamily = "bert"\nlayers = 2\nhidden = 256\nheads = 4\nvocab = 1000\n'
                    'seq = 512\nsliding_window = 128\n')
    with pytest.raises(InputError, match="sliding_window"):
        load_transformer(path)


@pytest.mark.long
def test_flash_hardware_flops_recompute_only_the_windowed_scores(tmp_path):
    from archsim.training.throughput import recomputed_flops

    s, w = 8192, 4096
    c = _load(tmp_path, MISTRAL_7B, seq=s)
    # flash's backward reruns QKᵀ: 2·hd FLOPs per counted pair per head, 2·pairs − s pairs as the square counts
    assert recomputed_flops(c, 3, "none", "flash") == pytest.approx(3 * 32 * 2 * 4096 * (2 * _pairs(s, w) - s))
    dense = _load(tmp_path, {**MISTRAL_7B, "sliding_window": None}, seq=s)
    assert recomputed_flops(dense, 3, "none", "flash") == pytest.approx(3 * 32 * 2 * 4096 * s * s)


# -- MLP activations ----------------------------------------------------------------------------------
# openai-community/gpt2's config.json (its shape and MLP fields)
GPT2 = {"model_type": "gpt2", "activation_function": "gelu_new", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
        "n_layer": 12, "n_positions": 1024, "vocab_size": 50257, "attn_pdrop": 0.1, "embd_pdrop": 0.1,
        "resid_pdrop": 0.1}
# google-bert/bert-base-uncased's config.json
BERT = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": 768, "intermediate_size": 3072,
        "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
        "type_vocab_size": 2, "vocab_size": 30522, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "position_embedding_type": "absolute"}


def _mlp_kernels(work, kind: str) -> list:
    """The block's activation kernels: memory-bound ops between its two MLP GEMMs (fc1 … fc2), in issue
    order, but fc1's bias gradient."""
    ops = list(work.forward if kind == "F" else reversed(work.backward))
    names = [op.layer for op in ops]
    first, last = names.index("fc1"), names.index("fc2")
    return [op for op in ops[first + 1:last] if not op.gemms and not op.layer.endswith("bias_grad")]


@pytest.mark.parametrize("name", ["gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh", "sigmoid"])
def test_one_kernel_activations_are_read_and_cost_as_the_fused_bias_activation(tmp_path, name):
    c = _load(tmp_path, {**GPT2, "activation_function": name})
    assert c.activation == name
    # Megatron's op list: bias and activation in one kernel, read x, write y (2F); backward read dy, x, write dx (3F)
    assert block_work(c, 2) == block_work(_load(tmp_path, GPT2), 2)
    llama = _load(tmp_path, {**MISTRAL_7B, "hidden_act": name}, seq=512)
    assert block_work(llama, 1) == block_work(_load(tmp_path, MISTRAL_7B, seq=512), 1)


@pytest.mark.parametrize("fields, key", [(GPT2, "activation_function"), (BERT, "hidden_act")])
def test_the_eager_op_list_runs_the_activation_the_config_names(tmp_path, fields, key):
    from archsim.training.hf_ops import hf_block_work

    b, s = 2, 128
    tokens, f = b * s, 3072  # FFN elements: F = T·f
    new = hf_block_work(_load(tmp_path, {**fields, key: "gelu_new"}, seq=s), b)
    # transformers' NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), one kernel per op:
    # pow, ×c, +, ×√(2/π), tanh, 1 +, ×0.5, product forward; 11 backward
    assert len(_mlp_kernels(new, "F")) == 8 and len(_mlp_kernels(new, "D")) == 11
    for name in ("gelu", "relu", "silu"):  # nn.functional's one kernel each way
        one = hf_block_work(_load(tmp_path, {**fields, key: name}, seq=s), b)
        assert [op.vector_elements for op in _mlp_kernels(one, "F")] == [2 * tokens * f]  # read x, write y
        assert [op.vector_elements for op in _mlp_kernels(one, "D")] == [3 * tokens * f]  # read dy, x, write dx


@pytest.mark.parametrize("fields, key, value", [
    (GPT2, "activation_function", "swiglu"),  # gated: two GEMMs into the MLP, not one
    (GPT2, "activation_function", "geglu"),
    (GPT2, "activation_function", "gelu_fast"),  # several eager kernels archsim does not list
    (GPT2, "activation_function", "quick_gelu"),
    (GPT2, "activation_function", "linear"),  # no kernel at all
    (GPT2, "activation_function", 3),
    (BERT, "hidden_act", "gelu_10"),
    (MISTRAL_7B, "hidden_act", "relu2"),
])
def test_activations_archsim_cannot_state_are_refused_naming_the_field_and_value(tmp_path, fields, key, value):
    with pytest.raises(InputError) as caught:
        _load(tmp_path, {**fields, key: value})
    message = str(caught.value)
    assert key in message and repr(value) in message and "gelu_new" in message and "\n" not in message


# -- every other field that changes the work: refused at a value archsim does not model -----------------
# facebook/opt-1.3b's config.json (as tests/test_hf_opt.py), meta-llama/Llama-2-7b-hf's
OPT = {"model_type": "opt", "activation_function": "relu", "do_layer_norm_before": True, "dropout": 0.1,
       "attention_dropout": 0.0, "activation_dropout": 0.0, "enable_bias": True, "layerdrop": 0.0,
       "layer_norm_elementwise_affine": True, "ffn_dim": 8192, "hidden_size": 2048, "max_position_embeddings": 2048,
       "num_attention_heads": 32, "num_hidden_layers": 24, "vocab_size": 50272, "word_embed_proj_dim": 2048}
LLAMA_2 = {"model_type": "llama", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
           "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "num_key_value_heads": 32, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
           "tie_word_embeddings": False, "vocab_size": 32000, "attention_bias": False}
SWITCH_BASE_8 = {"model_type": "switch_transformers", "d_model": 768, "d_ff": 3072, "d_kv": 64, "num_heads": 12,
                 "num_layers": 12, "num_decoder_layers": 12, "num_sparse_encoder_layers": 6,
                 "num_sparse_decoder_layers": 6, "num_experts": 8, "expert_capacity": 64, "vocab_size": 32128,
                 "relative_attention_num_buckets": 32, "dropout_rate": 0.1, "router_jitter_noise": 0.01,
                 "feed_forward_proj": "relu", "is_gated_act": False, "router_bias": False}

REFUSED = [
    (GPT2, "add_cross_attention", True),  # a cross-attention sub-layer in every block
    (GPT2, "scale_attn_weights", False),  # the eager list's scale kernel would not run
    (GPT2, "scale_attn_by_inverse_layer_idx", True),  # one more kernel over the scores
    (GPT2, "reorder_and_upcast_attn", True),  # fp32 baddbmm scores: other kernels
    (GPT2, "attn_pdrop", 0.0),  # PyTorch runs no dropout kernel at p = 0; archsim's lists run one
    (GPT2, "resid_pdrop", 0.0),
    (GPT2, "embd_pdrop", 0.0),
    (OPT, "enable_bias", False),  # no biases: fewer parameters and gradients
    (OPT, "layer_norm_elementwise_affine", False),  # LayerNorms without γ, β
    (OPT, "_remove_final_layer_norm", True),
    (OPT, "layerdrop", 0.1),  # layers skipped at random
    (OPT, "dropout", 0.0),
    (OPT, "attention_dropout", 0.1),  # archsim's OPT list runs no attention dropout
    (OPT, "activation_dropout", 0.1),
    (LLAMA_2, "attention_bias", True),  # biases on q, k, v, o
    (LLAMA_2, "mlp_bias", True),
    (LLAMA_2, "pretraining_tp", 2),  # transformers slices each GEMM into parts
    (BERT, "add_cross_attention", True),
    (BERT, "position_embedding_type", "relative_key"),  # a distance embedding and two einsums per layer
    (BERT, "chunk_size_feed_forward", 64),  # the FFN run in chunks: more, smaller kernels
    (BERT, "hidden_dropout_prob", 0.0),
    (BERT, "attention_probs_dropout_prob", 0.0),
    (SWITCH_BASE_8, "router_bias", True),  # a bias on the router's Linear
]


@pytest.mark.parametrize("fields, key, value", REFUSED, ids=[f"{f['model_type']}-{k}" for f, k, _ in REFUSED])
def test_a_field_set_to_work_archsim_does_not_model_is_refused(tmp_path, fields, key, value):
    _load(tmp_path, fields)  # the published config loads
    with pytest.raises(InputError) as caught:
        _load(tmp_path, {**fields, key: value})
    message = str(caught.value)
    assert key in message and "\n" not in message


@pytest.mark.parametrize("fields, change", [
    (LLAMA_2, {"rope_scaling": {"type": "linear", "factor": 2.0}, "rope_theta": 500000.0}),  # frequencies only
    (LLAMA_2, {"is_decoder": True, "add_cross_attention": True}),
    (GPT2, {"layer_norm_epsilon": 1e-6, "initializer_range": 0.01, "bos_token_id": 1, "use_cache": False}),
    (BERT, {"is_decoder": True, "pad_token_id": 1, "classifier_dropout": 0.2}),
    (OPT, {"pad_token_id": 1, "init_std": 0.01}),
])
def test_fields_that_change_no_work_are_accepted_and_change_nothing(tmp_path, fields, change):
    assert _load(tmp_path, {**fields, **change}) == _load(tmp_path, fields)


def _tables(heading: str) -> list[list[str]]:
    """The first-column `names` of each table under ``heading`` in docs/formats.md."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")
    section = re.split(r"^## ", text.split(heading + "\n", 1)[1], flags=re.MULTILINE)[0]
    tables: list[list[str]] = [[]]
    for line in section.splitlines():
        match = re.match(r"\| `([^`]+)` \|", line)
        if match:
            tables[-1].append(match.group(1))
        elif tables[-1]:
            tables.append([])
    return [table for table in tables if table]


def test_docs_list_the_toml_keys_and_every_field_archsim_refuses():
    from archsim.workload.hf_config import FIXED
    from archsim.workload.model_files import TOML_KEYS

    toml, read, refused, no_work = _tables("## Transformer configs")
    assert set(toml) == TOML_KEYS
    assert set(read) == {"attention_dropout", "partial_rotary_factor"}
    assert not set(read) & {rule.key for rule in FIXED["llama"]} and not set(read) & set(no_work)
    assert set(refused) == {rule.key for rules in FIXED.values() for rule in rules} >= {key for _, key, _ in REFUSED}
    assert "layer_norm_epsilon" in no_work


def test_model_flops_count_the_windowed_attention_as_flash_runs_it(tmp_path):
    from archsim.training.throughput import model_flops, recomputed_flops

    s, w, batch = 8192, 4096, 3
    c = _load(tmp_path, MISTRAL_7B, seq=s)
    dense = _load(tmp_path, {**MISTRAL_7B, "sliding_window": None}, seq=s)
    # PaLM's count: 12·layers·hidden FLOPs per attended key per token (scores and context, forward and
    # backward); the window keeps 2·pairs − s of the square's s² query-key products, as flash counts them
    dropped = batch * 12 * 32 * 4096 * (s * s - (2 * _pairs(s, w) - s))
    assert model_flops(dense, batch) - model_flops(c, batch) == pytest.approx(dropped)
    # full recompute reruns the forward: a third of the attention's
    rerun = recomputed_flops(dense, batch, "full", "flash") - recomputed_flops(c, batch, "full", "flash")
    assert rerun == pytest.approx(dropped / 3 + dropped / 6)  # the forward's scores and context, and flash's QKᵀ
