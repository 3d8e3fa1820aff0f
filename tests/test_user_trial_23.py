"""A performance engineer's notebook: a keyword of the wrong type is one InputError naming it, not a
TypeError from deep inside, and a misspelt schedule is refused as a name, not as a layout's rule."""

from __future__ import annotations

import pytest

import archsim
from archsim.cli import main

MODEL = "configs/transformers/gpt_1024h_24l.json"
CLUSTER = "configs/clusters/a100_node.toml"
TORCH_AND_ARCHSIM = "choose one of 1f1b, gpipe"  # the flag's order, its default first (docs/cli.md, Schedules)


@pytest.mark.parametrize("value", ["sixteen", 16.5, None])
def test_search_refuses_a_global_batch_that_is_not_an_integer(value):
    """search's global_batch went unchecked into the search: a str was a TypeError from string formatting
    ("not all arguments converted"), not a line naming the keyword, as train's and the flag's are."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.search(MODEL, cluster=CLUSTER, global_batch=value, top=1, max_micro_batch=1, schedule="1f1b")
    assert refused.value.where.field == "global-batch"


@pytest.mark.parametrize("source", [5, 3.0, ["vgg16"]])
def test_cost_refuses_a_network_that_is_neither_a_path_nor_a_network(source):
    """A network given as a number or a list was os.fspath's TypeError, naming no keyword."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.cost(source)
    assert refused.value.where.field == "network"


@pytest.mark.parametrize("schedule", ["1F1B", "zero-bubble", "interleaved"])
def test_a_misspelt_schedule_is_refused_as_a_name(schedule):
    """With PP 1 an unknown schedule was refused by the PP rule ("every schedule runs as 1F1B: 1F1B needs
    --pp > 1"), which sends the user to change PP for what is a typo."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.train(MODEL, cluster=CLUSTER, dp=8, global_batch=16, schedule=schedule)
    assert refused.value.where.field == "schedule"
    text = str(refused.value)  # the name it resembles, if any, between the two (1F1B: did you mean '1f1b'?)
    assert f"unknown schedule {schedule!r}" in text and f"; {TORCH_AND_ARCHSIM}" in text


def test_the_command_refuses_a_misspelt_schedule_by_name(capsys):
    """The same line from archsim train, which shares the check."""
    assert main(["train", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--schedule", "1F1B"]) == 2
    err = capsys.readouterr().err
    assert "unknown schedule '1F1B'" in err and "needs --pp" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_known_schedule_with_one_stage_keeps_its_rule():
    """A real schedule name on one stage is still refused by the PP rule (the check only comes first)."""
    with pytest.raises(archsim.InputError, match="schedule-needs-pp"):
        archsim.train(MODEL, cluster=CLUSTER, dp=8, global_batch=16, schedule="gpipe")


@pytest.mark.parametrize(("keyword", "value"), [("workers", 0), ("workers", "two"), ("workers", 2000),
                                                ("progress", "yes"), ("out", 5), ("spec", 5)])
def test_run_sweep_refuses_its_keywords_as_sweep_refuses_its_flags(tmp_path, keyword, value):
    """run_sweep took workers=0 silently (--workers refuses it), and a str worker count, a number as ``out``
    or as the spec were TypeErrors naming nothing; nothing is written on a refusal."""
    given = {"spec": "configs/sweeps/sample_quick.toml", "out": tmp_path / "out", keyword: value}
    spec = given.pop("spec")
    with pytest.raises(archsim.InputError) as refused:
        archsim.run_sweep(spec, **given)
    assert refused.value.where.field == keyword
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["no", 0, None])
def test_cost_energy_is_true_or_false(value):
    """``--energy`` is a switch; the keyword took any value by its truth, so energy="no" priced energy."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.cost("docs/examples/tiny_resnet.csv", batch=1, energy=value)
    assert refused.value.where.field == "energy"


def test_pipeline_and_simulate_read_counts_as_their_flags_do():
    """processors="3" and microbatches="4" (read from a notebook widget or a CSV) were TypeErrors from a
    comparison deep in the partitioner; the flags read them, and refuse "three" in one line."""
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=8)
    plan = archsim.pipeline(profile, processors="3")
    assert plan == archsim.pipeline(profile, processors=3)
    timeline = archsim.simulate(plan, profile, microbatches="4")
    assert timeline.makespan == archsim.simulate(plan, profile, microbatches=4).makespan
    for call, keyword in ((lambda: archsim.pipeline(profile, processors="three"), "processors"),
                          (lambda: archsim.simulate(plan, profile, microbatches=2.5), "microbatches")):
        with pytest.raises(archsim.InputError) as refused:
            call()
        assert refused.value.where.field == keyword


def test_train_runs_refuses_a_runs_file_that_is_not_a_path():
    with pytest.raises(archsim.InputError) as refused:
        archsim.train_runs(MODEL, runs=5, cluster=CLUSTER)
    assert refused.value.where.field == "runs"


def test_pipeline_plans_on_a_topology_as_the_planner_does():
    """archsim.pipeline passed a Topology on to the planner (which takes one) and then subtracted the plan's
    stages from it for the idle-processor note: a TypeError after the plan was made."""
    from archsim.spp.topology import Topology

    profile = archsim.profile("layerpipe_sample", array="32x32", batch=8)
    plan = archsim.pipeline(profile, processors=Topology.flat(3))
    assert plan == archsim.pipeline(profile, processors=3)
