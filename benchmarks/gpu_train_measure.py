"""Measure GPT training iterations on ONE GPU (TP = PP = DP = 1), built as the measured A100 runs were.

    python3 benchmarks/gpu_train_measure.py --out OUT.csv [--max-minutes 4] [--global-batches 16,32]
    python3 benchmarks/gpu_train_measure.py --device cpu --tiny --out OUT.csv   # the same code on tiny shapes
    python3 benchmarks/gpu_train_measure.py --out OUT.csv --dtype bf16 --attention flash --seq 2048   # tensor cores today

Needs only PyTorch (and archsim's argument and file helpers). It trains, in plain PyTorch, the model of the
Megatron-DeepSpeed runs archsim's kernel efficiencies were fitted on (tests/data/e2e, docs/accuracy.md):
the GPT of ``gpt_model.py`` (Megatron's layer structure, padded vocabulary, dropout 0.1, tied LM head,
fp32 cross-entropy), in fp16 with fp32 master weights and Adam and a dynamic loss scale as Megatron does it,
not torch.autocast (``train_step.py``), or ``--dtype bf16`` without a loss scale; ``--attention flash``: SDPA's
FlashAttention-2 kernel in place of the standard core (``gpt_model.py``); gradient accumulation over global_batch / micro_batch
micro-batches; ``--recompute full`` wraps each transformer layer in ``torch.utils.checkpoint``
(use_reentrant=False), ``none`` keeps every activation. Not as Megatron: no fused kernels (apex LayerNorm,
fused scale-mask-softmax, fused bias-GeLU and bias-dropout-add, FusedAdam): PyTorch's own kernels, so more
memory-bound launches; no data loader (random token ids already on the GPU).

Method: per point (model, recompute, micro-batch, global batch), ``--warmup`` untimed iterations (one
more on a model's first point),
then ``--iterations`` timed ones, each between CUDA events after a synchronize; the median is
reported. Peak memory: ``torch.cuda.max_memory_allocated`` over the timed iterations (its counter
reset after the warm-up), in GiB. Points run in the order listed by :func:`grid` (most useful first);
no point starts that would end after ``--max-minutes`` (foreseen from the model's last point, per
sample), and then the file says ``complete: false``. The CSV is rewritten
after every point, so a run stopped from outside keeps what it measured (and says ``complete: false``).

Output: the columns of ``tests/data/e2e/vtrain_single_node_shown.csv`` plus ``recompute``,
``peak_memory_gib`` and ``gpu_name``, after ``# key: value`` metadata lines; read by
:func:`archsim.training.measured.read_measured_table`, compared by ``benchmarks/bench_vtrain_e2e.py
--measured``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.commands.common import positive_int
from archsim.commands.list_flag import ListFlag
from benchmarks.gpt_model import ATTENTIONS, MODELS, TINY, Shape, build_model, load_shape
from benchmarks.gpu_device import cpu_threads, identity, open_torch
from benchmarks.gpu_timing import elapsed_ms, spread
from benchmarks.measure_csv import command_line, utc_now, write_csv
from benchmarks.train_step import MixedPrecisionAdam, iteration

COLUMNS = ("# GPUs", "global batch", "micro batch", "hidden size", "attention heads", "# layers", "sequence length",
           "tensor parallelism", "data parallelism", "pipeline parallelism", "iteration time (ms)",
           "recompute", "peak_memory_gib", "gpu_name")


@dataclass(frozen=True)
class Point:
    shape: Shape
    recompute: str
    micro_batch: int
    global_batch: int


def grid(shapes: list[Shape], micro_batches: list[int], global_batches: list[int],
         recomputes: list[str]) -> list[Point]:
    """Points in measuring order: the smallest global batch for every model first (full recompute, the
    fitted runs' setting, before none), then the next global batch; micro-batches larger than the
    global batch are left out. One model at a time, so only its states are on the GPU."""
    points = []
    for batch in global_batches:
        for shape in shapes:
            for recompute in recomputes:
                points += [Point(shape, recompute, b, batch) for b in micro_batches if b <= batch and batch % b == 0]
    return points


def measure_point(torch, model, optimizer, point: Point, device: str, warmup: int, iterations: int,
                  seed: int = 0) -> dict[str, float]:
    """Median iteration ms and peak GiB of one point (the module docstring's method)."""
    model.recompute = point.recompute
    generator = torch.Generator(device=device).manual_seed(seed)
    m = point.global_batch // point.micro_batch
    shape = (m, point.micro_batch, point.shape.seq)
    tokens = torch.randint(0, point.shape.vocab, shape, device=device, generator=generator)
    labels = torch.randint(0, point.shape.vocab, shape, device=device, generator=generator)
    cuda = device.startswith("cuda")
    for _ in range(warmup):
        iteration(torch, model, optimizer, tokens, labels)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times, skipped, loss = [], optimizer.skipped, float("nan")
    for _ in range(iterations):
        ms, loss = elapsed_ms(torch, cuda, lambda: iteration(torch, model, optimizer, tokens, labels))
        times.append(ms)
    median, low, high, _ = spread(times)
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else math.nan
    return {"ms": median, "min_ms": low, "max_ms": high, "peak_gib": peak,
            "skipped_steps": optimizer.skipped - skipped, "loss": float(loss)}


def csv_row(point: Point, result: dict[str, float], gpu_name: str) -> dict[str, object]:
    """One line of the output: the point in the A100 runs' columns, its median ms, recompute and peak GiB."""
    s = point.shape
    return {"# GPUs": 1, "global batch": point.global_batch, "micro batch": point.micro_batch,
            "hidden size": s.hidden, "attention heads": s.heads, "# layers": s.layers,
            "sequence length": s.seq, "tensor parallelism": 1, "data parallelism": 1,
            "pipeline parallelism": 1, "iteration time (ms)": f"{result['ms']:.3f}",
            "recompute": point.recompute,
            "peak_memory_gib": "" if math.isnan(result["peak_gib"]) else f"{result['peak_gib']:.6g}",
            "gpu_name": gpu_name}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every point)")
    parser.add_argument("--models", default=",".join(MODELS), help="GPT config JSONs (default the two e2e shapes)")
    parser.add_argument("--micro-batches", action=ListFlag, item=positive_int, default=[1, 2, 4, 8], help="default 1,2,4,8")
    parser.add_argument("--global-batches", action=ListFlag, item=positive_int, default=[16, 32], help="default 16,32")
    parser.add_argument("--recompute", default="full,none", help="full, none or both (default full,none)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed iterations per point (default 2; one more on a model's first point)")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per point; median kept (≥ 5)")
    parser.add_argument("--max-minutes", type=float, default=4.0, help="start no new point after this")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--tiny", action="store_true", help="two tiny models instead of --models (tests, CPU)")
    parser.add_argument("--dtype", default=None, choices=("fp16", "bf16", "fp32"),
                        help="parameters' precision (default fp16 on a GPU, fp32 on the CPU, whose fp16 kernels crawl); "
                             "bf16 runs without a loss scale")
    parser.add_argument("--attention", default="standard", choices=ATTENTIONS,
                        help="standard (Megatron's core in plain PyTorch; default) or flash (SDPA's FlashAttention-2)")
    parser.add_argument("--seq", type=positive_int, default=None,
                        help="sequence length of every GPT (default 1024; --tiny's own 32)")
    args = parser.parse_args(argv)
    args.recompute = [r.strip() for r in args.recompute.split(",") if r.strip()]
    if not args.recompute or set(args.recompute) - {"full", "none"}:
        parser.error("--recompute takes full, none or full,none")
    if args.warmup < 1 or args.iterations < 1:
        parser.error("--warmup and --iterations must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()  # --max-minutes counts from here: importing torch and starting CUDA included
    args = parse_args(argv)
    torch = open_torch("gpu_train_measure", args.device)
    if torch is None:
        return 2
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
    with cpu_threads(torch, args.device):
        return measure_all(torch, args, argv, began)


def measure_all(torch, args: argparse.Namespace, argv: list[str] | None, began: float) -> int:
    """Every point of the grid, the CSV rewritten after each (module docstring)."""
    try:
        shapes = ([replace(t, seq=args.seq or t.seq) for t in TINY] if args.tiny
                  else [load_shape(ROOT / p.strip(), args.seq or 1024) for p in args.models.split(",") if p.strip()])
    except (OSError, ValueError, KeyError) as exc:
        print(f"gpu_train_measure: cannot read --models: {exc!r}", file=sys.stderr)
        return 2
    args.dtype = args.dtype or ("fp16" if args.device.startswith("cuda") else "fp32")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    points = grid(shapes, args.micro_batches, args.global_batches, args.recompute)
    info = identity(torch, args.device)
    gpu_name = str(info["gpu"]).replace(",", " ")
    meta: dict[str, object] = {
        **info, "dtype": args.dtype, "attention": args.attention, "date": utc_now(),
        "method": (f"{args.warmup} warm-up iterations (+1 on a model's first point) then the median of {args.iterations} timed ones (CUDA events "
                   "around each after a synchronize); peak = torch.cuda.max_memory_allocated over the timed iterations"),
        "training": (f"plain PyTorch Megatron-structured GPT; {args.dtype} params + fp32 master weights and Adam; "
                     + ("dynamic loss scale; " if args.dtype == "fp16" else "no loss scale; ")
                     + ("attention by SDPA's FlashAttention-2 backend alone (causal, dropout in the kernel); "
                        if args.attention == "flash" else "")
                     + "dropout 0.1; vocab padded to a multiple of 128; full recompute = torch.utils.checkpoint "
                     "per layer (use_reentrant=False)"),
        "command": command_line("gpu_train_measure", argv),
        "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    notes: list[str] = []
    print(f"gpu_train_measure: {gpu_name}; {len(points)} points; cap {args.max_minutes:g} min", file=sys.stderr)
    write_csv(out, meta, COLUMNS, rows)
    model = optimizer = None
    current: Shape | None = None
    fresh = True
    stopped = False
    last: dict[Shape, tuple[float, int]] = {}  # a model's last (iteration ms, global batch): to foresee a point's time
    for point in points:
        elapsed = time.monotonic() - began
        if point.shape in last:  # warm-up and timed iterations at the last time per sample of this model
            ms, batch = last[point.shape]
            elapsed += (args.warmup + args.iterations) * ms / 1e3 * point.global_batch / batch
        if elapsed > args.max_minutes * 60:
            stopped = True
            continue
        try:
            if point.shape != current:
                model = optimizer = None
                if args.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                torch.manual_seed(0)
                model = build_model(torch, point.shape, dtype, args.device, attention=args.attention)
                optimizer = MixedPrecisionAdam(torch, model.parameters(), loss_scaling=args.dtype == "fp16")
                current = point.shape
                fresh = True  # a new model's first point warms the allocator and libraries up too
            result = measure_point(torch, model, optimizer, point, args.device, args.warmup + fresh, args.iterations)
            fresh = False
        except getattr(torch.cuda, "OutOfMemoryError", MemoryError):
            notes.append(f"oom:{point.shape.name}/{point.recompute}/b{point.micro_batch}/B{point.global_batch}")
            if optimizer is not None:
                optimizer.zero_grad()
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
            print(f"  {notes[-1]}", file=sys.stderr)
            continue
        s = point.shape
        last[s] = (result["ms"], point.global_batch)
        rows.append(csv_row(point, result, gpu_name))
        if result["skipped_steps"]:
            notes.append(f"skipped_steps:{s.name}/{point.recompute}/b{point.micro_batch}:{result['skipped_steps']}")
        print(f"  {s.name} recompute={point.recompute} b={point.micro_batch} B={point.global_batch}: "
              f"{result['ms']:.1f} ms (min {result['min_ms']:.1f}, max {result['max_ms']:.1f}), "
              f"peak {result['peak_gib']:.2f} GiB, loss {result['loss']:.3f}  [{time.monotonic() - began:.0f} s]",
              file=sys.stderr)
        meta["notes"] = " ".join(notes) or "none"
        write_csv(out, meta, COLUMNS, rows)
    meta["notes"] = " ".join(notes) or "none"
    meta["points"] = f"{len(rows)} of {len(points)}"
    meta["complete"] = str(not stopped and len(rows) == len(points)).lower()
    meta["minutes"] = f"{(time.monotonic() - began) / 60:.2f}"
    write_csv(out, meta, COLUMNS, rows)
    print(f"gpu_train_measure: wrote {out} ({len(rows)} of {len(points)} points, {meta['minutes']} min)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
