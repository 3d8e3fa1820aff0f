"""Issue #40: every file a command writes is named on stderr by one unprefixed ``wrote FILE`` line, as
``--out``'s is (docs/cli.md), and the output on stdout stays as it was without the files.

Failed before: ``--gantt``, ``--chrome-trace`` and ``--schedule-csv`` wrote their files without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
TRAIN = ["train", MODEL, "--cluster", CLUSTER, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
         "--micro-batch", "2", "--format", "json"]
SEARCH = ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--top", "1", "--schedule", "1f1b",
          "--max-micro-batch", "2", "--refine", "0", "--format", "json"]
PIPELINE = ["pipeline", "layerpipe_sample", "--processors", "2", "--method", "gpipe", "--microbatches", "2",
            "--format", "json"]
SCHEDULE = ["schedule", "ffnn8", "--policy", "mp", "--processors", "2", "--unit-costs", "--format", "json"]  # a timeline of layers on processors
STAGES = ["schedule", "--stages", "4", "--stage-times", "1,1,1", "--microbatches", "8", "--policy", "1f1b",
          "--format", "json"]  # per-stage: torch's CSV is the order run


def _files(tmp_path: Path) -> list[tuple[str, Path]]:
    return [("--gantt", tmp_path / "g.html"), ("--chrome-trace", tmp_path / "t.json"),
            ("--schedule-csv", tmp_path / "s.csv")]


@pytest.mark.parametrize("argv", [TRAIN, SEARCH, PIPELINE, SCHEDULE, STAGES],
                         ids=["train", "search", "pipeline", "schedule", "schedule-per-stage"])
def test_each_timeline_file_written_is_named_on_stderr(tmp_path, capsys, argv):
    """One ``wrote FILE`` line per file, unprefixed like ``--out``'s, and stdout byte for byte as without them.
    Failed before: no line for any of the three (stderr was empty)."""
    assert main(argv) == 0
    plain = capsys.readouterr()
    files = _files(tmp_path)
    assert main([*argv, *(part for flag, path in files for part in (flag, str(path)))]) == 0
    drawn = capsys.readouterr()
    assert drawn.out == plain.out
    wrote = [line for line in drawn.err.splitlines() if line.startswith("wrote ")]
    assert sorted(wrote) == sorted(f"wrote {path}" for _, path in files)
    assert all(path.is_file() for _, path in files)
    assert [line for line in drawn.err.splitlines() if not line.startswith("wrote ")] == plain.err.splitlines()


def test_the_wrote_lines_follow_the_out_line_of_the_same_run(tmp_path, capsys):
    """With ``--out`` too, each file has its line, the ``--out`` one among them. Failed before: only ``--out``'s."""
    out, page = tmp_path / "run.json", tmp_path / "g.html"
    assert main([*PIPELINE, "--out", str(out), "--gantt", str(page)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sorted(line for line in err if line.startswith("wrote ")) == sorted([f"wrote {out}", f"wrote {page}"])
