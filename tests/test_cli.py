"""The ``archsim`` command line: outputs, and one-line errors with exit status 2."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cost_csv_has_per_layer_cycles_and_totals(capsys):
    code, out, _ = run(["cost", "layerpipe_sample", "--array", "32x32", "--dataflow", "ws", "--batch", "32",
                        "--mode", "paper", "--format", "csv"], capsys)
    assert code == 0
    frame = pd.read_csv(io.StringIO(out))
    assert {"layer", "F_cycles", "G_cycles", "D_cycles"} <= set(frame.columns)
    body = frame[frame.layer != "TOTAL"]
    assert list(body.layer) == ["conv1", "conv2", "conv3", "conv4"]
    total = frame[frame.layer == "TOTAL"].iloc[0]
    assert total.F_cycles == body.F_cycles.sum() and total.total_cycles == body.total_cycles.sum()


def test_cost_json_and_exact_mode_drop_first_delta(capsys):
    code, out, _ = run(["cost", "layerpipe_sample", "--mode", "exact", "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["meta"]["mode"] == "exact"
    assert doc["rows"][0]["layer"] == "conv1" and doc["rows"][0]["D_cycles"] == 0


def test_gemm_single_and_shapes_file(tmp_path, capsys):
    code, out, _ = run(["gemm", "--m", "10", "--k", "7", "--n", "5", "--array", "4x4", "--dataflow", "ws",
                        "--format", "csv"], capsys)
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    # Hand-derived: folds = ceil(7/4)·ceil(5/4) = 4, each 2·4 + 4 + 10 − 2 = 20 cycles, minus 1.
    assert (row.cycles, row.folds) == (79, 4)
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,k,n,rows,cols,dataflow\n10,7,5,4,4,ws\n10,7,5,4,4,os\n1,64,10,8,8,is\n")
    code, out, _ = run(["gemm", "--shapes", str(shapes), "--format", "csv"], capsys)
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and len(frame) == 3
    for column in ("cycles", "folds", "mapping_efficiency", "utilization", "ifmap_sram_reads",
                   "filter_sram_reads", "ofmap_sram_writes"):
        assert column in frame.columns
    assert frame.cycles[1] == 6 * (4 + 4 + 7 - 2) - 1  # os: ceil(10/4)·ceil(5/4) folds of R+C+T−2


def test_out_is_written_whole(tmp_path, capsys):
    target = tmp_path / "sub" / "cost.csv"
    code, _, _ = run(["cost", "layerpipe_sample", "--format", "csv", "--out", str(target)], capsys)
    assert code == 0 and pd.read_csv(target).shape[0] == 5
    assert [p.name for p in target.parent.iterdir()] == ["cost.csv"]  # no temp file left


@pytest.mark.parametrize("argv, needle", [
    (["cost", "missing.csv"], "missing.csv"),
    (["cost", "layerpipe_sample", "--array", "0x0"], "argument --array"),
    (["cost", "layerpipe_sample", "--dataflow", "xs"], "--dataflow"),
    (["cost", "layerpipe_sample", "--mode", "approx"], "--mode"),
    (["cost", "layerpipe_sample", "--batch", "0"], "--batch"),
    (["gemm", "--m", "0", "--k", "1", "--n", "1"], "--m"),
    (["gemm", "--m", "3", "--k", "1"], "--n"),
])
def test_bad_input_is_one_line_exit_2(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_malformed_network_row_names_file_line_field(tmp_path, capsys):
    bad = tmp_path / "net.csv"
    bad.write_text(HEADER + "c1,8,8,3,3,2,4,1,\nc2,8,8,3,3,-4,4,1,\n")
    code, _, err = run(["cost", str(bad)], capsys)
    assert code == 2 and "net.csv" in err and "line 3" in err and "field 'Channels'" in err


def test_bad_shapes_row_names_file_line_field(tmp_path, capsys):
    shapes = tmp_path / "s.csv"
    shapes.write_text("m,k,n,rows,cols,dataflow\n1,2,3,4,4,ws\n1,2,3,4,4,rs\n")
    code, _, err = run(["gemm", "--shapes", str(shapes)], capsys)
    assert code == 2 and "s.csv" in err and "line 3" in err and "field 'dataflow'" in err


@pytest.mark.parametrize("flags", [["--array", "16x16"], ["--dataflow", "os"]])
def test_gemm_shapes_refuses_array_flags_it_would_ignore(flags, tmp_path, capsys):
    # every shapes row carries its own rows, cols and dataflow: a flag beside them was dropped silently
    shapes = tmp_path / "s.csv"
    shapes.write_text("m,k,n,rows,cols,dataflow\n64,40,48,8,8,ws\n")
    code, out, err = run(["gemm", "--shapes", str(shapes), *flags], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and flags[0] in err


@pytest.mark.parametrize("argv, flag", [
    (["cost", "layerpipe_sample", "--bandwidth", "4"], "--bandwidth"),
    (["energy", "layerpipe_sample", "--bandwidth", "4"], "--bandwidth"),
    (["pipeline", "layerpipe_sample", "--processors", "2", "--bandwidth", "4"], "--bandwidth"),
    (["gemm", "--m", "64", "--k", "40", "--n", "48", "--bandwidth", "4"], "--bandwidth"),
    (["schedule", "layerpipe_sample", "--policy", "1f1b", "--processors", "2", "--dram-bandwidth", "4"],
     "--dram-bandwidth"),
])
def test_a_dram_bandwidth_without_the_cycle_engine_is_refused(argv, flag, capsys):
    # the analytic engine has no memory stalls: the bandwidth was dropped and the same cycles printed
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and flag in err and "--engine cycle" in err


@pytest.mark.parametrize("method", ["pipedream", "gpipe", "ooo"])
@pytest.mark.parametrize("flag, value", [("--alpha", "2"), ("--split-axes", "rows")])
def test_layerpipe_only_flags_are_refused_for_other_methods(method, flag, value, capsys):
    # they tune LayerPipe's Algorithm 1; the other partitioners dropped them without a word
    code, out, err = run(["pipeline", "layerpipe_sample", "--processors", "2", "--method", method, flag, value],
                         capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and flag in err


@pytest.mark.parametrize("method, stages", [("gpipe", 4), ("ooo", 4), ("layerpipe", 6)])
def test_pipeline_says_how_many_processors_its_plan_uses(method, stages, capsys):
    # layerpipe_sample has 4 layers: gpipe and ooo leave 2 of 6 processors idle, while the header said
    # only "processors: 6" (a sweep's rows give "stages")
    code, out, _ = run(["pipeline", "layerpipe_sample", "--processors", "6", "--method", method, "--format", "json"],
                       capsys)
    doc = json.loads(out)
    assert code == 0 and doc["meta"]["processors"] == 6 and doc["meta"]["stages"] == stages == len(doc["rows"])


def test_module_entry_point_prints_no_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "archsim", "cost", str(tmp_path / "nope.csv")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "nope.csv" in result.stderr


def test_pipeline_table_iii_columns_and_gantt(tmp_path, capsys):
    gantt = tmp_path / "gantt.html"
    code, out, _ = run(["pipeline", "layerpipe_sample", "--processors", "3", "--method", "layerpipe", "--array", "32x32",
                        "--dataflow", "ws", "--batch", "32", "--mode", "paper", "--microbatches", "6",
                        "--gantt", str(gantt), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert {"processor", "assigned_cycles", "borrowed_cycles", "total_cycles", "utilization"} <= set(doc["rows"][0])
    assert doc["meta"]["speedup"] == pytest.approx(doc["meta"]["single_processor_cycles"]
                                                   / doc["meta"]["iteration_cycles"])
    assert doc["meta"]["makespan"] >= 6 * doc["meta"]["iteration_cycles"]
    assert "plotly" in gantt.read_text()


def test_pipeline_rejects_unknown_split_axis(capsys):
    code, _, err = run(["pipeline", "layerpipe_sample", "--processors", "3", "--split-axes", "heads"], capsys)
    assert code == 2 and "split-axes" in err


@pytest.mark.parametrize("argv, makespan", [
    (["schedule", "ffnn8", "--policy", "mp", "--processors", "2", "--unit-costs"], 23),
    (["schedule", "ffnn16", "--policy", "gpipe", "--processors", "4", "--microbatches", "4", "--unit-costs"], 83),
    (["schedule", "ffnn16", "--policy", "ooo-pipe2", "--processors", "4", "--microbatches", "4", "--unit-costs",
      "--no-flush"], 51),
])
def test_schedule_command_unit_costs(argv, makespan, capsys):
    code, out, _ = run([*argv, "--format", "csv"], capsys)
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and {"policy", "makespan", "bubble_fraction", "peak_activation_bytes"} <= set(frame.columns)
    assert frame.makespan[0] == makespan


def test_schedule_data_parallel_reverse_k_searches_k(capsys):
    code, out, _ = run(["schedule", "ffnn8", "--policy", "dp-reverse-k", "--processors", "4", "--unit-costs",
                        "--comm-units", "1", "--format", "json"], capsys)
    row = json.loads(out)["rows"][0]
    # 8 layers, unit F/D/G, 1-unit synchronizations: the window is F1..F8, 15 backward ops, F1'..F8'
    # = 31 busy units on the device, so the makespan is at least 31.
    assert code == 0 and row["makespan"] >= 31 and 0 <= row["reversed_layers"] <= 8
    assert row["bubble_fraction"] == pytest.approx(1 - 31 / row["makespan"])


def test_exports_from_the_command_line(tmp_path, capsys):
    trace, schedule = tmp_path / "t.json", tmp_path / "s.csv"
    code, _, _ = run(["pipeline", "layerpipe_sample", "--processors", "3", "--microbatches", "2", "--trace",
                      str(trace), "--schedule-csv", str(schedule)], capsys)
    assert code == 0 and json.loads(trace.read_text())["traceEvents"]
    assert len(schedule.read_text().strip().splitlines()) == 3
    # One complete event per op and micro-batch: the plan lists 3 + 4 + 7 ops per micro-batch.
    _, out, _ = run(["pipeline", "layerpipe_sample", "--processors", "3", "--microbatches", "2", "--format", "json"],
                    capsys)
    document = json.loads(out)
    per_microbatch = sum(len(row["ops"].split()) for row in document["rows"])
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 2 * per_microbatch
    assert max(e["ts"] + e["dur"] for e in events) == pytest.approx(document["meta"]["makespan"])
    # Each rank's row: one F, one I (input gradient) and one W (weight gradient) per micro-batch and stage.
    for rank, line in enumerate(schedule.read_text().strip().splitlines()):
        actions = line.split(",")
        assert sorted(actions) == sorted(f"{rank}{kind}{mb}" for kind in "FIW" for mb in range(2))


# VGG16's conv layers (Simonyan & Zisserman, Table 1, config D): output side H (stride 1, padding 1), C in, M out.
VGG16_CONV = dict(zip(
    ["conv1_1", "conv1_2", "conv2_1", "conv2_2", "conv3_1", "conv3_2", "conv3_3", "conv4_1", "conv4_2", "conv4_3",
     "conv5_1", "conv5_2", "conv5_3"],
    [(224, 3, 64), (224, 64, 64), (112, 64, 128), (112, 128, 128), (56, 128, 256), (56, 256, 256),
     (56, 256, 256), (28, 256, 512), (28, 512, 512), (28, 512, 512), (14, 512, 512), (14, 512, 512),
     (14, 512, 512)]))


def test_schedule_multistream_pays_on_a_large_array(capsys):
    code, out, _ = run(["schedule", "vgg16", "--only", "conv", "--policy", "multistream", "--processors", "1",
                        "--array", "256x256", "--batch", "16", "--mode", "exact", "--format", "json"], capsys)
    row = json.loads(out)["rows"][0]
    assert code == 0
    # The one-stream time is every op back to back: Σ F + G + D cycles, as `archsim cost` reports them.
    _, out, _ = run(["cost", "vgg16", "--only", "conv", "--array", "256x256", "--batch", "16", "--mode", "exact",
                     "--format", "json"], capsys)
    single = sum(r["total_cycles"] for r in json.loads(out)["rows"] if r["layer"] in VGG16_CONV)
    assert row["speedup_vs_single_stream"] * row["makespan"] == pytest.approx(single)
    # test_multistream.test_where_it_pays derives this speedup: at least the naive schedule's 1.19546.
    assert row["speedup_vs_single_stream"] >= 1.1954
    # Idle PE-cycles: 1 − MACs / (65,536 PEs × makespan). MACs by hand: F = G = 16·H²·9·C·M per layer,
    # D the same except conv1_1 (no δ into the image).
    forward = sum(16 * h * h * 9 * c * m for h, c, m in VGG16_CONV.values())
    macs = 3 * forward - 16 * 224 * 224 * 9 * 3 * 64
    assert row["idle_pe_fraction"] == pytest.approx(1 - macs / (65_536 * row["makespan"]))


def test_plan_command_on_a_testbed(capsys, tmp_path):
    from pathlib import Path

    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "testbed_v100.toml"
    code, out, _ = run(["plan", "vgg16", "--only", "conv", "--cluster", str(cluster),
                        "--microbatches", "4", "--array", "64x64", "--format", "json",
                        "--gantt", str(tmp_path / "g.html")], capsys)
    doc = json.loads(out)
    assert code == 0 and (tmp_path / "g.html").is_file()
    # SPP keeps one stage on all 4 GPUs — data parallelism: 4 micro-batches over 4 replicas is one
    # micro-batch's Σ F + G + D cycles each at 1 GHz, then a ring AllReduce of the weights, 2(4 − 1)/4 ·
    # Σ 9·C·M bytes (1-byte elements) over the 128 Gbps = 16e9 B/s bus (SPP §III-A).
    assert [(row["layer_count"], row["replicas"]) for row in doc["rows"]] == [(13, 4)]
    _, out, _ = run(["cost", "vgg16", "--only", "conv", "--array", "64x64", "--batch", "4", "--format", "json"], capsys)
    cycles = sum(r["total_cycles"] for r in json.loads(out)["rows"] if r["layer"] in VGG16_CONV)
    weights = sum(9 * c * m for _, c, m in VGG16_CONV.values())
    assert weights == 14_710_464
    assert doc["meta"]["makespan_seconds"] == pytest.approx(cycles / 1e9 + 2 * 3 / 4 * weights / 16e9)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("argv, phases", [
    (["schedule", "layerpipe_sample", "--policy", "1f1b", "--processors", "2", "--microbatches", "4"],
     ("costs", "build", "simulate", "validate")),
    (["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "4"], ("build", "simulate", "validate")),
    # 2–6 s on DeepBench's CSVs (scipy's import and the study); here a small made-up measured CSV
    (["validate-gpu", "--csv", str(Path(__file__).resolve().parent / "data" / "gpu_kernels_columns.csv")],
     ("load model", "read", "study")),
    # NeuSight's kernel CSVs: 2–3 s for 10,000 rows, and no bar was drawn
    (["validate-gpu", "--csv", str(Path(__file__).resolve().parent / "data" / "neusight_kernels" / "ln.csv")],
     ("read", "predict")),
])
def test_long_runs_name_their_phases_on_a_terminal_only(argv, phases, monkeypatch, capsys):
    shown = _piped_then_on_a_terminal(argv, monkeypatch, capsys)
    assert all(f"phase/s, {name}]" in shown for name in phases)


def _piped_then_on_a_terminal(argv: list[str], monkeypatch, capsys) -> str:
    """Run ``argv`` into a pipe, then with stderr on a terminal: nothing on the pipe's stderr, the
    same results either way; returns what the terminal showed."""
    main(argv)
    piped = capsys.readouterr()
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    main(argv)
    assert piped.err == "" and capsys.readouterr().out == piped.out
    return terminal.getvalue()


@pytest.mark.long
def test_the_cycle_engine_shows_its_progress_on_a_terminal_only(monkeypatch, capsys):
    """The cycle engine steps through every cycle (23 s for layerpipe_sample at batch 32): on a
    terminal a bar counts the simulated cycles (drawn after a second; here at once)."""
    import archsim.progress as bars

    immediate = bars.progress
    at_once = {"delay": 0.0, "mininterval": 0.0, "miniters": 1}  # draw every update, from the start
    monkeypatch.setattr(bars, "progress", lambda *args, **kwargs: immediate(*args, **{**kwargs, **at_once}))
    # SRAMs that hold conv1's operands: no refetch note on stderr, which must carry nothing but the bar
    argv = ["cost", "layerpipe_sample", "--engine", "cycle", "--batch", "1", "--sram-kb", "1024"]
    main(argv)  # on a fresh install the first run also says, once, that numba is compiling the engine
    capsys.readouterr()
    shown = _piped_then_on_a_terminal(argv, monkeypatch, capsys)
    assert "cycle engine: 100%" in shown and "cycle/s" in shown


def test_bars_inside_quiet_are_never_drawn(monkeypatch):
    """A sweep's worker processes (archsim.sweep.executors.compute_units) draw no bars over the parent's."""
    from archsim.progress import progress, quiet

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with quiet(), progress(3, "inner", "step", mininterval=0.0) as bar:
        bar.update(3)
    assert terminal.getvalue() == ""
    with progress(3, "outer", "step", mininterval=0.0) as bar:
        bar.update(3)
    assert "outer" in terminal.getvalue()
