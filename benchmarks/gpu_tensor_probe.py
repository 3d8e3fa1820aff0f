"""Time a GPU's tensor-core kernels as training runs them today: bf16 GEMMs over a grid of shapes and
FlashAttention-2's forward and backward (PyTorch's SDPA flash backend) — measurements to check archsim
against, never to fit it on (``bench_tensor_probe.py`` compares).

    python3 benchmarks/gpu_tensor_probe.py --out TENSOR.csv [--max-seconds 120]
    python3 benchmarks/gpu_tensor_probe.py --device cpu --tiny --out TENSOR.csv   # the same code, tiny shapes

Needs only PyTorch. Sections, each row one measurement (``section`` column):

* ``gemm`` — ``torch.mm`` / ``torch.bmm`` in bf16 (fp32 accumulation, cuBLAS's choice of kernel), in the
  operand layout named by ``layout`` (nt = B transposed as ``nn.Linear``'s forward, nn, tn = A transposed):
  squares 256 … 16,384, the odd sizes that leave a partial wave or tile, a transformer's linear layers
  (tokens 4,096 and 16,384 × hidden 2,048 … 8,192: QKV, FFN in and out forward, FFN in δ and weight
  gradient), skinny products (m 16 … 256 × 8,192²) and attention's batched products;
* ``flash_fwd`` / ``flash_bwd`` — ``scaled_dot_product_attention`` under ``sdpa_kernel(FLASH_ATTENTION)`` on
  contiguous [batch, heads, seq, head dim] bf16 tensors: FlashAttention-2's own benchmark (Dao 2023, §4.1:
  hidden 2,048, 16k tokens, head dim 64 and 128, sequence 512 … 16k, causal and not) and, causal at head
  dim 128, with dropout 0.1 in the kernel; the backward row times ``torch.autograd.grad`` of the output
  (its preprocessing dot(dO, O) and dQ conversion kernels included). ``flops``: 4·s²·d·heads·batch
  forward (halved when causal), 2.5 × that backward, the paper's count.

Timing (``gpu_timing.py``, as ``gpu_efficiency_probe.py``): per measurement ``--warmup`` untimed runs, then
the median of ``--repeats`` timed ones, each between CUDA events after a synchronize and a ~1 ms GPU sleep,
so a row is the kernel's GPU time plus one launch gap. On the CPU (``--device cpu``) wall time stands in;
those numbers only test the code. ``--max-seconds`` is a hard budget from the start of the process; the CSV
is rewritten after every section (``complete: false`` until the end).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.gpu_device import cpu_threads, identity, open_torch
from benchmarks.gpu_timing import Budget, Timer
from benchmarks.measure_csv import command_line, utc_now, write_csv
from benchmarks.probe_gemm import gemm_operands
from benchmarks.probe_rows import row as probe_row

COLUMNS = ("section", "name", "dtype", "layout", "m", "k", "n", "count", "batch", "heads", "seq", "head_dim",
           "causal", "dropout", "flops", "seconds", "min_seconds", "max_seconds", "repeats")

Gemm = tuple[str, int, int, int, int, str]  # (name, m, k, n, count, layout)
Flash = tuple[int, int, int, int, bool, float]  # (batch, heads, seq, head dim, causal, dropout)


def gemm_grid(tiny: bool = False) -> list[Gemm]:
    """The GEMMs of the module docstring, in measuring order (most telling first)."""
    if tiny:
        return [("square", 64, 64, 64, 1, "nn"), ("qkv.F", 128, 32, 96, 1, "nt"), ("fc1.G", 64, 128, 32, 1, "tn"),
                ("scores", 32, 16, 32, 4, "nt")]
    out: list[Gemm] = []
    for tokens in (4096, 16384):
        for h in (2048, 4096, 8192):
            out += [("qkv.F", tokens, h, 3 * h, 1, "nt"), ("fc1.F", tokens, h, 4 * h, 1, "nt"),
                    ("fc2.F", tokens, 4 * h, h, 1, "nt"), ("fc1.D", tokens, 4 * h, h, 1, "nn"),
                    ("fc1.G", 4 * h, tokens, h, 1, "tn")]
    out += [("square", n, n, n, 1, "nn") for n in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    out += [("odd", n, n, n, 1, "nn") for n in (1000, 1536, 3000, 5120, 6144, 12288)]
    out += [("skinny", m, 8192, 8192, 1, "nt") for m in (16, 64, 256)]
    for b_heads, s, d in ((32, 2048, 128), (64, 1024, 64), (16, 4096, 128)):
        out += [("scores", s, d, s, b_heads, "nt"), ("context", s, s, d, b_heads, "nn")]
    return out


def flash_grid(tiny: bool = False) -> list[Flash]:
    """The FlashAttention-2 benchmark's points (module docstring), then causal with dropout 0.1."""
    if tiny:
        return [(2, 2, 32, 16, True, 0.0), (1, 2, 64, 16, False, 0.0), (2, 2, 32, 16, True, 0.1)]
    out: list[Flash] = []
    for causal in (True, False):
        for d in (128, 64):
            out += [(16384 // s, 2048 // d, s, d, causal, 0.0) for s in (512, 1024, 2048, 4096, 8192, 16384)]
    out += [(16384 // s, 16, s, 128, True, 0.1) for s in (1024, 4096, 16384)]
    return out


def measure_gemms(torch, grid: list[Gemm], timer: Timer, budget: Budget, dtype, device: str) -> list[dict]:
    rows = []
    for name, m, k, n, count, layout in grid:
        if budget.left() <= 0:
            break
        a, b = gemm_operands(torch, m, k, n, count, layout, dtype, device)
        out = torch.empty((count, m, n) if count > 1 else (m, n), dtype=dtype, device=device)
        timing = timer(functools.partial(torch.bmm if count > 1 else torch.mm, a, b, out=out))
        rows.append(row("gemm", name, timing, layout=layout, m=m, k=k, n=n, count=count, flops=2 * m * k * n * count))
        del a, b, out
    return rows


def measure_flash(torch, grid: list[Flash], timer: Timer, budget: Budget, dtype, device: str) -> list[dict]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    functional = torch.nn.functional
    # the flash backend alone on a GPU (an error rather than another kernel); the CPU's flash has no dropout
    backends = [SDPBackend.FLASH_ATTENTION] if device.startswith("cuda") else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
    rows = []
    for batch, heads, seq, d, causal, dropout in grid:
        if budget.left() <= 0:
            break
        q, k, v = (torch.randn(batch, heads, seq, d, dtype=dtype, device=device, requires_grad=True) for _ in range(3))

        def forward(q=q, k=k, v=v, causal=causal, dropout=dropout):
            with sdpa_kernel(backends):
                return functional.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal)

        flops = 4 * seq * seq * d * heads * batch // (2 if causal else 1)
        fields = {"batch": batch, "heads": heads, "seq": seq, "head_dim": d, "causal": str(causal).lower(),
                  "dropout": dropout}
        name = f"b{batch}_h{heads}_s{seq}_d{d}{'_causal' if causal else ''}{f'_drop{dropout:g}' if dropout else ''}"
        with torch.no_grad():
            rows.append(row("flash_fwd", name, timer(forward), flops=flops, **fields))
        out = forward()
        grad = torch.randn_like(out)
        backward = functools.partial(torch.autograd.grad, out, (q, k, v), grad, retain_graph=True)
        rows.append(row("flash_bwd", name, timer(backward), flops=round(2.5 * flops), **fields))
        del q, k, v, out, grad
    return rows


def row(section: str, name: str, timing, **fields) -> dict[str, object]:
    """A bf16 measurement in this script's :data:`COLUMNS` (``probe_rows.row``'s timing columns)."""
    return probe_row(section, name, timing, COLUMNS, dtype="bf16", **fields)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every section)")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="hard budget from the process start")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs per measurement (default 3)")
    parser.add_argument("--repeats", type=int, default=11, help="timed runs per measurement; median kept (default 11)")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (tests, CPU)")
    args = parser.parse_args(argv)
    if args.warmup < 1 or args.repeats < 1:
        parser.error("--warmup and --repeats must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    args = parse_args(argv)
    torch = open_torch("gpu_tensor_probe", args.device)
    if torch is None:
        return 2
    cuda = args.device.startswith("cuda")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    budget = Budget(began + args.max_seconds)
    dtype = torch.bfloat16
    timer = Timer(torch, cuda, args.warmup, args.repeats)
    meta: dict[str, object] = {
        **identity(torch, args.device), "dtype": "bf16", "date": utc_now(),
        "method": (f"per measurement {args.warmup} warm-up runs then the median of {args.repeats} timed ones, each "
                   "between CUDA events after a synchronize and a ~1 ms GPU sleep"),
        "command": command_line("gpu_tensor_probe", argv), "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    write_csv(out, meta, COLUMNS, rows)
    torch.manual_seed(0)
    with cpu_threads(torch, args.device):
        for section, run in (("gemm", lambda: measure_gemms(torch, gemm_grid(args.tiny), timer, budget, dtype,
                                                            args.device)),
                             ("flash", lambda: measure_flash(torch, flash_grid(args.tiny), timer, budget, dtype,
                                                             args.device))):
            if budget.left() <= 0:
                print(f"gpu_tensor_probe: no time left for {section}", file=sys.stderr)
                continue
            before = len(rows)
            rows += run()
            print(f"gpu_tensor_probe: {section}: {len(rows) - before} rows [{time.monotonic() - began:.0f} s]",
                  file=sys.stderr)
            write_csv(out, meta, COLUMNS, rows)
    expected = len(gemm_grid(args.tiny)) + 2 * len(flash_grid(args.tiny))
    meta["complete"] = str(len(rows) == expected).lower()
    meta["rows"] = f"{len(rows)} of {expected}"
    meta["seconds"] = f"{time.monotonic() - began:.1f}"
    write_csv(out, meta, COLUMNS, rows)
    print(f"gpu_tensor_probe: wrote {out} ({meta['rows']} rows, {meta['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
