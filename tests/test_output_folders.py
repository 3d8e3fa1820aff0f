"""One output-folder rule for every command (issue #40): a file flag (``--out``, ``--gantt``,
``--chrome-trace``, ``--schedule-csv``, ``--report``, ``--markdown``, ``--pareto-html``) naming a file
under folders that do not exist yet makes those folders and writes the file there, as ``cost --out
DIR/x.json`` does; a sweep's results folder (``sweep --out DIR``) is made the same way. The rule lives in
the one writer (:func:`archsim.output_files.write_output`) and the one check (``check_target``), so the
cases are every output flag the parsers declare (``test_output_targets.CASES``), not a hand-kept list."""

from __future__ import annotations

import pytest
from output_commands import SWEEP_SPEC
from test_output_targets import CASES, argv_for

from archsim.cli import main


@pytest.mark.parametrize(("command", "flag"), CASES)
def test_a_missing_parent_folder_is_made(tmp_path, command, flag):
    target = tmp_path / "new" / "deeper" / "out.file"
    argv = argv_for(command, flag, target, tmp_path)
    assert not (tmp_path / "new").exists()
    assert main(argv) == 0
    assert target.is_file() and target.stat().st_size > 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.file"]  # no temp file left beside it


def test_a_sweeps_missing_results_folder_is_made(tmp_path):
    """``sweep --out`` names a folder (not a file): its missing ancestors are made too."""
    spec = tmp_path / "columns.toml"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    results = tmp_path / "new" / "deeper" / "results"
    assert main(["sweep", str(spec), "--out", str(results), "--quiet"]) == 0
    assert (results / "results.csv").is_file() and (results / "summary.csv").is_file()


def test_the_cases_are_every_output_flag():
    """The parametrization is the parsers' own list, with each flag's every command: a new output flag is
    covered without editing this file."""
    assert {("cost", "--out"), ("train", "--gantt"), ("schedule", "--chrome-trace"), ("search", "--pareto-html"),
            ("validate-gpu", "--markdown"), ("sweep", "--report"), ("report", "--out"), ("import", "--out"),
            ("bppsa rnn", "--report"), ("cluster", "--report")} <= set(CASES)
