"""``archsim schedule`` follows the library's rules: a flag given to a policy that would ignore it is
refused (``--group``, ``--chunks``), before any output is written; and its interleaved round rule is
torch's ``ScheduleInterleaved1F1B`` (the order it builds), not Megatron-LM's rule that ``train`` and
``search`` apply (:func:`archsim.training.parallel.schedule_rejection`): two schedules, two rules."""

from __future__ import annotations

import json

import pytest
from strict_cli import refused

from archsim.cli import main
from archsim.training.parallel import schedule_rejection

NET = ["schedule", "ffnn8", "--processors", "2", "--microbatches", "4", "--unit-costs"]
STAGES = ["schedule", "--stages", "4", "--stage-times", "1,1,1", "--microbatches", "8"]


def _refused_before_output(capsys, tmp_path, argv: list[str]) -> str:
    """The one error line; neither --out nor --gantt written."""
    out, gantt = tmp_path / "out.json", tmp_path / "gantt.html"
    err = refused(capsys, [*argv, "--format", "json", "--out", str(out), "--gantt", str(gantt)])
    assert not out.exists() and not gantt.exists()
    return err


@pytest.mark.parametrize("policy", ["mp", "gpipe", "ooo-pipe1", "dp-wfbp", "1f1b", "zb-h1", "interleaved-1f1b",
                                    "list-1f1b"])
def test_group_is_refused_for_every_network_policy_but_ooo_pipe2(policy, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*NET, "--policy", policy, "--group", "2"])
    assert "--group" in err and "ooo-pipe2" in err and policy in err


def test_group_with_its_default_value_is_refused_too(capsys, tmp_path):
    """Given is given: --group 1 on gpipe would be ignored just the same."""
    err = _refused_before_output(capsys, tmp_path, [*NET, "--policy", "gpipe", "--group", "1"])
    assert "--group" in err and "ooo-pipe2" in err


@pytest.mark.parametrize("policy", ["gpipe", "ooo-pipe2", "dp-wfbp", "1f1b", "zb-h1", "zb-2p", "zb-v", "list-1f1b"])
def test_chunks_is_refused_for_network_policies_without_chunks(policy, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*NET, "--policy", policy, "--chunks", "3"])
    assert "--chunks" in err and "interleaved-1f1b" in err and "interleaved-zb" in err and policy in err


@pytest.mark.parametrize("policy", ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p", "zb-v", "dualpipev"])
def test_chunks_is_refused_for_per_stage_policies_without_chunks(policy, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--policy", policy, "--chunks", "3"])
    assert "--chunks" in err and "looped-bfs" in err and policy in err


def test_chunks_is_refused_for_the_default_per_stage_policy(capsys, tmp_path):
    """No --policy in per-stage mode runs 1f1b, which takes no chunks."""
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--chunks", "3"])
    assert "--chunks" in err and "1f1b" in err


@pytest.mark.parametrize("cls", ["ScheduleGPipe", "Schedule1F1B", "ScheduleZBVZeroBubble"])
def test_chunks_is_refused_for_torch_schedules_without_chunks(cls, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--torch-schedule", cls, "--chunks", "3"])
    assert "--chunks" in err and cls in err


def test_group_is_refused_in_per_stage_mode(capsys, tmp_path):
    """No per-stage policy allocates layers: --group has nothing to group there."""
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--policy", "zb-h1", "--group", "2"])
    assert "--group" in err and "ooo-pipe2" in err


def test_chunks_is_refused_with_an_order_read_from_csv(capsys, tmp_path):
    order = tmp_path / "order.csv"
    assert main([*STAGES, "--policy", "1f1b", "--schedule-csv", str(order), "--format", "json"]) == 0
    capsys.readouterr()
    err = _refused_before_output(capsys, tmp_path, ["schedule", "--stages", "4", "--stage-times", "1,1,1",
                                                    "--schedule-csv-in", str(order), "--chunks", "3"])
    assert "--chunks" in err and "--schedule-csv-in" in err


def _row(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["rows"][0]


def test_the_policies_that_take_the_flags_still_use_them(capsys):
    """ooo-pipe2's group and an interleaved schedule's chunks change the result (so they are used)."""
    ooo = ["schedule", "ffnn16", "--policy", "ooo-pipe2", "--processors", "2", "--microbatches", "4", "--unit-costs"]
    assert _row(capsys, [*ooo, "--group", "1"])["makespan"] != _row(capsys, [*ooo, "--group", "2"])["makespan"]
    net = [*NET, "--policy", "interleaved-1f1b"]
    assert _row(capsys, [*net, "--chunks", "2"])["makespan"] != _row(capsys, [*net, "--chunks", "4"])["makespan"]
    for cls in ("ScheduleInterleaved1F1B", "ScheduleInterleavedZeroBubble", "ScheduleLoopedBFS"):
        two = _row(capsys, [*STAGES, "--torch-schedule", cls, "--chunks", "2"])
        three = _row(capsys, [*STAGES, "--torch-schedule", cls, "--chunks", "3"])
        assert two["makespan"] != three["makespan"], cls
    looped = [*STAGES, "--policy", "looped-bfs"]
    assert _row(capsys, [*looped, "--chunks", "2"])["makespan"] != _row(capsys, [*looped, "--chunks", "3"])["makespan"]


# torch 2.13's ScheduleInterleaved1F1B docstring (torch/distributed/pipelining/schedules.py), as read:
# "num_rounds = max(1, n_microbatches // pp_group_size) and it works as long as n_microbatches % num_rounds
# is 0 ... 1. pp_group_size = 4, n_microbatches = 10 ... 2. pp_group_size = 4, n_microbatches = 3";
# 9 on 4: num_rounds = 2, 9 % 2 = 1, torch raises ValueError.
@pytest.mark.parametrize("policy", ["interleaved-1f1b", "interleaved-zb"])
@pytest.mark.parametrize("m, torch_accepts", [(10, True), (3, True), (6, True), (8, True), (9, False)])
def test_schedule_rounds_follow_torchs_interleaved_rule(policy, m, torch_accepts, capsys):
    argv = ["schedule", "--stages", "4", "--stage-times", "1,1,1", "--microbatches", str(m), "--policy", policy]
    if torch_accepts:
        assert _row(capsys, argv)["microbatches"] == m
    else:
        assert "multiple of the rounds" in refused(capsys, [*argv, "--format", "json"])


@pytest.mark.parametrize("m, megatron_accepts", [(10, False), (3, False), (6, False), (8, True), (12, True)])
def test_train_and_search_follow_megatrons_rule(m, megatron_accepts):
    """Megatron-LM's interleaved schedule with its default group of PP micro-batches: m a multiple of PP."""
    reason = schedule_rejection("interleaved-1f1b", 4, m)
    assert (reason is None) == megatron_accepts
    assert megatron_accepts or reason == "interleave-needs-microbatches-multiple-of-pp"
