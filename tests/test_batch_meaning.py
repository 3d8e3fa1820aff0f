"""``--batch`` means per micro-batch in ``pipeline`` and ``schedule`` and the iteration's whole mini-batch in ``cost``,
``energy`` and ``plan`` (the last two split it into --microbatches): docs/cli.md's table says which, each command's
``--help`` says the same phrase (``energy --help`` said "mini-batch size", silent on its split), and the commands
run as the phrase says, checked by sample arithmetic on one processor."""

from __future__ import annotations

import json
import re
from argparse import Namespace

import pytest
from test_docs import ROOT

from archsim.cli import main


def _table() -> dict[str, str]:
    """docs/cli.md's table: each command → what its --batch is."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^  \| (`[a-z]+`(?:, `[a-z]+`)*) \| ([^|]+) \| [^|]+ \|$", text, re.MULTILINE)
    return {name.strip("`"): meaning.strip() for names, meaning in rows for name in names.split(", ")}


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", ["pipeline", "schedule", "energy", "plan", "cost"])
def test_each_help_says_the_documented_meaning(capsys, command):
    meaning = _table()[command]
    assert f"--batch BATCH {meaning} (default" in _help(capsys, command)


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _total(capsys, argv: list[str], column: str):
    (row,) = [r for r in _json(capsys, argv)["rows"] if r.get("layer", r.get("op")) == "TOTAL"]
    return row[column]


def test_schedule_runs_m_micro_batches_of_batch(capsys):
    """Per micro-batch: 2 micro-batches of --batch 4 on one processor take twice cost's cycles at batch 4."""
    per_microbatch = _total(capsys, ["cost", "layerpipe_sample", "--batch", "4"], "total_cycles")
    (row,) = _json(capsys, ["schedule", "layerpipe_sample", "--batch", "4", "--microbatches", "2", "--processors", "1",
                            "--policy", "gpipe"])["rows"]
    assert row["makespan"] == 2 * per_microbatch


def test_energy_splits_its_batch(capsys):
    """The whole mini-batch: --batch 8 in 2 micro-batches does the MACs of --batch 8 in one, twice --batch 4's, and
    its cycles are two micro-batches of 4."""
    split = _total(capsys, ["energy", "layerpipe_sample", "--batch", "8", "--microbatches", "2"], "macs")
    whole = _total(capsys, ["energy", "layerpipe_sample", "--batch", "8"], "macs")
    half = _total(capsys, ["energy", "layerpipe_sample", "--batch", "4"], "macs")
    assert split == whole == 2 * half
    assert _total(capsys, ["energy", "layerpipe_sample", "--batch", "8", "--microbatches", "2"], "cycles") == \
        2 * _total(capsys, ["cost", "layerpipe_sample", "--batch", "4"], "total_cycles")


def test_plan_splits_its_batch():
    from archsim.plan_flags import micro_batch

    assert micro_batch(Namespace(batch=32, microbatches=4, micro_batch=None)) == 8
