"""A sweep over device-file fields — array size × HBM bandwidth × chips — with its time/energy Pareto front.

    .venv/bin/python benchmarks/bench_device_sweep.py [--device configs/devices/tpu_v4_like.toml]
        [--model configs/transformers/gpt3_1.3b.toml] [--global-batch 64] [--static-watts W]
        [--csv OUT.csv] [--html OUT.html]

Each point is the device file with its arrays' shape (square sides of 64, 128 or 256 PEs, the count
scaled so the chip keeps its PEs: 4 × the file's arrays of 64², 1/4 of them of 256²), its HBM
bandwidth and the chips the model trains on (data parallel, one micro-batch of one sample, full
recompute) replaced; ``archsim train``'s model times the iteration (:func:`archsim.training.run.train`)
and the energy model costs its ops (:func:`archsim.training.energy.array_iteration_joules`), plus
``--static-watts`` per chip over the iteration (an assumption the user states; default 0: the
energy model's dynamic energy alone, which no chip count or bandwidth changes). The front keeps the
points no other point beats in both seconds and joules (:func:`archsim.report.pareto.pareto_mask`).
Prints a markdown table (front marked) on stdout; ``--csv`` / ``--html`` (a plotly scatter) write files.
A point whose memory does not fit the chip is kept with ``fits`` false and left off the front.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIDES = (64, 128, 256)
HBM_GBPS = (600.0, 1200.0, 2400.0)
CHIPS = (4, 8, 16)


def sweep(device_path: str, model_path: str, global_batch: int, static_watts: float = 0.0) -> list[dict]:
    """One row per (array side, HBM GB/s, chips): seconds, joules, peak memory, fits."""
    from archsim.devices.device_file import load_device
    from archsim.training import fitted
    from archsim.training.energy import array_iteration_joules
    from archsim.training.machine import Links, Machine
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train
    from archsim.workload.transformer import load_transformer

    base = load_device(device_path)
    config = load_transformer(model_path)
    rows = []
    for side in SIDES:
        for gbps in HBM_GBPS:
            pes = base.arrays.count * base.arrays.rows * base.arrays.cols
            count = max(pes // (side * side), 1)
            arrays = replace(base.arrays, count=count, rows=side, cols=side, per_core=1)
            device = replace(base, arrays=arrays, hbm_bytes_per_s=gbps * 1e9)
            link = fitted.nvlink(device.nvlink_bytes_per_s)
            machine = Machine(device, device.efficiency or fitted.kernels(device.name), Links(link, link, link),
                              dtype="bf16")
            for chips in CHIPS:
                par = Parallelism(1, 1, chips, global_batch, 1, "full")
                result = train(config, par, machine)
                parameters = sum(m.parameters for m in result.memory) * par.tp * par.dp
                dynamic = array_iteration_joules(config, par, device, "bf16", parameters=parameters)
                rows.append({"array": f"{count}x{side}x{side}", "hbm_gbps": gbps, "chips": chips,
                             "iteration_seconds": result.iteration_seconds,
                             "energy_j": dynamic + static_watts * chips * result.iteration_seconds,
                             "peak_memory_gib": result.peak_memory_gib,
                             "fits": result.peak_memory_gib * 2**30 <= device.memory_bytes})
    return rows


def with_front(rows: list[dict]) -> list[dict]:
    import numpy as np

    from archsim.report.pareto import pareto_mask

    fitting = [r for r in rows if r["fits"]]
    mask = pareto_mask(np.array([[r["iteration_seconds"], r["energy_j"]] for r in fitting])) if fitting else []
    front = {id(r) for r, keep in zip(fitting, mask) if keep}
    return [{**r, "pareto": id(r) in front} for r in rows]


def markdown(rows: list[dict]) -> str:
    lines = ["| arrays | HBM GB/s | chips | iteration s | energy kJ | peak GiB | fits | Pareto |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['array']} | {r['hbm_gbps']:g} | {r['chips']} | {r['iteration_seconds']:.3f} | "
              f"{r['energy_j'] / 1e3:#.4g} | {r['peak_memory_gib']:.1f} | {'yes' if r['fits'] else 'no'} | "
              f"{'**front**' if r['pareto'] else ''} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=str(ROOT / "configs/devices/tpu_v4_like.toml"))
    parser.add_argument("--model", default=str(ROOT / "configs/transformers/gpt3_1.3b.toml"))
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--static-watts", type=float, default=0.0, help="each chip's static power, W (assumed)")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--html", default=None)
    args = parser.parse_args(argv)
    from archsim.errors import InputError

    try:
        rows = with_front(sweep(args.device, args.model, args.global_batch, args.static_watts))
    except InputError as exc:
        print(f"bench_device_sweep: {exc}", file=sys.stderr)
        return 2
    print(markdown(rows))
    if args.csv:
        import pandas as pd

        from archsim.outputs import atomic_write_text

        atomic_write_text(args.csv, pd.DataFrame(rows).to_csv(index=False))
    if args.html:
        import plotly.express as px

        figure = px.scatter(rows, x="iteration_seconds", y="energy_j", color="array", symbol="pareto",
                            hover_data=["hbm_gbps", "chips", "peak_memory_gib"],
                            title="Device-file sweep: seconds vs joules per iteration (Pareto front: symbol)")
        figure.write_html(args.html, include_plotlyjs="cdn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
