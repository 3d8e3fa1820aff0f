"""Issue #40: the ``wrote FILE`` lines of a run come in one order for every command: the ``--out`` file's
first (the run's result), then each other file's in the order the run writes them (a search's Pareto page,
then the timeline's Gantt, Chrome trace and schedule CSV). :func:`archsim.output_files.note_written` owns
the order, so it does not hang on when each command happens to call it.

Failed before: pipeline and schedule printed the ``--out`` line last (train and search first), and
``search --pareto-html`` wrote its page without a line."""

from __future__ import annotations

import pytest
from test_wrote_lines import PIPELINE, SCHEDULE, SEARCH, STAGES, TRAIN

from archsim.cli import main
from archsim.output_files import note_written, output_set

TIMELINE = ("--gantt", "g.html"), ("--chrome-trace", "t.json"), ("--schedule-csv", "s.csv")
CASES = {"train": (TRAIN, TIMELINE), "search": (SEARCH, (("--pareto-html", "p.html"), *TIMELINE)),
         "pipeline": (PIPELINE, TIMELINE), "schedule": (SCHEDULE, TIMELINE),
         "schedule-per-stage": (STAGES, (("--schedule-csv", "s.csv"),))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_out_line_comes_first_then_the_files_in_writing_order(tmp_path, capsys, case):
    argv, files = CASES[case]
    out = tmp_path / "run.json"
    flags = [part for flag, name in reversed(files) for part in (flag, str(tmp_path / name))]  # --out given last
    assert main([*argv, *flags, "--out", str(out)]) == 0
    wrote = [line for line in capsys.readouterr().err.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote {out}", *(f"wrote {tmp_path / name}" for _, name in files)]


def test_the_order_is_the_writers_not_the_callers(capsys):
    """Within one run the ``--out`` line is printed first wherever the command says it."""
    with output_set():
        note_written("wrote a.html")
        note_written("wrote run.json", out=True)
        note_written("wrote b.csv")
    assert capsys.readouterr().err.splitlines() == ["wrote run.json", "wrote a.html", "wrote b.csv"]
