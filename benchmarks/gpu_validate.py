"""Time the F, D (δ) and G kernels of every conv/fc layer of VGG16 and ResNet-50 on a CUDA GPU.

    .venv/bin/python benchmarks/gpu_validate.py [--batches 1,8,32,64] [--repeats 10] [--dtype fp16]

Needs PyTorch with CUDA; without either it prints one line and exits with status 2. For each
distinct layer shape (ResNet-50 repeats many) and batch it times, in the layout archsim lowers
(NCHW, fp16 tensor cores by default):

* F: ``conv2d`` / ``x @ Wᵀ``; D: ``torch.nn.grad.conv2d_input`` / ``dy @ W``;
  G: ``torch.nn.grad.conv2d_weight`` / ``dyᵀ @ x`` — each alone;
* DG_serial: D then G back-to-back on one stream; DG_concurrent: D and G on two CUDA streams
  (the single-device out-of-order-backprop idea), joined before the next pair.

Method (``gpu_timing.batched_ms``, the measuring scripts' one timing code): cudnn.benchmark on; W warm-up
calls (they also run cuDNN's algorithm search); then R repeats of ``inner`` back-to-back calls between two
CUDA events, ``inner`` chosen so a repeat lasts ≥ --target-ms; a GPU sleep queued before each repeat lets
the host enqueue every call first, so launch gaps are not timed. Reported: the median over repeats of
(elapsed / inner).
The L2 cache is not flushed between calls.

Writes ``benchmarks/results/gpu_kernels_<gpu-slug>.csv`` (metadata in ``# key: value`` lines),
then runs ``archsim validate-gpu`` on it: ``benchmarks/results/gpu_validation_<gpu-slug>.md``
(committed) and ``reports/gpu_validation_<gpu-slug>.html`` (``--no-analysis``: the CSV only, for a GPU
machine without plotly; the analysis runs anywhere later). Stops starting new work after
--max-minutes and writes what it measured (metadata ``complete: false``).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.commands.common import positive_int
from archsim.commands.list_flag import ListFlag
from archsim.errors import InputError
from archsim.outputs import atomic_write_text
from archsim.validation.gpu_csv import format_kernel_csv
from archsim.validation.gpu_study import slug
from archsim.workload import load_network
from archsim.workload.layer import Layer
from benchmarks.gpu_timing import batched_ms

DTYPES = ("fp16", "bf16", "fp32")
OPS = ("F", "D", "G", "DG_serial", "DG_concurrent")


def shape_key(layer: Layer) -> tuple:
    """Layers with the same key run the same kernels (timed once)."""
    return (layer.kind, layer.ifmap_h, layer.ifmap_w, layer.channels, layer.filters, layer.filter_h,
            layer.filter_w, layer.stride, layer.padding)


def gemm_layers(networks: list[str]) -> list[tuple[str, Layer]]:
    """(network, layer) for every conv/fc layer, in network order."""
    return [(name, layer) for name in networks for layer in load_network(name).layers if layer.kind in ("conv", "fc")]


def layer_tensors(torch, layer: Layer, batch: int, dtype, channels_last: bool = False, device: str = "cuda"):
    """(x, w, dy) of ``layer`` at ``batch`` on ``device``: input, weights, output gradient (fc: 2-D matrices)."""
    options = {"device": device, "dtype": dtype}
    fan_in = layer.filter_h * layer.filter_w * layer.channels
    if layer.kind == "fc":
        rows = batch * layer.ofmap_h * layer.ofmap_w
        return (torch.randn(rows, fan_in, **options), torch.randn(layer.filters, fan_in, **options) / math.sqrt(fan_in),
                torch.randn(rows, layer.filters, **options))
    x = torch.randn(batch, layer.channels, layer.ifmap_h, layer.ifmap_w, **options)
    w = torch.randn(layer.filters, layer.channels, layer.filter_h, layer.filter_w, **options) / math.sqrt(fan_in)
    dy = torch.randn(batch, layer.filters, layer.ofmap_h, layer.ofmap_w, **options)
    if channels_last:
        x, w, dy = (t.contiguous(memory_format=torch.channels_last) for t in (x, w, dy))
    return x, w, dy


def layer_kernels(torch, layer: Layer, x, w, dy) -> dict[str, Callable]:
    """Closures running F, D and G of ``layer`` on the tensors of :func:`layer_tensors`."""
    if layer.kind == "fc":
        return {"F": lambda: x @ w.t(), "D": lambda: dy @ w, "G": lambda: dy.t() @ x}
    conv, grad = torch.nn.functional.conv2d, torch.nn.grad
    s, p = layer.stride, layer.padding
    return {"F": lambda: conv(x, w, None, s, p),
            "D": lambda: grad.conv2d_input(x.shape, w, dy, s, p),
            "G": lambda: grad.conv2d_weight(x, w.shape, dy, s, p)}


def stream_pair(torch, d: Callable, g: Callable, concurrent: bool) -> Callable:
    """D then G on the current stream, or D and G on two streams that wait for it and rejoin it."""
    if not concurrent:
        def serial() -> None:
            d()
            g()
        return serial
    main, first, second = torch.cuda.current_stream(), torch.cuda.Stream(), torch.cuda.Stream()

    def both() -> None:
        first.wait_stream(main)
        second.wait_stream(main)
        with torch.cuda.stream(first):
            d()
        with torch.cuda.stream(second):
            g()
        main.wait_stream(first)
        main.wait_stream(second)
    return both


def time_kernel(torch, fn: Callable, *, repeats: int, warmup: int, target_ms: float = 1.0,
                host_us: float = 60.0) -> tuple[float, int]:
    """(median ms per call, calls per repeat) by CUDA events (:func:`benchmarks.gpu_timing.batched_ms`)."""
    (median, *_), inner = batched_ms(torch, True, fn, warmup=warmup, repeats=repeats, target_ms=target_ms,
                                     host_us=host_us)
    return median, inner


def measure(torch, layer: Layer, batch: int, dtype, *, repeats: int, warmup: int, target_ms: float,
            streams: bool = True, channels_last: bool = False) -> dict[str, tuple[float, int]]:
    """op → (median ms, inner) for F, D, G and, with ``streams``, DG_serial and DG_concurrent."""
    kernels = layer_kernels(torch, layer, *layer_tensors(torch, layer, batch, dtype, channels_last))
    timing = {"repeats": repeats, "warmup": warmup, "target_ms": target_ms}
    result = {op: time_kernel(torch, fn, **timing) for op, fn in kernels.items()}
    if streams:
        for op, concurrent in (("DG_serial", False), ("DG_concurrent", True)):
            fn = stream_pair(torch, kernels["D"], kernels["G"], concurrent)
            result[op] = time_kernel(torch, fn, host_us=150.0, **timing)
    return result


def check_kernels(torch, layer: Layer, batch: int, dtype=None, device: str = "cuda") -> dict[str, float]:
    """Max relative error of each timed kernel against autograd on the same tensors (the kernels
    compute what training computes, not just something of the same shape). Runs on the CPU too."""
    dtype = dtype or torch.float32
    torch.manual_seed(0)
    x, w, dy = layer_tensors(torch, layer, batch, dtype, device=device)
    kernels = layer_kernels(torch, layer, x, w, dy)
    x_, w_ = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    if layer.kind == "fc":
        y = x_ @ w_.t()
    else:
        y = torch.nn.functional.conv2d(x_, w_, None, layer.stride, layer.padding)
    y.backward(dy)
    expected = {"F": y.detach(), "D": x_.grad, "G": w_.grad}
    return {op: float((kernels[op]() - expected[op]).abs().max() / expected[op].abs().max().clamp_min(1e-12))
            for op in ("F", "D", "G")}


def device_info(torch, index: int = 0) -> dict[str, object]:
    """GPU name, SMs, compute capability, memory, versions, and clocks from nvidia-smi when present."""
    props = torch.cuda.get_device_properties(index)
    info: dict[str, object] = {
        "gpu": props.name, "gpu_slug": slug(props.name), "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}", "memory_gib": round(props.total_memory / 2**30, 1),
        "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    try:
        out = subprocess.run(["nvidia-smi", "-i", str(index), "--format=csv,noheader,nounits",
                              "--query-gpu=clocks.max.sm,clocks.sm,clocks.max.mem,driver_version,power.limit"],
                             capture_output=True, text=True, timeout=15, check=True).stdout.strip()
        values = [v.strip() for v in out.splitlines()[0].split(",")]
        info.update(dict(zip(("sm_clock_max_mhz", "sm_clock_mhz", "mem_clock_max_mhz", "driver", "power_limit_w"),
                             values)))
    except (OSError, subprocess.SubprocessError, IndexError):
        info["sm_clock_max_mhz"] = "unknown (nvidia-smi not available)"
    return info


def estimate_seconds(units: list[tuple[Layer, int]], repeats: int, warmup: int, streams: bool) -> float:
    """Rough wall time: fixed cost per timing (sync, sleep, cuDNN search) plus the kernels at ~300 TFLOP/s."""
    timings = len(units) * (5 if streams else 3)
    flops = sum(2 * 3 * b * layer.ofmap_h * layer.ofmap_w * layer.weight_elements for layer, b in units)
    searches = sum(3 for layer, _ in units if layer.kind == "conv")
    return timings * (0.02 + 0.004 * repeats) + searches * 0.15 + flops * (repeats + warmup + 2) * 2 / 300e12


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="vgg16,resnet50", help="shipped networks (default vgg16,resnet50)")
    parser.add_argument("--batches", action=ListFlag, item=positive_int, default=[1, 8, 32, 64], help="default 1,8,32,64")
    parser.add_argument("--dtype", default="fp16", choices=DTYPES, help="fp16 (default), bf16, or fp32 (TF32 on)")
    parser.add_argument("--repeats", type=int, default=10, help="timed repeats per kernel; the median is kept")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (cuDNN's search runs here)")
    parser.add_argument("--target-ms", type=float, default=1.0, help="minimum duration of one timed repeat")
    parser.add_argument("--channels-last", action="store_true", help="NHWC tensors instead of NCHW")
    parser.add_argument("--no-streams", action="store_true", help="skip the D ∥ G two-stream measurement")
    parser.add_argument("--limit", type=int, default=None, help="only the first N distinct shapes (a quick try)")
    parser.add_argument("--max-minutes", type=float, default=8.0, help="stop starting new work after this")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index")
    parser.add_argument("--out", default=None, help="CSV path (default benchmarks/results/gpu_kernels_<gpu>.csv)")
    parser.add_argument("--markdown", default=None, help="summary path (default benchmarks/results/gpu_validation_<gpu>.md)")
    parser.add_argument("--report", default=None, help="HTML path (default reports/gpu_validation_<gpu>.html)")
    parser.add_argument("--no-analysis", action="store_true",
                        help="only write the CSV (run archsim validate-gpu on it later, e.g. where plotly is installed)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.warmup < 1:
        parser.error("--repeats and --warmup must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()  # --max-minutes counts from here: importing torch and starting CUDA included
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_validate: PyTorch is not installed (pip install torch); nothing measured", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_validate: no CUDA GPU visible to PyTorch; nothing measured", file=sys.stderr)
        return 2
    from tqdm import tqdm

    torch.cuda.set_device(args.device)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = args.dtype == "fp32"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    networks = [n.strip() for n in args.networks.split(",") if n.strip()]
    layers = gemm_layers(networks)
    first_of: dict[tuple, tuple[str, Layer]] = {}
    for network, layer in layers:
        first_of.setdefault(shape_key(layer), (network, layer))
    shapes = list(first_of)[: args.limit] if args.limit else list(first_of)
    units = [(key, batch) for batch in sorted(args.batches) for key in shapes]
    info = device_info(torch, args.device)
    gpu = str(info["gpu_slug"])
    minutes = estimate_seconds([(first_of[k][1], b) for k, b in units], args.repeats, args.warmup,
                               not args.no_streams) / 60
    print(f"gpu_validate: {info['gpu']} ({info['sm_count']} SMs); {len(layers)} conv/fc layers, {len(shapes)} distinct "
          f"shapes × {len(args.batches)} batches; estimated {minutes:.1f} min (cap {args.max_minutes:g})", file=sys.stderr)
    measured: dict[tuple[tuple, int], dict[str, tuple[float, int]]] = {}
    skipped: list[str] = []
    complete = True
    for key, batch in tqdm(units, desc="gpu kernels", unit="shape"):
        if time.monotonic() - began > args.max_minutes * 60:
            complete = False
            break
        network, layer = first_of[key]
        try:
            measured[(key, batch)] = measure(torch, layer, batch, dtype, repeats=args.repeats, warmup=args.warmup,
                                             target_ms=args.target_ms, streams=not args.no_streams,
                                             channels_last=args.channels_last)
        except getattr(torch.cuda, "OutOfMemoryError", MemoryError):
            skipped.append(f"{network}/{layer.name}@{batch}")
        torch.cuda.empty_cache()
    rows = []
    for network, layer in layers:
        key = shape_key(layer)
        origin = first_of[key]
        same_as = "" if origin == (network, layer) else f"{origin[0]}/{origin[1].name}"
        for batch in sorted(args.batches):
            for op, (ms, inner) in measured.get((key, batch), {}).items():
                rows.append({"network": network, "layer": layer.name, "kind": layer.kind, "batch": batch, "op": op,
                             "measured_ms": ms, **{f: getattr(layer, f) for f in (
                                 "ifmap_h", "ifmap_w", "channels", "filters", "filter_h", "filter_w", "stride",
                                 "padding")}, "same_as": same_as, "repeats": args.repeats, "inner": inner})
    meta = {**info, "dtype": args.dtype, "memory_format": "channels_last" if args.channels_last else "nchw",
            "networks": ",".join(networks), "batches": ",".join(map(str, sorted(args.batches))),
            "repeats": args.repeats, "warmup": args.warmup, "target_ms": args.target_ms,
            "method": "median over repeats of (CUDA-event time of `inner` back-to-back calls / inner); cudnn.benchmark "
                      "on; launch gaps hidden by a queued GPU sleep; L2 not flushed",
            "complete": str(complete and not skipped).lower(), "skipped_oom": " ".join(skipped) or "none",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": shlex.join(["python", "benchmarks/gpu_validate.py", *(argv if argv is not None else sys.argv[1:])])}
    out = Path(args.out or ROOT / "benchmarks" / "results" / f"gpu_kernels_{gpu}.csv")
    print(f"wrote {atomic_write_text(out, format_kernel_csv(meta, rows))} ({len(rows)} rows, "
          f"{(time.monotonic() - began) / 60:.1f} min)", file=sys.stderr)
    if args.no_analysis:
        print(f"gpu_validate: analyse later with archsim validate-gpu --csv {os.path.relpath(out)} --markdown M.md",
              file=sys.stderr)
        return 0
    return summarize(out, args, gpu)


def summarize(csv_path: Path, args: argparse.Namespace, gpu: str) -> int:
    """Run ``archsim validate-gpu`` on the new CSV: Markdown summary, HTML report, per-op table on stdout."""
    from archsim.commands import validate_gpu

    markdown = args.markdown or ROOT / "benchmarks" / "results" / f"gpu_validation_{gpu}.md"
    report = args.report or ROOT / "reports" / f"gpu_validation_{gpu}.html"
    parser = argparse.ArgumentParser(prog="archsim validate-gpu")
    validate_gpu.add_arguments(parser)
    paths = [os.path.relpath(p) for p in (csv_path, markdown, report)]
    try:
        return validate_gpu.run(parser.parse_args(["--csv", paths[0], "--markdown", paths[1], "--report", paths[2]]))
    except InputError as exc:  # the measurement is safe on disk; say how to analyse it by hand
        print(f"gpu_validate: measured, but the analysis stopped: {exc}. Run archsim validate-gpu --csv {paths[0]} "
              "with --like/--sm-count/--mma/--clock-mhz for this GPU", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
