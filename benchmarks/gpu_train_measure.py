"""Measure GPT training iterations on ONE GPU (TP = PP = DP = 1), built as the measured A100 runs were.

    python3 benchmarks/gpu_train_measure.py --out OUT.csv [--max-minutes 4] [--global-batches 16,32]
    python3 benchmarks/gpu_train_measure.py --device cpu --tiny --out OUT.csv   # the same code on tiny shapes

Needs only PyTorch (and the standard library). It trains, in plain PyTorch, the model of the
Megatron-DeepSpeed runs archsim's kernel efficiencies were fitted on (tests/data/e2e, docs/training.md):

* token + learned position embedding (vocabulary 50,257 padded to 50,304 as Megatron pads it to a
  multiple of 128), embedding dropout; activations in Megatron's [sequence, batch, hidden] layout;
* L pre-LN transformer layers: LayerNorm, one fused QKV linear, scores by ``baddbmm`` with the
  1/√d scale, causal mask (−10,000) and softmax, attention dropout, context by ``bmm``, output
  projection, dropout + residual; LayerNorm, h → 4h linear, GeLU (tanh form, as Megatron's fused
  bias-GeLU), 4h → h linear, dropout + residual; dropout 0.1 everywhere (Megatron's default);
* final LayerNorm, LM head tied to the token embedding, cross-entropy on the fp32 copy of the fp16
  logits (Megatron's default, ``fp16_lm_cross_entropy`` off);
* fp16 mixed precision as Megatron does it, not torch.autocast: the model's parameters are fp16, an
  fp32 master copy lives in the optimizer, fp16 gradients are accumulated over the micro-batches,
  then each is copied to an fp32 master gradient (and the fp16 one freed, as Megatron's
  ``_copy_model_grads_to_main_grads``), unscaled, checked for inf/NaN (dynamic loss scale), Adam
  steps the fp32 masters, and they are copied back to the fp16 parameters. autocast + GradScaler
  would keep fp32 parameters and recast them to fp16 in every forward (and recomputed forward):
  other kernels, other memory (4 + 4 bytes of fp32 weight and gradient per parameter) than the runs;
* gradient accumulation over global_batch / micro_batch micro-batches; ``--recompute full`` wraps
  each transformer layer in ``torch.utils.checkpoint`` (use_reentrant=False; its input kept, its
  forward rerun in the backward), ``none`` keeps every activation.

Not as Megatron: no fused kernels (apex LayerNorm, fused scale-mask-softmax, fused bias-GeLU and
bias-dropout-add, FusedAdam): PyTorch's own kernels, so more memory-bound launches; no data loader
(random token ids already on the GPU).

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
import datetime
import json
import math
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.commands.common import positive_int_list
from archsim.outputs import atomic_write_text

MODELS = ("configs/transformers/gpt_1024h_24l.json", "configs/transformers/gpt_2048h_20l.json")
VOCAB_MULTIPLE = 128  # Megatron's make_vocab_size_divisible_by (× TP = 1)
COLUMNS = ("# GPUs", "global batch", "micro batch", "hidden size", "attention heads", "# layers", "sequence length",
           "tensor parallelism", "data parallelism", "pipeline parallelism", "iteration time (ms)",
           "recompute", "peak_memory_gib", "gpu_name")
INITIAL_LOSS_SCALE = 2.0**12  # dynamic: halved on an overflow (the step skipped); no overflow at this scale in practice


@dataclass(frozen=True)
class Shape:
    """A GPT to train: hidden size, heads, layers, sequence length, vocabulary (unpadded), FFN width."""

    name: str
    hidden: int
    heads: int
    layers: int
    seq: int
    vocab: int
    ffn: int

    @property
    def padded_vocab(self) -> int:
        return -(-self.vocab // VOCAB_MULTIPLE) * VOCAB_MULTIPLE


def load_shape(path: str | Path, seq: int = 1024) -> Shape:
    """A shipped Hugging Face-style GPT-2 config (n_embd, n_head, n_layer, vocab_size, n_inner)."""
    spec = json.loads(Path(path).read_text())
    hidden = int(spec["n_embd"])
    return Shape(Path(path).stem, hidden, int(spec["n_head"]), int(spec["n_layer"]), seq,
                 int(spec["vocab_size"]), int(spec.get("n_inner") or 4 * hidden))


TINY = (Shape("tiny_64h_2l", 64, 4, 2, 32, 1000, 256), Shape("tiny_96h_3l", 96, 4, 3, 32, 1000, 384))


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


def build_model(torch, shape: Shape, dtype, device: str, dropout: float = 0.1):
    """The GPT of the module docstring, parameters in ``dtype`` on ``device`` (normal(0, 0.02) weights)."""
    nn, functional = torch.nn, torch.nn.functional
    from torch.utils.checkpoint import checkpoint

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h = shape.hidden
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.fc1, self.fc2 = nn.Linear(h, shape.ffn), nn.Linear(shape.ffn, h)
            self.heads, self.head_dim = shape.heads, h // shape.heads

        def forward(self, x, mask):  # x: [s, b, h]
            s, b, h = x.shape
            n, d = self.heads, self.head_dim
            q, k, v = self.qkv(self.ln1(x)).view(s, b * n, 3 * d).split(d, dim=-1)  # Megatron's [s, b·n, 3d] split
            q, k, v = (t.transpose(0, 1) for t in (q, k, v))  # [b·n, s, d]
            scores = torch.baddbmm(torch.empty(b * n, s, s, dtype=x.dtype, device=x.device), q, k.transpose(1, 2),
                                   beta=0.0, alpha=1.0 / math.sqrt(d))
            probs = torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1)
            context = torch.bmm(functional.dropout(probs, dropout, self.training), v)  # [b·n, s, d]
            context = context.view(b, n, s, d).permute(2, 0, 1, 3).reshape(s, b, h)
            x = x + functional.dropout(self.proj(context), dropout, self.training)
            mlp = self.fc2(functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
            return x + functional.dropout(mlp, dropout, self.training)

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(shape.padded_vocab, shape.hidden)
            self.wpe = nn.Embedding(shape.seq, shape.hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(shape.layers))
            self.ln_f = nn.LayerNorm(shape.hidden)
            mask = torch.ones(shape.seq, shape.seq, dtype=torch.bool, device="cpu").triu(1)  # True above the diagonal
            self.register_buffer("mask", mask.to(device), persistent=False)
            self.recompute = "full"

        def forward(self, tokens, labels):  # [b, s] each
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            x = (self.wte(tokens) + self.wpe(positions)).transpose(0, 1).contiguous()  # [s, b, h]
            x = functional.dropout(x, dropout, self.training)
            for layer in self.layers:
                if self.recompute == "full":
                    x = checkpoint(layer, x, self.mask, use_reentrant=False)
                else:
                    x = layer(x, self.mask)
            logits = functional.linear(self.ln_f(x), self.wte.weight)  # tied LM head: [s, b, V]
            return functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.t().reshape(-1))

    with torch.device(device):
        model = GPT()
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            torch.nn.init.zeros_(p)
        elif "ln" in name:
            torch.nn.init.ones_(p)
        else:
            torch.nn.init.normal_(p, 0.0, 0.02)
    return model.to(dtype).train()


class MixedPrecisionAdam:
    """fp32 master weights + Adam for fp16 parameters, with a dynamic loss scale (module docstring)."""

    def __init__(self, torch, params, lr: float = 1e-4) -> None:
        self.torch = torch
        self.params = [p for p in params if p.requires_grad]
        self.master = [p.detach().float().clone() for p in self.params]
        fast = {"fused": True} if self.params[0].is_cuda else {"foreach": True}
        self.adam = torch.optim.Adam(self.master, lr=lr, betas=(0.9, 0.95), eps=1e-8, **fast)
        self.scale = INITIAL_LOSS_SCALE
        self.skipped = 0

    def step(self) -> bool:
        """Copy gradients to fp32, unscale, Adam on the masters, masters → fp16 params; False if skipped."""
        torch = self.torch
        for p, m in zip(self.params, self.master):
            m.grad = p.grad.float()
            p.grad = None  # as Megatron: free the fp16 gradient once copied
        grads = [m.grad for m in self.master]
        torch._foreach_mul_(grads, 1.0 / self.scale)
        finite = bool(torch.stack(torch._foreach_norm(grads)).isfinite().all())  # one host sync, as Megatron's
        if finite:
            self.adam.step()
            with torch.no_grad():
                torch._foreach_copy_(self.params, self.master)
        else:
            self.scale /= 2
            self.skipped += 1
        for m in self.master:
            m.grad = None
        return finite

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None
        for m in self.master:
            m.grad = None


def iteration(torch, model, optimizer: MixedPrecisionAdam, tokens, labels):
    """One training iteration over the micro-batches in ``tokens`` [m, b, s]; returns the last loss (a tensor)."""
    m = tokens.shape[0]
    loss = None
    for i in range(m):
        loss = model(tokens[i], labels[i])
        (loss * (optimizer.scale / m)).backward()
    optimizer.step()
    return loss.detach()


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
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            loss = iteration(torch, model, optimizer, tokens, labels)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            began = time.perf_counter()
            loss = iteration(torch, model, optimizer, tokens, labels)
            times.append((time.perf_counter() - began) * 1e3)
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else math.nan
    return {"ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "peak_gib": peak,
            "skipped_steps": optimizer.skipped - skipped, "loss": float(loss)}


def csv_text(meta: dict[str, object], rows: list[dict[str, object]]) -> str:
    """``# key: value`` lines, then :data:`COLUMNS` and one line per measured point."""
    head = "".join(f"# {key}: {' '.join(str(value).split())}\n" for key, value in meta.items())
    body = [",".join(COLUMNS)] + [",".join(str(row[c]) for c in COLUMNS) for row in rows]
    return head + "\n".join(body) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every point)")
    parser.add_argument("--models", default=",".join(MODELS), help="GPT config JSONs (default the two e2e shapes)")
    parser.add_argument("--micro-batches", type=positive_int_list, default=[1, 2, 4, 8], help="default 1,2,4,8")
    parser.add_argument("--global-batches", type=positive_int_list, default=[16, 32], help="default 16,32")
    parser.add_argument("--recompute", default="full,none", help="full, none or both (default full,none)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed iterations per point (default 2; one more on a model's first point)")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per point; median kept (≥ 5)")
    parser.add_argument("--max-minutes", type=float, default=4.0, help="start no new point after this")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--tiny", action="store_true", help="two tiny models instead of --models (tests, CPU)")
    parser.add_argument("--dtype", default=None, choices=("fp16", "fp32"),
                        help="parameters' precision (default fp16 on a GPU, fp32 on the CPU, whose fp16 kernels crawl)")
    args = parser.parse_args(argv)
    args.recompute = [r.strip() for r in args.recompute.split(",") if r.strip()]
    if not args.recompute or set(args.recompute) - {"full", "none"}:
        parser.error("--recompute takes full, none or full,none")
    if args.warmup < 1 or args.iterations < 1:
        parser.error("--warmup and --iterations must be at least 1")
    return args


def device_meta(torch, device: str) -> dict[str, object]:
    if not device.startswith("cuda"):
        return {"gpu": f"cpu ({platform.processor() or platform.machine()})", "gpu_memory_gib": "none"}
    props = torch.cuda.get_device_properties(torch.device(device))
    return {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "sm_count": props.multi_processor_count, "compute_capability": f"{props.major}.{props.minor}",
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()  # --max-minutes counts from here: importing torch and starting CUDA included
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_train_measure: PyTorch is not installed; nothing measured", file=sys.stderr)
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_train_measure: no CUDA GPU visible to PyTorch; nothing measured (--device cpu --tiny to try)",
              file=sys.stderr)
        return 2
    if args.device.startswith("cuda"):
        if torch.device(args.device).index is not None:
            torch.cuda.set_device(torch.device(args.device))
        torch.backends.cuda.matmul.allow_tf32 = False
    threads = torch.get_num_threads()
    if not args.device.startswith("cuda"):
        torch.set_num_threads(1)  # tiny shapes: threads only contend (the CPU mode is for tests, not timings)
    try:
        return measure_all(torch, args, argv, began)
    finally:
        torch.set_num_threads(threads)


def measure_all(torch, args: argparse.Namespace, argv: list[str] | None, began: float) -> int:
    """Every point of the grid, the CSV rewritten after each (module docstring)."""
    try:
        shapes = list(TINY) if args.tiny else [load_shape(ROOT / p.strip()) for p in args.models.split(",") if p.strip()]
    except (OSError, ValueError, KeyError) as exc:
        print(f"gpu_train_measure: cannot read --models: {exc!r}", file=sys.stderr)
        return 2
    args.dtype = args.dtype or ("fp16" if args.device.startswith("cuda") else "fp32")
    dtype = {"fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    points = grid(shapes, args.micro_batches, args.global_batches, args.recompute)
    info = device_meta(torch, args.device)
    gpu_name = str(info["gpu"]).replace(",", " ")
    meta: dict[str, object] = {
        **info, "torch": torch.__version__, "python": platform.python_version(), "dtype": args.dtype,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "method": (f"{args.warmup} warm-up iterations (+1 on a model's first point) then the median of {args.iterations} timed ones (CUDA events "
                   "around each after a synchronize); peak = torch.cuda.max_memory_allocated over the timed iterations"),
        "training": ("plain PyTorch Megatron-structured GPT; fp16 params + fp32 master weights and Adam; dynamic loss "
                     "scale; dropout 0.1; vocab padded to a multiple of 128; full recompute = torch.utils.checkpoint "
                     "per layer (use_reentrant=False)"),
        "command": shlex.join(["python3", "benchmarks/gpu_train_measure.py",
                               *(argv if argv is not None else sys.argv[1:])]),
        "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    notes: list[str] = []
    print(f"gpu_train_measure: {gpu_name}; {len(points)} points; cap {args.max_minutes:g} min", file=sys.stderr)
    atomic_write_text(out, csv_text(meta, rows))
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
                model = build_model(torch, point.shape, dtype, args.device)
                optimizer = MixedPrecisionAdam(torch, model.parameters())
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
        rows.append({"# GPUs": 1, "global batch": point.global_batch, "micro batch": point.micro_batch,
                     "hidden size": s.hidden, "attention heads": s.heads, "# layers": s.layers,
                     "sequence length": s.seq, "tensor parallelism": 1, "data parallelism": 1,
                     "pipeline parallelism": 1, "iteration time (ms)": f"{result['ms']:.3f}",
                     "recompute": point.recompute,
                     "peak_memory_gib": "" if math.isnan(result["peak_gib"]) else f"{result['peak_gib']:.6g}",
                     "gpu_name": gpu_name})
        if result["skipped_steps"]:
            notes.append(f"skipped_steps:{s.name}/{point.recompute}/b{point.micro_batch}:{result['skipped_steps']}")
        print(f"  {s.name} recompute={point.recompute} b={point.micro_batch} B={point.global_batch}: "
              f"{result['ms']:.1f} ms (min {result['min_ms']:.1f}, max {result['max_ms']:.1f}), "
              f"peak {result['peak_gib']:.2f} GiB, loss {result['loss']:.3f}  [{time.monotonic() - began:.0f} s]",
              file=sys.stderr)
        meta["notes"] = " ".join(notes) or "none"
        atomic_write_text(out, csv_text(meta, rows))
    meta["notes"] = " ".join(notes) or "none"
    meta["points"] = f"{len(rows)} of {len(points)}"
    meta["complete"] = str(not stopped and len(rows) == len(points)).lower()
    meta["minutes"] = f"{(time.monotonic() - began) / 60:.2f}"
    atomic_write_text(out, csv_text(meta, rows))
    print(f"gpu_train_measure: wrote {out} ({len(rows)} of {len(points)} points, {meta['minutes']} min)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
