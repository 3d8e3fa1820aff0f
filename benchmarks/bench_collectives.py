"""archsim's collectives (archsim/collectives.py) against every nccl-tests table shipped and the cited
multi-server and NVLS figures.

    .venv/bin/python benchmarks/bench_collectives.py

Per table (tests/data/e2e/nccl_allreduce: all-reduce on 2–8 A100s and V100s of one server): the sizes
from 16 MB, the mean and largest |error| of the modelled time and whether the GPU count was fitted
(archsim/training/fitted.py: 2, 4 and 8 GPUs) or held out. Then each cited figure
(tests/data/nccl_multinode.csv, with its source): measured and modelled bus bandwidth and the error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices.catalog import gpu
from archsim.training import fitted
from archsim.training.nccl_cited import predicted_bus_gbytes_per_s, read_cited
from archsim.training.nccl_fit import read_nccl_tables, relative_errors

TABLES = ROOT / "tests" / "data" / "e2e" / "nccl_allreduce"


def main() -> int:
    print("nccl-tests all-reduce, one server (sizes ≥ 16 MB): GPUs, fitted?, mean |error|, max |error|")
    for name in ("a100", "v100"):
        device = gpu("a100-80gb" if name == "a100" else "v100-32gb")
        for n, table in sorted(read_nccl_tables(TABLES, name).items()):
            errors = np.abs(relative_errors(table, fitted.nvlink_group(device, tuple(range(n)))))
            role = "fit " if n in fitted.NCCL_FIT_GPUS else "held"
            print(f"  {name} {n} GPUs {role}: {errors.mean():6.1%} {errors.max():6.1%}")
    print("cited figures (tests/data/nccl_multinode.csv): measured vs modelled bus bandwidth, GB/s")
    for run in read_cited(ROOT / "tests" / "data" / "nccl_multinode.csv"):
        model = predicted_bus_gbytes_per_s(run)
        print(f"  {run.source:24s} {run.servers}×{run.gpus_per_server} {run.gpu:14s} {run.algorithm:5s} "
              f"{run.bus_gbytes_per_s:6.1f} {model:6.1f} {model / run.bus_gbytes_per_s - 1:+6.1%} ({run.expected})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
