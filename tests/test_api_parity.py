"""The Python API takes what the CLI takes (docs/api.md): every option of ``archsim cost``, ``gemm``, ``sparse``,
``plan``, ``energy``, ``validate-gpu``, ``cluster`` (``archsim.cluster_jobs``: ``archsim.cluster`` is the package), ``train`` and ``search`` is a keyword of the ``archsim`` function of the same name
(``archsim.iteration_energy`` for ``energy``: ``archsim.energy`` is the energy package), or
is listed below as the command's alone, with the reason. The parser is read afresh, so a flag added
without its keyword fails here. Each keyword the API gained is then run both ways on the same input, the
CLI's printed numbers (``--format csv`` / ``json``, full precision) the reference: tests/test_api_parity_cost.py
and tests/test_api_parity_training.py.
"""

from __future__ import annotations

import argparse
import importlib
import inspect

import pytest
from test_docs import ROOT

import archsim
from archsim import cli

API = {"cost": archsim.cost, "train": archsim.train, "search": archsim.search, "gemm": archsim.gemm,
       "sparse": archsim.sparse, "plan": archsim.plan, "energy": archsim.iteration_energy,
       "validate-gpu": archsim.validate_gpu, "cluster": archsim.cluster_jobs, "collective": archsim.collective}

# Options that change what the command prints or writes, never a number the function returns: the
# function hands back the object itself (a DataFrame, a TrainResult with its .timeline, a SearchResult).
CLI_ONLY = {
    "format": "the printed form (table, csv, json); the function returns the object",
    "precision": "digits of the printed table",
    "out": "the file the printed text goes to",
    "gantt": "a Gantt page of the timeline: TrainResult.timeline is returned (archsim.report.gantt writes it)",
    "chrome_trace": "a Chrome trace of the timeline (archsim.report.export writes it from TrainResult.timeline)",
    "trace": "--chrome-trace's older, hidden name",
    "schedule_csv": "the timeline's per-rank actions as CSV (archsim.report.export, from TrainResult.timeline)",
    "pareto_html": "a page of the Pareto front: SearchResult.pareto is returned (archsim.report.search_front)",
}
# Options of ``archsim train`` that run another job than one iteration, each its own library function.
OTHER_JOBS = {
    "runs": "every row of a runs file, one row each: archsim.train_runs",
    "sweep": "a grid of iterations, one row per point: archsim.train_sweep",
}
EXCLUDED = {"cost": CLI_ONLY, "train": {**CLI_ONLY, **OTHER_JOBS}, "search": CLI_ONLY, "gemm": CLI_ONLY,
            "sparse": CLI_ONLY, "plan": CLI_ONLY, "energy": CLI_ONLY, "validate-gpu": CLI_ONLY,
            # cluster's --trace is its job trace, a keyword, not train's hidden --chrome-trace
            "cluster": {flag: why for flag, why in CLI_ONLY.items() if flag != "trace"}, "collective": CLI_ONLY}


def parser_of(command: str) -> argparse.ArgumentParser:
    """The command's own parser, built as ``archsim COMMAND`` builds it."""
    target = next(target for name, target, _ in cli.REGISTRY if name == command)
    module, _, attribute = target.partition(":")
    parser = argparse.ArgumentParser(prog=f"archsim {command}")
    getattr(importlib.import_module(module), attribute).add_arguments(parser)
    return parser


def keyword(action: argparse.Action) -> str:
    """The keyword an option maps to: its ``dest``, which argparse derives from the flag; where a command
    renames the dest (``--bandwidth``'s ``dram_bandwidth``, apart from ``schedule``'s own ``--bandwidth``),
    the flag's name, dashes as underscores."""
    named = [flag[2:].replace("-", "_") for flag in action.option_strings if flag.startswith("--")]
    return action.dest if not named or action.dest in named else named[0]


def keywords(command: str) -> list[str]:
    return [keyword(a) for a in parser_of(command)._actions if not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("command", sorted(API))
def test_every_option_is_a_keyword_of_the_same_name_or_listed(command):
    accepted = set(inspect.signature(API[command]).parameters)
    missing = [name for name in keywords(command) if name not in accepted and name not in EXCLUDED[command]]
    assert not missing, f"archsim.{command} lacks {missing}"


def test_train_sweep_takes_every_option_of_train_but_the_outputs_and_runs():
    """``archsim.train_sweep`` is ``archsim train --sweep``: every other flag of train is one of its keywords (the point
    each axis starts from), so a flag added to train without it fails here; ``sweep`` is its own."""
    accepted = set(inspect.signature(archsim.train_sweep).parameters)
    missing = [name for name in keywords("train") if name not in accepted and name not in {**CLI_ONLY, "runs": ""}]
    assert not missing, f"archsim.train_sweep lacks {missing}"
    assert "sweep" in accepted and "runs" not in accepted


def test_a_renamed_dest_is_checked_under_the_flags_name():
    assert "bandwidth" in keywords("cost") and "dram_bandwidth" not in keywords("cost")


def test_the_exclusions_are_options_the_api_does_not_take():
    """A listed option no command has any more would hide nothing; one the API takes needs no listing."""
    options = {command: set(keywords(command)) for command in API}
    assert set(CLI_ONLY) <= set().union(*options.values())
    assert set(OTHER_JOBS) <= options["train"]
    for command, function in API.items():
        assert not set(EXCLUDED[command]) & set(inspect.signature(function).parameters)


def test_api_examples_show_the_new_keywords():
    """docs/api.md runs (tests/test_docs.py runs every python block) an example of each job with a keyword
    this parity added."""
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = page.split("```python")[1:]
    assert any("archsim.cost(" in b and "clock_ghz=" in b and "sram_kb=" in b for b in blocks)
    assert any("archsim.train(" in b and "balance=" in b for b in blocks)
    assert any("archsim.search(" in b and "dtype=" in b for b in blocks)
    assert any("archsim.gemm(" in b and "min_bandwidth=" in b and "archsim.sparse(" in b and "processors=" in b
               for b in blocks)
    assert any("archsim.plan(" in b and "method=" in b and "baselines=" in b for b in blocks)
    assert any("archsim.iteration_energy(" in b and "microbatches=" in b for b in blocks)
    assert any("archsim.validate_gpu(" in b and "dtype=" in b for b in blocks)
    assert any("archsim.search(" in b and 'gpus="' in b for b in blocks)
    assert any("archsim.cluster_jobs(" in b and "compare=" in b for b in blocks)
    assert any("archsim.bppsa_rnn(" in b and "archsim.bppsa_pruned_vgg11(" in b for b in blocks)
    assert any("archsim.train_sweep(" in b and "sweep=" in b for b in blocks)
    # "Results as DataFrames": to_frame() of each kind of result that holds a command's CSV rows
    assert any(all(f"{job}(" in b for job in ("archsim.cost", "archsim.gemm", "archsim.plan", "archsim.train",
                                               "archsim.search")) and b.count(".to_frame()") >= 5 for b in blocks)
