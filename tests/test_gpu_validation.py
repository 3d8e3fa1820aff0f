"""GPU validation (issue 9, part 3): the statistics, the measured-CSV reader and its join with the
model, the streams summary, the report and CLI. The GPU-as-arrays model is tested in
test_gpu_arrays.py, the committed measurements in test_gpu_committed.py, the timing script that
writes such CSVs in test_gpu_timing_script.py.

References are independent of the code under test: Spearman by the rank-difference formula and by
pandas ranks, cycles from SCALE-Sim's per-fold formula worked by hand or by brute force.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archsim.devices.gpu_lookup import resolve_gpu
from archsim.errors import InputError
from archsim.validation.gpu import gpu_arrays, model_kernels
from archsim.validation.gpu_algorithms import tensor_core_shape
from archsim.validation.gpu_compare import (
    below_bar,
    compare,
    concurrency,
    concurrency_summary,
    ratio_errors,
    spearman,
    tensor_core_subset,
)
from archsim.validation.gpu_csv import COLUMNS, OPS, format_kernel_csv, parse_kernel_csv, read_kernel_csv
from archsim.validation.gpu_report import markdown_report, write_markdown, write_report
from archsim.validation.gpu_study import GpuOverrides, run_study, slug
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

    if any(name == "validate-gpu" for name, _, _ in cli.REGISTRY):
        return cli.main(["validate-gpu", *argv])
    parser = argparse.ArgumentParser()
    validate_gpu.add_arguments(parser)
    try:
        return validate_gpu.run(parser.parse_args(argv))
    except InputError as exc:
        print(f"archsim validate-gpu: error: {exc}", file=sys.stderr)
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
