"""``archsim.schedule`` on a LayerProfile runs through the command's one schedule run
(:func:`archsim.policies.schedule_run.run_schedule`), not a copy of its checks and run (issue #40). Its rows
equal ``archsim schedule NETWORK``'s on the same costs (the command's recorded JSON, a peer), and the note
on idle devices points at the caller's line as a network's does. Failed before: the spy saw no call (the
API ran ooo_schedule itself), and the note pointed into archsim's api_keywords.py."""

from __future__ import annotations

import json
import warnings

import pytest

import archsim
from archsim.cli import main
from archsim.policies import schedule_run

COSTS = {"array": "32x32", "batch": 8}


@pytest.mark.parametrize("mode", ["exact", "paper"])
@pytest.mark.parametrize(("policy", "processors", "microbatches"), [("gpipe", 2, 3), ("ooo-pipe2", 3, 2), ("mp", 2, 1)])
def test_a_profile_schedules_as_the_command_schedules_its_network(capsys, mode, policy, processors, microbatches):
    argv = ["schedule", "layerpipe_sample", "--policy", policy, "--processors", str(processors), "--microbatches",
            str(microbatches), "--array", COSTS["array"], "--batch", str(COSTS["batch"]), "--mode", mode,
            "--format", "json"]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    profile = archsim.profile("layerpipe_sample", mode=mode, **COSTS)
    assert archsim.schedule(profile, policy=policy, processors=processors, microbatches=microbatches).row == row


def test_the_profile_goes_through_the_commands_run(monkeypatch):
    seen = []
    real = schedule_run.run_schedule

    def spy(network=None, **keywords):
        seen.append(type(network).__name__)
        return real(network, **keywords)

    monkeypatch.setattr(schedule_run, "run_schedule", spy)
    profile = archsim.profile("layerpipe_sample", **COSTS)
    archsim.schedule(profile, policy="gpipe", processors=2)
    assert seen == ["LayerProfile"]


def test_the_idle_device_note_points_at_the_callers_line():
    """gpipe gives 4 layers ⌈4/3⌉ = 2 a device: 2 of 3 devices get layers, one stays idle."""
    profile = archsim.profile("layerpipe_sample", **COSTS)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        archsim.schedule(profile, policy="gpipe", processors=3)
    assert [str(w.message) for w in seen] == ["gpipe's allocation uses 2 of the 3 processors; 1 stays idle"]
    assert seen[0].filename == __file__
