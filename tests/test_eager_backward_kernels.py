"""The attention core's backward kernels in plain PyTorch as PyTorch dispatches them, against the ops archsim's
plain-PyTorch list charges (:func:`archsim.training.eager_ops.eager_block_work`).

The reference is PyTorch itself, on the CPU: its profiler records the ATen calls each autograd node makes
(``record_shapes``, sizes chosen distinct, s ≠ d ≠ b·n, so a shape names its tensor), and ``empty_like`` and
autograd's reshapes are the device-independent code the CUDA runs of ``benchmarks/gpu_train_measure.py`` execute too.
CUDA's softmax backward differs from the CPU's: it forms ``grad * output`` as a separate multiply
(pytorch/pytorch ``aten/src/ATen/native/cuda/SoftMax.cu`` at commit 000cace5, ``softmax_backward_cuda_out``); the
CPU's kernel fuses it, so the profiler gives that product's operands, the source its kernel.
"""

from __future__ import annotations

import math

import pytest

from archsim.training.eager_ops import eager_block_work
from archsim.workload.transformer import TransformerConfig

torch = pytest.importorskip("torch")

S, B, N, D = 24, 3, 5, 8  # sequence, micro-batch, heads, head dim: h = 40
C = TransformerConfig("t", "gpt", 2, N * D, N, 1000, S, 4 * N * D, N, True, S)


def profiled_backward(loss_of):
    """ATen events of ``loss_of()``'s forward and backward on the CPU, shapes recorded."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        loss_of().backward()
    return list(prof.events())


def under(events, node: str) -> list:
    """The events an autograd node ``node`` (e.g. ``BaddbmmBackward0``) makes, at any depth."""
    def inside(e) -> bool:
        while e.cpu_parent is not None:
            e = e.cpu_parent
            if e.name == node:
                return True
        return False
    return [e for e in events if inside(e)]


def ops(work, name: str):
    return [op for op in work.backward if op.layer == name]


@pytest.mark.parametrize("alpha, scaled", [(1 / math.sqrt(D), 2), (1.0, 0)])
def test_baddbmms_backward_scales_dq_and_dk_by_alpha(alpha, scaled):
    """gpt_model.py's scores, ``baddbmm(empty, q, kᵀ, beta=0, alpha=1/√d)``: its backward multiplies each batch
    gradient, [b·n, s, d] and [b·n, d, s], by alpha in a kernel of its own (``maybe_multiply``, derivatives.yaml);
    with alpha 1 there is none, so the two multiplies are the scale's."""
    torch.manual_seed(0)
    q = torch.randn(B * N, S, D, requires_grad=True)
    k = torch.randn(B * N, S, D, requires_grad=True)

    def loss():
        empty = torch.empty(B * N, S, S)
        return torch.baddbmm(empty, q, k.transpose(1, 2), beta=0.0, alpha=alpha).sum()

    muls = [e for e in under(profiled_backward(loss), "BaddbmmBackward0") if e.name == "aten::mul"]
    assert len(muls) == scaled
    assert sorted(tuple(e.input_shapes[0]) for e in muls) == sorted([(B * N, S, D), (B * N, D, S)][:scaled])
    assert all(e.input_shapes[1] == [] for e in muls)  # times a scalar: read X, write X each


def test_eager_list_scales_dq_and_dk_once_each():
    x = S * B * N * D
    work = eager_block_work(C, B)
    for name in ("scores.q_grad_scale", "scores.k_grad_scale"):
        (op,) = ops(work, name)
        assert op.vector_elements == 2 * x


def test_softmax_backward_takes_two_score_sized_operands():
    """``_softmax_backward_data(grad, output)`` gets dP and P, both [b·n, s, s]: CUDA's ``grad * output`` reads the
    two and writes one more (3S, no broadcast), then its kernel reads the product and P and writes dX (3S)."""
    torch.manual_seed(0)
    scores = torch.randn(B * N, S, S, requires_grad=True)
    grad = torch.randn(B * N, S, S)
    calls = [e for e in profiled_backward(lambda: (torch.softmax(scores, dim=-1) * grad).sum())
             if e.name == "aten::_softmax_backward_data"]
    assert len(calls) == 1
    assert calls[0].input_shapes[:2] == [[B * N, S, S], [B * N, S, S]]
    work = eager_block_work(C, B)
    s2 = S * S * B * N
    names = [op.layer for op in work.backward]
    assert names.index("softmax.grad_mul") == names.index("softmax") - 1  # the product, then the kernel
    assert [op.vector_elements for op in ops(work, "softmax.grad_mul") + ops(work, "softmax")] == [3 * s2, 3 * s2]


class FlashStandIn(torch.autograd.Function):
    """SDPA's flash backend as far as its gradients' memory goes (pytorch/pytorch attention_backward.cu,
    ``_scaled_dot_product_flash_attention_backward_cuda``: q transposed to [b, s, n, d]; flash_api.cpp ``mha_bwd``:
    ``dq = at::empty_like(q)``; the gradient transposed back); ``contiguous`` allocates dQ, dK, dV plainly instead,
    the counterfactual."""

    @staticmethod
    def forward(ctx, q, k, v, contiguous: bool):
        ctx.shapes, ctx.strides, ctx.contiguous = q.shape, [t.stride() for t in (q, k, v)], contiguous
        return (q + k + v).contiguous()

    @staticmethod
    def backward(ctx, grad):
        grads = []
        for stride in ctx.strides:
            t = torch.empty_strided(ctx.shapes, stride).transpose(1, 2)  # a layout like the [b, s, n, d] view's
            dt = torch.empty(t.shape) if ctx.contiguous else torch.empty_like(t)
            grads.append(dt.fill_(1.0).transpose(1, 2))
        return (*grads, None)


@pytest.mark.parametrize("contiguous, copies", [(False, 0), (True, 3)])
def test_flash_gradients_reach_splits_concatenation_without_a_copy(contiguous, copies):
    """gpt_model.py's flash path: q, k, v split from the [s, b·n, 3d] QKV output, reshaped and permuted to
    [b, n, s, d]. ``empty_like`` keeps such a view's dimension order, so autograd's way back to the split
    (permute, reshape to [s, b·n, d]) is views and the concatenation reads dQ, dK, dV as they are: no copy. A plainly
    contiguous dQ would cost one copy each: the three ``eager_flash_core`` used to charge."""
    torch.manual_seed(0)
    qkv = torch.randn(S, B * N, 3 * D, requires_grad=True)

    def loss():
        q, k, v = (t.reshape(S, B, N, D).permute(1, 2, 0, 3) for t in qkv.split(D, dim=-1))
        return FlashStandIn.apply(q, k, v, contiguous).sum()

    events = profiled_backward(loss)
    autograd = [e for e in events if e.name.startswith("autograd::engine::evaluate_function: ")
                and not e.name.endswith("FlashStandInBackward")]
    moved = [e for e in events if e.name == "aten::copy_" and any(under([e], n.name) for n in autograd)]
    assert [e.input_shapes[0] for e in moved] == [[S, B, N, D]] * copies  # autograd's reshape to [s, b·n, d]
    assert [e.name for e in under(events, "autograd::engine::evaluate_function: SplitBackward0")].count("aten::cat") == 1
    names = [op.layer for op in eager_block_work(C, B, "flash").backward]
    assert not [n for n in names if n.endswith("_grad_copy") and n != "grad_out_copy"]
