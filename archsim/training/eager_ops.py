"""The op list of a second implementation: the same GPT trained in plain (eager) PyTorch on one GPU,
as ``benchmarks/gpu_train_measure.py`` builds it, kernel by kernel.

:mod:`archsim.training.layer_ops` lowers a layer as Megatron runs it (fused scale-mask-softmax,
bias-GeLU, bias-dropout-add). Plain PyTorch runs the same GEMMs but more, separate memory-bound
kernels; each is one op here (one launch). Elements read + written in HBM, in elements of the training
dtype, fp16 or bf16 (an fp32 value is 2, a dropout mask byte ½), X = T·h, F = T·f, S = s²·b·a (T = s·b tokens):

=====================  ===================================  ==========================================
kernel                 forward                              backward
=====================  ===================================  ==========================================
LayerNorm              read x, write y: 2X                  dx: read dy, x, write dx: 3X; γ, β (a
                                                            second kernel): read dy, x again: 2X
masked_fill (mask)     a clone (read, write: 2S), then      masked_fill of the gradient, the same
                       masked_fill_ in place (2S): 4S       two: 4S
softmax                read, write: 2S                      dy ∘ y first (read 2, write: 3S), then
                                                            the kernel: read dy∘y, y, write dx: 3S
dropout                read, write, mask: 2.5               read dy, mask, write: 2.5
context permute →      read, write: 2X (``reshape`` of a    none (the gradient is a view)
[s, b, h]              permuted tensor copies)
residual add           read 2, write 1: 3X                  the residual stream's two gradients
                                                            summed by autograd: 3X
GeLU (tanh)            2F                                   read dy, x, write dx: 3F
bias gradient          (in the GEMM's epilogue)             dY summed over tokens: read T·n
q, k, v gradients      —                                    dq, dk times 1/√d (baddbmm's backward):
                                                            2X each; ``split``'s backward concatenates
                                                            dq, dk, dv: 6X
=====================  ===================================  ==========================================

The head: the fp16 logits cast to fp32 (3 per logit), log-softmax in fp32 (read, write: 4), NLL;
backward: NLL's zero-filled fp32 gradient (2), log-softmax's backward (read dy, y, write: 6), cast
back to fp16 (3) — each the least a kernel must move (PyTorch's log-softmax over 50k-wide rows reads
a row up to three times, L2 may catch it). The embedding: two gathers, their broadcast add, the
[b, s] → [s, b] copy, dropout; backward the position table's sum over the batch, the gradient made
contiguous, the token table's zeroed dense gradient, and the tied table's two gradients summed.

Out-of-place ``masked_fill`` is PyTorch's composite ``self.clone().masked_fill_(mask, value)`` (its dispatch:
``aten::clone`` → ``aten::copy_``, then ``aten::masked_fill_``; the gradient, ``grad.masked_fill(mask, 0)`` by
``derivatives.yaml``, the same), so each way moves the s²-sized scores twice: a device-to-device copy and the
in-place fill. One op here (the copy is a ``cudaMemcpyAsync``, not a kernel launch the profiler counts).

The standard core's backward has two more kernels of PyTorch's own. ``baddbmm``'s derivative multiplies the batch
gradients by alpha (``maybe_multiply(grad.bmm(…), alpha)``, ``derivatives.yaml``; 1/√d here, not 1): dQ and dK each
scaled by a kernel of its own, 2X apiece. CUDA's softmax backward (pytorch/pytorch
``aten/src/ATen/native/cuda/SoftMax.cu`` at commit 000cace5, ``softmax_backward_cuda_out``) first forms
``tmp = grad * output`` as a separate elementwise multiply (read dY, Y, write: 3S), then its kernel reads ``tmp`` and
Y and writes dX (3S); the CPU's kernel fuses the product, so only the CUDA source shows it.

The LayerNorms, the softmax and the log-softmax are PyTorch's own kernels of the classes the kernel
model times (``TrainingOp.kernel``: layer norm on T × h, softmax on b·a·s × s, the log-softmax in fp32
on T × V). In fp16/bf16 they stream at the training fit like every other op
(:func:`archsim.devices.kernel_ops.kernel_families`); the names let ``pytorch_memory_bound`` time them
by their class at NeuSight's constants instead — tried on the Hopper iterations, not adopted
(docs/accuracy.md, "Hopper check").

With ``attention = "flash"`` (:func:`eager_flash_core`) the layer calls PyTorch's
``F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)`` under its FLASH_ATTENTION backend
in place of baddbmm, masked_fill, softmax, attention dropout and bmm: FlashAttention-2's kernels, the ones
Megatron's list prices, and one copy of PyTorch's own around them, dO's (that function's docstring).

One GPU only (TP = PP = DP = 1; :func:`check_one_gpu`), GPT family only: the runs this describes.
"""

from __future__ import annotations

from archsim.choices.devices import ELEMENT_BYTES
from archsim.console import setting
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.flash_blocks import flash_backward_kernels
from archsim.training.layer_ops import flash_attention_ops
from archsim.training.op_work import Work, gemm_ops, vector_op
from archsim.training.parallel import Parallelism, padded_vocab
from archsim.workload.transformer import TransformerConfig

Kernel = tuple[str, int, int] | tuple[()]  # a memory-bound op's PyTorch kernel class (TrainingOp.kernel), or none

# Bytes per parameter of gpu_train_measure.py's optimizer step, by training dtype. fp16 (dynamic loss scale):
# fp16 → fp32 gradient copy 6, unscale 8, the inf/NaN norm 4, fused Adam 28 (master, grad, two moments read;
# master, moments written), master → fp16 weight 6. bf16 (no loss scale: no unscale, no norm, no host sync):
# bf16 → fp32 gradient copy 6, fused Adam 28, master → bf16 weight 6.
EAGER_OPTIMIZER_BYTES = {"fp16": 6 + 8 + 4 + 28 + 6, "bf16": 6 + 28 + 6}
EAGER_OPTIMIZER_BYTES_PER_PARAMETER = EAGER_OPTIMIZER_BYTES["fp16"]  # the default dtype's: 52


def check_one_gpu(par: Parallelism) -> None:
    """Both eager lists are one GPU's runs (gpu_train_measure.py's AMP GPT, NeuSight's fp32 iterations): no
    TP, pipeline or DP of plain PyTorch is modelled; several micro-batches accumulate on that GPU."""
    if par.gpus > 1:
        raise InputError(f"the pytorch-eager op list models plain PyTorch on one GPU (TP 1, PP 1, DP 1; several "
                         f"micro-batches accumulate on it), got TP {par.tp}, CP {par.cp}, PP {par.pp}, DP {par.dp}: for several "
                         f"GPUs use {setting('implementation', 'megatron')} (the default)", field="implementation")


def check_eager(c: TransformerConfig, tp: int, sequence_parallel: bool) -> None:
    if tp != 1 or sequence_parallel or c.family != "gpt":
        raise InputError("implementation 'pytorch-eager' models one-GPU GPT training only (TP 1, no sequence "
                         f"parallelism), got {c.family} at TP {tp}", field="implementation")


def eager_optimizer_bytes(dtype: str) -> int:
    """Bytes per parameter the AMP GPT's optimizer step moves in ``dtype`` (fp16 or bf16:
    :data:`EAGER_OPTIMIZER_BYTES`); its kernels' gaps are counted as Megatron's fused step's wherever it runs."""
    if dtype not in EAGER_OPTIMIZER_BYTES:
        raise InputError(f"the pytorch-eager AMP step is fp16's or bf16's, got {dtype!r}", field="dtype")
    return EAGER_OPTIMIZER_BYTES[dtype]


def check_eager_attention(attention: str) -> None:
    """Hugging Face's fp32 modules (``--dtype fp32``) run the standard core (scores in HBM): FlashAttention
    runs fp16 and bf16 only, so ``flash`` is refused there with the flag to give."""
    if attention != "standard":
        raise InputError(f"the pytorch-eager op list in fp32 (Hugging Face's modules) runs standard attention only, "
                         f"not {attention!r} (FlashAttention runs fp16/bf16): give "
                         f"{setting('attention', 'standard')}", field="attention")


def eager_block_work(c: TransformerConfig, micro_batch: int, attention: str = "standard", dtype: str = "fp16") -> Work:
    """One layer's kernels in plain PyTorch for one micro-batch (module docstring's table), its attention core
    standard or ``flash`` (:func:`eager_flash_core`) in ``dtype`` (fp16 or bf16: 2-byte elements either way)."""
    s, h, b, f = c.seq, c.hidden, micro_batch, c.ffn
    tokens = s * b
    x, ff, scores = tokens * h, tokens * f, s * s * b * c.heads
    hd = c.head_dim
    forward: list[TrainingOp] = []
    backward: list[TrainingOp] = []

    def fwd(name: str, elements: float, kernel: Kernel = ()) -> None:
        forward.append(_kernel(name, "F", elements, kernel))

    def bwd(name: str, elements: float, kernel: Kernel = ()) -> None:
        backward.append(_kernel(name, "D", elements, kernel))

    def gemm(name: str, *args, weights: bool = True) -> None:
        f_op, d_op, g_op = gemm_ops(name, *args, weights=weights)
        forward.append(f_op)
        backward.extend((d_op, g_op))

    # forward in issue order; the backward list is built first-to-last and reversed at the end
    norm: Kernel = ("ln", tokens, h)
    fwd("norm1", 2 * x, norm)
    bwd("norm1", 3 * x, norm)
    bwd("norm1.dgamma", 2 * x, norm)
    gemm("qkv", tokens, h, 3 * h)
    bwd("qkv.bias_grad", 3 * x)
    bwd("qkv.grad_cat", 6 * x)
    def dropout_and_residual(i: int) -> None:
        """A sublayer's end: dropout and the residual add, two kernels each way (not Megatron's fused one)."""
        fwd(f"dropout{i}", 2.5 * x)
        bwd(f"dropout{i}", 2.5 * x)
        fwd(f"residual_add{i}", 3 * x)
        bwd(f"residual_grad_add{i}", 3 * x)

    if attention == "flash":
        core = eager_flash_core(c, b, dtype)
        forward.extend(core.forward)
        backward.extend(core.backward[::-1])  # in forward order here, as the rest: reversed below
    else:
        bwd("scores.q_grad_scale", 2 * x)  # baddbmm's backward: dQ and dK times alpha = 1/√d, after the GEMMs
        bwd("scores.k_grad_scale", 2 * x)
        gemm("scores", s, hd, s, b * c.heads, weights=False)
        softmax: Kernel = ("softmax", b * c.heads * s, s)
        fwd("mask_fill", 4 * scores)
        bwd("mask_fill", 4 * scores)
        fwd("softmax", 2 * scores, softmax)
        bwd("softmax", 3 * scores, softmax)
        bwd("softmax.grad_mul", 3 * scores)  # CUDA's dY ∘ Y, issued before the softmax kernel (reversed below)
        if c.drops_attention:
            fwd("attn_dropout", 2.5 * scores)
            bwd("attn_dropout", 2.5 * scores)
        gemm("context", s, s, hd, b * c.heads, weights=False)
    fwd("context_copy", 2 * x)
    gemm("proj", tokens, h, h)
    bwd("proj.bias_grad", x)
    dropout_and_residual(1)
    fwd("norm2", 2 * x, norm)
    bwd("norm2", 3 * x, norm)
    bwd("norm2.dgamma", 2 * x, norm)
    gemm("fc1", tokens, h, f)
    bwd("fc1.bias_grad", ff)
    fwd("gelu", 2 * ff)
    bwd("gelu", 3 * ff)
    gemm("fc2", tokens, f, h)
    bwd("fc2.bias_grad", x)
    dropout_and_residual(2)
    backward.reverse()
    return Work(tuple(forward), tuple(backward))


def eager_flash_core(c: TransformerConfig, micro_batch: int, dtype: str = "fp16") -> Work:
    """The attention core as ``F.scaled_dot_product_attention`` runs it under the FLASH_ATTENTION backend, for one
    micro-batch, backward in issue order. q, k and v reach it as [b, n, s, d] views of the QKV output (the
    [s, b·n, 3d] split, reshaped and permuted: last dimension contiguous, no copy); FlashAttention-2's forward
    (:func:`~archsim.training.layer_ops.flash_attention_ops`, causal, with dropout) reads them in place and writes
    O and the fp32 log-sum-exp; its backward runs the dot(dO, O) kernel, the main kernel and dQ's fp32
    conversion (:func:`~archsim.training.flash_blocks.flash_backward_kernels`) — Megatron's list's ops, not a copy.
    PyTorch's own copies around them (pytorch/pytorch, ``aten/src/ATen/native/transformers/cuda/``
    ``attention_backward.cu`` at commit 1e07335b, ``_scaled_dot_product_flash_attention_backward_cuda`` and
    ``_flash_attention_backward``; ``flash_attn/flash_api.cpp`` at commit ef3d5c9e, ``mha_fwd``/``mha_bwd``):

    - ``mha_fwd`` and ``mha_bwd`` check only that q, k, v (and O, dO) have a contiguous last dimension: the strided
      views are not copied, forward or backward;
    - ``_flash_attention_backward`` calls ``grad_out.contiguous()`` (and ``out.contiguous()``, a no-op: O is
      written [b, s, n, d]-contiguous). dO arrives as the permuted view of the [s, b, h] gradient: one copy,
      read and write 2X (``grad_out_copy``);
    - ``mha_bwd`` allocates dQ, dK, dV ``empty_like`` the strided views; ``empty_like`` of a strided tensor that is
      not dense keeps its dimensions' order (dense strides in the [s, b, n, d] order of the QKV output), so autograd's
      reshape of each back to [s, b·n, d] is a view, contiguous: no copy, and ``split``'s concatenation
      (``qkv.grad_cat``) reads them as they are (tests/test_eager_backward_kernels.py reads it from PyTorch on the CPU;
      the H200 profile launches two strided copies per layer pass, the context copy and dO's, not five).

    The forward's context copy to [s, b, h] is :func:`eager_block_work`'s ``context_copy`` either way."""
    s, heads, hd = c.seq, micro_batch * c.heads, c.head_dim
    x = s * micro_batch * c.hidden
    forward, main = flash_attention_ops(s, hd, heads, heads, c.sliding_window, dtype, True, c.drops_attention)
    dot, convert = flash_backward_kernels(s, hd, heads, dtype)
    return Work((forward,), (_kernel("grad_out_copy", "D", 2 * x), dot, main, convert))


def eager_flash_output_bytes(c: TransformerConfig, par: Parallelism, dtype: str) -> float:
    """Activation bytes the eager flash layer keeps beyond Megatron's FlashAttention row
    (:func:`~archsim.training.layer_activations.layer_activation_bytes`: the selective row, which counts no s²
    tensor, plus the fp32 log-sum-exp): SDPA's output O, s·b·h elements [b, s, n, d]-contiguous, saved for the
    flash backward beside its [s, b, h] copy (the projection's input, counted in the row). Megatron's kernel writes
    O in the projection's layout, one tensor; here they are two. Kept by every layer without full recompute; with
    it, by the one layer the backward reruns (a working-set term, added to the peak whatever phase it falls in).
    The dropout RNG state (philox seed and offset) is two int64 CPU scalars (``mha_fwd``): no GPU bytes. One GPU, one
    micro-batch in flight (plain PyTorch's accumulation runs each micro-batch's backward before the next
    forward); 0 with standard attention."""
    if par.attention != "flash":
        return 0.0
    layers = 1 if par.recompute == "full" else c.layers
    return float(layers * c.seq * par.micro_batch * c.hidden * ELEMENT_BYTES[dtype])


def _kernel(name: str, kind: str, elements: float, kernel: Kernel = (), dtype: str = "") -> TrainingOp:
    """A memory-bound op; ``kernel``: the PyTorch kernel class it is, ``dtype`` when not the training one."""
    return TrainingOp(name, kind, (), vector_elements=int(round(elements)), kernel=kernel, kernel_dtype=dtype)


def eager_embedding_work(c: TransformerConfig, micro_batch: int) -> Work:
    tokens, h = c.seq * micro_batch, c.hidden
    x, table = tokens * h, padded_vocab(c.vocab, 1) * h
    positions = c.seq * h
    forward = (vector_op("embedding", "F", 2 * x), vector_op("position_embedding", "F", 2 * positions),
               vector_op("embedding_add", "F", 2 * x + positions), vector_op("embedding_transpose", "F", 2 * x),
               vector_op("embedding_dropout", "F", 2.5 * x))
    backward = (vector_op("embedding_dropout", "D", 2.5 * x), vector_op("position_embedding", "G", x + positions),
                vector_op("embedding_grad_contiguous", "D", 2 * x), vector_op("embedding", "G", table + 2 * x),
                vector_op("tied_grad_add", "G", 3 * table))
    return Work(forward, backward)


def eager_head_work(c: TransformerConfig, micro_batch: int) -> Work:
    tokens, h = c.seq * micro_batch, c.hidden
    x, logits = tokens * h, tokens * padded_vocab(c.vocab, 1)
    vocab = padded_vocab(c.vocab, 1)
    f, d, g = gemm_ops("lm_head", tokens, h, vocab)
    norm: Kernel = ("ln", tokens, h)
    log_softmax: Kernel = ("softmax", tokens, vocab)  # PyTorch's softmax kernels, on the fp32 logits
    forward = (_kernel("final_norm", "F", 2 * x, norm), f, vector_op("logits_to_fp32", "F", 3 * logits),
               _kernel("log_softmax", "F", 4 * logits, log_softmax, "fp32"), vector_op("nll_loss", "F", 2 * tokens))
    backward = (vector_op("nll_loss", "D", 2 * logits), _kernel("log_softmax", "D", 6 * logits, log_softmax, "fp32"),
                vector_op("logits_to_fp16", "D", 3 * logits), d, g, _kernel("final_norm.dgamma", "D", 2 * x, norm),
                _kernel("final_norm", "D", 3 * x, norm))
    return Work(forward, backward)


def check_sharding(implementation: str, distributed_optimizer: bool, fsdp: bool) -> None:
    """Refuse a state sharding beside ``pytorch-eager`` in one line: it models the measured plain-PyTorch loop on
    one GPU, with neither Megatron-LM's distributed optimizer nor an FSDP wrapper. The one rule train's op lists
    (:func:`archsim.training.iteration.model_pieces`) and the memory (:func:`~archsim.training.memory.state_bytes`)
    both apply."""
    if implementation != "pytorch-eager":
        return
    if distributed_optimizer:
        raise InputError(f"{setting('distributed-optimizer')} is Megatron-LM's: not with "
                         f"{setting('implementation', 'pytorch-eager')}", field="distributed-optimizer")
    if fsdp:
        raise InputError(f"{setting('fsdp')} is not modelled with {setting('implementation', 'pytorch-eager')} "
                         f"(plain PyTorch's loop, unwrapped; on one GPU FSDP shards nothing): drop it", field="fsdp")


def check_dp_overlap(implementation: str, dp_overlap: str) -> None:
    """Refuse ``bucketed`` beside ``pytorch-eager`` in one line: it is Megatron-LM's ``--overlap-grad-reduce``, its
    buckets of max(40·10⁶, 10⁶·DP) parameters (:mod:`archsim.training.dp_overlap`), and the plain-PyTorch loop is one
    GPU's (DP 1, :func:`check_one_gpu`), with no DP all-reduce to bucket or overlap — PyTorch DDP's own buckets
    (25 MiB, overlapped with the backward by default) are not modelled. Accepted, it would change nothing: a flag that
    looks honoured and is not."""
    if implementation == "pytorch-eager" and dp_overlap != "none":
        raise InputError(f"{setting('dp-overlap', dp_overlap)} is Megatron-LM's --overlap-grad-reduce (its buckets of "
                         f"the DP all-reduce): not with {setting('implementation', 'pytorch-eager')}, which runs one GPU "
                         "(DP 1) with no DP all-reduce to overlap (PyTorch DDP's buckets are not modelled)",
                         field="dp-overlap")


__all__ = ["EAGER_OPTIMIZER_BYTES", "EAGER_OPTIMIZER_BYTES_PER_PARAMETER", "check_dp_overlap", "check_eager",
           "check_eager_attention", "check_sharding", "eager_block_work", "eager_embedding_work", "eager_flash_core", "eager_flash_output_bytes", "eager_head_work",
           "eager_optimizer_bytes"]
