"""A schedule's makespan is a count where its unit counts (the array's clock cycles, ``--unit-costs``' units) and the
schedule ends on a whole one: ``archsim.schedule(...).makespan`` is ``16`` for out-of-order backprop's Fig. 5
(docs/api.md), as the row, ``to_dict()`` and the command's JSON give it; a half cycle (an interleaved order's
half-size chunks) and a continuous unit (seconds, the stage times' unit) stay floats. Failed before: 16.0."""

from __future__ import annotations

import json

import pytest

import archsim
from archsim.cli import main


def test_fig_5s_makespan_is_16_units_an_int():
    # ffnn8 on 2 devices under ooo-pipe2 with F = D = G = 1: 16 units (the paper's Fig. 5, docs/api.md)
    run = archsim.schedule("ffnn8", policy="ooo-pipe2", processors=2, unit_costs=True)
    assert run.makespan == 16 and type(run.makespan) is int
    assert type(run.row["makespan"]) is int and type(run.to_dict()["rows"][0]["makespan"]) is int


def test_the_commands_json_writes_a_whole_count(capsys):
    assert main(["schedule", "ffnn8", "--policy", "ooo-pipe2", "--processors", "2", "--unit-costs",
                 "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert '"makespan": 16,' in out and json.loads(out)["rows"][0]["makespan"] == 16


def test_whole_cycles_are_an_int_and_agree_with_the_timeline():
    run = archsim.schedule("ffnn8", policy="gpipe", processors=2, microbatches=4)
    assert run.meta["unit"] == "cycles" and type(run.makespan) is int
    assert run.makespan == run.timeline.makespan == run.row["makespan"]


@pytest.mark.parametrize("policy", ["interleaved-1f1b", "zb-v"])
def test_half_a_unit_stays_a_float(policy):
    # two chunks a device: each chunk's F is half a stage's unit, so the order can end on a half
    run = archsim.schedule("ffnn8", policy=policy, processors=2, microbatches=4, unit_costs=True)
    assert type(run.makespan) is float and not run.makespan.is_integer()


def test_a_continuous_unit_stays_a_float():
    # per-stage costs in the stage times' unit (seconds or ms): 1F1B on 4 stages, 8 micro-batches of F = B = W = 1
    # takes (8 + 3) × 3 = 33 (docs/api.md), a time, not a count
    run = archsim.schedule(stages=4, stage_times="1,1,1", microbatches=8, policy="1f1b")
    assert run.makespan == 33 and type(run.makespan) is float
    seconds = archsim.schedule(archsim.profile("ffnn8", clock_ghz=1.0), policy="gpipe", processors=2)
    assert seconds.meta["unit"] == "seconds" and type(seconds.makespan) is float
