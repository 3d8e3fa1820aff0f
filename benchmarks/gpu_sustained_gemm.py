"""How fast a GPU's tensor cores stay under sustained load: one bf16 GEMM shape timed in a short burst (as
``gpu_tensor_probe.py`` times it) and then back to back for ``--seconds``, its TFLOP/s per window beside the SM
clock and board power nvidia-smi reads meanwhile — the evidence for (or against) a clock that falls under the
power limit as training's long runs of large GEMMs go on. A check, never a fit.

    python3 benchmarks/gpu_sustained_gemm.py --out SUSTAINED.csv [--seconds 10]
    python3 benchmarks/gpu_sustained_gemm.py --device cpu --tiny --out SUSTAINED.csv   # the same code, tiny shapes

Rows (``phase``): ``burst`` — the median of 11 timed products after 3 warm-ups, each behind a ~1 ms GPU sleep,
after 2 s idle; ``sustained`` — per window of ``--window`` products run back to back (CUDA events around the
window), its start time since the sustained phase began and its TFLOP/s; ``clock`` — nvidia-smi's SM clock (MHz)
and power (W) sampled every 200 ms in the background, with their time on the same clock. Shapes: 8,192³,
16,384³ and a transformer's FFN-in product at 16,384 tokens × hidden 8,192 (``--tiny``: 64³).
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.gpu_device import cpu_threads, identity, open_torch
from benchmarks.gpu_timing import Timer, elapsed_ms
from benchmarks.measure_csv import command_line, utc_now, write_csv
from benchmarks.probe_gemm import gemm_operands

COLUMNS = ("shape", "m", "k", "n", "phase", "t_seconds", "tflops", "sm_mhz", "power_w")
SHAPES = (("square_8192", 8192, 8192, 8192), ("square_16384", 16384, 16384, 16384),
          ("fc1_16384x8192", 16384, 8192, 32768))
TINY = (("square_64", 64, 64, 64),)


def sample_clocks(began: float, stop: threading.Event, out: list[tuple[float, float, float]]) -> None:
    """nvidia-smi's SM clock and power every 200 ms until ``stop``; nothing without nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return
    proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                             "-lms", "200"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if stop.is_set():
                break
            cells = [c.strip() for c in line.split(",")]
            try:
                out.append((time.monotonic() - began, float(cells[0]), float(cells[1])))
            except (ValueError, IndexError):
                continue
    finally:
        proc.terminate()


def measure_shape(torch, name: str, m: int, k: int, n: int, seconds: float, window: int, cuda: bool,
                  device: str) -> list[dict[str, object]]:
    a, b = gemm_operands(torch, m, k, n, 1, "nn", torch.bfloat16, device)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=device)
    gemm = functools.partial(torch.mm, a, b, out=out)
    flops = 2 * m * k * n
    time.sleep(2.0)  # let the chip cool from whatever ran before
    median = Timer(torch, cuda, 3, 11)(gemm)[0]
    rows: list[dict[str, object]] = [{"shape": name, "m": m, "k": k, "n": n, "phase": "burst", "t_seconds": 0,
                                      "tflops": f"{flops / median / 1e12:.4g}"}]
    clocks: list[tuple[float, float, float]] = []
    stop = threading.Event()
    began = time.monotonic()
    sampler = threading.Thread(target=sample_clocks, args=(began, stop, clocks), daemon=True)
    sampler.start()

    def run_window() -> None:
        for _ in range(window):
            gemm()

    while time.monotonic() - began < seconds:
        start = time.monotonic() - began
        ms = elapsed_ms(torch, cuda, run_window)[0]
        rows.append({"shape": name, "m": m, "k": k, "n": n, "phase": "sustained", "t_seconds": f"{start:.3f}",
                     "tflops": f"{window * flops / (ms / 1e3) / 1e12:.4g}"})
    stop.set()
    sampler.join(timeout=2.0)
    rows += [{"shape": name, "m": m, "k": k, "n": n, "phase": "clock", "t_seconds": f"{t:.3f}", "sm_mhz": f"{mhz:g}",
              "power_w": f"{watts:g}"} for t, mhz, watts in clocks]
    return rows


def full(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Every row with every column (empty where a phase has no such value)."""
    return [{c: row.get(c, "") for c in COLUMNS} for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV to write (rewritten after every shape)")
    parser.add_argument("--seconds", type=float, default=10.0, help="sustained phase per shape (default 10)")
    parser.add_argument("--window", type=int, default=20, help="products per timed window (default 20)")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (tests, CPU)")
    args = parser.parse_args(argv)
    torch = open_torch("gpu_sustained_gemm", args.device)
    if torch is None:
        return 2
    cuda = args.device.startswith("cuda")
    meta: dict[str, object] = {**identity(torch, args.device), "dtype": "bf16", "date": utc_now(),
                               "command": command_line("gpu_sustained_gemm", argv), "complete": "false"}
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    torch.manual_seed(0)
    with cpu_threads(torch, args.device):
        for name, m, k, n in TINY if args.tiny else SHAPES:
            rows += measure_shape(torch, name, m, k, n, args.seconds, args.window, cuda, args.device)
            burst = next(r["tflops"] for r in rows if r["shape"] == name and r["phase"] == "burst")
            last = [float(r["tflops"]) for r in rows if r["shape"] == name and r["phase"] == "sustained"]
            print(f"  {name}: burst {burst} TFLOP/s, sustained first {last[0]:.0f} last {last[-1]:.0f} TFLOP/s "
                  f"({len(last)} windows)", file=sys.stderr)
            write_csv(out, meta, COLUMNS, full(rows))
    meta["complete"] = "true"
    write_csv(out, meta, COLUMNS, full(rows))
    print(f"gpu_sustained_gemm: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
