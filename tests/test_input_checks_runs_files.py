"""``train --runs`` files refused with one line naming the line or flag (issue #40): a column named twice, a
cell past the header's, ``--seq`` beside vTrain's rows (which name their own sequence)."""

from __future__ import annotations

from pathlib import Path

import pytest
from input_checks_common import GPT2, NODE

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]


# -- train --runs: a header names each column once, a row holds no cell past the header's
@pytest.mark.parametrize(("body", "where"), [
    ("tp,pp,dp,micro_batch,global_batch,tp\n1,1,1,1,8,2\n", "line 1"),  # the later tp was read, silently
    ("tp,pp,dp,micro_batch,global_batch\n1,1,1,1,8\n1,1,1,1,8,16\n", "line 3")])  # the 16 was dropped
def test_a_runs_file_with_a_column_twice_or_a_cell_too_many_is_refused(tmp_path, capsys, body, where):
    runs = tmp_path / "runs.csv"
    runs.write_text(body)
    out = tmp_path / "out.csv"
    assert main(["train", str(GPT2), "--cluster", str(NODE), "--runs", str(runs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "runs.csv" in err and where in err
    assert not out.exists()


def test_seq_beside_a_vtrain_runs_file_is_refused(tmp_path, capsys):
    """vTrain's rows name their own sequence length: ``--seq 512`` was dropped for every row, without a word."""
    shown = (ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv").read_text().splitlines()
    runs = tmp_path / "vtrain.csv"
    runs.write_text("\n".join(shown[:3]) + "\n")
    argv = ["train", str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"), "--cluster", str(NODE),
            "--runs", str(runs)]
    assert main([*argv, "--seq", "512"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--seq" in err and "argument --seq:" in err
    assert main([*argv, "--format", "json"]) == 0  # without it, each row at its own sequence
