"""An output flag writes one format whatever its file is named; a suffix that names another format
(``--gantt out.json``) is written all the same, and warned of in one stderr line."""

from __future__ import annotations

import json

from archsim.cli import main

PIPELINE = ["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2"]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": warning: " in line]


def test_gantt_and_trace_named_for_each_other_are_written_and_warned_of(tmp_path, capsys):
    gantt, trace = tmp_path / "out.json", tmp_path / "out.html"
    assert main([*PIPELINE, "--gantt", str(gantt), "--chrome-trace", str(trace)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        (f"archsim pipeline: warning: --gantt writes HTML into {gantt}, whose suffix .json says JSON; "
        "HTML files are normally named *.html"),
        (f"archsim pipeline: warning: --chrome-trace writes JSON into {trace}, whose suffix .html says HTML; "
        "JSON files are normally named *.json"),
    ]
    assert gantt.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # not refused: the user's name stands
    assert "traceEvents" in json.loads(trace.read_text(encoding="utf-8"))


def test_schedule_csv_named_htm_is_warned_of(tmp_path, capsys):
    target = tmp_path / "ranks.htm"
    assert main([*PIPELINE, "--schedule-csv", str(target)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        (f"archsim pipeline: warning: --schedule-csv writes CSV into {target}, whose suffix .htm says HTML; "
        "CSV files are normally named *.csv")]


def test_matching_unknown_or_no_suffix_is_quiet(tmp_path, capsys):
    # .htm is HTML too, and the suffix is read regardless of case; .trace and no suffix name no format
    assert main([*PIPELINE, "--gantt", str(tmp_path / "g.HTM"), "--chrome-trace", str(tmp_path / "t.trace"),
                 "--schedule-csv", str(tmp_path / "ranks")]) == 0
    assert _warnings(capsys.readouterr().err) == []
    assert main([*PIPELINE, "--gantt", str(tmp_path / "g.html"), "--chrome-trace", str(tmp_path / "t.json"),
                 "--schedule-csv", str(tmp_path / "s.CSV")]) == 0
    assert _warnings(capsys.readouterr().err) == []


def test_import_topology_named_json_is_warned_of(tmp_path, capsys):
    target = tmp_path / "net.json"
    assert main(["import", "layerpipe_sample", "-o", str(target)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        (f"archsim import: warning: --out writes CSV into {target}, whose suffix .json says JSON; "
        "CSV files are normally named *.csv")]
    assert target.read_text(encoding="utf-8").startswith("Layer name,")


def test_a_run_that_writes_nothing_gets_no_suffix_warning(tmp_path, capsys):
    # a folder named out.json is refused before any work; a Gantt without --microbatches when the run starts
    (tmp_path / "out.json").mkdir()
    assert main([*PIPELINE, "--gantt", str(tmp_path / "out.json")]) == 2
    assert _warnings(capsys.readouterr().err) == []
    target = tmp_path / "g.json"
    assert main(["pipeline", "layerpipe_sample", "--processors", "2", "--gantt", str(target)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "need --microbatches" in err
    assert not target.exists()


def test_gantt_named_txt_is_warned_of(tmp_path, capsys):
    """``--gantt g.txt`` wrote HTML into a .txt without a word (.txt named no format, so no mismatch was seen);
    .txt says plain text like ``--format table``'s usual name, and is warned of as any other suffix is. Failed
    before the fix (no warning)."""
    target = tmp_path / "g.txt"
    assert main([*PIPELINE, "--gantt", str(target)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        (f"archsim pipeline: warning: --gantt writes HTML into {target}, whose suffix .txt says plain text; "
         "HTML files are normally named *.html")]
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # written all the same


def test_a_table_into_txt_stays_quiet_and_json_into_txt_is_warned_of(tmp_path, capsys):
    """--format table's usual name is .txt (quiet); --format json into a .txt is the same mismatch as --gantt's."""
    assert main([*PIPELINE, "--format", "table", "--out", str(tmp_path / "t.txt")]) == 0
    assert _warnings(capsys.readouterr().err) == []
    target = tmp_path / "j.txt"
    assert main([*PIPELINE, "--format", "json", "--out", str(target)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        (f"archsim pipeline: warning: --out with --format json writes JSON into {target}, whose suffix .txt says "
         "plain text; JSON files are normally named *.json")]
