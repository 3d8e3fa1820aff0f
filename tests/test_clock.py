"""Seconds beside cycles when a clock is known (--clock-ghz, or a .cfg's [archsim] ClockGHz)."""

from __future__ import annotations

import json

import pytest

from archsim.array.config import ArrayConfig, read_scalesim_cfg
from archsim.cli import main
from archsim.errors import InputError

CFG = ("[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nIfmapSramSzkB: 8\nFilterSramSzkB: 8\n"
       "OfmapSramSzkB: 8\nDataflow: os\n")


def run_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_gemm_seconds_are_cycles_over_the_clock(capsys) -> None:
    # 64×40×48 on 8×8 ws: (⌈40/8⌉·⌈48/8⌉ = 30 folds) × (2·8 + 8 + 64 − 2 = 86) − 1 = 2579 cycles
    row = run_json(capsys, ["gemm", "--m", "64", "--k", "40", "--n", "48", "--array", "8x8", "--clock-ghz", "2"])
    assert row["rows"][0]["cycles"] == 2579 and row["rows"][0]["seconds"] == pytest.approx(2579 / 2e9)
    plain = run_json(capsys, ["gemm", "--m", "64", "--k", "40", "--n", "48", "--array", "8x8"])
    assert "seconds" not in plain["rows"][0] and "clock_ghz" not in plain["meta"]


def test_cfg_clock_and_flag_precedence(tmp_path, capsys) -> None:
    cfg = tmp_path / "a.cfg"
    cfg.write_text(CFG + "[archsim]\nClockGHz: 0.5\n")
    assert read_scalesim_cfg(cfg).clock_hz == pytest.approx(5e8)
    out = run_json(capsys, ["gemm", "--m", "16", "--k", "16", "--n", "16", "--config", str(cfg)])
    assert out["rows"][0]["seconds"] == pytest.approx(out["rows"][0]["cycles"] / 5e8)
    out = run_json(capsys, ["gemm", "--m", "16", "--k", "16", "--n", "16", "--config", str(cfg), "--clock-ghz", "4"])
    assert out["meta"]["clock_ghz"] == 4.0


def test_cost_and_pipeline_seconds(capsys) -> None:
    cost = run_json(capsys, ["cost", "layerpipe_sample", "--batch", "1", "--clock-ghz", "1.25"])
    for row in cost["rows"]:
        for kind in ("F", "G", "D", "total"):
            assert row[f"{kind}_seconds"] == pytest.approx(row[f"{kind}_cycles"] / 1.25e9)
    pipe = run_json(capsys, ["pipeline", "layerpipe_sample", "--processors", "2", "--batch", "2",
                             "--clock-ghz", "1", "--microbatches", "3"])
    meta = pipe["meta"]
    assert meta["iteration_seconds"] == pytest.approx(meta["iteration_cycles"] / 1e9)
    assert meta["makespan_seconds"] == pytest.approx(meta["makespan"] / 1e9)
    assert all(r["total_seconds"] == pytest.approx(r["total_cycles"] / 1e9) for r in pipe["rows"])


def test_bad_clocks_are_input_errors(tmp_path, capsys) -> None:
    with pytest.raises(InputError, match="clock_hz"):
        ArrayConfig(clock_hz=0.0)
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(CFG + "[archsim]\nClockGHz: fast\n")
    with pytest.raises(InputError, match="ClockGHz") as info:
        read_scalesim_cfg(cfg)
    assert info.value.where.line == 9
    assert main(["gemm", "--m", "4", "--k", "4", "--n", "4", "--clock-ghz", "-1"]) == 2
    assert main(["gemm", "--m", "4", "--k", "4", "--n", "4", "--clock-ghz", "nan"]) == 2
    assert main(["cost", "layerpipe_sample", "--clock-ghz", "0"]) == 2


def test_a_refused_clock_states_its_range_once(capsys):
    """`--clock-ghz 0` said "expected a clock in GHz (1e-06 … 1000) >= 1e-06 and <= 1000": the range twice."""
    assert main(["cost", "layerpipe_sample", "--clock-ghz", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("0.01") == 1 and err.count("10 GHz") == 1 and " 0 GHz" in err
    assert main(["cost", "layerpipe_sample", "--clock-ghz", "nan"]) == 2
    assert "expected a finite clock in GHz" in capsys.readouterr().err


def test_a_negative_clock_is_refused_by_the_range_it_misses(tmp_path, capsys):
    """A negative clock (`--clock-ghz -1`, a `.cfg`'s `ClockGHz = -1`) said "expected a clock in GHz >= 0",
    a bound that 0 itself does not meet: it now names the range as every other refused clock does."""
    assert main(["cost", "layerpipe_sample", "--clock-ghz", "-1"]) == 2
    err = capsys.readouterr().err
    assert "-1 GHz is outside the clocks archsim takes (0.01 … 10 GHz)" in err and ">= 0" not in err, err
    cfg = tmp_path / "neg.cfg"
    cfg.write_text(CFG + "[archsim]\nClockGHz = -1\n")
    with pytest.raises(InputError, match=r"-1 GHz is outside the clocks archsim takes \(0.01 … 10 GHz\)$"):
        read_scalesim_cfg(cfg)
