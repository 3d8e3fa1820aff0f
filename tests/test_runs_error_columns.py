"""A runs file's bad row names the file's own column, as its header spells it (``global_batch``,
``sequence_parallel``), not the flag that sets the same setting on ``archsim train`` (``global-batch``):
the reader looks for the column it wrote."""

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")


@pytest.mark.parametrize(("body", "column"), [
    ("2,1,1,3,8,false", "global_batch"),  # 8 samples are not micro-batches of 3 over DP 1
    ("2,1,2,1,8,maybe", "sequence_parallel"),  # not true/false (at TP 1 true runs without it, as train does)
])
def test_a_rows_error_names_the_runs_files_column(tmp_path, capsys, body, column):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"tp,pp,dp,micro_batch,global_batch,sequence_parallel\n{body}\n")
    assert main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"line 2, field '{column}'" in err
