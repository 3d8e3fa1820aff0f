"""Microbenchmark one GPU for archsim's four kernel constants (vTrain's method: profile kernels, then
predict whole iterations), never fitting them on the training iterations they will predict.

    python3 benchmarks/gpu_efficiency_probe.py --out PROBE.csv [--max-seconds 150]
    python3 benchmarks/gpu_efficiency_probe.py --device cpu --tiny --out PROBE.csv   # the same code, tiny shapes

Needs PyTorch, numpy-free archsim (only :mod:`archsim.training.layer_ops` for the shapes, no plotly,
SCALE-Sim or scipy) and ``benchmarks/gpu_train_measure.py`` (its tiny GPT for the host section).
Sections, in this order, each row one measurement (``section`` column):

* ``kernel`` — GPU time per kernel of many tiny kernels queued back to back behind a GPU sleep
  (``torch.cuda._sleep``), so the host's issuing is hidden: the per-kernel overhead (``launch_s``);
* ``host`` — wall time of *issuing* ops without synchronizing, the GPU kept busy by a sleep queued in
  front: small elementwise ops (plain and recorded by autograd), and one forward + backward of the
  tiny GPT of gpu_train_measure.py (recompute none and full), with ``ops`` = archsim's op count of
  that iteration (``host_s`` = seconds / ops); the ``.synchronized`` rows time the same iteration
  on an idle GPU up to a synchronize (an upper bound: were the queued one above it, the iteration
  synchronized somewhere and its queued time would include the sleep);
* ``launches`` (CUDA only) — how many kernels (memsets, copies) that tiny-GPT iteration launches
  (``count``, by torch.profiler) against archsim's ``ops`` for it: plain PyTorch launches several
  kernels per archsim op, each paying the per-kernel overhead;
* ``gemm`` — every distinct GEMM (m, k, n, count) archsim lowers a layer and the LM head of the two
  shipped GPTs into (:func:`archsim.training.layer_ops.block_work`, :func:`head_work`) at micro-batches
  1, 2, 4, 8: forward, δ and weight-gradient shapes, batched attention GEMMs included, fp16, in the
  operand layout PyTorch's training runs them (``layout``: nt = B transposed, nn, tn = A transposed);
* ``memory`` — PyTorch's fp16 memory-bound kernels at those sizes: LayerNorm forward/backward,
  softmax forward/backward, tanh-GeLU forward/backward, dropout forward/backward, residual add, and
  the fused Adam step on fp32 master weights (+ gradient, moments) of a model's size; ``bytes``:
  what the kernel reads and writes in HBM as archsim counts it.

Timing (gpu_train_measure.py's: CUDA events, warm-up, median): per repeat, a synchronize, a short
GPU sleep so the op is queued before the start event fires, start event, the op, end event; the
median over ``--repeats`` after ``--warmup`` untimed runs. So a row's seconds are the kernel's GPU
time plus one launch gap, as archsim's ``gemm_seconds``/``memory_seconds`` count them. On the CPU
(``--device cpu``) wall time stands in; those numbers only test the code.

``--max-seconds`` is a hard budget from the start of the process: no measurement starts after it,
and the CSV is rewritten after every section (``complete: false`` until the end). Output: ``# key:
value`` metadata, then :data:`COLUMNS`; read by :func:`archsim.training.calibrate.read_probe`.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_train_measure as gtm  # the training runs' model and helpers

from archsim.commands.common import positive_int_list
from archsim.outputs import atomic_write_text

COLUMNS = ("section", "name", "model", "micro_batch", "layout", "m", "k", "n", "count", "bytes", "ops",
           "seconds", "min_seconds", "max_seconds", "repeats")
SLEEP_CYCLES = 2_000_000  # ≈ 1 ms at 2 GHz: the op is queued before the start event fires
TINY_PROBE = (gtm.TINY[0],)


class Budget:
    def __init__(self, seconds: float, began: float) -> None:
        self.end = began + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


class Timer:
    """Median GPU seconds of ``fn()`` (module docstring), wall seconds on the CPU."""

    def __init__(self, torch, cuda: bool, warmup: int, repeats: int) -> None:
        self.torch, self.cuda, self.warmup, self.repeats = torch, cuda, warmup, repeats

    def __call__(self, fn) -> tuple[float, float, float, int]:
        torch = self.torch
        for _ in range(self.warmup):
            fn()
        times = []
        for _ in range(self.repeats):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                torch.cuda._sleep(SLEEP_CYCLES)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                began = time.perf_counter()
                fn()
                times.append(time.perf_counter() - began)
        return statistics.median(times), min(times), max(times), len(times)


def row(section: str, name: str, timing, **fields) -> dict[str, object]:
    median, low, high, repeats = timing
    out: dict[str, object] = {c: "" for c in COLUMNS}
    out.update(section=section, name=name, seconds=f"{median:.6e}", min_seconds=f"{low:.6e}",
               max_seconds=f"{high:.6e}", repeats=repeats, **fields)
    return out


def gemm_shapes(configs, micro_batches):
    """Distinct (m, k, n, count, layout) → first (model, micro-batch, op name) of archsim's lowering."""
    from archsim.training.layer_ops import block_work, head_work

    layouts = {"F": "nt", "D": "nn", "G": "tn"}  # Y = X·Wᵀ (nn.Linear), dX = dY·W, dW = dYᵀ·X
    attention = {("scores", "F"): "nt", ("scores", "D"): "nn", ("scores.dB", "D"): "tn",
                 ("context", "F"): "nn", ("context", "D"): "nt", ("context.dB", "D"): "tn"}
    shapes: dict[tuple, tuple[str, int, str]] = {}
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
    def make(rows, cols):
        shape = (count, rows, cols) if count > 1 else (rows, cols)
        return torch.randn(shape, dtype=dtype, device=device) * 0.1

    def t(x):
        return x.transpose(-1, -2)

    a = t(make(k, m)) if layout == "tn" else make(m, k)
    b = t(make(n, k)) if layout == "nt" else make(k, n)
    return a, b


def measure_gemms(torch, args, timer, budget, configs, rows, dtype) -> None:
    for (m, k, n, count, layout), (model, b, name) in gemm_shapes(configs, args.micro_batches).items():
        if budget.left() <= 0:
            return
        a, bm = gemm_operands(torch, m, k, n, count, layout, dtype, args.device)
        out = torch.empty((count, m, n) if count > 1 else (m, n), dtype=dtype, device=args.device)
        op = torch.bmm if count > 1 else torch.mm
        timing = timer(functools.partial(op, a, bm, out=out))
        rows.append(row("gemm", name, timing, model=model, micro_batch=b, layout=layout, m=m, k=k, n=n,
                        count=count, bytes=2 * count * (m * k + k * n + m * n)))


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
    from archsim.training.layer_ops import embedding_parameters, layer_parameters

    count = c.layers * layer_parameters(c) + embedding_parameters(c) + 2 * c.hidden
    master = torch.zeros(count, dtype=torch.float32, device=device, requires_grad=True)
    master.grad = torch.full_like(master, 1e-3)
    fast = {"fused": True} if device.startswith("cuda") else {"foreach": False}
    adam = torch.optim.Adam([master], lr=1e-4, betas=(0.9, 0.95), eps=1e-8, **fast)
    return count, 28 * count, adam.step


def measure_memory(torch, args, timer, budget, configs, rows, dtype) -> None:
    seen: set[tuple[str, float]] = set()
    for c in configs:
        if budget.left() <= 0:
            return
        count, moved, step = adam_case(torch, c, args.device)
        rows.append(row("memory", "adam.step", timer(step), model=c.name, n=count, bytes=int(moved)))
        del step
    for b in args.micro_batches:
        for c in configs:
            if budget.left() <= 0:
                return
            for name, moved, fn in memory_cases(torch, c, b, dtype, args.device):
                if (name, moved) in seen or budget.left() <= 0:
                    continue
                seen.add((name, moved))
                rows.append(row("memory", name, timer(fn), model=c.name, micro_batch=b, bytes=int(moved)))
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()


def queued(torch, cuda: bool, kernels: int, fn) -> tuple[float, float]:
    """(GPU seconds, host seconds) of ``kernels`` calls of ``fn`` queued behind a GPU sleep."""
    if not cuda:
        began = time.perf_counter()
        for _ in range(kernels):
            fn()
        wall = time.perf_counter() - began
        return wall, wall
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES * 40)  # ≈ 40 ms: longer than issuing the kernels
    start.record()
    began = time.perf_counter()
    for _ in range(kernels):
        fn()
    host = time.perf_counter() - began
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3, host


def measure_kernels(torch, args, rows) -> None:
    x = torch.zeros(1024, device=args.device, dtype=torch.float16)
    n = 1000
    for name, fn in (("add_.1024", lambda: x.add_(1.0)), ("mul_.1024", lambda: x.mul_(1.0))):
        fn()
        gpu = [queued(torch, args.device.startswith("cuda"), n, fn)[0] / n for _ in range(args.repeats)]
        rows.append(row("kernel", name, (statistics.median(gpu), min(gpu), max(gpu), len(gpu)), ops=n))


def measure_host(torch, args, rows, dtype) -> None:
    from archsim.training.layer_ops import block_work, embedding_work, head_work
    from archsim.workload.transformer import TransformerConfig

    cuda = args.device.startswith("cuda")
    n = 500
    x = torch.zeros(64, device=args.device, dtype=dtype)
    leaf = torch.zeros(64, device=args.device, dtype=dtype, requires_grad=True)
    for name, fn in (("issue.add", lambda: torch.add(x, 1.0)), ("issue.add_autograd", lambda: torch.add(leaf, 1.0))):
        fn()
        host = [queued(torch, cuda, n, fn)[1] / n for _ in range(args.repeats)]
        rows.append(row("host", name, (statistics.median(host), min(host), max(host), len(host)), ops=n))
    shape = gtm.Shape("host_64h_4l", 64, 4, 4, 32, 1000, 256)
    config = TransformerConfig(shape.name, "gpt", shape.layers, shape.hidden, shape.heads, shape.vocab, shape.seq,
                               shape.ffn, shape.heads, True, shape.seq)
    layer, emb, head = block_work(config, 1), embedding_work(config, 1), head_work(config, 1)
    forward_ops = shape.layers * len(layer.forward) + len(emb.forward) + len(head.forward)
    backward_ops = shape.layers * len(layer.backward) + len(emb.backward) + len(head.backward)
    torch.manual_seed(0)
    model = gtm.build_model(torch, shape, dtype, args.device)
    tokens = torch.randint(0, shape.vocab, (1, shape.seq), device=args.device)
    for recompute in ("none", "full"):
        model.recompute = recompute
        ops = forward_ops + backward_ops + (shape.layers * len(layer.forward) if recompute == "full" else 0)

        def step():
            model(tokens, tokens).backward()

        step()
        host = [queued(torch, cuda, 1, step)[1] for _ in range(args.repeats)]
        rows.append(row("host", f"tiny_gpt.fwd_bwd.recompute_{recompute}", (statistics.median(host), min(host),
                        max(host), len(host)), model=shape.name, micro_batch=1, ops=ops))
        # the same on an idle GPU, synchronized after: an upper bound (a hidden sync would show above)
        idle = []
        for _ in range(args.repeats):
            if cuda:
                torch.cuda.synchronize()
            began = time.perf_counter()
            step()
            if cuda:
                torch.cuda.synchronize()
            idle.append(time.perf_counter() - began)
        rows.append(row("host", f"tiny_gpt.fwd_bwd.recompute_{recompute}.synchronized",
                        (statistics.median(idle), min(idle), max(idle), len(idle)), model=shape.name, micro_batch=1,
                        ops=ops))
        kernels = count_kernels(torch, step) if cuda else 0
        print(f"  tiny GPT recompute {recompute}: {kernels} kernels launched for {ops} archsim ops", file=sys.stderr)
        if kernels:
            rows.append(row("launches", f"tiny_gpt.fwd_bwd.recompute_{recompute}", (idle[0], idle[0], idle[0], 1),
                            model=shape.name, micro_batch=1, ops=ops, count=kernels))


def count_kernels(torch, fn) -> int:
    """CUDA kernels, memsets and copies one call of ``fn`` launches (torch.profiler); 0 if it cannot tell."""
    try:
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))
    except Exception as exc:  # noqa: BLE001  (the profiler is optional: CUPTI may be missing)
        print(f"  kernel count skipped: {exc!r}", file=sys.stderr)
        return 0


def csv_text(meta: dict[str, object], rows: list[dict[str, object]]) -> str:
    head = "".join(f"# {key}: {' '.join(str(value).split())}\n" for key, value in meta.items())
    return head + "\n".join([",".join(COLUMNS)] + [",".join(str(r[c]) for c in COLUMNS) for r in rows]) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every section)")
    parser.add_argument("--models", default=",".join(gtm.MODELS), help="GPT config JSONs (default the two e2e shapes)")
    parser.add_argument("--micro-batches", type=positive_int_list, default=[1, 2, 4, 8], help="default 1,2,4,8")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs per measurement (default 3)")
    parser.add_argument("--repeats", type=int, default=11, help="timed runs per measurement; median kept (default 11)")
    parser.add_argument("--max-seconds", type=float, default=150.0, help="hard budget from the process start (default 150)")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--tiny", action="store_true", help="one tiny model instead of --models (tests, CPU)")
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.repeats < 1 or args.max_seconds <= 0:
        parser.error("--warmup ≥ 0, --repeats ≥ 1 and --max-seconds > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    args = parse_args(argv)
    budget = Budget(args.max_seconds, began)
    try:
        import torch
    except ImportError:
        print("gpu_efficiency_probe: PyTorch is not installed; nothing measured", file=sys.stderr)
        return 2
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print("gpu_efficiency_probe: no CUDA GPU visible to PyTorch; nothing measured (--device cpu --tiny to try)",
              file=sys.stderr)
        return 2
    from archsim.errors import InputError
    from archsim.workload.transformer import TransformerConfig, load_transformer

    try:
        if args.tiny:
            configs = [TransformerConfig(s.name, "gpt", s.layers, s.hidden, s.heads, s.vocab, s.seq, s.ffn, s.heads,
                                         True, s.seq) for s in TINY_PROBE]
        else:
            configs = [load_transformer(ROOT / p.strip(), seq=1024) for p in args.models.split(",") if p.strip()]
    except (OSError, InputError) as exc:
        print(f"gpu_efficiency_probe: cannot read --models: {exc}", file=sys.stderr)
        return 2
    if cuda and torch.device(args.device).index is not None:
        torch.cuda.set_device(torch.device(args.device))
    if not cuda:
        torch.set_num_threads(1)
    dtype = torch.float16 if cuda else torch.float32  # the CPU's fp16 kernels crawl; its numbers only test the code
    torch.manual_seed(0)
    timer = Timer(torch, cuda, args.warmup, args.repeats)
    meta: dict[str, object] = {
        **gtm.device_meta(torch, args.device), "torch": torch.__version__, "python": platform.python_version(),
        "dtype": "fp16" if cuda else "fp32",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "method": (f"per measurement {args.warmup} warm-up runs then the median of {args.repeats} timed ones, each "
                   "between CUDA events after a synchronize and a ~1 ms GPU sleep (the op queued before the start "
                   "event fires); kernel: 1000 tiny kernels behind a GPU sleep, GPU time per kernel; host: wall "
                   "time of issuing ops behind a GPU sleep, per op"),
        "models": ",".join(c.name for c in configs), "micro_batches": ",".join(map(str, args.micro_batches)),
        "command": shlex.join(["python3", "benchmarks/gpu_efficiency_probe.py",
                               *(argv if argv is not None else sys.argv[1:])]),
        "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    atomic_write_text(out, csv_text(meta, rows))
    sections = (("kernel", lambda: measure_kernels(torch, args, rows)),
                ("host", lambda: measure_host(torch, args, rows, dtype)),
                ("gemm", lambda: measure_gemms(torch, args, timer, budget, configs, rows, dtype)),
                ("memory", lambda: measure_memory(torch, args, timer, budget, configs, rows, dtype)))
    stopped = []
    for name, run in sections:
        if budget.left() <= 0:
            stopped.append(name)
            continue
        before = len(rows)
        run()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        print(f"  {name}: {len(rows) - before} rows  [{time.monotonic() - began:.0f} s]", file=sys.stderr)
        meta["seconds"] = f"{time.monotonic() - began:.1f}"
        atomic_write_text(out, csv_text(meta, rows))
    meta["complete"] = str(budget.left() > 0 and not stopped).lower()
    meta["seconds"] = f"{time.monotonic() - began:.1f}"
    atomic_write_text(out, csv_text(meta, rows))
    print(f"gpu_efficiency_probe: wrote {out} ({len(rows)} rows, {meta['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
