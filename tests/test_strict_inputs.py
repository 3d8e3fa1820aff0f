"""Caps before work and strict readers (issue 39, items 3 and 4): one regression test per root cause.

* ``train``, ``train --sweep`` and ``search`` estimate their size from the flags and refuse above a
  documented limit, naming the flag, before building anything (each case here would otherwise run
  for minutes and gigabytes);
* every reader refuses integers of any length, non-finite and subnormal reals, and control characters
  in names, where it reads them; a ``--sweep`` value is checked as the flag it sweeps; an empty flag
  value is an error.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from conftest import USAGE

from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")
TRAIN = ["train", MODEL, "--cluster", CLUSTER, "--format", "json"]
SEARCH = ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "64", "--format", "json"]


def refused(capsys, argv: list[str]) -> str:
    """The one error line of a command that must exit 2 having written nothing to stdout."""
    assert main(argv) == 2, argv
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and USAGE.match(err), err
    return err


# --- item 3: caps before work --------------------------------------------------------------------

@pytest.mark.parametrize("extra, flag", [
    (["--global-batch", "100000000", "--pp", "2"], "max-ops"),           # 10⁸ micro-batches
    (["--global-batch", "2147483647", "--micro-batch", "1"], "max-ops"),
    (["--global-batch", "4096", "--pp", "8", "--max-ops", "1000"], "max-ops"),
])
def test_train_refuses_a_schedule_above_max_ops_before_building_it(capsys, extra, flag):
    err = refused(capsys, [*TRAIN, *extra])
    assert f"field '{flag}'" in err and "--max-ops" in err


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
    assert "field 'sweep'" in err and "900 points" in err
    err = refused(capsys, [*TRAIN, "--global-batch", "8", "--sweep", "global_batch=8,100000000"])
    assert "field 'max-ops'" in err


@pytest.mark.parametrize("axis", [
    "tp=0", "tp=-1", "tp=x", "tp=1.5", "tp=99999999999999999999", "tp=" + "9" * 5000, "tp=1_000", "tp=²",
    "tp=1,,2", "tp=1,1", "recompute=bogus", "schedule=bogus", "sequence_parallel=maybe",
    "sequence_parallel=1", "sequence_parallel=yes", "bogus=1", "tp", "tp=",
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
    (["--chunks", *map(str, range(1, 2001))], "chunks"),
])
def test_search_refuses_a_grid_above_its_limit_naming_the_flag(capsys, extra, flag):
    err = refused(capsys, [*SEARCH, *extra])
    assert f"field '{flag}'" in err and "500,000" in err


def test_search_refuses_a_re_timing_above_max_ops_before_simulating(capsys):
    """--top 1000 re-times 2,000 rows by default: 764 event simulations (46 s) on this grid before the cap."""
    err = refused(capsys, ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "4096", "--top", "1000",
                           "--format", "json"])
    assert "field 'refine'" in err and "--max-ops" in err


def test_refine_estimate_bounds_the_simulated_actions(monkeypatch):
    """The re-timing estimate is at least the actions the event simulator is handed, counted on the runs."""
    from archsim.policies import stage_run
    from archsim.training.cluster import single_node
    from archsim.training.search import search
    from archsim.workload.transformer import load_transformer

    simulated = []
    original = stage_run.run_order

    def counting(order, *args, **kwargs):
        simulated.append(sum(len(rank) for rank in order.ranks))
        return original(order, *args, **kwargs)

    monkeypatch.setattr(stage_run, "run_order", counting)
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
    from archsim.training.search_space import SCHEDULES, candidate_count, candidates

    for gpus, micro, schedules, chunks, sp in itertools.product(
            [(1,), (6,), (8, 12), (7, 7)], [range(1, 4)], [SCHEDULES, ("1f1b",), ("looped-bfs", "zb-v")],
            [(2,), (2, 3, 4)], [(False,), (False, True)]):
        grid = [k for n in gpus for k in candidates(n, micro, ("none", "full"), schedules, chunks, sp)]
        assert candidate_count(gpus, micro, ("none", "full"), schedules, chunks, sp) == len(grid)


@pytest.mark.parametrize("value", ["-1", "x", "1.5", "99999999999999999999", "1e400", ""])
def test_search_refine_is_a_non_negative_integer(capsys, value):
    err = refused(capsys, [*SEARCH, "--refine", value])
    assert "--refine" in err


# --- item 4: empty flag values -------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    [*TRAIN, "--global-batch", "8", "--stage-layers", ""],
    [*TRAIN, "--global-batch", "8", "--gantt", ""],
    [*TRAIN, "--global-batch", "8", "--schedule-csv", " "],
    [*TRAIN, "--global-batch", "8", "--sweep", ""],
    [*TRAIN, "--global-batch", "8", "--placement", ""],
    [*SEARCH, "--pareto-html", ""],
    [*SEARCH, "--gpus", "8", ""],
    ["cost", "layerpipe_sample", "--out", ""],
    ["cost", "layerpipe_sample", "--config", ""],
    ["schedule", "layerpipe_sample", "--processors", "2", "--gantt", ""],
    ["sweep", str(ROOT / "configs/sweeps/sample_quick.toml"), "--report", ""],  # --report alone: the default page
])
def test_an_empty_flag_value_is_an_error_not_ignored(capsys, argv):
    err = refused(capsys, argv)
    assert "empty" in err


# --- item 4: strict readers ----------------------------------------------------------------------

GPU_CLUSTER = ('[cluster]\nname = "x"\ninter_server_gbps = 100\n[[servers]]\ncount = 1\ngpus = 8\ngpu = "a100-80gb"\n'
               "intra_server_gbps = 2400\n{key} = {value}\n")


@pytest.mark.parametrize("key", ["price_per_gpu_hour", "gpu_watts"])
@pytest.mark.parametrize("value", ["1e-320", "inf", "-inf", "nan", "1" + "0" * 400, "0", "-2", '"3"', "true",
                                   "1e7", "[1]"])
def test_gpu_cluster_prices_and_watts_are_finite_positive_numbers(tmp_path, key, value):
    from archsim.training.cluster import load_gpu_cluster

    path = tmp_path / "cluster.toml"
    path.write_text(GPU_CLUSTER.format(key=key, value=value))
    with pytest.raises(InputError, match=key):
        load_gpu_cluster(path)


def test_gpu_cluster_prices_in_range_are_read(tmp_path):
    from archsim.training.cluster import load_gpu_cluster

    path = tmp_path / "cluster.toml"
    path.write_text(GPU_CLUSTER.format(key="price_per_gpu_hour", value="2.5"))
    assert load_gpu_cluster(path).prices == (2.5,)


@pytest.mark.parametrize("text", ["²", "٣", "1_000", "9" * 5000, " 12 3", "0x10", "1e3", "+", "-"])
def test_parse_int_takes_ascii_digits_of_bounded_length_only(text):
    from archsim.validate import parse_int

    with pytest.raises(ValueError, match="expected"):
        parse_int(text, low=-10**9)


def test_parse_int_still_reads_plain_integers():
    from archsim.validate import parse_int

    assert [parse_int(t, low=-5) for t in ("7", " 8 ", "+9", "-5")] == [7, 8, 9, -5]


def test_trace_model_name_with_a_newline_is_refused(tmp_path):
    """The earlier report's reproducer: "vgg\\n16" normalized to vgg16 and was accepted."""
    from archsim.cluster.trace import load_tiresias_csv

    for cell in ['"vgg\n16"', '"vgg\x0016"', '"vgg16\x1b[31m"']:
        path = tmp_path / "trace.csv"
        path.write_text(f"job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj0,8,0,10,{cell},20,0\n")
        with pytest.raises(InputError, match="model_name"):
            load_tiresias_csv(path)
    path.write_text('job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"j\n0",8,0,10,vgg16,20,0\n')
    with pytest.raises(InputError, match="job_id"):
        load_tiresias_csv(path)


LAYOUT_HEADER = "Layer name, IfmapH, IfmapW, FilterH, FilterW, Channel, NumFilter, o1, o2, o3, o4, o5, o6,\n"


@pytest.mark.parametrize("cell", ["²", "9" * 5000, "1_0", "inf", "1.0"])
def test_layout_rows_refuse_anything_but_plain_integers(tmp_path, cell):
    from archsim.array.layout import read_layout_file

    path = tmp_path / "layout.csv"
    path.write_text(LAYOUT_HEADER + f"Conv1, 1, {cell}, 1, 1, 1, 1, 0, 1, 2, 3, 4, 5,\n")
    with pytest.raises(InputError, match="column 3 must be an integer"):
        read_layout_file(path)


@pytest.mark.parametrize("cell", ["²", "9" * 5000, "-1"])
def test_layout_dp_row_channel_count_is_an_integer(tmp_path, cell):
    from archsim.array.layout import read_layout_file

    path = tmp_path / "layout.csv"
    path.write_text(LAYOUT_HEADER + f"DP1, 1, 1, 1, 1, {cell}, 1, 0, 1, 2, 3, 4, 5,\n")
    with pytest.raises(InputError, match="channel count"):
        read_layout_file(path)


@pytest.mark.parametrize("value", ["²", "9" * 5000, "-1", "1.5"])
def test_cfg_bank_counts_are_plain_integers(tmp_path, value):
    from archsim.array.config import read_scalesim_cfg

    text = (ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8")
    text = text.replace("InterfaceBandwidth: CALC", "InterfaceBandwidth: USER")
    path = tmp_path / "a.cfg"
    path.write_text(text.replace("IfmapSRAMBankNum: 10", f"IfmapSRAMBankNum: {value}"))
    with pytest.raises(InputError, match="IfmapSRAMBankNum"):
        read_scalesim_cfg(path)


@pytest.mark.parametrize("cell", ["9" * 5000 + ":4", "2:" + "9" * 5000, "٢:٤", "²:4"])
def test_sparsity_ratios_refuse_long_and_non_ascii_digits(tmp_path, cell):
    from archsim.array.sparse_input import read_sparsity_column

    path = tmp_path / "topology.csv"
    path.write_text(f"Layer name, IFMAP Height, Sparsity,\nconv1, 8, {cell},\n")
    with pytest.raises(InputError, match="Sparsity"):
        read_sparsity_column(path)


@pytest.mark.parametrize("text", ["9" * 5000 + "x9", "1e400", "²x4", "4x" + "9" * 41])
def test_array_shapes_refuse_long_and_non_ascii_digits(text):
    from archsim.array.config import parse_array_shape

    with pytest.raises(InputError, match="array"):
        parse_array_shape(text)


MEASURED_HEADER = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
                   "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),gpu_name,"
                   "peak_memory_gib\n")


@pytest.mark.parametrize("row, match", [
    ("1,8,1,1024,16,24,1024,1,1,1,1e-320,a100,1", "iteration time"),
    ("1,8,1,1024,16,24,1024,1,1,1,inf,a100,1", "iteration time"),
    ("1,8,1,1024,16,24,1024,1,1,1,nan,a100,1", "iteration time"),
    ("0,8,1,1024,16,24,1024,1,1,1,100,a100,1", "gpus"),
    ("1,-8,1,1024,16,24,1024,1,1,1,100,a100,1", "global batch"),
    ("1,8,1," + "9" * 5000 + ",16,24,1024,1,1,1,100,a100,1", "hidden size"),
    ("1,8,1,1_024,16,24,1024,1,1,1,100,a100,1", "hidden size"),
    ("1,8,1,1024,16,24,1024,1,1,1,100,a100,1e-320", "peak_memory_gib"),
    ("1,8,1,1024,16,24,1024,1,1,1,100,a100,-1", "peak_memory_gib"),
    ("1,8,1,1024,16,24,1024,1,1,1,100,a1\x1b[0m00,1", "gpu_name"),
    ("1,8,1,1024,16,24,1024,1,1,1", "10 integers"),
])
def test_measured_runs_refuse_bad_numbers_and_names(tmp_path, row, match):
    from archsim.training.measured import read_measured_table

    path = tmp_path / "runs.csv"
    path.write_text(MEASURED_HEADER + row + "\n")
    with pytest.raises(InputError, match=match):
        read_measured_table(path)


PROBE_HEADER = "section,name,model,micro_batch,layout,m,k,n,count,bytes,ops,seconds\n"


@pytest.mark.parametrize("row, match", [
    ("gemm,fc1.F,m,1,nn,inf,1,1,1,10,,1e-5", "m"),                # int(float('inf')) was an OverflowError
    ("gemm,fc1.F,m,1,nn," + "9" * 5000 + ",1,1,1,10,,1e-5", "m"),
    ("gemm,fc1.F,m,1,nn,-1,1,1,1,10,,1e-5", "m"),
    ("gemm,fc1.F,m,1,nn,1.5,1,1,1,10,,1e-5", "m"),
    ("gemm,fc1.F,m,1,nn,1,1,1,1,inf,,1e-5", "byte"),
    ("gemm,fc1.F,m,1,nn,1,1,1,1,-10,,1e-5", "byte"),
    ("gemm,fc1.F,m,1,nn,1,1,1,1,10,,1e-320", "seconds"),
    ("gemm,fc1.F,m,1,nn,1,1,1,1,10,,nan", "seconds"),
    ("gemmm,fc1.F,m,1,nn,1,1,1,1,10,,1e-5", "section"),
    ("gemm,fc1\x00F,m,1,nn,1,1,1,1,10,,1e-5", "name"),
    ("gemm,fc1.F,m", "cells"),
])
def test_probe_rows_refuse_bad_numbers_sections_and_names(tmp_path, row, match):
    from archsim.training.calibrate import read_probe

    path = tmp_path / "probe.csv"
    path.write_text(PROBE_HEADER + row + "\n")
    with pytest.raises(InputError, match=match):
        read_probe(path)


@pytest.mark.parametrize("key, value", [("SparsitySupport", "maybe"), ("SparsitySupport", "ture"),
                                        ("UseRamulatorTrace", "maybe"), ("IfmapCustomLayout", "2")])
def test_cfg_switches_are_booleans(tmp_path, key, value):
    """A switch that is neither on nor off was read as off (SCALE-Sim tests == "true"): now refused."""
    import re

    from archsim.array.config import read_scalesim_cfg
    from archsim.array.sparse_input import read_sparsity_section

    text = (ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8")
    path = tmp_path / "a.cfg"
    path.write_text(re.sub(rf"(?m)^({key}\s*:\s*)\S+", rf"\g<1>{value}", text))
    assert value in path.read_text()
    for reader in (read_scalesim_cfg, read_sparsity_section):
        if reader is read_sparsity_section and key != "SparsitySupport":
            continue
        with pytest.raises(InputError, match=key):
            reader(path)


@pytest.mark.parametrize("flag, value", [("--stage-layers", "1_0,14"), ("--stage-layers", "٣,21"),
                                         ("--stage-layers", "9" * 5000 + ",1"), ("--placement", "٠"),
                                         ("--placement", "0_0"), ("--placement", "0,0")])
def test_train_list_flags_take_ascii_integers_and_a_permutation(capsys, flag, value):
    err = refused(capsys, [*TRAIN, "--global-batch", "8", "--pp", "2", flag, value])
    assert flag.lstrip("-") in err


@pytest.mark.parametrize("row", ["1048576,262144,float,inf,1.0,12.0,1.0", "1048576,262144,float,nan,1.0,12.0,1.0",
                                 "-1,262144,float,12.0,1.0,12.0,1.0", "1048576,262144,float,1e-320,1.0,12.0,1.0",
                                 "1048576,262144,float,12.0"])
def test_nccl_tables_take_finite_positive_sizes_and_times(tmp_path, row):
    from archsim.training.nccl_fit import read_nccl_table

    path = tmp_path / "a100_AR_GPU4_x.csv"
    path.write_text("size,count,type,time,busbw,time,busbw\n" + row + "\n")
    with pytest.raises(InputError, match="line 2"):
        read_nccl_table(path)


def test_train_planned_split_refuses_a_table_above_its_cell_limit(tmp_path, capsys):
    """4,096 layers over 1,024 stages: 1.7·10¹⁰ cells of the planner's tables (minutes) before the cap."""
    deep = tmp_path / "deep.toml"
    deep.write_text('[transformer]\nname = "deep"\nfamily = "gpt"\nlayers = 4096\nhidden = 64\nheads = 4\n'
                    'vocab = 1000\nseq = 32\nffn = 256\n')
    err = refused(capsys, ["train", str(deep), "--cluster", str(ROOT / "configs/clusters/a100_384_servers.toml"),
                           "--global-batch", "64", "--pp", "1024", "--balance", "planned"])
    assert "field 'balance'" in err and "100,000,000" in err


def test_search_refuses_planning_work_above_its_limit_before_planning(tmp_path, capsys):
    """512 layers on 8 GPUs: 1,287 planned splits of 516² cells a row ran 19 s before the cap."""
    deep = tmp_path / "deep.toml"
    deep.write_text('[transformer]\nname = "deep"\nfamily = "gpt"\nlayers = 512\nhidden = 64\nheads = 4\n'
                    'vocab = 1000\nseq = 32\nffn = 256\n')
    err = refused(capsys, ["search", str(deep), "--cluster", CLUSTER, "--global-batch", "64", "--balance", "planned"])
    assert "field 'balance'" in err and "6,000,000,000" in err


def test_planning_estimate_counts_the_splits_the_search_plans(monkeypatch):
    """The pre-count (candidates that pass the rules and have several stages) is the planner's calls."""
    from archsim.training import search as search_module
    from archsim.training import stage_split
    from archsim.training.cluster import single_node
    from archsim.workload.transformer import load_transformer

    planned, counted = [], []
    original = stage_split.plan_stage_layers

    def counting(c, par, *args):
        planned.append(par.pp * (c.layers + 3) ** 2)
        return original(c, par, *args)

    monkeypatch.setattr(stage_split, "plan_stage_layers", counting)
    monkeypatch.setattr(search_module, "MAX_PLANNING_CELLS", 0)
    c = load_transformer(MODEL)
    with pytest.raises(InputError, match=r"about ([0-9,]+) table cells") as caught:
        search_module.search(c, single_node(), 64, 8, micro_batches=range(1, 3), balance="planned")
    counted.append(int(caught.value.message.split("about ")[1].split(" ")[0].replace(",", "")))
    monkeypatch.setattr(search_module, "MAX_PLANNING_CELLS", 10**12)
    search_module.search(c, single_node(), 64, 8, micro_batches=range(1, 3), balance="planned")
    assert planned and counted == [sum(planned)]


def test_train_planned_placement_and_split_counts_one_split_per_server_order(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text('[transformer]\nname = "deep"\nfamily = "gpt"\nlayers = 4096\nhidden = 64\nheads = 4\n'
                    'vocab = 1000\nseq = 32\nffn = 256\n')
    err = refused(capsys, ["train", str(deep), "--cluster", str(ROOT / "configs/clusters/mixed_h100_a100_v100.toml"),
                           "--global-batch", "64", "--pp", "2", "--placement", "planned", "--balance", "planned"])
    assert "field 'balance'" in err and "server order" in err
