"""benchmarks/bench_neusight_bmm_structure.py: the traffic ratio and the narrow split by hand count."""

from __future__ import annotations

import pytest
from benchmark_scripts import load_benchmark

from archsim.devices.kernel_constants import FITTED
from archsim.validation.neusight import parse_neusight_csv

HEADER = "OPName,Latency,Device,B,M,N,K\n"  # NeuSight's columns: N the reduction, K the output columns


@pytest.fixture(scope="module")
def structure():
    return load_benchmark("bench_neusight_bmm_structure")


def test_traffic_ratio_is_hbm_seconds_over_main_loop_seconds(structure):
    # archsim's M = 512, N = 256, K = 128 (NeuSight's N = 128, K = 256), 8 of them on the A100 PCIe 40 GB
    frame = parse_neusight_csv(HEADER + "bmm,1.0,NVIDIA A100-PCIE-40GB,8,512,128,256\n").frame
    memory = 4 * 8 * (512 * 128 + 128 * 256 + 512 * 256) / 1555e9  # bytes of A, B, C at 1,555 GB/s
    loop = 2 * 8 * 512 * 256 * 128 / (108 * 64 * 2 * 1.41e9 * FITTED.gemm)  # 250 W holds the boost clock
    assert structure.traffic_ratio(frame)[0] == pytest.approx(memory / loop, rel=1e-9)


def test_narrow_rows_are_those_with_an_output_side_under_128(structure):
    # archsim's N = 64 (narrow) and N = 256: one row each side of the split, both in "rows"
    text = structure.report(parse_neusight_csv(HEADER + "bmm,1.0,Tesla T4,8,512,128,64\n"
                                               "bmm,1.0,Tesla T4,8,512,128,256\n").frame)
    line = next(row for row in text.splitlines() if row.startswith("| t4-16gb |"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert [cells[1], cells[4], cells[7]] == ["2", "1", "1"]
