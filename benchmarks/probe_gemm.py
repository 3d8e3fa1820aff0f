"""The probe's ``gemm`` section: every distinct GEMM archsim lowers a layer and the LM head of the GPTs into
(forward, δ and weight-gradient shapes, batched attention GEMMs included), timed in the operand layout
PyTorch's training runs it (``layout``: nt = B transposed, nn, tn = A transposed)."""

from __future__ import annotations

import functools

from benchmarks.gpu_timing import Budget, Timer
from benchmarks.probe_rows import row

GemmShapes = dict[tuple[int, int, int, int, str], tuple[str, int, str]]


def gemm_shapes(configs, micro_batches) -> GemmShapes:
    """Distinct (m, k, n, count, layout) → first (model, micro-batch, op name) of archsim's lowering."""
    from archsim.training.layer_ops import block_work, head_work

    layouts = {"F": "nt", "D": "nn", "G": "tn"}  # Y = X·Wᵀ (nn.Linear), dX = dY·W, dW = dYᵀ·X
    attention = {("scores", "F"): "nt", ("scores", "D"): "nn", ("scores.dB", "D"): "tn",
                 ("context", "F"): "nn", ("context", "D"): "nt", ("context.dB", "D"): "tn"}
    shapes: GemmShapes = {}
    for b in micro_batches:
        for c in configs:
            work = block_work(c, b)
            head = head_work(c, b)
            for op in (*work.forward, *work.backward, *head.forward, *head.backward):
                for g in op.gemms:
                    layout = attention.get((op.layer, op.kind), layouts[op.kind])
                    shapes.setdefault((g.m, g.k, g.n, g.count, layout), (c.name, b, f"{op.layer}.{op.kind}"))
    return shapes


def gemm_operands(torch, m, k, n, count, layout, dtype, device):
    """A (m × k) and B (k × n), ``count`` of each when batched, transposed views where ``layout`` says so."""
    def make(rows, cols):
        shape = (count, rows, cols) if count > 1 else (rows, cols)
        return torch.randn(shape, dtype=dtype, device=device) * 0.1

    def t(x):
        return x.transpose(-1, -2)

    a = t(make(k, m)) if layout == "tn" else make(m, k)
    b = t(make(n, k)) if layout == "nt" else make(k, n)
    return a, b


def measure_gemms(torch, shapes: GemmShapes, timer: Timer, budget: Budget, dtype, device: str) -> list[dict[str, object]]:
    """A row per shape (``bytes``: fp16 A, B and C once each), until the budget ends."""
    rows = []
    for (m, k, n, count, layout), (model, b, name) in shapes.items():
        if budget.left() <= 0:
            break
        a, bm = gemm_operands(torch, m, k, n, count, layout, dtype, device)
        out = torch.empty((count, m, n) if count > 1 else (m, n), dtype=dtype, device=device)
        op = torch.bmm if count > 1 else torch.mm
        timing = timer(functools.partial(op, a, bm, out=out))
        rows.append(row("gemm", name, timing, model=model, micro_batch=b, layout=layout, m=m, k=k, n=n,
                        count=count, bytes=2 * count * (m * k + k * n + m * n)))
    return rows
