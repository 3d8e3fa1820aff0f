"""The probe's ``memory`` section: PyTorch's fp16 memory-bound kernels at the GPTs' sizes — LayerNorm,
softmax, tanh-GeLU and dropout forward/backward, residual add — and the fused Adam step on fp32 master
weights of a model's size; ``bytes``: what the kernel reads and writes in HBM as archsim counts it."""

from __future__ import annotations

from benchmarks.gpu_timing import Budget, Timer
from benchmarks.probe_rows import row


def memory_cases(torch, c, b, dtype, device):
    """(name, bytes archsim counts, closure) of the memory-bound kernels of one layer at micro-batch b."""
    aten = torch.ops.aten
    tokens, h, f = c.seq * b, c.hidden, c.ffn
    x = torch.randn(tokens, h, dtype=dtype, device=device)
    dy = torch.randn_like(x)
    w, bias = torch.ones(h, dtype=dtype, device=device), torch.zeros(h, dtype=dtype, device=device)
    _, mean, rstd = aten.native_layer_norm(x, [h], w, bias, 1e-5)
    scores = torch.randn(b * c.heads, c.seq, c.seq, dtype=dtype, device=device)
    probs = torch.softmax(scores, -1)
    hidden4 = torch.randn(tokens, f, dtype=dtype, device=device)
    _, mask = aten.native_dropout(scores, 0.1, True)
    e = 2  # bytes per fp16 element; a dropout mask byte is half an element
    yield "layernorm.F", 2 * e * tokens * h, lambda: aten.native_layer_norm(x, [h], w, bias, 1e-5)
    yield "layernorm.D", 3 * e * tokens * h, lambda: aten.native_layer_norm_backward(
        dy, x, [h], mean, rstd, w, bias, [True, True, True])
    yield "softmax.F", 2 * e * scores.numel(), lambda: torch.softmax(scores, -1)
    yield "softmax.D", 3 * e * scores.numel(), lambda: aten._softmax_backward_data(probs, probs, -1, dtype)
    yield "attn_dropout.F", 2.5 * e * scores.numel(), lambda: aten.native_dropout(scores, 0.1, True)
    yield "attn_dropout.D", 2.5 * e * scores.numel(), lambda: aten.native_dropout_backward(scores, mask, 1 / 0.9)
    yield "gelu.F", 2 * e * tokens * f, lambda: aten.gelu(hidden4, approximate="tanh")
    yield "gelu.D", 3 * e * tokens * f, lambda: aten.gelu_backward(hidden4, hidden4, approximate="tanh")
    yield "dropout.F", 2.5 * e * tokens * h, lambda: aten.native_dropout(x, 0.1, True)
    yield "residual_add.F", 3 * e * tokens * h, lambda: torch.add(x, dy)


def adam_case(torch, c, device):
    """Fused Adam (as the training runs' optimizer) on one fp32 buffer of the model's parameter count:
    reads master, gradient, two moments, writes master and moments — 28 bytes per parameter."""
    from archsim.training.layer_ops import embedding_parameters
    from archsim.workload.layer_parameters import layer_parameters

    count = c.layers * layer_parameters(c) + embedding_parameters(c) + 2 * c.hidden
    master = torch.zeros(count, dtype=torch.float32, device=device, requires_grad=True)
    master.grad = torch.full_like(master, 1e-3)
    fast = {"fused": True} if device.startswith("cuda") else {"foreach": False}
    adam = torch.optim.Adam([master], lr=1e-4, betas=(0.9, 0.95), eps=1e-8, **fast)
    return count, 28 * count, adam.step


def measure_memory(torch, configs, micro_batches, timer: Timer, budget: Budget, dtype,
                   device: str) -> list[dict[str, object]]:
    """Adam's step per model, then each kernel at each micro-batch once per (name, bytes), until the budget ends."""
    rows: list[dict[str, object]] = []
    seen: set[tuple[str, float]] = set()
    for c in configs:
        if budget.left() <= 0:
            return rows
        count, moved, step = adam_case(torch, c, device)
        rows.append(row("memory", "adam.step", timer(step), model=c.name, n=count, bytes=int(moved)))
        del step
    for b in micro_batches:
        for c in configs:
            if budget.left() <= 0:
                return rows
            for name, moved, fn in memory_cases(torch, c, b, dtype, device):
                if (name, moved) in seen or budget.left() <= 0:
                    continue
                seen.add((name, moved))
                rows.append(row("memory", name, timer(fn), model=c.name, micro_batch=b, bytes=int(moved)))
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
    return rows
