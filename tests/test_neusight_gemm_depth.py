"""benchmarks/bench_neusight_gemm_depth.py: the rate table by hand count on a three-row file."""

from __future__ import annotations

from benchmark_scripts import load_benchmark

HEADER = "OPName,Latency,Device,B,M,N,K\n"


def test_rates_are_flops_over_latency_for_large_outputs_only(tmp_path):
    depth = load_benchmark("bench_neusight_gemm_depth")
    # NeuSight's columns: B, M, N (the reduction), K (output columns)
    rows = ["bmm,2.0,Tesla P100-PCIE-16GB,256,512,64,512",  # 2·256·512·512·64 = 8.59 GFLOP in 2 ms
            "bmm,4.0,Tesla P100-PCIE-16GB,256,512,64,512",  # … in 4 ms
            "bmm,0.01,Tesla P100-PCIE-16GB,8,128,64,128",  # 2^17 outputs: too few, left out
            "bmm,2.0,Tesla P100-PCIE-16GB,256,512,512,64"]  # a 512 × 64 output: not a large one, left out
    (tmp_path / "bmm.csv").write_text(HEADER + "\n".join(rows) + "\n")
    table = depth.depth_table(tmp_path)
    line = next(row for row in table.splitlines() if row.startswith("| p100-pcie"))
    flops = 2 * 256 * 512 * 512 * 64
    rate = (flops / 2e-3 + flops / 4e-3) / 2 / 1e12  # the median of the two rows' rates: 3.22 TFLOP/s
    # P100 PCIe: 56 SMs × 64 FP32 lanes × 2 × 1,303 MHz boost (9.34), × 1,126 MHz base (8.07)
    assert line == f"| p100-pcie-16gb | {rate:.2f} (2) | 9.34 | 8.07 |"
