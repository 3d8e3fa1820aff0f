"""GPU validation's committed measurements (issue 9, part 3): archsim's own GPU CSVs when any, and
DeepBench's published kernels converted to CSVs — their metadata and coverage, and the committed
reports' statistics against an independent Spearman (pandas ranks)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
from test_gpu_validation import independent_spearman

from archsim.validation.gpu_compare import below_bar, tensor_core_subset
from archsim.validation.gpu_csv import OPS, read_kernel_csv
from archsim.validation.gpu_study import run_study
from archsim.workload import load_network

ROOT = Path(__file__).resolve().parents[1]


# -- committed measurements --------------------------------------------------------------------------
COMMITTED = sorted((ROOT / "benchmarks" / "results").glob("gpu_kernels_*.csv"))  # gpu_validate.py's (not gpu_train_*)
NO_COMMITTED = pytest.mark.skip(reason="no measured GPU CSV under benchmarks/results/ yet: run "
                                       "benchmarks/gpu_validate.py on a CUDA machine and commit its output")


@pytest.mark.long
@pytest.mark.parametrize("path", COMMITTED or [pytest.param(None, marks=NO_COMMITTED)],
                         ids=[p.name for p in COMMITTED] or ["none"])
def test_committed_gpu_measurements(path):
    table = read_kernel_csv(path)
    for key in ("gpu", "sm_count", "torch", "cuda", "dtype", "repeats", "networks", "batches"):
        assert table.meta.get(key), f"{path.name}: metadata '{key}' missing"
    frame = table.frame
    assert set(frame.op) <= set(OPS) and (frame.measured_ms > 0).all()
    if table.meta.get("complete") == "true":
        ops = set(frame.op)
        for network in table.meta["networks"].split(","):
            for layer in load_network(network).layers:
                if layer.kind in ("conv", "fc"):
                    for batch in map(int, table.meta["batches"].split(",")):
                        have = set(frame[(frame.network == network) & (frame.layer == layer.name) &
                                         (frame.batch == batch)].op)
                        assert have == ops, f"{network}/{layer.name} batch {batch}: {sorted(ops - have)} missing"
    study = run_study([table])
    per_op = study.stats[study.stats.group == "op"].set_index("op")
    for op, part in study.joined[study.joined.op.isin(["F", "D", "G"])].groupby("op"):
        assert per_op.loc[op, "rho"] == pytest.approx(independent_spearman(part.modeled_ms, part.measured_ms))
        ratios = list(part.modeled_ms / part.measured_ms)
        assert per_op.loc[op, "median_ratio"] == pytest.approx(statistics.median(ratios))
    summary = path.with_name(path.name.replace("gpu_kernels_", "gpu_validation_")).with_suffix(".md")
    assert summary.is_file(), f"the report {summary.name} is not committed beside {path.name}"
    text = summary.read_text(encoding="utf-8")
    assert all(f"{rho:.3g}" in text for rho in per_op.rho), "the committed report is stale: regenerate it"
    if not below_bar(study.stats).empty:
        assert re.search(r"below the ρ ≥ 0\.9 bar", text)


# -- DeepBench's published kernels (measured by others, committed as converted CSVs) ----------------
DEEPBENCH = sorted((ROOT / "benchmarks" / "results").glob("deepbench_*_kernels.csv"))


def test_deepbench_v100_rows_are_the_published_ones():
    """Spot values as DeepBench's V100 sheet lists them (fp16 inputs, mixed math): VGG-like layers
    224×224×3→64 at N = 8 (forward 0.213 ms, wrt parameters 0.325 ms, no wrt-inputs time) and
    112×112×64→128 at N = 16 (0.355, 0.374, 0.423 ms), all 3×3, pad 1, stride 1."""
    table = read_kernel_csv(ROOT / "benchmarks" / "results" / "deepbench_v100_kernels.csv")
    frame = table.frame

    def times(h, c, k, batch):
        rows = frame[(frame.ifmap_h == h) & (frame.channels == c) & (frame.filters == k) & (frame.filter_h == 3)
                     & (frame.padding == 1) & (frame.stride == 1) & (frame.batch == batch)]
        return dict(zip(rows.op, rows.measured_ms))

    assert times(224, 3, 64, 8) == {"F": 0.213, "G": 0.325}
    assert times(112, 64, 128, 16) == {"F": 0.355, "D": 0.374, "G": 0.423}
    assert table.meta["gpu"] == "NVIDIA V100" and table.meta["sm_count"] == "80" and "DeepBench" in table.meta["source"]
    # the GEMM sheet's first row: DeepSpeech M = 1760, N = 16, K = 1760, no transposes, 0.02 ms
    gemm = read_kernel_csv(ROOT / "benchmarks" / "results" / "deepbench_v100_gemm_kernels.csv").frame
    first = gemm[(gemm.filters == 1760) & (gemm.channels == 1760) & (gemm.batch == 16) & gemm.layer.str.endswith("_nn")]
    assert first.measured_ms.tolist() == [0.02] and first.op.tolist() == ["F"]


@pytest.mark.parametrize("path", DEEPBENCH, ids=[p.name for p in DEEPBENCH])
def test_committed_deepbench_comparison_is_current(path):
    """The committed Markdown beside each converted CSV states the ρ an independent computation gets."""
    study = run_study([read_kernel_csv(path)])
    per_op = study.stats[study.stats.group == "op"].set_index("op")
    for op, part in study.joined[study.joined.op.isin(["F", "D", "G"])].groupby("op"):
        assert per_op.loc[op, "rho"] == pytest.approx(independent_spearman(part.modeled_ms, part.measured_ms))
        shapes = part[part.tensor_core_shape]
        subset = tensor_core_subset(study.joined).set_index("op")
        assert subset.loc[op, "rho"] == pytest.approx(independent_spearman(shapes.modeled_ms, shapes.measured_ms))
    text = path.with_name(path.name.replace("_kernels", "_validation")).with_suffix(".md").read_text(encoding="utf-8")
    assert all(f"{rho:.3g}" in text for rho in per_op.rho), "the committed report is stale: regenerate it"
