"""``--implementation pytorch-eager --dtype fp32`` activation memory: what Hugging Face's eager modules save for
their backward, counted by hand from transformers' module code (issue #37), not Megatron's count doubled.

Every value is an fp32 tensor (4 bytes), every dropout mask a bool tensor (1 byte: ``torch.native_dropout`` saves
its mask as bool in every dtype), every LayerNorm's mean and rstd fp32 per row (8 bytes a token). Per token and
layer (h hidden, f = 4h the MLP's width), read off the modules:

* GPT-2 (``GPT2Block``, ``GPT2Attention._attn``, ``NewGELUActivation``): ln_1's input (``native_layer_norm`` saves
  it) and output (``Conv1D``'s ``addmm`` saves its ``mat1``), c_attn's q, k, v (``matmul`` saves both operands:
  q and k for the scores, v for the context), c_proj's input (the merged heads), ln_2's input and output — 8h —
  and in the MLP c_fc's output (``torch.pow(x, 3)`` saves x), ``tanh``'s result, ``0.5 * x`` and ``1 + tanh``
  (the last product saves both factors) and the activation's output (c_proj's ``mat1``): 5f = 20h. 28h values,
  112·h bytes, the residual dropouts' masks 2·h, two LayerNorms' stats 16. Per score: softmax's result (4),
  attention dropout's mask (1) and output (4, the context matmul's operand): 9. The scale divides by a
  0-dimensional tensor that needs no gradient (nothing s² saved) and ``torch.where`` saves only its bool
  condition, a slice of the module's causal buffer.
* OPT (``OPTDecoderLayer``): the same 8h; ReLU saves its result, fc2's input (1·f); no attention dropout, but
  ``torch.max(scores, finfo.min)`` (``maximum``) saves the masked scores beside softmax's result: 8 per score.
* BERT (``BertLayer``, post-LayerNorm): the layer's input (query/key/value's ``mat1``), q, k, v, the context
  (the output dense's input), the first LayerNorm's input and output, the second's input — 8h; exact GeLU
  saves its input, the output dense its output (2f); 9 per score.

Embedding: GPT-2's dropout mask (h bytes a token); BERT's LayerNorm input (4h), stats (8) and the mask; OPT's
nothing (no dropout). Head: GPT-2's and OPT's ln_f input and output and stats (8h + 8), BERT's transform (dense
input, GeLU input, LayerNorm input and output: 16h + 8); the unpadded fp32 logits s·b·V (held by the model's
output until the backward) and the log-softmax's fp32 result on the shifted (s − 1)·b rows, 4 bytes each.

The fp32 tests failed on the old code, which doubled Megatron's fp16 count (68·s·b·h + 10·a·s²·b a layer, the
masks at 2 bytes, and 12 bytes per padded logit); the fp16 test passes on both: that figure must not move.
"""

from __future__ import annotations

import pytest
from input_checks_common import GPT2, write_config

import archsim

ONE_H100 = GPT2.parents[1] / "clusters" / "h100_1gpu.toml"
S, H, A, LAYERS, V = 1024, 768, 12, 12, 50257  # GPT-2 small, its vocabulary unpadded (Hugging Face's)


def _eager(model, dtype: str, b: int, recompute: str = "none") -> float:
    result, _ = archsim.train(str(model), cluster=str(ONE_H100), global_batch=b, micro_batch=b, dtype=dtype,
                              recompute=recompute, attention="standard", implementation="pytorch-eager")
    return result.memory[0].activations


def _gpt2_layer(b: int) -> float:
    t = S * b
    return (112 * H + 2 * H + 16) * t + 9 * A * S * S * b


def _gpt2_edges(b: int) -> float:
    t = S * b
    return H * t + (8 * H + 8) * t + 4 * V * t + 4 * V * (S - 1) * b


@pytest.mark.parametrize("b", [1, 4])
def test_fp32_eager_gpt2_keeps_what_hugging_faces_modules_save(b):
    """No recompute: 12 layers of 114·h + 16 bytes a token and 9 a score, the embedding's mask, the head's."""
    assert _eager(GPT2, "fp32", b) == pytest.approx(LAYERS * _gpt2_layer(b) + _gpt2_edges(b), rel=1e-12)


def test_fp32_eager_gpt2_under_gradient_checkpointing():
    """Full recompute: each layer's fp32 input (4·h a token) and, while one layer is rerun, its whole set less that
    input — ``ln_1`` saves the checkpoint itself, counted among the kept (until 2026-12-02 twice: failed there)."""
    b = 2
    expected = LAYERS * 4 * H * S * b + _gpt2_edges(b) + _gpt2_layer(b) - 4 * H * S * b
    assert _eager(GPT2, "fp32", b, "full") == pytest.approx(expected, rel=1e-12)


# NeuSight's model_configs/opt.json and bert.json shapes (their dropout fields as the files give them)
OPT = {"model_type": "opt", "architectures": ["OPTForCausalLM"], "activation_function": "relu",
       "do_layer_norm_before": True, "dropout": 0.1, "attention_dropout": 0.0, "activation_dropout": 0.0,
       "ffn_dim": 2048, "hidden_size": 512, "max_position_embeddings": 2048, "num_attention_heads": 8,
       "num_hidden_layers": 2, "vocab_size": 50272, "word_embed_proj_dim": 512}
BERT = {"model_type": "bert", "architectures": ["BertLMHeadModel"], "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "intermediate_size": 3072,
        "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 2, "type_vocab_size": 2,
        "vocab_size": 30522}


def test_fp32_eager_opt_counts_relu_once_and_the_clamps_scores(tmp_path):
    """OPT, s = 2048, b = 1, h = 512, f = 2048, a = 8, 2 layers: (8h + f)·4 + 2h + 16 a token, 8 a score; no
    embedding dropout; ln_f's 8h + 8 and 4 + 4 bytes a logit."""
    s, h, f, a, v, b = 2048, 512, 2048, 8, 50272, 1
    t = s * b
    layer = ((8 * h + f) * 4 + 2 * h + 16) * t + 8 * a * s * s * b
    expected = 2 * layer + (8 * h + 8) * t + 4 * v * t + 4 * v * (s - 1) * b
    assert _eager(write_config(tmp_path, OPT), "fp32", b) == pytest.approx(expected, rel=1e-12)


def test_fp32_eager_bert_counts_its_post_norms_and_gelus_input(tmp_path):
    """BERT, s = 512, b = 2, h = 768, f = 3072, a = 12, 2 layers: (8h + 2f)·4 + 2h + 16 a token, 9 a score;
    the embedding's LayerNorm input, stats and mask (5h + 8); the transform's 16h + 8; 8 bytes a logit."""
    s, h, f, a, v, b = 512, 768, 3072, 12, 30522, 2
    t = s * b
    layer = ((8 * h + 2 * f) * 4 + 2 * h + 16) * t + 9 * a * s * s * b
    expected = 2 * layer + (5 * h + 8) * t + (16 * h + 8) * t + 4 * v * t + 4 * v * (s - 1) * b
    assert _eager(write_config(tmp_path, BERT), "fp32", b) == pytest.approx(expected, rel=1e-12)


def test_fp16_eager_gpt2_is_korthikantis_as_before():
    """fp16 eager (``benchmarks/train_step.py``'s AMP loop) keeps its count: 34·s·b·h + 5·a·s²·b a layer, the
    embedding's 1-byte mask, 6 bytes a padded logit (50,304) — unchanged."""
    b = 2
    sbh = S * b * H
    expected = LAYERS * (34 * sbh + 5 * A * S * S * b) + sbh + 6 * S * b * 50304
    assert _eager(GPT2, "fp16", b) == pytest.approx(expected, rel=1e-12)


# A small Switch Transformers config (switch-base's form: ReLU FFNs, dropout 0.1, router jitter), 2 blocks a stack
SWITCH = {"model_type": "switch_transformers", "architectures": ["SwitchTransformersForConditionalGeneration"],
          "d_ff": 256, "d_kv": 16, "d_model": 64, "decoder_sparse_step": 2, "encoder_sparse_step": 2,
          "feed_forward_proj": "relu", "is_gated_act": False, "expert_capacity": 8,
          "num_decoder_layers": 4, "num_experts": 4, "num_heads": 4, "num_layers": 4,
          "num_sparse_decoder_layers": 2, "num_sparse_encoder_layers": 2, "dropout_rate": 0.1,
          "router_jitter_noise": 0.01, "relative_attention_num_buckets": 32, "vocab_size": 100}


def test_fp32_eager_switch_keeps_four_bytes_an_fp32_element(tmp_path):
    """Switch Transformers' fp32 eager list counts the elements autograd keeps in fp32 elements, its 1-byte masks as
    ¼ element (``switch_activation_elements``' docstring): 4 bytes each, as ``memories`` scaled them before the
    1-byte-mask change moved the scaling into ``stage_memory`` past Switch's early return (2 bytes an element since:
    this test failed on the old code)."""
    from archsim.training.hf_switch_ops import switch_activation_elements
    from archsim.workload.model_files import load_transformer

    model = write_config(tmp_path, SWITCH)
    b = 2
    elements = switch_activation_elements(load_transformer(model, seq=32), b)
    result, _ = archsim.train(str(model), cluster=str(ONE_H100), seq=32, global_batch=b, micro_batch=b,
                              dtype="fp32", recompute="none", attention="standard", implementation="pytorch-eager")
    assert result.memory[0].activations == pytest.approx(4 * elements, rel=1e-12)
