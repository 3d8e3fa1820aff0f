"""GPU validation (issue 9, part 3): the measured-CSV reader, the GPU-as-arrays model, the statistics,
the report and CLI, and the committed measurements (archsim's own when any, DeepBench's converted
ones). The timing script that writes such CSVs is tested in test_gpu_timing_script.py.

References are independent of the code under test: Spearman by the rank-difference formula and by
pandas ranks, cycles from SCALE-Sim's per-fold formula worked by hand or by brute force, peak
throughput from NVIDIA's datasheets.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import statistics
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archsim.array.config import ArrayConfig
from archsim.array.costing import op_cycles as archsim_op_cycles
from archsim.errors import InputError
from archsim.lowering import lower_network
from archsim.validation.gpu import (KNOWN_GPUS, GpuSpec, find_gpu, gemm_cycles, gpu_arrays, model_kernels,
                                    op_cycles, resolve_gpu, tensor_core_shape)
from archsim.validation.gpu_compare import (below_bar, compare, concurrency, concurrency_summary, ratio_errors,
                                            spearman, tensor_core_subset)
from archsim.validation.gpu_csv import COLUMNS, OPS, format_kernel_csv, parse_kernel_csv, read_kernel_csv
from archsim.validation.gpu_report import markdown_report, write_markdown, write_report
from archsim.validation.gpu_study import GpuOverrides, run_study, slug
from archsim.workload import load_network
from archsim.workload.layer import Layer

ROOT = Path(__file__).resolve().parents[1]
H100 = "NVIDIA H100 80GB HBM3"
HEADER = "network,layer,batch,op,measured_ms"


def csv_text(rows: list[str], meta: dict[str, str] | None = None, header: str = HEADER) -> str:
    meta = {"gpu": H100, "sm_count": "132", "dtype": "fp16"} if meta is None else meta
    return "".join(f"# {k}: {v}\n" for k, v in meta.items()) + header + "\n" + "\n".join(rows) + "\n"


def write_csv(tmp_path: Path, rows: list[str], name: str = "gpu_kernels_test.csv", **kwargs) -> Path:
    path = tmp_path / name
    path.write_text(csv_text(rows, **kwargs), encoding="utf-8")
    return path


def independent_spearman(x, y) -> float:
    """Pearson correlation of average ranks (pandas), not scipy."""
    rx = pd.Series(list(x), dtype=float).rank().to_numpy()
    ry = pd.Series(list(y), dtype=float).rank().to_numpy()
    return float(np.corrcoef(rx, ry)[0, 1])


def tiny_spec(sms: int, rows: int, cols: int, clock_hz: float = 1e9) -> GpuSpec:
    return GpuSpec("tiny", sms, 1, rows, cols, clock_hz, 1e12)


# -- statistics ------------------------------------------------------------------------------------
def test_spearman_of_a_known_permutation():
    # two adjacent swaps: Σd² = 4, ρ = 1 − 6·4 / (5·24) = 0.8
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 10, 100], [3, 4, 5]) == pytest.approx(1.0)  # ranks only, not values
    assert math.isnan(spearman([1, 2], [2, 1]))  # too few points
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))  # a constant side


def test_ratio_errors_by_hand():
    # ratios 3, 1.5, 1, 0.5 → median 1.25; |r − 1| = 2, .5, 0, .5 → median 0.5, mean 0.75;
    # |r/1.25 − 1| = 1.4, .2, .2, .6 → 0.4
    errors = ratio_errors([3, 3, 3, 3], [1, 2, 3, 6])
    assert errors["median_ratio"] == pytest.approx(1.25)
    assert errors["median_abs_err"] == pytest.approx(0.5)
    assert errors["mape"] == pytest.approx(0.75)
    assert errors["scaled_abs_err"] == pytest.approx(0.4)


def test_compare_groups_per_op_network_and_batch():
    rows = []
    modeled = {"F": [1, 2, 3, 4, 5, 6], "D": [6, 5, 4, 3, 2, 1], "G": [1, 2, 3, 4, 5, 6]}
    measured = [2, 1, 4, 3, 6, 5]
    for op in ("F", "D", "G"):
        for i in range(6):
            rows.append({"network": "a" if i < 3 else "b", "layer": f"l{i}", "batch": 1 if i % 2 else 8, "op": op,
                         "modeled_ms": modeled[op][i], "roofline_ms": modeled[op][i], "measured_ms": measured[i]})
    rows.append({"network": "a", "layer": "l0", "batch": 8, "op": "DG_serial", "modeled_ms": 1.0, "roofline_ms": 1.0,
                 "measured_ms": 99.0})
    stats = compare(pd.DataFrame(rows))
    per_op = stats[stats.group == "op"].set_index("op")
    # three adjacent swaps in 6: Σd² = 6, ρ = 1 − 36/210
    assert per_op.loc["F", "rho"] == pytest.approx(1 - 36 / 210)
    assert per_op.loc["D", "rho"] == pytest.approx(-(1 - 36 / 210))
    assert per_op.loc["F", "kernel_count"] == 6  # the DG_serial row is not a kernel of its own
    assert list(stats[stats.group == "op"].op) == ["F", "D", "G"]
    by_network = stats[(stats.group == "network×op") & (stats.op == "F")].set_index("network")
    assert by_network.loc["a", "rho"] == pytest.approx(independent_spearman([1, 2, 3], [2, 1, 4]))
    assert set(stats[stats.group == "batch×op"].batch) == {"1", "8"}
    assert list(below_bar(stats).op) == ["F", "D", "G"]  # 0.83, −0.83, 0.83 all miss 0.9


def test_tensor_core_subset_drops_other_shapes_and_counts_them():
    """Layers 0 and 1 are not tensor-core shapes; the subset ρ is over layers 2–6 alone."""
    modeled = [9, 8, 1, 2, 3, 4, 5]
    measured = [1, 2, 1, 3, 2, 4, 5]
    rows = [{"gpu": "x", "network": "n", "layer": f"l{i}", "batch": 1, "op": "F", "modeled_ms": modeled[i],
             "roofline_ms": modeled[i], "measured_ms": measured[i], "tensor_core_shape": i >= 2} for i in range(7)]
    subset = tensor_core_subset(pd.DataFrame(rows)).set_index("op")
    assert subset.loc["F", "kernel_count"] == 5 and subset.loc["F", "left_out"] == 2
    assert subset.loc["F", "rho"] == pytest.approx(independent_spearman(modeled[2:], measured[2:]))
    whole = compare(pd.DataFrame(rows), groupings=(("op",),)).set_index("op")
    assert whole.loc["F", "rho"] < subset.loc["F", "rho"]
    assert tensor_core_shape(Layer("c", "conv", 8, 8, 3, 3, 16, 64)) and not tensor_core_shape(
        Layer("c1", "conv", 8, 8, 3, 3, 3, 64))


def test_a_topology_file_beside_the_csv_names_the_layers(tmp_path):
    """Measurements of layers outside the shipped networks (DeepBench's) join to a topology file
    named in the network column and kept beside the CSV; a missing one is an error naming the line."""
    (tmp_path / "mine.csv").write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
        "Type, Inputs, Bias, Repeat,\nc1, 14, 14, 3, 3, 64, 64, 1, 1, conv, input, 0, 1,\n"
        "c2, 28, 28, 1, 1, 3, 64, 2, 0, conv, input, 0, 1,\n")
    path = write_csv(tmp_path, ["mine.csv,c1,8,F,0.05", "mine.csv,c2,8,F,0.02", "mine.csv,c1,8,G,0.06"],
                     header="network,layer,batch,op,measured_ms")
    joined = run_study([read_kernel_csv(path)]).joined.set_index(["layer", "op"])
    assert joined.loc[("c1", "F"), "macs"] == 8 * 14 * 14 * 3 * 3 * 64 * 64
    assert joined.loc[("c2", "F"), "macs"] == 8 * 14 * 14 * 3 * 64
    assert list(joined.tensor_core_shape) == [True, False, True]
    missing = write_csv(tmp_path, ["other.csv,c1,8,F,0.05"], name="gpu_kernels_missing.csv")
    with pytest.raises(InputError) as error:
        run_study([read_kernel_csv(missing)])
    assert error.value.where.field == "network" and error.value.where.line is not None


# -- GPU description → arrays ------------------------------------------------------------------------
@pytest.mark.parametrize("slug_, tflops", [("v100", 125), ("t4", 65), ("a100-40gb", 312), ("a100-80gb", 312),
                                           ("a10", 125), ("l4", 121), ("h100-sxm", 989.4), ("h100-pcie", 756),
                                           ("h200", 989.4)])
def test_known_gpus_reproduce_datasheet_dense_fp16_peaks(slug_, tflops):
    assert KNOWN_GPUS[slug_].peak_flops / 1e12 == pytest.approx(tflops, rel=0.01)


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A10", "a10"),
    ("Tesla V100-SXM2-16GB", "v100"), ("Tesla T4", "t4"), ("NVIDIA L4", "l4"), ("h100-sxm", "h100-sxm"),
    ("NVIDIA GeForce RTX 4090", None)])
def test_device_names_find_their_table_entry(name, expected):
    assert find_gpu(name) == expected


def test_gpu_maps_to_one_array_per_tensor_core_with_overrides():
    spec = resolve_gpu(H100)
    arrays = gpu_arrays(spec)
    assert (arrays.count, arrays.array.rows, arrays.array.cols, arrays.array.dataflow) == (528, 16, 32, "os")
    assert arrays.array.clock_hz == 1.83e9 and arrays.array.element_bytes == 2
    mig = resolve_gpu("NVIDIA A100-SXM4-80GB MIG 3g.40gb", sm_count=42, mma=(8, 32), clock_hz=1.2e9)
    assert (mig.arrays, mig.mma_rows, mig.mma_cols, mig.clock_hz) == (168, 8, 32, 1.2e9)
    assert resolve_gpu("Some future GPU", like="h100-sxm").sm_count == 132
    with pytest.raises(InputError) as info:
        resolve_gpu("NVIDIA GeForce RTX 4090")
    assert info.value.where.field == "gpu" and "--like" in str(info.value)
    with pytest.raises(InputError) as info:
        gpu_arrays(spec, dataflow="xs")
    assert info.value.where.field == "dataflow"
    with pytest.raises(InputError) as info:
        resolve_gpu(H100, sm_count=0)
    assert info.value.where.field == "sm_count"


def test_folds_are_dealt_to_arrays_in_waves():
    # os, 4×4 arrays: out 8×8 → 4 tiles, each R + C + K − 2 = 4 + 4 + 5 − 2 = 11 cycles.
    two = gpu_arrays(tiny_spec(2, 4, 4))
    cycles, busy, split = gemm_cycles([8], [5], [8], two)
    assert (cycles[0], busy[0], split[0]) == (2 * 11 - 1, 4 * 11, 1)
    # ws: folds ⌈K/R⌉·⌈N/C⌉ = 2·2 = 4 of 2R + C + M − 2 = 18 cycles; 3 arrays → 2 waves.
    ws = gpu_arrays(tiny_spec(3, 4, 4), dataflow="ws")
    assert gemm_cycles([8], [5], [8], ws)[0][0] == 2 * 18 - 1


def test_split_k_picks_the_cheapest_real_sub_gemms():
    # one 2×2 tile (m = n = 2), K = 8, 4 arrays of 2×2. By hand, s parts of ⌈8/s⌉ plus ⌈(s−1)·4 / (4·2)⌉ adds:
    # s=1: 2+2+8−2−1 = 9; s=2: 5+1 = 6; s=3: 4+1 = 5; s=4: 3+2 = 5 → s = 3 (first minimum), 5 cycles.
    arrays = gpu_arrays(tiny_spec(4, 2, 2))
    cycles, busy, split = gemm_cycles([2], [8], [2], arrays)
    assert (cycles[0], split[0]) == (5, 3)
    assert busy[0] == 3 * 5 + math.ceil(2 * 2 * 2 / 2)  # three 5-cycle sub-GEMMs + 8 adds on 2 lanes
    off = gpu_arrays(tiny_spec(4, 2, 2), split_k=False)
    assert gemm_cycles([2], [8], [2], off)[0][0] == 9


def test_one_array_reproduces_archsims_single_array_cost():
    arrays = gpu_arrays(tiny_spec(1, 16, 32), dataflow="os")
    ops = [op for item in lower_network(load_network("vgg16").only("conv", "fc"), 2, "exact", 2) for op in item.ops]
    expected = archsim_op_cycles(ops, ArrayConfig(16, 32, "os", element_bytes=2))
    np.testing.assert_array_equal(op_cycles(ops, arrays)[0], expected)


# -- the measured CSV and the join --------------------------------------------------------------------
def _vgg_rows(batch: int = 1, ms: float = 0.1) -> list[str]:
    return [f"vgg16,conv1_1,{batch},{op},{ms}" for op in OPS]


def test_model_costs_vgg16_conv1_1_on_an_h100_by_hand(tmp_path):
    table = read_kernel_csv(write_csv(tmp_path, _vgg_rows()))
    frame = model_kernels(table, gpu_arrays(resolve_gpu(H100))).set_index("op")
    # F = (224·224, 27, 64): ⌈50176/16⌉·⌈64/32⌉ = 6272 tiles, ⌈6272/528⌉ = 12 waves of 16+32+27−2 = 73
    assert frame.loc["F", "modeled_cycles"] == 12 * 73 - 1
    assert frame.loc["F", "modeled_ms"] == pytest.approx((12 * 73 - 1) / 1.83e9 * 1e3)
    # D (stride 1, first layer costed too) = (50176, 9·64, 3): 3136 tiles → 6 waves of 16+32+576−2
    assert frame.loc["D", "modeled_cycles"] == 6 * 622 - 1
    # G = (27, 50176, 64): 4 tiles ≪ 528 arrays → split-K, the brute-force best over s
    best = min(math.ceil(4 * s / 528) * (16 + 32 + math.ceil(50176 / s) - 2) - 1 + math.ceil((s - 1) * 27 * 64 / (528 * 32))
               for s in range(1, 529))
    assert frame.loc["G", "modeled_cycles"] == best < 16 + 32 + 50176 - 2 - 1
    assert frame.loc["DG_serial", "modeled_cycles"] == frame.loc["D", "modeled_cycles"] + best
    assert frame.loc["D", "modeled_cycles"] <= frame.loc["DG_concurrent", "modeled_cycles"] <= \
        frame.loc["DG_serial", "modeled_cycles"]
    # memory floor: input 224·224·3 + output 224·224·64 + weights 27·64 elements, 2 bytes, 3.35 TB/s
    assert frame.loc["F", "memory_ms"] == pytest.approx((150528 + 3211264 + 1728) * 2 / 3.35e12 * 1e3)
    assert frame.loc["F", "roofline_ms"] == max(frame.loc["F", "modeled_ms"], frame.loc["F", "memory_ms"])


@pytest.mark.parametrize("rows, header, field, line", [
    (["vgg16,conv1_1,1,F,0.1"], "network,layer,batch,op", "measured_ms", 4),
    (["vgg16,1,F,0.1,conv1_1"], "network,batch,op,measured_ms,layer", None, None),  # column order is free
    (["vgg16,conv1_1,1,F,abc"], HEADER, "measured_ms", 5),
    (["vgg16,conv1_1,1,F,0.1", "vgg16,conv1_1,1,F,-2"], HEADER, "measured_ms", 6),
    (["vgg16,conv1_1,0,F,0.1"], HEADER, "batch", 5),
    (["vgg16,conv1_1,1,B,0.1"], HEADER, "op", 5),
    (["vgg16,conv1_1,1,F,0.1", "vgg16,conv1_1,1,F,0.2"], HEADER, "op", 6),
    ([",conv1_1,1,F,0.1"], HEADER, "network", 5),
])
def test_reader_errors_name_line_and_field(tmp_path, rows, header, field, line):
    path = write_csv(tmp_path, rows, header=header)
    if field is None:
        assert len(read_kernel_csv(path).frame) == 1
        return
    with pytest.raises(InputError) as info:
        read_kernel_csv(path)
    assert (info.value.where.field, info.value.where.line, info.value.where.file) == (field, line, str(path))


@pytest.mark.parametrize("row, field, message", [
    ("vgg16,conv9_9,1,F,0.1", "layer", "no layer"),
    ("vgg16,relu1_1,1,F,0.1", "layer", "only conv and fc"),
    ("nonet,conv1_1,1,F,0.1", "network", "no shipped network"),
])
def test_join_errors_name_line_and_field(tmp_path, row, field, message):
    table = read_kernel_csv(write_csv(tmp_path, ["vgg16,conv1_1,1,F,0.1", row]))
    with pytest.raises(InputError) as info:
        model_kernels(table, gpu_arrays(resolve_gpu(H100)))
    assert (info.value.where.field, info.value.where.line) == (field, 6) and message in info.value.message


def test_join_rejects_a_shape_other_than_the_shipped_layer(tmp_path):
    header = HEADER + ",channels,filters"
    path = write_csv(tmp_path, ["vgg16,conv1_2,1,F,0.1,64,64", "vgg16,conv2_1,1,F,0.1,32,128"], header=header)
    with pytest.raises(InputError) as info:
        model_kernels(read_kernel_csv(path), gpu_arrays(resolve_gpu(H100)))
    assert (info.value.where.field, info.value.where.line) == ("channels", 6)


def test_study_needs_the_gpu_named(tmp_path):
    table = read_kernel_csv(write_csv(tmp_path, _vgg_rows(), meta={"dtype": "fp16"}))
    with pytest.raises(InputError) as info:
        run_study([table])
    assert info.value.where.field == "gpu"
    assert run_study([table], GpuOverrides(gpu=H100)).joined["gpu"].iloc[0] == "h100-80gb-hbm3"


def test_writer_and_reader_round_trip():
    meta = {"gpu": H100, "sm_count": 132, "method": "median: of repeats"}
    rows = [{"network": "vgg16", "layer": "fc8", "kind": "fc", "batch": 8, "op": "G", "measured_ms": 0.0123456789,
             "channels": 4096, "filters": 1000, "padding": 0, "repeats": 10, "inner": 50, "same_as": ""}]
    table = parse_kernel_csv(format_kernel_csv(meta, rows))
    assert table.meta == {"gpu": H100, "sm_count": "132", "method": "median: of repeats"}
    row = table.frame.iloc[0]
    assert (row.layer, row.batch, row.op, row.measured_ms, row.channels, row.line) == \
        ("fc8", 8, "G", pytest.approx(0.0123457), 4096, 5)  # 3 metadata lines, the header, then this row
    assert format_kernel_csv({}, []).strip() == ",".join(COLUMNS)
    assert slug("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"


# -- streams -----------------------------------------------------------------------------------------
def _stream_rows() -> list[str]:
    rows = []
    for layer, (d, g, serial, concurrent) in {"conv1_1": (1.0, 1.0, 2.0, 1.6), "conv1_2": (0.5, 0.5, 1.0, 1.0)}.items():
        rows += [f"vgg16,{layer},8,F,1.0", f"vgg16,{layer},8,D,{d}", f"vgg16,{layer},8,G,{g}",
                 f"vgg16,{layer},8,DG_serial,{serial}", f"vgg16,{layer},8,DG_concurrent,{concurrent}"]
    return rows


def test_stream_speedup_summary_by_hand(tmp_path):
    study = run_study([read_kernel_csv(write_csv(tmp_path, _stream_rows()))])
    streams = study.streams.set_index("layer")
    assert streams.loc["conv1_1", "speedup"] == pytest.approx(1.25)
    assert streams.loc["conv1_2", "speedup"] == pytest.approx(1.0)
    assert (streams["modeled_speedup"] >= 1).all()  # sharing the arrays never loses in the model
    summary = concurrency_summary(concurrency(study.joined))
    overall = summary[summary.network == "all"].iloc[0]
    assert overall.median_speedup == pytest.approx(1.125)
    assert overall["share_ge_1.05"] == 0.5
    assert overall.total_saving == pytest.approx(1 - 2.6 / 3.0)


# -- report and CLI ----------------------------------------------------------------------------------
def test_report_and_markdown_are_written(tmp_path):
    study = run_study([read_kernel_csv(write_csv(tmp_path, _stream_rows() + _vgg_rows(batch=1)))])
    html_path = write_report(study, tmp_path / "out" / "gpu.html", "archsim validate-gpu --csv x.csv")
    text = html_path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "plotly" in text.lower()
    for needle in ("forward (F)", "input gradient (D", "weight gradient (G)", "two CUDA streams",
                   "Spearman", "archsim validate-gpu --csv x.csv", "16×32 PEs"):
        assert needle in text, needle
    md = write_markdown(study, tmp_path / "gpu.md", "archsim validate-gpu --csv x.csv").read_text(encoding="utf-8")
    per_op = study.stats[study.stats.group == "op"]
    assert "## Per op type" in md and "| group |" in md and "## D ∥ G on two CUDA streams" in md
    assert all(f"{rho:.3g}" in md for rho in per_op.rho)
    assert not list(tmp_path.glob("out/*.tmp"))  # atomic: nothing half-written left behind
    assert markdown_report(study, "cmd").count("## Verdict") == 1


def run_cli(argv: list[str]) -> int:
    """``archsim validate-gpu …`` through archsim's CLI once registered, else through the command itself."""
    from archsim import cli
    from archsim.commands import validate_gpu

    if any(command.name == "validate-gpu" for command in cli._commands()):
        return cli.main(["validate-gpu", *argv])
    parser = argparse.ArgumentParser()
    validate_gpu.add_arguments(parser)
    try:
        return validate_gpu.run(parser.parse_args(argv))
    except InputError as exc:
        print(f"archsim: error: {exc}", file=sys.stderr)
        return 2


def test_cli_prints_statistics_and_writes_the_report(tmp_path, capsys):
    rows = []
    for batch, scale in ((1, 1.0), (8, 6.0)):
        for layer, ms in (("conv1_1", 0.05), ("conv1_2", 0.4), ("conv2_1", 0.2), ("fc6", 0.1), ("fc8", 0.01)):
            rows += [f"vgg16,{layer},{batch},{op},{ms * scale * f}" for op, f in (("F", 1), ("D", 1.2), ("G", 1.1))]
    path = write_csv(tmp_path, rows)
    report = tmp_path / "report.html"
    assert run_cli(["--csv", str(path), "--format", "csv", "--report", str(report)]) == 0
    out = capsys.readouterr().out
    stats = pd.read_csv(io.StringIO(out))
    per_op = stats[stats.group == "op"].set_index("op")
    joined = model_kernels(read_kernel_csv(path), gpu_arrays(resolve_gpu(H100)))
    for op in ("F", "D", "G"):
        part = joined[joined.op == op]
        assert per_op.loc[op, "rho"] == pytest.approx(independent_spearman(part.modeled_ms, part.measured_ms), abs=1e-9)
        assert per_op.loc[op, "kernel_count"] == 10
    assert report.is_file()
    assert run_cli(["--csv", str(path), "--show", "assumptions", "--format", "json", "--mma", "8x8"]) == 0
    notes = json.loads(capsys.readouterr().out)["rows"]
    assert any(row["item"] == "array per tensor core" and row["value"].startswith("8×8 PEs") for row in notes)
    assert run_cli(["--csv", str(tmp_path / "missing.csv")]) == 2
    assert "measured CSV not found" in capsys.readouterr().err


# -- committed measurements --------------------------------------------------------------------------
COMMITTED = sorted((ROOT / "benchmarks" / "results").glob("gpu_kernels_*.csv"))  # gpu_validate.py's (not gpu_train_*)
NO_COMMITTED = pytest.mark.skip(reason="no measured GPU CSV under benchmarks/results/ yet: run "
                                       "benchmarks/gpu_validate.py on a CUDA machine and commit its output")


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
