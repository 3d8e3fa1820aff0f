"""archsim beside the H200's measured tensor-core kernels (``benchmarks/bench_tensor_probe.py``) and the probe that
measures them (``benchmarks/gpu_tensor_probe.py``).

References: the committed probe CSV's own seconds (the bench must carry them unchanged), the MAPE recomputed here
from the bench's per-row CSV, two GEMMs of the grid priced by hand from datasheet figures (the H200's dense bf16
peak and HBM bandwidth) and the fitted constants as published in archsim/training/fitted.py (tile and HBM
fractions) and archsim/devices/kernel_constants.py (the launch of a kernel timed alone), and the probe's FLOP counts by the formulas of its docstring on a tiny CPU run.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

from archsim.devices.catalog import GPUS

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "benchmarks" / "results" / "gpu_tensor_probe_h200.csv"

# H200 SXM datasheet: 989.4 dense bf16 TFLOP/s on 132 SMs, 4.8 TB/s HBM3e; archsim's fitted constants as published:
# the vTrain A100 fit's tensor-tile fraction 0.824 and HBM fraction 0.808 (fitted.py), NeuSight's launch of a kernel
# timed alone, 16.0 µs (kernel_constants.FITTED)
PEAK, SMS, HBM = 989.4e12, 132, 4.8e12
ETA, MEMORY, LAUNCH = 0.824, 0.808, 16.0e-6


def probe_rows() -> list[dict[str, str]]:
    lines = [line for line in PROBE.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


def run_bench(tmp_path: Path, capsys) -> tuple[str, str, list[dict[str, str]]]:
    """(printed, written markdown, per-row CSV rows) of one run on the committed probe."""
    md, out = tmp_path / "t.md", tmp_path / "t.csv"
    assert load_benchmark("bench_tensor_probe").main(["--md", str(md), "--csv", str(out)]) == 0
    with out.open() as handle:
        return capsys.readouterr().out, md.read_text(), list(csv.DictReader(handle))


def table_mape(text: str, label: str) -> float:
    """The MAPE (a fraction) on the summary row ``label`` of the bench's table."""
    match = re.search(rf"^\| {re.escape(label)} \| (\d+) \| ([\d.]+)% \|", text, re.MULTILINE)
    assert match, label
    return float(match.group(2)) / 100


def test_bench_mape_is_the_mean_of_the_rows_errors(tmp_path, capsys):
    printed, written, rows = run_bench(tmp_path, capsys)
    measured = probe_rows()
    assert len(rows) == len(measured) == 106
    for row, probe in zip(rows, measured, strict=True):  # the measurement carried unchanged, row by row
        assert (row["section"], row["name"]) == (probe["section"], probe["name"])
        assert float(row["measured_s"]) == pytest.approx(float(probe["seconds"]), rel=1e-6)
    errors = [abs(float(r["predicted_s"]) / float(r["measured_s"]) - 1) for r in rows]
    for label, pick in (("all", rows), ("**gemm**", [r for r in rows if r["section"] == "gemm"]),
                        ("**flash_fwd**", [r for r in rows if r["section"] == "flash_fwd"]),
                        ("**flash_bwd**", [r for r in rows if r["section"] == "flash_bwd"]),
                        ("linear F", [r for r in rows if r["group"] == "linear F"])):
        mine = sum(abs(float(r["predicted_s"]) / float(r["measured_s"]) - 1) for r in pick) / len(pick)
        for text in (printed, written):
            assert table_mape(text, label) == pytest.approx(mine, abs=0.0006)  # printed to 0.1%
    assert table_mape(printed, "all") == pytest.approx(sum(errors) / len(errors), abs=0.0006)
    assert "## Per row" in written and written.count("\n| gemm |") == 52


def test_a_16384_cube_is_priced_as_whole_waves_of_128_tiles(tmp_path, capsys):
    # 16,384² outputs in 128×128 tiles: 16,384 tiles over 132 SMs = 124.1 → 125 waves, each a tile's
    # 2·128·128·16,384 FLOPs at one SM's share of 0.824 × peak (the 256×128 tile: 8,192 tiles in 63 waves of twice
    # the work, 126 of these; every tile of ≥ 128×128 is fed from L2 at Hopper's rate); A, B and C through HBM take
    # 3·16,384²·2 bytes / (0.808 × 4.8 TB/s) = 0.42 ms, under the 10.9 ms main loop; one launch
    waves = math.ceil(16384 * 16384 / (128 * 128) / SMS)
    hand = waves * 2 * 128 * 128 * 16384 / (PEAK / SMS * ETA) + LAUNCH
    assert waves == 125
    _, _, rows = run_bench(tmp_path, capsys)
    cube = next(r for r in rows if r["name"] == "square" and r["m"] == "16384")
    assert float(cube["predicted_s"]) == pytest.approx(hand, rel=1e-6)
    assert float(cube["predicted_s"]) == pytest.approx(10.88e-3, rel=1e-3)


def test_a_skinny_gemm_is_priced_as_its_hbm_bytes(tmp_path, capsys):
    # 16×8192 · 8192×8192: reading the 8,192² weight dominates; its whole traffic (A, B, C at 2 bytes) at 0.808 of
    # 4.8 TB/s is 34.6 µs, over the 64×64 tiles' 14.7 µs main loop (128 tiles in one wave at 32/43.2 of fed)
    hand = (16 * 8192 + 8192 * 8192 + 16 * 8192) * 2 / (HBM * MEMORY) + LAUNCH
    _, _, rows = run_bench(tmp_path, capsys)
    skinny = next(r for r in rows if r["name"] == "skinny" and r["m"] == "16")
    assert float(skinny["predicted_s"]) == pytest.approx(hand, rel=1e-6)


def test_the_model_has_no_gemm_layout_and_flash_dropout_costs_both_passes(tmp_path, capsys):
    _, _, rows = run_bench(tmp_path, capsys)
    by_shape: dict[tuple[str, ...], set[str]] = {}
    for r in rows:
        if r["section"] == "gemm":
            by_shape.setdefault((r["m"], r["k"], r["n"], r["count"]), set()).add(r["predicted_s"])
    assert all(len(p) == 1 for p in by_shape.values())  # fc2.F (nt) and fc1.D (nn) of one shape: one prediction
    named = {(r["section"], r["name"]): float(r["predicted_s"]) for r in rows}
    base, dropped = "b4_h16_s4096_d128_causal", "b4_h16_s4096_d128_causal_drop0.1"
    assert named["flash_fwd", dropped] > named["flash_fwd", base]  # a smaller tile and the mask
    # The backward keeps its 64 × 128 tile and adds the mask alone. By hand, s = 4,096 causal: query block i
    # (rows 64i … 64i + 63) meets key blocks 0 … ⌊i/2⌋, so Σ over i < 64 is 2 · (1 + … + 32) = 1,056 blocks of
    # 8,192 elements: 8,650,752 a head, 540,672 Philox calls of 29 + 48 instructions and 2 sign tests an element:
    # 58,933,248 a head, × 64 heads (batch 4 × 16), at 132 SMs × 64 integer results a clock (an H200).
    clock = GPUS["h200-141gb"].clock_hz
    added = 64 * (540_672 * 77 + 2 * 8_650_752) / (132 * 64 * clock)
    assert named["flash_bwd", dropped] - named["flash_bwd", base] == pytest.approx(added, rel=1e-4)


@pytest.mark.long
def test_tiny_cpu_probe_writes_its_columns_and_flops(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    probe = load_benchmark("gpu_tensor_probe")
    out = tmp_path / "tensor.csv"
    assert probe.main(["--device", "cpu", "--tiny", "--warmup", "1", "--repeats", "1", "--out", str(out)]) == 0
    meta = dict(line[2:].split(": ", 1) for line in out.read_text().splitlines() if line.startswith("# "))
    body = [line for line in out.read_text().splitlines() if line and not line.startswith("#")]
    rows = list(csv.DictReader(body))
    assert body[0].split(",") == ["section", "name", "dtype", "layout", "m", "k", "n", "count", "batch", "heads",
                                  "seq", "head_dim", "causal", "dropout", "flops", "seconds", "min_seconds",
                                  "max_seconds", "repeats"]
    assert len(rows) == 4 + 2 * 3  # the tiny grid: 4 GEMMs, 3 attention configurations each way
    assert meta["complete"] == "true" and meta["rows"] == "10 of 10"
    for r in rows:
        assert float(r["seconds"]) > 0 and r["dtype"] == "bf16"
        if r["section"] == "gemm":
            assert int(r["flops"]) == 2 * int(r["m"]) * int(r["k"]) * int(r["n"]) * int(r["count"])
        else:  # 4·s²·d·heads·batch forward, halved when causal; the backward 2.5 ×
            s, d, bh = int(r["seq"]), int(r["head_dim"]), int(r["heads"]) * int(r["batch"])
            forward = 4 * s * s * d * bh / (2 if r["causal"] == "true" else 1)
            assert int(r["flops"]) == (forward if r["section"] == "flash_fwd" else 2.5 * forward)
    assert {r["section"] for r in rows} == {"gemm", "flash_fwd", "flash_bwd"}
