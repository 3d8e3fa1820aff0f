"""A Tiresias trace row the run reads otherwise than written (``duration`` under half of one iteration with
``iterations`` 0: the job runs one whole iteration) is a :class:`UserWarning` from the library
(``archsim.cluster``) and one ``archsim cluster: note:`` line from the command.

Failed before the fix: the library printed the note on stderr itself (no warning a caller could catch or filter)."""

import warnings

import pytest

from archsim.cli import main

# vgg16's iteration is 19.64 ms (the paper's catalog): 0.005 s is under half of it, 0.5 s is not
TRACE = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
short,1,0,0,vgg16,0.005,0
long,1,0,0,vgg16,0.5,0
"""


def test_parse_tiresias_csv_warns_and_prints_nothing(capsys):
    from archsim.cluster import parse_tiresias_csv

    with pytest.warns(UserWarning) as caught:
        jobs = parse_tiresias_csv(TRACE, source="trace.csv")
    texts = [str(w.message) for w in caught]
    assert len(texts) == 1 and "job short" in texts[0] and "under half of one vgg16 iteration" in texts[0]
    assert texts[0].startswith("trace.csv, line 2")
    assert capsys.readouterr().err == ""  # the library says nothing on stderr itself
    assert [job.job_id for job in jobs] == ["short", "long"]


def test_a_trace_without_short_rows_warns_nothing():
    from archsim.cluster import parse_tiresias_csv

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_tiresias_csv(TRACE.replace("0.005", "0.05"), source="trace.csv")


def test_the_cli_prints_the_warning_as_one_note(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE, encoding="utf-8")
    code = main(["cluster", "--trace", str(trace), "--gpus", "2", "--policy", "jigsaw", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0, err
    notes = [line for line in err.splitlines() if "under half" in line]
    assert len(notes) == 1 and notes[0].startswith("archsim cluster: note: ")
    assert "job short" in notes[0] and "UserWarning" not in err
