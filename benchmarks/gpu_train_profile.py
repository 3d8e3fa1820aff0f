"""Where one GPU's training iteration goes, kernel by kernel: torch.profiler's CUDA kernel times of one
iteration of ``gpu_train_measure.py``'s GPT, beside the same iteration timed by CUDA events — so a miss of
archsim's iteration time can be traced to the kernels (or the host gaps between them) that make it.

    python3 benchmarks/gpu_train_profile.py --out PROFILE.csv [--max-seconds 150]
    python3 benchmarks/gpu_train_profile.py --device cpu --tiny --out PROFILE.csv   # the same code, tiny shapes

Per point (:data:`POINTS`: the fp16 standard-attention runs of the Hopper check and bf16 FlashAttention-2
runs): the model and optimizer built as ``gpu_train_measure.py`` builds them, ``--warmup`` untimed
iterations, the median of 3 CUDA-event-timed ones (``kind`` iteration, ``seconds``), then one iteration under
``torch.profiler`` (CUDA activity only): a row per distinct kernel name (``kind`` kernel: ``calls``, summed GPU
``seconds``), and ``kind`` busy: the sum over all kernels, memsets and copies — the iteration's time less
this is time the GPU waited for the host. Kernel names are cut to 160 characters, commas dropped.
A check, never a fit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.gpt_model import TINY, Shape, build_model, load_shape
from benchmarks.gpu_device import cpu_threads, identity, open_torch
from benchmarks.gpu_timing import elapsed_ms
from benchmarks.measure_csv import command_line, utc_now, write_csv
from benchmarks.train_step import MixedPrecisionAdam, iteration

COLUMNS = ("point", "model", "seq", "dtype", "attention", "recompute", "micro_batch", "global_batch", "kind", "name",
           "calls", "seconds")


@dataclass(frozen=True)
class Point:
    model: str  # a configs/transformers JSON stem
    seq: int
    dtype: str
    attention: str
    recompute: str
    micro_batch: int
    global_batch: int = 16


POINTS = (
    Point("gpt_1024h_24l", 1024, "fp16", "standard", "full", 1),
    Point("gpt_1024h_24l", 1024, "fp16", "standard", "full", 4),
    Point("gpt_1024h_24l", 1024, "fp16", "standard", "none", 8),
    Point("gpt_2048h_20l", 1024, "fp16", "standard", "full", 4),
    Point("gpt_2048h_20l", 1024, "fp16", "standard", "none", 8),
    Point("gpt_2048h_20l", 1024, "bf16", "flash", "none", 4),
    Point("gpt_2048h_20l", 4096, "bf16", "flash", "full", 2),
    Point("gpt_4096h_12l", 2048, "bf16", "flash", "none", 2),
    Point("gpt_4096h_12l", 2048, "bf16", "standard", "none", 2),
)
TINY_POINTS = (Point("tiny", 32, "fp32", "flash", "full", 1, 2), Point("tiny", 32, "fp32", "standard", "none", 2, 2))


def clean(name: str) -> str:
    return name.replace(",", " ").replace("\n", " ")[:160]


def profile_point(torch, point: Point, shape: Shape, device: str, warmup: int) -> list[dict[str, object]]:
    """The rows of one point (module docstring)."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[point.dtype]
    torch.manual_seed(0)
    model = build_model(torch, shape, dtype, device, attention=point.attention)
    model.recompute = point.recompute
    optimizer = MixedPrecisionAdam(torch, model.parameters(), loss_scaling=point.dtype == "fp16")
    m = point.global_batch // point.micro_batch
    generator = torch.Generator(device=device).manual_seed(0)
    tokens = torch.randint(0, shape.vocab, (m, point.micro_batch, shape.seq), device=device, generator=generator)
    labels = torch.randint(0, shape.vocab, (m, point.micro_batch, shape.seq), device=device, generator=generator)

    def step():
        return iteration(torch, model, optimizer, tokens, labels)

    for _ in range(warmup):
        step()
    timed = statistics.median(elapsed_ms(torch, cuda, step)[0] / 1e3 for _ in range(3))
    activities = [ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        step()
        if cuda:
            torch.cuda.synchronize()
    kernels: dict[str, list[float]] = {}
    for event in prof.events():
        on_gpu = str(event.device_type).endswith("CUDA")
        if cuda and not on_gpu:
            continue
        seconds = event.time_range.elapsed_us()  # a kernel's own span on the GPU (the CPU: the op's)
        entry = kernels.setdefault(clean(event.name), [0, 0.0])
        entry[0] += 1
        entry[1] += seconds / 1e6  # the profiler's microseconds
    fields = {"point": point_name(point), "model": point.model, "seq": shape.seq, "dtype": point.dtype,
              "attention": point.attention, "recompute": point.recompute, "micro_batch": point.micro_batch,
              "global_batch": point.global_batch}
    rows = [{**fields, "kind": "iteration", "name": "cuda events median of 3", "calls": 1, "seconds": f"{timed:.6e}"},
            {**fields, "kind": "busy", "name": "all kernels memsets and copies", "calls": sum(c for c, _ in kernels.values()),
             "seconds": f"{sum(s for _, s in kernels.values()):.6e}"}]
    rows += [{**fields, "kind": "kernel", "name": name, "calls": calls, "seconds": f"{seconds:.6e}"}
             for name, (calls, seconds) in sorted(kernels.items(), key=lambda kv: -kv[1][1])]
    return rows


def point_name(p: Point) -> str:
    return f"{p.model}_s{p.seq}_{p.dtype}_{p.attention}_{p.recompute}_b{p.micro_batch}_B{p.global_batch}"


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every point)")
    parser.add_argument("--max-seconds", type=float, default=150.0, help="start no point after this")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations per point (default 2)")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (tests, CPU)")
    args = parser.parse_args(argv)
    torch = open_torch("gpu_train_profile", args.device)
    if torch is None:
        return 2
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
    points = TINY_POINTS if args.tiny else POINTS
    meta: dict[str, object] = {**identity(torch, args.device), "date": utc_now(),
                               "command": command_line("gpu_train_profile", argv), "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    write_csv(out, meta, COLUMNS, rows)
    done = 0
    with cpu_threads(torch, args.device):
        for point in points:
            if time.monotonic() - began > args.max_seconds:
                break
            shape = (TINY[0] if args.tiny else load_shape(ROOT / "configs" / "transformers" / f"{point.model}.json",
                                                          point.seq))
            try:
                new = profile_point(torch, point, shape, args.device, args.warmup)
            except getattr(torch.cuda, "OutOfMemoryError", MemoryError):
                print(f"  oom: {point_name(point)}", file=sys.stderr)
                new = []
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
            if not new:
                continue
            rows += new
            done += 1
            print(f"  {point_name(point)}: iteration {float(new[0]['seconds']) * 1e3:.1f} ms, kernels busy "
                  f"{float(new[1]['seconds']) * 1e3:.1f} ms [{time.monotonic() - began:.0f} s]", file=sys.stderr)
            write_csv(out, meta, COLUMNS, rows)
    meta["complete"] = str(done == len(points)).lower()
    meta["points"] = f"{done} of {len(points)}"
    write_csv(out, meta, COLUMNS, rows)
    print(f"gpu_train_profile: wrote {out} ({meta['points']} points, {time.monotonic() - began:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
