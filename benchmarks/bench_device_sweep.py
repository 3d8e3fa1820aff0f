"""A sweep over device-file fields — array size × HBM bandwidth × chips — with its time/energy Pareto front.

    .venv/bin/python benchmarks/bench_device_sweep.py [--device configs/devices/tpu_v4_like.toml]
        [--model configs/transformers/gpt3_1.3b.toml] [--global-batch 64] [--static-watts W]
        [--csv OUT.csv] [--html OUT.html]

Each point is the device file with its arrays' shape (square sides of 64, 128 or 256 PEs, the count
scaled so the chip keeps its PEs: 4 × the file's arrays of 64², 1/4 of them of 256²), its HBM
bandwidth and the chips the model trains on (data parallel, one micro-batch of one sample, full
recompute, bf16, Megatron's standard attention) replaced. The sweep is the library's
(:mod:`archsim.sweep.device_points`), what ``archsim sweep configs/sweeps/device_tpu_v4_like_gpt.toml`` runs
with caching and an HTML report: ``archsim train``'s seconds and the energy model's joules per
iteration, plus ``--static-watts`` per chip over the iteration (an assumption the user states;
default the device file's ``[device] static_watts``, else 0: the energy model's dynamic energy alone, which no
bandwidth changes). The front keeps the
points no fitting point beats in both seconds and joules (:func:`archsim.pareto_rule.pareto_mask`).
Prints a markdown table (front marked) on stdout; ``--csv`` / ``--html`` (the report's scatter) write
files. A point whose memory does not fit the chip is kept with ``fits`` false and left off the front.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from archsim.sweep.device_points import with_front
from archsim.sweep.device_report import device_markdown

ROOT = Path(__file__).resolve().parents[1]
SIDES = (64, 128, 256)
HBM_GBPS = (600.0, 1200.0, 2400.0)
CHIPS = (4, 8, 16)


def sweep(device_path: str, model_path: str, global_batch: int, static_watts: float | None = None) -> list[dict]:
    """One row per (array side, HBM GB/s, chips): seconds, joules, peak memory, fits — the library's
    device sweep (:mod:`archsim.sweep.device_points`, what ``archsim sweep`` runs) on these axes.
    ``static_watts`` None: the device file's ``[device] static_watts`` (0 where it states none), as a spec
    that states none."""
    from archsim.devices.device_file import load_device
    from archsim.sweep.device_arrays import square_arrays
    from archsim.sweep.device_files import file_sha256
    from archsim.sweep.device_points import sweep_rows
    from archsim.sweep.device_spec import DeviceSetup, DeviceSweepSpec

    device = load_device(device_path)
    setup = DeviceSetup(model=Path(model_path).stem, model_path=model_path, model_sha256=file_sha256(model_path),
                        device=Path(device_path).stem, device_path=device_path, device_sha256=file_sha256(device_path),
                        global_batch=global_batch, dtype="bf16", attention="standard",
                        static_watts=device.static_watts if static_watts is None else static_watts)
    spec = DeviceSweepSpec(name="bench_device_sweep", setup=setup,
                           arrays=square_arrays(device, SIDES), hbm_gbps=HBM_GBPS, chips=CHIPS)
    return sweep_rows(spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=str(ROOT / "configs/devices/tpu_v4_like.toml"))
    parser.add_argument("--model", default=str(ROOT / "configs/transformers/gpt3_1.3b.toml"))
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--static-watts", type=float, default=None,
                        help="each chip's static power, W (assumed; default: the device file's, else 0)")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--html", default=None)
    args = parser.parse_args(argv)
    from archsim.errors import InputError

    try:
        rows = with_front(sweep(args.device, args.model, args.global_batch, args.static_watts))
    except InputError as exc:
        print(f"bench_device_sweep: {exc}", file=sys.stderr)
        return 2
    print(device_markdown(rows))
    if args.csv or args.html:
        import pandas as pd

        from archsim.outputs import atomic_write_text
        from archsim.report.pareto import device_pareto_figure

        if args.csv:
            atomic_write_text(args.csv, pd.DataFrame(rows).to_csv(index=False))
        if args.html:
            atomic_write_text(args.html, device_pareto_figure(pd.DataFrame(rows)).to_html(include_plotlyjs="cdn"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
