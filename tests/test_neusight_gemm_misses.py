"""benchmarks/bench_neusight_gemm_misses.py: its tables by hand count on files of a few rows."""

from __future__ import annotations

import pandas as pd
import pytest
from benchmark_scripts import load_benchmark

from archsim.validation.neusight import parse_neusight_csv

HEADER = "OPName,Latency,Device,B,M,N,K\n"  # NeuSight's columns: N the reduction, K the output columns


@pytest.fixture(scope="module")
def misses():
    return load_benchmark("bench_neusight_gemm_misses")


def frame(misses, rows: list[str]) -> pd.DataFrame:
    return misses.with_rates(parse_neusight_csv(HEADER + "\n".join(rows) + "\n").frame)


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_reduction_fraction_is_the_long_rows_rate_over_the_short_rows_median(misses):
    # archsim's M = 2048, N = 1024 (2^21 outputs: large); reductions 1,024, 2,048 and 32,768
    rows = ["linear,1.0,Tesla P100-PCIE-16GB,1,2048,1024,1024",  # 2·2048·1024·1024 = 4.295 GFLOP in 1 ms
            "linear,1.6,Tesla P100-PCIE-16GB,1,2048,2048,1024",  # 8.590 GFLOP in 1.6 ms: 5.369 TFLOP/s
            "linear,100,Tesla P100-PCIE-16GB,1,2048,32768,1024"]  # 137.4 GFLOP in 100 ms: 1.374 TFLOP/s
    table = misses.reduction_table(frame(misses, rows))
    line = cells(next(row for row in table if row.startswith("| p100-pcie")))
    flops = 2 * 2048 * 1024 * 1024
    reference = (flops / 1e-3 + 2 * flops / 1.6e-3) / 2 / 1e12  # the median of 4.295 and 5.369: 4.83
    long = 32 * flops / 0.1 / 1e12
    assert line[1] == f"{reference:.2f}" == "4.83"
    assert line[2:5] == ["—", "—", f"{long / reference:.2f} (1)"] == ["—", "—", "0.28 (1)"]


def test_footprint_table_bins_by_the_x_operand_bytes(misses):
    # K = 32,768 rows: x = M·K·4 bytes = 256 MiB (M = 2048) and 512 MiB (M = 4096); one reference row
    rows = ["linear,1.0,Tesla P100-PCIE-16GB,1,2048,1024,1024",  # reference 4.295 TFLOP/s
            "linear,200,Tesla P100-PCIE-16GB,1,2048,32768,1024",  # 137.4 GFLOP in 200 ms: 0.687 → 0.16
            "linear,200,Tesla P100-PCIE-16GB,1,4096,32768,1024"]  # 274.9 GFLOP in 200 ms: 1.374 → 0.32
    table = misses.footprint_table(frame(misses, rows), "p100-pcie-16gb")
    last = cells(table[-1])
    assert last == ["≥ 30,522", "—", "0.16 (1)", "0.32 (1)", "—"]


def test_narrow_outputs_scale_to_a_128_column_tile(misses):
    # archsim's M = 512, N = 64 output columns, K = 512: 2·8·512·64·512 = 268.4 MFLOP in 0.2 ms
    rows = ["bmm,0.2,Tesla P4,8,512,512,64"]
    table = misses.narrow_table(frame(misses, rows))
    line = cells(next(row for row in table if row.startswith("| p4")))
    rate = 2 * 8 * 512 * 64 * 512 / 0.2e-3 / 1e12  # 1.342 TFLOP/s
    assert line[1] == f"{rate:.2f}" == "1.34"
    assert line[5] == f"{rate * 2:.2f}" == "2.68"  # × 128 / 64


def test_spread_is_each_rows_distance_from_its_shapes_median_rate(misses):
    # one shape (M = N = 512, K = 64) at three batches, each B·M·N ≥ 2^22, run at 4, 5 and 8 TFLOP/s
    flops = {b: 2 * b * 512 * 512 * 64 for b in (16, 32, 64)}
    rates = {16: 4e12, 32: 5e12, 64: 8e12}
    rows = [f"bmm,{flops[b] / rates[b] * 1e3!r},Tesla T4,{b},512,64,512" for b in (16, 32, 64)]
    table = misses.spread_table(frame(misses, rows))
    line = cells(next(row for row in table if row.startswith("| t4")))
    # deviations from the median 5: 20 %, 0 %, 60 % → median 20.0, mean 26.7, one row of three above 25 %
    assert line[1:6] == ["1", "3", "20.0", "26.7", "33 %"]
