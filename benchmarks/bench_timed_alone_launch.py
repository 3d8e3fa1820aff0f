"""The launch of a kernel timed alone: which form the measurements support (additive launch or an issue floor).

    .venv/bin/python benchmarks/bench_timed_alone_launch.py              # about 4 minutes
    .venv/bin/python benchmarks/bench_timed_alone_launch.py --held-out 8 # + NeuSight held out at 8 µs (+2 min)

Every kernel ``validate-gpu`` times (DeepBench's, the H200 CSV's) and every NeuSight row is timed alone:
today each pays ``kernels.FITTED.launch_s`` (16.0 µs) on top of its body, a launch fitted by NeuSight's
fit together with the fractions. This scores, on the same rows and by the same rule as
``benchmarks/deepbench_summary.py`` (mean over GPUs and ops of the seconds MAPE), the forms:

* **additive, shipped bodies**: body + L, every other constant ``FITTED``'s;
* **additive, L held in NeuSight's refit**: NeuSight's fit (all five GPUs' fit rows, 600 iterations, from
  ``neusight.FIT_START``) refits every other constant with L held (L chosen on DeepBench, the only
  allowed data with kernels short enough to tell it);
* **floor**: max(body, F) + G per kernel, with the shipped bodies. An approximation, stated: a row of n
  kernels is taken as max(body, n·F) + n·G, its bodies and split-K choices those of launch G.

The H200 columns are a check (nothing is fitted on them): the "op | h200 | all | all" seconds MAPE of
``gpu_validation_h200.md``. Writes benchmarks/results/timed_alone_launch.md.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_neusight_kernels as neusight_bench
import deepbench_summary

from archsim.devices.kernel_constants import FITTED, KernelConstants
from archsim.outputs import atomic_write_text
from archsim.training.fitted import kernels
from archsim.validation import neusight
from archsim.validation.gpu_csv import read_kernel_csv
from archsim.validation.gpu_study import run_study

RESULTS = ROOT / "benchmarks" / "results"
H200 = RESULTS / "gpu_kernels_h200.csv"
LAUNCHES_US = (0.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0)
FLOORS_US = (0.0, 5.0, 10.0, 20.0, 30.0, 40.0)
GAPS_US = (0.0, 2.0, 4.0, 8.0, 16.0)
DELTA_S = 1e-9  # a launch step small enough not to move any split-K choice: d(seconds)/d(launch) = kernels


def rows(paths: list[Path], constants: KernelConstants) -> pd.DataFrame:
    """Per kernel row: set, gpu, op, measured and predicted seconds, and kernels (d seconds / d launch)."""
    frames = []
    for path in paths:
        table = read_kernel_csv(path)
        runs = []
        for launch in (constants.launch_s, constants.launch_s + DELTA_S):
            runs.append(run_study([table], tensor_constants=kernels,
                                  simt_constants=replace(constants, launch_s=launch)).joined)
        base = runs[0]
        frames.append(pd.DataFrame({
            "set": "gemm" if path.name.endswith("_gemm_kernels.csv") else "h200" if path == H200 else "conv",
            "gpu": base["gpu"], "op": base["op"], "measured": base["measured_seconds"],
            "predicted": base["predicted_seconds"],
            "kernels": np.round((runs[1]["predicted_seconds"] - base["predicted_seconds"]) / DELTA_S, 3)}))
    return pd.concat(frames, ignore_index=True)


def scores(frame: pd.DataFrame, predicted: pd.Series) -> dict[str, float]:
    """Seconds MAPE (%): DeepBench conv and GEMM as the mean over (GPU, op), the H200 per op."""
    error = (predicted / frame["measured"] - 1).abs()
    per = frame.assign(error=error).groupby(["set", "gpu", "op"], sort=False)["error"].mean().reset_index()
    out = {name: 100 * per[per.set == name]["error"].mean() for name in ("conv", "gemm")}
    h200 = per[per.set == "h200"].set_index("op")["error"]
    out.update({f"h200 {op}": 100 * h200[op] for op in ("F", "D", "G")})
    return out


def floored(frame: pd.DataFrame, gap_s: float, floor_s: float) -> pd.Series:
    """max(body, n·F) + n·G of rows timed at launch ``gap_s`` (the module docstring's approximation)."""
    n = frame["kernels"]
    body = frame["predicted"] - n * gap_s
    return np.maximum(body, n * floor_s) + n * gap_s


def neusight_sum(constants: KernelConstants, check: pd.DataFrame) -> float:
    """NeuSight's checked rows: the sum over op classes of the mean over GPUs of the MAPE (%)."""
    table = neusight.mape_by_class(neusight.predict(check, constants), ("gpu", "op_class"))
    return float(table.groupby("op_class")["mape"].mean().sum())


def held_fit(fit: pd.DataFrame, launch_s: float) -> KernelConstants:
    """NeuSight's fit on all five GPUs with the launch held at ``launch_s``."""
    fields = tuple(f for f in neusight.FIT_FIELDS if f != "launch_s")
    with mock.patch.object(neusight, "FIT_FIELDS", fields):
        return neusight.fit_constants(fit, replace(neusight.FIT_START, launch_s=launch_s), 600)


def held_out_sum(fit: pd.DataFrame, check: pd.DataFrame, launch_s: float) -> pd.Series:
    """NeuSight's leave-one-GPU-out MAPE per op class (mean over GPUs, %) with the launch held."""
    fields = tuple(f for f in neusight.FIT_FIELDS if f != "launch_s")
    with mock.patch.object(neusight, "FIT_FIELDS", fields):
        held = neusight.leave_one_gpu_out(fit, check, replace(neusight.FIT_START, launch_s=launch_s), 600)
    return held.groupby("op_class", sort=False)["mape"].mean()


def line(label: str, figures: dict[str, float], neusight_figure: str) -> str:
    cells = [f"{figures[k]:.1f}" for k in ("conv", "gemm", "h200 F", "h200 D", "h200 G")]
    return f"| {label} | {' | '.join(cells)} | {neusight_figure} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-out", type=float, nargs="*", default=[], metavar="US",
                        help="also NeuSight's leave-one-GPU-out with the launch held at these µs (2 min each)")
    args = parser.parse_args()
    paths = deepbench_summary.conv_csvs() + deepbench_summary.gemm_csvs() + [H200]
    fit, check = neusight_bench.load(neusight_bench.NEUSIGHT_DATA)
    header = ["| form | DeepBench conv | DeepBench GEMM | H200 F | H200 D | H200 G | NeuSight |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    out = ["# The launch of a kernel timed alone: the forms scored", "",
           "`python benchmarks/bench_timed_alone_launch.py"
           + (f" --held-out {' '.join(f'{v:g}' for v in args.held_out)}" if args.held_out else "") + "`", "",
           ("Seconds MAPE %: DeepBench conv / GEMM the mean over GPUs and ops (as deepbench_summary.md), "
            "H200 per op (a check). NeuSight: the sum over op classes of the mean over GPUs of the MAPE on "
            "its checked rows (in sample unless marked held out)."), "",
           "## Additive launch L, shipped bodies (kernels.FITTED but the launch)", "", *header]
    for launch in LAUNCHES_US:
        constants = replace(FITTED, launch_s=launch * 1e-6)
        frame = rows(paths, constants)
        out.append(line(f"L = {launch:g} µs" + (" (shipped)" if constants == FITTED else ""),
                        scores(frame, frame["predicted"]), f"{neusight_sum(constants, check):.1f}"))
        print(out[-1], flush=True)
    out += ["", "## Additive launch L held in NeuSight's refit (all five GPUs; every other constant refitted)",
            "", *header]
    for launch in (4.0, 6.0, 8.0, 10.0, 12.0, 16.0):
        constants = held_fit(fit, launch * 1e-6)
        frame = rows(paths, constants)
        out.append(line(f"L = {launch:g} µs", scores(frame, frame["predicted"]),
                        f"{neusight_sum(constants, check):.1f}"))
        print(out[-1], flush=True)
    for launch in args.held_out:
        classes = held_out_sum(fit, check, launch * 1e-6)
        out += ["", f"Held out with L = {launch:g} µs: " + ", ".join(f"{k} {v:.1f}" for k, v in classes.items())
                + f" (sum {classes.sum():.1f})"]
        print(out[-1], flush=True)
    out += ["", "## Floor: max(body, F) + G per kernel, shipped bodies (approximation: module docstring)", "",
            *header]
    for gap in GAPS_US:
        frame = rows(paths, replace(FITTED, launch_s=gap * 1e-6))
        for floor in FLOORS_US:
            out.append(line(f"F = {floor:g} µs, G = {gap:g} µs",
                            scores(frame, floored(frame, gap * 1e-6, floor * 1e-6)), "—"))
        print("\n".join(out[-len(FLOORS_US):]), flush=True)
    atomic_write_text(RESULTS / "timed_alone_launch.md", "\n".join(out) + "\n")


if __name__ == "__main__":
    main()
