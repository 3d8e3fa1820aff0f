"""PE utilization at a device file's ``macs_per_pe`` rate: ``gemm``'s ``utilization`` and ``cost``'s
``F/G/D_utilization`` are documented as fractions 0–1 (docs/formats.md, "Output columns": MACs / (cycles × PEs)
of an array doing one MAC a PE a cycle). On arrays that run fp8 at 2 MACs per PE per cycle the PEs' capacity
is 2 MACs a cycle, so the busy share is MACs / (cycles × PEs × rate); dividing by one MAC read 1.69 for a
GEMM that kept 84% of the fp8 PEs busy, and fed the multistream co-run model a share above 1.
Reference: SCALE-Sim's ws fold count by hand, R + R + C + M − 2 cycles a fold (the last index counted once:
folds · per fold − 1), the reduction packed r deep at rate r (docs/formats.md, ``macs_per_pe``)."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import cli_json
from device_files import device_toml, write_file

import archsim

FC = "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type\n{}"


def _chip(tmp_path):
    """One 128 × 128 ws array at 1 GHz that runs fp8 at 2 MACs per PE per cycle."""
    text = device_toml(name="fp8chip", arrays=1, rows=128, cols=128, dataflow="ws", clock_mhz=1000, sram_kib=24576,
                       hbm_gib=64, hbm_gbps=1600, intra_gbps=400)
    return write_file(tmp_path, "fp8chip.toml", text.replace('dataflow = "ws"\n', 'dataflow = "ws"\nmacs_per_pe = { fp8 = 2 }\n'))


# (m, k, n) = (2048, 2048, 8192): at 2 MACs a PE the reduction packs to 1024, 8 row folds × 64 column folds = 512
# folds of 128 + 128 + 128 + 2048 − 2 = 2430 cycles; MACs 2048 · 2048 · 8192; capacity 128² PEs × 2 MACs a cycle.
M, K, N = 2048, 2048, 8192
CYCLES = 512 * 2430 - 1
SHARE = M * K * N / (CYCLES * 128 * 128 * 2)  # 0.8428…


def test_gemm_utilization_at_the_fp8_rate_is_the_share_of_the_pes_capacity(tmp_path, capsys):
    chip = _chip(tmp_path)
    row = cli_json(["gemm", "--m", str(M), "--k", str(K), "--n", str(N), "--config", str(chip), "--dtype", "fp8"],
                   capsys)["rows"][0]
    assert row["cycles"] == CYCLES
    assert row["utilization"] == pytest.approx(SHARE, rel=1e-9)
    assert row["utilization"] <= 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = archsim.gemm(m=M, k=K, n=N, config=chip, dtype="fp8")
    assert api.table["utilization"].tolist() == pytest.approx([SHARE], rel=1e-9)


def test_cost_utilization_at_the_fp8_rate_is_a_fraction(tmp_path, capsys):
    chip = _chip(tmp_path)
    # an fc layer of 8192 outputs over 2048 inputs at batch 2048: F is the GEMM above
    net = write_file(tmp_path, "fc.csv", FC.format(f"fc1,1,1,1,1,{K},{N},1,fc\n"))
    doc = cli_json(["cost", str(net), "--config", str(chip), "--dtype", "fp8", "--batch", str(M), "--format", "json"],
                   capsys)
    row = doc["rows"][0]
    assert row["F_cycles"] == CYCLES
    assert row["F_utilization"] == pytest.approx(SHARE, rel=1e-9)
    for kind in "FGD":
        assert 0.0 <= row[f"{kind}_utilization"] <= 1.0


def test_a_rate_of_one_keeps_scalesims_utilization(tmp_path, capsys):
    chip = _chip(tmp_path)
    # fp16 runs at 1 MAC a PE: 16 row folds × 64 = 1024 folds of 2430 cycles
    row = cli_json(["gemm", "--m", str(M), "--k", str(K), "--n", str(N), "--config", str(chip), "--dtype", "fp16"],
                   capsys)["rows"][0]
    assert row["cycles"] == 1024 * 2430 - 1
    assert row["utilization"] == pytest.approx(M * K * N / ((1024 * 2430 - 1) * 128 * 128), rel=1e-9)


def test_multistream_idle_share_at_the_fp8_rate(tmp_path, capsys):
    """One fc layer: F and G are both the (2048, 2048, 8192) GEMM above (G: (C, batch, M)), run one after the other
    (G needs F's output), so the PEs' idle share is 1 − each one's busy share, the same for both."""
    chip = _chip(tmp_path)
    net = write_file(tmp_path, "fc.csv", FC.format(f"fc1,1,1,1,1,{K},{N},1,fc\n"))
    doc = cli_json(["schedule", str(net), "--policy", "multistream", "--config", str(chip), "--dtype", "fp8",
                    "--batch", str(M), "--format", "json"], capsys)
    row = doc["rows"][0]
    assert row["makespan"] == pytest.approx(2 * CYCLES)
    assert row["idle_pe_fraction"] == pytest.approx(1 - SHARE, rel=1e-9)
