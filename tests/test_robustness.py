"""Hostile input through the real CLI: each reproducer of issue #19 gives exit 2 and one clean line
(or, where the input is legal, a correct result) — never a traceback, a negative count or a hang."""

import json
import math
import os
import pathlib
from pathlib import Path

import pytest
from conftest import USAGE

from archsim.cli import main
from archsim.errors import InputError
from archsim.validate import EXACT_LIMIT, check_name, read_text

ROOT = Path(__file__).resolve().parents[1]
CFG = ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg"
V100 = ROOT / "configs" / "clusters" / "testbed_v100.toml"
SPP_SIM = ROOT / "configs" / "clusters" / "spp_sim.toml"
SAMPLE_SWEEP = ROOT / "configs" / "sweeps" / "sample_quick.toml"
TRACE = ROOT / "configs" / "traces" / "sample_tiresias.csv"
TOPOLOGY_HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,"
TRACE_HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"


def clean_error(capsys, *argv) -> str:
    """Run the CLI; it must exit 2 with exactly one line on stderr and nothing on stdout."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (code, out[-300:], err[-300:])
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and USAGE.match(lines[0]), err
    assert "\x1b" not in err and "Traceback" not in err
    return lines[0]


def json_rows(capsys, *argv) -> tuple[dict, list[dict]]:
    assert main([str(a) for a in argv] + ["--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    return document["meta"], document["rows"]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# 1. Integers: bounded flags, exact or refused counts — never a wrapped (negative) number.

@pytest.mark.parametrize("argv", [
    ["cost", "layerpipe_sample", "--batch", 10**19],
    ["cost", "layerpipe_sample", "--array", "3000000000x1"],
    ["schedule", "layerpipe_sample", "--policy", "gpipe", "--processors", 10**19],
    ["sweep", SAMPLE_SWEEP, "--workers", 10**19],
    ["validate-gpu", "--csv", "x.csv", "--sm-count", 10**30],
    ["cluster", "--gpus", 10**19],
    ["cluster", "--jobs", 2**31 - 1],
])
def test_huge_integer_flags_are_refused(capsys, argv):
    line = clean_error(capsys, *argv)
    assert "expected" in line or "must be in" in line


@pytest.mark.parametrize("argv", [
    ["cost", "vgg16", "--array", "1x1", "--batch", 10**9],
    ["gemm", "--m", 10**9, "--k", 10**9, "--n", 10**9, "--array", "1x1"],
])
def test_counts_beyond_2_53_are_refused_not_wrapped(capsys, argv):
    assert "2^53" in clean_error(capsys, *argv)


def test_a_large_legal_gemm_is_exact():
    """ws, 1×1 array, M = 2²⁰, K = 2²⁰, N = 2¹⁰: folds = ⌈K/1⌉·⌈N/1⌉ = 2³⁰, each 2R + C + M − 2 = 2²⁰ + 1
    cycles, so cycles = 2³⁰·(2²⁰ + 1) − 1 = 2⁵⁰ + 2³⁰ − 1 (by hand, module docstring of array.analytic)."""
    from archsim.array.analytic import gemm_cost

    cost = gemm_cost(2**20, 2**20, 2**10, 1, 1, "ws")
    assert cost.scalar("cycles") == 2**50 + 2**30 - 1
    assert cost.scalar("macs") == 2**50
    with pytest.raises(InputError, match="2\\^53"):
        gemm_cost(2**23, 2**20, 2**10, 1, 1, "ws")  # 2⁵³ MACs: one past the limit


def test_the_cli_prints_the_large_legal_gemm_exactly(capsys):
    _, rows = json_rows(capsys, "gemm", "--m", 2**20, "--k", 2**20, "--n", 2**10, "--array", "1x1")
    assert rows[0]["cycles"] == 2**50 + 2**30 - 1 and rows[0]["cycles"] < EXACT_LIMIT


def test_file_fields_beyond_the_ranges(capsys, tmp_path):
    trace = write(tmp_path / "t.csv", f"{TRACE_HEADER}\nj0,1,0,10000000000000000000,vgg16,100,0\n")
    assert "field 'iterations'" in clean_error(capsys, "cluster", "--trace", trace)
    padding = write(tmp_path / "p.csv", TOPOLOGY_HEADER.rstrip(",") + ", Padding\nc1, 8, 8, 3, 3, 3, 4, 1, 2147483647\n")
    assert "2^53" in clean_error(capsys, "cost", padding)


# 2. A processor with no forward op (one layer, two processors).

def test_pipeline_of_a_one_layer_network_over_two_processors(capsys, tmp_path):
    one = write(tmp_path / "one.csv", f"{TOPOLOGY_HEADER}\nconv1, 8, 8, 3, 3, 3, 4, 1,\n")
    _, cost = json_rows(capsys, "cost", one)
    f, g = cost[0]["F_cycles"], cost[0]["G_cycles"]
    meta, rows = json_rows(capsys, "pipeline", one, "--processors", 2, "--microbatches", 2, "--mode", "paper")
    assert len(rows) == 2 and rows[0]["ops"] == "F:conv1 G:conv1" and rows[1]["ops"].startswith("D:conv1")
    # Processor 1 runs F and G of both micro-batches back to back; D (on processor 2, D < F + G) hides
    # behind them, so the makespan is 2·(F + G).
    assert cost[0]["D_cycles"] < f + g
    assert meta["makespan"] == 2 * (f + g)


# 3. Unreadable files, one reader for all.

@pytest.fixture
def locked(monkeypatch):
    """Files named ``locked*`` raise PermissionError when read (chmod is no use when tests run as root)."""
    original = os.open

    def refuse(path, flags, *args, **kwargs):
        if pathlib.Path(path).name.startswith("locked") and not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(13, "Permission denied", str(path))
        return original(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)  # the one reader, validate.read_bytes, opens with os.open


@pytest.mark.parametrize("name, argv", [
    ("locked.cfg", ["cost", "layerpipe_sample", "--config", "{}"]),
    ("locked.toml", ["sweep", "{}"]),
    ("locked_cluster.toml", ["plan", "layerpipe_sample", "--cluster", "{}", "--microbatches", 2]),
    ("locked.csv", ["cluster", "--trace", "{}"]),
    ("locked_shapes.csv", ["gemm", "--shapes", "{}"]),
    ("locked_kernels.csv", ["validate-gpu", "--csv", "{}"]),
])
def test_unreadable_files(capsys, tmp_path, locked, name, argv):
    path = write(tmp_path / name, "x")
    line = clean_error(capsys, *[str(path) if a == "{}" else a for a in argv])
    assert name in line and "Permission denied" in line


def test_read_text_names_missing_folders_and_non_text(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_text(tmp_path / "missing.cfg", "config file")
    with pytest.raises(InputError, match="not a regular file"):
        read_text(tmp_path, "config file")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_text(tmp_path / "bin", "config file")


# 4. SCALE-Sim .cfg: '%' is a character; an empty USER Bandwidth is located.

def test_percent_in_a_cfg_value(capsys, tmp_path):
    text = CFG.read_text(encoding="utf-8").replace("run_name = scalesim_32x32_ws", "run_name = 100%_ws")
    assert "100%_ws" in text
    _, plain = json_rows(capsys, "cost", "layerpipe_sample", "--config", CFG)
    _, percent = json_rows(capsys, "cost", "layerpipe_sample", "--config", write(tmp_path / "p.cfg", text))
    assert percent == plain


def test_empty_user_bandwidth(capsys, tmp_path):
    text = CFG.read_text(encoding="utf-8").replace("Bandwidth : 10", "Bandwidth :")
    text = text.replace("InterfaceBandwidth: CALC", "InterfaceBandwidth: USER")
    assert "Bandwidth :\n" in text and "USER" in text
    line = clean_error(capsys, "cost", "layerpipe_sample", "--config", write(tmp_path / "u.cfg", text))
    assert "field 'Bandwidth'" in line and "line " in line


# 5. Seeds.

@pytest.mark.parametrize("argv", [
    ["plan", "layerpipe_sample", "--cluster", SPP_SIM, "--microbatches", 2, "--seed", -1],
    ["cluster", "--seed", -1],
    ["bppsa", "pruned-vgg11", "--seed", -1],
    ["cluster", "--seed", 2**32],
])
def test_bad_seed_flags(capsys, argv):
    assert "seed" in clean_error(capsys, *argv)


@pytest.mark.parametrize("seed", ['"x"', "1.5", "-1", "true"])
def test_bad_seed_in_a_cluster_file(capsys, tmp_path, seed):
    path = write(tmp_path / "c.toml", f"[cluster]\nseed = {seed}\n[[servers]]\ngpus = 2\nintra_server_gbps = 10\n")
    assert "field 'seed'" in clean_error(capsys, "plan", "layerpipe_sample", "--cluster", path, "--microbatches", 2)


# 6. Non-finite and degenerate numbers.

@pytest.mark.parametrize("inter, intra", [("inf", "10"), ("10", "[1, inf]"), ("nan", "10"), ("10", "[5, 1]"),
                                          ("0", "10"), ("1e300", "10")])
def test_non_finite_bandwidths_in_a_cluster_file(capsys, tmp_path, inter, intra):
    path = write(tmp_path / "c.toml", f"[cluster]\ninter_server_gbps = {inter}\n[[servers]]\ncount = 2\ngpus = 2\n"
                                      f"intra_server_gbps = {intra}\n")
    assert "_gbps'" in clean_error(capsys, "plan", "layerpipe_sample", "--cluster", path, "--microbatches", 2)


@pytest.mark.parametrize("argv", [
    ["plan", "layerpipe_sample", "--cluster", V100, "--microbatches", 2, "--clock-ghz", "nan"],
    ["plan", "layerpipe_sample", "--cluster", V100, "--microbatches", 2, "--clock-ghz", "inf"],
    ["schedule", "layerpipe_sample", "--policy", "dp-wfbp", "--processors", 2, "--link-bandwidth", 0],
    ["schedule", "layerpipe_sample", "--policy", "dp-wfbp", "--processors", 2, "--comm-units", "nan"],
    ["cluster", "--unit-seconds", "inf"],
    ["cluster", "--interval", "nan"],
    ["cluster", "--interval", "1e-320"],  # subnormal: found by the fuzzer (an interval of 1e-320 s made inf)
    ["plan", "layerpipe_sample", "--cluster", V100, "--microbatches", 2, "--clock-ghz", "1e-320"],
    ["pipeline", "layerpipe_sample", "--processors", 2, "--alpha", "inf"],
    ["bppsa", "pruned-vgg11", "--sparsity", "nan"],
])
def test_non_finite_or_degenerate_flags(capsys, argv):
    clean_error(capsys, *argv)


@pytest.mark.parametrize("alpha", ["nan", "inf", "1.0", '"x"', "true"])
def test_non_finite_alpha_in_a_sweep(capsys, tmp_path, alpha):
    path = write(tmp_path / "s.toml", SAMPLE_SWEEP.read_text(encoding="utf-8") + f"alpha = {alpha}\n")
    assert "field 'alpha'" in clean_error(capsys, "sweep", path, "--out", tmp_path / "out")


# 7. Wrong TOML types.

@pytest.mark.parametrize("text, argv", [
    ("sweep = 5\n", ["sweep", "{}"]),
    ("sweep = [1]\n", ["sweep", "{}"]),
    ("cluster = 5\nservers = []\n", ["plan", "layerpipe_sample", "--cluster", "{}", "--microbatches", 2]),
    ("cluster = []\nservers = []\n", ["plan", "layerpipe_sample", "--cluster", "{}", "--microbatches", 2]),
    ("servers = 5\n[cluster]\n", ["plan", "layerpipe_sample", "--cluster", "{}", "--microbatches", 2]),
])
def test_wrong_toml_types(capsys, tmp_path, text, argv):
    path = write(tmp_path / "w.toml", text)
    clean_error(capsys, *[str(path) if a == "{}" else a for a in argv])


# 8. CSV fields over Python's 128 KiB field limit.

def test_oversized_csv_fields(capsys, tmp_path):
    big = "1" * 140_000
    trace = write(tmp_path / "t.csv", f"{TRACE_HEADER}\nj0,1,0,100,vgg16,\"{big}\",0\n")
    assert "line 2" in clean_error(capsys, "cluster", "--trace", trace)
    shapes = write(tmp_path / "s.csv", f"m,k,n,rows,cols,dataflow\n1,1,1,1,1,\"{big}\"\n")
    assert "line 2" in clean_error(capsys, "gemm", "--shapes", shapes)
    kernels = write(tmp_path / "k.csv", f"network,layer,batch,op,measured_ms\nn,\"{big}\",1,F,1\n")
    assert "line 2" in clean_error(capsys, "validate-gpu", "--csv", kernels)


# 9. Names that would become paths; huge lists.

@pytest.mark.parametrize("name, why", [('"../../x"', "not a path"), ('"/tmp/x"', "not a path"),
                                       ('"a\\u0000b"', "control"), (f'"{"n" * 300}"', "longer than"),
                                       ('["x"]', "expected a string"), ('""', "empty")])
def test_sweep_names_stay_plain(capsys, tmp_path, name, why):
    text = SAMPLE_SWEEP.read_text(encoding="utf-8").replace('name = "sample_quick"', f"name = {name}")
    line = clean_error(capsys, "sweep", write(tmp_path / "s.toml", text))
    assert "field 'name'" in line and why in line


@pytest.mark.parametrize("processors", ["[2147483647]", "[0]", "[" + ", ".join(["2"] * 1001) + "]"])
def test_sweep_processors_are_bounded(capsys, tmp_path, processors):
    text = SAMPLE_SWEEP.read_text(encoding="utf-8").replace("processors = [2, 3, 4]", f"processors = {processors}")
    assert "field 'processors'" in clean_error(capsys, "sweep", write(tmp_path / "s.toml", text))


def test_check_name():
    assert check_name("vgg16_conv", "name") == "vgg16_conv"
    for bad in ("..", "a/b", "a\\b", "x\x1b[31m", "n" * 101, 5):
        with pytest.raises(InputError):
            check_name(bad, "name")


# 10/12. Duplicated columns; untrusted text reaches the terminal escaped, on one line.

def test_a_duplicated_trace_column(capsys, tmp_path):
    trace = write(tmp_path / "t.csv", TRACE_HEADER + ",iterations\nj0,1,0,100,vgg16,0,0,200\n")
    line = clean_error(capsys, "cluster", "--trace", trace)
    assert "field 'iterations'" in line and "twice" in line


def test_header_cells_with_newlines_and_escapes_print_on_one_line(capsys, tmp_path):
    trace = write(tmp_path / "t.csv", TRACE_HEADER + ',"bad\ncolumn\x1b[31m"\nj0,1,0,100,vgg16,0,0,1\n')
    line = clean_error(capsys, "cluster", "--trace", trace)
    assert "bad\\ncolumn\\x1b[31m" in line


def test_a_job_wider_than_the_cluster_names_the_trace(capsys, tmp_path):
    trace = write(tmp_path / "wide.csv", f"{TRACE_HEADER}\nj0,100,0,100,vgg16,0,0\n")
    assert "wide.csv" in clean_error(capsys, "cluster", "--trace", trace, "--gpus", 4)


# 11. Job size: refused up front with the estimate and the flag that lifts it.

@pytest.mark.parametrize("argv", [
    ["pipeline", "vgg16", "--processors", 4, "--microbatches", 10**7],
    ["schedule", "vgg16", "--policy", "gpipe", "--processors", 4, "--microbatches", 10**6],
    ["plan", "vgg16", "--cluster", V100, "--microbatches", 10**6],
])
def test_huge_jobs_are_refused_before_work(capsys, argv):
    line = clean_error(capsys, *argv)
    assert "--max-ops" in line and "GB" in line


def test_max_ops_lifts_the_limit(capsys):
    argv = ["schedule", "layerpipe_sample", "--policy", "gpipe", "--processors", 2, "--microbatches", 4]
    # 4 micro-batches × (F and G of 4 layers + δ of the 3 past the first) + the flush barrier = 45 ops.
    assert "45 ops" in clean_error(capsys, *argv, "--max-ops", 44)
    _, rows = json_rows(capsys, *argv, "--max-ops", 45)
    assert rows[0]["microbatches"] == 4


def test_bounded_numbers_reject_every_non_finite_spelling():
    from archsim.value_parsers import parse_float, parse_int

    for text in ("inf", "-inf", "nan", "NaN", "1e999", "infinity"):
        with pytest.raises(ValueError):
            parse_float(text)
    assert parse_float("0.5", high=1.0) == 0.5 and math.isclose(parse_float(" 2e3 "), 2000.0)
    for text in ("1e3", "1.0", "", "0x10", "9" * 5000, True):
        with pytest.raises(ValueError):
            parse_int(text)
    assert parse_int(" 2147483647 ") == 2**31 - 1


def test_gpu_csv_checks_every_rows_shape_not_only_the_first(tmp_path):
    from archsim.devices.gpu_lookup import resolve_gpu
    from archsim.validation.gpu import gpu_arrays, model_kernels
    from archsim.validation.gpu_csv import read_kernel_csv

    # vgg16 conv2_1: 64 channels → 128 filters (layers/vgg16.csv); line 4 records 32 channels.
    path = write(tmp_path / "k.csv", "# gpu: NVIDIA H100 80GB HBM3\nnetwork,layer,batch,op,measured_ms,channels,filters\n"
                                     "vgg16,conv2_1,1,F,0.1,64,128\nvgg16,conv2_1,1,D,0.1,32,128\n")
    with pytest.raises(InputError) as info:
        model_kernels(read_kernel_csv(path), gpu_arrays(resolve_gpu("NVIDIA H100 80GB HBM3")))
    assert (info.value.where.field, info.value.where.line) == ("channels", 4)


def test_the_cycle_engine_refuses_absurd_gemms_before_stepping(capsys, monkeypatch):
    line = clean_error(capsys, "gemm", "--m", 8, "--k", 8, "--n", 8, "--array", "2147483647x2147483647",
                       "--engine", "cycle")
    assert "ARCHSIM_MAX_STEPS" in line
    # 64³ on 32×32 ws: 4 folds of 2·32 + 32 + 64 − 2 = 158 cycles = 632 steps (analytic cycles 631 + 1).
    argv = ["gemm", "--m", 64, "--k", 64, "--n", 64, "--engine", "cycle"]
    monkeypatch.setenv("ARCHSIM_MAX_STEPS", "631")
    assert "632" in clean_error(capsys, *argv)
    monkeypatch.setenv("ARCHSIM_MAX_STEPS", "632")
    assert json_rows(capsys, *argv)[1][0]["cycles"] == 631


def test_utilization_of_a_huge_array_is_tiny_not_negative(capsys):
    # 2³¹−1 squared PEs: PE count × cycles passes int64; utilization = MACs / (cycles · PEs) stays ≥ 0.
    _, rows = json_rows(capsys, "cost", "layerpipe_sample", "--array", "2147483647x2147483647")
    assert all(0 <= row[f"{kind}_utilization"] < 1e-15 for row in rows for kind in "FGD")



def test_one_nan_test_for_every_cell_type():
    import numpy as np

    from archsim.validate import is_nan

    assert is_nan(float("nan")) and is_nan(np.float32("nan")) and is_nan(np.float64("nan"))
    assert not any(is_nan(v) for v in (0.0, 3, "nan", None, float("inf"), np.int64(2), "x"))


def test_a_range_message_says_each_bound_once(capsys):
    """`--comm -1` said "expected a non-negative time >= 0 and <= 1e+15": non-negative and >= 0 are the
    same bound, said twice; a positive time already dropped its "> 0"."""
    from archsim.value_parsers import parse_float

    with pytest.raises(ValueError, match=r"^expected a non-negative time <= 1e\+15, got '-1'$"):
        parse_float("-1", high=1e15, what="a non-negative time")
    with pytest.raises(ValueError, match=r"^expected a number >= 2 and <= 3, got '1'$"):
        parse_float("1", low=2, high=3)
    assert main(["schedule", "--stages", "3", "--stage-times", "1,2,1", "--comm", "-1", "--microbatches", "4",
                 "--policy", "zb-2p"]) == 2
    assert ">= 0" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [["cost"], ["energy"], ["pipeline", "--processors", "2"]])
def test_a_kernel_csv_given_as_a_network_names_validate_gpu(tmp_path, capsys, command):
    """A NeuSight kernel CSV given as NETWORK was refused as a topology with a bad header ("header has 7
    columns; the first 8 must be Layer name, …", or an unknown column of the full file): the line now
    says what the file is and which command reads it."""
    small = tmp_path / "kernels.csv"
    small.write_text("OPName,Latency,Device,B,M,N,K\nlinear,1.1,Tesla V100-PCIE-32GB,1,1024,2560,2560\n")
    for path in (small, ROOT / "tests" / "data" / "neusight_kernels" / "linear.csv"):
        err = clean_error(capsys, command[0], path, *command[1:])
        assert "validate-gpu" in err and "NeuSight" in err, err
