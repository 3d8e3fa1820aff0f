"""Every schedule archsim runs is named in one place, with the flag that takes it and its source: docs/cli.md's
"Schedules" table, held equal to the one list in the code (``archsim.choices.schedules.SCHEDULE_TABLE``), which
every flag's choices are read from; and each runner's own registry runs exactly the names the table gives its flag.

Failed before the fix: no such table existed; the names were lists in four modules (the partition schedules, the
policies, train's and the published orders' own), listed apart in help texts and pages."""

from __future__ import annotations

import argparse
import importlib
import re

import pytest
from test_docs import ROOT

from archsim import cli
from archsim.choices.schedules import SCHEDULE_TABLE, schedule_names


def docs_table() -> list[tuple[str, str, str]]:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text[text.index("## Schedules"):text.index("<!-- archsim-cli -->")]
    rows = re.finditer(r"^\| `([^`]+)` \| `([^`]+)` \| (.+) \|$", section, re.MULTILINE)
    return [(m[1], m[2], m[3].strip()) for m in rows]


def test_the_docs_table_is_the_codes_list():
    assert docs_table() == [(flag, name, source) for flag, _, name, source in SCHEDULE_TABLE]


def choices(command: str, flag: str) -> tuple[str, ...]:
    target = {name: target for name, target, _ in cli.REGISTRY}[command]
    module, _, attribute = target.partition(":")
    parser = argparse.ArgumentParser()
    getattr(importlib.import_module(module), attribute).add_arguments(parser)
    return tuple(parser._option_string_actions[flag].choices)


@pytest.mark.parametrize(("command", "flag", "taken_by"), [
    ("pipeline", "--schedule", "pipeline --schedule"), ("schedule", "--policy", "schedule --policy"),
    ("search", "--schedule", "train --schedule")])
def test_each_flags_choices_are_the_tables(command, flag, taken_by):
    assert choices(command, flag) == schedule_names(taken_by)


def test_torchs_classes_run_as_names_of_the_table():
    """train's --schedule takes torch's class names too: each runs as one of the table's training orders."""
    from archsim.policies.stage_orders import TORCH_SCHEDULES

    assert {name for name, _ in TORCH_SCHEDULES.values()} <= set(schedule_names("train --schedule"))


def argv_of(flag: str, family: str, name: str) -> list[str] | None:
    """A small run of ``name`` under ``flag`` (None: train's, built as an order below)."""
    if flag == "pipeline --schedule":
        return ["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2", "--schedule", name]
    if family in ("ooo", "dp", "multistream", "list"):  # the list schedules run on a NETWORK's stages
        return ["schedule", "ffnn8", "--policy", name] + ([] if family == "multistream" else ["--processors", "2"])
    if flag == "schedule --policy":
        return ["schedule", "--policy", name, "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "4"]
    return None


@pytest.mark.parametrize(("flag", "family", "name"), [row[:3] for row in SCHEDULE_TABLE],
                         ids=[f"{row[0].split()[0]}-{row[2]}" for row in SCHEDULE_TABLE])
def test_every_schedule_of_the_table_runs(flag, family, name, capsys):
    from archsim.cli import main
    from archsim.policies.stage_orders import published_order

    argv = argv_of(flag, family, name)
    if argv is None:  # train's and search's: the order the training model times, by its builder's own name
        assert published_order(name, 2, 4).ranks
        return
    code = main(argv)
    assert code == 0, capsys.readouterr().err
