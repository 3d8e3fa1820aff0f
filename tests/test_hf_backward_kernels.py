"""Hugging Face's fp32 op lists (:mod:`archsim.training.hf_ops`, :mod:`~archsim.training.hf_switch_ops`) against
the kernels PyTorch dispatches for the modules' tensor code: GPT-2's attention (one Conv1D, ``split``, ``view().permute()``, 4-D ``matmul``), BERT's
(three Linears, the same views; T5's is BERT's with ``transpose``), OPT's (heads made contiguous, 3-D ``bmm``,
``torch.max`` clamp), and the loss's shifted logits, as transformers 4.35 writes them (paraphrased below, sizes
distinct: s 24, d 8, a 5, h 40).

The reference is PyTorch itself on the CPU: its profiler records each autograd node's ATen calls with their shapes;
the reshapes, ``contiguous`` and ``derivatives.yaml`` formulas that decide the copies are the code a CUDA run
executes too. What only the CUDA source shows (pytorch/pytorch ``aten/src/ATen/native/cuda/SoftMax.cu`` at commit
e9865f53): ``softmax_backward_cuda_out`` forms ``Tensor tmp = grad * output`` before ``host_softmax_backward``, a
separate elementwise kernel; ``log_softmax_backward_cuda_out`` passes ``grad`` straight to it, no product.
"""

from __future__ import annotations

import pytest

from archsim.training.hf_ops import hf_block_work, hf_head_work
from archsim.workload.transformer import TransformerConfig

torch = pytest.importorskip("torch")
F = torch.nn.functional

S, A, D = 24, 5, 8
H = A * D


def config(family: str) -> TransformerConfig:
    return TransformerConfig("t", family, 1, H, A, 1000, S, 4 * H, A, True, S + 2, type_vocab=2 if family == "bert" else 0)


def gpt2_attention(x, p, b):
    """GPT2Attention: c_attn (Conv1D: addmm on a view), split, heads as views, matmul, ÷ a 0-dim √d, the causal
    ``where``, softmax, matmul, heads merged by ``permute().contiguous()``, c_proj."""
    qkv = torch.addmm(p["b_attn"], x.view(-1, H), p["w_attn"]).view(b, S, 3 * H)
    q, k, v = (t.view(b, S, A, D).permute(0, 2, 1, 3) for t in qkv.split(H, dim=2))
    w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], D ** 0.5)
    w = torch.where(torch.ones(S, S, dtype=torch.bool).tril()[None, None], w, torch.full([], -1e30))
    context = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous().view(b, S, H)
    return torch.addmm(p["b_proj"], context.view(-1, H), p["w_proj"]).view(b, S, H)


def bert_attention(x, p, b):
    """BertSelfAttention + its output dense: query, key, value Linears, ``transpose_for_scores`` views, matmul,
    ÷ √d, + the extended mask, softmax, matmul, ``permute().contiguous().view()``, dense."""
    def heads(t):
        return t.view(b, S, A, D).permute(0, 2, 1, 3)
    q, k, v = (heads(F.linear(x, p[f"w_{n}"], p[f"b_{n}"])) for n in "qkv")
    w = torch.matmul(q, k.transpose(-1, -2)) / D ** 0.5 + torch.zeros(b, 1, 1, S)
    context = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous().view(b, S, H)
    return F.linear(context, p["w_o"], p["b_o"])


def t5_attention(x, p, b):
    """SwitchTransformersAttention (T5's): q, k, v Linears without bias, ``view().transpose(1, 2)``, matmul, the
    position bias added in place, softmax, matmul, ``transpose().contiguous().view()``, o."""
    def heads(t):
        return t.view(b, -1, A, D).transpose(1, 2)
    q, k, v = (heads(F.linear(x, p[f"w_{n}"])) for n in "qkv")
    scores = torch.matmul(q, k.transpose(3, 2))
    scores += torch.zeros(1, A, S, S)
    context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).contiguous().view(b, -1, H)
    return F.linear(context, p["w_o"])


def opt_attention(x, p, b):
    """OPTAttention: q scaled, each of q, k, v ``view().transpose(1, 2).contiguous()`` then viewed [b·a, s, d],
    ``bmm``, + the 4-D mask, ``torch.max`` at the dtype's minimum, softmax, ``bmm``, ``transpose().reshape()``,
    out_proj."""
    def heads(t):
        return t.view(b, S, A, D).transpose(1, 2).contiguous().view(b * A, S, D)
    q = heads(F.linear(x, p["w_q"], p["b_q"]) * D ** -0.5)
    k, v = (heads(F.linear(x, p[f"w_{n}"], p[f"b_{n}"])) for n in "kv")
    w = torch.bmm(q, k.transpose(1, 2)).view(b, A, S, S) + torch.zeros(b, 1, S, S)
    w = torch.max(w, torch.tensor(torch.finfo(w.dtype).min)).view(b * A, S, S)
    context = torch.bmm(torch.softmax(w, dim=-1), v).view(b, A, S, D).transpose(1, 2).reshape(b, S, H)
    return F.linear(context, p["w_o"], p["b_o"])


def parameters() -> dict:
    torch.manual_seed(0)
    shapes = {"w_attn": (H, 3 * H), "b_attn": (3 * H,), "w_proj": (H, H), "b_proj": (H,), "w_o": (H, H), "b_o": (H,)}
    shapes |= {f"{w}_{n}": (H, H) if w == "w" else (H,) for w in "wb" for n in "qkv"}
    return {name: torch.randn(shape, requires_grad=True) for name, shape in shapes.items()}


def profiled(module, b):
    """ATen events of the module's forward and backward (a fixed random upstream gradient), shapes recorded."""
    from torch.profiler import ProfilerActivity, profile

    p = parameters()
    torch.manual_seed(1)
    x = torch.randn(b, S, H, requires_grad=True)
    grad = torch.randn(b, S, H)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        (module(x, p, b) * grad).sum().backward()
    return list(prof.events())


def ancestors(e) -> list[str]:
    names = []
    while e.cpu_parent is not None:
        e = e.cpu_parent
        names.append(e.name)
    return names


def copies(events, under: set[str]) -> list[list[int]]:
    """The shapes ``aten::copy_`` writes inside any of the ATen ops (forward only) or autograd nodes in ``under``."""
    def inside(e) -> bool:
        chain = ancestors(e)
        node = next((n for n in chain if n.startswith("autograd::engine::evaluate_function: ")), None)
        if node is None:
            return bool(under & set(chain))
        return node.removeprefix("autograd::engine::evaluate_function: ") in under
    return [e.input_shapes[0] for e in events if e.name == "aten::copy_" and inside(e)]


def named(ops, *suffixes: str) -> list:
    return [op for op in ops if op.layer.endswith(suffixes)]


RESHAPES = {"ViewBackward0", "UnsafeViewBackward0"}  # autograd's reshape of a gradient back to a view's shape


@pytest.mark.parametrize("family, module", [("gpt", gpt2_attention), ("bert", bert_attention)])
@pytest.mark.parametrize("b", [1, 3])
def test_the_heads_copies_are_the_ones_pytorch_makes(family, module, b):
    """Forward: matmul's reshapes copy q, kᵀ and v only when b > 1 (at b = 1 [1, a] folds as a view). Backward:
    dQ and dV reshaped to [b, s, h] copy at every b; dK comes back transposed (a view), copied by BERT's key Linear
    when b > 1 and read as it is by GPT-2's ``cat``; the context's gradient copied when b > 1."""
    events = profiled(module, b)
    work = hf_block_work(config(family), b)
    x = b * S * H
    forward = copies(events, {"aten::matmul"})
    backward = copies(events, RESHAPES)
    assert len(forward) == (3 if b > 1 else 0) and all(torch.Size(shape).numel() == x for shape in forward)
    assert len(backward) == {("gpt", 1): 2, ("gpt", 3): 3, ("bert", 1): 2, ("bert", 3): 4}[family, b]
    assert all(torch.Size(shape).numel() == x for shape in backward)
    listed_forward = named(work.forward, "_matmul_copy")
    listed_backward = named(work.backward, "_grad_copy")
    assert len(listed_forward) == len(forward) and len(listed_backward) == len(backward)
    assert {op.vector_elements for op in listed_forward + listed_backward} <= {2 * x}  # read and write, fp32 elements


@pytest.mark.parametrize("b", [1, 3])
def test_opts_head_copies(b):
    """OPT makes q, k, v contiguous forward (three copies, any b) and merges the context by ``reshape`` (one);
    backward, dQ and dV copy, dK and the context's gradient only when b > 1."""
    events = profiled(opt_attention, b)
    work = hf_block_work(config("opt"), b)
    x = b * S * H
    forward = copies(events, {"aten::contiguous", "aten::reshape"})
    backward = copies(events, RESHAPES)
    heads = ("q_heads", "k_heads", "v_heads", "merge_heads")
    assert len(named(work.forward, *heads)) == len(forward) == 4
    assert all(torch.Size(shape).numel() == x for shape in forward + backward)
    assert len(named(work.backward, *heads)) == len(backward) == (4 if b > 1 else 2)
    assert all(op.vector_elements == 2 * x for op in named(work.backward, *heads))


def test_opts_clamp_backward_is_five_kernels():
    """``torch.max(x, min)``'s gradient by derivatives.yaml (``maximum``): ``where(x == min, dy / 2, dy)
    .masked_fill_(x < min, 0)``: div, eq, where, lt, masked_fill_, each on the [b, a, s, s] scores. Bytes by hand
    (fp32 elements, a bool ¼): 2, 1.25, 3.25, 1.25 and 2.25 (in place: read the gradient and the mask, write)."""
    b = 2
    events = profiled(opt_attention, b)
    made = [e for e in events if "autograd::engine::evaluate_function: MaximumBackward0" in ancestors(e)
            and e.name in ("aten::div", "aten::eq", "aten::where", "aten::lt", "aten::masked_fill_")]
    assert sorted(e.name for e in made) == sorted(["aten::div", "aten::eq", "aten::where", "aten::lt",
                                                   "aten::masked_fill_"])
    assert all(e.input_shapes[0] == [b, A, S, S] for e in made)
    scores = b * A * S * S
    clamp = named(hf_block_work(config("opt"), b).backward, *(f"clamp.{n}" for n in
                                                              ("half", "eq", "where", "lt", "masked_fill")))
    assert len(clamp) == 5 and sum(op.vector_elements for op in clamp) == pytest.approx(10 * scores, abs=5)


@pytest.mark.parametrize("family", ["gpt", "bert", "opt"])
def test_the_attention_softmax_backward_has_cudas_product_and_the_loss_none(family):
    """CUDA's softmax backward: dY ∘ Y (read 2, write 1: 3S) issued right before the kernel (3S); the log-softmax
    of the loss has no such product (SoftMax.cu, module docstring). The operands are the [b, a, s, s] gradient and
    output, as the profiler shows ``_softmax_backward_data`` receiving them."""
    b = 2
    module = {"gpt": gpt2_attention, "bert": bert_attention, "opt": opt_attention}[family]
    (call,) = [e for e in profiled(module, b) if e.name == "aten::_softmax_backward_data"]
    assert [torch.Size(shape).numel() for shape in call.input_shapes[:2]] == [b * A * S * S] * 2
    names = [op.layer for op in hf_block_work(config(family), b).backward]
    assert names.index("softmax.grad_mul") == names.index("softmax") - 1
    by_name = {op.layer: op.vector_elements for op in hf_block_work(config(family), b).backward}
    assert by_name["softmax.grad_mul"] == by_name["softmax"] == 3 * b * A * S * S
    head = [op.layer for op in hf_head_work(config(family), b).backward]
    assert "log_softmax" in head and not [n for n in head if n.endswith("grad_mul")]


@pytest.mark.parametrize("b", [1, 3])
def test_the_shifted_logits_are_copied_only_when_the_batch_is_above_one(b):
    """``logits[..., :-1, :].contiguous()``: at b = 1 the slice is contiguous already (a size-1 dimension's stride
    does not count), so no copy; its backward (zeros, the gradient copied in) runs either way."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    logits = torch.randn(b, S, 1000)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        logits[..., :-1, :].contiguous()
    made = [e for e in prof.events() if e.name == "aten::copy_"]
    assert len(made) == (1 if b > 1 else 0)
    work = hf_head_work(config("gpt"), b)
    assert len(named(work.forward, "shift_logits")) == len(made)
    assert len(named(work.backward, "shift_logits")) == 1


@pytest.mark.parametrize("b", [1, 3])
def test_switchs_attention_copies_its_heads_as_bert(tmp_path, b):
    """T5's attention (separate q, k, v Linears, the heads as views) copies as BERT's: q, kᵀ, v forward and the
    context's gradient when b > 1, dQ and dV always, dK when b > 1; each copy T·a·d_kv elements, read and written.
    The list's self-attention of one encoder layer, at NeuSight's switchxl4 shapes."""
    from input_checks_common import load_config
    from test_hf_switch import SWITCH_XL4

    from archsim.training.hf_switch_ops import switch_block_work

    events = profiled(t5_attention, b)
    forward, backward = copies(events, {"aten::matmul"}), copies(events, RESHAPES)
    c = load_config(tmp_path, SWITCH_XL4, seq=512)
    work = switch_block_work(c, b)
    layer = "encoder.0.self_attn."
    listed_forward = [op for op in named(work.forward, "_matmul_copy") if op.layer.startswith(layer)]
    listed_backward = [op for op in named(work.backward, "_grad_copy") if op.layer.startswith(layer)]
    assert (len(listed_forward), len(listed_backward)) == (len(forward), len(backward)) == \
        ((3, 4) if b > 1 else (0, 2))
    assert {op.vector_elements for op in listed_forward + listed_backward} == {2 * 512 * b * c.kv_channels}
