"""JSON meta carries numbers as numbers, the API writes its outputs as one set, and a table's lines follow
``--precision``: ``bppsa pruned-vgg11``'s figures per up-sweep depth are JSON numbers (they were ``0:21; 1:12``
text), ``archsim.validate_gpu`` writes its report and Markdown as the command does (one set), and ``search``'s
``host_bound`` line and plan's ``stage_counts``/``baselines_seconds`` lines are written to ``--precision``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _out(capsys, argv: list[str]) -> str:
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _table_line(table: str, key: str) -> str:
    """The text after ``# key: `` in a table's header."""
    return next(line.split(": ", 1)[1] for line in table.splitlines() if line.startswith(f"# {key}: "))


# --- archsim.validate_gpu's two files: one set ---------------------------------------------------------------------

@pytest.mark.long  # two HTML pages (plotly), about 4 s
def test_validate_gpu_replaces_neither_output_when_the_second_fails(tmp_path, monkeypatch):
    """Failed before: ``archsim.validate_gpu(report=…, markdown=…)`` wrote the report, then the Markdown, each on its
    own, so a full disk at the Markdown left the report replaced and the Markdown old (the command writes them as one
    set). The Markdown's write fails here (ENOSPC): the error is raised, both files keep their old text and no temp
    file is left beside them; the same call without the failure replaces both."""
    import errno

    from output_commands import GPU_CSV

    from archsim.errors import InputError
    from archsim.output_files import write_temp

    measured = tmp_path / "k.csv"
    shutil.copy(GPU_CSV, measured)
    report, markdown = tmp_path / "report.html", tmp_path / "summary.md"
    report.write_text("old report")
    markdown.write_text("old markdown")

    def full_at_the_markdown(path, text):
        if Path(path).name == markdown.name:
            raise InputError(f"{path}: {errno.errorcode[errno.ENOSPC]}: no space left on device")
        return write_temp(path, text)

    monkeypatch.setattr("archsim.output_files.write_temp", full_at_the_markdown)
    with pytest.raises(InputError, match="no space left"):
        archsim.validate_gpu(csv=measured, report=report, markdown=markdown)
    assert (report.read_text(), markdown.read_text()) == ("old report", "old markdown")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.csv", "report.html", "summary.md"]

    monkeypatch.undo()
    archsim.validate_gpu(csv=measured, report=report, markdown=markdown)
    assert report.read_text().startswith("<!") and markdown.read_text().startswith("#")
