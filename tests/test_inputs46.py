"""Input-consistency follow-ups of user trials: list flags in both forms, a runs file's whole floats, the kind of
file a hash could not read, and a device sweep's report against its files. Each test failed on the old code."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from test_robustness import clean_error

from archsim.cli import main
from archsim.errors import InputError
from archsim.sweep.spec_files import check_unchanged, file_sha256_unless_shipped
from archsim.training.runs import read_runs

ROOT = Path(__file__).resolve().parents[1]
HEADER = "tp,pp,dp,micro_batch,global_batch"


def test_a_runs_file_reads_a_whole_float_as_the_keyword_path_does(tmp_path):
    """pandas' to_csv writes 8.0 for a float column. Failed before: "expected a positive integer, got '8.0'"."""
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER}\n2.0,2,2.0,2,16.0\n")
    par = read_runs(runs)[0].par
    assert (par.tp, par.pp, par.dp, par.micro_batch, par.global_batch) == (2, 2, 2, 2, 16)
    assert all(type(v) is int for v in (par.tp, par.dp, par.global_batch))


def test_a_runs_file_refuses_a_fraction_naming_row_and_column(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER}\n2,2,2,2,16\n2,2,8.5,2,16\n")
    with pytest.raises(InputError) as caught:
        read_runs(runs)
    assert caught.value.where.line == 3 and caught.value.where.field == "dp", caught.value
    assert "8.5" in str(caught.value)


@pytest.mark.parametrize("what", ["model", "device"])
def test_an_unreadable_file_is_named_as_its_kind(tmp_path, monkeypatch, what):
    """A file the OS refuses to open (permissions; simulated: tests may run as root, who reads any file).
    Failed before: a model or device file was called a "network file"."""
    path = tmp_path / "file.toml"
    path.write_text("x = 1\n")
    real_open = os.open

    def refused(name, *args, **kwargs):
        if str(name) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(InputError) as caught:
        check_unchanged(str(path), "0" * 64, "since the sweep ran", what)
    assert f"cannot read {what} file (Permission denied)" in str(caught.value), caught.value
    with pytest.raises(InputError, match="cannot read network file"):
        check_unchanged(str(path), "0" * 64, "since the sweep ran")
    with pytest.raises(InputError, match="cannot read network file"):
        file_sha256_unless_shipped(str(path))


DEVICE_SPEC = ('[sweep]\nname = "d"\nmodel = "model.json"\ndevice = "chip.toml"\nhbm_gbps = [600]\nchips = [4]\n'
               'global_batch = 16\ndtype = "bf16"\nattention = "standard"\n')


@pytest.mark.parametrize("name,what", [("chip.toml", "device"), ("model.json", "model")])
def test_report_on_a_device_sweep_refuses_a_file_edited_since_the_sweep(tmp_path, capsys, name, what):
    """Failed before: the report was written (exit 0) over rows costed on the old file."""
    (tmp_path / "chip.toml").write_text((ROOT / "configs/devices/tpu_v4_like.toml").read_text(encoding="utf-8"))
    (tmp_path / "model.json").write_text((ROOT / "configs/transformers/gpt2.json").read_text(encoding="utf-8"))
    (tmp_path / "spec.toml").write_text(DEVICE_SPEC)
    out, page = tmp_path / "out", tmp_path / "page.html"
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out), "--out", str(page)]) == 0  # unchanged files: written
    capsys.readouterr()
    page.unlink()
    with open(tmp_path / name, "a", encoding="utf-8") as file:
        file.write("\n")  # the same figures, other bytes: the hash says only that the file is not the one costed
    line = clean_error(capsys, "report", out, "--out", page)
    assert f"the {what} file changed since the sweep ran" in line and str(tmp_path / name) in line, line
    assert not page.exists()


def _parsed(argv: list[str]):
    from archsim import cli

    return cli.build_parser(argv).parse_args(argv)


SEARCH = ["search", "gpt2", "--cluster", "c.toml", "--global-batch", "8"]
LISTS = [  # (command line before the flag, flag, its values, what both forms read), the values written by hand
    (SEARCH, "--gpus", ["4", "8", "16"], [4, 8, 16]),
    (SEARCH, "--recompute", ["none", "full"], ["none", "full"]),
    (SEARCH, "--schedule", ["1f1b", "zb-v"], ["1f1b", "zb-v"]),
    (SEARCH, "--chunks", ["2", "4"], [2, 4]),
    (["bppsa", "rnn"], "--seq-len", ["10", "30"], [10, 30]),
    (["bppsa", "rnn"], "--processors", ["64", "256"], [64, 256]),
    (["bppsa", "pruned-vgg11"], "--compare-levels", ["0", "2"], ["0", "2"]),
    (["validate-gpu"], "--csv", ["a.csv", "b.csv"], ["a.csv", "b.csv"]),
]


@pytest.mark.parametrize("head,flag,values,expected", LISTS, ids=[flag for _, flag, _, _ in LISTS])
def test_every_list_flag_reads_spaces_and_commas_alike(head, flag, values, expected):
    """Failed before: search's flags refused 4,8 (and none,full); bppsa's and the rest refused 10 30."""
    dest = flag[2:].replace("-", "_")
    spaced = getattr(_parsed([*head, flag, *values]), dest)
    commas = getattr(_parsed([*head, flag, ",".join(values)]), dest)
    mixed = getattr(_parsed([*head, flag, values[0], ",".join(values[1:])]), dest)
    assert spaced == commas == mixed == expected


def test_every_option_that_takes_several_words_is_a_list_flag():
    """One helper for every list flag of every command. Failed before: search's and validate-gpu's were plain
    nargs="+" options."""
    import argparse

    from archsim import cli
    from archsim.commands.list_flag import ListFlag

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parsers = [child for child in sub.choices.values()]
    parsers += [grand for child in parsers for a in child._actions if isinstance(a, argparse._SubParsersAction)
                for grand in a.choices.values()]
    several = [(p.prog, a.option_strings[0]) for p in parsers for a in p._actions
               if a.option_strings and a.nargs in ("+", "*") and not isinstance(a, ListFlag)]
    assert several == []
    assert sum(isinstance(a, ListFlag) for p in parsers for a in p._actions) >= len(LISTS)


@pytest.mark.parametrize("argv,said", [
    (["search", "--gpus", "4,,8"], "argument --gpus: '4,,8' has an empty item"),
    (["search", "--gpus", "4,x"], "argument --gpus: expected a positive integer, got 'x'"),
    (["search", "--recompute", "none,sometimes"], "argument --recompute: expected one of none, selective, full, got 'sometimes'"),
    (["bppsa", "rnn", "--seq-len", "10,1"], "argument --seq-len: T "),
])
def test_a_bad_item_in_either_form_is_one_usage_line(capsys, argv, said):
    head = SEARCH if argv[0] == "search" else []
    line = clean_error(capsys, *head, *argv[1:]) if head else clean_error(capsys, *argv)
    assert said in line, line
