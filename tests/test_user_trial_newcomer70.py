"""An accelerator designer's first hour: a SCALE-Sim ``.cfg`` of their own array grown into a device file, costed
with ``pipeline`` against ``energy`` and swept into a report. ``pipeline``'s and ``schedule``'s ``--batch`` is each
micro-batch's size (M × BATCH samples an iteration) where ``energy --microbatches`` and a sweep split the batch,
yet their help said "mini-batch size"; ``ClockGHz`` or ``hbm_gbps`` written beside ``ArrayHeight`` was refused as
"a typo?" with no word of the section that reads it; a plain sweep's Gantt ran 8 micro-batches of the row's whole
batch under a title that read as the batch split in 8."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main

CFG = """[general]
run_name = mine

[architecture_presets]
ArrayHeight:    16
ArrayWidth:     16
IfmapSramSzkB:    32
FilterSramSzkB:   32
OfmapSramSzkB:    16
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os
{extra}
"""


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    from test_docs import ROOT

    monkeypatch.chdir(ROOT)


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pipeline_batch_help_says_per_micro_batch_as_it_runs(capsys):
    """The help's rule, checked by hand on one processor, where nothing overlaps: 2 micro-batches of --batch 4 take
    twice cost's cycles at batch 4 (8 samples), not one batch of 4 split in two."""
    for command in ("pipeline", "schedule"):
        text = _help(capsys, command)
        assert "--batch BATCH samples per micro-batch: with --microbatches M an iteration runs M × BATCH" in text
    assert "pipeline's and schedule's --microbatches run M of --batch each instead" in _help(capsys, "energy")
    rows = _json(capsys, ["cost", "layerpipe_sample", "--batch", "4"])["rows"]
    (total,) = [row["total_cycles"] for row in rows if row["layer"] == "TOTAL"]
    meta = _json(capsys, ["pipeline", "layerpipe_sample", "--batch", "4", "--processors", "1", "--method",
                          "pipedream", "--microbatches", "2"])["meta"]
    assert meta["makespan"] == 2 * total

