"""Caps before work (issue 39, item 3): one regression test per root cause.

``train``, ``train --sweep`` and ``search`` estimate their size from the flags (schedule actions,
sweep points, search-grid rows, re-timed actions, the stage planner's table cells) and refuse above a
documented limit, naming the flag, before building anything: each refused case here would otherwise
run for minutes and gigabytes. Each estimate is also checked against the work it bounds, counted on
the real schedules, simulations or planner calls (brute force on small inputs), so the caps cannot
pass by refusing everything. The readers' and flags' own strictness (item 4) is in
tests/test_strict_values.py.
"""

from __future__ import annotations

import itertools

import pytest
from strict_cli import CLUSTER, MODEL, ROOT, SEARCH, TRAIN, refused

from archsim.cli import main
from archsim.errors import InputError

# --- item 3: caps before work --------------------------------------------------------------------

@pytest.mark.parametrize("extra, flag", [
    (["--global-batch", "100000000", "--pp", "2"], "max-ops"),           # 10⁸ micro-batches
    (["--global-batch", "2147483647", "--micro-batch", "1"], "max-ops"),
    (["--global-batch", "4096", "--pp", "8", "--max-ops", "1000"], "max-ops"),
])
def test_train_refuses_a_schedule_above_max_ops_before_building_it(capsys, extra, flag):
    err = refused(capsys, [*TRAIN, *extra])
    assert f"argument --{flag}" in err and "--max-ops" in err


def test_train_schedule_estimate_bounds_the_actions_the_schedule_builds():
    """The estimate (3 · PP · chunks · micro-batches) is an upper bound of the published orders' actions,
    counted on the orders themselves."""
    from archsim.policies.stage_orders import published_order
    from archsim.training.parallel import Parallelism

    for schedule, interleave in [("1f1b", 1), ("1f1b", 2), ("gpipe", 1), ("zb-h1", 1), ("zb-v", 1),
                                 ("interleaved-zb", 2)]:
        par = Parallelism(pp=4, global_batch=16, interleave=interleave, schedule=schedule)
        order = published_order(par.schedule_name, par.pp, par.microbatches, par.chunks)
        actions = sum(len(rank) for rank in order.ranks)
        assert 2 * par.pp * par.chunks * par.microbatches <= actions <= par.schedule_actions, schedule


def test_train_sweep_refuses_too_many_points_and_too_much_work(capsys):
    values = ",".join(str(n) for n in range(1, 31))
    err = refused(capsys, [*TRAIN, "--global-batch", "8", "--sweep", f"tp={values}", "--sweep", f"dp={values}"])
    assert "argument --sweep" in err and "900 points" in err
    err = refused(capsys, [*TRAIN, "--global-batch", "8", "--sweep", "global_batch=8,100000000"])
    assert "argument --max-ops" in err


@pytest.mark.parametrize("axis", [
    "tp=0", "tp=-1", "tp=x", "tp=1.5", "tp=99999999999999999999", "tp=" + "9" * 5000, "tp=1_000", "tp=²",
    "tp=1,,2", "tp=1,1", "recompute=bogus", "schedule=bogus", "sequence_parallel=maybe",
    "bogus=1", "tp", "tp=",
])
def test_an_invalid_sweep_value_is_exit_2_not_an_error_column(capsys, axis):
    err = refused(capsys, [*TRAIN, "--global-batch", "8", "--sweep", axis])
    assert "sweep" in err


def test_a_valid_sweep_value_that_cannot_run_is_still_a_row(capsys):
    """TP 3 is a valid --tp; that it does not divide the heads is the row's reason, not the command's."""
    assert main([*TRAIN, "--global-batch", "8", "--sweep", "tp=2,3", "--sweep", "sequence_parallel=false,true"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["tp"], r["sequence_parallel"]) for r in rows] == [(2, False), (2, True), (3, False), (3, True)]
    assert [bool(r["error"]) for r in rows] == [False, False, True, True]


@pytest.mark.parametrize("extra, flag", [
    (["--max-micro-batch", "2147483647"], "max-micro-batch"),
    (["--max-micro-batch", "100000"], "max-micro-batch"),
    (["--gpus", *["8"] * 3000], "gpus"),
    (["--chunks", *map(str, range(2, 2002))], "chunks"),
])
def test_search_refuses_a_grid_above_its_limit_naming_the_flag(capsys, extra, flag):
    err = refused(capsys, [*SEARCH, *extra])
    assert f"argument --{flag}" in err and "500,000" in err


@pytest.mark.long
def test_search_refuses_a_re_timing_above_max_ops_before_simulating(capsys):
    """--top 1000 re-times 2,000 rows by default: 764 event simulations (46 s) on this grid before the cap."""
    err = refused(capsys, ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "4096", "--top", "1000",
                           "--format", "json"])
    assert "argument --top" in err and "--max-ops" in err  # --refine's default: the --top given is named


def test_refine_estimate_bounds_the_simulated_actions(simulated_actions):
    """The re-timing estimate is at least the actions the event simulator is handed, counted on the runs."""
    from archsim.training.cluster_file import single_node
    from archsim.training.search import search
    from archsim.workload.model_files import load_transformer

    simulated = simulated_actions
    c = load_transformer(MODEL)
    kwargs: dict = {"micro_batches": range(1, 3), "recomputes": ("none",), "schedules": ("zb-h1", "interleaved-1f1b"),
                    "chunks": (2,), "sequence_parallel": (False,), "top": 6}
    search(c, single_node(), 64, 8, refine=0, **kwargs)
    costing = sum(simulated)  # the costing's own event timings (short pipelines), not re-timing
    simulated.clear()
    search(c, single_node(), 64, 8, refine=6, max_actions=10**9, **kwargs)
    retimed = sum(simulated) - costing
    assert retimed > 0
    with pytest.raises(InputError, match="refine"):
        search(c, single_node(), 64, 8, refine=6, max_actions=retimed - 1, **kwargs)


def test_candidate_count_is_the_grids_length():
    """The closed-form count equals the enumerated grid, brute force on small inputs."""
    from archsim.choices.schedules import TRAINING_SCHEDULES as SCHEDULES
    from archsim.training.search_space import candidate_count, candidates

    for gpus, micro, schedules, chunks, sp in itertools.product(
            [(1,), (6,), (8, 12), (7, 7)], [range(1, 4)], [SCHEDULES, ("1f1b",), ("looped-bfs", "zb-v")],
            [(2,), (2, 3, 4)], [(False,), (False, True)]):
        grid = [k for n in gpus for k in candidates(n, micro, ("none", "full"), schedules, chunks, sp)]
        assert candidate_count(gpus, micro, ("none", "full"), schedules, chunks, sp) == len(grid)


@pytest.mark.parametrize("value", ["-1", "x", "1.5", "99999999999999999999", "1e400", ""])
def test_search_refine_is_a_non_negative_integer(capsys, value):
    err = refused(capsys, [*SEARCH, "--refine", value])
    assert "--refine" in err


# --- item 3: caps on the stage planner's work ----------------------------------------------------

@pytest.mark.long
def test_train_planned_split_refuses_a_table_above_its_cell_limit(tmp_path, capsys):
    """4,096 layers over 1,024 stages: 1.7·10¹⁰ cells of the planner's tables (minutes) before the cap."""
    deep = tmp_path / "deep.toml"
    deep.write_text('[transformer]\nname = "deep"\nfamily = "gpt"\nlayers = 4096\nhidden = 64\nheads = 4\n'
                    'vocab = 1000\nseq = 32\nffn = 256\n')
    err = refused(capsys, ["train", str(deep), "--cluster", str(ROOT / "configs/clusters/a100_384_servers.toml"),
                           "--global-batch", "64", "--pp", "1024", "--balance", "planned"])
    assert "argument --balance" in err and "100,000,000" in err


def test_search_refuses_planning_work_above_its_limit_before_planning(tmp_path, capsys):
    """512 layers on 8 GPUs: 1,287 planned splits of 516² cells a row ran 19 s before the cap."""
    deep = tmp_path / "deep.toml"
    deep.write_text('[transformer]\nname = "deep"\nfamily = "gpt"\nlayers = 512\nhidden = 64\nheads = 4\n'
                    'vocab = 1000\nseq = 32\nffn = 256\n')
    err = refused(capsys, ["search", str(deep), "--cluster", CLUSTER, "--global-batch", "64", "--balance", "planned"])
    assert "argument --balance" in err and "6,000,000,000" in err


def test_planning_estimate_counts_the_splits_the_search_plans(monkeypatch):
    """The pre-count (candidates that pass the rules and have several stages) is the planner's calls."""
    from archsim.training import search_limits, stage_split
    from archsim.training.cluster_file import single_node
    from archsim.training.search import search
    from archsim.workload.model_files import load_transformer

    planned, counted = [], []
    original = stage_split.plan_stage_layers

    def counting(c, par, *args, **kwargs):
        planned.append(par.pp * (c.layers + 3) ** 2)
        return original(c, par, *args, **kwargs)

    monkeypatch.setattr(stage_split, "plan_stage_layers", counting)
    monkeypatch.setattr(search_limits, "MAX_PLANNING_CELLS", 0)
    c = load_transformer(MODEL)
    with pytest.raises(InputError, match=r"about ([0-9,]+) table cells") as caught:
        search(c, single_node(), 64, 8, micro_batches=range(1, 3), balance="planned")
    counted.append(int(caught.value.message.split("about ")[1].split(" ")[0].replace(",", "")))
    monkeypatch.setattr(search_limits, "MAX_PLANNING_CELLS", 10**12)
    search(c, single_node(), 64, 8, micro_batches=range(1, 3), balance="planned")
    assert planned and counted == [sum(planned)]


def test_train_planned_placement_and_split_counts_one_split_per_server_order(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text('[transformer]\nname = "deep"\nfamily = "gpt"\nlayers = 4096\nhidden = 64\nheads = 4\n'
                    'vocab = 1000\nseq = 32\nffn = 256\n')
    err = refused(capsys, ["train", str(deep), "--cluster", str(ROOT / "configs/clusters/mixed_h100_a100_v100.toml"),
                           "--global-batch", "64", "--pp", "2", "--placement", "planned", "--balance", "planned"])
    assert "argument --balance" in err and "server order" in err
