"""A researcher's trial of the five papers' systems (LayerPipe, out-of-order backprop, SPP, BPPSA, SPB + Jigsaw):
each paper's worked example run from the docs, a variation of one's own, then a user's mistakes. Each test
names the defect it found; each failed on the tree before its fix.
"""

from __future__ import annotations

import json

import pytest

from archsim.cli import main


def _json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _by_depth(records: list[dict]) -> dict[int, int]:
    """``[{"up_levels": 0, "steps": 21}, …]`` (the meta's numbers by depth, as plan's ``stage_counts``) as {0: 21, …}."""
    return {record["up_levels"]: value for record in records for key, value in record.items() if key != "up_levels"}


def test_bppsa_pruned_vgg11_prints_the_depths_compare_levels_asks_for(capsys):
    """``--compare-levels`` ran a scan per depth and only the HTML page showed their summary: the table, the
    JSON and ``archsim.bppsa_pruned_vgg11`` dropped it, so the docs' steps-per-depth table needed a run per depth."""
    argv = ["bppsa", "pruned-vgg11", "--width-divisor", "8", "--compare-levels", "1,2", "--format", "json"]
    doc = _json(capsys, argv)
    meta, rows = doc["meta"], doc["rows"]
    steps = _by_depth(meta["steps_by_up_levels"])
    critical = _by_depth(meta["critical_path_flops_by_up_levels"])
    work = _by_depth(meta["work_flops_by_up_levels"])
    # by hand: 21 operators, 22 elements; depth 0 is the linear scan, BP's 21 steps; depth 1: one up-sweep step, a
    # linear scan of the 11 pairs' 10 steps, one down-sweep step; depth 2: 2 + (6 quads → 5) + 2
    assert steps == {0: 21, 1: 12, 2: 9}
    assert set(critical) == set(work) == {0, 1, 2}
    # depth 0 scans the Jacobians one after another, as BP does: the same critical path as BP's own rows
    assert critical[0] == work[0] == meta["bp_critical_path_flops"]
    # the depth printed (--up-levels 2, the default) summed from its printed steps
    scan = [row for row in rows if row["method"] == "bppsa"]
    assert critical[2] == sum(row["flops"] for row in scan if row["critical"]) == meta["scan_critical_path_flops"]
    assert work[2] == sum(row["flops"] for row in scan)
    # depth 1 as its own run prints it
    alone = _json(capsys, ["bppsa", "pruned-vgg11", "--width-divisor", "8", "--up-levels", "1", "--format", "json"])
    assert critical[1] == alone["meta"]["scan_critical_path_flops"]
    assert steps[1] == alone["meta"]["scan_steps"]


def test_bppsa_pruned_vgg11_api_returns_the_compared_depths():
    import archsim

    vgg = archsim.bppsa_pruned_vgg11(width_divisor=8, compare_levels="1")
    assert _by_depth(vgg.meta["steps_by_up_levels"]) == {0: 21, 1: 12}
    assert pytest.approx(_by_depth(vgg.meta["critical_path_flops_by_up_levels"])[0]) == vgg.meta["bp_critical_path_flops"]


@pytest.mark.parametrize(("argv", "hint"), [
    (["pipeline", "layerpipe_sample", "--processors", "3", "--method", "layerpip"], "'layerpipe'"),
    (["schedule", "ffnn8", "--unit-costs", "--processors", "2", "--policy", "dualpipe"], "'dualpipev'"),
    (["cluster", "--policy", "jigsw"], "'jigsaw'"),
    (["bppsa", "rn"], "'rnn'"),
])
def test_a_misspelt_choice_names_the_one_it_resembles(capsys, argv, hint):
    """A typo in a schedule or method name listed every choice and left the user to spot the near one, where a
    misspelt flag or key names it (``did you mean``)."""
    assert main(argv) == 2
    assert capsys.readouterr().err.rstrip().endswith(f"(did you mean {hint}?)")


def test_a_choice_unlike_any_gets_no_hint(capsys):
    assert main(["pipeline", "layerpipe_sample", "--processors", "3", "--method", "banana"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("expected one of layerpipe, pipedream, gpipe, ooo, got 'banana'")


def test_a_misspelt_keyword_value_and_sweep_method_name_the_one_they_resemble(tmp_path):
    import archsim
    from archsim.errors import InputError

    with pytest.raises(InputError, match=r"got 'ooo-pipe22' \(did you mean 'ooo-pipe2'\?\)"):
        archsim.schedule("ffnn8", policy="ooo-pipe22", processors=2, unit_costs=True)
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\nbatches = [8]\n'
                    'processors = [2]\nmethods = ["pipedrem"]\n')
    from archsim.sweep.spec import load_spec

    with pytest.raises(InputError, match=r"unknown value 'pipedrem' \(did you mean 'pipedream'\?\); choose from"):
        load_spec(spec)


def test_the_librarys_partitioner_and_cluster_planner_name_the_method_a_typo_resembles():
    """``archsim.pipeline(…, method="layerpip")`` and ``plan_on_cluster(…, "hetpip", …)`` listed every method and
    named no near one, where the command's ``--method`` line does."""
    import archsim
    from archsim.errors import InputError
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import Topology

    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32, mode="paper")
    with pytest.raises(InputError, match=r"unknown method 'layerpip' \(did you mean 'layerpipe'\?\); choose one of"):
        archsim.pipeline(profile, processors=3, method="layerpip")
    with pytest.raises(InputError, match=r"unknown method 'hetpip' \(did you mean 'hetpipe'\?\); choose one of"):
        plan_on_cluster(profile, Topology.flat(4), "hetpip", 4)


def test_plan_refusing_one_sample_micro_batches_counts_one_replica_in_the_singular(capsys):
    """``--replication exact --micro-batch 1`` on more GPUs than layers said ``at most 1 replicas``."""
    argv = ["plan", "layerpipe_sample", "--cluster", "configs/clusters/testbed_1080ti.toml", "--microbatches", "2",
            "--replication", "exact", "--micro-batch", "1", "--baselines", "none"]
    assert main(argv) == 2
    # by hand: 4 layers make at most 4 stages, one 1-sample replica each: 4 of the cluster's 4 × 2 GPUs
    assert ("no plan puts all 8 GPUs to work: a replica takes whole samples, so a stage of a 1-sample micro-batch "
            "has at most 1 replica and 4 stages at most 4 GPUs") in capsys.readouterr().err
