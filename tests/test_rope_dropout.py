"""Rotary position embeddings and attention dropout in Megatron's op list, against hand counts.

RoPE, as Megatron-LM (Megatron-Core 0.20.0, commit d98e8a6) runs it by default (``apply_rope_fusion``
on: ``--no-rope-fusion`` is the training argument that turns it off): ``Attention.forward`` calls
``apply_rotary_pos_emb`` once on the query and once on the key, each Transformer Engine's
``FusedRoPEFunc``: one kernel forward (``fused_rope_block_forward``: each element of t read, the output
written — the dims past the rotated ones copied through — and each thread block loading its token's
row of fp32 angles, ``freqs[s_id * d2 + i]``) and one backward (the same on the gradient). The counts
below are worked by hand from that code in 2-byte units (an fp32 angle is 2), not read off archsim.

Attention dropout: PyTorch launches no dropout kernel at probability 0 (``at::native::dropout`` returns
its input), so a Llama with ``attention_dropout`` 0 runs none; GPT's lists keep theirs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.layer_ops import block_work
from archsim.training.throughput import model_flops
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

# A tiny Llama: hidden 64 over 4 query heads (head dim 16) and 2 KV heads, 8 tokens, micro-batch 3
TINY = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "intermediate_size": 176, "vocab_size": 100, "max_position_embeddings": 8,
        "hidden_act": "silu", "tie_word_embeddings": False, "attention_dropout": 0.0, "rope_theta": 10000.0}
BATCH = 3


def _load(tmp_path: Path, fields: dict) -> TransformerConfig:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    return load_transformer(path)


def _ops(work, kind: str, prefix: str) -> list[tuple[str, int]]:
    ops = work.forward if kind == "F" else work.backward
    return [(op.layer, op.vector_elements) for op in ops if op.layer.startswith(prefix)]


def test_rope_kernels_and_bytes_by_hand(tmp_path):
    c = _load(tmp_path, TINY)
    assert c.rotary_dims == 16
    work = block_work(c, BATCH, 1, attention="flash")
    # T = 8 tokens × 3 = 24. q: 24 tokens × 4 heads × 16 = 1,536 elements read and 1,536 written; angles:
    # 24 rows × 16 fp32 = 768 units → 3,840. k: 24 × 2 × 16 = 768, ×2, + 768 → 2,304.
    assert _ops(work, "F", "rope") == [("rope_q", 3840), ("rope_k", 2304)]
    # backward: the same kernel on dy (dy read, dx written, the angles read), k's first (last-first)
    assert _ops(work, "D", "rope") == [("rope_k", 2304), ("rope_q", 3840)]
    # the kernels sit between the QKV GEMM and attention each way
    forward = [op.layer for op in work.forward]
    assert forward[forward.index("qkv") + 1:forward.index("qkv") + 3] == ["rope_q", "rope_k"]
    backward = [op.layer for op in work.backward]
    assert backward[backward.index("rope_q") + 1] == "qkv"
    assert all(op.gemms == () for op in work.forward + work.backward if op.layer.startswith("rope"))


def test_rope_on_a_tensor_parallel_rank_by_hand(tmp_path):
    c = _load(tmp_path, TINY)
    work = block_work(c, BATCH, 2, attention="standard")
    # TP 2: 2 query heads and 1 KV head per rank, the angles whole on each rank (every token is there)
    # q: 24 × 2 × 16 = 768 → 1,536 + 768 = 2,304; k: 24 × 1 × 16 = 384 → 768 + 768 = 1,536
    assert _ops(work, "F", "rope") == [("rope_q", 2304), ("rope_k", 1536)]
    # sequence parallelism gathers the tokens before the QKV GEMM: RoPE still sees all 24 of them
    assert _ops(block_work(c, BATCH, 2, True, "standard"), "F", "rope") == [("rope_q", 2304), ("rope_k", 1536)]


def test_a_partial_rotary_moves_fewer_angles_and_copies_the_rest(tmp_path):
    c = _load(tmp_path, {**TINY, "partial_rotary_factor": 0.5})
    assert c.rotary_dims == 8  # int(16 × 0.5), as transformers and Megatron size it
    work = block_work(c, BATCH, 1, attention="flash")
    # TE's kernel copies dims 8…15 through, so q and k are still read and written whole; the angles are
    # 24 rows × 8 fp32 = 384 units: q 3,072 + 384 = 3,456, k 1,536 + 384 = 1,920
    assert _ops(work, "F", "rope") == [("rope_q", 3456), ("rope_k", 1920)]
    assert _ops(work, "D", "rope") == [("rope_k", 1920), ("rope_q", 3456)]


@pytest.mark.parametrize("value", [0, -0.5, 1.5, 0.5625, "half", True])
def test_a_rotary_fraction_out_of_range_or_of_odd_dims_is_refused(tmp_path, value):
    # 0.5625 × 16 = 9 dims: rotary embeddings rotate pairs of dims
    with pytest.raises(InputError, match="partial_rotary_factor"):
        _load(tmp_path, {**TINY, "partial_rotary_factor": value})


def test_rope_frequency_fields_change_no_work(tmp_path):
    plain = block_work(_load(tmp_path, TINY), BATCH, attention="standard")
    for change in ({"rope_theta": 500000.0}, {"rope_scaling": {"rope_type": "llama3", "factor": 8.0}},
                   {"rope_scaling": {"type": "linear", "factor": 2.0}}, {"rope_scaling": {"type": "yarn", "factor": 4}}):
        assert block_work(_load(tmp_path, {**TINY, **change}), BATCH, attention="standard") == plain


def test_attention_dropout_zero_runs_no_kernel_and_keeps_no_mask(tmp_path):
    off = _load(tmp_path, TINY)
    on = _load(tmp_path, {**TINY, "attention_dropout": 0.1})
    assert (off.drops_attention, on.drops_attention) == (False, True)
    without, with_ = block_work(off, BATCH, attention="standard"), block_work(on, BATCH, attention="standard")
    # s² · b · heads = 64 × 3 × 4 = 768 scores; Megatron's dropout reads, writes and a ½-unit mask: 2.5 each way
    assert _ops(with_, "F", "attn_dropout") == _ops(with_, "D", "attn_dropout") == [("attn_dropout", 1920)]
    assert _ops(without, "F", "attn_dropout") == _ops(without, "D", "attn_dropout") == []
    assert [op for op in with_.forward if op.layer != "attn_dropout"] == list(without.forward)
    # FlashAttention drops inside its kernel: the same ops either way (head dim 16 runs the 32 kernel, whose
    # tiles do not shrink with dropout) but for the mask's integer work inside the flash kernel
    flash_off, flash_on = (block_work(c, BATCH, attention="flash") for c in (off, on))
    masked = [op for op in (*flash_on.forward, *flash_on.backward) if op.int_ops]
    assert [op.layer for op in masked] == ["flash_attention", "flash_attention"]
    assert replace(flash_on, forward=tuple(replace(op, int_ops=0, int_mults=0) for op in flash_on.forward),
                   backward=tuple(replace(op, int_ops=0, int_mults=0) for op in flash_on.backward)) == flash_off
    # activations kept (Korthikanti et al.'s table, no recompute, TP 1): 24 tokens × (8 bytes per hidden
    # element, 10 less the two 1-byte residual dropout masks a Llama does not keep, + 2 bytes per element
    # of q 64, k 32, v 32, the projection's input 64 and SwiGLU's 3 × 176), plus 5 bytes per score with
    # dropout (softmax out 2, mask 1, dropout out 2) or the softmax output's 2 without
    kept = 24 * (8 * 64 + 2 * (64 + 32 + 32 + 64 + 3 * 176))
    assert layer_activation_bytes(on, BATCH, 1, "none", False) == kept + 5 * 768
    assert layer_activation_bytes(off, BATCH, 1, "none", False) == kept + 2 * 768


@pytest.mark.parametrize("value", [1.0, -0.1, "0.1", False])
def test_an_attention_dropout_that_is_not_a_probability_is_refused(tmp_path, value):
    with pytest.raises(InputError, match="attention_dropout"):
        _load(tmp_path, {**TINY, "attention_dropout": value})


def test_a_toml_llama_has_rotary_positions_and_no_attention_dropout(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text('[transformer]\nfamily = "llama"\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\n'
                    'vocab = 100\nseq = 8\nffn = 176\n')
    toml = load_transformer(path)
    assert (toml.rotary_dims, toml.drops_attention) == (16, False)
    assert block_work(toml, BATCH, attention="standard") == block_work(_load(tmp_path, TINY), BATCH,
                                                                       attention="standard")


def test_model_flops_leave_rope_and_dropout_out(tmp_path):
    c = _load(tmp_path, TINY)
    # Narayanan/Korthikanti's count has no elementwise term: MFU's numerator is unchanged
    assert model_flops(c, 4) == model_flops(replace(c, partial_rotary_factor=0.5, attention_dropout=0.1), 4)


# the shipped GPT configs (configs/transformers/llama3_405b.toml is a Llama, tests/test_published_llama3.py)
GPT_CONFIGS = [p for p in sorted((Path(__file__).resolve().parents[1] / "configs" / "transformers").glob("*"))
               if load_transformer(p).family == "gpt"]


@pytest.mark.parametrize("path", GPT_CONFIGS, ids=[p.name for p in GPT_CONFIGS])
def test_the_shipped_gpt_models_keep_their_op_lists(path):
    c = load_transformer(path, seq=min(512, load_transformer(path).seq))
    assert c.family == "gpt" and c.positions  # learned positions: no rotary kernel
    assert (c.rotary_dims, c.drops_attention) == (0, True)
    work = block_work(c, 2, 1, attention="standard")
    # Megatron's GPT layer as layer_ops' table states it (seq 512: the fused softmax), attention dropout on
    assert [op.layer for op in work.forward] == ["norm1", "qkv", "scores", "softmax", "attn_dropout", "context", "proj",
                                                 "residual1", "norm2", "fc1", "bias_gelu", "fc2", "residual2"]
    # the rotary fraction means nothing without rotary positions
    for attention in ("standard", "flash"):
        assert block_work(replace(c, partial_rotary_factor=0.5), 2, 2, attention=attention) == block_work(
            c, 2, 2, attention=attention)


def test_the_shipped_llama_2_7b_config_at_sequence_4096():
    c = load_transformer(Path(__file__).parent / "data" / "llama2_7b" / "config.json", seq=4096)
    assert (c.heads, c.head_dim, c.rotary_dims, c.drops_attention) == (32, 128, 128, False)
    # TP 2, micro-batch 1: 16 q heads and 16 KV heads per rank. q: 4,096 × 16 × 128 = 8,388,608 elements read
    # and as many written, + 4,096 × 128 fp32 angles (1,048,576 units) = 17,825,792; k the same (no GQA)
    work = block_work(c, 1, 2, attention="flash")
    assert _ops(work, "F", "rope") == [("rope_q", 17825792), ("rope_k", 17825792)]
