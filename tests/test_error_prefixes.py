"""A bad value is refused naming it as the caller gave it: the command names the flag as argparse names one
(``argument --split-axes: …``), whether argparse's type check or the run refused it, and the library names the
keyword (``field 'split_axes': …``), never a flag.

Failed before: the refusals a run made (not argparse's type check) said ``field 'split-axes': …`` on the command
line — ``train --schedule zb``, ``--stage-layers 1,x``, ``--micro-batch 3``, ``--cp-hierarchy 3,3``, ``cost
--array 0x4``, ``--only nosuchlayer``, ``pipeline --split-axes chanels``, ``schedule --stage-times 1,2`` and
``--no-flush`` below — beside argparse's ``argument --tp: …`` for the others. The expected prefixes are the flags
and keywords each case gives (argparse's own naming of a flag, ``/``-joined for a switch pair)."""

from __future__ import annotations

import re
import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt2.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
TRAIN = ["train", MODEL, "--cluster", CLUSTER]
VGG = str(ROOT / "layers" / "vgg16.csv")

# (argv, the flag the line names): argparse's type checks and the runs' own refusals
CLI_CASES = [
    ([*TRAIN, "--global-batch", "16", "--tp", "0"], "--tp"),
    ([*TRAIN, "--global-batch", "16", "--schedule", "zb"], "--schedule"),
    ([*TRAIN, "--global-batch", "16", "--dp-overlap", "x"], "--dp-overlap"),
    ([*TRAIN, "--global-batch", "16", "--stage-layers", "1,x"], "--stage-layers"),
    ([*TRAIN, "--global-batch", "0"], "--global-batch"),
    ([*TRAIN, "--global-batch", "16", "--micro-batch", "3"], "--global-batch"),  # 16 is no multiple of 3 × 1
    ([*TRAIN, "--global-batch", "16", "--cp-hierarchy", "3,3"], "--cp-hierarchy"),
    (["cost", "vgg16", "--batch", "0"], "--batch"),
    (["cost", "vgg16", "--array", "0x4"], "--array"),
    (["cost", "vgg16", "--only", "nosuchlayer"], "--only"),
    (["cost", "vgg16", "--clock-ghz", "1e9"], "--clock-ghz"),
    (["cost", "vgg16", "--mode", "fast"], "--mode"),
    (["pipeline", VGG, "--method", "layerpipe", "--processors", "4", "--split-axes", "chanels"], "--split-axes"),
    (["pipeline", VGG, "--method", "layerpipe", "--processors", "4", "--alpha", "0.5"], "--alpha"),
    (["schedule", "--policy", "gpipe", "--stages", "4", "--stage-times", "1,2"], "--stage-times"),
    (["schedule", VGG, "--policy", "gpipe", "--processors", "4", "--microbatches", "4", "--no-flush"],
     "--flush/--no-flush"),
]

# (job, keywords, the keyword the line names): the same mistakes through the library
API_CASES = [
    ("train", {"global_batch": 16, "tp": 0}, "tp"),
    ("train", {"global_batch": 16, "schedule": "zb"}, "schedule"),
    ("train", {"global_batch": 16, "dp_overlap": "x"}, "dp_overlap"),
    ("train", {"global_batch": 16, "stage_layers": "1,x"}, "stage_layers"),
    ("train", {"global_batch": 0}, "global_batch"),
    ("train", {"global_batch": 16, "micro_batch": 3}, "global_batch"),
    ("train", {"global_batch": 16, "cp_hierarchy": "3,3"}, "cp_hierarchy"),
    ("cost", {"batch": 0}, "batch"),
    ("cost", {"array": "0x4"}, "array"),
    ("cost", {"only": "nosuchlayer"}, "only"),
    ("cost", {"clock_ghz": 1e9}, "clock_ghz"),
    ("cost", {"mode": "fast"}, "mode"),
]


@pytest.mark.parametrize(("argv", "flag"), CLI_CASES, ids=[f"{a[0]} {f}" for a, f in CLI_CASES])
def test_the_command_names_the_flag(argv, flag, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"archsim {argv[0]}: error: argument {flag}: "), err
    assert "field '" not in err, err


@pytest.mark.parametrize(("job", "keywords", "keyword"), API_CASES, ids=[f"{j} {k}" for j, _, k in API_CASES])
def test_the_library_names_the_keyword(job, keywords, keyword):
    with pytest.raises(archsim.InputError) as refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if job == "train":
            archsim.train(MODEL, cluster=CLUSTER, **keywords)
        else:
            archsim.cost("vgg16", **keywords)
    said = str(refused.value)
    assert said.startswith(f"field '{keyword}': ") and "\n" not in said, said
    assert not re.search(r"--[a-z]", said), said  # a flag is the command's word, never the library's
    assert refused.value.where.field.replace("-", "_") == keyword  # where.field: the flag's name either way
