"""A ``train --sweep`` point that cannot run is a row of ``nan`` whose reason sits in its last column (``error``), easy
to miss in a wide table: the table form says on stderr, one line per such point, which point (its axes' values) and
why; JSON and csv keep their columns and say it in ``error`` alone."""

from __future__ import annotations

import json

from archsim.cli import main
from archsim.training.sweep_run import refused_points_lines

CLUSTER = "configs/clusters/a100_node.toml"  # 8 GPUs
REASON = "TP × PP × DP = 16 GPUs, the cluster has 8"


def _small(tmp_path) -> str:
    """A two-layer GPT of 4 heads (TP 3 divides none of its widths)."""
    config = {"model_type": "gpt2", "n_embd": 256, "n_layer": 2, "n_head": 4, "vocab_size": 1024, "n_positions": 128}
    path = tmp_path / "gpt.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def test_each_refused_point_is_named_with_its_reason():
    rows = [{"tp": 1, "seq": 512, "error": ""}, {"tp": 16, "seq": 512, "error": REASON}]
    assert refused_points_lines(rows, "tp,seq") == [f"point 2 of 2 (tp=16, seq=512) could not run, its figures nan: {REASON}"]
    assert refused_points_lines(rows[:1], "tp,seq") == []


def _sweep(capsys, model: str, fmt: str) -> tuple[str, str]:
    capsys.readouterr()
    assert main(["train", model, "--cluster", CLUSTER, "--global-batch", "8", "--seq", "128", "--sweep", "tp=1,16",
                 "--format", fmt]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_the_table_says_which_point_could_not_run(capsys, tmp_path):
    model = _small(tmp_path)
    out, err = _sweep(capsys, model, "table")
    said = [line for line in err.splitlines() if "could not run" in line]
    assert said == [f"archsim train: warning: point 2 of 2 (tp=16) could not run, its figures nan: {REASON}"]
    assert REASON in out  # the table's own error cell is kept
    out, err = _sweep(capsys, model, "json")
    assert "could not run" not in err
    rows = json.loads(out)["rows"]
    assert [row["error"] for row in rows] == ["", REASON] and rows[1]["iteration_seconds"] is None
    out, err = _sweep(capsys, model, "csv")
    assert "could not run" not in err and "error" in out.splitlines()[0].split(",") and REASON in out
