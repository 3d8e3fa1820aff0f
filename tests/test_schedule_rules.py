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
MODELLED = ["schedule", "ffnn8", "--processors", "2", "--microbatches", "4"]  # costs from the array model
NET_DP, MODELLED_DP = NET[:4] + NET[6:], MODELLED[:4]  # data parallel times one window: no micro-batch count


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


# Megatron-LM (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving, commit
# d98e8a64): a group of N micro-batches per model chunk, N in [PP, m] (ValueError otherwise) and m mod N 0 or ≥ PP
# (RuntimeError otherwise), N set by --microbatch-group-size-per-virtual-pipeline-stage. By hand on PP 4: m = 10
# runs at N = 5, m = 6 at N = 6, m = 9 at N = 5 (9 mod 5 = 4), m = 8 and 12 at the default N = 4; m = 3 and 2
# have no N in [4, m].
@pytest.mark.parametrize("m, megatron_accepts", [(10, True), (3, False), (6, True), (8, True), (12, True), (9, True),
                                                 (2, False)])
def test_train_and_search_follow_megatrons_rule(m, megatron_accepts):
    """Interleaved 1F1B runs wherever some group size N Megatron-LM accepts exists: m ≥ PP; interleaved ZB keeps
    its rounds of PP micro-batches (m a multiple of PP)."""
    some_n = any(m % n == 0 or m % n >= 4 for n in range(4, m + 1))
    assert some_n == megatron_accepts
    reason = schedule_rejection("interleaved-1f1b", 4, m)
    assert (reason is None) == megatron_accepts
    assert megatron_accepts or reason == "interleave-needs-pp-microbatches"
    zb = schedule_rejection("interleaved-zb", 4, m)
    assert (zb is None) == (m % 4 == 0)
    assert zb in (None, "interleave-needs-microbatches-multiple-of-pp")


# Which runs read each flag, as read in archsim/policies/schedule_run.py and stage_schedule.py: --streams and
# --region-size only _multistream; --reverse-k only _data_parallel's dp-reverse-k branch; --sync and
# --comm-units only _data_parallel; --link-bandwidth on a network only _data_parallel and _stage_profile
# (the published schedules; list-* schedules have no communication model); --comm on a network only
# _stage_profile's published schedules, per-stage every run; --stage-memory only the per-stage profile
# (every per-stage run's peak memory, the exact searches' limit); --max-orders only the exact searches.
IGNORED_ON_A_NETWORK = [
    ("gpipe", ["--streams", "joint"], "multistream"),
    ("dp-wfbp", ["--region-size", "1"], "multistream"),
    ("dp-wfbp", ["--reverse-k", "auto"], "dp-reverse-k"),
    ("ooo-pipe2", ["--reverse-k", "2"], "dp-reverse-k"),
    ("dp-wfbp", ["--streams", "naive"], "multistream"),
    ("mp", ["--comm-units", "1.0"], "dp-priority"),
    ("1f1b", ["--comm-units", "1"], "dp-wfbp"),
    ("gpipe", ["--comm", "0"], "zb-h1"),
    ("dp-wfbp", ["--comm", "1"], "1f1b"),
    ("gpipe", ["--stage-memory", "1,0.4"], "per-stage"),
    ("zb-h1", ["--max-orders", "300000"], "zb-1p-exact"),
]


@pytest.mark.parametrize("policy, flag, taker", IGNORED_ON_A_NETWORK)
def test_every_flag_a_network_policy_ignores_is_refused(policy, flag, taker, capsys, tmp_path):
    """Given is given: the flag's default value, given, would be ignored just the same."""
    err = _refused_before_output(capsys, tmp_path, [*NET, "--policy", policy, *flag])
    assert flag[0] in err and taker in err and policy in err


IGNORED_PER_STAGE = [
    ("1f1b", ["--streams", "naive"]),
    ("zb-h1", ["--region-size", "2"]),
    ("zb-h1", ["--reverse-k", "auto"]),
    ("gpipe", ["--sync", "ring"]),
    ("1f1b", ["--comm-units", "1.0"]),
    ("zb-1p", ["--max-orders", "300000"]),
    ("zb-h1", ["--flush"]),
    ("gpipe", ["--no-flush"]),
]


@pytest.mark.parametrize("policy, flag", IGNORED_PER_STAGE)
def test_every_flag_a_per_stage_policy_ignores_is_refused(policy, flag, capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--policy", policy, *flag])
    assert flag[0] in err and policy in err


def test_policy_with_a_torch_schedule_is_refused(capsys, tmp_path):
    """--torch-schedule names the order; a --policy beside it would be ignored."""
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--torch-schedule", "Schedule1F1B", "--policy", "zb-h1"])
    assert "--policy" in err and "Schedule1F1B" in err


def test_max_orders_is_refused_with_a_torch_schedule(capsys, tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*STAGES, "--torch-schedule", "ScheduleGPipe",
                                                    "--max-orders", "10"])
    assert "--max-orders" in err and "zb-1p-exact" in err


@pytest.mark.parametrize("argv", [
    ["schedule", "ffnn8", "--policy", "multistream", "--streams", "naive", "--region-size", "2"],
    [*NET_DP, "--policy", "dp-reverse-k", "--reverse-k", "1", "--comm-units", "2"],
    [*MODELLED_DP, "--policy", "dp-wfbp", "--sync", "ps", "--link-bandwidth", "8"],
    [*MODELLED, "--policy", "zb-h1", "--comm", "0.5", "--link-bandwidth", "8"],
    ["schedule", "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "3", "--policy", "zb-1p-exact",
     "--stage-memory", "1,0.4", "--max-orders", "300000"],
    [*STAGES, "--policy", "gpipe", "--stage-memory", "2,0.5", "--comm", "0.1"],
    [*STAGES, "--torch-schedule", "Schedule1F1B", "--stage-memory", "2,0.5", "--comm", "0.1"],
])
def test_the_runs_that_read_a_flag_still_take_it(argv, capsys):
    _row(capsys, argv)


def test_a_given_flag_changes_what_its_policy_reports(capsys):
    """The readers really read them: each flag moves a figure of the run that takes it."""
    dp = [*NET_DP, "--policy", "dp-reverse-k"]
    assert _row(capsys, [*dp, "--comm-units", "1"])["makespan"] != _row(capsys, [*dp, "--comm-units", "5"])["makespan"]
    ms = ["schedule", "ffnn8", "--policy", "multistream"]
    assert _row(capsys, [*ms, "--streams", "single"])["policy"] == "multistream-single"
    per_stage = [*STAGES, "--policy", "1f1b"]
    assert _row(capsys, [*per_stage, "--stage-memory", "1,0.4"])["peak_memory"] == "4;3;2;1"  # m_in_flight = P - s
    assert _row(capsys, [*per_stage, "--stage-memory", "2,0.4"])["peak_memory"] == "8;6;4;2"


@pytest.mark.parametrize("flag", [["--comm", "0"], ["--comm", "5"], ["--stage-memory", "1,0.4"]])
def test_flags_a_stage_profile_replaces_are_refused_with_it(flag, capsys, tmp_path):
    """A --stage-profile's own columns (comm, activation_bytes, weight_bytes; 0 when absent) set what these
    flags set for --stage-times: given beside it, they would be ignored."""
    profile = tmp_path / "stages.csv"
    profile.write_text("forward,backward_input,backward_weight\n1,1,1\n1,1,1\n", encoding="utf-8")
    err = _refused_before_output(capsys, tmp_path, ["schedule", "--stage-profile", str(profile), "--microbatches",
                                                    "4", "--policy", "1f1b", *flag])
    assert flag[0] in err and "--stage-profile" in err


# --unit-costs replaces the array model and the links: _data_parallel reads --comm-units with it and
# --sync and --link-bandwidth (through SyncModel) without it; _stage_profile reads --link-bandwidth only
# without it.
@pytest.mark.parametrize("policy, flag, taker", [
    ("gpipe", ["--sync", "ring"], "dp-wfbp"),
    ("1f1b", ["--sync", "ps"], "dp-reverse-k"),
    ("gpipe", ["--link-bandwidth", "64"], "dp-wfbp"),
    ("list-1f1b", ["--link-bandwidth", "8"], "zb-h1"),
])
def test_flags_of_the_modelled_costs_are_refused_for_policies_that_ignore_them(policy, flag, taker, capsys,
                                                                              tmp_path):
    err = _refused_before_output(capsys, tmp_path, [*MODELLED, "--policy", policy, *flag])
    assert flag[0] in err and taker in err and policy in err


@pytest.mark.parametrize("policy, flag, costs", [
    ("dp-wfbp", ["--sync", "ring"], ["--unit-costs"]),
    ("dp-reverse-k", ["--link-bandwidth", "64"], ["--unit-costs"]),
    ("zb-h1", ["--link-bandwidth", "8"], ["--unit-costs"]),
    ("dp-priority", ["--comm-units", "1.0"], []),
])
def test_flags_are_refused_where_unit_costs_decide_they_would_be_ignored(policy, flag, costs, capsys, tmp_path):
    """--comm-units is the sync time only with --unit-costs; --sync and --link-bandwidth only without."""
    err = _refused_before_output(capsys, tmp_path, [*MODELLED, "--policy", policy, *costs, *flag])
    assert flag[0] in err and "--unit-costs" in err


@pytest.mark.parametrize("flag, name", [("--gantt", "g.html"), ("--chrome-trace", "t.json"), ("--schedule-csv", "s.csv")])
def test_multistream_refuses_timeline_outputs_it_would_not_write(flag, name, capsys, tmp_path):
    """multistream reports one row of totals (makespan, speed-up): a timeline file asked of it was silently
    never written; now refused before anything is read or written."""
    target = tmp_path / name
    err = refused(capsys, ["schedule", "ffnn8", "--policy", "multistream", flag, str(target), "--format", "json",
                           "--out", str(tmp_path / "out.json")])
    assert flag in err and "multistream" in err
    assert not target.exists() and not (tmp_path / "out.json").exists()
