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
masked_fill (mask)     read, write: 2S                      masked_fill of the gradient: 2S
softmax                read, write: 2S                      read y, dy, write dx: 3S
dropout                read, write, mask: 2.5               read dy, mask, write: 2.5
context permute →      read, write: 2X (``reshape`` of a    none (the gradient is a view)
[s, b, h]              permuted tensor copies)
residual add           read 2, write 1: 3X                  the residual stream's two gradients
                                                            summed by autograd: 3X
GeLU (tanh)            2F                                   read dy, x, write dx: 3F
bias gradient          (in the GEMM's epilogue)             dY summed over tokens: read T·n
q, k, v gradients      —                                    ``split``'s backward concatenates them: 6X
=====================  ===================================  ==========================================

The head: the fp16 logits cast to fp32 (3 per logit), log-softmax in fp32 (read, write: 4), NLL;
backward: NLL's zero-filled fp32 gradient (2), log-softmax's backward (read dy, y, write: 6), cast
back to fp16 (3) — each the least a kernel must move (PyTorch's log-softmax over 50k-wide rows reads
a row up to three times, L2 may catch it). The embedding: two gathers, their broadcast add, the
[b, s] → [s, b] copy, dropout; backward the position table's sum over the batch, the gradient made
contiguous, the token table's zeroed dense gradient, and the tied table's two gradients summed.

The LayerNorms, the softmax and the log-softmax are PyTorch's own kernels of the classes the kernel
model times (``TrainingOp.kernel``: layer norm on T × h, softmax on b·a·s × s, the log-softmax in fp32
on T × V). In fp16/bf16 they stream at the training fit like every other op
(:func:`archsim.devices.kernel_ops.kernel_families`); the names let ``pytorch_memory_bound`` time them
by their class at NeuSight's constants instead — tried on the Hopper iterations, not adopted
(docs/training.md, "Hopper check").

One GPU only (TP = PP = DP = 1; :func:`check_one_gpu`), GPT family only: the runs this describes.
"""

from __future__ import annotations

from archsim.console import setting
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.op_work import Work, gemm_ops, vector_op
from archsim.training.parallel import Parallelism, padded_vocab
from archsim.workload.transformer import TransformerConfig

Kernel = tuple[str, int, int] | tuple[()]  # a memory-bound op's PyTorch kernel class (TrainingOp.kernel), or none

# fp16 → fp32 gradient copy 6, unscale 8, norm 4, fused Adam 28 (master, grad, two moments read; master,
# moments written), master → fp16 weight 6: bytes per parameter of gpu_train_measure.py's optimizer step
EAGER_OPTIMIZER_BYTES_PER_PARAMETER = 52


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


def check_eager_attention(attention: str) -> None:
    """Plain PyTorch's attention is the standard core (scores in HBM); FlashAttention, ``--attention``'s
    default, is Megatron's: refused with the flag to give."""
    if attention != "standard":
        raise InputError(f"the pytorch-eager op list runs standard attention only, not {attention!r}: give "
                         f"{setting('attention', 'standard')}", field="attention")


def eager_block_work(c: TransformerConfig, micro_batch: int) -> Work:
    """One layer's kernels in plain PyTorch for one micro-batch (module docstring's table)."""
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

    gemm("scores", s, hd, s, b * c.heads, weights=False)
    softmax: Kernel = ("softmax", b * c.heads * s, s)
    dropout = (("attn_dropout", 2.5, 2.5, ()),) if c.drops_attention else ()
    for name, forward_elements, backward_elements, kernel in (("mask_fill", 2, 2, ()), ("softmax", 2, 3, softmax),
                                                              *dropout):
        fwd(name, forward_elements * scores, kernel)
        bwd(name, backward_elements * scores, kernel)
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


__all__ = ["EAGER_OPTIMIZER_BYTES_PER_PARAMETER", "check_eager", "check_eager_attention", "check_sharding",
           "eager_block_work", "eager_embedding_work", "eager_head_work"]
