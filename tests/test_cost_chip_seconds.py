"""``archsim cost --config chip.toml`` on a device of several arrays: each layer's F, G and δ seconds on the whole
chip (``F_chip_seconds`` …), beside its one array's cycles, timed as ``train`` times a device file's GEMMs
(:mod:`archsim.chip_time` → :func:`archsim.devices.kernel_ops.op_seconds`).

Failed before the fix: cost priced one array only (and refused a device TOML), so a designer asking how long a
layer takes on the chip had no answer. References by hand: SCALE-Sim counts a GEMM's cycles as its last cycle's
index (elapsed − 1), so a GEMM of F folds of c cycles each costs F·c − 1 on one array (cost's F_cycles); on P arrays
its folds run in ⌈F / P⌉ waves, ⌈F / P⌉·c − 1 cycles; an HBM-bound GEMM takes its bytes ÷ the bandwidth."""

from __future__ import annotations

import json

import pytest
from device_files import device_toml, scalesim_chip_cfg

from archsim.cli import main

# one fully connected layer: batch 4 through C inputs → 16 outputs; its F GEMM is out[4 × 16] = A[4 × C]·B[C × 16]
FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
      "Type,\nfc1, 1, 1, 1, 1, {c}, 16, 1, 0, fc,\n")


def _chip(tmp_path, hbm_gbps: float = 1e6, arrays: int = 4):
    """``arrays`` 8 × 8 weight-stationary arrays at 1 GHz, HBM at ``hbm_gbps`` GB/s (default: so fast none is
    memory-bound)."""
    path = tmp_path / "chip.toml"
    path.write_text(device_toml(name="Four", arrays=arrays, rows=8, cols=8, dataflow="ws", clock_mhz=1000,
                                sram_kib=192, hbm_gib=16, hbm_gbps=hbm_gbps, intra_gbps=100), encoding="utf-8")
    return path


def _cost(tmp_path, capsys, c: int, config, *flags: str) -> dict:
    layer = tmp_path / "fc.csv"
    layer.write_text(FC.format(c=c), encoding="utf-8")
    assert main(["cost", str(layer), "--config", str(config), "--batch", "4", "--format", "json", *flags]) == 0, \
        capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("c", "folds", "waves"), [
    (16, 2 * 2, 1),  # K = 16 over 8 rows × N = 16 over 8 cols: 4 folds, one on each of the 4 arrays
    (24, 3 * 2, 2),  # 6 folds over 4 arrays: ⌈6 / 4⌉ = 2 waves, not 1.5
    (40, 5 * 2, 3),  # 10 folds: ⌈10 / 4⌉ = 3 waves
])
def test_a_layers_folds_run_in_waves_over_the_arrays(tmp_path, capsys, c, folds, waves):
    document = _cost(tmp_path, capsys, c, _chip(tmp_path))
    row = document["rows"][0]
    fold = (row["F_cycles"] + 1) / folds  # one fold's elapsed cycles, from the one array's count
    assert fold == 2 * 8 + 8 + 4 - 2  # by hand, ws: 2R + C + T − 2, T the batch's M = 4 streamed rows
    assert row["F_chip_seconds"] == pytest.approx((waves * fold - 1) / 1e9, rel=1e-12)
    if folds % 4 == 0:  # divides evenly: the one array's elapsed cycles ÷ the arrays
        assert row["F_chip_seconds"] == pytest.approx(((row["F_cycles"] + 1) / 4 - 1) / 1e9, rel=1e-12)
    assert row["chip_seconds"] == pytest.approx(row["F_chip_seconds"] + row["G_chip_seconds"]
                                                + row["D_chip_seconds"], rel=1e-12)
    meta = document["meta"]
    assert (meta["chip_name"], meta["chip_arrays"], meta["chip_array"]) == ("Four", 4, "8x8")


def test_a_layer_of_fewer_folds_than_arrays_splits_its_streamed_rows(tmp_path, capsys):
    """K = 8, N = 16: 2 folds of 8 × 8 on 4 ws arrays, streaming the batch's M = 4 rows. By hand (2R + C + T − 2
    per fold): one array, 2 folds of 16 + 8 + 4 − 2 = 26, 2·26 − 1 = 51 (cost's F_cycles); on the chip the rows
    split in s = 2, 4 folds of T = 2, 24 cycles, in one wave: 23 (s = 1: one wave of 26; s = 4: 8 folds of T = 1
    in two waves of 23, 46)."""
    row = _cost(tmp_path, capsys, 8, _chip(tmp_path))["rows"][0]
    assert row["F_cycles"] == 51
    assert row["F_chip_seconds"] == pytest.approx(23 / 1e9, rel=1e-12)


@pytest.mark.parametrize(("dtype", "width"), [("fp16", 2), ("fp32", 4), ("int8", 1)])
def test_an_hbm_bound_layer_takes_its_bytes_over_the_bandwidth(tmp_path, capsys, dtype, width):
    """At 10 GB/s: F moves A (4 × 64), B (64 × 16) and out (4 × 16), (256 + 1024 + 64) elements of ``width``
    bytes, in 134.4·width ns; its compute is 16 folds of 8 × 8 in 4 waves of 26 cycles (1 GHz): less."""
    row = _cost(tmp_path, capsys, 64, _chip(tmp_path, hbm_gbps=10), "--dtype", dtype)["rows"][0]
    assert row["F_chip_seconds"] == pytest.approx((4 * 64 + 64 * 16 + 4 * 16) * width / 10e9, rel=1e-12)
    compute = ((row["F_cycles"] + 1) / 16 * 4 - 1) / 1e9  # 16 folds in ⌈16 / 4⌉ = 4 waves
    assert row["F_chip_seconds"] > compute


def test_the_total_row_sums_the_chip_seconds(tmp_path, capsys):
    rows = _cost(tmp_path, capsys, 24, _chip(tmp_path))["rows"]
    total = rows[-1]
    assert total["layer"] == "TOTAL"
    for column in ("F_chip_seconds", "G_chip_seconds", "D_chip_seconds", "chip_seconds"):
        assert total[column] == pytest.approx(sum(row[column] for row in rows[:-1]), rel=1e-12)


def test_a_device_cfg_of_the_same_chip_times_the_same(tmp_path, capsys):
    """The chip as a SCALE-Sim .cfg device file (train's other form): the same chip seconds."""
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(scalesim_chip_cfg(arrays=4, clock_ghz=1.0, size=8, hbm_gbps=10), encoding="utf-8")
    by_cfg = _cost(tmp_path, capsys, 64, cfg, "--dtype", "fp16")["rows"][0]
    by_toml = _cost(tmp_path, capsys, 64, _chip(tmp_path, hbm_gbps=10), "--dtype", "fp16")["rows"][0]
    assert by_cfg["chip_seconds"] == pytest.approx(by_toml["chip_seconds"], rel=1e-12)


def test_no_chip_columns_for_one_array_or_a_plain_cfg(tmp_path, capsys):
    one = _cost(tmp_path, capsys, 16, _chip(tmp_path, arrays=1))
    assert "chip_seconds" not in one["rows"][0] and "chip_name" not in one["meta"]
    plain = tmp_path / "plain.cfg"
    plain.write_text("[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nIfmapSramSzkB: 64\nFilterSramSzkB: 64\n"
                     "OfmapSramSzkB: 64\nIfmapOffset: 0\nFilterOffset: 10000000\nOfmapOffset: 20000000\n"
                     "Dataflow: ws\n", encoding="utf-8")
    assert "chip_seconds" not in _cost(tmp_path, capsys, 16, plain)["rows"][0]


def test_the_library_gives_the_chip_seconds_too(tmp_path, capsys):
    import warnings

    import archsim

    document = _cost(tmp_path, capsys, 24, _chip(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.cost(tmp_path / "fc.csv", config=_chip(tmp_path), batch=4)
    assert result.to_dict()["rows"] == document["rows"]
    assert list(result.table["chip_seconds"]) == [document["rows"][0]["chip_seconds"]]
