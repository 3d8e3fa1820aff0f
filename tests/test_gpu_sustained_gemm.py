"""benchmarks/gpu_sustained_gemm.py on the CPU (tiny shape): the file it writes has the columns and phases its
docstring names, a burst row, then back-to-back windows in time order (the GPU numbers need a GPU)."""

from __future__ import annotations

import pytest
from benchmark_scripts import load_benchmark


def test_tiny_cpu_run_writes_burst_and_sustained_rows(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    module = load_benchmark("gpu_sustained_gemm")
    out = tmp_path / "sustained.csv"
    assert module.main(["--device", "cpu", "--tiny", "--seconds", "0.2", "--window", "2", "--out", str(out)]) == 0
    lines = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    header, rows = lines[0].split(","), [dict(zip(lines[0].split(","), line.split(","))) for line in lines[1:]]
    assert header == list(module.COLUMNS)
    assert "# complete: true" in out.read_text()
    assert [r["phase"] for r in rows][:2] == ["burst", "sustained"]
    times = [float(r["t_seconds"]) for r in rows if r["phase"] == "sustained"]
    assert times == sorted(times) and times[0] < 0.2
    assert all(float(r["tflops"]) > 0 for r in rows if r["phase"] in ("burst", "sustained"))
