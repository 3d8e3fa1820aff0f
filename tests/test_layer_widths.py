"""One layer's GEMM widths, read by both lowerings (the array commands' network and GPU training's
per-rank ops), against published projection shapes: Llama-2-70B's checkpoints hold q_proj 8192 × 8192,
k_proj and v_proj 1024 × 8192 (8 KV heads of 128), gate/up 28672 × 8192, down 8192 × 28672; GPT-3
175B (Brown et al. 2020, Table 2.1) has d 12288, 96 heads of 128, FFN 4·d. Megatron splits the QKV
and first MLP outputs over TP ranks and, with fewer KV heads than ranks, gives each rank one."""

from __future__ import annotations

import pytest

from archsim.training.layer_ops import block_work
from archsim.workload.transformer import TransformerConfig, layer_widths

LLAMA2_70B = TransformerConfig("llama-2-70b", "llama", layers=80, hidden=8192, heads=64, vocab=32000, seq=128,
                               ffn=28672, kv_heads=8, tied_embeddings=False)
GPT3_175B = TransformerConfig("gpt3-175b", "gpt", layers=96, hidden=12288, heads=96, vocab=50257, seq=128,
                              ffn=4 * 12288, kv_heads=96, positions=2048)


@pytest.mark.parametrize(("config", "tp", "qkv", "attention", "ffn"), [
    (LLAMA2_70B, 1, 8192 + 1024 + 1024, 8192, 28672),
    (LLAMA2_70B, 8, (8192 + 1024 + 1024) // 8, 8192 // 8, 28672 // 8),  # one KV head a rank
    (LLAMA2_70B, 16, 8192 // 16 + 2 * 128, 8192 // 16, 28672 // 16),  # 8 KV heads over 16 ranks: one each
    (GPT3_175B, 1, 3 * 12288, 12288, 49152),
    (GPT3_175B, 8, 3 * 12288 // 8, 12288 // 8, 49152 // 8),
])
def test_layer_widths_are_the_published_shapes_split_as_megatron_does(config, tp, qkv, attention, ffn):
    widths = layer_widths(config, tp)
    assert (widths.qkv, widths.attention, widths.ffn) == (qkv, attention, ffn)
    assert widths.gated == (config.family == "llama")


@pytest.mark.parametrize("tp", [1, 8])
def test_both_lowerings_read_the_published_shapes(tp):
    """The array network (whole layer) and the per-rank training ops give each weight GEMM the shape above."""
    if tp == 1:
        net = LLAMA2_70B.network()
        assert [net.layer(f"l1_{name}").filters for name in ("qkv", "out", "gate", "up", "down")] == \
            [10240, 8192, 28672, 28672, 8192]
    gemms = {op.layer: op.gemms[0] for op in block_work(LLAMA2_70B, 1, tp).forward if op.gemms}
    tokens = LLAMA2_70B.seq
    assert {name: (g.m, g.k, g.n) for name, g in gemms.items() if name in ("qkv", "proj", "gate", "up", "fc2")} == {
        "qkv": (tokens, 8192, 10240 // tp), "proj": (tokens, 8192 // tp, 8192), "gate": (tokens, 8192, 28672 // tp),
        "up": (tokens, 8192, 28672 // tp), "fc2": (tokens, 28672 // tp, 8192)}
