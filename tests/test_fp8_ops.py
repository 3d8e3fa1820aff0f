"""train's --fp8 (Transformer Engine's recipe, archsim/training/fp8_ops.py): one small layer's op list counted by hand —
which GEMMs take fp8 operands, each quantize kernel's bytes, the norms that write fp8, the all-gathers in fp8 under
sequence parallelism — and the memory its inputs and weights take (archsim/training/fp8_memory.py), by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.training.fp8_memory import fp8_activation_bytes, fp8_weight_bytes
from archsim.training.fp8_ops import fp8_gemms, fp8_weight_parameters
from archsim.training.layer_ops import block_work
from archsim.training.memory import stage_memory
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

# a GPT layer: h 64, 4 heads, FFN 256; b = 2 sequences of 32: T = 64 tokens
GPT = TransformerConfig("tiny-gpt", "gpt", 2, 64, 4, 256, 32, 256, 4, positions=32)
# a Llama layer: h 64, 4 heads of 16, 2 KV heads, SwiGLU FFN 128, no dropout
LLAMA = TransformerConfig("tiny-llama", "llama", 2, 64, 4, 256, 32, 128, 2, False)
# a mixture: 4 experts of FFN 32, 2 a token, a shared expert of 64
MOE = TransformerConfig("tiny-moe", "llama", 2, 64, 4, 256, 32, 128, 2, False, experts=4, experts_per_token=2,
                        expert_ffn=32, shared_expert_ffn=64)
T = 64  # tokens of a micro-batch of 2 sequences of 32


def elements(ops, name: str) -> list[int]:
    return [op.vector_elements for op in ops if op.layer == name]


def test_a_gpt_layer_without_tp_in_hand_counts():
    """x = 2 bytes (bf16): a cast and transpose reads x and writes 1 + 1 (2 elements of bf16 an element), a transpose
    reads and writes 1 (1 element), a norm writing fp8 saves ½ element of its output."""
    plain, fp8 = (block_work(GPT, 2, 1, False, "standard", "bf16", fp8=recipe) for recipe in (None, "hybrid"))
    low = {(op.layer, op.kind) for op in (*fp8.forward, *fp8.backward) if op.gemm_dtype == "fp8"}
    assert low == {(name, kind) for name in ("qkv", "proj", "fc1", "fc2") for kind in "FDG"}  # not the scores
    f, b = fp8.forward, fp8.backward
    assert elements(f, "norm1") == elements(f, "norm2") == [2 * T * 64 - T * 64 // 2]  # read x, write fp8
    assert elements(f, "qkv.fp8_transpose") == elements(f, "fc1.fp8_transpose") == [T * 64]  # (1 + 1) / 2
    assert elements(f, "proj.fp8_cast_transpose") == [2 * T * 64]  # (2 + 1 + 1) / 2 of the attention's T × 64
    assert elements(f, "fc2.fp8_cast_transpose") == [2 * T * 256]  # GELU's T × 256
    assert elements(b, "fc2.fp8_grad_cast_transpose") == elements(b, "proj.fp8_grad_cast_transpose") == [2 * T * 64]
    assert elements(b, "fc1.fp8_grad_cast_transpose") == [2 * T * 256]
    assert elements(b, "qkv.fp8_grad_cast_transpose") == [2 * T * 192]  # Q, K, V: 3 × 64 wide
    # nothing else changed: the other ops, in order, and the all-reduces in the higher precision
    added = {op.layer for op in (*f, *b) if ".fp8_" in op.layer}
    assert [op.layer for op in f if op.layer not in added] == [op.layer for op in plain.forward]
    assert [op.vector_elements for op in b if op.layer not in added] == [op.vector_elements for op in plain.backward]
    assert fp8.forward_collectives == plain.forward_collectives == ()


def test_a_llama_layer_under_sequence_parallelism_in_hand_counts():
    """TP 2, sequence parallelism: a rank's T/t = 32 rows before the all-gathers. The norm-fed inputs are gathered in
    fp8 row-wise and transposed in the backward before the weight gradient; a row-parallel output gradient is cast
    on 32 rows (x + 1 bytes), gathered in fp8, transposed on 64 (2 bytes)."""
    plain, fp8 = (block_work(LLAMA, 2, 2, True, "flash", "bf16", fp8=recipe) for recipe in (None, "e4m3"))
    f, b = fp8.forward, fp8.backward
    assert elements(f, "norm1") == elements(f, "norm2") == [2 * 32 * 64 - 32 * 64 // 2]
    assert not elements(f, "qkv.fp8_transpose") and not elements(f, "gate.fp8_transpose")  # not forward under SP
    assert [(op.kind, op.vector_elements) for op in b if op.layer in ("qkv.fp8_transpose", "gate.fp8_transpose")] \
        == [("G", T * 64)] * 2
    assert elements(f, "proj.fp8_cast_transpose") == [2 * T * 32]  # 2 heads of 16 on the rank
    assert elements(f, "fc2.fp8_cast_transpose") == [2 * T * 64]  # SwiGLU's 128 / TP 2
    for name in ("fc2", "proj"):  # output gradient T × 64, row-parallel
        assert elements(b, f"{name}.fp8_grad_cast") == [3 * 32 * 64 // 2]
        assert elements(b, f"{name}.fp8_grad_transpose") == [T * 64]
    assert elements(b, "gate.fp8_grad_cast_transpose") == [2 * T * 128]  # gate and up: one TE GEMM, 2 × 64 wide
    assert not [op for op in b if op.layer.startswith("up.fp8")]
    assert elements(b, "qkv.fp8_grad_cast_transpose") == [2 * T * 64]  # 2 query + 2 KV heads of 16
    # every TP all-gather in fp8 (half the 2-byte element's bytes), the reduce-scatters not
    for ours, theirs in zip((*fp8.forward_collectives, *fp8.backward_collectives),
                            (*plain.forward_collectives, *plain.backward_collectives), strict=True):
        assert (ours.name, ours.kind) == (theirs.name, theirs.kind)
        assert ours.bytes == (theirs.bytes / 2 if ours.kind == "all-gather" else theirs.bytes) == (
            T * 64 if ours.kind == "all-gather" else 2 * T * 64)


def test_a_mixtures_experts_run_in_fp8_its_router_does_not():
    fp8 = block_work(MOE, 2, 1, False, "flash", "bf16", fp8="hybrid")
    low = {op.layer for op in fp8.forward if op.gemm_dtype == "fp8"}
    assert low == {"qkv", "proj", "experts.fc1", "experts.fc2", "shared_expert.fc1", "shared_expert.fc2"}
    # the experts' rows: 64 tokens × 2 = 128 rows over 4 experts of 32; fc1's input 128 × 64, fc2's 128 × 32
    assert elements(fp8.forward, "experts.fc1.fp8_cast_transpose") == [2 * 128 * 64]
    assert elements(fp8.forward, "experts.fc2.fp8_cast_transpose") == [2 * 128 * 32]
    assert elements(fp8.forward, "shared_expert.fc1.fp8_cast_transpose") == [2 * T * 64]  # not norm-fed: the router's
    assert elements(fp8.forward, "norm2") == [2 * T * 64]  # a plain norm before the router: 2 bytes out
    assert fp8_gemms(MOE) == 2 + 2 * 4 + 2 and fp8_gemms(MOE, ep=2) == 2 + 2 * 2 + 2 and fp8_gemms(GPT) == 4


@pytest.mark.parametrize(("c", "tp", "ep"), [(GPT, 1, 1), (GPT, 2, 1), (LLAMA, 2, 1), (MOE, 1, 1), (MOE, 2, 2)])
def test_the_weights_te_casts_are_the_fp8_gemms_weights(c, tp, ep):
    """fp8_weight_parameters (the memory's and the casts' count) is each fp8 GEMM's k × n × count of the op list."""
    work = block_work(c, 2, tp, tp > 1, "flash", "bf16", ep=ep, fp8="hybrid")
    counted = sum(g.k * g.n * g.count for op in work.forward if op.gemm_dtype == "fp8" for g in op.gemms)
    assert fp8_weight_parameters(c, tp, ep) == counted


def test_the_llama_layers_memory_in_hand_counts():
    """TP 2 with sequence parallelism, FlashAttention: QKV's and the MLP's first inputs 32 × 64 at 1 byte less; the
    projection's T × 32 at 1 byte more (O kept by the attention beside its fp8 copy); SwiGLU's output T × 64 at 1 byte
    less. Weights: QKV 64 × 64, projection 32 × 64, gate, up and down 3 × 64 × 64 on the rank, 2 bytes each."""
    par = Parallelism(tp=2, global_batch=2, micro_batch=2, recompute="none", sequence_parallel=True, attention="flash",
                      fp8="hybrid")
    assert fp8_activation_bytes(LLAMA, par) == -32 * 64 + T * 32 - 32 * 64 - T * 64 == -6144
    assert fp8_activation_bytes(LLAMA, replace(par, attention="standard")) == -10240  # the projection's 1 byte less
    assert fp8_weight_bytes(LLAMA, par) == 2 * (64 * 64 + 32 * 64 + 3 * 64 * 64) == 36864
    off = replace(par, fp8=None)
    assert fp8_activation_bytes(LLAMA, off) == fp8_weight_bytes(LLAMA, off) == 0
    ours, theirs = (stage_memory(LLAMA, p, 2, 3, first=False, last=False) for p in (par, off))
    assert ours.activations - theirs.activations == 3 * 2 * -6144  # 3 micro-batches in flight, 2 layers
    assert ours.states - theirs.states == 2 * 36864 and ours.parameters == theirs.parameters
    full = [stage_memory(LLAMA, replace(p, recompute="full"), 2, 3, first=False, last=False) for p in (par, off)]
    assert full[0].activations - full[1].activations == -6144  # the rerun layer's working set alone


@pytest.mark.parametrize(("c", "tp", "sp"), [(c, tp, sp) for c in (GPT, LLAMA, MOE)
                                             for tp, sp in ((1, False), (2, False), (2, True))
                                             if not (c.moe and tp > 1 and not sp)])  # Megatron-Core: MoE at TP > 1 needs SP
@pytest.mark.parametrize("attention", ["standard", "flash"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_fp8_never_keeps_more_activations_and_holds_its_weights_beside_the_states(c, attention, tp, sp, recompute):
    par = Parallelism(tp=tp, global_batch=2, micro_batch=2, recompute=recompute, sequence_parallel=sp,
                      attention=attention, fp8="hybrid")
    ours, theirs = (stage_memory(c, p, 2, 2, first=True, last=True) for p in (par, replace(par, fp8=None)))
    assert ours.activations <= theirs.activations
    assert ours.states - theirs.states == pytest.approx(2 * 2 * fp8_weight_parameters(c, tp))
