"""Sequence parallelism asked for at TP 1 runs without it wherever ``train`` runs a layout, as Megatron-LM's
``validate_args`` turns it off ("Disabling sequence parallelism because tensor model parallelism is disabled"): a
runs file's row and a ``--sweep`` point as ``archsim train --tp 1 --sequence-parallel`` itself, with one note for
all the rows or points it holds for. The reference is train's own run without the switch (the documented rule:
the figures are those without it), run separately."""

from __future__ import annotations

import json
import warnings

import pytest

import archsim
from archsim.cli import main

MODEL = "configs/transformers/gpt_1024h_24l.json"
NODE = "configs/clusters/a100_node.toml"
TURNED_OFF = "is turned off, as Megatron-LM turns it off"


def _without(**layout) -> float:
    """Train's iteration (s) of ``layout`` without sequence parallelism: what SP at TP 1 must equal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(MODEL, cluster=NODE, seq=256, **layout)
    return result.iteration_seconds


def test_runs_rows_at_tp_1_run_without_sequence_parallelism_with_one_note(tmp_path):
    """Failed before: each such row was refused ("sequence parallelism needs tp > 1") and nothing ran."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,sequence_parallel\n"
                    "1,1,1,1,4,true\n2,1,1,1,4,true\n1,2,1,1,4,true\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = archsim.train_runs(MODEL, runs=str(runs), cluster=NODE, seq=256)
    said = [str(w.message) for w in caught if TURNED_OFF in str(w.message)]
    assert len(said) == 1 and said[0].startswith("2 of the 3 rows (lines 2, 4): sequence_parallel=True with tp=1"), said
    assert [row["sequence_parallel"] for row in out] == [False, True, False]  # what ran
    assert out[0]["predicted_seconds"] == pytest.approx(_without(tp=1, global_batch=4), rel=1e-12)
    assert out[2]["predicted_seconds"] == pytest.approx(_without(tp=1, pp=2, global_batch=4), rel=1e-12)


def test_sweep_points_at_tp_1_run_without_sequence_parallelism_with_one_note(capsys):
    """Failed before: the TP 1 point was a row of its error ("sequence parallelism needs --tp > 1")."""
    argv = ["train", MODEL, "--cluster", NODE, "--seq", "256", "--global-batch", "4", "--sequence-parallel",
            "--sweep", "tp=1,2", "--sweep", "pp=1,2", "--format", "json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if TURNED_OFF in line]
    assert len(notes) == 1 and "2 of the sweep's 4 points (tp 1 × pp 1 × dp 1, tp 1 × pp 2 × dp 1): " \
        "--sequence-parallel with --tp 1" in notes[0], captured.err
    rows = {(r["tp"], r["pp"]): r for r in json.loads(captured.out)["rows"]}
    assert all(not r["error"] for r in rows.values())
    assert [rows[(1, 1)]["sequence_parallel"], rows[(2, 1)]["sequence_parallel"]] == [False, True]
    assert rows[(1, 1)]["iteration_seconds"] == pytest.approx(_without(tp=1, global_batch=4), rel=1e-12)
    assert rows[(1, 2)]["iteration_seconds"] == pytest.approx(_without(tp=1, pp=2, global_batch=4), rel=1e-12)
