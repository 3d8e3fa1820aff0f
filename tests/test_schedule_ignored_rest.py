"""``archsim schedule`` refuses the flags its run would ignore, found by running each command with and
without the flag and comparing the outputs byte for byte: ``--processors`` where ``--stages`` or a
``--stage-profile`` sets the stage count; ``--microbatches`` where the order read from
``--schedule-csv-in`` fixes them, and with ``--torch-steps``; the flags that load a NETWORK, in runs
without one; ``--sram-kb`` with the analytic engine, which models no SRAM. The runs that read each flag
still take it (:func:`test_the_runs_that_read_these_flags_still_take_them`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from strict_cli import ROOT
from test_schedule_cost_flags import _refused_before_output

from archsim.cli import main

STAGES = ["schedule", "--stages", "2", "--stage-times", "1,2,1", "--microbatches", "4"]
STEPS = ["schedule", "--torch-steps", "--schedule-csv-in", str(ROOT / "tests/data/torch/comms_2_ranks.csv")]
MODELLED = ["schedule", "ffnn8", "--processors", "2", "--microbatches", "4"]
NETWORK_FLAGS = [["--only", "fc"], ["--shapes", "off"], ["--shapes", "auto"], ["--unsupported", "skip"],
                 ["--input-shape", "1,3"], ["--dim", "seq=8"]]


def _order_csv(capsys, tmp_path: Path) -> str:
    order = tmp_path / "order.csv"
    assert main([*STAGES, "--policy", "1f1b", "--schedule-csv", str(order), "--format", "json"]) == 0
    capsys.readouterr()
    return str(order)


def _profile(tmp_path: Path) -> str:
    profile = tmp_path / "stages.csv"
    profile.write_text("forward,backward_input,backward_weight\n1,2,1\n1,1,1\n", encoding="utf-8")
    return str(profile)


def _runs(capsys, tmp_path: Path) -> dict[str, list[str]]:
    return {"stage-times": [*STAGES, "--policy", "zb-h1"],
            "stage-profile": ["schedule", "--stage-profile", _profile(tmp_path), "--microbatches", "4"],
            "torch-schedule": [*STAGES, "--torch-schedule", "Schedule1F1B"],
            "schedule-csv-in": [*STAGES[:-2], "--schedule-csv-in", _order_csv(capsys, tmp_path)],
            "torch-steps": STEPS}


@pytest.mark.parametrize("run", ["stage-times", "stage-profile", "torch-schedule", "schedule-csv-in"])
@pytest.mark.parametrize("value", ["2", "3"])
def test_processors_is_refused_where_stages_or_a_profile_set_the_stage_count(run, value, capsys, tmp_path):
    """--processors is --stages' other name: beside --stages or a --stage-profile's rows it was dropped."""
    err = _refused_before_output(capsys, tmp_path, [*_runs(capsys, tmp_path)[run], "--processors", value])
    assert "--processors" in err and ("--stages" in err or "--stage-profile" in err)


@pytest.mark.parametrize("run", ["schedule-csv-in", "torch-steps"])
@pytest.mark.parametrize("value", ["1", "7"])
def test_microbatches_is_refused_where_the_order_fixes_them(run, value, capsys, tmp_path):
    """Given is given: --microbatches 1, its default, would be dropped just the same."""
    argv = [a for a in _runs(capsys, tmp_path)[run] if a not in ("--microbatches", "4")]
    err = _refused_before_output(capsys, tmp_path, [*argv, "--microbatches", value])
    assert "--microbatches" in err and ("--schedule-csv-in" in err or "--torch-steps" in err)


@pytest.mark.parametrize("run", ["stage-times", "stage-profile", "torch-schedule", "schedule-csv-in", "torch-steps"])
@pytest.mark.parametrize("flag", NETWORK_FLAGS, ids=" ".join)
def test_network_flags_are_refused_without_a_network(run, flag, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*_runs(capsys, tmp_path)[run], *flag])
    assert flag[0] in err and "NETWORK" in err


@pytest.mark.parametrize("policy", ["gpipe", "zb-h1", "dp-wfbp", "list-1f1b"])
@pytest.mark.parametrize("engine", [[], ["--engine", "analytic"]], ids=["default", "analytic"])
def test_sram_kb_is_refused_with_the_analytic_engine(policy, engine, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*MODELLED, "--policy", policy, *engine, "--sram-kb", "8"])
    assert "--sram-kb" in err and "cycle" in err


def _json(capsys, argv: list[str]) -> str:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_the_runs_that_read_these_flags_still_take_them(capsys, tmp_path):
    """--processors without --stages is the stage count of an order's run; --microbatches moves a torch
    class's order; --sram-kb moves the cycle engine's."""
    times = ["schedule", "--stage-times", "1,2,1"]
    assert _json(capsys, [*times, "--processors", "2", "--torch-schedule", "Schedule1F1B"]) != \
        _json(capsys, [*times, "--processors", "3", "--torch-schedule", "Schedule1F1B"])
    order = _order_csv(capsys, tmp_path)
    assert '"stages": 2' in _json(capsys, [*times, "--processors", "2", "--schedule-csv-in", order])
    torch = [*STAGES[:-2], "--torch-schedule", "Schedule1F1B"]
    assert _json(capsys, [*torch, "--microbatches", "2"]) != _json(capsys, [*torch, "--microbatches", "4"])
    cycle = [*MODELLED, "--policy", "gpipe", "--engine", "cycle"]
    assert _json(capsys, [*cycle, "--sram-kb", "8"]) != _json(capsys, cycle)


def test_the_table_names_every_torch_class_order():
    """--microbatches is read by every --torch-schedule order: the table's list is stage_orders' own."""
    from archsim.policies.schedule_flags import TORCH_ORDERS
    from archsim.policies.stage_orders import TORCH_SCHEDULES

    assert TORCH_ORDERS == tuple(name for name, _ in TORCH_SCHEDULES.values())
