"""Strict readers and flag values (issue 39, item 4): one regression test per root cause.

Every reader refuses integers of any length, non-ASCII digits, non-finite and subnormal reals, and
control characters in names, where it reads them (GPU cluster files, traces, SCALE-Sim layouts and
.cfg files, sparsity columns, array shapes, measured runs, probe and NCCL tables); a .cfg switch is
on or off, nothing else; an empty flag value is an error, not ignored. The size caps before work
(item 3) are in tests/test_caps_before_work.py.
"""

from __future__ import annotations

import pytest
from strict_cli import ROOT, SEARCH, TRAIN, refused

from archsim.errors import InputError

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
    from archsim.training.cluster_file import load_gpu_cluster

    path = tmp_path / "cluster.toml"
    path.write_text(GPU_CLUSTER.format(key=key, value=value))
    with pytest.raises(InputError, match=key):
        load_gpu_cluster(path)


def test_gpu_cluster_prices_in_range_are_read(tmp_path):
    from archsim.training.cluster_file import load_gpu_cluster

    path = tmp_path / "cluster.toml"
    path.write_text(GPU_CLUSTER.format(key="price_per_gpu_hour", value="2.5"))
    assert load_gpu_cluster(path).prices == (2.5,)


@pytest.mark.parametrize("text", ["²", "٣", "1_000", "9" * 5000, " 12 3", "0x10", "1e3", "+", "-"])
def test_parse_int_takes_ascii_digits_of_bounded_length_only(text):
    from archsim.value_parsers import parse_int

    with pytest.raises(ValueError, match="expected"):
        parse_int(text, low=-10**9)


def test_parse_int_still_reads_plain_integers():
    from archsim.value_parsers import parse_int

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


@pytest.mark.parametrize("cell", ["²", "9" * 5000, "1_0", "inf", "1.5"])
def test_layout_rows_refuse_anything_but_whole_numbers(tmp_path, cell):
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
    ("1,8,1,1024,16,24,1024,1,1,1", "10 cells, the header names 13 columns: no cell for iteration time"),
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
