"""A mixture's shared expert (Hugging Face's qwen2_moe; Megatron-Core's ``SharedExpertMLP`` with
``--moe-shared-expert-gate``) against hand counts: Qwen1.5-MoE-A2.7B's published parameter counts, the shared expert's
GEMMs, gate and TP collectives, a rank's parameters, activations and M_W, the model FLOPs and the Megatron arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.training.held_memory import weight_gradient_bytes
from archsim.training.layer_ops import block_work
from archsim.training.memory import layer_parameters_per_gpu
from archsim.training.moe_ops import mlp_activation_bytes
from archsim.training.search_rows import megatron_model_args
from archsim.training.throughput import model_flops
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

QWEN15 = Path(__file__).parent / "data" / "hf_configs" / "qwen1_5_moe_a2_7b.json"
H, F, FS, E, K, S = 64, 32, 96, 8, 2, 32  # hidden, expert width, shared expert width, experts, top-k, tokens


def _moe(shared: int = 0) -> TransformerConfig:
    return TransformerConfig("small", "llama", 2, H, 4, 256, S, 128, 2, False, experts=E, experts_per_token=K,
                             expert_ffn=F, shared_expert_ffn=shared)


def _ops(work, prefix: str = "shared_expert."):
    return {(op.layer, op.kind): op for op in (*work.forward, *work.backward) if op.layer.startswith(prefix)}


def test_qwen1_5_moe_a2_7b_is_read_with_its_published_parameter_counts():
    c = load_transformer(QWEN15)
    assert (c.experts, c.experts_per_token, c.expert_ffn, c.shared_expert_ffn, c.qkv_bias) == (60, 4, 1408, 5632, True)
    # By hand: q, k, v, o 4·2048² + q, k, v biases 3·2048; two norms 2·2048; router 2048·60; 60 experts 3·2048·1408;
    # the shared expert 3·2048·5632 and its gate 2048: 570,560,512 a layer. 24 layers, untied embeddings and head
    # 2·151,936·2048 and the final norm 2048: 14,315,784,192 — the model card's 14.3B total
    layer = 4 * 2048**2 + 3 * 2048 + 2 * 2048 + 2048 * 60 + 60 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048
    assert layer == 570_560_512 and c.parameter_count == 24 * layer + 2 * 151_936 * 2048 + 2048 == 14_315_784_192
    # a token runs 4 of the 60 experts: 2,689,173,504, the card's 2.7B activated (Qwen's blog: 2.0B of them
    # non-embedding, its figure cut to one decimal)
    active = c.parameter_count - 24 * 56 * 3 * 2048 * 1408
    assert c.active_parameter_count == active and round(active / 1e9, 1) == 2.7
    assert int((active - 2 * 151_936 * 2048) / 1e8) == 20


def test_shared_expert_ops_are_a_dense_swiglu_mlp_over_tp_and_a_gate_on_the_local_tokens():
    # TP 2 under SP: T = 32 tokens all-gathered, 16 local. fc1 h → 2·FS/2 = 96, fc2 FS/2 = 48 → h, gate local × h × 1
    work = block_work(_moe(FS), 1, tp=2, sequence_parallel=True, ep=2)
    ops = _ops(work)
    shapes = {name: [(g.m, g.k, g.n, g.count) for g in ops[(name, "F")].gemms]
              for name in ("shared_expert.fc1", "shared_expert.fc2", "shared_expert.gate")}
    assert shapes == {"shared_expert.fc1": [(32, 64, 96, 1)], "shared_expert.fc2": [(32, 48, 64, 1)],
                      "shared_expert.gate": [(16, 64, 1, 1)]}
    assert {kind for name, kind in ops if name == "shared_expert.gate"} == {"F", "D", "G"}  # gate_weight trains
    # SwiGLU on T·FS/2 = 1536 values: read 2, write 1 forward (4608); backward 5 (7680), as the dense MLP's
    assert (ops[("shared_expert.swiglu", "F")].vector_elements, ops[("shared_expert.swiglu", "D")].vector_elements) == \
        (3 * 32 * 48, 5 * 32 * 48)
    # sigmoid (read and write 16 logits), × gate (read 16·64 and 16, write 16·64), + routed (read two, write one):
    # 2·16 + 2·1024 + 16 + 3·1024 = 5168; backward: × gate's two gradients (read dy twice, the output and the gate,
    # write 16·64 and 16) 4·1024 + 2·16, sigmoid's 3·16: 4176
    assert (ops[("shared_expert.gate_mul", "F")].vector_elements,
            ops[("shared_expert.gate_mul", "D")].vector_elements) == (5168, 4176)
    assert not _ops(block_work(_moe(), 1, tp=2, sequence_parallel=True, ep=2))


def test_shared_expert_keeps_the_dense_mlps_tp_all_gather_and_reduce_scatter():
    def names(shared: int) -> list[str]:
        work = block_work(_moe(shared), 1, tp=2, sequence_parallel=True, ep=2)
        return [x.name for x in (*work.forward_collectives, *work.backward_collectives)]
    without, with_shared = names(0), names(FS)
    mlp = [n for n in with_shared if n.startswith("mlp.")]
    assert not [n for n in without if n.startswith("mlp.")]
    # forward an all-gather before it and a reduce-scatter after; backward the same and fc1's input re-gathered
    assert sorted(mlp) == sorted(["mlp.all-gather", "mlp.reduce-scatter", "mlp.all-gather", "mlp.input-regather",
                                  "mlp.reduce-scatter"])
    assert [n for n in with_shared if not n.startswith("mlp.")] == without
    regather = next(x for x in block_work(_moe(FS), 1, tp=2, sequence_parallel=True, ep=2).backward_collectives
                    if x.name == "mlp.input-regather")
    assert regather.under == ("shared_expert.fc1",) and regather.bytes == 32 * H * 2


def test_a_ranks_parameters_split_the_shared_expert_over_tp_and_keep_its_gate_whole():
    # TP 2, EP 2: the shared expert 3·h·FS/2 = 9216 and its gate h = 64 whole, beside the rest as without it
    assert layer_parameters_per_gpu(_moe(FS), 2, 2) - layer_parameters_per_gpu(_moe(), 2, 2) == 3 * H * FS / 2 + H


def test_activations_and_m_w_add_a_dense_swiglu_mlps_and_the_gate():
    # per token at TP 2 (SP): gate and up outputs and their product 2·3·FS/2 = 288, the output × gate keeps
    # (2·64/2 = 64) and the sigmoid's output (2/2 = 1): 353 bytes
    assert mlp_activation_bytes(_moe(FS), 2, S // 2) - mlp_activation_bytes(_moe(), 2, S // 2) == 353
    # W reads fc1's output gradient and fc2's input (288), fc2's output gradient whole (2h = 128) and the gate's
    # (2, on the local tokens: 1 a token): 417 bytes a token, over s·b = 32·3 tokens
    assert weight_gradient_bytes(_moe(FS), 3, 2, True) - weight_gradient_bytes(_moe(), 3, 2, True) == \
        pytest.approx(417 * S * 3, rel=1e-12)


def test_model_flops_count_the_shared_expert_not_its_gate():
    # Megatron-LM's moe_layer_flops: routed and shared FLOPs, 6·3·h·FS a token a layer for the shared expert
    assert model_flops(_moe(FS), 5) - model_flops(_moe(), 5) == 6 * 5 * S * 2 * 3 * H * FS


def test_megatron_arguments_name_the_shared_expert_and_its_gate():
    args = megatron_model_args(load_transformer(QWEN15))
    assert "--moe-shared-expert-intermediate-size 5632 --moe-shared-expert-gate" in args
    assert "--moe-shared-expert" not in megatron_model_args(_moe())


@pytest.mark.parametrize("key,value", [("decoder_sparse_step", 2), ("mlp_only_layers", [0, 3])])
def test_qwen2_moe_with_dense_layers_is_refused_in_one_line(tmp_path, key, value):
    fields = json.loads(QWEN15.read_text())
    fields[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    with pytest.raises(InputError, match=f"field '{key}'.*dense MLP layers") as caught:
        load_transformer(path)
    assert "\n" not in str(caught.value)


def test_a_shared_expert_needs_experts():
    with pytest.raises(InputError, match="shared_expert_ffn"):
        TransformerConfig("small", "llama", 2, H, 4, 256, S, 128, 2, False, shared_expert_ffn=FS)
