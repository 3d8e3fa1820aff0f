"""A researcher's trial of the four other papers' systems — out-of-order backprop (``schedule``), SPP
(``plan``), BPPSA (``bppsa``) and SPB + Jigsaw (``cluster``): reproduce the documented figure, change one
input, feed bad input, keep the output. Each test is a defect that trial found.

Expected values come from the command line the test gives (what was asked for), never from archsim's
own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TESTBED = str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml")


def _meta(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["meta"]


@pytest.mark.parametrize("method", ["spp", "dp", pytest.param("pipedream", marks=pytest.mark.long)])  # 1.6 s
def test_plan_meta_says_which_network_micro_batch_mode_and_array_priced_it(capsys, method):
    """A saved ``plan --format json`` named the cluster but not the network, the micro-batch, the cost
    mode or (on a cluster whose servers name no device: every shipped SPP testbed) the array that priced
    the layers, so two runs of different networks or arrays could not be told apart."""
    meta = _meta(capsys, ["plan", "layerpipe_sample", "--cluster", TESTBED, "--microbatches", "4",
                          "--micro-batch", "8", "--mode", "paper", "--array", "64x64", "--clock-ghz", "2",
                          "--method", method])
    assert meta["network"] == "layerpipe_sample"
    assert meta["micro_batch"] == 8
    assert meta["mode"] == "paper"
    assert meta["priced_on"] == "array 64x64 ws at 2 GHz"
    assert meta["cluster"] == "testbed_1080ti"
    assert meta["microbatches"] == 4


@pytest.mark.parametrize(("argv", "flag"), [
    (["--seq-len", "0"], "--seq-len"),
    (["--seq-len", "99999999999999999999"], "--seq-len"),  # past the documented 1…2³¹−1
    (["--processors", "10,-4"], "--processors"),
    (["--hidden", "x"], "--hidden"),
    (["--batch", "3000000000"], "--batch"),
])
def test_bppsa_rnn_bad_numbers_are_one_line_naming_the_flag(tmp_path, capsys, argv, flag):
    """An RNN length of 0 was refused as "field 'seq_len'" (no such flag), and a 20-digit length was
    accepted and costed, past the input limit every other integer flag keeps (README, "Input limits")."""
    out = tmp_path / "rnn.csv"
    assert main(["bppsa", "rnn", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err, err
    assert not out.exists()


def test_bppsa_rnn_refuses_counts_past_2_to_the_53(tmp_path, capsys):
    """H = B = 100,000 at T = 10 on one array: the scan's cycles, ≈ 5.9e17, were printed beyond the 2⁵³
    archsim promises to count exactly (README: such a count is refused, never printed inexact)."""
    out = tmp_path / "rnn.csv"
    assert main(["bppsa", "rnn", "--hidden", "100000", "--batch", "100000", "--seq-len", "10",
                 "--processors", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "2^53" in err, err
    assert not out.exists()


SAMPLE_TRACE = str(ROOT / "configs" / "traces" / "sample_tiresias.csv")


@pytest.mark.parametrize(("argv", "flag"), [
    (["--trace", SAMPLE_TRACE, "--jobs", "7"], "--jobs"),  # the file's 40 jobs ran, "jobs: 40" printed
    (["--trace", SAMPLE_TRACE, "--seed", "7"], "--seed"),  # a file trace draws nothing
    (["--trace", SAMPLE_TRACE, "--policy", "all", "--seeds", "3"], "--seeds"),  # one run, "seeds 1"
    (["--trace", SAMPLE_TRACE, "--policy", "jigsaw", "--seeds", "3"], "--seeds"),  # one policy: still one run
])
def test_cluster_refuses_a_flag_its_run_would_ignore(tmp_path, capsys, argv, flag):
    """A researcher trying another trace with ``--jobs 7`` or ``--seed 7`` got the file's own jobs, silently:
    the trace-drawing flags only shape the synthetic trace, and ``--seeds`` only repeats a comparison."""
    out = tmp_path / "cluster.csv"
    assert main(["cluster", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err, err
    assert not out.exists()


def test_cluster_meta_names_no_seed_for_a_file_trace(capsys):
    """A file trace's run printed ``seeds: 0`` — a seed that drew nothing — beside the trace's name."""
    meta = _meta(capsys, ["cluster", "--trace", SAMPLE_TRACE, "--policy", "gandiva"])
    assert meta["trace"] == SAMPLE_TRACE and meta["jobs"] == 40  # the sample's 40 rows
    assert "seeds" not in meta
    synthetic = _meta(capsys, ["cluster", "--trace", "synthetic", "--jobs", "4", "--seed", "3", "--policy", "gandiva"])
    assert synthetic["seeds"] == "3"


GRAPH_TXT = str(ROOT / "tests" / "data" / "pipedream" / "profiles" / "resnet18.txt")


@pytest.mark.parametrize("extra", [["--micro-batch", "64"], ["--batch", "64"], ["--mode", "paper"],
                                   ["--array", "64x64"], ["--clock-ghz", "2"], ["--only", "conv"],
                                   ["--element-bytes", "2"]])
def test_plan_on_a_measured_profile_refuses_the_array_models_flags(tmp_path, capsys, extra):
    """``plan graph.txt --micro-batch 64`` (or ``--mode paper``, ``--array``, ``--only conv``…) planned the
    profile's measured seconds unchanged and said nothing: those flags price layers archsim costs, and a
    PipeDream profile's layers are priced already."""
    out = tmp_path / "plan.csv"
    assert main(["plan", GRAPH_TXT, "--cluster", TESTBED, "--microbatches", "4", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and extra[0] in err, err
    assert not out.exists()


@pytest.mark.parametrize(("servers", "key", "line"), [("count = 0\ngpus = 2", "count", 6),
                                                      ("count = 2\ngpus = 0", "gpus", 7)])
def test_a_cluster_file_of_no_gpus_names_the_key_at_fault(tmp_path, capsys, servers, key, line):
    """``count = 0`` in a ``[[servers]]`` table was reported as "field 'gpus'": the researcher looked at a
    correct key."""
    cluster = tmp_path / "none.toml"
    cluster.write_text(f'[cluster]\nname = "none"\ninter_server_gbps = 50\n\n[[servers]]\n{servers}\n'
                       "intra_server_gbps = 128\n", encoding="utf-8")
    out = tmp_path / "plan.csv"
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"line {line}, field 'servers[1].{key}'" in err and "got '0'" in err, err
    assert not out.exists()


def test_multistream_meta_says_the_costs_batch_and_dataflow_like_every_schedule(capsys):
    """``schedule --policy multistream`` (the paper's single-device, two-stream study) named the array but not
    the cost mode, dataflow or batch its speedup was computed at, which every other policy's meta names."""
    argv = ["schedule", "ffnn8", "--array", "64x64", "--dataflow", "os", "--batch", "16", "--mode", "paper"]
    meta = _meta(capsys, [*argv, "--policy", "multistream"])
    reference = _meta(capsys, [*argv, "--policy", "gpipe", "--processors", "2"])
    for key, asked in (("costs", "paper mode"), ("array", "64x64"), ("dataflow", "os"), ("batch", 16)):
        assert meta[key] == reference[key] == asked, key


@pytest.mark.parametrize(("argv", "flag"), [(["--up-levels", "-1"], "--up-levels"),
                                            (["--up-levels", "x"], "--up-levels"),
                                            (["--compare-levels", "0,x"], "--compare-levels")])
def test_bppsa_pruned_vgg11_bad_levels_name_the_flag(tmp_path, capsys, argv, flag):
    """A bad up-sweep depth was reported as "field 'up_levels'": no flag of that spelling exists."""
    out = tmp_path / "vgg.csv"
    assert main(["bppsa", "pruned-vgg11", "--width-divisor", "16", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err, err
    assert not out.exists()


def test_a_cluster_too_small_for_the_synthetic_trace_says_what_to_change(tmp_path, capsys):
    """``cluster --gpus 8`` on the synthetic trace failed with "field 'job j0006 num_gpu': job needs 16
    devices" — a trace the researcher never wrote, no flag named. §4.2's mix draws jobs of up to 16 workers."""
    out = tmp_path / "cluster.csv"
    assert main(["cluster", "--gpus", "8", "--jobs", "40", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--gpus" in err and "16" in err and "synthetic" in err, err
    assert not out.exists()


def test_cluster_meta_names_device_memory_and_gandiva_packing(capsys):
    """``--device-memory-gb`` (which jobs fit, SPB's memory) and ``--max-pack`` (Gandiva's jobs per device)
    change the numbers, but a saved run's meta named neither."""
    meta = _meta(capsys, ["cluster", "--jobs", "4", "--policy", "gandiva", "--device-memory-gb", "32",
                          "--max-pack", "3"])
    assert meta["device_memory_gb"] == 32.0 and meta["max_pack"] == 3
