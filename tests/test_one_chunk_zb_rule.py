"""Interleaved ZB of one model chunk a rank runs ZB-H1's order (tests/test_one_chunk_note_schedules.py), which takes
any number of micro-batches; where m is not a multiple of PP, ``train`` refuses it by interleaved ZB's rule (its
rounds of PP micro-batches) and now names the plain schedule the run meant, ``zb-h1``, as it names ``1f1b`` for
interleaved 1F1B of one chunk under PP micro-batches. Failed before: the rule's line alone, though nothing interleaves."""

from __future__ import annotations

import json

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # 24 layers, 16 heads
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 GPUs
SIX = ("--tp", "2", "--pp", "4", "--global-batch", "6")  # all 8 GPUs, m = 6 micro-batches: not a multiple of PP = 4
ADVICE = ("with one model chunk per rank (--interleave 1) its order is ZB-H1's, which takes any number of "
          "micro-batches: give --schedule zb-h1, or --interleave V of 2 or more with a multiple of PP micro-batches")


def test_one_chunk_interleaved_zb_off_its_rounds_is_refused_naming_zb_h1(capsys):
    argv = ["train", MODEL, "--cluster", NODE, *SIX]
    assert main([*argv, "--schedule", "interleaved-zb"]) == 2  # --interleave defaults to 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith("(interleave-needs-microbatches-multiple-of-pp)"), err
    assert ADVICE in err, err
    assert main([*argv, "--schedule", "zb-h1", "--format", "json"]) == 0  # the advice runs: ZB-H1, m = 6
    assert json.loads(capsys.readouterr().out)["meta"]["schedule"] == "zb-h1"


def test_two_chunks_keep_the_rule_without_the_advice(capsys):
    assert main(["train", MODEL, "--cluster", NODE, *SIX, "--schedule", "interleaved-zb", "--interleave", "2"]) == 2
    err = capsys.readouterr().err
    assert "interleave-needs-microbatches-multiple-of-pp" in err and "ZB-H1" not in err, err


def test_the_library_names_zb_h1_as_a_keyword():
    with pytest.raises(archsim.InputError) as refused:
        archsim.train(MODEL, cluster=NODE, tp=2, pp=4, global_batch=6, schedule="interleaved-zb")
    text = str(refused.value)
    assert "give schedule='zb-h1', or interleave=V" in text and "--" not in text, text
    assert refused.value.where.field == "schedule"
