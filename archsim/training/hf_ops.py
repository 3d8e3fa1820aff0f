"""The op list of Hugging Face transformers' eager modules trained in fp32 on one GPU: GPT-2
(``GPT2LMHeadModel``), OPT (``OPTForCausalLM``, :func:`_opt_block_work`) and BERT
(``BertLMHeadModel``: the encoder and its MLM head), kernel by kernel,
as PyTorch runs them without AMP — what NeuSight's measured iterations ran (``--implementation
pytorch-eager --dtype fp32``; ``benchmarks/bench_neusight_iterations.py``).

Why a list of its own: the modules' Python code decides the kernels. GPT-2's ``gelu_new`` is written
out (``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``: 8 kernels forward, 11 backward), its attention
divides the scores by √d and masks them with ``torch.where``; BERT adds its extended attention mask,
uses exact GeLU (one kernel) and LayerNorms after the residual adds; both compute the LM loss on
logits shifted by one token (a copy when b > 1), then log-softmax and NLL over the vocabulary.

Elements read + written in HBM, in elements of the training dtype (a dropout mask byte is ¼ of an
fp32 element); X = T·h, F = T·f, S = b·a·s² (T = s·b tokens, a heads), V the vocabulary:

=========================  ==========================================  ====================================
kernel                     forward                                     backward
=========================  ==========================================  ====================================
LayerNorm                  the kernel model's layer norm on T × h      dx 3X; γ, β 2X
bias of a Linear/Conv1D    (the GEMM's epilogue)                       dY summed over tokens: T·n
attention scale            divide by √d: 2S                            2S
mask                       GPT-2 ``where``: 2S; BERT ``+ mask``: 2S    GPT-2 ``where``: 2S; BERT none
softmax                    the kernel model's softmax on b·a·s × s     CUDA's dy ∘ y first (read 2, write:
                                                                       3S), then the kernel: read it and y,
                                                                       write dx: 3S
dropout                    read, write, mask: 2.25                     read dy, mask, write: 2.25
heads merged               permute + contiguous: 2X                    b > 1: the permuted gradient
                                                                       reshaped for bmm, a copy: 2X
heads for ``matmul``       b > 1: q, kᵀ, v reshaped to [b·a, …], a     dQ, dV reshaped to [b, s, h]: 2X
                           copy each: 6X (b = 1: views)                each; BERT's dK when b > 1: 2X
residual add               3X                                          each tensor used twice: its
                                                                       gradients summed, 3X per extra use
GPT-2 q, k, v              ``split`` of one Conv1D (view)              ``cat`` of the three gradients: 6X
OPT q, k, v                three Linears; q × 1/√d: 2X; each split     q scale 2X; dQ, dV reshaped back 2X
                           into heads by a copy: 2X                    each, dK when b > 1; the three input
                                                                       gradients summed 6X
OPT mask, clamp            ``+ mask`` 2S; ``torch.max`` at the         clamp's backward five kernels: dy/2
                           dtype's minimum 2S                          2S, ==, < 1.25S each, where 3.25S,
                                                                       masked_fill_ 2.25S: 10S; add none
GeLU / ReLU                GPT-2: 8 kernels, 18F; BERT: 2F; OPT ReLU   GPT-2: 11 kernels, 28F; BERT, OPT 3F
                           2F (the config's activation: gelu_new       (gelu_new: 11 kernels, 28F; any other
                           8 kernels, any other one kernel, 2F)        one kernel, 3F)
=========================  ==========================================  ====================================

Embeddings: the token (and BERT's token-type) gather 2X each, positions 2·s·h, their sums 3X,
(BERT: LayerNorm,) dropout; backward: the dense gradients of the tables (zeroed V·h, then T·h read
and written), the positions' sum over the batch, and the tied table's two gradients summed (3V·h).
Loss: the shifted logits copied when b > 1 (2·T·V; at b = 1 the slice is contiguous and
``contiguous()`` copies nothing), log-softmax (the kernel model's softmax on T × V), NLL; backward
NLL's zero-filled gradient (T·V), log-softmax's backward (3·T·V: no separate product, below), the
slice's zero-filled gradient and copy (3·T·V). Not modeled: the sort kernels of the embedding
backward (a few of T-sized tensors), 0-dim scalars made on the device (GPT-2's √d and mask value).

How the kernels were checked (tests/test_hf_backward_kernels.py): transformers 4.35's modules profiled on
the CPU with PyTorch's profiler (the reshapes, ``contiguous`` and derivatives.yaml formulas that decide the
copies run the same on CUDA), and PyTorch's CUDA sources where CUDA differs. Dropout is ``native_dropout``,
one fused kernel each way (``dropout`` in ``aten/src/ATen/native/Dropout.cpp``, ``is_fused_kernel_acceptable``:
CUDA and 0 < p < 1; the CPU runs bernoulli, divide and multiply). CUDA's softmax backward (pytorch/pytorch
``aten/src/ATen/native/cuda/SoftMax.cu`` at commit e9865f53, ``softmax_backward_cuda_out``) forms
``tmp = grad * output`` as a kernel of its own before ``host_softmax_backward``; ``log_softmax_backward_cuda_out``
calls ``host_softmax_backward`` on the gradient directly, so the loss has no such product. The head copies:
4-D ``matmul`` folds [b, a] by ``reshape``, a copy of each permuted operand when b > 1 and a view at b = 1;
autograd's reshape of dQ and dV ([b, a, s, d]-ordered) back to [b, s, h] copies at any b, while dK comes back
transposed, a view that GPT-2's ``cat`` reads as it is and a separate Linear's reshape to [T, h] copies when
b > 1 (:func:`head_copies`).
"""

from __future__ import annotations

from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.eager_ops import check_eager_attention
from archsim.training.op_work import Work, gemm_ops
from archsim.workload.transformer import TransformerConfig

HF_FAMILIES = ("gpt", "opt", "bert", "switch")  # switch's list: archsim.training.hf_switch_ops
# gelu_new's kernels, elements moved per FFN element: forward pow, ×c, +, ×√(2/π), tanh, 1 +, 0.5·x, product
GELU_NEW_FORWARD = (2, 2, 3, 2, 2, 2, 2, 3)
# backward: the product's two gradients, ×0.5, tanh's backward, ×√(2/π), ×c, pow's backward (x², ×3, × dy),
# then the input's three gradients summed (two adds)
GELU_NEW_BACKWARD = (3, 3, 2, 3, 2, 2, 2, 2, 3, 3, 3)
DROPOUT = 2.25  # read, write, and a one-byte mask per fp32 element


def check_hf(c: TransformerConfig, tp: int, sequence_parallel: bool, attention: str) -> None:
    if tp != 1 or sequence_parallel or c.family not in HF_FAMILIES:
        raise InputError("implementation 'pytorch-eager' in fp32 models one-GPU Hugging Face GPT-2, OPT, BERT and Switch "
                         f"training only (TP 1, no sequence parallelism), got {c.family} at TP {tp}",
                         field="implementation")
    check_eager_attention(attention)


class OpCollector:
    """Collects one piece's forward ops in issue order and its backward ops last-first (elements moved per
    kernel, GEMM shapes in elements); the Switch/T5 lists (:mod:`~archsim.training.hf_switch_ops`) are
    collected by the same class."""

    def __init__(self) -> None:
        self.forward: list[TrainingOp] = []
        self.backward: list[TrainingOp] = []

    def fwd(self, name: str, elements: float, kernel: tuple[str, int, int] | tuple[()] = ()) -> None:
        self.forward.append(TrainingOp(name, "F", (), vector_elements=int(round(elements)), kernel=kernel))

    def bwd(self, name: str, elements: float, kernel: tuple[str, int, int] | tuple[()] = (), kind: str = "D") -> None:
        self.backward.append(TrainingOp(name, kind, (), vector_elements=int(round(elements)), kernel=kernel))

    def gemm(self, name: str, m: int, k: int, n: int, count: int = 1, *, weights: bool = True,
             bias: bool = True) -> None:
        f, d, g = gemm_ops(name, m, k, n, count, weights=weights)
        self.forward.append(f)
        self.backward.extend((d, g))
        if bias:
            self.bwd(f"{name}.bias_grad", m * n, kind="G")

    def norm(self, name: str, tokens: int, hidden: int) -> None:
        x = tokens * hidden
        self.fwd(name, 2 * x, ("ln", tokens, hidden))
        self.bwd(name, 3 * x, ("ln", tokens, hidden))
        self.bwd(f"{name}.dgamma", 2 * x, ("ln", tokens, hidden), kind="G")

    def softmax(self, name: str, rows: int, width: int) -> None:
        """``F.softmax`` over the last dimension, and its backward as CUDA runs it: ``softmax_backward_cuda_out``
        forms ``grad * output`` as a kernel of its own (read 2, write 1) before the backward kernel reads it and
        the output and writes dX (module docstring)."""
        n, kernel = rows * width, ("softmax", rows, width)
        self.fwd(name, 2 * n, kernel)
        self.bwd(name, 3 * n, kernel)
        self.bwd(f"{name}.grad_mul", 3 * n)  # issued before the kernel (the backward list is reversed)

    def dropout(self, name: str, elements: float) -> None:
        self.fwd(name, DROPOUT * elements)
        self.bwd(name, DROPOUT * elements)

    def activation(self, prefix: str, name: str, elements: float) -> None:
        """The MLP's activation on ``elements``: gelu_new written out (its 8 and 11 kernels), any other
        (:data:`~archsim.workload.transformer.ONE_KERNEL_ACTIVATIONS`) one kernel each way."""
        if name == "gelu_new":
            for i, moved in enumerate(GELU_NEW_FORWARD):
                self.fwd(f"{prefix}gelu_new.{i}", moved * elements)
            for i, moved in enumerate(GELU_NEW_BACKWARD):
                self.bwd(f"{prefix}gelu_new.{i}", moved * elements)
        else:
            self.fwd(f"{prefix}{name}", 2 * elements)
            self.bwd(f"{prefix}{name}", 3 * elements)

    def work(self) -> Work:
        return Work(tuple(self.forward), tuple(reversed(self.backward)))


def head_copies(o: OpCollector, heads_width: int, micro_batch: int, separate_k: bool, prefix: str = "") -> None:
    """The copies PyTorch makes of the heads around the 4-D ``torch.matmul`` of GPT-2, BERT and T5 (q, k, v as
    ``view().permute()`` views of the projections), ``heads_width`` elements each (T·h; T5: T·a·d_kv). Backward:
    autograd's reshape of dQ and dV back to [b, s, h] copies (their [b, a, s, d] order is not a view of it); dK
    comes back transposed, a view of [b, s, h] that GPT-2's ``cat`` reads as it is and a separate Linear's
    ``reshape`` to [T, h] copies when b > 1. When b > 1 ``matmul`` folds [b, a] into one batch dimension by
    ``reshape``: q, kᵀ and v copied forward, and the context's gradient backward (its ``_unsafe_view``'s reshape
    of the permuted gradient). At b = 1 those reshapes are views."""
    x = heads_width
    folded = micro_batch > 1
    if folded:
        for name in ("q", "k", "v"):
            o.fwd(f"{prefix}{name}_matmul_copy", 2 * x)
    o.bwd(f"{prefix}q_grad_copy", 2 * x)
    o.bwd(f"{prefix}v_grad_copy", 2 * x)
    if separate_k and folded:
        o.bwd(f"{prefix}k_grad_copy", 2 * x)


def hf_block_work(c: TransformerConfig, micro_batch: int) -> Work:
    """One GPT-2, OPT or BERT layer's kernels for one micro-batch (module docstring's table)."""
    if c.family == "opt":
        return _opt_block_work(c, micro_batch)
    s, h, b, f, a = c.seq, c.hidden, micro_batch, c.ffn, c.heads
    tokens = s * b
    x, ff, scores = tokens * h, tokens * f, s * s * b * a
    o = OpCollector()
    gpt = c.family == "gpt"
    if gpt:
        o.norm("ln_1", tokens, h)
        o.bwd("residual_grad_sum1", 3 * x)  # the block's input feeds ln_1 and the residual
        o.gemm("c_attn", tokens, h, 3 * h)
        o.bwd("qkv_grad_cat", 6 * x)
    else:
        o.bwd("residual_grad_sum1", 3 * 3 * x)  # the input feeds query, key, value and the residual
        for name in ("query", "key", "value"):
            o.gemm(name, tokens, h, h)
    head_copies(o, x, b, separate_k=not gpt)
    o.gemm("scores", s, c.head_dim, s, b * a, weights=False, bias=False)
    o.fwd("scale", 2 * scores)
    o.bwd("scale", 2 * scores)
    o.fwd("mask", 2 * scores)
    if gpt:
        o.bwd("mask", 2 * scores)
    o.softmax("softmax", b * a * s, s)
    if c.drops_attention:
        o.dropout("attn_dropout", scores)
    o.gemm("context", s, s, c.head_dim, b * a, weights=False, bias=False)
    if b > 1:
        o.bwd("context_grad_copy", 2 * x)  # the permuted gradient reshaped to [b·a, s, d] (head_copies)
    o.fwd("merge_heads", 2 * x)
    o.gemm("attn_proj", tokens, h, h)
    o.dropout("resid_dropout1", x)
    o.fwd("residual_add1", 3 * x)
    if gpt:
        o.norm("ln_2", tokens, h)
        o.bwd("residual_grad_sum2", 3 * x)
    else:
        o.norm("attn_norm", tokens, h)
        o.bwd("residual_grad_sum2", 3 * x)  # the attention output feeds the MLP and its residual
    o.gemm("fc1", tokens, h, f)
    o.activation("", c.mlp_activation, ff)
    o.gemm("fc2", tokens, f, h)
    o.dropout("resid_dropout2", x)
    o.fwd("residual_add2", 3 * x)
    if not gpt:
        o.norm("output_norm", tokens, h)
    return o.work()


def _opt_block_work(c: TransformerConfig, micro_batch: int) -> Work:
    """One OPT decoder layer (``OPTDecoderLayer``, LayerNorm before each block): q, k, v as three
    Linears on the same normed input (their input gradients summed), q scaled by 1/√d, each split into
    heads by ``transpose(1, 2).contiguous()`` (a copy; backward, autograd's reshape of dQ and dV copies,
    dK's only when b > 1: :func:`head_copies`), the causal mask added and the scores clamped at the dtype's
    minimum (``torch.max``: five kernels back), softmax, the context's heads merged by ``reshape`` (a copy;
    its backward one when b > 1), ReLU; attention and activation dropout are 0 in the shipped configs (no
    kernel), the residual dropout 0.1."""
    s, h, b, f, a = c.seq, c.hidden, micro_batch, c.ffn, c.heads
    tokens = s * b
    x, ff, scores = tokens * h, tokens * f, s * s * b * a
    o = OpCollector()
    o.norm("self_attn_layer_norm", tokens, h)
    o.bwd("residual_grad_sum1", 3 * x)  # the block's input feeds the LayerNorm and the residual
    o.bwd("qkv_grad_sum", 2 * 3 * x)  # the normed input feeds q, k and v: their gradients summed
    for name in ("q_proj", "k_proj", "v_proj"):
        o.gemm(name, tokens, h, h)
    o.fwd("q_scale", 2 * x)
    o.bwd("q_scale", 2 * x)
    for name in ("q_heads", "k_heads", "v_heads"):
        o.fwd(name, 2 * x)
        if name != "k_heads" or b > 1:  # dK comes back transposed: a view of [b, s, h], copied to [T, h] if b > 1
            o.bwd(name, 2 * x)
    o.gemm("scores", s, c.head_dim, s, b * a, weights=False, bias=False)
    o.fwd("mask", 2 * scores)
    o.fwd("clamp", 2 * scores)
    # torch.max(x, min)'s backward by derivatives.yaml (maximum): where(x == min, dy / 2, dy).masked_fill_(x < min, 0)
    for name, moved in (("half", 2), ("eq", 1.25), ("where", 3.25), ("lt", 1.25), ("masked_fill", 2.25)):
        o.bwd(f"clamp.{name}", moved * scores)
    o.softmax("softmax", b * a * s, s)
    o.gemm("context", s, s, c.head_dim, b * a, weights=False, bias=False)
    o.fwd("merge_heads", 2 * x)
    if b > 1:  # the gradient's reshape back to [b·a, s, d] is a view when b = 1
        o.bwd("merge_heads", 2 * x)
    o.gemm("out_proj", tokens, h, h)
    o.dropout("resid_dropout1", x)
    o.fwd("residual_add1", 3 * x)
    o.norm("final_layer_norm", tokens, h)
    o.bwd("residual_grad_sum2", 3 * x)
    o.gemm("fc1", tokens, h, f)
    o.activation("", c.mlp_activation, ff)
    o.gemm("fc2", tokens, f, h)
    o.dropout("resid_dropout2", x)
    o.fwd("residual_add2", 3 * x)
    return o.work()


def hf_embedding_work(c: TransformerConfig, micro_batch: int) -> Work:
    """Token, position (and BERT's token-type) lookups, their sums, (BERT's LayerNorm,) dropout; OPT:
    its positions looked up per token (from the attention mask's cumulative sum: kernels on b·s
    elements, left out), its b × s × s mask built (transformers 4.35's ``AttentionMaskConverter.to_4d``: the
    [b, s] mask expanded and inverted, cast to bool, ``masked_fill`` out of place, plus the s × s causal
    mask; the s × s causal mask's own kernels left out), no dropout."""
    s, h = c.seq, c.hidden
    tokens = s * micro_batch
    x, positions, table = tokens * h, s * h, c.vocab * h
    o = OpCollector()
    o.fwd("token_embedding", 2 * x)
    o.bwd("token_embedding", table + 2 * x, kind="G")
    if c.family == "opt":
        m = micro_batch * s * s  # _prepare_4d_causal_attention_mask's [b, 1, s, s] tensors
        o.fwd("mask_invert", micro_batch * s + m)  # 1.0 − the [b, s] mask expanded (read b·s, write M)
        o.fwd("mask_to_bool", 1.25 * m)
        o.fwd("mask_fill", 4.25 * m)  # masked_fill: a clone (2M), then in place (read M and the bool, write M)
        o.fwd("mask_add", 2 * m + s * s)  # + the s × s causal mask, broadcast over the batch
        o.fwd("position_embedding", 2 * x)
        o.bwd("position_embedding", c.positions * h + x, kind="G")
        o.fwd("position_add", 3 * x)
        o.bwd("tied_grad_add", 3 * table, kind="G")
        return o.work()
    if c.family == "bert":
        o.fwd("token_type_embedding", 2 * x)
        o.fwd("token_type_add", 3 * x)
        o.bwd("token_type_embedding", c.type_vocab * h + x, kind="G")
    o.fwd("position_embedding", 2 * positions)
    o.fwd("position_add", 2 * x + positions)
    o.bwd("position_embedding", positions + x, kind="G")  # summed over the batch
    if c.family == "bert":
        o.norm("embedding_norm", tokens, h)
    o.dropout("embedding_dropout", x)
    o.bwd("tied_grad_add", 3 * table, kind="G")  # the LM head's gradient of the shared table summed in
    return o.work()


def hf_head_work(c: TransformerConfig, micro_batch: int) -> Work:
    """GPT-2 and OPT: final LayerNorm and the tied LM head; BERT: the MLM head's transform (dense, its
    hidden_act, LayerNorm) and its decoder with bias; then the shifted logits' cross-entropy."""
    tokens, h, v = c.seq * micro_batch, c.hidden, c.vocab
    logits = tokens * v
    o = OpCollector()
    if c.family in ("gpt", "opt"):
        o.norm("ln_f", tokens, h)
        o.gemm("lm_head", tokens, h, v, bias=False)
    else:
        o.gemm("transform", tokens, h, h)
        o.activation("transform_", c.mlp_activation, tokens * h)  # BertPredictionHeadTransform: hidden_act
        o.norm("transform_norm", tokens, h)
        o.gemm("decoder", tokens, h, v)
    if micro_batch > 1:  # logits[:, :-1].contiguous(): at b = 1 the slice is contiguous already, no copy
        o.fwd("shift_logits", 2 * logits)
    o.bwd("shift_logits", 3 * logits)  # the slice's backward: zeros T × V, the gradient copied in
    o.fwd("log_softmax", 2 * logits, ("softmax", tokens, v))
    o.bwd("log_softmax", 3 * logits, ("softmax", tokens, v))
    o.fwd("nll_loss", tokens)
    o.bwd("nll_loss", logits)
    return o.work()


__all__ = ["DROPOUT", "GELU_NEW_BACKWARD", "GELU_NEW_FORWARD", "HF_FAMILIES",
           "OpCollector", "check_hf", "hf_block_work", "hf_embedding_work", "hf_head_work"]
