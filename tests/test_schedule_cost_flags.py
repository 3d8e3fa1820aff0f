"""``archsim schedule`` refuses the array model's flags where its run never consults the array model:
with ``--unit-costs``, with per-stage costs (``--stage-times``, ``--stage-profile``, an order read from
``--torch-schedule`` or ``--schedule-csv-in``) and with ``--torch-steps``, which counts steps and reads no
costs at all; and the flags ``multistream`` never reads (its array has no clock, no DRAM and no SRAM).

Each flag listed here was found ignored by running the command with and without it and comparing the
outputs byte for byte (the same JSON with and without it); the flags a run does read move its output
(:func:`test_the_runs_that_read_array_flags_still_take_them`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from strict_cli import ROOT, refused

from archsim.cli import main

CFG = str(ROOT / "configs/arrays/tpu_like_256x256_ws.cfg")
UNIT = ["schedule", "ffnn8", "--processors", "2", "--microbatches", "4", "--unit-costs"]
STAGES = ["schedule", "--stages", "4", "--stage-times", "1,2,1", "--microbatches", "4"]
MULTISTREAM = ["schedule", "ffnn8", "--policy", "multistream"]
# Every flag of the array model (array/options.py and build_profile): shape, dataflow, .cfg, element size,
# engine and its DRAM and SRAM, clock, mini-batch and lowering mode. --dram-bandwidth is given with
# --engine cycle, which it needs where it is read.
ARRAY_FLAGS = [["--array", "16x16"], ["--dataflow", "os"], ["--config", CFG], ["--element-bytes", "2"],
               ["--engine", "cycle"], ["--engine", "analytic"], ["--sram-kb", "8"], ["--clock-ghz", "1.5"],
               ["--batch", "8"], ["--batch", "32"], ["--mode", "paper"], ["--mode", "exact"]]


def _refused_before_output(capsys, tmp_path: Path, argv: list[str]) -> str:
    """The one error line; neither --out nor the order file written."""
    out = tmp_path / "out.json"
    err = refused(capsys, [*argv, "--format", "json", "--out", str(out)])
    assert not out.exists()
    return err


def _order_csv(capsys, tmp_path: Path) -> str:
    order = tmp_path / "order.csv"
    assert main([*STAGES, "--policy", "1f1b", "--schedule-csv", str(order), "--format", "json"]) == 0
    capsys.readouterr()
    return str(order)


@pytest.mark.parametrize("policy", ["gpipe", "ooo-pipe2", "dp-wfbp", "zb-h1", "list-1f1b"])
@pytest.mark.parametrize("flag", ARRAY_FLAGS, ids=" ".join)
def test_array_flags_are_refused_with_unit_costs(policy, flag, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*UNIT, "--policy", policy, *flag])
    assert flag[0] in err and "--unit-costs" in err


@pytest.mark.parametrize("flag", [*ARRAY_FLAGS, ["--dram-bandwidth", "5"], ["--unit-costs"]], ids=" ".join)
@pytest.mark.parametrize("run", ["stage-times", "stage-profile", "torch-schedule", "schedule-csv-in"])
def test_array_flags_are_refused_with_per_stage_costs(run, flag, capsys, tmp_path):
    profile = tmp_path / "stages.csv"
    profile.write_text("forward,backward_input,backward_weight\n1,2,1\n1,1,1\n", encoding="utf-8")
    argv = {"stage-times": [*STAGES, "--policy", "zb-h1"],
            "stage-profile": ["schedule", "--stage-profile", str(profile), "--microbatches", "4"],
            "torch-schedule": [*STAGES, "--torch-schedule", "Schedule1F1B"],
            "schedule-csv-in": [*STAGES[:-2], "--schedule-csv-in", _order_csv(capsys, tmp_path)]}[run]
    err = _refused_before_output(capsys, tmp_path, [*argv, *flag])
    assert flag[0] in err and "NETWORK" in err


@pytest.mark.parametrize("flag", [["--clock-ghz", "1.5"], ["--sram-kb", "8"], ["--dram-bandwidth", "5"]], ids=" ".join)
def test_flags_multistream_never_reads_are_refused(flag, capsys, tmp_path):
    """multistream reports cycles only and costs its arrays with the analytic model (no DRAM, no SRAM)."""
    err = _refused_before_output(capsys, tmp_path, [*MULTISTREAM, *flag])
    assert flag[0] in err and "multistream" in err


COMMS = "0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n"  # torch's compute_comms CSV of 2 ranks


@pytest.mark.parametrize("flag", [["--comm", "0.5"], ["--stage-memory", "2,1"], ["--link-bandwidth", "8"],
                                  ["--stages", "2"], ["--stage-times", "1,1,1"], ["--processors", "2"],
                                  ["--torch-schedule", "Schedule1F1B"], ["--unit-costs"], *ARRAY_FLAGS],
                         ids=" ".join)
def test_cost_flags_are_refused_with_torch_steps(flag, capsys, tmp_path):
    """--torch-steps counts the steps of torch's dry-run simulator: it reads the order, and no costs."""
    comms = tmp_path / "comms.csv"
    comms.write_text(COMMS, encoding="utf-8")
    err = _refused_before_output(capsys, tmp_path, ["schedule", "--torch-steps", "--schedule-csv-in", str(comms),
                                                    *flag])
    assert flag[0] in err and "--torch-steps" in err


def _json(capsys, argv: list[str]) -> str:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


MODELLED = ["schedule", "ffnn8", "--processors", "2", "--microbatches", "4", "--policy", "gpipe"]
CYCLE = [*MODELLED, "--engine", "cycle"]


@pytest.mark.parametrize("base, flag", [
    (MULTISTREAM, ["--array", "16x16"]), (MULTISTREAM, ["--dataflow", "os"]), (MULTISTREAM, ["--config", CFG]),
    (MULTISTREAM, ["--element-bytes", "2"]), (MULTISTREAM, ["--batch", "8"]), (MULTISTREAM, ["--mode", "paper"]),
    (MODELLED, ["--clock-ghz", "1.5"]), (CYCLE, ["--sram-kb", "8"]), (CYCLE, ["--dram-bandwidth", "1"]),
])
def test_the_runs_that_read_array_flags_still_take_them(base, flag, capsys):
    """multistream reads the array's shape, dataflow, .cfg, element size, batch and mode; a modelled run its
    clock (seconds beside cycles) and the cycle engine's memory: each moves the output."""
    assert _json(capsys, [*base, *flag]) != _json(capsys, base)


def test_torch_steps_alone_still_runs(capsys, tmp_path):
    comms = tmp_path / "comms.csv"
    comms.write_text(COMMS, encoding="utf-8")
    assert json.loads(_json(capsys, ["schedule", "--torch-steps", "--schedule-csv-in", str(comms)]))["rows"][0]["ranks"] == 2
