"""``archsim gemm``'s chip column is added one level above ``array/`` (:func:`archsim.gemm_chip.with_chip_seconds`),
to whichever table the run returned: a frame, or the pandas-free rows of one GEMM on the analytic engine without a
clock (a device file always states one, so the command never reaches the second; a caller of the run may)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from device_files import device_toml

from archsim.array.gemm_run import run_gemm
from archsim.gemm_chip import with_chip_seconds
from archsim.rows import Rows

# 2 arrays of 16 × 16 (ws) at 1 GHz, HBM fast enough that the folds bind
CHIP = device_toml(name="Pair", arrays=2, rows=16, cols=16, dataflow="ws", clock_mhz=1000, sram_kib=96, hbm_gib=8,
                   hbm_gbps=1000, intra_gbps=100)


def test_the_chip_column_is_added_to_rows_and_frames_alike(tmp_path):
    """64 × 40 × 48 on 16 × 16 ws: ⌈40/16⌉ · ⌈48/16⌉ = 9 folds of 2·16 + 16 + 64 − 2 = 110 cycles, ⌈9/2⌉ = 5 waves
    on the file's 2 arrays, 549 cycles in SCALE-Sim's count: 549 ns at the file's 1 GHz, whether the run gave rows
    (no clock: the chip's own) or a frame (a clock of 1 GHz)."""
    chip = tmp_path / "pair.toml"
    chip.write_text(CHIP, encoding="utf-8")
    rows = run_gemm(m=64, k=40, n=48, array="16x16", dataflow="ws")
    frame = run_gemm(m=64, k=40, n=48, array="16x16", dataflow="ws", clock_ghz=1.0)
    assert isinstance(rows.table, Rows) and not isinstance(frame.table, Rows)
    rows = replace(rows, array=replace(rows.array, rows=16, cols=16))
    for done in (rows, frame):
        timed = with_chip_seconds(done, chip, engine="analytic", dtype=None, shapes=False)
        table = timed.table.frame() if isinstance(timed.table, Rows) else timed.table
        assert list(table.columns)[-1] == "chip_seconds"
        assert table["chip_seconds"].tolist() == [pytest.approx(549e-9, rel=1e-12)]
        assert timed.meta["chip_arrays"] == 2 and timed.meta["chip_clock_ghz"] == 1.0
    assert with_chip_seconds(frame, None, engine="analytic", dtype=None, shapes=False) is frame  # no file, no chip


def test_the_meta_names_the_array_the_chip_was_timed_at(tmp_path, capsys):
    """Failed before: ``gemm --config CHIP --array 8x8`` timed the chip's arrays at 8 × 8 but named them
    ``chip_array: 16x16``, the file's. By hand at 8 × 8 ws: ⌈40/8⌉ · ⌈48/8⌉ = 30 folds of 2·8 + 8 + 64 − 2 = 86
    cycles, 15 waves on 2 arrays, 15 · 86 − 1 = 1289 cycles at 1 GHz."""
    import json

    from archsim.cli import main

    chip = tmp_path / "pair.toml"
    chip.write_text(CHIP, encoding="utf-8")
    assert main(["gemm", "--config", str(chip), "--m", "64", "--k", "40", "--n", "48", "--array", "8x8",
                 "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["chip_array"] == "8x8"
    assert document["rows"][0]["chip_seconds"] == pytest.approx(1289e-9, rel=1e-12)
