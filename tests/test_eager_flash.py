"""``--implementation pytorch-eager --attention flash`` (:func:`archsim.training.eager_ops.eager_flash_core`) and the
bf16 optimizer step, against hand counts.

References, none read from the module: the kernels ``F.scaled_dot_product_attention`` launches on PyTorch's
FlashAttention-2 backend and the copies around them (pytorch/pytorch ``attention_backward.cu``
``_flash_attention_backward``: ``grad_out.contiguous()``; ``flash_api.cpp`` ``mha_bwd``: dQ, dK, dV ``empty_like``
the strided q, k, v views, their layout kept: tests/test_eager_backward_kernels.py), each kernel's HBM reads and
writes summed by hand; the causal forward's GEMM FLOPs from
FlashAttention-2's tiles (v2.8.3, head dim 64 with dropout: 128 × 64 blocks); Korthikanti et al.'s activation
table (5·a·s²·b bytes of scores kept by standard attention); gpu_train_measure.py's bf16 optimizer step.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import archsim
from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.eager_ops import EAGER_OPTIMIZER_BYTES, eager_block_work, eager_optimizer_bytes
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "configs" / "clusters" / "h200_1gpu.toml"
# s 1024, h 256, a 4 (head dim 64), f 1024: s a multiple of every FlashAttention-2 tile, head dim its kHeadDim
F = TransformerConfig("f", "gpt", 2, 256, 4, 1000, 1024, 1024, 4, True, 1024)


def elements(ops) -> float:
    return sum(op.vector_elements for op in ops)


def names(ops) -> list[str]:
    return [op.layer for op in ops]


def test_the_flash_layer_launches_sdpas_kernels_in_place_of_the_standard_core():
    work = eager_block_work(F, 2, "flash")
    assert names(work.forward) == ["norm1", "qkv", "flash_attention", "context_copy", "proj", "dropout1",
                                   "residual_add1", "norm2", "fc1", "gelu", "fc2", "dropout2", "residual_add2"]
    core = names(work.backward)[names(work.backward).index("proj.bias_grad") + 3:]  # after proj's D, G
    # dO made contiguous, D = rowsum(dO ∘ O) (+ dQaccum zeroed), the main kernel, dQaccum → dQ, then split's
    # concatenation straight away: dV, dK, dQ reach it as views, no reshape copy (tests/test_eager_backward_kernels.py)
    assert core[:5] == ["grad_out_copy", "flash_attention.dot_do_o", "flash_attention", "flash_attention.convert_dq",
                        "qkv.grad_cat"]
    assert not {"scores", "mask_fill", "softmax", "attn_dropout", "context"} & set(names(work.forward + work.backward))


@pytest.mark.parametrize("b", [1, 3])
def test_flash_layer_bytes_are_each_kernels_reads_and_writes(b):
    s, h, f, a = F.seq, F.hidden, F.ffn, F.heads
    x, ff, rows = s * b * h, s * b * f, b * a * s  # rows: query rows × heads, one fp32 value each = 2 elements
    # forward: LayerNorm (2X) twice; flash reads q, k, v and writes O (4X) and the fp32 log-sum-exp (2 rows);
    # the context copy (2X); two dropouts (2.5X), two residual adds (3X); GeLU (2F)
    forward = 2 * x + (4 * x + 2 * rows) + 2 * x + 2.5 * x + 3 * x + 2 * x + 2 * ff + 2.5 * x + 3 * x
    # backward core: dO copied contiguous (2X); D's kernel reads dO, O (2X), writes D (2 rows), zeroes dQaccum
    # (s × 64 fp32 per head: 2X); the main kernel reads Q, K, V, dO (4X), the log-sum-exp and D (4 rows), writes
    # dK, dV (2X), reads and writes dQaccum (4X); the conversion reads dQaccum (2X), writes dQ (X); dQ, dK, dV
    # written where split's concatenation reads them: no copy
    core = 2 * x + (4 * x + 2 * rows) + (10 * x + 4 * rows) + 3 * x
    # the rest as the standard layer's (tests/test_eager_ops.py): LayerNorms, bias gradients, split's cat,
    # dropouts, residual gradient sums, GeLU
    rest = 2 * (3 * x + 2 * x) + 3 * x + x + ff + x + 6 * x + 2 * 2.5 * x + 2 * 3 * x + 3 * ff
    work = eager_block_work(F, b, "flash")
    assert elements(work.forward) == pytest.approx(forward, abs=2)
    assert elements(work.backward) == pytest.approx(core + rest, abs=2)


def test_no_kernel_moves_s_squared_bytes():
    """Standard attention's masked_fill, softmax and dropout move elements ∝ s²; the flash layer's bytes are linear
    in s (s a multiple of the tiles): twice the sequence, twice the elements, each way."""
    long = replace(F, seq=2 * F.seq, positions=2 * F.seq)
    for kind in ("forward", "backward"):
        one, two = (elements(getattr(eager_block_work(c, 2, "flash"), kind)) for c in (F, long))
        assert two == pytest.approx(2 * one, rel=1e-12)
        std_one, std_two = (elements(getattr(eager_block_work(c, 2), kind)) for c in (F, long))
        assert std_two > 2.5 * std_one  # the s² terms dominate the standard layer at this width


def test_causal_forward_flops_count_flashattention_blocks():
    """Q·Kᵀ and P·V over the blocks FlashAttention-2 computes: query block i (128 rows) runs key blocks
    (64 keys) up to the diagonal, 128·(i + 1) keys, so Σ = s²/2 + s·128/2 query-key pairs per head: the causal
    half of 4·s²·d·(b·a) plus the diagonal blocks' masked halves."""
    b, s, d = 2, F.seq, F.head_dim
    pairs = s * s // 2 + s * 128 // 2
    flash = next(op for op in eager_block_work(F, b, "flash").forward if op.layer == "flash_attention")
    flops = sum(2 * g.m * g.k * g.n * g.count for g in flash.gemms)
    assert flops == 4 * pairs * d * b * F.heads
    assert 0.5 < flops / (4 * s * s * d * b * F.heads) <= 0.5 * (1 + 128 / s)


def _memory(attention: str, recompute: str, b: int = 2) -> float:
    result, _ = archsim.train(F, cluster=H200, global_batch=b, micro_batch=b, implementation="pytorch-eager",
                              attention=attention, recompute=recompute, dtype="bf16")
    return result.memory[0].activations


def test_flash_keeps_no_scores_and_keeps_its_output_and_log_sum_exp():
    """Without recompute, per layer: standard attention keeps 5·a·s²·b bytes of scores (softmax output 2, dropout
    mask 1, dropout output 2: Korthikanti et al.); flash keeps none, but its output O (2·s·b·h, beside the
    [s, b, h] copy the projection keeps) and the fp32 log-sum-exp (4·a·s·b); its backward allocates D (4·a·s·b)
    and dQaccum (4·s·b·a·64) for one layer at a time."""
    b, s, h, a, d = 2, F.seq, F.hidden, F.heads, F.head_dim
    scores = 5 * a * s * s * b
    kept = 2 * s * b * h + 4 * a * s * b
    buffers = 4 * a * s * b + 4 * s * b * a * d
    assert _memory("standard", "none", b) - _memory("flash", "none", b) == pytest.approx(
        F.layers * (scores - kept) - buffers, rel=1e-12)


def test_full_recompute_reruns_the_flash_forward():
    """torch.utils.checkpoint reruns the whole layer's forward, the flash kernel included."""
    par = Parallelism(1, 1, 1, 2, 2, attention="flash", recompute="full")
    machine = replace(single_node().machine(par), implementation="pytorch-eager", dtype="bf16")
    layer = model_pieces(F, par, machine)["layer"]
    assert "flash_attention" in [name for name, kind, _ in layer.ops if kind == "F"]
    assert layer.recompute == pytest.approx(layer.forward, rel=1e-12)
    none = model_pieces(F, replace(par, recompute="none"), machine)["layer"]
    assert none.recompute == 0.0


def test_bf16_optimizer_step_moves_40_bytes_a_parameter():
    """gpu_train_measure.py's bf16 step has no loss scale: bf16 → fp32 gradient (2 + 4), fused Adam (master, grad,
    m, v read; master, m, v written: 7 × 4), master → bf16 weight (4 + 2) — no unscale (8), no norm (4)."""
    assert EAGER_OPTIMIZER_BYTES["bf16"] == eager_optimizer_bytes("bf16") == (2 + 4) + 7 * 4 + (4 + 2) == 40
    assert eager_optimizer_bytes("fp16") == 40 + 8 + 4
    par = Parallelism(1, 1, 1, 8, 2)
    machine = replace(single_node().machine(par), implementation="pytorch-eager", dtype="bf16")
    gpu, k = machine.gpu, machine.kernels.memory_bound
    parameters = 1e6
    step = after_backward(F, par, machine, 0, parameters)["optimizer"]
    assert step == pytest.approx(40 * parameters / (gpu.hbm_bytes_per_s * k.memory) + 4 * k.launch_s, rel=1e-12)
    with pytest.raises(InputError, match="fp16's or bf16's"):
        eager_optimizer_bytes("fp32")
