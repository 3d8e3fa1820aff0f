"""``archsim.schedule`` runs every policy and option ``archsim schedule`` runs (docs/api.md), through the same
:func:`archsim.policies.schedule_run.run_schedule`. The reference is the command's own JSON (``archsim.cli.main``
with ``--format json``): each case's keywords are turned into the command line (``reverse_k=3`` →
``--reverse-k 3``) and the two documents must be equal. Failed before: every case but the out-of-order ones on a
plain network (zero-bubble, data-parallel, list, multistream and per-stage runs were refused in one line naming
the command; a block network was "unknown network"; and the function returned a Timeline, with no row or meta).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json

import pytest

import archsim
from archsim import cli
from archsim.errors import InputError
from archsim.json_text import dumps

CASES = [
    # the out-of-order backprop pipelines, on a plain and a block network
    ("ffnn8", {"policy": "mp", "processors": 2, "unit_costs": True}),
    ("ffnn8", {"policy": "gpipe", "processors": 3, "microbatches": 2}),
    ("ffnn8", {"policy": "ooo-pipe1", "processors": 2, "mode": "paper", "flush": False}),
    ("ffnn8", {"policy": "ooo-pipe2", "processors": 2, "microbatches": 3, "group": 2, "clock_ghz": 1.0}),
    ("bert_large_blocks", {"policy": "ooo-pipe2", "processors": 4, "unit_costs": True}),
    ("bert_large_blocks", {"policy": "gpipe", "processors": 2, "microbatches": 2}),
    # data parallel
    ("ffnn8", {"policy": "dp-wfbp", "processors": 4}),
    ("ffnn8", {"policy": "dp-priority", "processors": 4, "unit_costs": True, "comm_units": 2.0}),
    ("ffnn8", {"policy": "dp-reverse-k", "processors": 8, "sync": "ps", "link_bandwidth": 16.0}),
    ("ffnn8", {"policy": "dp-reverse-k", "processors": 4, "reverse_k": 3, "unit_costs": True}),
    # the published per-stage orders on a network's layers, and their list-scheduled versions
    ("ffnn8", {"policy": "1f1b", "processors": 4, "microbatches": 8}),
    ("ffnn8", {"policy": "interleaved-1f1b", "processors": 2, "microbatches": 4, "chunks": 2, "unit_costs": True}),
    ("ffnn8", {"policy": "zb-h1", "processors": 4, "microbatches": 8, "link_bandwidth": 32.0, "dtype": "fp16"}),
    ("ffnn8", {"policy": "zb-h2", "processors": 4, "microbatches": 8, "unit_costs": True}),
    ("ffnn8", {"policy": "zb-1p", "processors": 2, "microbatches": 4, "array": "16x16"}),
    ("ffnn8", {"policy": "zb-2p", "processors": 2, "microbatches": 4, "unit_costs": True}),
    ("ffnn8", {"policy": "interleaved-zb", "processors": 2, "microbatches": 4}),
    ("ffnn8", {"policy": "zb-v", "processors": 2, "microbatches": 4, "batch": 8}),
    ("ffnn8", {"policy": "dualpipev", "processors": 2, "microbatches": 4, "unit_costs": True}),
    ("ffnn8", {"policy": "list-1f1b", "processors": 4, "microbatches": 4}),
    ("ffnn8", {"policy": "list-zb-h1", "processors": 4, "microbatches": 4, "unit_costs": True}),
    ("ffnn8", {"policy": "list-zb-h2", "processors": 2, "microbatches": 4}),
    # one device's two streams
    ("ffnn8", {"policy": "multistream"}),
    ("ffnn8", {"policy": "multistream", "streams": "naive", "region_size": 2, "batch": 4}),
    # per-stage costs: the published orders, the per-stage-only ones, a torch class's order
    (None, {"stages": 4, "stage_times": "1,1,1", "microbatches": 8, "policy": "zb-h1"}),
    (None, {"stages": 4, "stage_times": "18.522,18.086,9.337", "comm": 0.601, "microbatches": 12, "policy": "zb-2p"}),
    (None, {"stages": 3, "stage_times": "1,1,1", "microbatches": 6, "policy": "looped-bfs", "chunks": 2}),
    (None, {"stages": 2, "stage_times": "1,1,1", "microbatches": 3, "policy": "zb-1p-exact"}),
    (None, {"stages": 2, "stage_times": "1,2,1", "microbatches": 3, "policy": "zb-2p-exact", "max_orders": 2000}),
    (None, {"stages": 3, "stage_times": "1,2,1", "microbatches": 4, "policy": "gpipe", "stage_memory": "1,0.5"}),
    (None, {"stages": 4, "stage_times": "1,1,1", "microbatches": 8, "torch_schedule": "Schedule1F1B"}),
    (None, {"stages": 4, "stage_times": "1,2,1", "microbatches": 8}),  # per-stage mode's default policy, 1f1b
]


def command_line(network: str | None, keywords: dict) -> list[str]:
    """The ``archsim schedule`` line of the same settings: each keyword its flag, a switch bare."""
    argv = ["schedule", *([network] if network else [])]
    for name, value in keywords.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + name.replace("_", "-"))  # --no-flush
        else:
            argv += [flag, str(value)]
    return argv


def command_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert cli.main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _id(case) -> str:
    network, keywords = case
    return f"{network or 'stages'}-{keywords.get('policy') or keywords.get('torch_schedule') or '1f1b'}"


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", CASES, ids=[_id(case) for case in CASES])
def test_every_policy_returns_the_commands_document(case, capsys):
    network, keywords = case
    result = archsim.schedule(network, **keywords) if network else archsim.schedule(**keywords)
    assert json.loads(dumps(result.to_dict())) == command_json(command_line(network, keywords), capsys)


def test_every_policy_the_command_lists_is_covered():
    """The cases above run each ``--policy`` choice of the command's parser (read afresh)."""
    parser = _parser()
    choices = next(a for a in parser._actions if a.dest == "policy").choices
    covered = {keywords.get("policy") for _, keywords in CASES}
    assert set(choices) <= covered


# The command's flags that say how to print or where to write, not what to run: the result is returned instead.
OUTPUTS = {"format", "precision", "out", "gantt", "trace", "schedule_csv", "help"}


def _parser() -> argparse.ArgumentParser:
    target = next(target for name, target, _ in cli.REGISTRY if name == "schedule")
    module, _, attribute = target.partition(":")
    parser = argparse.ArgumentParser(prog="archsim schedule")
    getattr(importlib.import_module(module), attribute).add_arguments(parser)
    return parser


def test_every_flag_of_the_command_is_a_keyword():
    """Each flag's name (dashes as underscores; ``--reverse-k``'s, whose value argparse stores as ``k``) is a
    keyword of ``archsim.schedule``, but the output flags."""
    parameters = set(inspect.signature(archsim.schedule).parameters)
    for action in _parser()._actions:
        if action.dest in OUTPUTS or action.help == argparse.SUPPRESS:
            continue
        name = "network" if action.dest == "network" else action.option_strings[0].lstrip("-").replace("-", "_")
        assert name in parameters, action.option_strings


def test_the_old_refusals_are_gone():
    """Failed before: "1f1b runs in the command only: archsim schedule --policy 1f1b …"; now the policies the
    refusal named run. Hand trace with unit costs (F = I = W = 1 a stage, docs/architecture.md), 2 stages and one
    micro-batch: F on stage 0 (0–1) and stage 1 (1–2); 1F1B's backward is I + W together, stage 1's (2–4) then
    stage 0's (4–6): 6 units; zb-h1 splits them, so stage 0's I starts when stage 1's I ends (3–4), then its W
    (4–5): 5 units."""
    result = archsim.schedule("ffnn8", policy="1f1b", processors=2, unit_costs=True)
    assert result.makespan == 6 == result.row["makespan"] and result.meta["costs"] == "unit"
    assert archsim.schedule("ffnn8", policy="zb-h1", processors=2, unit_costs=True).makespan == 5
    for policy in ("zb-h1", "list-1f1b", "dp-wfbp"):
        assert archsim.schedule("ffnn8", policy=policy, processors=1, unit_costs=True).row["policy"] == policy
    assert archsim.schedule("ffnn8", policy="multistream").timeline is None  # totals, no timeline
    assert archsim.schedule(stages=2, stage_times=(1, 1, 1), microbatches=2, policy="looped-bfs").row["stages"] == 2


@pytest.mark.parametrize(("network", "keywords", "field", "flag_field"), [
    ("ffnn8", {"policy": "zb-h1", "processors": 2, "group": 2}, "group", "group"),
    ("ffnn8", {"policy": "multistream", "processors": 2}, "processors", "processors"),
    ("ffnn8", {"policy": "multistream", "unit_costs": True}, "unit_costs", "unit-costs"),
    ("ffnn8", {"policy": "dp-wfbp", "processors": 2, "unit_costs": True, "sync": "ps"}, "sync", "sync"),
    ("bert_large_blocks", {"policy": "zb-h1", "processors": 2}, "network", "network"),
    ("ffnn8", {"policy": "looped-bfs", "processors": 2}, "policy", "policy"),
    ("ffnn8", {"policy": "zb-1p", "processors": 9, "microbatches": 4}, "processors", "processors"),
    ("ffnn8", {"policy": "dp-reverse-k", "processors": 2, "reverse_k": "x"}, "reverse_k", "reverse-k"),
    ("ffnn8", {"policy": "1f1b", "processors": 2, "batch": 32, "unit_costs": True}, "batch", "batch"),
    ("ffnn8", {"policy": "gpipe", "processors": 2, "sram_kb": 16}, "sram_kb", "sram-kb"),
    ("ffnn8", {"policy": "zb-h1", "processors": 2, "flush": True}, "flush", "flush"),
    ("ffnn8", {"stages": 2, "stage_times": "1,1,1"}, "network", "network"),
    (None, {"stages": 2, "stage_times": "1,1,1", "torch_steps": True}, "stages", "stages"),
    (None, {"torch_steps": True}, "torch_steps", "torch-steps"),
    (None, {"stages": 2}, "stage_times", "stage-times"),
    (None, {"stages": 2, "stage_times": "1,1,1", "torch_schedule": "Schedule1F1B", "chunks": 2}, "chunks", "chunks"),
    (None, {"stages": 2, "stage_times": "1,1,1", "microbatches": 4, "policy": "zb-1p-exact", "max_orders": 10},
     "max_orders", "max-orders"),
])
def test_bad_combinations_are_one_line_naming_keywords_where_the_command_names_flags(network, keywords, field,
                                                                                     flag_field, capsys):
    """Refused before anything runs, in one line: from Python naming keywords (``group``, ``policy='zb-h1'``, a
    ``network``), from the command its flags (``--group``, ``--policy zb-h1``, a ``NETWORK``). Failed before: the
    API's line was the command's, flags and all (``--group applies only to --policy ooo-pipe2 …``)."""
    with pytest.raises(InputError) as refused:
        archsim.schedule(network, **keywords)
    said_api = refused.value.message
    assert "\n" not in str(refused.value) and refused.value.where.field == field
    assert "--" not in said_api and "NETWORK" not in said_api, said_api
    capsys.readouterr()
    assert cli.main(command_line(network, keywords)) == 2
    said = capsys.readouterr().err.strip()
    name = {"network": "NETWORK", "flush": "--flush/--no-flush"}.get(flag_field, f"--{flag_field}")  # argparse's
    assert "\n" not in said and said.startswith(f"archsim schedule: error: argument {name}: ")
    command_said = said.split(f"argument {name}: ", 1)[1]
    if "--" not in command_said and "NETWORK" not in command_said:  # nothing to spell differently: the same line
        assert command_said == said_api


REFUSALS = [  # (keywords, the API's line, the command's line): both spellings by hand
    ({"policy": "zb-h1", "processors": 2, "group": 2},
     "group applies only to policy='ooo-pipe2' on a network; policy='zb-h1' does not take it",
     "--group applies only to --policy ooo-pipe2 on a NETWORK; --policy zb-h1 does not take it"),
    ({"policy": "dp-wfbp", "processors": 2, "unit_costs": True, "sync": "ps"},
     ("sync is read only with the array model's costs (a network without unit_costs=True); unit_costs=True replaces "
     "the array model"),
     ("--sync is read only with the array model's costs (a NETWORK without --unit-costs); --unit-costs replaces "
     "the array model")),
    ({"policy": "gpipe", "processors": 2, "sram_kb": 16},
     "sram_kb is read only with engine='cycle'; engine='analytic' models no memory",
     "--sram-kb is read only with --engine cycle; --engine analytic models no memory"),
    ({"policy": "zb-h1", "processors": 2, "flush": False},
     ("flush applies only to policy='mp' / 'gpipe' / 'ooo-pipe1' / 'ooo-pipe2' on a network; policy='zb-h1' does not "
     "take it"),
     ("--flush/--no-flush applies only to --policy mp / gpipe / ooo-pipe1 / ooo-pipe2 on a NETWORK; --policy zb-h1 "
     "does not take it")),
    ({"policy": "multistream", "unit_costs": True},
     "multistream needs utilizations from the array model; drop unit_costs=True",
     "multistream needs utilizations from the array model; drop --unit-costs"),
    ({"stages": 2, "stage_times": "1,1,1", "torch_steps": True},
     "stages is read only with per-stage costs; torch_steps=True counts steps and reads no costs",
     "--stages is read only with per-stage costs; --torch-steps counts steps and reads no costs"),
    ({"stages": 2}, "per-stage mode needs stages=P and stage_times=F,B,W (or stage_profile)",
     "per-stage mode needs --stages P and --stage-times F,B,W (or --stage-profile)"),
]


@pytest.mark.parametrize(("keywords", "api", "command"), REFUSALS, ids=[str(i) for i in range(len(REFUSALS))])
def test_a_refusal_reads_as_the_caller_spells_it(keywords, api, command, capsys):
    """One message source, two spellings: ``archsim.schedule`` names keywords, ``archsim schedule`` flags."""
    network = None if "stages" in keywords else "ffnn8"
    with pytest.raises(InputError) as refused:
        archsim.schedule(network, **keywords)
    assert refused.value.message == api
    capsys.readouterr()
    assert cli.main(command_line(network, keywords)) == 2
    assert capsys.readouterr().err.strip().split(": ", 3)[3] == command  # after "archsim schedule: error: argument X: "


def test_keywords_of_the_wrong_type_are_one_line():
    """Argparse's checks of the flags, as keywords: a count, a choice, a switch."""
    for keywords, field in (({"processors": "x"}, "processors"), ({"processors": 5000}, "processors"),
                            ({"processors": 2, "sync": "tree"}, "sync"), ({"processors": 2, "unit_costs": "yes"},
                                                                          "unit-costs")):
        with pytest.raises(InputError) as refused:
            archsim.schedule("ffnn8", policy="dp-wfbp", **keywords)
        assert refused.value.where.field == field and "\n" not in str(refused.value)
