"""Microbenchmark one GPU for archsim's four kernel constants (vTrain's method: profile kernels, then
predict whole iterations), never fitting them on the training iterations they will predict.

    python3 benchmarks/gpu_efficiency_probe.py --out PROBE.csv [--max-seconds 150]
    python3 benchmarks/gpu_efficiency_probe.py --device cpu --tiny --out PROBE.csv   # the same code, tiny shapes

Needs PyTorch, numpy-free archsim (only :mod:`archsim.training.layer_ops` for the shapes, no plotly,
SCALE-Sim or scipy) and ``benchmarks/gpt_model.py`` (the training runs' GPT, tiny, for the host section).
Sections, in this order, each row one measurement (``section`` column; ``probe_host.py``, ``probe_gemm.py``,
``probe_memory.py``):

* ``kernel`` — GPU time per kernel of many tiny kernels queued back to back behind a GPU sleep
  (``torch.cuda._sleep``), so the host's issuing is hidden: the per-kernel overhead (``launch_s``);
* ``host`` — wall time of *issuing* ops without synchronizing, the GPU kept busy by a sleep queued in
  front: small elementwise ops (plain and recorded by autograd), and one forward + backward of the
  tiny GPT of gpt_model.py (recompute none and full), with ``ops`` = archsim's op count of
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

Timing (``gpu_timing.py``, gpu_train_measure.py's: CUDA events, warm-up, median): per repeat, a synchronize, a short
GPU sleep so the op is queued before the start event fires, start event, the op, end event; the
median over ``--repeats`` after ``--warmup`` untimed runs. So a row's seconds are the kernel's GPU
time plus one launch gap, as archsim's ``gemm_seconds``/``memory_seconds`` count them. On the CPU
(``--device cpu``) wall time stands in; those numbers only test the code.

``--max-seconds`` is a hard budget from the start of the process: no measurement starts after it,
and the CSV is rewritten after every section (``complete: false`` until the end). Output: ``# key:
value`` metadata, then :data:`COLUMNS` (``probe_rows.py``); read by :func:`archsim.training.calibrate.read_probe`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.commands.common import positive_int
from archsim.commands.list_flag import ListFlag
from benchmarks.gpt_model import MODELS, TINY, archsim_config
from benchmarks.gpu_device import cpu_threads, identity, open_torch
from benchmarks.gpu_timing import Budget, Timer
from benchmarks.measure_csv import command_line, utc_now, write_csv
from benchmarks.probe_gemm import gemm_shapes, measure_gemms
from benchmarks.probe_host import measure_host, measure_kernels
from benchmarks.probe_memory import measure_memory
from benchmarks.probe_rows import COLUMNS

if TYPE_CHECKING:
    from archsim.workload.transformer import TransformerConfig

TINY_PROBE = (TINY[0],)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every section)")
    parser.add_argument("--models", default=",".join(MODELS), help="GPT config JSONs (default the two e2e shapes)")
    parser.add_argument("--micro-batches", action=ListFlag, item=positive_int, default=[1, 2, 4, 8], help="default 1,2,4,8")
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
    budget = Budget(began + args.max_seconds)
    torch = open_torch("gpu_efficiency_probe", args.device)
    if torch is None:
        return 2
    from archsim.errors import InputError
    from archsim.workload.model_files import load_transformer

    try:
        if args.tiny:
            configs = [archsim_config(s) for s in TINY_PROBE]
        else:
            configs = [load_transformer(ROOT / p.strip(), seq=1024) for p in args.models.split(",") if p.strip()]
    except (OSError, InputError) as exc:
        print(f"gpu_efficiency_probe: cannot read --models: {exc}", file=sys.stderr)
        return 2
    with cpu_threads(torch, args.device):  # one thread on the CPU, restored for whatever runs next
        return probe(torch, args, argv, configs, began, budget)


def probe(torch, args: argparse.Namespace, argv: list[str] | None, configs: list[TransformerConfig], began: float,
          budget: Budget) -> int:
    """The four sections into ``--out``, the CSV rewritten after each (module docstring)."""
    cuda = args.device.startswith("cuda")
    dtype = torch.float16 if cuda else torch.float32  # the CPU's fp16 kernels crawl; its numbers only test the code
    torch.manual_seed(0)
    timer = Timer(torch, cuda, args.warmup, args.repeats)
    meta: dict[str, object] = {
        **identity(torch, args.device), "dtype": "fp16" if cuda else "fp32", "date": utc_now(),
        "method": (f"per measurement {args.warmup} warm-up runs then the median of {args.repeats} timed ones, each "
                   "between CUDA events after a synchronize and a ~1 ms GPU sleep (the op queued before the start "
                   "event fires); kernel: 1000 tiny kernels behind a GPU sleep, GPU time per kernel; host: wall "
                   "time of issuing ops behind a GPU sleep, per op"),
        "models": ",".join(c.name for c in configs), "micro_batches": ",".join(map(str, args.micro_batches)),
        "command": command_line("gpu_efficiency_probe", argv),
        "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    write_csv(out, meta, COLUMNS, rows)
    sections = (("kernel", lambda: measure_kernels(torch, args.repeats, args.device)),
                ("host", lambda: measure_host(torch, args.repeats, dtype, args.device)),
                ("gemm", lambda: measure_gemms(torch, gemm_shapes(configs, args.micro_batches), timer, budget, dtype,
                                               args.device)),
                ("memory", lambda: measure_memory(torch, configs, args.micro_batches, timer, budget, dtype,
                                                  args.device)))
    stopped = []
    for name, run in sections:
        if budget.left() <= 0:
            stopped.append(name)
            continue
        before = len(rows)
        rows += run()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        print(f"  {name}: {len(rows) - before} rows  [{time.monotonic() - began:.0f} s]", file=sys.stderr)
        meta["seconds"] = f"{time.monotonic() - began:.1f}"
        write_csv(out, meta, COLUMNS, rows)
    meta["complete"] = str(budget.left() > 0 and not stopped).lower()
    meta["seconds"] = f"{time.monotonic() - began:.1f}"
    write_csv(out, meta, COLUMNS, rows)
    print(f"gpu_efficiency_probe: wrote {out} ({len(rows)} rows, {meta['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
