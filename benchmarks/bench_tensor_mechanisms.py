"""Which of the kernel model's GEMM mechanisms the tensor-core path should use, decided on vTrain's A100 runs.

    python benchmarks/bench_tensor_mechanisms.py [--variants base,split-k,...]   # under a minute per variant

The fp32 (SIMT) path of :mod:`archsim.devices.kernels` has split-K, C written in an epilogue after the
main loop, and several small tiles per SM; the tensor-core path (:func:`~archsim.devices.kernels.tensor_path`)
has none of them. For each variant below the tensor-core path gains the named mechanisms, the four
tensor-core constants are refitted on the 16-layer runs only (:func:`archsim.training.calibrate.fit_kernels`),
and the script prints the fit MAPE, the held-out MAPE (12-, 20- and 24-layer runs, never fitted) and,
as a check only, the time MAPE of the one-GPU Hopper iterations in ``benchmarks/results/`` with those
constants (nothing is fitted on them):

* ``base``: the path as it is (tensor tiles, one per SM, no split-K, C's write inside the roofline);
* ``split-k``: + split-K over :data:`~archsim.devices.kernels.SPLITS` (a reduction kernel per split GEMM);
* ``epilogue``: + C written after the main loop;
* ``split-k+epilogue``: both;
* ``simt-mechanisms``: both, and several tiles per SM as the SIMT path
  (:data:`~archsim.devices.kernels.REFERENCE_TILE_AREA` outputs per SM);
* ``always-fed``: no operand-feed limit at all (what the datasheet L2 feed is worth on these runs);
* ``fitted-feed``: the feed of the SIMT path instead of the L2's, ``constants.feed`` (45.1, fitted on
  NeuSight's fp32 kernels), for every GPU.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.devices import kernel_ops, kernels
from archsim.training import fitted
from archsim.training.calibrate import fit_kernels
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.measured import predict, read_measured
from benchmarks.model_swap import swapped

VARIANTS = {
    "base": {},
    "split-k": {"splits": kernels.SPLITS},
    "epilogue": {"epilogue": True},
    "split-k+epilogue": {"splits": kernels.SPLITS, "epilogue": True},
    "simt-mechanisms": {"splits": kernels.SPLITS, "epilogue": True, "resident": kernels.REFERENCE_TILE_AREA},
    "always-fed": {"needed_reuse": 0.0},
    "fitted-feed": {"needed_reuse": None},
}
HOPPER = (("h100-80gb-hbm3", "h100_1gpu"), ("h200", "h200_1gpu"))  # measured slug, cluster file: checks only


def mape(predictions) -> float:
    return float(np.mean([abs(p.milliseconds / p.run.milliseconds - 1) for p in predictions]))


def run_variant(name: str, runs) -> str:
    original = kernels.tensor_path
    change = VARIANTS[name]

    def tensor_path(*args, **kwargs):
        return replace(original(*args, **kwargs), **change)

    with swapped((kernel_ops,), "tensor_path", tensor_path):
        constants, fit_loss = fit_kernels(runs)
        predicted = predict(runs, single_node(), efficiency=constants)
        held = [p for p in predicted if not fitted.is_fit_run(p.run.layers)]
        checks = []
        for slug, cluster in HOPPER:
            measured = read_measured(ROOT / "benchmarks" / "results" / f"gpu_train_measured_{slug}.csv")
            hopper = predict(measured, load_gpu_cluster(ROOT / "configs" / "clusters" / f"{cluster}.toml"),
                             efficiency=constants)
            checks.append(f"{slug} {mape(hopper):.1%}")
    return (f"{name:18s} fit {fit_loss:.2%} (closed form), held-out {mape(held):.3%} ({len(held)} runs); "
            f"gemm {constants.gemm:.3f}, memory {constants.memory:.3f}, launch {constants.launch_s * 1e6:.1f} µs, "
            f"host {constants.host_s * 1e6:.1f} µs; Hopper check (not fitted): {', '.join(checks)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = parser.parse_args(argv)
    names = [n for n in args.variants.split(",") if n]
    if unknown := [n for n in names if n not in VARIANTS]:
        parser.error(f"unknown variant(s) {', '.join(unknown)}")
    runs = read_measured(ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv")
    for name in names:
        print(run_variant(name, runs), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
