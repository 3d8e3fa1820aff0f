"""One table of archsim's GPU model against every DeepBench GPU: per GPU and per op, Spearman ρ and MAPE.

    python benchmarks/deepbench_summary.py            # prints Markdown; --out FILE writes it
    python benchmarks/deepbench_summary.py --gemm     # the dense GEMM CSVs instead of the convolutions

Reads the converted CSVs (``benchmarks/results/deepbench_<gpu>_kernels.csv``, written by
``benchmarks/deepbench_convert.py``) and runs the same study as ``archsim validate-gpu`` on each.
Two views of the same ops: the GPU-as-arrays cycles (``rho``, ``mape``, ``median_ratio``: MAPE is
mean |modeled / measured − 1|, mostly the efficiency gap of a model that prices compute at the
datasheet peak) and the one device model's seconds (``seconds_*``: kernel_ops.op_seconds with the
constants fitted on NeuSight's five GPUs for fp32 and on vTrain's A100 runs for fp16; nothing fitted
on DeepBench).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text
from archsim.training.fitted import kernels
from archsim.validation.gpu_algorithms import DGRAD
from archsim.validation.gpu_compare import tensor_core_subset
from archsim.validation.gpu_csv import read_kernel_csv
from archsim.validation.gpu_study import GpuOverrides, run_study

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
COLUMNS = ["gpu", "dtype", "op", "n", "rho", "mape", "median_ratio", "scaled_abs_err", "rho_mem", "rho_tc_shapes",
           "seconds_mape", "seconds_median_ratio", "seconds_rho"]


def conv_csvs(folder: Path = RESULTS) -> list[Path]:
    """The convolution CSVs (not the GEMM ones), V100 and T4 first."""
    paths = sorted(p for p in folder.glob("deepbench_*_kernels.csv") if not p.name.endswith("_gemm_kernels.csv"))
    return sorted(paths, key=lambda p: (p.name not in ("deepbench_v100_kernels.csv", "deepbench_t4_kernels.csv"), p.name))


def gemm_csvs(folder: Path = RESULTS) -> list[Path]:
    """The dense GEMM CSVs, V100 and T4 first."""
    paths = sorted(folder.glob("deepbench_*_gemm_kernels.csv"))
    first = ("deepbench_v100_gemm_kernels.csv", "deepbench_t4_gemm_kernels.csv")
    return sorted(paths, key=lambda p: (p.name not in first, p.name))


def summary(paths: list[Path], overrides: GpuOverrides = GpuOverrides()) -> pd.DataFrame:
    """Per GPU and op: n, ρ, MAPE, median ratio, scaled error, ρ with the memory floor, ρ over tensor-core shapes."""
    rows = []
    for path in paths:
        table = read_kernel_csv(path)
        study = run_study([table], overrides, tensor_constants=kernels)
        per_op = study.stats[study.stats.group == "op"].set_index("op")
        shapes = tensor_core_subset(study.joined).set_index("op")
        for op in ("F", "D", "G"):
            if op not in per_op.index:
                continue
            stat = per_op.loc[op]
            rows.append({"gpu": stat["gpu"], "dtype": table.meta.get("dtype", ""), "op": op, "n": int(stat["kernel_count"]),
                         "rho": stat["rho"], "mape": stat["mape"], "median_ratio": stat["median_ratio"],
                         "scaled_abs_err": stat["scaled_abs_err"], "rho_mem": stat["rho_mem"],
                         "rho_tc_shapes": shapes.loc[op, "rho"] if op in shapes.index else float("nan"),
                         "seconds_mape": stat["seconds_mape"], "seconds_median_ratio": stat["seconds_median_ratio"],
                         "seconds_rho": stat["seconds_rho"]})
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    body = "".join("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row) + " |\n"
                   for row in frame.itertuples(index=False))
    return header + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the Markdown table here")
    parser.add_argument("--gemm", action="store_true", help="the dense GEMM CSVs (default: the convolutions)")
    parser.add_argument("--no-split-k", action="store_true", help="model without split-K (sensitivity)")
    parser.add_argument("--dgrad", choices=DGRAD, default=DGRAD[0], help="how strided δ kernels run")
    parser.add_argument("--no-cuda-core-fallback", action="store_true",
                        help="cost fp16 layers of non-multiple-of-8 shapes on tensor cores too")
    parser.add_argument("--no-winograd", action="store_true",
                        help="cost forwards DeepBench ran by Winograd as im2col GEMMs too")
    args = parser.parse_args(argv)
    overrides = GpuOverrides(split_k=not args.no_split_k, dgrad=args.dgrad,
                             cuda_core_fallback=not args.no_cuda_core_fallback, winograd=not args.no_winograd)
    text = markdown(summary(gemm_csvs() if args.gemm else conv_csvs(), overrides))
    if args.out:
        atomic_write_text(args.out, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
