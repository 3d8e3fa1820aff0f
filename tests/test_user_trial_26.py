"""Two researchers reproduce BPPSA (``archsim bppsa``) and SPB + Jigsaw (``archsim cluster``) from the CLI.

Each test is a defect that trial found and failed on the code before its fix. Expected values come from
the command line the test gives or from a hand computation written out here, never from archsim's output.
"""

from __future__ import annotations

import re
import time

import pytest

from archsim.cli import main

VGG = ["bppsa", "pruned-vgg11", "--width-divisor", "16"]


def test_pruned_vgg11_report_command_reproduces_the_width_it_was_run_at(tmp_path, capsys):
    """The page's command line left out ``--width-divisor``: run at width/16, it printed a command that
    reruns the full-width network (another study, ten times slower). Failed before the fix."""
    report = tmp_path / "vgg.html"
    assert main([*VGG, "--up-levels", "1", "--compare-levels", "1", "--out", str(tmp_path / "v.txt"),
                 "--report", str(report)]) == 0
    capsys.readouterr()
    command = re.search(r"archsim bppsa pruned-vgg11 [^<\n]*", report.read_text()).group(0)
    assert "--width-divisor 16" in command, command


@pytest.mark.parametrize("levels", ["0,9", "5", "full"])
def test_compare_levels_out_of_range_is_refused_at_once_naming_the_flag(tmp_path, capsys, levels):
    """``--compare-levels 0,9`` ran the study (10 s at full width) before failing with "field 'up_levels'",
    a flag the user did not give; ``--compare-levels full`` was silently dropped from the summary.
    VGG-11's stack is 21 operators, 22 scan elements: up-sweep depths 0 … ⌈log₂ 22⌉ − 1 = 4.
    Failed before the fix (late, wrong flag; 'full': exit 0)."""
    out = tmp_path / "vgg.csv"
    started = time.perf_counter()
    assert main(["bppsa", "pruned-vgg11", "--compare-levels", levels, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--compare-levels" in err and "0" in err and "4" in err, err
    assert time.perf_counter() - started < 1.0  # refused before any Jacobian is built
    assert not out.exists()


def test_up_levels_out_of_range_is_refused_before_the_study_runs(tmp_path, capsys):
    """``--up-levels 99`` built VGG-11's Jacobians (about 2 s) before the range check. Failed before the fix."""
    out = tmp_path / "vgg.csv"
    started = time.perf_counter()
    assert main(["bppsa", "pruned-vgg11", "--up-levels", "5", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--up-levels" in err and "4" in err, err
    assert time.perf_counter() - started < 1.0
    assert not out.exists()


@pytest.mark.parametrize(("cell", "want"), [("-1", "non-negative whole number"), ("2147483648", "2147483647")])
def test_a_trace_count_out_of_range_states_its_bound_exactly(tmp_path, capsys, cell, want):
    """``num_gpu`` of -1 was refused as "expected a non-negative number <= 2.14748e+09": a count printed as a
    rounded float, a bound (2,147,480,000) that is not the one checked (2³¹ − 1). Failed before the fix."""
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                     f"a,{cell},0,10,resnet18,0,0\n", encoding="utf-8")
    out = tmp_path / "c.csv"
    assert main(["cluster", "--trace", str(trace), "--gpus", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "num_gpu" in err and want in err and "e+09" not in err, err
    assert not out.exists()


def test_a_one_step_sequence_is_refused_not_printed_as_speedup_one(tmp_path, capsys):
    """``bppsa rnn --seq-len 1`` printed a row with speedup 1: T = 1 has no dependent backward step, so BP and
    the scan both take 0 cycles and 0/0 was shown as a measured ratio (at T = 2 the same model gives 0.26).
    Failed before the fix (exit 0, a row)."""
    from archsim.bppsa.rnn_cost import rnn_backward
    from archsim.errors import InputError

    out = tmp_path / "rnn.csv"
    assert main(["bppsa", "rnn", "--seq-len", "1,10", "--processors", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--seq-len" in err and "2" in err, err
    assert not out.exists()
    with pytest.raises(InputError, match="seq_len"):
        rnn_backward(1, 4)


@pytest.mark.parametrize(("seq_len", "processors", "held"), [
    (10, 64, 3),  # 16 samples × 11 elements = 176 Jacobians over 64 arrays: ⌈176/64⌉ = 3 each
    (100, 1024, 2),  # 16 × 101 = 1,616 over 1,024: 2 each (it said 16: one batch-wide Jacobian each)
    (30000, 64, 7501),  # 16 × 30,001 = 480,016 over 64
])
def test_bppsa_bytes_per_worker_spread_the_batch_as_the_cycles_do(seq_len, processors, held):
    """A level's B·q products run one per array (the cycle model), so the B·(T + 1) H×H Jacobians are spread
    over the p arrays: ⌈B(T+1)/p⌉ · H² · bytes each, the paper's Θ(max(n/p', 1))·M_Jacob with p' = p/B workers
    per sample and M_Jacob one sample's H×H Jacobian (§3.6). The column held ⌈(T+1)/p⌉ whole batches of 16:
    6,400 bytes at T = 100, p = 1,024 where 800 are held. Failed before the fix (all 3)."""
    from archsim.bppsa.rnn_cost import rnn_backward

    point = rnn_backward(seq_len, processors, hidden=20, batch=16)  # 32×32 int8: 1 byte a word
    assert point.bppsa_bytes_per_worker == held * 20 * 20


def test_a_comparison_csv_names_the_seeds_it_ran(capsys):
    """``cluster --compare --seed 4 --seeds 3 --format csv`` printed ``seeds`` = 3 on every row and nowhere
    the seeds 4, 5, 6: the rows' count of runs and the meta's seed list shared one name, and CSV keeps a
    row's column over the meta's, so the CSV (and a reader who took 3 for the seed) lost what JSON says.
    Failed before the fix."""
    import csv
    import io

    assert main(["cluster", "--jobs", "12", "--gpus", "16", "--compare", "--seed", "4", "--seeds", "3",
                 "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["policy"] for row in rows] == ["jigsaw", "gandiva", "tiresias"]
    assert all(row["seeds"] == "4,5,6" and row["runs"] == "3" for row in rows), rows[0]


def test_pruned_vgg11_json_meta_gives_the_depth_as_a_number(capsys):
    """``--format json`` gave ``"up_levels": "2"``, the flag's text (a string where ``seed`` and ``bp_steps`` are
    numbers; ``--up-levels 02`` printed "02"). Failed before the fix."""
    import json

    assert main([*VGG, "--up-levels", "02", "--compare-levels", "0", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["up_levels"] == 2 and isinstance(meta["up_levels"], int)


def test_a_trace_saved_by_a_spreadsheet_with_a_byte_order_mark_is_read(tmp_path, capsys):
    """Excel's "CSV UTF-8" starts the file with a byte-order mark; the trace was refused with "field
    '\\ufeffjob_id': unknown column" where the project's other CSV readers skip the mark. One 1-GPU job of
    100 s submitted at 0 on an idle cluster with --interval 0: makespan and JCT 100 s by hand.
    Failed before the fix (exit 2)."""
    import json

    trace = tmp_path / "t.csv"
    trace.write_bytes("\ufeffjob_id,num_gpu,submit_time,iterations,model_name,duration,interval\r\n"
                      "a,1,0,100,resnet18,100,0\r\n".encode())
    assert main(["cluster", "--trace", str(trace), "--gpus", "2", "--interval", "0", "--policy", "tiresias",
                 "--format", "json"]) == 0, capsys.readouterr().err
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert row["makespan_seconds"] == pytest.approx(100.0) and row["jct_mean_seconds"] == pytest.approx(100.0)
