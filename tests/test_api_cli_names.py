"""Issue #40, the Python API as the CLI: four places where the library and ``archsim cluster`` / ``archsim pipeline``
disagreed, each test failed on the code before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import Parser
from archsim.cluster import JobCluster, SimConfig, load_tiresias_csv, simulate_trace, summarize
from archsim.cluster.trace import COLUMNS
from archsim.commands.cluster import COMMAND

ROOT = Path(__file__).resolve().parents[1]


def run_cli(argv, capsys):
    parser = Parser(prog="archsim cluster")
    COMMAND.add_arguments(parser)
    code = COMMAND.run(parser.parse_args(argv))
    return code, *capsys.readouterr()


def test_summarize_keys_are_the_commands(tmp_path, capsys):
    """Failed before: ``summarize()`` said ``makespan_s``, ``jct_mean_s`` … where ``archsim cluster`` prints
    ``makespan_seconds``, ``jct_mean_seconds``; the printed row is the reference, keys and values."""
    trace = tmp_path / "two.csv"
    trace.write_text(",".join(COLUMNS) + "\nj0,2,0,100,vgg16,100,0\nj1,4,30,50,resnet50,50,0\n", encoding="utf-8")
    code, out, _ = run_cli(["--trace", str(trace), "--gpus", "4", "--gpus-per-machine", "2", "--policy", "tiresias",
                            "--interval", "0", "--format", "json"], capsys)
    printed = json.loads(out)["rows"][0]
    summary = summarize(simulate_trace(load_tiresias_csv(trace), JobCluster.uniform(4, 2), "tiresias",
                                       SimConfig(interval_s=0.0)))
    assert code == 0 and set(summary) == set(printed)
    assert {key: summary[key] for key in printed} == pytest.approx(printed)
    with pytest.raises(KeyError, match="makespan_seconds"):  # an old name says the new one
        summary["makespan_s"]


def test_gpus_per_machine_above_gpus_is_noted(capsys):
    """Failed before: ``--gpus-per-machine 6`` with ``--gpus 4`` ran one machine of 4 GPUs without a word;
    docs/formats.md defines that clamp (``gpus_per_machine``: ``--gpus`` where that is fewer), so a note names
    both flags, and the run is unchanged."""
    code, out, err = run_cli(["--jobs", "3", "--gpus", "16", "--gpus-per-machine", "20", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["meta"]["gpus_per_machine"] == 16
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim: note: --gpus-per-machine 20 is more than --gpus 16")
    _, _, quiet = run_cli(["--jobs", "3", "--gpus", "16", "--gpus-per-machine", "16", "--format", "json"], capsys)
    assert quiet == ""


def test_tiny_duration_rounded_to_one_iteration_is_noted(tmp_path, capsys):
    """Failed before: a row with ``iterations`` 0 and ``duration`` 1e-9 s ran one whole ResNet-50 iteration
    (36.32 + 78.9 ms = 0.115 s, the paper's Table 1) without a word. Deriving iterations from duration (the
    trace format's "0 = derive from duration") rounds; below half an iteration a UserWarning names job and line (the
    library warns; ``archsim cluster`` prints it as its note, tests/test_cluster_trace_warning.py)."""
    trace = tmp_path / "tiny.csv"
    trace.write_text(",".join(COLUMNS) + "\nbig,1,0,0,resnet50,100,0\ntiny,1,5,0,resnet50,1e-9,0\n",
                     encoding="utf-8")
    with pytest.warns(UserWarning) as caught:
        load_tiresias_csv(trace)
    lines = [str(w.message) for w in caught]
    assert len(lines) == 1 and "line 3" in lines[0] and "job tiny" in lines[0] and "(0.115 s)" in lines[0]
    assert capsys.readouterr().err == ""


def test_simulate_refuses_a_plan_of_another_profile():
    """Failed before: ``archsim.simulate`` ran a plan made from a 32x32 array's profile with an 8x8 array's
    profile (stages of one array, op times of the other) and crashed (KeyError) on another network's profile."""
    wide = archsim.profile("ffnn8", array="32x32")
    small = archsim.profile("ffnn8", array="8x8")
    plan = archsim.pipeline(wide, processors=2)
    assert archsim.simulate(plan, wide, microbatches=2).makespan > 0
    with pytest.raises(archsim.InputError, match="plan and profile disagree.*forward"):
        archsim.simulate(plan, small, microbatches=2)
    with pytest.raises(archsim.InputError, match="plan and profile disagree.*8 layers"):
        archsim.simulate(plan, archsim.profile("resnet50"), microbatches=2)
