"""OPT (Hugging Face ``OPTForCausalLM``) read from its config.json and lowered to the kernels its eager
fp32 modules run: the counts and bytes below are worked out by hand from transformers' OPT code
(q/k/v as three Linears, q scaled, heads split by a copy each, the causal mask added and the scores
clamped, ReLU, residual dropout 0.1 and attention/activation dropout 0), the FLOPs from the shapes."""

from __future__ import annotations

import json

import pytest
from input_checks_common import load_config

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.hf_ops import hf_block_work, hf_embedding_work, hf_head_work

# facebook/opt-1.3b's config.json (its shape fields), as NeuSight's model_configs/opt_13.json writes it
OPT_13 = {"model_type": "opt", "architectures": ["OPTForCausalLM"], "activation_function": "relu",
          "do_layer_norm_before": True, "dropout": 0.1, "attention_dropout": 0.0, "activation_dropout": 0.0,
          "ffn_dim": 8192, "hidden_size": 2048, "max_position_embeddings": 2048, "num_attention_heads": 32,
          "num_hidden_layers": 24, "vocab_size": 50272, "word_embed_proj_dim": 2048}


def test_opt_config_reads_its_shapes_and_the_position_tables_two_extra_rows(tmp_path):
    c = load_config(tmp_path, OPT_13)
    assert (c.family, c.layers, c.hidden, c.heads, c.ffn, c.vocab, c.seq) == ("opt", 24, 2048, 32, 8192, 50272, 2048)
    assert c.positions == 2050 and c.tied_embeddings
    # facebook/opt-1.3b has 1,315,758,080 parameters: 24 layers of 4h² + 2hf weights and 9h + f biases and
    # norms, the tied 50,272 × h table, 2,050 position rows and the final LayerNorm's 2h
    layer = 4 * 2048**2 + 2 * 2048 * 8192 + 9 * 2048 + 8192
    assert 24 * layer + (50272 + 2050) * 2048 + 2 * 2048 == 1_315_758_080


@pytest.mark.parametrize("change", [{"do_layer_norm_before": False}, {"word_embed_proj_dim": 512}])
def test_opt_variants_it_does_not_model_are_refused(tmp_path, change):
    with pytest.raises(InputError, match="not modelled"):
        load_config(tmp_path, {**OPT_13, **change})


def test_an_opt_layer_runs_23_kernels_forward_with_the_shapes_flops(tmp_path):
    c = load_config(tmp_path, OPT_13, seq=1024)
    b, s, h, f, a = 2, 1024, 2048, 8192, 32
    work = hf_block_work(c, b)
    assert len(work.forward) == 23  # LN, q, k, v, q scale, 3 head copies, scores, mask, clamp, softmax, context,
    # merge, out_proj, dropout, add, LN, fc1, ReLU, fc2, dropout, add
    t = s * b
    flops = sum(2 * g.m * g.k * g.n * g.count for op in work.forward for g in op.gemms)
    assert flops == 2 * t * (4 * h * h + 2 * h * f) + 2 * 2 * b * a * s * s * (h // a)
    x, scores = t * h, b * a * s * s
    streamed = sum(op.vector_elements for op in work.forward if not op.gemms and not op.kernel)
    # q scale 2X, three head copies 6X, mask and clamp 4S, merge 2X, two dropouts 4.5X, two adds 6X, ReLU 2F
    assert streamed == pytest.approx(2 * x + 6 * x + 4 * scores + 2 * x + 4.5 * x + 6 * x + 2 * t * f, abs=2)


def test_opt_embedding_and_head(tmp_path):
    c = load_config(tmp_path, OPT_13, seq=1024)
    names = [op.layer for op in hf_embedding_work(c, 1).forward]
    # transformers 4.35's to_4d on the [b, 1, s, s] mask: 1 − mask, to bool, masked_fill (clone and fill), + causal
    assert names == ["token_embedding", "mask_invert", "mask_to_bool", "mask_fill", "mask_add", "position_embedding",
                     "position_add"]  # no dropout
    head = [op.layer for op in hf_head_work(c, 1).forward]
    assert head[:2] == ["ln_f", "lm_head"] and hf_head_work(c, 1).forward[1].gemms[0].n == 50272


def test_archsim_trains_opt_in_fp32_eager_on_one_gpu(tmp_path, capsys):
    config = tmp_path / "opt_13.json"
    config.write_text(json.dumps(OPT_13))
    cluster = tmp_path / "h100.toml"
    cluster.write_text('[cluster]\nname = "one"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 128\n'
                       'gpu = "NVIDIA_H100_80GB_HBM3"\n')
    assert main(["train", str(config), "--cluster", str(cluster), "--seq", "1024", "--global-batch", "2",
                 "--micro-batch", "2", "--dtype", "fp32", "--implementation", "pytorch-eager", "--attention",
                 "standard", "--recompute", "none", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["forward_seconds"] > 0 and meta["backward_seconds"] > meta["forward_seconds"]
