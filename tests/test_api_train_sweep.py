"""``archsim.train_sweep`` is ``archsim train --sweep`` from Python (docs/api.md): the same rows and meta as the
command's ``--format json`` (the command run in-process, its printed JSON the reference), each row the iteration
``archsim.train`` times at that point (another path to the same number: train's lay-out, not the sweep's points),
a bad axis or value refused with the line the command prints, and the command's notes warned.

Failed before: ``archsim.train_sweep`` did not exist; ``archsim.train(sweep=…)`` pointed at
``archsim.training.sweep.sweep(config, cluster, base, axes)``, which takes loaded objects, not the flag's values;
and ``archsim train --sweep attention=…`` noted ``--attention given beside --sweep`` with no ``--attention`` given
(train's resolved default read as given)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from api_parity_helpers import MODEL, NODE, as_flag, cli_error, same_json
from test_docs import ROOT

import archsim
from archsim.errors import InputError

GRID = ["--sweep", "tp=1,2", "--sweep", "micro_batch=1,2"]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("sweep", [{"tp": [1, 2], "micro_batch": [1, 2]}, ["tp=1,2", "micro_batch=1,2"],
                                   {"tp": "1,2", "micro-batch": (1, 2)},
                                   {"tp": range(1, 3), "micro_batch": np.array([1.0, 2.0])}])  # a float column's counts
def test_a_2x2_grid_is_the_commands_json(sweep, capsys):
    argv = ["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--pp", "2", *GRID]
    result, printed = same_json(argv, archsim.train_sweep,
                                {"model": MODEL, "cluster": NODE, "global_batch": 16, "pp": 2, "sweep": sweep}, capsys)
    assert [(row["tp"], row["micro_batch"]) for row in printed["rows"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all(row["error"] == "" for row in printed["rows"]) and len(result) == 4
    assert result.table.to_dict(orient="records") == result.to_dict()["rows"]


def test_a_switch_axis_takes_pythons_and_numpys_bools_as_the_flags_words(capsys):
    argv = ["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--tp", "2", "--sweep",
            "sequence_parallel=true,false"]
    _, printed = same_json(argv, archsim.train_sweep, {"model": MODEL, "cluster": NODE, "global_batch": 16, "tp": 2,
                                                       "sweep": {"sequence_parallel": [np.True_, False]}}, capsys)
    assert [row["sequence_parallel"] for row in printed["rows"]] == [True, False]


def test_each_row_is_the_iteration_train_times_at_its_point():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = archsim.train_sweep(MODEL, cluster=NODE, global_batch=16, dp=2, sweep="tp=1,2")
        for row in grid.to_dict()["rows"]:
            one, rates = archsim.train(MODEL, cluster=NODE, global_batch=16, dp=2, tp=row["tp"])
            assert row["iteration_seconds"] == one.iteration_seconds
            assert row["peak_memory_gib"] == one.peak_memory_gib and row["mfu"] == rates.mfu
            assert row["gpus"] == 2 * row["tp"]


def test_a_point_that_cannot_run_keeps_its_row_as_the_command_does(capsys):
    """TP 3 does not divide the 16 heads: the row says why, as the command's."""
    argv = ["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--sweep", "tp=1,3"]
    _, printed = same_json(argv, archsim.train_sweep,
                           {"model": MODEL, "cluster": NODE, "global_batch": 16, "sweep": {"tp": [1, 3]}}, capsys)
    assert printed["rows"][0]["error"] == "" and "3" in printed["rows"][1]["error"]


@pytest.mark.parametrize("text", ["tp=0,1", "tpp=1,2", "tp=1,1", "micro_batch=", "fsdp=maybe", "recompute=some",
                                  "tp"])
def test_a_bad_axis_or_value_is_the_commands_line(text, capsys):
    said = cli_error(["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--sweep", text], capsys)
    key, _, values = text.partition("=")
    for sweep in ([text], text, *([{key: values}] if "=" in text else [])):
        with pytest.raises(InputError) as refused:
            archsim.train_sweep(MODEL, cluster=NODE, global_batch=16, sweep=sweep)
        assert refused.value.where.field == "sweep"
        assert said == f"archsim train: error: {as_flag(refused.value)}"


def test_an_axis_swept_twice_is_the_commands_line(capsys):
    said = cli_error(["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--sweep", "tp=1", "--sweep", "tp=2"],
                     capsys)
    with pytest.raises(InputError) as refused:
        archsim.train_sweep(MODEL, cluster=NODE, global_batch=16, sweep=["tp=1", "tp=2"])
    assert said == f"archsim train: error: {as_flag(refused.value)}"


@pytest.mark.parametrize("sweep", [[], {}, 3, [2]])
def test_no_axis_or_not_a_text_is_refused_naming_sweep(sweep):
    with pytest.raises(InputError) as refused:
        archsim.train_sweep(MODEL, cluster=NODE, global_batch=16, sweep=sweep)
    assert refused.value.where.field == "sweep"


@pytest.mark.parametrize(("keywords", "field"), [({"balance": "planned"}, "sweep"), ({"stage_layers": "12,12"}, "sweep"),
                                                 ({"implementation": "pytorch-eager"}, "implementation"),
                                                 ({"placement": "planned"}, "placement")])
def test_what_the_command_refuses_beside_sweep_is_refused(keywords, field, capsys):
    flags = [f"--{name.replace('_', '-')}" if value is True else f"--{name.replace('_', '-')}={value}"
             for name, value in keywords.items()]
    assert cli_error(["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--pp", "2", "--sweep", "tp=1,2",
                      *flags], capsys).startswith(f"archsim train: error: argument --{field}")
    with pytest.raises(InputError) as refused:
        archsim.train_sweep(MODEL, cluster=NODE, global_batch=16, pp=2, sweep="tp=1,2", **keywords)
    assert refused.value.where.field == field


def _notes(argv: list[str], keywords: dict, capsys) -> tuple[list[str], list[str]]:
    """The command's stderr lines (their prefix dropped) and the function's warnings, in order."""
    capsys.readouterr()
    assert archsim.cli.main([*argv, "--format", "json"]) == 0
    printed = [line.split(": note: ", 1)[-1].split(": warning: ", 1)[-1]
               for line in capsys.readouterr().err.splitlines()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train_sweep(MODEL, cluster=NODE, **keywords)
    return printed, [str(w.message) for w in caught]


def test_the_commands_notes_are_warned_in_its_order(capsys):
    """The idle GPUs of the points and a setting given beside its axis: the command's lines, each setting as the
    caller spells it."""
    printed, warned = _notes(["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--tp", "2", *GRID],
                             {"global_batch": 16, "tp": 2, "sweep": ["tp=1,2", "micro_batch=1,2"]}, capsys)
    assert len(printed) == len(warned) == 3
    assert [line.replace("--tp/--pp/--dp", "tp/pp/dp").replace("archsim search", "archsim.search")
            .replace("--tp given beside --sweep", "tp given beside sweep") for line in printed] == warned


@pytest.mark.parametrize("given", [False, True])
def test_an_attention_axis_is_noted_as_given_beside_only_when_given(given, capsys):
    flags, keywords = (["--attention", "flash"], {"attention": "flash"}) if given else ([], {})
    printed, warned = _notes(["train", MODEL, "--cluster", NODE, "--global-batch", "16", "--sweep",
                              "attention=flash,standard", *flags],
                             {"global_batch": 16, "sweep": {"attention": ["flash", "standard"]}, **keywords}, capsys)
    assert any("given beside" in line for line in printed) is given
    assert any("given beside" in line for line in warned) is given


def test_the_result_is_a_table_result_with_the_commands_csv():
    from archsim.table_result import TableResult

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = archsim.train_sweep(MODEL, cluster=NODE, global_batch=16, sweep={"tp": [1, 2]})
    assert isinstance(grid, TableResult) and "2 of 2 points ran" in repr(grid)
    frame = grid.to_frame()
    assert list(frame["tp"]) == [1, 2] and set(frame["axes"]) == {"tp"}
