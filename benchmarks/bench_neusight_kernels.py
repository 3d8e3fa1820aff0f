"""How well archsim's kernel time model (archsim/devices/kernels.py) times NeuSight's measured fp32 kernels.

    .venv/bin/python benchmarks/bench_neusight_kernels.py [--data ../shared/gpu_kernels] [--iterations 600]

Data: NeuSight's kernel measurements of five GPUs (P100-PCIE-16GB, P4, T4, V100-PCIE-32GB,
A100-PCIE-40GB; ``../shared/gpu_kernels/``, MIT). Fit rows: every row of linear.csv, bmm.csv,
elem.csv, softmax.csv, ln.csv, train_elem.csv, train_softmax.csv, train_ln.csv. Checked rows: NeuSight's
kernel test set (linear.csv, bmm.csv, elem.csv, softmax.csv, ln.csv).

* ``shipped``: the constants in archsim (``kernels.FITTED``) on the checked rows.
* ``in_sample``: constants refitted on all five GPUs' fit rows, on the checked rows (fitted and checked
  on the same GPUs).
* ``held_out``: leave-one-GPU-out — for each GPU, constants fitted on the other four GPUs' fit rows
  predict its checked rows (a GPU the constants never saw, as H100 or L4 would be).

Fit: Nelder–Mead on the constants' logarithms (``neusight.FIT_ROUNDS`` rounds, each restarted from the
last), minimizing the sum of the op classes' MAPE, from ``neusight.FIT_START``; then the energy per
FLOP on a grid (the largest that ties the best error).
Writes benchmarks/results/neusight_kernels.csv and .md (MAPE % per GPU and op class).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd

from archsim.devices.kernel_constants import FITTED
from archsim.outputs import atomic_write_text
from archsim.validation.neusight import (
    CLASS_ORDER,
    FIT_START,
    fit_constants,
    leave_one_gpu_out,
    mape_by_class,
    predict,
    read_neusight_csv,
)

NEUSIGHT_DATA = ROOT.parent / "shared" / "gpu_kernels"  # NeuSight's kernel CSVs, beside the checkout
FIT_FILES = ("linear", "bmm", "elem", "softmax", "ln", "train_elem", "train_softmax", "train_ln")
CHECK_FILES = ("linear", "bmm", "elem", "softmax", "ln")
NEUSIGHT_OOD = {"linear": 13.9, "bmm": 13.8, "elementwise": 19.3, "softmax": 13.9, "layernorm": 56.7}
"""NeuSight's own MAPE on GPUs it was never trained on (its paper's out-of-distribution figures)."""


def load(data: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    frames = {name: read_neusight_csv(data / f"{name}.csv").frame.assign(file=name) for name in FIT_FILES}
    fit = pd.concat(frames.values(), ignore_index=True)
    check = pd.concat([frames[name] for name in CHECK_FILES], ignore_index=True)
    return fit, check


def table(check: pd.DataFrame, fit: pd.DataFrame, iterations: int) -> tuple[pd.DataFrame, dict[str, str]]:
    shipped = mape_by_class(predict(check, FITTED), ("gpu", "op_class")).rename(columns={"mape": "shipped"})
    constants = fit_constants(fit, FIT_START, iterations)
    in_sample = mape_by_class(predict(check, constants), ("gpu", "op_class")).rename(columns={"mape": "in_sample"})
    held = leave_one_gpu_out(fit, check, FIT_START, iterations).rename(columns={"mape": "held_out"})
    keys = ["gpu", "op_class", "rows"]
    joined = shipped.merge(in_sample, on=keys).merge(held.drop(columns="constants"), on=keys)
    fits = {"all five": str(constants), **{f"without {r.gpu}": r.constants for r in held.drop_duplicates("gpu").itertuples()}}
    return joined, fits


def markdown(joined: pd.DataFrame, fits: dict[str, str], command: str) -> str:
    lines = [f"# NeuSight's fp32 kernels timed by archsim's kernel model\n\n`{command}`\n",
             ("MAPE % per GPU and op class. held out: constants fitted on the other four GPUs. "
              "in sample: fitted on all five. shipped: archsim's `kernels.FITTED`.\n"),
             "| GPU | op class | rows | held out | in sample | shipped |", "|---|---|---:|---:|---:|---:|"]
    for r in joined.itertuples():
        lines.append(f"| {r.gpu} | {r.op_class} | {r.rows} | {r.held_out:.1f} | {r.in_sample:.1f} | {r.shipped:.1f} |")
    lines += ["", "Mean over the five GPUs (each GPU weighted equally) beside NeuSight's out-of-distribution MAPE:", "",
              "| op class | held out | in sample | NeuSight (GPUs never trained on) |", "|---|---:|---:|---:|"]
    for op_class in CLASS_ORDER:
        rows = joined[joined.op_class == op_class]
        lines.append(f"| {op_class} | {rows.held_out.mean():.1f} | {rows.in_sample.mean():.1f} | "
                     f"{NEUSIGHT_OOD[op_class]} |")
    lines += ["", "Constants of each fit:", ""] + [f"* {name}: `{value}`" for name, value in fits.items()]
    return "\n".join(lines) + "\n"


def page_main(doc: str, page: Callable[[Path], str], name: str) -> None:
    """The main of a script that writes one markdown page from NeuSight's CSVs: ``--data`` (default
    :data:`NEUSIGHT_DATA`), ``page(data)`` written to benchmarks/results/``name`` (atomically) and printed."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data", type=Path, default=NEUSIGHT_DATA)
    args = parser.parse_args()
    text = page(args.data)
    atomic_write_text(ROOT / "benchmarks" / "results" / name, text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=NEUSIGHT_DATA)
    parser.add_argument("--iterations", type=int, default=600, help="Nelder–Mead iterations per fit")
    args = parser.parse_args()
    started = time.perf_counter()
    fit, check = load(args.data)
    joined, fits = table(check, fit, args.iterations)
    command = f"python benchmarks/bench_neusight_kernels.py --iterations {args.iterations}"
    out = ROOT / "benchmarks" / "results"
    atomic_write_text(out / "neusight_kernels.csv", joined.to_csv(index=False, float_format="%.2f"))
    atomic_write_text(out / "neusight_kernels.md", markdown(joined, fits, command))
    print(markdown(joined, fits, command))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
