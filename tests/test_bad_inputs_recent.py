"""Hostile inputs to recent features, each refused in one line where before it ran on or crashed:

* a ``--link-bandwidth`` so slow that the simulated times pass 2^53 (1e-9 bytes/cycle on layerpipe_sample: an
  AssertionError traceback from the timeline validator, an op of 5,022,299 cycles having "lasted" 5,022,300);
* a runs file's integer and time cells that Python's int() and float() read but no other archsim reader does
  (``1_6``, full-width ``１６``, Arabic-Indic ``١٦``: read as 16);
* ``train --runs --schedule X`` on a file whose every row names its own schedule (the flag ignored, unsaid);
* a device TOML's ``[[memory]]`` (an array of tables), told "a key before the first section header"."""

from __future__ import annotations

import pytest
from strict_cli import CLUSTER, MODEL, refused

import archsim
from archsim.errors import InputError
from archsim.sim.engine import check_makespan
from archsim.training.runs import read_runs

SLOW = ["--processors", "4", "--microbatches", "4", "--link-bandwidth", "1e-9"]
HEADER = "tp,pp,dp,micro_batch,global_batch"


def test_the_makespan_bound_is_2_to_the_53():
    # the documented exact range of archsim's counts (validate.EXACT_LIMIT): one below it passes, it does not
    check_makespan(2**53 - 1)
    with pytest.raises(InputError, match=r"^the simulated makespan would reach 9\.01e\+15, beyond the 2\^53"):
        check_makespan(2**53)


@pytest.mark.parametrize("command", [["schedule", "layerpipe_sample", "--policy", "1f1b"],
                                     ["pipeline", "layerpipe_sample"]])
def test_a_link_too_slow_for_exact_times_is_one_line(capsys, command):
    # a hop of a micro-batch's activation (megabytes at int8) takes about 10^15 cycles at 1e-9 bytes/cycle: a
    # few in a row pass 2^53 ≈ 9.0e15 (the schedule's makespan was 8.99e15 at 1e-8 and ran)
    err = refused(capsys, [*command, *SLOW])
    assert "the simulated makespan would reach" in err and "give a faster link (--link-bandwidth)" in err


def test_the_library_names_its_keyword():
    with pytest.raises(InputError, match=r"makespan would reach .*\(link_bandwidth\)"):
        archsim.schedule("layerpipe_sample", policy="1f1b", processors=4, microbatches=4, link_bandwidth=1e-9)


@pytest.mark.parametrize(("cell", "column"), [("1_6", "global_batch"), ("１６", "global_batch"),
                                              ("١٦", "global_batch"), ("1_0", "measured_seconds"),
                                              ("٣", "measured_seconds")])
def test_a_runs_cell_is_ascii_digits(tmp_path, cell, column):
    path = tmp_path / "runs.csv"
    row = {"global_batch": f"1,1,1,1,{cell},1", "measured_seconds": f"1,1,1,1,16,{cell}"}[column]
    path.write_text(f"{HEADER},measured_seconds\n{row}\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"runs\.csv, line 2, field '{column}': expected a positive") as caught:
        read_runs(str(path))
    assert repr(cell) in str(caught.value)


def test_runs_cells_written_plainly_still_read(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(f"{HEADER},measured_seconds\n1,1,1,1,16.0,0.25\n1,1,1,1,+16,1e-1\n", encoding="utf-8")
    first, second = read_runs(str(path))
    assert (first.par.global_batch, first.measured_seconds) == (16, 0.25)  # pandas' 16.0 is 16
    assert (second.par.global_batch, second.measured_seconds) == (16, 0.1)


def test_schedule_flag_no_row_takes_is_refused(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER},schedule\n1,2,1,1,8,zb-h1\n1,2,1,1,8,1f1b\n", encoding="utf-8")
    err = refused(capsys, ["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs), "--schedule", "gpipe"])
    assert "--schedule gpipe: every row of the runs file names its own schedule" in err


def test_schedule_flag_sets_the_rows_that_name_none(tmp_path, capsys):
    # one empty cell: the flag sets that row, as documented ("schedule (else --schedule)")
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER},schedule\n1,2,1,1,8,zb-h1\n1,2,1,1,8,\n", encoding="utf-8")
    from archsim.cli import main

    assert main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs), "--schedule", "gpipe",
                 "--format", "csv"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    schedule = rows[0].split(",").index("schedule")
    assert [row.split(",")[schedule] for row in rows[1:]] == ["zb-h1", "gpipe"]


def test_an_array_of_memory_tables_is_named(tmp_path, capsys):
    device = tmp_path / "chip.toml"
    device.write_text('[device]\nname = "x"\ngemm = "arrays"\n[compute]\narrays = 1\nrows = 8\ncols = 8\n'
                      'clock_mhz = 1000\n[[memory]]\nhbm_gib = 1\nhbm_gbps = 100\n', encoding="utf-8")
    err = refused(capsys, ["cost", "layerpipe_sample", "--config", str(device)])
    assert "line 9, field 'memory': [memory] is a section: one table, its header written [memory], " \
           "not [[memory]], an array of tables" in err
