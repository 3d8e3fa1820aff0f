"""Switch Transformers (Hugging Face ``SwitchTransformersForConditionalGeneration``) read from its
config.json and lowered to the kernels its eager fp32 modules run. The parameter counts are checked
against T5's published sizes (the same stack with one expert), the kernel counts and GEMM FLOPs are
worked out by hand from the modules' code (module docstring of archsim.training.hf_switch_ops)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from input_checks_common import load_config

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.hf_switch_ops import (
    gemm_flops,
    routed_tokens,
    switch_block_work,
    switch_embedding_work,
    switch_head_work,
)
from archsim.workload.model_files import load_transformer

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "gpu_kernels" / "model_configs" / "switchxl4.json"
# NeuSight's model_configs/switchxl4.json (its shape fields)
SWITCH_XL4 = {"model_type": "switch_transformers", "architectures": ["SwitchTransformersForConditionalGeneration"],
              "d_ff": 16384, "d_kv": 128, "d_model": 1024, "decoder_sparse_step": 2, "encoder_sparse_step": 2,
              "dense_act_fn": "relu", "feed_forward_proj": "relu", "is_gated_act": False, "expert_capacity": 64,
              "num_decoder_layers": 24, "num_experts": 4, "num_heads": 32, "num_layers": 24,
              "num_sparse_decoder_layers": 12, "num_sparse_encoder_layers": 12, "dropout_rate": 0.1,
              "router_jitter_noise": 0.01, "relative_attention_num_buckets": 32, "vocab_size": 32128}


def test_switch_config_reads_blocks_of_two_layers_per_stack_and_the_attention_width(tmp_path):
    c = load_config(tmp_path, SWITCH_XL4)
    assert (c.family, c.layers, c.sparse_step, c.hidden, c.heads, c.head_dim, c.kv_channels) == \
        ("switch", 12, 2, 1024, 32, 128, 4096)
    assert (c.ffn, c.experts, c.expert_capacity, c.vocab, c.position_buckets, c.seq) == \
        (16384, 4, 64, 32128, 32, 512)


def test_one_expert_switch_counts_t5s_published_parameters(tmp_path):
    # T5-Large (d_model 1024, d_ff 4096, 16 heads of 64, 24 + 24 layers): encoder 334,939,648 and decoder
    # 435,627,520 parameters with the shared 32,128-row table in each (the T5 paper's sizes as tabulated);
    # as a Switch model of one expert in every layer it adds a 1024 × 1 router per layer (48).
    large = {**SWITCH_XL4, "d_ff": 4096, "d_kv": 64, "num_heads": 16, "num_experts": 1,
             "num_sparse_encoder_layers": 24, "num_sparse_decoder_layers": 24}
    c = load_config(tmp_path, large)
    assert c.parameter_count - 48 * 1024 == 334_939_648 + 435_627_520 - 32128 * 1024
    # T5-3B (32 heads of 128, d_ff 16384): 2.85 B parameters
    xl = load_config(tmp_path, {**SWITCH_XL4, "num_experts": 1, "num_sparse_encoder_layers": 24,
                                     "num_sparse_decoder_layers": 24})
    assert round((xl.parameter_count - 48 * 1024) / 1e7) == 285


def test_switch_xl4_has_three_more_experts_in_every_second_layer(tmp_path):
    c = load_config(tmp_path, SWITCH_XL4)
    # T5-3B's 2,851,598,336 (its hand count: 24 encoder layers of 4·1024·4096 + 2·1024·16384 + 2·1024,
    # 24 decoder layers of 8·1024·4096 + 2·1024·16384 + 3·1024, the table, two 32 × 32 bias tables and
    # two final norms) + 24 sparse layers × (3 experts of 2·1024·16384 + a 1024 × 4 router)
    t5_3b = 24 * (4 * 1024 * 4096 + 2 * 1024 * 16384 + 2 * 1024) + 24 * (8 * 1024 * 4096 + 2 * 1024 * 16384
                                                                          + 3 * 1024) + 32128 * 1024 + 2 * 32 * 32 + 2 * 1024
    assert t5_3b == 2_851_598_336
    assert c.parameter_count == t5_3b + 24 * (3 * 2 * 1024 * 16384 + 1024 * 4)


@pytest.mark.parametrize("change", [{"num_decoder_layers": 12}, {"num_sparse_decoder_layers": 8},
                                    {"num_layers": 22, "num_decoder_layers": 22, "num_sparse_encoder_layers": 5,
                                     "num_sparse_decoder_layers": 5}, {"is_gated_act": True},
                                    {"feed_forward_proj": "gated-gelu"}, {"tie_word_embeddings": False},
                                    {"dropout_rate": 0.0}, {"router_jitter_noise": 0}])
def test_switch_variants_it_does_not_model_are_refused(tmp_path, change):
    with pytest.raises(InputError, match="not modelled"):
        load_config(tmp_path, {**SWITCH_XL4, **change})


def test_a_toml_switch_is_refused_for_its_config_json(tmp_path):
    path = tmp_path / "switch.toml"
    path.write_text('[transformer]\nfamily = "switch"\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nseq = 16\n')
    with pytest.raises(InputError, match="config.json"):
        load_transformer(path)


def test_the_sparse_step_is_derived_from_the_sparse_layer_count_as_transformers_does(tmp_path):
    # SwitchTransformersConfig sets encoder_sparse_step = num_layers // num_sparse_encoder_layers, over
    # whatever step the file states: 24 // 6 = 4 (layers 1, 5, 9, … sparse), 6 blocks of 4 + 4 layers
    c = load_config(tmp_path, {**SWITCH_XL4, "num_sparse_encoder_layers": 6, "num_sparse_decoder_layers": 6})
    assert (c.sparse_step, c.layers) == (4, 6)
    steps_only = {k: v for k, v in SWITCH_XL4.items() if not k.startswith("num_sparse")}
    assert load_config(tmp_path, {**steps_only, "encoder_sparse_step": 3, "decoder_sparse_step": 3}).layers == 8


def test_a_uniform_router_fills_each_expert_to_its_capacity_or_its_share(tmp_path):
    assert routed_tokens(load_config(tmp_path, SWITCH_XL4, seq=512), 2) == 2 * 64  # 512 / 4 = 128 > 64
    assert routed_tokens(load_config(tmp_path, SWITCH_XL4, seq=128), 3) == 3 * 32  # 128 / 4 = 32 ≤ 64


def test_a_block_runs_the_kernels_of_its_two_encoder_and_two_decoder_layers(tmp_path):
    c = load_config(tmp_path, SWITCH_XL4, seq=512)
    work = switch_block_work(c, 2)
    # an attention sub-layer: RMS norm (6), q, k, v, matmul's copies of q, kᵀ and v (b = 2 > 1: [b, a] folded
    # by reshape), scores, += bias, softmax, dropout, context, merge, o, dropout, residual = 21; a dense FFN:
    # norm (6), wi, ReLU, dropout, wo, dropout, residual = 12; a sparse FFN: norm (6), jitter (2), router
    # Linear, softmax, argmax, one-hot, cumsum, ≤, ×, argmax, bool, max (10), clone, 4 experts × (nonzero,
    # gather, wi, ReLU, dropout, wo, index_put), × prob, dropout, residual = 50
    attention, dense, sparse = 21, 12, 50
    assert len(work.forward) == 2 * attention + dense + sparse + 2 * 2 * attention + dense + sparse == 250
    # the backward: two GEMMs for each forward GEMM, the weight ones kind G (scores and context: D, D)
    forward_gemms = [op for op in work.forward if op.gemms]
    backward_gemms = [op for op in work.backward if op.gemms]
    assert len(forward_gemms) == 6 * 6 + 2 * 2 + 2 * (1 + 4 * 2) == 58
    assert len(backward_gemms) == 2 * 58
    assert sum(op.kind == "G" for op in backward_gemms) == 58 - 6 * 2


def test_a_blocks_gemm_flops_by_hand(tmp_path):
    s, b, h, kv, f, e, a = 512, 2, 1024, 4096, 16384, 4, 32
    c = load_config(tmp_path, SWITCH_XL4, seq=s)
    t, n = s * b, b * 64
    attention = 2 * 4 * t * h * kv + 2 * 2 * b * a * s * s * (kv // a)  # q, k, v, o; scores and context
    dense = 2 * 2 * t * h * f
    sparse = 2 * t * h * e + e * 2 * 2 * n * h * f  # the router, each expert's wi and wo on its n tokens
    block = (2 * attention + dense + sparse) + (4 * attention + dense + sparse)
    work = switch_block_work(c, b)
    assert gemm_flops(work.forward) == block
    assert gemm_flops(work.backward) == 2 * block
    assert gemm_flops(switch_head_work(c, b).forward) == 2 * t * h * 32128  # the tied LM head
    assert gemm_flops(switch_embedding_work(c, b).forward) == 0


def test_the_ends_hold_the_tables_gradients_and_the_losses(tmp_path):
    c = load_config(tmp_path, SWITCH_XL4, seq=512)
    s, b, v, h = 512, 2, 32128, 1024
    embedding, head = switch_embedding_work(c, b), switch_head_work(c, b)
    # the shared table's gradient: zeroed and scattered into by each lookup (V·h + 2·T·h), the three
    # gradients summed (two adds of 3·V·h)
    grads = {op.layer: op.vector_elements for op in embedding.backward if op.kind == "G"}
    assert grads["encoder.token_embedding"] == v * h + 2 * s * b * h
    assert grads["tied_grad_add"] == 2 * 3 * v * h
    # cross-entropy on unshifted logits: no copy, log-softmax and NLL over T × V
    names = [op.layer for op in head.forward]
    assert "shift_logits" not in names and names.count("log_softmax") == 1 and "head_scale" in names


def _train(tmp_path, capsys, *extra: str, gpus: int = 1) -> tuple[int, str, str]:
    cluster = tmp_path / "one.toml"
    cluster.write_text(f'[cluster]\nname = "one_server"\n\n[[servers]]\ncount = 1\ngpus = {gpus}\n'
                       'intra_server_gbps = 128\ngpu = "Tesla_V100-PCIE-32GB"\n')
    model = tmp_path / "switchxl4.json"
    model.write_text(json.dumps(SWITCH_XL4))
    code = main(["train", str(model), "--cluster", str(cluster), "--seq", "512", "--global-batch", "2",
                 "--micro-batch", "2", "--format", "json", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


FP32_EAGER = ("--dtype", "fp32", "--implementation", "pytorch-eager", "--attention", "standard", "--recompute", "none")


def test_the_cli_trains_switch_xl4_in_fp32_eager_and_says_it_does_not_fit_a_v100(tmp_path, capsys):
    code, text, err = _train(tmp_path, capsys, *FP32_EAGER)
    assert code == 0
    meta = json.loads(text)["meta"]
    assert meta["forward_seconds"] > 0 and meta["backward_seconds"] > meta["forward_seconds"]
    assert meta["forward_seconds"] + meta["backward_seconds"] < meta["iteration_seconds"]
    rank = meta["memory_per_rank"][0]
    assert rank["parameters"] == 5_267_615_744
    assert rank["states_gib"] == pytest.approx(16 * 5_267_615_744 / 2**30)  # fp32 weight, gradient, Adam's two
    assert not meta["fits_memory"] and "does not fit" in err


@pytest.mark.parametrize("extra, field", [((), "family"), (("--implementation", "pytorch-eager"), "family"),
                                          (("--dtype", "fp32", "--implementation", "pytorch-eager", "--attention",
                                            "standard", "--recompute", "full"), "recompute"),
                                          ((*FP32_EAGER, "--pp", "2", "--global-batch", "4"), "pp")])
def test_other_training_paths_refuse_switch_in_one_line(tmp_path, capsys, extra, field):
    code, text, err = _train(tmp_path, capsys, *extra, gpus=2 if "--pp" in extra else 1)
    assert code == 2 and text == "" and len(err.strip().splitlines()) == 1 and field in err


def test_the_array_commands_and_search_refuse_switch(tmp_path, capsys):
    model = tmp_path / "switchxl4.json"
    model.write_text(json.dumps(SWITCH_XL4))
    assert main(["cost", str(model)]) == 2
    cluster = tmp_path / "one.toml"
    cluster.write_text('[cluster]\nname = "one_gpu"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 128\n'
                       'gpu = "Tesla_V100-PCIE-32GB"\n')
    assert main(["search", str(model), "--cluster", str(cluster), "--global-batch", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("Switch Transformers" in line for line in err)


@pytest.mark.skipif(not SHARED.exists(), reason="the shared NeuSight model configs are not checked out")
def test_neusights_switchxl4_config_reads_as_the_fields_above():
    c = load_transformer(SHARED)
    assert (c.layers, c.kv_channels, c.experts, c.expert_capacity) == (12, 4096, 4, 64)


def test_the_host_floor_counts_megatrons_ops_of_the_blocks_sub_layers(tmp_path):
    from archsim.training.hf_switch_ops import megatron_counterparts

    c = load_config(tmp_path, SWITCH_XL4, seq=512)
    block, embedding, head = megatron_counterparts(c, 2)
    # Megatron's layer (fused softmax at 32 heads, s 512): attention norm1, qkv, scores, softmax, dropout,
    # context, proj, residual1 (8 forward; 12 backward: residual1, norm1, softmax, dropout and two GEMMs
    # each of proj, context, scores, qkv); MLP norm2, fc1, bias_gelu, fc2, residual2 (5 forward; 7
    # backward: fc1's and fc2's two GEMMs). A block: 6 attention
    # sub-layers (2 encoder self, 2 decoder self, 2 cross) and 4 FFNs.
    assert (len(block.forward), len(block.backward)) == (6 * 8 + 4 * 5, 6 * 12 + 4 * 7)
    assert len(embedding.forward) == 2 * 2 and len(head.forward) == 3  # two stacks' lookups; one head


def test_t5s_rms_norm_is_six_kernels_forward_and_eleven_backward():
    from archsim.training.hf_ops import OpCollector
    from archsim.training.hf_switch_ops import rms_norm

    o = OpCollector()
    t, h = 10, 4
    x = t * h
    rms_norm(o, "norm", t, h)
    work = o.work()
    # pow, mean, +ε, rsqrt, × rsqrt, × γ; its input read and the T-row statistics written and read
    assert [op.vector_elements for op in work.forward] == [2 * x, x + t, 2 * t, 2 * t, 2 * x + t, 2 * x + h]
    # γ's product: dx and dγ (a product and its sum over tokens); × rsqrt: dx, d (product, row sum);
    # rsqrt, mean's expand, pow (2·x, × dy), the input's two uses summed
    assert len(work.backward) == 3 + 3 + 1 + 1 + 2 + 1
    assert sum(op.kind == "G" for op in work.backward) == 2
    assert sum(op.vector_elements for op in work.backward) == (2 * x + h + 3 * x + x + h + 2 * x + t + 3 * x + x + t
                                                               + 3 * t + x + t + 2 * x + 3 * x + 3 * x)
